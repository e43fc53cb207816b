"""A real Neo4j for the tests: the enrich/ launcher, started once per test session.

Set ``NEO4J_URI`` (and ``NEO4J_USERNAME``/``NEO4J_PASSWORD``/``NEO4J_DATABASE``)
to use a running server instead. It must be a scratch database: the tests
delete every node in it.

If the server cannot start, every test here FAILS with the launcher's output.
Nothing is skipped: a missing Neo4j must not turn the suite green.

(No ``__init__.py`` in this folder: as a package it would be named ``neo4j``
and shadow the driver.)
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from graphkit.stores.neo4j.server import LocalNeo4j, Neo4jLaunchError, start_local_neo4j
from graphkit.stores.neo4j.store import Neo4jConfig, Neo4jStore


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Everything in this folder needs the server; the pure Cypher builders'
    # tests (tests/stores/test_cypher.py) need none and live outside it.
    for item in items:
        if "tests/stores/neo4j/" in item.nodeid.replace(os.sep, "/"):
            item.add_marker(pytest.mark.neo4j)


def launch(**kwargs: object) -> LocalNeo4j:
    """start_local_neo4j, turning a failed start into a test failure with its output."""
    try:
        return start_local_neo4j(**kwargs)  # type: ignore[arg-type]
    except Neo4jLaunchError as err:
        pytest.fail(f"Neo4j launcher failed: {err}\n--- launcher output ---\n{err.output}")


@pytest.fixture(scope="session")
def neo4j_config() -> Iterator[Neo4jConfig]:
    """Connection settings of the session's server (ours, or NEO4J_URI's)."""
    if os.environ.get("NEO4J_URI"):
        yield Neo4jConfig.from_env()
        return
    server = launch()
    try:
        yield Neo4jConfig(uri=server.uri, user=server.user, password=server.password)
    finally:
        server.stop()


@pytest.fixture
def store(neo4j_config: Neo4jConfig) -> Iterator[Neo4jStore]:
    """A store on an empty database (everything deleted before the test)."""
    with Neo4jStore(neo4j_config, batch_size=1000) as s:
        wipe(s)
        yield s


def wipe(store: Neo4jStore) -> None:
    """Delete every node and relationship, in batches."""
    with store._driver.session(database=store.config.database) as session:
        while True:
            deleted = session.execute_write(
                lambda tx: tx.run(
                    "MATCH (n) WITH n LIMIT 10000 DETACH DELETE n RETURN count(*) AS c"
                ).single()["c"]
            )
            if deleted == 0:
                break
