"""Small builders for transcript files in tests (Claude entries, Codex rollout lines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from graphkit.core.schema import MESSAGES_SCHEMA
from graphkit.sources.transcripts import read_transcripts
from tests.helpers.paths import FIXTURES

# A Thread's id, message count and token counts: the columns the usage tests compare.
THREAD_TOKENS = ["thread_id", "messages", "input_tokens", "output_tokens",
                 "cache_creation_input_tokens", "cache_read_input_tokens"]


def fixtures() -> Path:
    """``tests/fixtures`` of this repository: the real-world transcripts and cache."""
    return FIXTURES





def graph_of(*sources: Path) -> Any:
    """The graph ``graphkit build`` makes of ``sources`` (no input fingerprints)."""
    from graphkit.builds.run import build

    return build(list(sources), fingerprints=False).graph


def node_rows(graph: Any, kind: str, columns: list[str]) -> list[tuple[Any, ...]]:
    """The ``columns`` of every ``kind`` node, sorted."""
    table = graph.nodes[kind].table
    return sorted(zip(*(table.column(c).to_pylist() for c in columns), strict=True))

def write_jsonl(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def user(uuid: str, session: str, ts: str, content: Any, parent: str | None = None,
         **extra: Any) -> dict[str, Any]:
    """A Claude ``user`` entry; ``content`` is a string or a list of blocks."""
    return {"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": session,
            "timestamp": ts, "isSidechain": False, "cwd": "/work/app", "version": "2.1.0",
            "message": {"role": "user", "content": content}, **extra}


def assistant(uuid: str, session: str, ts: str, blocks: list[dict[str, Any]],
              parent: str | None = None, msg_id: str | None = None,
              **extra: Any) -> dict[str, Any]:
    """A Claude ``assistant`` entry with the given content blocks."""
    return {"type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": session,
            "timestamp": ts, "isSidechain": False, "cwd": "/work/app", "version": "2.1.0",
            "message": {"id": msg_id or f"msg_{uuid}", "role": "assistant",
                        "model": "claude-sonnet-4-5", "content": blocks}, **extra}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def tool_result(call_id: str, content: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


def codex_line(ts: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": ts, "type": kind, "payload": payload}


def codex_meta(ts: str, thread: str, **payload: Any) -> dict[str, Any]:
    return codex_line(ts, "session_meta", {"id": thread, "timestamp": ts, "cwd": "/w",
                                           "cli_version": "0.50.0", **payload})


def codex_message(ts: str, role: str, value: str, item_id: str | None = None) -> dict[str, Any]:
    kind = "input_text" if role == "user" else "output_text"
    payload: dict[str, Any] = {"type": "message", "role": role,
                               "content": [{"type": kind, "text": value}]}
    if item_id:
        payload["id"] = item_id
    return codex_line(ts, "response_item", payload)


def synthetic_claude_tree(root: Path, sessions: int, lines_per_session: int) -> int:
    """Write ``sessions`` Claude sessions of about ``lines_per_session`` lines; return lines."""
    total = 0
    filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 6
    for s in range(sessions):
        sid = f"00000000-0000-4000-8000-{s:012d}"
        entries: list[dict[str, Any]] = []
        parent = None
        for i in range(lines_per_session):
            ts = f"2026-01-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.000Z"
            uid = f"{s:08d}-{i:04d}-4000-8000-000000000000"
            if i % 4 == 0:
                entries.append(user(uid, sid, ts, filler, parent))
            elif i % 4 == 1:
                entries.append(assistant(uid, sid, ts, [text(filler)], parent, f"m{s}_{i}"))
            elif i % 4 == 2:
                entries.append(assistant(uid, sid, ts, [tool_use(f"t{s}_{i}", "Bash",
                                                                 command="ls -la")],
                                         parent, f"m{s}_{i - 1}"))
            else:
                entries.append(user(uid, sid, ts, [tool_result(f"t{s}_{i - 1}", filler)], parent))
            parent = uid
        write_jsonl(root / "-work-app" / f"{sid}.jsonl", entries)
        total += len(entries)
    return total


def resume_session_b(folder: Path) -> Path:
    """Write a resume of the fixture project's session B into ``folder`` (which holds
    B's file): a new session id replaying B's messages, then one new user message."""
    b = folder / "7c2d9e14-3a6b-4f1e-8d20-5e6f7a8b9c02.jsonl"
    resumed = [dict(json.loads(line), sessionId="bbbbbbbb-0000-4000-8000-00000000000b")
               for line in b.read_text().splitlines()]
    resumed.append(user("c0000002-new", "bbbbbbbb-0000-4000-8000-00000000000b",
                        "2026-11-21T15:00:00Z", "and the tests?",
                        "c0000002-0000-4000-8000-000000000004"))
    return write_jsonl(folder / "bbbbbbbb-0000-4000-8000-00000000000b.jsonl", resumed)


def message_rows(source: Path) -> list[dict[str, Any]]:
    """The message rows (content included) the transcripts under ``source`` give."""
    from graphkit.sources.full_schema import read_message_rows

    return read_message_rows([source], include_content=True).table.to_pylist()


def skipped_lines(*sources: Path) -> list[tuple[str, int, str]]:
    """(file name, line, reason) of each transcript line ``sources`` skip."""

    return [(Path(s.path).name, s.line, s.reason)
            for s in read_transcripts(list(sources)).skipped]


def assert_well_formed(table: pa.Table) -> None:
    """Schema exact, no nulls in non-null columns, part_id unique."""
    assert table.schema.equals(MESSAGES_SCHEMA)
    for field in MESSAGES_SCHEMA:
        if not field.nullable:
            assert table[field.name].null_count == 0, field.name
    assert len(set(table["part_id"].to_pylist())) == table.num_rows


def typed(value: Any) -> Any:
    """``value`` with every scalar paired with its type (1 and 1.0 and True differ)."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}, list(value)
    if isinstance(value, list):
        return [typed(v) for v in value]
    if isinstance(value, float) and value != value:
        return "nan", float
    return value, type(value)


AWKWARD_LINES = [
    b'{"a": NaN, "b": Infinity, "c": -Infinity}',
    b'{"big": 123456789012345678901234567890, "neg": -18446744073709551617}',
    b'{"f": [1e16, 1e-05, 0.1, 1E400, -0.0, 5e-324, 1.00000000000000000001]}',
    b'{"s": "\\ud800 lone", "pair": "\\ud83d\\ude00"}',
    b'\xef\xbb\xbf{"bom": 1}',
    "\u00a0".encode(),
    b"\x1c{}",
    b"   \t",
    b'{"a": 1}\r',
    b'{"a": 1, "a": 2, "b": 3}',
    b'"text"',
    b"null",
    b"[1, 2]",
    b"[" * 3000 + b"]" * 3000,
    b'{"x": ' + b"[" * 900 + b"]" * 900 + b"}",
    b'{"ctl": "a\x01b"}',
    b'{"trunc": "ab',
    b"{\"utf\": \"caf\xc3\xa9 \xe2\x80\xa8\"}",
]
