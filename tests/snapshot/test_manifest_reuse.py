"""A query reads several tables, each checked against the snapshot's manifest read again;
the manifest's parse is reused while its bytes are the same, never once they differ (a
snapshot swapped in, or a manifest written again in place, is parsed anew)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from graphkit.builds.run import graph_from_records
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.snapshot import SnapshotError, read_manifest, write_snapshot
from graphkit.snapshot import read as snapread


def _graph(session: str):  # type: ignore[no-untyped-def]
    return graph_from_records([{"session_id": session, "message_id": "m", "part_id": "p",
                                "role": "user"}])


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every parse of a manifest (msgspec first; json.loads only for what it refuses)."""
    parsed: list[int] = []
    decode = snapread._DECODE

    def counting(data: bytes) -> object:
        parsed.append(1)
        return decode(data)

    monkeypatch.setattr(snapread, "_DECODE", counting)
    return parsed


def test_tables_of_one_snapshot_parse_its_manifest_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_snapshot(_graph("s1"), tmp_path / "snap")
    parsed = _counted(monkeypatch)
    reader = SnapshotReader(tmp_path / "snap")
    assert reader.node_table("Session", ["id"]) is not None
    first = len(parsed)
    assert first >= 1
    for node_type in ("Thread", "Session"):
        assert reader.node_table(node_type, ["id"]) is not None
    reader.edge_table("HAS_THREAD", "Session", "Thread", [])
    assert len(parsed) == first
    # A caller of read_manifest gets its own parse, never the shared one.
    assert read_manifest(tmp_path / "snap") is not read_manifest(tmp_path / "snap")
    assert len(parsed) == first + 2


def test_a_snapshot_replaced_under_a_reader_is_said_so(tmp_path: Path) -> None:
    write_snapshot(_graph("s1"), tmp_path / "snap")
    reader = SnapshotReader(tmp_path / "snap")
    assert reader.node_table("Thread", ["id"]) is not None  # parsed and kept
    write_snapshot(_graph("s2"), tmp_path / "snap")
    with pytest.raises(SnapshotError, match="replaced while it was being read"):
        reader.node_table("Session", ["session_id"])
    assert [s.session_id for s in SnapshotReader(tmp_path / "snap").sessions()] == ["s2"]


def test_a_manifest_written_again_in_place_is_parsed_again(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    write_snapshot(_graph("s1"), snap)
    entry = read_manifest(snap)["nodes"]["Session"]
    assert snapread.read_table(snap, entry).num_rows == 1
    manifest = snap / "manifest.json"
    text = manifest.read_text()
    digest = json.loads(text)["nodes"]["Session"]["sha256"]
    assert text.count(digest) == 1
    st = manifest.stat()
    with manifest.open("r+") as fh:  # in place: the same inode, the same size
        fh.write(text.replace(digest, digest[::-1]))
    assert manifest.stat().st_ino == st.st_ino and manifest.stat().st_size == st.st_size
    os.utime(manifest, ns=(st.st_atime_ns, st.st_mtime_ns))  # even the same mtime
    with pytest.raises(SnapshotError, match="replaced while it was being read"):
        snapread.read_table(snap, entry)


def test_msgspec_and_json_loads_read_a_manifest_alike(tmp_path: Path) -> None:
    write_snapshot(_graph("s1"), tmp_path / "snap")
    data = (tmp_path / "snap" / "manifest.json").read_bytes()
    assert snapread._DECODE(data) == json.loads(data)
