"""A query reads several tables, each checked against the snapshot's manifest read again;
the manifest's parse is reused while its bytes are the same, never once they differ."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphkit.builds.run import graph_from_records
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.snapshot import SnapshotError, read_manifest, write_snapshot
from graphkit.snapshot import read as snapread


def _graph(session: str):  # type: ignore[no-untyped-def]
    return graph_from_records([{"session_id": session, "message_id": "m", "part_id": "p",
                                "role": "user"}])


def test_tables_of_one_snapshot_parse_its_manifest_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_snapshot(_graph("s1"), tmp_path / "snap")
    reader = SnapshotReader(tmp_path / "snap")
    parsed: list[int] = []
    real = json.loads
    monkeypatch.setattr(snapread.json, "loads", lambda s, **k: parsed.append(1) or real(s, **k))
    for node_type in ("Session", "Thread", "Session"):
        assert reader.node_table(node_type, ["id"]) is not None
    reader.edge_table("HAS_THREAD", "Session", "Thread", [])
    assert len(parsed) <= 1
    # A caller of read_manifest gets its own parse, never the shared one.
    assert read_manifest(tmp_path / "snap") is not read_manifest(tmp_path / "snap")


def test_a_snapshot_replaced_under_a_reader_is_said_so(tmp_path: Path) -> None:
    write_snapshot(_graph("s1"), tmp_path / "snap")
    reader = SnapshotReader(tmp_path / "snap")
    assert reader.node_table("Thread", ["id"]) is not None  # parsed and kept
    write_snapshot(_graph("s2"), tmp_path / "snap")
    with pytest.raises(SnapshotError, match="replaced while it was being read"):
        reader.node_table("Session", ["session_id"])
    assert [s.session_id for s in SnapshotReader(tmp_path / "snap").sessions()] == ["s2"]
