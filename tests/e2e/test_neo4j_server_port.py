"""`graphkit neo4j-server` on a port in use (issue 31): was ~30 s, then an error naming
log files in a temporary folder it had already deleted. Now it says at once that the
port is taken and how to choose another; a start that fails for another reason keeps
its logs in one file the error names."""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphkit.cli import cli
from graphkit.core.errors import StoreError
from graphkit.enrich.neo4j.server import Neo4jLaunchError, start_local_neo4j


def test_a_port_in_use_is_said_at_once() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        t0 = time.monotonic()
        r = CliRunner().invoke(cli, ["neo4j-server", "--port", str(port)])
        took = time.monotonic() - t0
    assert r.exit_code == 2, r.output
    error = [line for line in r.output.splitlines() if line.startswith("Error")]
    assert len(error) == 1 and "Traceback" not in r.output
    assert f"port {port}" in error[0] and "in use" in error[0] and "--port 0" in error[0]
    assert took < 10  # before any JVM starts


def test_the_library_refuses_it_too() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(StoreError, match="already in use"):
            start_local_neo4j(port=taken.getsockname()[1])


@pytest.mark.slow
def test_a_failed_start_names_logs_that_exist(tmp_path: Path) -> None:
    with pytest.raises(Neo4jLaunchError) as failed:
        start_local_neo4j(jvm_options=["-XX:MaxHeapSize=1k"], timeout=120)
    kept = re.search(r"see (\S+)", str(failed.value))
    assert kept is not None, str(failed.value)
    log = Path(kept.group(1))
    assert log.is_file() and "launcher.out" in log.read_text()
    log.unlink()
