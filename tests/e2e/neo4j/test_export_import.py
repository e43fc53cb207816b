"""Exports read back by Neo4j itself, against a real server: the neo4j-csv and
neo4j-parquet folders imported with Neo4j's offline importer (the README's
command), the Cypher script run statement by statement, and snapshot → Neo4j
→ snapshot. Each is compared with a MERGE load (``graphkit load``) of the same
graph: the same lineage answers and the same nodes, relationships and values.

Nothing here is skipped: if Neo4j or its importer cannot run, the tests fail
with their output.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphkit.core.graph import EdgeTable, GraphTables, NodeTable
from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
from graphkit.export import export_graph
from graphkit.export.from_neo4j import read_neo4j_graph
from graphkit.snapshot import read_snapshot, write_snapshot
from tests.helpers.cli import graphkit
from tests.helpers.neo4j_admin import run_import
from tests.helpers.neo4j_server import launch, wipe_all
from tests.helpers.typed_graphs import answers, assert_same_graph, lineage_graph, typed_graph

pytestmark = pytest.mark.neo4j

HEAP = "512m"  # the machine is shared; these graphs are tiny


def combined_graph() -> GraphTables:
    """Real-shaped sessions plus a graph of every type Neo4j stores, hostile strings included."""
    g = lineage_graph()
    t = typed_graph(neo4j_safe=True)
    g.nodes.update(t.nodes)
    g.edges.update(t.edges)
    g.meta["indexes"] = {**g.meta.get("indexes", {}), **t.meta["indexes"]}
    return g


@pytest.fixture(scope="module")
def config(neo4j_config: Neo4jConfig) -> Neo4jConfig:
    """The session's shared server (tests/conftest.py): its own, or the scratch one
    GRAPHKIT_TEST_NEO4J_URI names (never NEO4J_URI: a user's database must not be
    wiped by pytest)."""
    return neo4j_config


@pytest.fixture
def store(config: Neo4jConfig) -> Iterator[Neo4jStore]:
    with Neo4jStore(config, batch_size=500) as s:
        wipe_all(s)
        yield s


@pytest.fixture(scope="module")
def merged(config: Neo4jConfig) -> tuple[GraphTables, dict[str, Any], GraphTables]:
    """The combined graph, what an online load of it answers, and what Neo4j then holds."""
    graph = combined_graph()
    with Neo4jStore(config, batch_size=500) as neo:
        wipe_all(neo)
        report = neo.load(graph, workers=3)
        # An online load into the empty database: CREATE in parallel sessions,
        # the path the offline import is compared with.
        assert report.write_mode == "create" and not report.skipped_edges
        return graph, answers(neo, graph), neo.read_graph()


def _empty_strings_absent(g: GraphTables) -> GraphTables:
    """A copy of ``g`` with every empty string null (``g`` is shared: not changed)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def fix(table: pa.Table) -> pa.Table:
        for i, f in enumerate(table.schema):
            if pa.types.is_string(f.type):
                col = table.column(i)
                table = table.set_column(i, f, pc.if_else(pc.equal(col, ""), None, col))
        return table

    out = GraphTables(g.contract_name, g.contract_version, g.id_recipe, g.granularity)
    out.nodes = {t: NodeTable(t, nt.key, fix(nt.table)) for t, nt in g.nodes.items()}
    out.edges = {t: EdgeTable(t, et.source_type, et.target_type, fix(et.table))
                 for t, et in g.edges.items()}
    return out


@pytest.mark.parametrize("fmt", ["neo4j-csv", "neo4j-parquet"])
def test_bulk_import_folder_gives_the_merge_loads_graph(
        fmt: str, tmp_path: Path,
        merged: tuple[GraphTables, dict[str, Any], GraphTables]) -> None:
    graph, merge_answers, merge_content = merged
    folder = tmp_path / fmt
    report = export_graph(graph, fmt, folder)
    assert report.nodes == graph.node_counts()
    home = tmp_path / "home"
    output = run_import(folder, home)
    assert f"{sum(graph.node_counts().values())} nodes" in output
    server = launch(home=home, heap=HEAP)
    try:
        with Neo4jStore(Neo4jConfig(uri=server.uri, password=server.password)) as neo:
            for statement in (folder / "schema.cypher").read_text().splitlines():
                neo.execute(statement.rstrip(";"))
            constraints = neo.read("SHOW CONSTRAINTS YIELD labelsOrTypes RETURN labelsOrTypes")
            assert sorted(c["labelsOrTypes"][0] for c in constraints) == sorted(graph.nodes)
            assert answers(neo, graph) == merge_answers
            content = neo.read_graph()
            # An online load onto the imported graph merges to the online load's graph.
            assert neo.load(graph, workers=2).write_mode == "merge"
            reloaded = neo.read_graph()
    finally:
        server.stop()
    expected = merge_content if fmt == "neo4j-csv" else _empty_strings_absent(merge_content)
    assert_same_graph(content, expected)
    assert_same_graph(reloaded, merge_content)


