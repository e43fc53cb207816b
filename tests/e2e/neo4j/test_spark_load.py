"""``graphkit load --engine spark``: a real local Spark (``local[2]``) with the Neo4j
Connector for Apache Spark writes into a real Neo4j server exactly the graph the
driver load writes, and a second load changes nothing.

The test session's shared Neo4j server (``neo4j_config``, tests/conftest.py) and one
Spark session (with the connector, fetched from Maven Central by Spark on first use)
serve the module.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from graphkit.builds.run import build
from graphkit.core.errors import StoreError
from graphkit.core.graph import EdgeTable, GraphTables, NodeTable
from graphkit.enrich.neo4j import plan
from graphkit.enrich.neo4j.spark import (
    load_snapshot_spark,
    load_spark,
    node_query,
    relationship_frame,
    require_connector,
    split_epochs,
)
from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
from graphkit.snapshot import read_snapshot, write_snapshot
from tests.helpers.cli import graphkit
from tests.helpers.neo4j_server import wipe
from tests.helpers.same_build import generated_rows


@pytest.fixture
def store(neo4j_config: Neo4jConfig) -> Iterator[Neo4jStore]:
    with Neo4jStore(neo4j_config, batch_size=500) as s:
        wipe(s)
        yield s


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A snapshot of generated sessions (subagents, shared Model/Tool nodes, timestamps)."""
    folder = tmp_path_factory.mktemp("neo4j-spark")
    rows = generated_rows(folder / "rows", rows=3000)
    r = build([rows], fingerprints=False)
    write_snapshot(r.graph, folder / "snap", summary=r.summary())
    return folder / "snap"


def graph_in(store: Neo4jStore) -> dict[str, pa.Table]:
    """Every label's nodes and type's relationships, sorted, with their properties."""
    g = store.read_graph()
    out = {f"node {k}": n.table.sort_by("id") for k, n in g.nodes.items()}
    out |= {f"edge {k}": e.table.sort_by([("source", "ascending"), ("target", "ascending")])
            for k, e in g.edges.items()}
    return out


def assert_same_graph(got: dict[str, pa.Table], want: dict[str, pa.Table]) -> None:
    assert sorted(got) == sorted(want)
    for name, table in want.items():
        assert got[name].num_rows == table.num_rows, name
        assert got[name].select(sorted(got[name].column_names)).equals(
            table.select(sorted(table.column_names))), name


def test_spark_load_equals_driver_load_and_is_idempotent(snapshot: Path, store: Neo4jStore,
                                                         spark: Any) -> None:
    graph = read_snapshot(snapshot)
    driver_report = store.load(graph)
    want = graph_in(store)
    assert sum(graph.edge_counts().values()) > 0 and len(want) > 4
    wipe(store)
    report = load_spark(graph, store, spark, partitions=3, batch_size=400)
    assert report.nodes == driver_report.nodes
    assert report.edges == driver_report.edges
    assert report.skipped_edges == driver_report.skipped_edges
    assert_same_graph(graph_in(store), want)
    # Into a non-empty database: MERGE, nothing duplicated or changed.
    again = load_spark(graph, store, spark, partitions=2)
    assert again.write_mode == "merge"
    assert_same_graph(graph_in(store), want)


def test_types_timestamps_lists_and_nulls(store: Neo4jStore, spark: Any) -> None:
    utc = pa.timestamp("us", tz="UTC")
    nodes = pa.table({
        "id": ["a", "b", "c"],
        "at": pa.array([datetime(2025, 1, 2, 3, 4, 5, 123456, tzinfo=UTC), None,
                        datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC)], utc),
        "files": pa.array([["x", "y"], None, []], pa.list_(pa.string())),
        "n": pa.array([1, None, -3], pa.int64()),
        "ok": [True, False, None],
    })
    edges = pa.table({"source": ["a", "a", "b"], "target": ["b", "zz", "c"],
                      "w": pa.array([1.5, 2.0, None])})
    graph = GraphTables("t", 3, 3, "thread")
    graph.nodes["Item"] = NodeTable("Item", ("id",), nodes)
    graph.edges["LINKS"] = EdgeTable("LINKS", "Item", "Item", edges)
    want_report = store.load(graph)
    want = graph_in(store)
    wipe(store)
    report = load_spark(graph, store, spark, partitions=2)
    assert report.skipped_edges == want_report.skipped_edges == {"LINKS": 1}
    assert_same_graph(graph_in(store), want)


