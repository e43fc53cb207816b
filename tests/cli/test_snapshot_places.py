"""Nothing but graphkit's writer puts files into a snapshot (issue 31, probes beyond the
issue's list): a snapshot or a build cache inside another snapshot left that snapshot
one graphkit refuses to replace; each is refused naming the snapshot. And a killed
writer's temporary copy of the build cache, the transcript index or the snapshot index
is deleted by the next write of that file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from graphkit.cli import cli
from graphkit.snapshot.swap import HOST
from tests.helpers.rows import identity_cases, write_parquet

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "rows"


def invoke(*args: object) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def snap(tmp_path: Path) -> Path:
    out = tmp_path / "snap"
    assert invoke("build", SAMPLES, "--snapshot", out).exit_code == 0
    return out


def entries(snap: Path) -> list[str]:
    return sorted(p.name for p in snap.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("inner", ["inner", "nodes/inner"])
def test_a_snapshot_inside_a_snapshot_is_refused(tmp_path: Path, snap: Path,
                                                 inner: str) -> None:
    src = write_parquet(identity_cases(), tmp_path / "rows.parquet")
    r = invoke("build", src, "--snapshot", snap / inner, "--rejects", tmp_path / "r.jsonl")
    assert r.exit_code == 2 and "inside the snapshot" in r.output and str(snap) in r.output
    assert entries(snap) == ["edges", "manifest.json", "nodes"]
    assert invoke("build", SAMPLES, "--snapshot", snap, "--granularity", "message"
                  ).exit_code == 0  # still replaceable


@pytest.mark.parametrize("where", ["", "cache"])
def test_a_build_cache_inside_a_snapshot_is_refused(tmp_path: Path, snap: Path,
                                                    where: str) -> None:
    r = invoke("build", SAMPLES, "--snapshot", tmp_path / "other", "--cache-dir",
               snap / where if where else snap)
    assert r.exit_code == 2 and "build cache inside the snapshot" in r.output
    assert entries(snap) == ["edges", "manifest.json", "nodes"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.slow
def test_dead_writers_copies_of_the_cache_and_index_are_deleted(tmp_path: Path,
                                                                snap: Path) -> None:
    home = Path(os.environ["GRAPHKIT_HOME"])
    index = home / "index.json"
    cache = tmp_path / ".snap.cache"
    record = next(p for p in cache.iterdir() if p.name.startswith("build-record"))
    dead = _dead_pid()
    left = [index.with_name(f".index.json.graphkit-tmp-{HOST}-{dead}-abcd1234.tmp"),
            record.with_name(f".{record.name}.graphkit-tmp-{HOST}-{dead}-abcd1234.tmp")]
    for f in left:
        f.write_bytes(b"x" * 1000)
    r = invoke("build", SAMPLES, "--snapshot", snap, "--granularity", "message", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["snapshot"]
    assert [f for f in left if f.exists()] == []
