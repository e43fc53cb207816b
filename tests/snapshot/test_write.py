"""Writing a snapshot where it cannot all be written: a disk that fills up, a file size
limit, a snapshot no reader could open. One line naming the path; the old snapshot
stays, nothing half-written beside it."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import built_samples, graphkit, one_line_error
from tests.helpers.paths import REPO
from tests.helpers.rows import identity_cases, table


def test_a_snapshot_every_reader_would_refuse_is_never_written(tmp_path: Path) -> None:
    # Was: `snapshot --neo4j --no-contract` wrote node tables without a key, which
    # every reader then refused as a malformed manifest.
    from graphkit.builds.run import build
    from graphkit.core.graph import NodeTable
    from graphkit.snapshot import write_snapshot
    from graphkit.snapshot.format import SnapshotError

    graph = build(table(identity_cases()), fingerprints=False).graph
    graph.nodes["Tool"] = NodeTable("Tool", (), graph.nodes["Tool"].table)
    with pytest.raises(SnapshotError, match="Tool without a key"):
        write_snapshot(graph, tmp_path / "snap")
    assert not (tmp_path / "snap").exists()


# Run inside a private mount namespace (unshare -m, as root): a tmpfs of SIZE at DISK,
# then each graphkit command; prints, as JSON, each command's exit code and stderr and
# what DISK holds after it. The tmpfs vanishes with the namespace.
_FULL_DISK = r'''
import json, os, subprocess, sys
size, disk, commands = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
os.makedirs(disk, exist_ok=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", disk], check=True)
out = []
for args in commands:
    p = subprocess.run([sys.executable, "-m", "graphkit", *args], capture_output=True,
                       text=True, errors="replace", timeout=300)
    files = sorted(os.path.relpath(os.path.join(r, f), disk)
                   for r, _, fs in os.walk(disk) for f in fs)
    out.append({"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr,
                "files": files})
print(json.dumps(out))
'''


def _on_a_full_disk(tmp_path: Path, size: str, *commands: list[object]) -> list[dict[str, Any]]:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a real full disk needs root and unshare (a tmpfs in a mount namespace)")
    script = tmp_path / "full_disk_runner.py"
    script.write_text(_FULL_DISK)
    disk = tmp_path / "disk"
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, script, size,
         disk, json.dumps([[str(a) for a in c] for c in commands])],
        env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
        timeout=600, check=False)
    if proc.returncode != 0 and "mount" in proc.stderr:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()[-200:]}")
    assert proc.returncode == 0, proc.stderr
    results: list[dict[str, Any]] = json.loads(proc.stdout)
    return results


def _one_line(result: dict[str, Any], *words: str) -> str:
    assert result["rc"] == 2, result
    lines = result["stderr"].splitlines()
    assert len(lines) == 1 and "Traceback" not in result["stderr"], lines
    for word in words:
        assert word in lines[0], lines[0]
    return str(lines[0])


@pytest.mark.slow
def test_a_full_disk_is_one_line_naming_the_path_and_the_old_snapshot_stays(
        tmp_path: Path) -> None:
    # A real ENOSPC (a 300 KiB tmpfs), not only RLIMIT_FSIZE's EFBIG. Was: a full build
    # cache and a full neo4j-csv/neo4j-parquet export said "stdout: cannot write: …" (the
    # writers' errors named no file, and the CLI's last resort took them for stdout);
    # the snapshot's own error named its folder twice and said nothing of what to do.
    disk = tmp_path / "disk"
    small = tmp_path / "small"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", small).returncode == 0
    big = tmp_path / "big.jsonl"
    line = '{"session_id": "s%d", "message_id": "m%d", "agent_id": "a%d"}\n'
    big.write_text("".join(line % (i, i, i) for i in range(30_000)))
    transcripts = REPO / "tests" / "fixtures" / "transcripts" / "claude-code-log"
    first, over, sessions, cache, export_csv, export_pq, rows = _on_a_full_disk(
        tmp_path, "300k",
        ["build", REPO / "samples" / "rows", "--snapshot", disk / "snap"],
        ["build", big, "--snapshot", disk / "snap"],
        ["sessions", "--snapshot", disk / "snap"],
        ["build", transcripts, "--snapshot", tmp_path / "t-snap", "--cache-dir",
         disk / "cache"],
        ["export", small, "--format", "neo4j-csv", disk / "csv"],
        ["export", small, "--format", "neo4j-parquet", disk / "pq"],
        ["rows", big, "--out", disk / "rows.parquet"])
    assert first["rc"] == 0, first
    _one_line(over, f"{disk / 'snap'}: cannot write the snapshot: No space left on device;",
              "free some space", "an earlier snapshot there is kept")
    assert over["files"] == first["files"]  # the old snapshot, nothing half-written beside
    assert sessions["rc"] == 0 and "8299ed6e" in sessions["stdout"], sessions  # readable
    _one_line(cache, f"{disk / 'cache'}", "No space left on device")
    assert "stdout" not in cache["stderr"]
    for result, name in ((export_csv, "csv"), (export_pq, "pq")):
        _one_line(result, f"{disk / name}: cannot write", "No space left on device")
        assert not [f for f in result["files"] if f.startswith((name, f".{name}"))], result
    _one_line(rows, f"{disk / 'rows.parquet'}: cannot write: No space left on device")


def _small_files() -> None:
    # Files may grow to 64 KiB; a larger write fails with EFBIG (not a SIGXFSZ kill),
    # as a full disk fails with ENOSPC.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))


@pytest.mark.slow
def test_a_snapshot_that_does_not_fit_is_one_line_and_the_old_one_stays(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    # Was: an OSError traceback from the Parquet writer.
    snap = built_samples(tmp_path_factory, "fit")
    big = tmp_path / "big.jsonl"
    line = '{"session_id": "s%d", "message_id": "m%d"}\n'
    big.write_text("".join(line % (i, i) for i in range(20_000)))
    before = sorted(p.name for p in snap.iterdir())
    proc = graphkit("build", big, "--snapshot", snap, process=True, capture_output=True,
                    preexec_fn=_small_files)
    one_line_error(proc, str(snap), "cannot write")
    assert sorted(p.name for p in snap.iterdir()) == before
    # No temp folder left (the build's cache beside the snapshot is kept on purpose).
    assert not [p for p in snap.parent.iterdir()
                if p.name.startswith(".") and p.name != f".{snap.name}.cache"]
    assert graphkit("sessions", "--snapshot", snap).returncode == 0