def test_replace_and_fail(snapshot: Path, store: Neo4jStore, spark: Any) -> None:
    graph = read_snapshot(snapshot)
    load_spark(graph, store, spark)
    want = graph_in(store)
    with pytest.raises(StoreError, match="already holds"):
        load_spark(graph, store, spark, if_exists="fail")
    report = load_snapshot_spark(snapshot, store, spark=spark, if_exists="replace")
    assert report.removed == sum(graph.node_counts().values())
    assert not store.interrupted_load()
    assert_same_graph(graph_in(store), want)


def test_relationship_partitions_do_not_contend(snapshot: Path, spark: Any) -> None:
    # Each Spark task writes whole partitions of the driver load's plan (rows in
    # different ones share no sparse node), each in the plan's lock order.
    graph = read_snapshot(snapshot)
    load_plan = plan.edge_partitions(graph, 3)
    for etype, e in graph.edges.items():
        frame = relationship_frame(spark, graph, etype, load_plan, plan_columns=True)
        tasks = frame.select("__gk_part", "__gk_order").rdd.glom().collect()
        seen: dict[int, int] = {}
        for task, rows in enumerate(tasks):
            got = [(r[0], r[1]) for r in rows]
            assert got == sorted(got), etype
            for part in {p for p, _ in got}:
                assert seen.setdefault(part, task) == task, etype  # one task per partition
                assert [o for p, o in got if p == part] == list(
                    range(len(load_plan.partitions[etype][part])))
        assert sum(len(t) for t in tasks) == e.table.num_rows
        assert frame.drop("__gk_part", "__gk_order").columns == \
            relationship_frame(spark, graph, etype, load_plan).columns


def test_split_epochs_and_queries() -> None:
    t = pa.table({"id": ["a", "b"], "at": pa.array([-1, None], pa.timestamp("ms", tz="UTC"))})
    got = split_epochs(t, ["at"])
    assert got.column("at__s").to_pylist() == [-1, None]
    assert got.column("at__ns").to_pylist() == [999_000_000, None]
    q = node_query("Item", ["at", "n"], ["at"])
    assert q.startswith("MERGE (n:`Item` {id: event.id}) SET n += {`at`: CASE WHEN")
    with pytest.raises(StoreError):
        node_query("Bad Label", [])


def test_unreachable_server_is_one_line(snapshot: Path, store: Neo4jStore, spark: Any) -> None:
    # Connector failures (here: nothing listens) come back as one StoreError line.
    graph = read_snapshot(snapshot)
    bad = Neo4jStore(Neo4jConfig(uri="bolt://127.0.0.1:9", password="pw"))
    bad.ensure_schema = lambda labels: None  # type: ignore[method-assign]
    bad.interrupted_load = lambda: False  # type: ignore[method-assign]
    try:
        with pytest.raises(StoreError) as err:
            load_spark(graph, bad, spark)
    finally:
        bad.close()
    assert "\n" not in str(err.value) and "127.0.0.1:9" in str(err.value)


def test_a_session_without_the_connector_is_refused_before_writing() -> None:
    # A second session in one process cannot gain the package (a JVM's
    # classpath is fixed at start; seen in docs/scale.md): the class lookup
    # fails. A session whose JVM answers nothing stands in for one here, as this
    # process's JVM has the connector.
    no_connector = SimpleNamespace(sparkContext=SimpleNamespace(_jvm=None))

    with pytest.raises(StoreError, match="not on Spark's classpath") as err:
        require_connector(no_connector)
    assert "--packages org.neo4j:neo4j-connector-apache-spark_2.13" in (err.value.hint or "")


def test_cli_load_engine_spark(snapshot: Path, store: Neo4jStore, spark: Any,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = store.config
    monkeypatch.setenv("NEO4J_URI", cfg.uri)
    monkeypatch.setenv("NEO4J_USERNAME", cfg.user)
    monkeypatch.setenv("NEO4J_PASSWORD", cfg.password or "")
    result = graphkit("load", snapshot, "--engine", "spark", "--spark-master", "local[2]", "--json")
    assert result.returncode == 0, result.output
    graph = read_snapshot(snapshot)
    assert store.node_counts(sorted(graph.nodes)) == graph.node_counts()
    assert cfg.password is None or cfg.password not in result.output


def test_cli_spark_master_needs_engine_spark(tmp_path: Path) -> None:
    result = graphkit("load", tmp_path, "--spark-master", "local[2]")
    assert result.returncode == 2
    assert "--spark-master needs --engine spark" in result.output
