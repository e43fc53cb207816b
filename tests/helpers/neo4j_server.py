"""The Neo4j server every Neo4j test shares: started once per test session by the
``neo4j_config`` fixture (tests/conftest.py), or the one the test-only variables name.

The tests never read ``NEO4J_URI``: a user who has it exported for their own
database must not have ``pytest`` clear it. To use a running server instead,
name it with the test-only variables ``GRAPHKIT_TEST_NEO4J_URI`` (and
``GRAPHKIT_TEST_NEO4J_USERNAME``/``_PASSWORD``/``_DATABASE``). The tests clear
a database only if it carries the :data:`TEST_MARKER` node: written when the
tests start their own server, or when the named database is empty at the
start. A named database with data and no marker fails the tests untouched.

If the server cannot start, every test using it FAILS with the launcher's output.
Nothing is skipped: a missing Neo4j must not turn the suite green.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from graphkit.enrich.neo4j.server import LocalNeo4j, Neo4jLaunchError, start_local_neo4j
from graphkit.enrich.neo4j.store import TEST_DATABASE_MARKER, Neo4jConfig, Neo4jStore

# The label of the one node saying "a graphkit test database: may be cleared"; graphkit
# never reads it back as part of a graph (snapshot --neo4j).
TEST_MARKER = TEST_DATABASE_MARKER
TEST_ENV = "GRAPHKIT_TEST_NEO4J_"


def launch(**kwargs: object) -> LocalNeo4j:
    """start_local_neo4j, turning a failed start into a test failure with its output."""
    try:
        return start_local_neo4j(**kwargs)  # type: ignore[arg-type]
    except Neo4jLaunchError as err:
        pytest.fail(f"Neo4j launcher failed: {err}\n--- launcher output ---\n{err.output}")


def neo4j_env(cfg: Neo4jConfig) -> dict[str, str]:
    """The NEO4J_* variables that point a ``graphkit`` process at ``cfg``'s server."""
    env = {"NEO4J_URI": cfg.uri, "NEO4J_USERNAME": cfg.user,
           "NEO4J_PASSWORD": cfg.password or ""}
    if cfg.database:
        env["NEO4J_DATABASE"] = cfg.database
    return env


def named_test_server(env: dict[str, str] | os._Environ[str] = os.environ) -> Neo4jConfig | None:
    """The server the test-only variables name, or None (start our own).
    ``NEO4J_*`` is deliberately not read."""
    uri = env.get(TEST_ENV + "URI")
    if not uri:
        return None
    return Neo4jConfig(uri=uri, user=env.get(TEST_ENV + "USERNAME") or "neo4j",
                       password=env.get(TEST_ENV + "PASSWORD"),
                       database=env.get(TEST_ENV + "DATABASE") or None)


def _run(store: Neo4jStore, query: str) -> int:
    with store._driver.session(database=store.config.database) as session:
        return int(session.execute_write(lambda tx: tx.run(query).single()[0]))


def has_marker(store: Neo4jStore) -> bool:
    return store.node_counts([TEST_MARKER])[TEST_MARKER] > 0


def mark_for_tests(store: Neo4jStore, *, only_if_empty: bool) -> None:
    """Write the marker; with ``only_if_empty``, refuse a database that holds anything."""
    if has_marker(store):
        return
    if only_if_empty and _run(store, "MATCH (n) RETURN count(n)") > 0:
        pytest.fail(f"{TEST_ENV}URI names {store.config.display_uri}, which holds data and no "
                    f"({TEST_MARKER}) node: the tests will not clear a database they did not "
                    f"create. Point it at an empty scratch database, or run "
                    f"CREATE (:{TEST_MARKER}) there if it may be wiped.")
    _run(store, f"CREATE (m:{TEST_MARKER}) RETURN count(m)")


def serve_for_tests(**launch_kwargs: object) -> Iterator[Neo4jConfig]:
    """Connection settings of a server for tests: the one the test variables name
    (refused unless empty or marked), else one started with ``launch_kwargs`` and
    stopped when the generator is closed. Fixtures of any scope ``yield from`` it."""
    named = named_test_server()
    if named is not None:
        with Neo4jStore(named) as s:
            mark_for_tests(s, only_if_empty=True)
        yield named
        return
    server = launch(**launch_kwargs)
    try:
        config = Neo4jConfig(uri=server.uri, user=server.user, password=server.password)
        with Neo4jStore(config) as s:
            mark_for_tests(s, only_if_empty=False)  # ours, new: nothing to lose
        yield config
    finally:
        server.stop()


class NotATestDatabase(Exception):
    """wipe() was pointed at a database without the test marker."""


def wipe(store: Neo4jStore) -> None:
    """Delete every node and relationship but the marker, in batches; refuse
    (:class:`NotATestDatabase`, nothing deleted) a database without the marker."""
    if not has_marker(store):
        raise NotATestDatabase(f"refusing to clear {store.config.display_uri}: it has no "
                               f"({TEST_MARKER}) node, so the tests did not create it")
    while _run(store, f"MATCH (n) WHERE NOT n:{TEST_MARKER} WITH n LIMIT 10000 "
                      "DETACH DELETE n RETURN count(*)"):
        pass


def wipe_all(store: Neo4jStore) -> None:
    """Delete every node (but the test marker), constraint and index: the next test
    starts from nothing. Refuses a database the tests did not create or mark."""
    wipe(store)
    with store._driver.session(database=store.config.database) as s:
        for r in list(s.run("SHOW CONSTRAINTS YIELD name RETURN name")):
            s.run(f"DROP CONSTRAINT `{r['name']}`").consume()
        for r in list(s.run("SHOW INDEXES YIELD name, type WHERE type <> 'LOOKUP' "
                            "RETURN name")):
            s.run(f"DROP INDEX `{r['name']}`").consume()
