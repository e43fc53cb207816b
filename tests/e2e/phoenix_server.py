"""A real OTLP receiver for the tests: Arize Phoenix (from PyPI), run on a loopback
port from a virtual environment of its own, so its many dependencies never meet
graphkit's. The environment is made on first use from tests/e2e/requirements-phoenix.txt
(one pinned version) and kept in ``$GRAPHKIT_TEST_PHOENIX_VENV`` or
``~/.cache/graphkit-tests/phoenix-<version>``; later runs reuse it.

Phoenix takes OTLP/HTTP at ``/v1/traces`` and answers ``GET /v1/projects/{project}/spans``
with the spans it stored: what the end-to-end test reads back. Its telemetry and every
fetch from the internet are switched off (PHOENIX_TELEMETRY_ENABLED,
PHOENIX_ALLOW_EXTERNAL_RESOURCES): it talks to nothing but the test.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REQUIREMENTS = Path(__file__).with_name("requirements-phoenix.txt")
INSTALL_SECONDS = 1800  # a new machine downloads and installs ~850 MB
START_SECONDS = 240


def venv_dir() -> Path:
    named = os.environ.get("GRAPHKIT_TEST_PHOENIX_VENV")
    if named:
        return Path(named)
    pin = REQUIREMENTS.read_text().split("==")[-1].strip()
    return Path.home() / ".cache" / "graphkit-tests" / f"phoenix-{pin}"


def python_of(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_installed() -> Path:
    """The Phoenix environment's python, made now if it is not there yet."""
    venv = venv_dir()
    done = venv / "graphkit-requirements.txt"
    if done.is_file() and done.read_text() == REQUIREMENTS.read_text():
        return python_of(venv)
    tmp = venv.with_name(venv.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(tmp)], check=True)
    subprocess.run([str(python_of(tmp)), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", "-r", str(REQUIREMENTS)],
                   check=True, timeout=INSTALL_SECONDS)
    (tmp / "graphkit-requirements.txt").write_text(REQUIREMENTS.read_text())
    shutil.rmtree(venv, ignore_errors=True)
    tmp.rename(venv)  # whole or not at all; run as `python -m`, so the move is harmless
    return python_of(venv)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def phoenix(workdir: Path) -> Iterator[str]:
    """A Phoenix server on loopback, storing in ``workdir``: its base URL."""
    python = ensure_installed()
    port = _free_port()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir),
           "PHOENIX_WORKING_DIR": str(workdir), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(_free_port()),
           "PHOENIX_TELEMETRY_ENABLED": "false",
           "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false"}
    log = (workdir / "phoenix.log").open("wb")
    proc = subprocess.Popen([str(python), "-m", "phoenix.server.main", "serve"], env=env,
                            stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"Phoenix stopped (exit {proc.returncode}): "
                                   + (workdir / "phoenix.log").read_text()[-2000:])
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"Phoenix did not answer on {base} in {START_SECONDS} s")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def spans(base: str, project: str = "default") -> list[dict[str, Any]]:
    """Every span Phoenix stored in ``project``, through its REST API, page by page."""
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        url = f"{base}/v1/projects/{project}/spans?limit=1000" + (
            f"&cursor={cursor}" if cursor else "")
        with urllib.request.urlopen(url, timeout=30) as r:
            page = json.load(r)
        out += page["data"]
        cursor = page.get("next_cursor")
        if not cursor:
            return out
