"""Build the same input with the in-memory build and compare snapshots file by file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.generate import generate_rows, write_rows
from graphkit.builds.run import build
from graphkit.snapshot import read_manifest, write_snapshot


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
