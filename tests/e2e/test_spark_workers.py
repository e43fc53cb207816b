"""Spark's Python workers run the interpreter that runs graphkit (issue 31): run as
``venv/bin/graphkit`` without an activated venv (as pipx and most launchers run it),
the workers started PySpark's default ``python3`` from PATH, the system's, and died
with a long ``ModuleNotFoundError`` traceback. A worker that fails is one line.

The system's Python is played by a ``python3`` on PATH that runs this interpreter
without its site-packages (so without pyarrow)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.rows import identity_cases, write_parquet

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def bare_python(tmp_path: Path) -> Path:
    """A folder whose ``python3`` has none of graphkit's dependencies."""
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "python3"
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    fake.chmod(0o755)
    return folder


def spark_build(tmp_path: Path, path_dirs: list[Path], **env: str
                ) -> subprocess.CompletedProcess[str]:
    src = write_parquet(identity_cases(), tmp_path / "rows.parquet")
    # Not activated: PATH holds no venv; graphkit found as an installed one would be.
    clean = {"HOME": os.environ.get("HOME", "/root"), "PYTHONPATH": str(REPO),
             "PATH": os.pathsep.join([*map(str, path_dirs), "/usr/bin", "/bin"]),
             "GRAPHKIT_HOME": str(tmp_path / "home"), **env}
    return subprocess.run([sys.executable, "-m", "graphkit", "build", str(src), "--engine",
                           "spark", "--snapshot", str(tmp_path / "snap")],
                          capture_output=True, text=True, env=clean, cwd=tmp_path,
                          timeout=900)


@pytest.mark.slow
def test_workers_run_graphkits_interpreter_not_python3_on_path(tmp_path: Path,
                                                               bare_python: Path) -> None:
    done = spark_build(tmp_path, [bare_python])
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "snap" / "manifest.json").is_file()


@pytest.mark.slow
def test_a_worker_that_fails_is_one_line(tmp_path: Path, bare_python: Path) -> None:
    done = spark_build(tmp_path, [], PYSPARK_PYTHON=str(bare_python / "python3"))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "\tat " not in done.stderr, done.stderr[-3000:]
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error")]
    assert len(errors) == 1 and "a Spark worker failed: ModuleNotFoundError" in errors[0]
    assert "PYSPARK_PYTHON" in errors[0]
