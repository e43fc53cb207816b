"""Build the same input with the in-memory build and compare snapshots file by file."""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.generate import generate_rows, write_rows
from graphkit.builds.run import build
from graphkit.snapshot import read_manifest, write_snapshot
from tests.helpers.rows import T0, row


def reference(sources: list[Path], out: Path, **kw: Any) -> dict[str, Any]:
    """The in-memory build's snapshot in ``out``; its summary."""
    r = build(sources, fingerprints=False, **kw)
    summary = r.summary()
    write_snapshot(r.graph, out, summary=summary, inputs=r.sources.fingerprints,
                   include_content=kw.get("include_content", False))
    return summary


def digests(snapshot: Path) -> dict[str, str]:
    """SHA-256 of every Parquet file of a snapshot, by relative path."""
    return {str(p.relative_to(snapshot)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(snapshot.rglob("*.parquet"))}


def assert_same_snapshot(ref: Path, got: Path) -> None:
    """Same files, same bytes, same tables, and the same manifest but for the
    build's time and the engine's own account."""
    want, have = digests(ref), digests(got)
    assert sorted(have) == sorted(want)
    for name in want:
        a, b = pq.read_table(ref / name), pq.read_table(got / name)
        assert b.schema == a.schema, name
        assert b.equals(a), name
        assert have[name] == want[name], f"{name}: equal tables, different bytes"
    ma, mb = read_manifest(ref), read_manifest(got)
    for m in (ma, mb):
        m.pop("created_at")
        m["summary"].pop("engine", None)
        m["summary"].pop("rejects_file", None)  # named after each snapshot
    assert json.dumps(mb, sort_keys=True) == json.dumps(ma, sort_keys=True)


def same_summary(engine_summary: dict[str, Any], summary: dict[str, Any]) -> bool:
    """The engine's summary less its engine account equals the in-memory build's."""
    return {k: v for k, v in engine_summary.items() if k != "engine"} == summary


def generated_rows(folder: Path, rows: int = 6000, seed: int = 11) -> Path:
    """Rows from bench/generate.py (Claude and Codex sessions, subagents to depth 4,
    ~3% duplicates), written as several Parquet files."""
    table, truth, info = generate_rows(rows, seed=seed)
    write_rows(table, truth, info, folder, file_rows=max(1, table.num_rows // 4))
    return folder


def write_rows_file(path: Path, records: list[dict[str, Any]]) -> Path:
    """Rows given as dicts (columns of ai_gateway_messages) as a Parquet file."""
    from graphkit.core.schema import MESSAGES_SCHEMA

    names = [n for n in MESSAGES_SCHEMA.names if any(n in r for r in records)]
    schema = pa.schema([MESSAGES_SCHEMA.field(n).with_nullable(True) for n in names])
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(records, schema=schema), path)
    return path


def continuation_rows(sessions: int = 160, seed: int = 5) -> tuple[list[dict[str, Any]],
                                                                   list[tuple[str, str]]]:
    """Claude and Codex sessions that continue earlier ones (``attributes.continues``,
    Claude's ``resumed_from``, a Codex root thread's ``forked_from_id``), Codex child
    threads whose parent thread is another session's, and the cases the in-memory
    build drops (an origin no row holds, a session continuing itself). The rows, and
    every (session, session it continues) pair whose two sessions have rows."""
    rng = random.Random(seed)
    ids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(sessions)]
    codex = [i % 3 == 2 for i in range(sessions)]
    rows: list[dict[str, Any]] = []
    pairs: list[tuple[str, str]] = []
    hows = ["resume", "fork", "branch", "compaction", "teammate"]
    for i, sid in enumerate(ids):
        at = T0 + timedelta(seconds=10 * i)
        origin = ids[rng.randrange(i)] if i else None
        base: dict[str, Any] = {"cwd": f"/w/p{i % 4}", "model": "m-1"}
        if codex[i]:
            base.update(conversation_id=sid, provider="openai", client_name="codex")
        case = i % 8 if origin else 0
        attrs: list[dict[str, Any] | None] = [None, None, None]
        if case in (1, 7):
            # The first row in the build's order names how (the third is earlier).
            attrs = [{"continues": {"session_id": origin, "how": h}}
                     for h in (rng.choice(hows), None, rng.choice(hows))]
        elif case == 2:
            attrs = [{"claude": {"resumed_from": origin}}] * 3
        elif case == 3:
            attrs = [{"codex": {"forked_from_id": origin}}] * 3
        elif case == 4:  # two rules find one edge: one edge, `how` from the first rule
            attrs = [{"claude": {"resumed_from": origin}},
                     {"continues": {"session_id": origin, "how": "branch"}}, None]
        elif case == 5:  # an origin no row holds: dropped, missing_target
            attrs = [{"continues": {"session_id": f"gone-{i}", "how": "resume"}}] * 3
        elif case == 6:  # itself: dropped, self_loop
            attrs = [{"continues": {"session_id": sid, "how": "fork"}}] * 3
        if case in (1, 2, 3, 4, 7):
            pairs.append((sid, str(origin)))
        for j, a in enumerate(attrs):
            when = at + timedelta(seconds=-5 if (case == 7 and j == 2) else j)
            rows.append(row(sid, message_id=f"{sid}-m{j}", message_created_at=when,
                            attributes=None if a is None else json.dumps(a), **base))
        if codex[i] and i % 5 == 0:
            # A child thread whose parent is another session's thread (or none at all).
            parent = "gone-thread" if i % 10 == 5 else next(
                ids[k] for k in range(i - 1, -1, -1) if codex[k])
            rows.append(row(sid, message_id=f"{sid}-child", message_created_at=at,
                            **{**base, "conversation_id": f"{sid}-child",
                               "parent_thread_id": parent, "is_sidechain": True}))
    return rows, pairs
