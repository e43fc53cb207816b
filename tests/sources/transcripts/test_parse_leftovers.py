"""A killed build's parse hand-over folder (in the temporary folder) is deleted by the
next parse in worker processes (issue 31); a live build's is kept."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from graphkit.snapshot.swap import HOST
from graphkit.sources.transcripts.pool import parse_in_workers

SHOWCASE = (Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
            / "claude-code-log" / "minimal_showcase")


def test_a_dead_builds_parse_folder_goes_with_the_next_parse(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    dead = tmp_path / f".graphkit-parse.graphkit-tmp-{HOST}-{proc.pid}-abcd1234"
    live = tmp_path / f".graphkit-parse.graphkit-tmp-{HOST}-{os.getpid()}-abcd1234"
    for folder in (dead, live):
        folder.mkdir()
        (folder / "out.pickle").write_bytes(b"x" * 100)
    paths = sorted(SHOWCASE.glob("*.jsonl"))
    got = list(parse_in_workers(paths, [p.stat().st_size for p in paths]))
    assert len(got) == len(paths)
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name]
