"""Neo4j with hostile ids and concurrent loads: the test
suite's marker node and graphkit's load marker never show in what graphkit reads back."""

from __future__ import annotations

from pathlib import Path

from graphkit.builds.run import build
from graphkit.enrich.neo4j.load import LOCK_LABEL
from graphkit.enrich.neo4j.store import LOAD_MARKER, Neo4jConfig, Neo4jStore
from graphkit.export.from_neo4j import read_neo4j_graph
from graphkit.snapshot import read_snapshot
from tests.helpers.cli import graphkit
from tests.helpers.neo4j_server import TEST_MARKER, has_marker, wipe
from tests.helpers.rows import CLAUDE, identity_cases, table


def test_bookkeeping_markers_are_no_part_of_a_graph_read_back(
        store: Neo4jStore, neo4j_config: Neo4jConfig, tmp_path: Path) -> None:
    # Was: `graphkit snapshot --neo4j` of the tests' database held a GraphkitTestDatabase
    # node table (and a killed replace-load's GraphkitLoad node) as if they were data.
    graph = build(table(identity_cases()), fingerprints=False).graph
    store.load(graph)
    store.write(f"CREATE (:{LOAD_MARKER}) RETURN 1")  # as a killed replace leaves it
    assert has_marker(store)
    for contract in (None, "ai-gateway-graph"):
        found = read_neo4j_graph(store, contract=contract)
        assert TEST_MARKER not in found.nodes and LOAD_MARKER not in found.nodes
        assert found.node_counts()["Session"] == graph.node_counts()["Session"]
    env = {"NEO4J_URI": neo4j_config.uri, "NEO4J_USERNAME": neo4j_config.user,
           "NEO4J_PASSWORD": neo4j_config.password or ""}
    if neo4j_config.database:
        env["NEO4J_DATABASE"] = neo4j_config.database
    r = graphkit("snapshot", "--neo4j", tmp_path / "snap", "--no-contract", env=env)
    assert r.returncode == 0, r.output
    assert TEST_MARKER not in read_snapshot(tmp_path / "snap").nodes
    for args in (["sessions", "--neo4j", "--json"], ["tree", CLAUDE, "--neo4j", "--json"],
                 ["lineage", CLAUDE, "--neo4j", "--json"]):
        r = graphkit(*args, env=env)
        assert r.returncode == 0, r.output
        assert TEST_MARKER not in r.output and LOAD_MARKER not in r.output


def test_hostile_lineage_ids_get_the_answers_networkx_gives(store: Neo4jStore) -> None:
    # Was: an id that is not UTF-8 (lone surrogates, as bytes typed
    # at the prompt reach Python) was "bad Neo4j settings …: 'utf-8' codec can't
    # encode" from the driver, where the other stores say no thread has the id; and
    # a session whose threads' parent links loop listed them in another order.
    from graphkit.core.errors import QueryError
    from graphkit.enrich.networkx_store import NetworkXStore
    from graphkit.queries.lineage import lineage, session_tree
    from graphkit.queries.usage import session_usage
    from tests.helpers.rows import loop_rows

    graph = build(table(identity_cases() + loop_rows()), fingerprints=False).graph
    nx_store = NetworkXStore()
    nx_store.load(graph)
    store.load(graph)

    def answer(reader: object, uid: str, ask: object) -> object:
        try:
            return ask(reader, uid)  # type: ignore[operator]
        except QueryError as exc:
            return str(exc)

    asks = [lambda r, u: lineage(r, u).to_json(), lambda r, u: session_tree(r, u).to_json(),
            lambda r, u: [x.to_json() for x in session_usage(r, [u])]]
    for uid in ("\udcff", "a\ud800", "x" * 100_000 + "\udc80", "CY", "c1", "self", CLAUDE,
                "a'b`$id\x00"):
        for ask in asks:
            assert answer(store, uid, ask) == answer(nx_store, uid, ask), uid[:20]
    assert "has the id '\\udcff'" in str(answer(store, "\udcff", asks[0]))


def _sample_snapshot(tmp_path: Path) -> Path:
    from tests.helpers.paths import SAMPLE_ROWS

    snap = tmp_path / "snap"
    built = graphkit("-q", "build", SAMPLE_ROWS, "--snapshot", snap)
    assert built.returncode == 0, built.stderr
    return snap


def test_loads_at_once_wait_for_each_other_and_write_the_graph_once(
        store: Neo4jStore, neo4j_config: Neo4jConfig, tmp_path: Path) -> None:
    # Was: three `graphkit load` at once into an empty database each saw it
    # empty and CREATEd: one failed with Neo4j's "ConstraintValidationFailed … already
    # exists" (a raw error), or relationships were made twice (285 for 268); three
    # --if-exists replace deleted each other's nodes, and one said "loaded 100 nodes
    # and 180 relationships" for a graph of 268, exit 0. Now a load holds the
    # database's load lock: the others wait, and each writes the whole graph.
    import time

    from tests.helpers.cli import spawn
    from tests.helpers.neo4j_server import neo4j_env

    snap = _sample_snapshot(tmp_path)
    graph = read_snapshot(snap)
    env = neo4j_env(neo4j_config)

    with store.load_lock():  # held here: a load waits for it
        waiting = spawn("load", snap, env=env)
        time.sleep(4)
        assert waiting.poll() is None, waiting.communicate()
        assert store.node_counts(["Session"])["Session"] == 0
    out, err = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, err

    for mode in ("merge", "replace"):
        wipe(store)
        runs = [spawn("load", snap, "--if-exists", mode, env=env) for _ in range(3)]
        for run in runs:
            out, err = run.communicate(timeout=300)
            assert run.returncode == 0, err
            assert f"loaded 100 nodes and {sum(graph.edge_counts().values())} relationships" \
                in out, out
        assert store.node_counts(sorted(graph.nodes)) == graph.node_counts()
        rels = store.read("MATCH ()-[r]->() RETURN count(r) AS c")[0]["c"]
        assert rels == sum(graph.edge_counts().values())
    assert LOCK_LABEL not in read_neo4j_graph(store).nodes
    assert store.read(f"MATCH (l:{LOCK_LABEL}) RETURN count(l) AS c")[0]["c"] == 0


def test_a_relationship_not_written_fails_the_load_command() -> None:
    # Was: `load` printed "loaded … 180 relationships" (of 268) and exit 0:
    # the report's skipped_edges went nowhere.
    import pytest

    from graphkit.cli.app import UserError
    from graphkit.cli.neo4j import _no_edge_lost
    from graphkit.enrich.base import LoadReport

    _no_edge_lost(LoadReport())  # none lost: nothing said
    with pytest.raises(UserError, match=r"88 relationship\(s\) were not written: CALLED_TOOL"):
        _no_edge_lost(LoadReport(skipped_edges={"CALLED_TOOL": 58, "USED_MODEL": 30}))
