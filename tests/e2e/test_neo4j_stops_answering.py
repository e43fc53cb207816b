"""A Neo4j server that stops answering mid-load (issue 31): `graphkit load` waited for
ever and kept the database's load lock. Now, past GRAPHKIT_NEO4J_TIMEOUT without an
answer (and none to a new connection's question), it fails with one line and closes its
connections, so the server frees the lock once it runs again.

The server is stopped with SIGSTOP, so it is one of our own (not the shared one)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from graphkit.enrich.neo4j.config import Neo4jConfig
from graphkit.enrich.neo4j.lock import running_loads
from graphkit.enrich.neo4j.server import LocalNeo4j
from graphkit.enrich.neo4j.store import Neo4jStore
from tests.helpers.neo4j_server import launch, neo4j_env

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server() -> Iterator[LocalNeo4j]:
    with launch() as srv:
        yield srv
        os.kill(srv.process.pid, signal.SIGCONT)  # whatever a failed test left


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from samples.generate import generate

    folder = tmp_path_factory.mktemp("frozen")
    pq.write_table(generate(600, seed=31)[0], folder / "rows.parquet")
    snap = folder / "snap"
    done = subprocess.run([sys.executable, "-m", "graphkit", "build", str(folder / "rows.parquet"),
                           "--snapshot", str(snap)], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    return snap


def load(snap: Path, server: LocalNeo4j, **env: str) -> subprocess.Popen[str]:
    cfg = Neo4jConfig(uri=server.uri, user=server.user, password=server.password)
    return subprocess.Popen(
        [sys.executable, "-m", "graphkit", "load", str(snap), "--if-exists", "replace"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **neo4j_env(cfg), **env})


@pytest.mark.slow
@pytest.mark.neo4j
def test_a_load_into_a_server_that_stops_answering_ends_and_frees_the_lock(
        server: LocalNeo4j, snapshot: Path) -> None:
    first = load(snapshot, server, GRAPHKIT_NEO4J_TIMEOUT="10")
    time.sleep(4)  # writing by now (the load takes tens of seconds)
    assert first.poll() is None, first.communicate()
    os.kill(server.process.pid, signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        _out, err = first.communicate(timeout=150)
    finally:
        if first.poll() is None:  # still waiting: what this test is against
            first.kill()
            first.wait()
        os.kill(server.process.pid, signal.SIGCONT)
    took = time.monotonic() - stopped
    assert first.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "stopped answering" in lines[0] and server.uri in lines[0]
    assert took < 120, f"gave up only after {took:.0f} s"

    # Running again, the server sees the load's connections closed: the lock is free.
    cfg = Neo4jConfig(uri=server.uri, user=server.user, password=server.password)
    deadline = time.monotonic() + 60
    with Neo4jStore(cfg) as store:
        while running_loads(store) and time.monotonic() < deadline:
            time.sleep(1)
        assert running_loads(store) == []
    second = load(snapshot, server, GRAPHKIT_LOAD_LOCK_WAIT="30")
    _out, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
