"""Shared fixtures: the repo's paths, the real-world data under tests/fixtures, and
the one Neo4j server every Neo4j test shares (tests/helpers/neo4j_server.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphkit.enrich.neo4j.store import Neo4jConfig
from tests.helpers.browser import browser, chromium  # noqa: F401 (fixtures for every test)
from tests.helpers.neo4j_server import serve_for_tests
from tests.helpers.paths import FIXTURES, SAMPLE_ROWS
from tests.helpers.view_pages import nasty, samples  # noqa: F401 (fixtures for every test)


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """``tests/fixtures``: real transcripts (see its SOURCES.md) and a HypAware cache."""
    return FIXTURES


@pytest.fixture(scope="session")
def sample_rows() -> Path:
    """The bundled quick-start rows."""
    return SAMPLE_ROWS


@pytest.fixture(scope="session")
def neo4j_config() -> Iterator[Neo4jConfig]:
    """Connection settings of the session's one Neo4j server (started on first use,
    or the one the test variables name): the stores', export and Spark-load tests share it."""
    yield from serve_for_tests()


# What makes a test slow wherever it lives: a real Neo4j server, a Spark session, a real
# browser. Tests under tests/e2e/ (these, kill -9 and --watch) are slow by their folder;
# any other test over ~0.3 s says so itself with @pytest.mark.slow.
_SLOW_FIXTURES = {"neo4j_config", "spark", "browser", "chromium"}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = item.nodeid.replace(os.sep, "/")
        names = set(getattr(item, "fixturenames", ()))
        # A Neo4j test uses the server, wherever it lives; the pure Cypher builders'
        # tests (tests/enrich/neo4j/test_cypher.py) need none.
        if path.startswith("tests/e2e/neo4j/") or "neo4j_config" in names:
            item.add_marker(pytest.mark.neo4j)
        if path.startswith("tests/e2e/") or names & _SLOW_FIXTURES:
            item.add_marker(pytest.mark.slow)


# The files whose tests use the session's Neo4j server (neo4j_config) or Spark session; of
# tests/e2e/neo4j/ only these three start servers of their own and use neither.
_SESSION_JVM = ("tests/e2e/neo4j/", "tests/e2e/test_spark_")
_OWN_SERVERS = {f"tests/e2e/neo4j/{name}.py" for name in
                ("test_faults", "test_server", "test_wheel_server")}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's load scheduling, test by test, but with two kinds of whole units:
    every test using the session's Neo4j server or Spark session goes to one worker, so
    the run starts one of each; any other file of tests/e2e/ goes whole to a worker, so
    its module fixtures (a server of its own, a wheel) start once. The biggest units are
    handed out first. (Not xdist_group marks: with pytest 9.2 a mark's node-id suffix is
    lost, pytest-dev/pytest-xdist#1386.)"""
    from xdist.scheduler import LoadScopeScheduling

    class JvmUnits(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            if path.startswith(_SESSION_JVM) and path not in _OWN_SERVERS:
                return "session-jvm"
            return path if path.startswith("tests/e2e/") else nodeid

    return JvmUnits(config, log)
