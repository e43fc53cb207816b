"""Reads that decide what a file is are bounded (issue 31): a file with no newline in its
first gigabyte was read whole to be told apart (2.2 GB for 1 GiB; a MemoryError
traceback under a 4 GB limit). Now it is told apart in ~100 MB, with one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphkit.sources.transcripts.files import file_kind, transcript_kind

GIB = 1 << 30
REPO = Path(__file__).resolve().parents[2]


def sparse(path: Path, head: bytes = b"") -> Path:
    """A 1 GiB file: ``head``, then zero bytes (sparse: no disk space, no newline)."""
    path.write_bytes(head)
    os.truncate(path, GIB)
    return path


def peak_of_build(path: Path, tmp_path: Path) -> tuple[int, str, int]:
    """(exit code, stderr, peak RSS in MiB) of `graphkit build PATH` in a fresh process."""
    probe = ("import resource, subprocess, sys; r = subprocess.run([sys.executable, '-m', "
             "'graphkit', 'build', sys.argv[1], '--snapshot', sys.argv[2]], "
             "capture_output=True, text=True); print(r.returncode); print(resource.getrusage("
             "resource.RUSAGE_CHILDREN).ru_maxrss // 1024); sys.stderr.write(r.stderr)")
    done = subprocess.run([sys.executable, "-c", probe, str(path), str(tmp_path / "snap")],
                          capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)
    rc, peak = done.stdout.split()
    return int(rc), done.stderr, int(peak)


@pytest.mark.parametrize("name", ["x.jsonl", "x.json", "x.ndjson"])
def test_the_sniffer_reads_a_bounded_head(tmp_path: Path, name: str) -> None:
    path = sparse(tmp_path / name, b'{"parentUuid": null, "sessionId": "s", "message": "')
    assert file_kind(path) == "claude"  # told by the keys the cut line names
    other = sparse(tmp_path / f"other-{name}")
    assert file_kind(other) is None and transcript_kind(other) is None


@pytest.mark.slow
@pytest.mark.parametrize("head", [b"", b"x", b'{"session_id": "', b"\xff\xfe{\x00"])
def test_a_gigabyte_without_a_newline_is_one_line_in_bounded_memory(
        tmp_path: Path, head: bytes) -> None:
    path = sparse(tmp_path / "rows.jsonl", head)
    rc, err, peak = peak_of_build(path, tmp_path)
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "rows.jsonl" in lines[0], err
    assert peak < 400, f"{peak} MiB to refuse a 1 GiB file"


@pytest.mark.parametrize("first", [
    {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
    {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {}},
])
def test_a_first_line_past_the_bound_is_known_by_its_type(tmp_path: Path,
                                                          first: dict[str, object]) -> None:
    """A Claude file may open with a file-history-snapshot of megabytes; only its head is
    read, and the type it names says whose it is."""
    import json

    line = json.dumps({**first, "pad": "x" * (6 << 20)})
    path = tmp_path / "t.jsonl"
    path.write_text(line + "\n")
    assert file_kind(path) == ("codex" if first["type"] == "session_meta" else "claude")
