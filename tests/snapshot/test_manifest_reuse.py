"""A command reading a snapshot table by table parses its manifest once: later reads
take the manifest parsed before while its file is the same one, unchanged; a snapshot
swapped in, or a manifest written again, is parsed anew (never a stale answer)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from graphkit.builds.run import graph_from_records
from graphkit.snapshot import SnapshotError, read_manifest, write_snapshot
from graphkit.snapshot import read as snapread
from tests.builders import row


def _snap(path: Path, session: str) -> None:
    write_snapshot(graph_from_records([row(session, message_id=f"{session}-m")]), path)


def _sessions(path: Path) -> list[str]:
    entry = read_manifest(path)["nodes"]["Session"]
    return snapread.read_table(path, entry).column("session_id").to_pylist()


def test_table_reads_parse_the_manifest_once(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    snap = tmp_path / "snap"
    _snap(snap, "s1")
    entry = read_manifest(snap)["nodes"]["Session"]
    parses: list[int] = []
    decode = snapread._DECODE

    def counting(data: bytes) -> object:
        parses.append(1)
        return decode(data)

    monkeypatch.setattr(snapread, "_DECODE", counting)
    for _ in range(5):
        assert snapread.read_table(snap, entry).column("session_id").to_pylist() == ["s1"]
    assert len(parses) <= 1


def test_a_new_snapshot_is_read_anew(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    _snap(snap, "s1")
    assert _sessions(snap) == ["s1"]
    _snap(snap, "s2")
    assert _sessions(snap) == ["s2"]


def test_a_manifest_written_again_in_place_is_parsed_again(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    _snap(snap, "s1")
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
