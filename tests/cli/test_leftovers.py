"""What a killed graphkit left is cleaned by the next run at that path, whatever that
run decides (issue 31): an export's temporary file, a build's temporary, spill and work
folders (a rebuild that keeps its snapshot too). A live writer's and a user's own hidden
files are never touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from graphkit.cli import cli
from graphkit.snapshot.swap import HOST

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "rows"


def invoke(*args: object) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def hidden(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.name.startswith(".")}


@pytest.fixture
def snap(tmp_path: Path) -> Path:
    out = tmp_path / "snap"
    assert invoke("build", SAMPLES, "--snapshot", out).exit_code == 0
    return out


def test_a_dead_exports_temporary_file_goes_with_the_next_export(tmp_path: Path,
                                                                 snap: Path) -> None:
    out = tmp_path / "g.graphml"
    dead = tmp_path / f".g.graphml.graphkit-tmp-{HOST}-{dead_pid()}-abcd1234.tmp"
    live = tmp_path / f".g.graphml.graphkit-tmp-{HOST}-{os.getpid()}-abcd1234.tmp"
    users = tmp_path / ".g.graphml.my-backup"
    for f in (dead, live, users):
        f.write_bytes(b"x" * 1000)
    assert invoke("export", snap, "--format", "graphml", out).exit_code == 0
    assert not dead.exists() and live.exists() and users.exists()


def test_even_an_export_that_fails_cleans_first(tmp_path: Path) -> None:
    out = tmp_path / "g.gexf"
    dead = tmp_path / f".g.gexf.graphkit-tmp-{HOST}-{dead_pid()}-abcd1234.tmp"
    dead.write_bytes(b"x")
    r = invoke("export", tmp_path / "no-such-snapshot", "--format", "gexf", out)
    assert r.exit_code == 2
    assert not dead.exists()


def test_a_dead_folder_exports_temporary_folder_goes_too(tmp_path: Path, snap: Path) -> None:
    dead = tmp_path / f".csv.graphkit-tmp-{HOST}-{dead_pid()}-abcd1234"
    (dead / "nodes").mkdir(parents=True)
    assert invoke("export", snap, "--format", "neo4j-csv", tmp_path / "csv").exit_code == 0
    assert not dead.exists()


def test_a_rebuild_that_keeps_the_snapshot_still_cleans(tmp_path: Path, snap: Path) -> None:
    dead = tmp_path / f".snap.graphkit-tmp-{HOST}-{dead_pid()}-abcd1234"
    (dead / "nodes").mkdir(parents=True)
    r = invoke("build", SAMPLES, "--snapshot", snap)
    assert r.exit_code == 0 and "snapshot kept" in r.output
    assert not dead.exists()


def _kill_when(pattern: str, folder: Path, *args: object) -> None:
    """Run graphkit, SIGKILL it once a file matching ``pattern`` appears in ``folder``."""
    proc = subprocess.Popen([sys.executable, "-m", "graphkit", *map(str, args)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if list(folder.glob(pattern)):
            time.sleep(0.2)
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


@pytest.fixture(scope="module")
def big_rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import pyarrow.parquet as pq

    from samples.generate import generate

    out = tmp_path_factory.mktemp("rows") / "rows.parquet"
    pq.write_table(generate(sessions=1500)[0], out)
    return out


@pytest.mark.slow
def test_a_killed_export_leaves_nothing_after_the_next(tmp_path: Path, big_rows: Path) -> None:
    snap = tmp_path / "snap"
    assert invoke("build", big_rows, "--snapshot", snap).exit_code == 0
    out = tmp_path / "g.graphml"
    _kill_when(".g.graphml.*", tmp_path, "export", snap, "--format", "graphml", out)
    assert any(n.startswith(".g.graphml.") for n in hidden(tmp_path)), "not killed mid-write"
    assert invoke("export", snap, "--format", "graphml", out).exit_code == 0
    assert not any(n.startswith(".g.graphml.") for n in hidden(tmp_path))


@pytest.mark.slow
def test_a_killed_build_leaves_nothing_after_a_rebuild_that_keeps_the_snapshot(
        tmp_path: Path, big_rows: Path) -> None:
    snap = tmp_path / "s"
    args = ("build", big_rows, "--snapshot", snap)
    assert invoke(*args).exit_code == 0
    # --granularity message makes it a rebuild, killed while it writes its tables.
    _kill_when(".s.graphkit-tmp-*/*/*", tmp_path, *args, "--granularity", "message")
    assert any("graphkit-tmp" in n for n in hidden(tmp_path)), "not killed mid-build"
    r = invoke(*args)
    assert r.exit_code == 0 and "snapshot kept" in r.output, r.output
    assert hidden(tmp_path) == {".s.cache"}


@pytest.mark.slow
def test_a_killed_partitioned_build_leaves_nothing_after_the_next(
        tmp_path: Path, big_rows: Path) -> None:
    args = ("build", big_rows, "--snapshot", tmp_path / "p", "--partitions", "4")
    _kill_when(".p.graphkit-tmp-*/*", tmp_path, *args)
    assert any("graphkit-tmp" in n for n in hidden(tmp_path)), "not killed mid-build"
    assert invoke(*args).exit_code == 0
    assert not [n for n in hidden(tmp_path) if "graphkit-" in n]
