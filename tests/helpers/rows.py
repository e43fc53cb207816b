"""Small row builders for tests: each identity case of DOMAIN.md §2 as rows."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from graphkit.core.schema import MESSAGES_SCHEMA

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)

_counter = {"n": 0}


def row(session_id: str | None, **kw: Any) -> dict[str, Any]:
    """One message-part row with every non-null column filled."""
    _counter["n"] += 1
    n = _counter["n"]
    mid = kw.pop("message_id", f"msg-{n}")
    r: dict[str, Any] = {
        "gateway_id": "test", "schema_version": 7, "session_id": session_id,
        "provider": "anthropic", "conversation_started_at": T0,
        "message_id": mid, "message_index": n, "message_created_at": T0 + timedelta(seconds=n),
        "role": "assistant", "part_id": kw.pop("part_id", f"{mid}:0"), "part_index": 0,
        "part_type": "text", "date": "2026-11-20",
    }
    r.update(kw)
    return r


def spawned(call_id: str, **extra: str) -> str:
    """``attributes`` JSON of a Claude subagent row spawned by ``call_id``."""
    return json.dumps({"claude": {"spawned_by_tool_use_id": call_id, **extra}})


def table(rows: list[dict[str, Any]]) -> pa.Table:
    """Rows as an Arrow table with the ``ai_gateway_messages`` schema (nullable)."""
    schema = pa.schema([f.with_nullable(True) for f in MESSAGES_SCHEMA])
    return pa.Table.from_pylist(rows, schema=schema)


def write_parquet(rows: list[dict[str, Any]], path: Path) -> Path:
    """Write rows to a Parquet file and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table(rows), path)
    return path


def identity_cases() -> list[dict[str, Any]]:
    """Claude main loop, subagent, nested subagent; Codex thread and child;
    a duplicated part; a row without a session. The same rows on every call."""
    _counter["n"] = 0
    claude = "c1a0de00-0000-4000-8000-000000000001"
    codex_root = "c0de0000-0000-4000-8000-00000000000a"
    codex_child = "c0de0000-0000-4000-8000-00000000000b"
    rows = [
        row(claude, role="user", cwd="/home/dev/src/webapp", model=None,
            message_id="cm1"),
        row(claude, message_id="cm2", part_type="tool_call", tool_name="Task",
            tool_call_id="toolu_A", model="claude-sonnet-4-5", cwd="/home/dev/src/webapp"),
        row(claude, agent_id="agentA", is_sidechain=True, attributes=spawned(
            "toolu_A", agent_type="Explore", description="find routes"),
            message_id="am1", part_type="tool_call", tool_name="Agent", tool_call_id="toolu_B",
            model="claude-haiku-4-5"),
        row(claude, agent_id="agentB", is_sidechain=True, attributes=spawned("toolu_B"),
            message_id="bm1", model="claude-haiku-4-5"),
        row(codex_root, conversation_id=codex_root, provider="openai", message_id="xm1",
            model="gpt-5-codex", cwd="/home/dev/src/api"),
        row(codex_root, conversation_id=codex_child, parent_thread_id=codex_root,
            is_sidechain=True, provider="openai", message_id="ym1", model="gpt-5-codex-mini"),
    ]
    rows.append(dict(rows[1]))  # the same part twice counts once
    rows.append(row(None, message_id="orphan"))
    return rows


CLAUDE = "c1a0de00-0000-4000-8000-000000000001"
CODEX_ROOT = "c0de0000-0000-4000-8000-00000000000a"
CODEX_CHILD = "c0de0000-0000-4000-8000-00000000000b"


def json_lines(rows: list[dict[str, Any]]) -> str:
    """``rows`` as JSON Lines text (values JSON cannot hold written as their text)."""
    return "".join(json.dumps(r, default=str) + "\n" for r in rows)


def identity_cases_renamed(session_id: str, agent_id: str) -> list[dict[str, Any]]:
    """:func:`identity_cases` with the Claude session and its subagent ``agentA`` under
    other ids (hostile ids: bidi controls, line separators, other Unicode forms)."""
    rows = []
    for r in identity_cases():
        r = dict(r)
        if r["session_id"] == CLAUDE:
            r["session_id"] = session_id
        if r.get("agent_id") == "agentA":
            r["agent_id"] = agent_id
        rows.append(r)
    return rows


def rows_with_a_lone_surrogate(folder: Path) -> Path:
    """``folder/b.jsonl``: :func:`identity_cases` with an escaped lone surrogate
    (``"\\udfff"``) opening line 4's session id, beside ``a.jsonl`` of the plain rows."""
    rows = json_lines(identity_cases()).splitlines()
    rows[3] = rows[3].replace('"session_id": "', '"session_id": "\\udfff', 1)
    folder.mkdir()
    bad = folder / "b.jsonl"
    bad.write_text("\n".join(rows) + "\n")
    (folder / "a.jsonl").write_text(json_lines(identity_cases()))
    return bad


def with_touched_files(rows: list[dict[str, object]]) -> pa.Table:
    """``rows`` with the ai_gateway_messages schema plus the ``touched_files`` column."""
    t = table([{k: v for k, v in r.items() if k != "touched_files"} for r in rows])
    return t.append_column("touched_files", pa.array([r.get("touched_files") for r in rows],
                                                     pa.string()))


def usage_rows(tmp_path: Path, usage: dict[int, dict[str, object]]) -> Path:
    """The identity rows that have a session, with ``usage`` (row index → the row's
    attributes.usage), as ``tmp_path/rows.parquet``."""
    rows = [dict(r) for r in identity_cases() if r["session_id"]]
    for i, u in usage.items():
        attrs = json.loads(rows[i].get("attributes") or "{}")
        rows[i]["attributes"] = json.dumps({**attrs, "usage": u})
    path = tmp_path / "rows.parquet"
    pq.write_table(table(rows), path)
    return path


def read_rejects(snap: Path) -> list[dict[str, object]]:
    """The records of ``snap``'s rejects file (SNAPSHOT.rejects.jsonl)."""
    return [json.loads(line) for line in
            snap.with_name(snap.name + ".rejects.jsonl").read_text().splitlines()]


def loop_rows() -> list[dict[str, Any]]:
    """Codex threads of one session whose parent links loop (c1 → c2 → c3 → c1),
    one hanging below the loop, one its own parent."""
    return [row("CY", conversation_id="c1", parent_thread_id="c2", message_id="m1"),
            row("CY", conversation_id="c2", parent_thread_id="c3", message_id="m2"),
            row("CY", conversation_id="c3", parent_thread_id="c1", message_id="m3"),
            row("CY", conversation_id="c4", parent_thread_id="c2", message_id="m4"),
            row("CY", conversation_id="self", parent_thread_id="self", message_id="m5")]
