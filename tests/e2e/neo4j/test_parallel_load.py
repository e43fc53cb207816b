"""Loads into a real server: CREATE into an empty target, MERGE otherwise,
relationship batches in parallel sessions, progress; and the load plan's
partitions (pure NumPy, no server)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from graphkit.core.graph import EdgeTable, GraphTables, NodeTable
from graphkit.enrich.neo4j import plan
from graphkit.enrich.neo4j.store import Neo4jStore
from tests.helpers.recording import RecordingProgress
from tests.helpers.store_graphs import lineage_graph
from tests.helpers.typed_graphs import assert_same_graph


def sessions_graph(sessions: int = 40, threads: int = 6, tools: int = 3) -> GraphTables:
    """Sessions with chains of threads, each thread calling shared (dense) Tool nodes."""
    s_ids = [f"s-{i:05d}" for i in range(sessions)]
    t_ids = [f"t-{i:05d}-{j:03d}" for i in range(sessions) for j in range(threads)]
    tool_ids = [f"tool-{k:04d}" for k in range(tools)]
    has = [(s_ids[i], f"t-{i:05d}-{j:03d}") for i in range(sessions) for j in range(threads)]
    parent = [(f"t-{i:05d}-{j:03d}", f"t-{i:05d}-{j - 1:03d}")
              for i in range(sessions) for j in range(1, threads)]
    called = [(t, tool_ids[n % tools], n) for n, t in enumerate(t_ids)]
    called += [(t, tool_ids[(n + 1) % tools], n) for n, t in enumerate(t_ids)]

    def edges(name: str, src: str, dst: str, pairs: list[tuple]) -> EdgeTable:
        cols = {"source": [p[0] for p in pairs], "target": [p[1] for p in pairs]}
        if pairs and len(pairs[0]) > 2:
            cols["calls"] = [p[2] for p in pairs]
        return EdgeTable(name, src, dst, pa.table(cols))

    return GraphTables("test", 1, 1, "thread", nodes={
        "Session": NodeTable("Session", ("session_id",), pa.table(
            {"id": s_ids, "session_id": s_ids, "n": list(range(sessions))})),
        "Thread": NodeTable("Thread", ("thread_id",), pa.table(
            {"id": t_ids, "thread_id": t_ids, "kind": ["x" if n % 3 else None
                                                        for n in range(len(t_ids))]})),
        "Tool": NodeTable("Tool", ("tool_name",), pa.table({"id": tool_ids,
                                                            "tool_name": tool_ids})),
    }, edges={
        "HAS_THREAD": edges("HAS_THREAD", "Session", "Thread", has),
        "PARENT_THREAD": edges("PARENT_THREAD", "Thread", "Thread", parent),
        "CALLED_TOOL": edges("CALLED_TOOL", "Thread", "Tool", called),
    })


def counts(store: Neo4jStore, graph: GraphTables) -> tuple[dict[str, int], dict[str, int]]:
    return (store.node_counts(sorted(graph.nodes)),
            store.relationship_counts(sorted(graph.edges)))


# --- against the server ----------------------------------------------------------


def test_empty_target_is_created_then_a_second_load_merges_to_the_same_graph(
        store: Neo4jStore) -> None:
    g = sessions_graph()
    rec = RecordingProgress()
    first = store.load(g, batch_size=7, workers=3, progress=rec)
    assert first.write_mode == "create" and first.workers == 3
    assert first.nodes == g.node_counts() and first.edges == g.edge_counts()
    assert counts(store, g) == (g.node_counts(), g.edge_counts())
    created = store.read_graph()
    second = store.load(g, batch_size=5, workers=2)
    assert second.write_mode == "merge"
    assert counts(store, g) == (g.node_counts(), g.edge_counts())  # nothing duplicated
    assert_same_graph(store.read_graph(), created)
    total = sum(g.node_counts().values()) + sum(g.edge_counts().values())
    assert rec.total("loading Neo4j") == rec.advanced("loading Neo4j") == total
    steps = [e[2] for e in rec.of("loading Neo4j") if e[0] == "advance"]
    assert len(steps) > total // 7 and max(steps) <= 7  # one step per batch


def test_created_graph_equals_a_merged_one(store: Neo4jStore) -> None:
    g = lineage_graph()
    assert store.load(g, workers=2).write_mode == "create"
    created = store.read_graph()
    store.execute("MATCH (n) WHERE NOT n:GraphkitTestDatabase DETACH DELETE n")
    # One node of an unrelated label the graph uses makes the target non-empty.
    store.execute("CREATE (:Session {id: 'elsewhere'})")
    assert store.load(g, workers=1).write_mode == "merge"
    store.execute("MATCH (n:Session {id: 'elsewhere'}) DELETE n")
    assert_same_graph(store.read_graph(), created)


def test_replace_loads_by_create_and_converges(store: Neo4jStore) -> None:
    g = sessions_graph(sessions=10)
    store.load(g)
    report = store.load(g, if_exists="replace", workers=4)
    assert report.write_mode == "create" and report.removed == sum(g.node_counts().values())
    assert counts(store, g) == (g.node_counts(), g.edge_counts())
    assert not store.interrupted_load()


def test_repeated_ids_and_pairs_are_merged_even_into_an_empty_target(
        store: Neo4jStore) -> None:
    g = sessions_graph(sessions=3, threads=2)
    session = g.nodes["Session"].table
    g.nodes["Session"] = NodeTable("Session", ("session_id",),
                                   pa.concat_tables([session, session.slice(0, 1)]))
    has = g.edges["HAS_THREAD"].table
    g.edges["HAS_THREAD"] = EdgeTable("HAS_THREAD", "Session", "Thread",
                                      pa.concat_tables([has, has.slice(0, 2)]))
    report = store.load(g, workers=2)
    assert report.write_mode == "create"
    nodes, rels = counts(store, g)
    assert nodes["Session"] == 3 and rels["HAS_THREAD"] == 6


def test_an_end_outside_the_graph_is_found_in_the_database_by_its_id(
        store: Neo4jStore) -> None:
    """Relationships between nodes of this load go by the nodes' internal ids;
    one whose end is not among the graph's nodes still finds it by label and id
    in a database that has it, and is counted skipped where nothing has it."""
    store.execute("CREATE (:Session {id: 's-elsewhere', session_id: 's-elsewhere'})")
    g = sessions_graph(sessions=4, threads=2)
    has = g.edges["HAS_THREAD"].table
    g.edges["HAS_THREAD"] = EdgeTable("HAS_THREAD", "Session", "Thread", pa.concat_tables([
        has, pa.table({"source": ["s-elsewhere", "s-nowhere"],
                       "target": ["t-00001-000", "t-00002-001"]})]))
    report = store.load(g, batch_size=3, workers=2)
    assert report.write_mode == "merge"
    assert report.edges["HAS_THREAD"] == has.num_rows + 1
    assert report.skipped_edges == {"HAS_THREAD": 1}
    rows = store.edge_rows("HAS_THREAD", "Session", "Thread", [], sources=["s-elsewhere"])
    assert [(r["source"], r["target"]) for r in rows] == [("s-elsewhere", "t-00001-000")]
    store.execute("MATCH (n:Session {id: 's-elsewhere'}) DETACH DELETE n")
    loaded = store.read_graph(sorted(g.nodes), sorted(g.edges))
    store.execute("MATCH (n) WHERE NOT n:GraphkitTestDatabase DETACH DELETE n")
    g.edges["HAS_THREAD"] = EdgeTable("HAS_THREAD", "Session", "Thread", has)
    assert store.load(g, batch_size=3, workers=2).write_mode == "create"
    assert_same_graph(store.read_graph(sorted(g.nodes), sorted(g.edges)), loaded)


@pytest.mark.parametrize("create", [True, False])
def test_relationships_by_node_id_seek_by_id_not_by_index(store: Neo4jStore,
                                                           create: bool) -> None:
    """The point of sending internal ids: the plan seeks each end by id and
    takes no (locking) index seek; the id check stays a filter."""
    from graphkit.enrich.neo4j import cypher

    store.ensure_schema(["Thread", "Tool"])
    query = cypher.relationships_by_node_id("CALLED_TOOL", "Thread", "Tool", ["calls"],
                                            create=create)
    with store.driver_session() as session:
        plan_ = session.run("EXPLAIN " + query, s=[0], t=[1], sources=["a"], targets=["b"],
                            c0=[1]).consume().plan

    def operators(p: dict) -> list[str]:
        return [p["operatorType"].split("@")[0]] + [
            o for c in p.get("children", []) for o in operators(c)]

    ops = operators(plan_)
    assert ops.count("NodeByIdSeek") == 2
    assert not [o for o in ops if "Index" in o or "Scan" in o], ops


def test_a_batch_the_server_refuses_fails_the_load_with_one_line(store: Neo4jStore) -> None:
    from graphkit.core.errors import StoreError

    g = sessions_graph(sessions=20)
    called = g.edges["CALLED_TOOL"].table
    # A refusal no up-front check can foresee (the graph itself is valid): the user's
    # own uniqueness constraint on a relationship property (Community since 5.7), which
    # one row of one relationship batch breaks mid-load.
    calls = list(range(called.num_rows))
    calls[len(calls) // 2] = calls[0]
    g.edges["CALLED_TOOL"] = EdgeTable("CALLED_TOOL", "Thread", "Tool", called.set_column(
        2, "calls", pa.array(calls, pa.int64())))
    with store.driver_session() as session:
        session.run("CREATE CONSTRAINT gk_test_calls_unique IF NOT EXISTS "
                    "FOR ()-[r:CALLED_TOOL]-() REQUIRE r.calls IS UNIQUE").consume()
    try:
        with pytest.raises(StoreError, match="failed") as err:
            store.load(g, batch_size=10, workers=3)
        assert "\n" not in str(err.value)
    finally:
        with store.driver_session() as session:
            session.run("DROP CONSTRAINT gk_test_calls_unique IF EXISTS").consume()


# --- the plan, without a server ----------------------------------------------------


@pytest.mark.parametrize("parts", [1, 2, 3, 8])
def test_partitions_share_no_sparse_node_and_cover_every_row(parts: int) -> None:
    g = sessions_graph(sessions=60, threads=5, tools=2)
    load_plan = plan.edge_partitions(g, parts, dense=50)
    assert load_plan.repeated_pairs == set()
    owner: dict[str, int] = {}
    for etype, e in g.edges.items():
        rows = np.concatenate(load_plan.partitions[etype])
        assert sorted(rows.tolist()) == list(range(e.table.num_rows))
        for p, idx in enumerate(load_plan.partitions[etype]):
            for row in e.table.take(pa.array(idx)).to_pylist():
                for end in (row["source"], row["target"]):
                    if end.startswith("tool-"):
                        continue  # dense: 150 relationships each
                    assert owner.setdefault(end, p) == p, (end, etype)
    if parts > 1:  # 60 sessions spread over the partitions
        used = {len(x) > 0 for x in load_plan.partitions["HAS_THREAD"]}
        assert used == {True}


def test_dense_ends_come_in_lock_order() -> None:
    g = sessions_graph(sessions=30, threads=4, tools=3)
    load_plan = plan.edge_partitions(g, 2, dense=50)
    for idx in load_plan.partitions["CALLED_TOOL"]:
        targets = g.edges["CALLED_TOOL"].table.take(pa.array(idx)).column("target").to_pylist()
        assert targets == sorted(targets)


def test_ids_of_mixed_lengths_take_the_exact_lookup() -> None:
    g = sessions_graph(sessions=4, threads=3)
    g.nodes["Session"] = NodeTable("Session", ("session_id",), pa.table(
        {"id": ["a", "bb", "ccc", "dddd"], "session_id": ["a", "bb", "ccc", "dddd"],
         "n": [0, 1, 2, 3]}))
    has = g.edges["HAS_THREAD"].table
    names = ["a", "bb", "ccc", "dddd"]
    sources = [names[int(s[-5:]) % 4] for s in has.column("source").to_pylist()]
    g.edges["HAS_THREAD"] = EdgeTable("HAS_THREAD", "Session", "Thread",
                                      has.set_column(0, "source", pa.array(sources)))
    ends = plan.edge_ends(g)
    offsets, _ = plan.node_offsets(g)
    assert sorted(set(ends["HAS_THREAD"].source.tolist())) == [
        offsets["Session"] + i for i in range(4)]


def test_hash_collisions_never_give_a_wrong_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """Edge ends are found by a 64-bit hash of the ids; relationships are then
    written between the nodes found, so a colliding hash must not pass."""
    g = sessions_graph(sessions=5, threads=3)
    exact = plan.edge_ends(g)

    def colliding(ids: pa.ChunkedArray | pa.Array) -> np.ndarray:
        return np.zeros(len(ids), np.uint64)  # every id has the same hash

    monkeypatch.setattr(plan, "_fixed_width_hash", colliding)
    collided = plan.edge_ends(g)
    for etype in g.edges:
        assert collided[etype].source.tolist() == exact[etype].source.tolist()
        assert collided[etype].target.tolist() == exact[etype].target.tolist()
    offsets, _ = plan.node_offsets(g)
    threads = g.nodes["Thread"].table.column("id").to_pylist()
    targets = g.edges["HAS_THREAD"].table.column("target").to_pylist()
    assert [threads[p - offsets["Thread"]] for p in exact["HAS_THREAD"].target] == targets


def test_components_join_chains() -> None:
    a = np.array([0, 1, 5, 6])
    b = np.array([1, 2, 6, 3])
    assert plan.components(7, a, b).tolist() == [0, 0, 0, 3, 4, 3, 3]


def test_missing_ends_and_repeated_pairs_are_found() -> None:
    g = sessions_graph(sessions=2, threads=2)
    has = g.edges["HAS_THREAD"].table
    g.edges["HAS_THREAD"] = EdgeTable("HAS_THREAD", "Session", "Thread", pa.concat_tables(
        [has, has.slice(0, 1), pa.table({"source": ["nope"], "target": ["t-00000-000"]})]))
    ends = plan.edge_ends(g)
    assert ends["HAS_THREAD"].source[-1] == -1
    assert plan.edge_partitions(g, 2).repeated_pairs == {"HAS_THREAD"}


def test_a_routing_uri_loads_and_reads(store: Neo4jStore) -> None:
    """neo4j:// asks the server for a routing table (a cluster's leader and
    followers; a single server names itself): writes go through execute_write
    to the leader, reads follow them through the shared bookmarks."""
    from dataclasses import replace

    config = store.config
    routed = replace(config, uri=config.uri.replace("bolt://", "neo4j://", 1))
    assert routed.uri.startswith("neo4j://")
    g = sessions_graph(sessions=8)
    with Neo4jStore(routed, workers=3) as neo:
        report = neo.load(g)
        assert report.write_mode == "create"
        assert counts(neo, g) == (g.node_counts(), g.edge_counts())


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_utc_timestamps_sent_as_integers_store_what_the_driver_stores(
        store: Neo4jStore, unit: str) -> None:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    values = [datetime(2025, 1, 2, 3, 4, 5, 123456, tzinfo=ZoneInfo("UTC")),
              None, datetime(1970, 1, 1, tzinfo=ZoneInfo("UTC"))]
    if unit in ("s", "ms"):  # the unit cannot hold the microseconds
        values[0] = values[0].replace(microsecond=0)
    column = pa.array(values, pa.timestamp(unit, tz="UTC"))
    g = GraphTables("test", 1, 1, "thread", nodes={"Doc": NodeTable("Doc", ("id",), pa.table(
        {"id": ["a", "b", "c"], "when": column}))})
    store.load(g)
    by_driver = column.to_pylist()  # what the driver packs itself (ZoneInfo UTC)
    for node_id, value in zip(["a", "b", "c"], by_driver, strict=True):
        (row,) = store.read("MATCH (d:Doc {id: $id}) RETURN d.when AS w, toString(d.when) AS s,"
                             " toString($v) AS expected, d.when = $v AS same",
                             id=node_id, v=value)
        if value is None:
            assert row["w"] is None
        else:
            assert row["same"] is True and row["s"] == row["expected"], row
            assert row["w"].to_native() == value
