"""The per-file fast paths of the transcript reader give exactly what they replaced.

Sniffing a file's kind and reading an agent's sidecar decode with msgspec first; a
Claude file's layout is read from its path's parts; the Claude parser parses each
timestamp text once and asks ClaudeUsage only about messages carrying a usage object.
Each is held here to the plain reference it replaced, on awkward inputs.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphkit.sources.transcripts.claude import ClaudeLayout, claude_layout, parse_claude
from graphkit.sources.transcripts.files import (
    _CLAUDE_KEYS,
    _CODEX_TYPES,
    _kind_of_object,
    candidates,
    json_document,
    read_meta,
    sniff_kind,
)
from tests.helpers.transcripts import AWKWARD_LINES, assistant, text, typed, user, write_jsonl


def reference_sniff(name: str, data: bytes) -> str | None:
    """sniff_kind as it was: json.loads on each of the first 20 lines."""
    if name.endswith(".json"):
        try:
            return _kind_of_object(json.loads(data))
        except (ValueError, RecursionError):
            return None
    for raw in data.split(b"\n", 20)[:20]:
        try:
            kind = _kind_of_object(json.loads(raw))
        except ValueError:
            continue
        except RecursionError:
            kind = None
            if b'"payload"' in raw and any(f'"{t}"'.encode() in raw for t in _CODEX_TYPES):
                kind = "codex"
            elif any(f'"{k}"'.encode() in raw for k in _CLAUDE_KEYS):
                kind = "claude"
        if kind is not None:
            return kind
    return None


HEADS = [
    *AWKWARD_LINES,
    b'{"type": "session_meta", "payload": {}}',
    b'{"id": "x", "timestamp": "2025-01-01T00:00:00Z"}',
    b'{"sessionId": NaN}',
    b'\xef\xbb\xbf{"leafUuid": "x"}',
    b'{"sessionId": "\\ud800"}',
    b'{"type": "queue-operation", "x": "\xff"}',
    b'{"type": "queue-operation", "x": "\xed\xa0\x80"}',
    # nesting msgspec reads but json.loads may find too deep: judged by the keys named
    b'{"x": ' + b"[" * 996 + b"]" * 996 + b', "sessionId": "s"}',
    b'{"payload": ' + b"[" * 996 + b"]" * 996 + b', "type": "event_msg"}',
    b'{"x": ' + b"[" * 199 + b"]" * 199 + b', "parentUuid": null}',
    b'{"x": ' + b"{" * 120 + b"}" * 120 + b', "leafUuid": null}',
]


@pytest.mark.parametrize("head", HEADS)
def test_sniffing_decides_as_json_loads_did(head: bytes) -> None:
    tail = b'{"type": "event_msg", "payload": {}}'
    for data in (head, head + b"\n" + tail, b"\n".join([head] * 3)):
        assert sniff_kind("x.jsonl", data) == reference_sniff("x.jsonl", data)


SIDECARS = [
    b"", b"null", b"[]", b'"x"', b'\xef\xbb\xbf{"agentType": "Explore"}',
    b'{"agentType": NaN, "n": Infinity}', b'{"agentType": "\\ud800x", "d": "\\udc00"}',
    b'{"agentType": "a", "agentType": "b"}', b'{"agentType": "\xff"}',
    b'{"agentType": "\xed\xa0\x80"}', b'{"a": ' + b"[" * 996 + b"]" * 996 + b"}",
    b"[" * 3000 + b"]" * 3000, b'{"agentType": 1e400, "toolUseId": 2e16, "f": [1.5, -0.0]}',
    b'{"description": 123456789012345678901234567890}', b'{"agentType"', b'{"a": 1}\r\n',
    b"\x00{}", b"\xff\xfe{\x00}\x00", b' {"agentType": "x", "toolUseId": null} ',
    json.dumps({"agentType": "Plan", "description": "caf\u00e9 \u2028 \U0001f600"},
               ensure_ascii=False).encode(),
]


@pytest.mark.parametrize("content", SIDECARS)
def test_sidecars_read_as_json_document_reads_them(tmp_path: Path, content: bytes) -> None:
    agent = tmp_path / "s1" / "subagents" / "agent-a1.jsonl"
    agent.parent.mkdir(parents=True)
    sidecar = agent.with_name("agent-a1.meta.json")
    sidecar.write_bytes(content)
    try:
        expected = json_document(content)
    except (ValueError, RecursionError):
        expected = None
    meta, fingerprint, _lone_line = read_meta(agent)
    assert typed(meta) == typed(expected if isinstance(expected, dict) else None)
    assert fingerprint is not None
    assert (fingerprint["path"], fingerprint["size"]) == (str(sidecar), len(content))
    assert fingerprint["mtime_ns"] == sidecar.stat().st_mtime_ns


def test_no_sidecar_reads_as_none(tmp_path: Path) -> None:
    assert read_meta(tmp_path / "agent-a1.jsonl") == (None, None, None)


def reference_layout(path: Path) -> ClaudeLayout:
    """claude_layout as it was: walking Path.parent."""
    stem = path.name.split(".", 1)[0]
    if not stem.startswith("agent-"):
        return ClaudeLayout(stem, None, None, False)
    agent = stem[len("agent-"):]
    compaction = agent.startswith("acompact")
    parent = path.parent
    if parent.parent.name == "workflows" and parent.parent.parent.name == "subagents":
        session = parent.parent.parent.parent.name
        return ClaudeLayout(session, agent, parent.name, compaction, session)
    if parent.name == "subagents":
        return ClaudeLayout(parent.parent.name, agent, None, compaction, parent.parent.name)
    return ClaudeLayout(stem, agent, None, compaction)


@pytest.mark.slow
def test_layout_from_the_path_parts_is_the_parents_layout() -> None:
    names = ["s1", "subagents", "workflows", "agent-a1.jsonl", "agent-acompact-x.jsonl",
             "x.jsonl", "..", "a.b.c"]
    for depth in range(1, 6):
        for combo in itertools.product(names, repeat=depth):
            for root in ("/", "", "../", "//"):
                path = Path(root + "/".join(combo))
                assert claude_layout(path) == reference_layout(path), path


def rows_of(path: Path) -> tuple[list[tuple[Any, ...]], list[tuple[int, str]], Any]:
    parse = parse_claude(path, path.read_bytes())
    return parse.rows, parse.skipped, parse.facts


def test_repeated_and_odd_timestamps_are_each_judged(tmp_path: Path) -> None:
    ts = "2026-01-01T00:00:01.250Z"
    entries = [user("u1", "s1", ts, "hi"), user("u2", "s1", "yesterday", "a"),
               user("u3", "s1", "yesterday", "b"), user("u4", "s1", ts, "c"),
               {**user("u5", "s1", ts, "d"), "timestamp": ["not", "text"]},
               {**user("u6", "s1", ts, "e"), "timestamp": {"a": 1}},
               {**user("u7", "s1", ts, "f"), "timestamp": 5},
               {k: v for k, v in user("u8", "s1", ts, "g").items() if k != "timestamp"}]
    rows, skipped, _ = rows_of(write_jsonl(tmp_path / "s1.jsonl", entries))
    at = 22  # message_created_at
    assert [r[at] for r in rows] == [1_767_225_601_250_000] * 3  # u1, u4, u8 (the last's)
    assert [line for line, _ in skipped] == [2, 3, 5, 6, 7]


def test_usage_only_from_messages_carrying_a_usage_object(tmp_path: Path) -> None:
    ts = "2026-01-01T00:00:01Z"
    entries = []
    for i, usage in enumerate([{"input_tokens": 3, "output_tokens": 4}, None, "x", [1],
                               {"input_tokens": True, "output_tokens": 2.5}]):
        e = assistant(f"a{i}", "s1", ts, [text("t")], requestId=f"r{i}")
        if usage is not None:
            e["message"]["usage"] = usage
        entries.append(e)
    _, _, facts = rows_of(write_jsonl(tmp_path / "s1.jsonl", entries))
    zero = {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    assert facts["usage"] == [
        [1, "msg_a0|r0", {"input_tokens": 3, "output_tokens": 4, **zero}],
        [5, "msg_a4|r4", {"input_tokens": 0, "output_tokens": 0, **zero}],
    ]


def reference_candidates(root: Path) -> Iterator[Path]:
    """candidates as it was: a Path per folder to tell whether it lies in subagents/."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        in_subagents = "subagents" in Path(dirpath).relative_to(root).parts or (
            Path(dirpath).name == "subagents")
        for name in sorted(filenames):
            if not name.endswith((".jsonl", ".json")) or name.endswith(".meta.json"):
                continue
            if in_subagents and not name.startswith("agent-"):
                continue
            yield Path(dirpath) / name


def test_the_walk_finds_what_the_path_walk_found(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    for rel in ["subagents/agent-a.jsonl", "subagents/x.jsonl", "s/subagents/agent-b.jsonl",
                "s/subagents/j.jsonl", "s/subagents/workflows/w/agent-c.jsonl",
                "s/subagents/workflows/w/journal.jsonl", "a.jsonl", "b.meta.json", "c.json",
                "subagentsX/x.jsonl", "Xsubagents/y.jsonl", "q/r/s.jsonl", "s.jsonl"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    monkeypatch.chdir(tmp_path)
    roots = [tmp_path, tmp_path / "subagents", tmp_path / "s" / "subagents", tmp_path / "s",
             Path("."), Path("s"), Path("subagents"), Path("./s/subagents"),
             Path("s/subagents/workflows")]
    for root in roots:
        got, expected = list(candidates(root)), list(reference_candidates(root))
        assert got == expected and list(map(str, got)) == list(map(str, expected)), root
