"""Hostile places to write (issue 13, second round; the table is tests/HOSTILE.md): a
full disk, a device or pipe as the output file, a closed or full stdout. Each ends in
exit 0 or one line and exit 2; no device node is ever replaced; the old snapshot stays."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import built_samples, graphkit, one_line_error
from tests.helpers.paths import REPO

SESSION = "8299ed6e-811c-4fa7-b124-c205cd625a7f"


@pytest.fixture(scope="module")
def snap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_samples(tmp_path_factory, "hostile-out")


def _run(args: list[object], **kw: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "graphkit", *map(str, args)], env=env,
                          text=True, errors="replace", timeout=300, check=False, **kw)


@pytest.mark.parametrize("command", ["view", "export-edges", "export-graphml"])
def test_view_and_export_write_through_a_pipe_and_never_replace_it(
        snap: Path, tmp_path: Path, command: str) -> None:
    # Was: a temporary file renamed over the output: `--out /dev/full` run as root
    # replaced the /dev/full device with a regular file (rows had the fix; these not).
    fifo = tmp_path / ("out.csv" if command == "export-edges" else "out")
    os.mkfifo(fifo)
    args: list[object] = {
        "view": ["view", SESSION, "--snapshot", snap, "--out", fifo],
        "export-edges": ["export", snap, "--format", "edges", fifo],
        "export-graphml": ["export", snap, "--format", "graphml", fifo],
    }[command]
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    try:
        proc = graphkit(*args)
        data, _ = reader.communicate(timeout=120)
    finally:
        reader.kill()
    assert proc.returncode == 0, proc.stderr
    assert fifo.is_fifo() and len(data) > 1000


def _small_files() -> None:
    # Files may grow to 64 KiB; a larger write fails with EFBIG (not a SIGXFSZ kill),
    # as a full disk fails with ENOSPC.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))


def test_a_snapshot_that_does_not_fit_is_one_line_and_the_old_one_stays(snap: Path,
                                                                        tmp_path: Path) -> None:
    # Was: an OSError traceback from the Parquet writer.
    big = tmp_path / "big.jsonl"
    line = '{"session_id": "s%d", "message_id": "m%d"}\n'
    big.write_text("".join(line % (i, i) for i in range(20_000)))
    before = sorted(p.name for p in snap.iterdir())
    proc = _run(["build", big, "--snapshot", snap], capture_output=True,
                preexec_fn=_small_files)
    one_line_error(proc, str(snap), "cannot write")
    assert sorted(p.name for p in snap.iterdir()) == before
    # No temp folder left (the build's cache beside the snapshot is kept on purpose).
    assert not [p for p in snap.parent.iterdir()
                if p.name.startswith(".") and p.name != f".{snap.name}.cache"]
    assert graphkit("sessions", "--snapshot", snap).returncode == 0


@pytest.mark.parametrize("args", [["sessions"], ["tree", SESSION], ["lineage", SESSION, "--json"],
                                  ["export", "{snap}", "--format", "edges", "-"]])
def test_a_full_stdout_is_one_line(snap: Path, args: list[str]) -> None:
    # Was: an OSError traceback from click.echo.
    args = [str(snap) if a == "{snap}" else a for a in args]
    if args[0] != "export":
        args += ["--snapshot", str(snap)]
    with open("/dev/full", "w") as full:
        proc = _run(args, stdout=full, stderr=subprocess.PIPE)
    one_line_error(proc, "cannot write", "No space left")


@pytest.mark.parametrize("args", [["sessions"], ["tree", SESSION], ["usage"]])
def test_a_closed_stdout_is_no_traceback(snap: Path, args: list[str]) -> None:
    # Was: AttributeError 'NoneType' object has no attribute 'isatty'.
    proc = _run([*args, "--snapshot", snap], stderr=subprocess.PIPE,
                preexec_fn=lambda: os.close(1))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("args", [["sessions", "--json"], ["rows", "{rows}", "--out", "-"],
                                  ["export", "{snap}", "--format", "edges", "-"]])
def test_a_reader_that_stops_reading_ends_the_command_quietly(snap: Path,
                                                              args: list[str]) -> None:
    # `graphkit … | head -0`: was exit 1 silently (click), or exit 2 "Broken pipe" (rows).
    args = [str(snap) if a == "{snap}" else str(REPO / "samples" / "rows") if a == "{rows}"
            else a for a in args]
    if args[0] == "sessions":
        args += ["--snapshot", str(snap)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "graphkit", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before graphkit writes a byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0, err
    assert err == ""
