"""`graphkit neo4j-server` from an installed wheel, not a checkout: the wheel
carries the launcher's Maven project and builds it on first use into the user's
cache folder; `--password-env` turns authentication on."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest

from graphkit.core.errors import StoreError
from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
from tests.helpers.paths import REPO

PASSWORD = "wheel-Test-pw-42"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                           str(out), str(REPO)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    (whl,) = out.glob("agent_graphkit-*.whl")
    return whl


def test_the_wheel_carries_the_launcher_sources_only(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "graphkit/_launcher/neo4j-launcher/pom.xml" in names
    assert ("graphkit/_launcher/neo4j-launcher/src/main/java/graphkit/launcher/"
            "Neo4jLauncher.java") in names
    assert not [n for n in names if "/target/" in n or n.endswith(".jar")]


def _clean_env(tmp: Path) -> dict[str, str]:
    # Nothing of the checkout: no PYTHONPATH, no NEO4J_*, a cache folder of our own.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "XDG_CACHE_HOME") and not k.startswith("NEO4J_")}
    env.update(XDG_CACHE_HOME=str(tmp / "cache"), GK_WHEEL_TEST_PW=PASSWORD)
    return env


def _venv_with_our_dependencies(venv: Path) -> Path:
    """A new virtual environment that sees the packages of the one running the tests
    (graphkit's dependencies) after its own, through a .pth file; its python.

    Not ``--system-site-packages``: from inside a virtual environment that names the
    base interpreter's packages, which lack the dependencies. The running environment's
    own .pth files are not read from there, so an editable graphkit in it stays out."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    ask = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    own = subprocess.run([str(py), "-c", ask], capture_output=True, text=True,
                         check=True).stdout.strip()
    ours = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (Path(own) / "graphkit-test-dependencies.pth").write_text("".join(f"{d}\n" for d in ours))
    return py


def test_neo4j_server_from_the_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    py = _venv_with_our_dependencies(venv)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
                   check=True, timeout=300, env=_clean_env(tmp_path))
    env = _clean_env(tmp_path)
    where = subprocess.run([str(py), "-c", "import graphkit; print(graphkit.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True)
    assert where.stdout.startswith(str(venv)), where.stdout  # the wheel, not the checkout

    proc = subprocess.Popen([str(venv / "bin" / "graphkit"), "neo4j-server", "--port", "0",
                             "--password-env", "GK_WHEEL_TEST_PW"],
                            env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        uri = _wait_for_uri(proc, deadline=time.monotonic() + 900)
        assert uri, f"no 'Neo4j is up' line; stderr:\n{proc.stderr.read() if proc.stderr else ''}"
        with Neo4jStore(Neo4jConfig(uri=uri, password=PASSWORD)) as store:
            assert store.node_counts(["Thread"]) == {"Thread": 0}
        with pytest.raises(StoreError, match="refused the credentials"), \
                Neo4jStore(Neo4jConfig(uri=uri, password="not-it")):
            pass
    finally:
        proc.send_signal(2)  # Ctrl-C: the command stops its server cleanly
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    err = proc.stderr.read() if proc.stderr else ""
    assert "building the Neo4j launcher in" in err and str(tmp_path / "cache") in err
    assert "NO authentication" not in err
    assert list((tmp_path / "cache" / "graphkit").glob("neo4j-launcher-*/target/*.jar"))


def _wait_for_uri(proc: subprocess.Popen[str], deadline: float) -> str | None:
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            return None  # exited
        m = re.search(r"NEO4J_URI=(bolt://\S+)", line)
        if m:
            return m.group(1)
    return None