def test_cypher_script_recreates_the_graph(
        tmp_path: Path, store: Neo4jStore,
        merged: tuple[GraphTables, dict[str, Any], GraphTables]) -> None:
    graph, merge_answers, merge_content = merged
    script = tmp_path / "graph.cypher"
    export_graph(graph, "cypher", script)
    statements = script.read_text(encoding="utf-8").splitlines()
    # One statement per line: a value's newline is always written as \n.
    run = [s for s in statements if s and not s.startswith("//")]
    assert all(s.endswith(";") for s in run)
    for s in run:
        store.execute(s[:-1])
    assert answers(store, graph) == merge_answers
    assert_same_graph(store.read_graph(), merge_content)
    # The script is rerunnable: it MERGEs, so a second run changes nothing.
    for s in run:
        store.execute(s[:-1])
    assert_same_graph(store.read_graph(), merge_content)


def test_snapshot_neo4j_snapshot_round_trip(tmp_path: Path, store: Neo4jStore) -> None:
    graph = lineage_graph()
    write_snapshot(graph, tmp_path / "before")
    before = read_snapshot(tmp_path / "before")
    store.load(before)
    after = read_neo4j_graph(store)  # fitted to the default contract
    assert after.lineage == before.lineage
    assert_same_graph(after, before)


@pytest.mark.parametrize("include_content", [False, True])
def test_round_trip_message_granularity(store: Neo4jStore, include_content: bool) -> None:
    from graphkit.builds.run import build, records_table
    from tests.helpers.rows import identity_cases

    rows = [dict(r, content_text=f"text of {r['message_id']}") for r in identity_cases()]
    graph = build(records_table(rows), granularity="message",
                  include_content=include_content).graph
    assert ("text" in graph.nodes["Message"].table.column_names) == include_content
    store.load(graph)
    after = read_neo4j_graph(store)  # granularity found from the Message nodes
    assert after.granularity == "message"
    assert_same_graph(after, graph)


def test_round_trip_without_a_contract_keeps_what_neo4j_holds(
        store: Neo4jStore) -> None:
    graph = typed_graph(neo4j_safe=True)
    store.load(graph)
    found = read_neo4j_graph(store, contract=None)
    assert sorted(found.nodes) == ["Doc", "Person"]
    assert (found.edges["WROTE"].source_type, found.edges["WROTE"].target_type) == (
        "Person", "Doc")
    docs = found.nodes["Doc"].table
    assert str(docs.schema.field("when").type) == "timestamp[us, tz=UTC]"
    assert str(docs.schema.field("tags").type) == "list<item: string>"
    assert str(docs.schema.field("day").type) == "date32[day]"
    # int32 and ms timestamps come back widened: Neo4j keeps neither width.
    assert str(docs.schema.field("n").type) == "int64"
    original = graph.nodes["Doc"].table.sort_by("id")
    assert docs.column("name").to_pylist() == original.column("name").to_pylist()
    assert docs.column("when").to_pylist() == original.column("when").to_pylist()


def test_cli_snapshot_neo4j(tmp_path: Path, store: Neo4jStore, config: Neo4jConfig,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    graph = lineage_graph()
    store.load(graph)
    monkeypatch.setenv("NEO4J_URI", config.uri)
    monkeypatch.setenv("NEO4J_USERNAME", config.user)
    if config.password is not None:
        monkeypatch.setenv("NEO4J_PASSWORD", config.password)
    out = tmp_path / "snap"
    result = graphkit("snapshot", "--neo4j", out)
    assert result.returncode == 0, result.output
    assert "snapshot of" in result.output
    assert_same_graph(read_snapshot(out), graph)
    # and a lineage question asked of it gives the MERGE-loaded server's answer
    from graphkit.enrich.snapshot_store import SnapshotReader

    assert answers(SnapshotReader(out), graph) == answers(store, graph)
