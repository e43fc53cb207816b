"""ruff and mypy, as configured in pyproject.toml, are part of the suite."""

from __future__ import annotations

import shutil
import subprocess
import sys

from tests.helpers.paths import REPO


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_ruff_clean() -> None:
    exe = shutil.which("ruff")
    cmd = (exe,) if exe else (sys.executable, "-m", "ruff")
    done = _run(*cmd, "check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_clean() -> None:
    done = _run(sys.executable, "-m", "mypy")
    assert done.returncode == 0, done.stdout + done.stderr
