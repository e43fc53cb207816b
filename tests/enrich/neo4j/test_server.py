"""``graphkit neo4j-server`` and the Neo4j settings refused before any server or
connection: a port no socket can have, a data folder that is a file, the system database."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.paths import SAMPLE_ROWS


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_a_port_no_socket_can_have_is_refused_before_java_starts(port: str) -> None:
    # Was: 70000 started the JVM, which failed ("the launcher exited with code 1 … see
    # launcher.out"); -1 served on 7687 while the warning named "127.0.0.1:-1".
    proc = graphkit("neo4j-server", "--port", port)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "is not in the range 0<=x<=65535" in proc.stderr


@pytest.mark.parametrize("under", [False, True])
def test_a_data_folder_that_is_a_file_is_one_line(tmp_path: Path, under: bool) -> None:
    # Was: FileExistsError / NotADirectoryError tracebacks, exit 1.
    (tmp_path / "afile").write_text("x")
    data = tmp_path / "afile" / "db" if under else tmp_path / "afile"
    one_line_error(graphkit("neo4j-server", "--port", "0", "--data", data), str(tmp_path))


@pytest.mark.parametrize("name", ["system", "System"])
def test_neo4j_database_system_is_one_line_saying_what_it_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    # Was: Neo4j's own words for every query there, on one long line: "failed:
    # Neo.ClientError.Statement.SemanticError: … Not a recognised system command or
    # procedure. This Cypher command can only be executed in a user database: RETURN 1"
    # (here, with no server, the check comes before any connection).
    assert graphkit("build", SAMPLE_ROWS, "--snapshot", tmp_path / "snap").returncode == 0
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:1")
    monkeypatch.setenv("NEO4J_DATABASE", name)
    for args in (["load", tmp_path / "snap"], ["sessions", "--neo4j"]):
        one_line_error(graphkit(*args), "NEO4J_DATABASE 'system' is Neo4j's own system "
                                        "database", "'neo4j'")
