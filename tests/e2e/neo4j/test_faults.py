"""Failures a user meets: wrong address, password, database; a server killed mid-load.

These start their own server (with a password, on a data dir of their own),
so they run the same whether or not NEO4J_URI is set.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphkit.core.errors import StoreError
from graphkit.enrich.neo4j.server import LocalNeo4j
from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
from tests.helpers.neo4j_server import NotATestDatabase, launch, wipe
from tests.helpers.store_graphs import chain_graph

PASSWORD = "s3cret-Pa55word-for-faults"


@pytest.fixture(scope="module")
def own_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("neo4j-faults")


@pytest.fixture(scope="module")
def own_server(own_home: Path) -> Iterator[LocalNeo4j]:
    server = launch(home=own_home, password=PASSWORD)
    yield server
    server.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def assert_one_line_without_secrets(err: StoreError) -> None:
    text = str(err)
    assert "\n" not in text
    assert PASSWORD not in text and "wrong-password" not in text
    assert "Traceback" not in text


def test_connection_refused(own_server: LocalNeo4j) -> None:
    config = Neo4jConfig(uri=f"bolt://127.0.0.1:{free_port()}", password=PASSWORD)
    started = time.monotonic()
    with (
        pytest.raises(StoreError, match=r"cannot reach Neo4j at bolt://127\.0\.0\.1:") as err,
        Neo4jStore(config),
    ):
        pass
    assert time.monotonic() - started < 10  # no 30 s of retries
    assert_one_line_without_secrets(err.value)


def test_wrong_password(own_server: LocalNeo4j) -> None:
    config = Neo4jConfig(uri=own_server.uri, password="wrong-password")
    with (
        pytest.raises(StoreError, match="refused the credentials of user 'neo4j'") as err,
        Neo4jStore(config),
    ):
        pass
    assert_one_line_without_secrets(err.value)


@pytest.mark.parametrize("password", [None, ""])
def test_no_password_says_it_is_not_set(own_server: LocalNeo4j, password: str | None) -> None:
    # NEO4J_PASSWORD not exported, or exported empty ("$PW" of an unset variable): the
    # hint said "check NEO4J_USERNAME and NEO4J_PASSWORD", as if the value were wrong.
    config = Neo4jConfig(uri=own_server.uri, password=password)
    with pytest.raises(StoreError, match="refused the credentials of user 'neo4j'") as err, \
            Neo4jStore(config):
        pass
    assert "NEO4J_PASSWORD is not set or empty" in str(err.value)
    assert "--ask-password" in str(err.value)
    assert_one_line_without_secrets(err.value)


def test_unknown_database(own_server: LocalNeo4j) -> None:
    config = Neo4jConfig(uri=own_server.uri, password=PASSWORD, database="nosuchdb")
    with pytest.raises(StoreError, match="has no database 'nosuchdb'") as err, Neo4jStore(config):
        pass
    assert_one_line_without_secrets(err.value)


def test_password_not_in_repr() -> None:
    config = Neo4jConfig(uri="bolt://h:1", password=PASSWORD)
    assert PASSWORD not in repr(config)


def test_env_is_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "bolt://example:7777")
    monkeypatch.setenv("NEO4J_USERNAME", "alice")
    monkeypatch.setenv("NEO4J_PASSWORD", PASSWORD)
    monkeypatch.setenv("NEO4J_DATABASE", "graphs")
    config = Neo4jConfig.from_env()
    assert (config.uri, config.user, config.password, config.database) == (
        "bolt://example:7777", "alice", PASSWORD, "graphs",
    )  # fmt: skip
    assert Neo4jConfig.from_env(uri="neo4j://other:1").uri == "neo4j://other:1"


def test_wipe_refuses_a_database_the_tests_did_not_mark(own_server: LocalNeo4j) -> None:
    """The users-database case: no marker node, so the test helper deletes nothing."""
    config = Neo4jConfig(uri=own_server.uri, password=PASSWORD)
    with Neo4jStore(config) as store:
        store.write("CREATE (n:UsersOwnData {x: 1}) RETURN count(n)")
        with pytest.raises(NotATestDatabase, match="refusing to clear"):
            wipe(store)
        assert store.node_counts(["UsersOwnData"]) == {"UsersOwnData": 1}
        store.delete_labels(["UsersOwnData"])


def test_kill_mid_load_then_reload_converges(own_server: LocalNeo4j, own_home: Path) -> None:
    graph = chain_graph(sessions=3000, threads_per_session=8)  # 27k nodes, 45k rels
    want_nodes, want_edges = graph.node_counts(), graph.edge_counts()
    config = Neo4jConfig(uri=own_server.uri, password=PASSWORD)
    with Neo4jStore(config) as store:
        store.delete_labels(sorted(want_nodes))

    failure: list[BaseException] = []

    def load() -> None:
        try:
            # Short retry window: the server does not come back on this port.
            with Neo4jStore(config, batch_size=300, max_retry_seconds=1.0) as s:
                s.load(graph)
        except BaseException as exc:
            failure.append(exc)

    loader = threading.Thread(target=load)
    loader.start()
    with Neo4jStore(config) as watcher:
        partial = 0
        deadline = time.monotonic() + 120
        while partial < 3000 and time.monotonic() < deadline:  # some batches committed
            partial = watcher.node_counts(["Thread"])["Thread"]
            time.sleep(0.02)
    own_server.kill()  # SIGKILL: no shutdown, no checkpoint
    loader.join(120)
    assert not loader.is_alive()
    assert partial >= 3000
    assert failure and isinstance(failure[0], StoreError), failure
    assert_one_line_without_secrets(failure[0])

    # Recovers the store; with another collector than the default G1, which the
    # launcher then leaves out (java refuses two).
    restarted = launch(home=own_home, password=PASSWORD, jvm_options=("-XX:+UseParallelGC",))
    try:
        assert "-XX:+UseParallelGC" in restarted.process.args
        assert "-XX:+UseG1GC" not in restarted.process.args
        config = Neo4jConfig(uri=restarted.uri, password=PASSWORD)
        with Neo4jStore(config) as store:
            total = sum(store.node_counts(sorted(want_nodes)).values())
            assert 0 < total < sum(want_nodes.values()), "the kill did not land mid-load"
            report = store.load(graph)
            assert report.nodes == want_nodes and report.edges == want_edges
            assert store.node_counts(sorted(want_nodes)) == want_nodes
            assert store.relationship_counts(sorted(want_edges)) == want_edges
            (row,) = store.read("MATCH (n) RETURN count(n) AS n, count(DISTINCT n.id) AS ids")
            assert row["n"] == row["ids"] == sum(want_nodes.values())
    finally:
        # The module fixture's server is dead; hand it the live one to stop.
        own_server.process, own_server.uri = restarted.process, restarted.uri
