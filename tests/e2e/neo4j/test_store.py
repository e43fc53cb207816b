"""Neo4jStore against a real server: loads, load policies, lineage primitives."""

from __future__ import annotations

from datetime import datetime

import pyarrow as pa
import pytest

from graphkit.core.errors import StoreError
from graphkit.core.graph import EdgeTable, GraphTables, NodeTable
from graphkit.enrich.base import Hit, ThreadInfo
from graphkit.enrich.neo4j.store import Neo4jStore
from tests.helpers.store_graphs import TS, cycle_graph, lineage_graph, nid, ts


def counts(store: Neo4jStore, graph: GraphTables) -> tuple[dict[str, int], dict[str, int]]:
    return (
        store.node_counts(sorted(graph.nodes)),
        store.relationship_counts(sorted(graph.edges)),
    )


def tid(thread_key: str) -> str:
    """Node id of a lineage_graph thread, by its thread_id."""
    g = lineage_graph()
    rows = g.nodes["Thread"].table.to_pylist()
    return next(r["id"] for r in rows if r["thread_id"] == thread_key)


# --- loading -------------------------------------------------------------------


def test_load_writes_every_node_and_relationship(store: Neo4jStore) -> None:
    g = lineage_graph()
    report = store.load(g)
    assert report.nodes == g.node_counts()
    assert report.edges == g.edge_counts()
    assert report.skipped_edges == {}
    assert counts(store, g) == (g.node_counts(), g.edge_counts())
    assert report.seconds > 0


def test_rerun_converges(store: Neo4jStore) -> None:
    g = lineage_graph()
    store.load(g)
    first = counts(store, g)
    store.load(g)
    store.load(g, batch_size=2)  # other batch boundaries, same result
    assert counts(store, g) == first == (g.node_counts(), g.edge_counts())


def test_properties_round_trip_with_types(store: Neo4jStore) -> None:
    store.load(lineage_graph())
    rows = store.read(
        "MATCH (s:Session {session_id: 's-claude'}) RETURN s.first_seen AS f, s.messages AS m,"
        " s.title AS t, keys(s) AS k"
    )
    (row,) = rows
    assert row["f"].to_native() == ts("2025-01-02T03:04:05.123456")
    assert row["m"] == 67 and isinstance(row["m"], int)
    assert row["t"] == "fix the parser"
    # Key columns are stored as properties too; the node key is `id`.
    assert {"id", "session_id", "first_seen", "last_seen", "messages", "rows"} <= set(row["k"])
    rel = store.read(
        "MATCH (:Thread {thread_id: 's-claude'})-[r:USED_MODEL]->() RETURN r.calls AS c,"
        " r.first_used AS f"
    )
    assert rel[0]["c"] == 30
    assert rel[0]["f"].to_native() == ts("2025-01-02T03:04:05")


def test_null_properties_are_not_stored(store: Neo4jStore) -> None:
    store.load(lineage_graph())
    (row,) = store.read("MATCH (s:Session {session_id: 'codex-root'}) RETURN keys(s) AS k")
    assert "title" not in row["k"]
    (row,) = store.read("MATCH (t:Thread {thread_id: 's-claude'}) RETURN keys(t) AS k")
    assert "agent_id" not in row["k"]


def test_merge_updates_changed_values_and_removes_new_nulls(store: Neo4jStore) -> None:
    g = lineage_graph()
    store.load(g)
    sessions = g.nodes["Session"].table
    titles = pa.array([None, "now titled"], pa.string())
    changed = sessions.set_column(sessions.column_names.index("title"), "title", titles)
    g.nodes["Session"] = NodeTable("Session", ("session_id",), changed)
    store.load(g)
    rows = store.read("MATCH (s:Session) RETURN s.session_id AS s, s.title AS t ORDER BY s")
    assert rows == [{"s": "codex-root", "t": "now titled"}, {"s": "s-claude", "t": None}]


def test_replace_deletes_what_the_new_graph_lacks(store: Neo4jStore) -> None:
    g = lineage_graph()
    store.load(g)
    store.load(cycle_graph())  # extra Session/Thread nodes, merged in
    assert store.node_counts(["Session"])["Session"] == 3
    report = store.load(g, if_exists="replace")
    assert report.removed == 3 + 10 + 4 + 1 + 1
    assert counts(store, g) == (g.node_counts(), g.edge_counts())


def test_replace_leaves_other_labels_alone(store: Neo4jStore) -> None:
    store.write("CREATE (:Unrelated {id: 'u'}) RETURN 1")
    store.load(lineage_graph(), if_exists="replace")
    assert store.node_counts(["Unrelated"]) == {"Unrelated": 1}


def test_fail_policy_refuses_an_occupied_database(store: Neo4jStore) -> None:
    g = lineage_graph()
    store.load(g, if_exists="fail")  # empty: fine
    with pytest.raises(StoreError, match="already holds") as err:
        store.load(g, if_exists="fail")
    assert "\n" not in str(err.value)
    assert counts(store, g) == (g.node_counts(), g.edge_counts())


def test_unknown_policy_is_refused(store: Neo4jStore) -> None:
    with pytest.raises(StoreError, match="if_exists"):
        store.load(lineage_graph(), if_exists="append")  # type: ignore[arg-type]


def test_constraints_and_indexes_exist(store: Neo4jStore) -> None:
    g = lineage_graph()
    store.load(g)
    rows = store.read("SHOW CONSTRAINTS YIELD labelsOrTypes, properties, type")
    unique = {(r["labelsOrTypes"][0], r["properties"][0]) for r in rows if "UNIQUE" in r["type"]}
    assert {(label, "id") for label in g.nodes} <= unique
    rows = store.read("SHOW INDEXES YIELD labelsOrTypes, properties, state")
    indexed = {(r["labelsOrTypes"][0], r["properties"][0]) for r in rows if r["labelsOrTypes"]}
    assert {("Thread", "thread_id"), ("Thread", "agent_id"), ("Session", "session_id")} <= indexed
    assert all(r["state"] == "ONLINE" for r in rows)


def test_hostile_label_is_refused_before_anything_is_written(store: Neo4jStore) -> None:
    g = lineage_graph()
    bad = "Thread`) DETACH DELETE n //"
    g.nodes[bad] = NodeTable(bad, ("id",), pa.table({"id": ["x"]}))
    with pytest.raises(StoreError, match="refusing"):
        store.load(g)
    assert store.node_counts(["Session"]) == {"Session": 0}


def test_hostile_values_are_only_data(store: Neo4jStore) -> None:
    evil = "x'}) MATCH (m) DETACH DELETE m //"
    g = GraphTables(
        "t",
        1,
        1,
        "thread",
        nodes={
            "Thread": NodeTable(
                "Thread", ("thread_id",), pa.table({"id": [evil], "thread_id": [evil + '"`']})
            )
        },
    )
    store.load(lineage_graph())
    store.load(g)
    assert store.resolve(evil + '"`') == [Hit("Thread", evil, evil + '"`', None)]  # type: ignore[arg-type]
    assert store.node_counts(["Session"]) == {"Session": 2}


def test_unstorable_column_type_is_refused(store: Neo4jStore) -> None:
    g = GraphTables(
        "t",
        1,
        1,
        "thread",
        nodes={
            "Thread": NodeTable("Thread", (), pa.table({"id": ["a"], "meta": pa.array([{"k": 1}])}))
        },
    )
    with pytest.raises(StoreError, match="'meta'"):
        store.load(g)


def test_edge_with_missing_end_is_reported_not_invented(store: Neo4jStore) -> None:
    g = lineage_graph()
    g.edges["PARENT_THREAD"] = EdgeTable(
        "PARENT_THREAD",
        "Thread",
        "Thread",
        pa.table(
            {
                "source": [tid("agent-a"), "no-such-node"],
                "target": [tid("s-claude"), tid("agent-a")],
            }
        ),
    )
    report = store.load(g)
    assert report.edges["PARENT_THREAD"] == 1
    assert report.skipped_edges == {"PARENT_THREAD": 1}


def test_graph_with_other_labels_and_timestamps_list(store: Neo4jStore) -> None:
    # Any contract: labels/types come from the tables, lists are fine.
    g = GraphTables(
        "other",
        2,
        1,
        "message",
        nodes={
            "Message": NodeTable(
                "Message",
                ("message_id",),
                pa.table(
                    {
                        "id": ["m1", "m2"],
                        "message_id": ["m1", "m2"],
                        "at": pa.array([ts("2025-01-01T00:00:00"), None], TS),
                        "tags": pa.array([["a", "b"], []], pa.list_(pa.string())),
                        "score": [0.5, 1.0],
                        "ok": [True, False],
                    }
                ),
            )
        },
        edges={
            "NEXT": EdgeTable(
                "NEXT", "Message", "Message", pa.table({"source": ["m1"], "target": ["m2"]})
            )
        },
    )
    report = store.load(g)
    assert report.nodes == {"Message": 2} and report.edges == {"NEXT": 1}
    (row,) = store.read("MATCH (m:Message {id: 'm1'}) RETURN m.tags AS t, m.ok AS ok")
    assert row == {"t": ["a", "b"], "ok": True}


# --- lineage primitives ----------------------------------------------------------


@pytest.fixture
def loaded(store: Neo4jStore) -> Neo4jStore:
    store.load(lineage_graph())
    store.load(cycle_graph())
    return store


def hit(thread_id: str, session_id: str = "s-claude") -> Hit:
    return Hit("Thread", tid(thread_id), thread_id, session_id)


def test_resolve(loaded: Neo4jStore) -> None:
    # A Claude main loop: the Session and its main thread share the id.
    assert loaded.resolve("s-claude") == [
        Hit("Session", nid("Session", "s-claude"), "s-claude", "s-claude"),
        hit("s-claude"),
    ]
    # A subagent by agent id (its thread_id is the same string: one hit, not two).
    assert loaded.resolve("agent-b") == [hit("agent-b")]
    assert loaded.resolve("codex-child") == [hit("codex-child", "codex-root")]
    assert loaded.resolve("nope") == []


def test_resolve_by_agent_id_only(store: Neo4jStore) -> None:
    g = GraphTables(
        "t",
        1,
        1,
        "thread",
        nodes={
            "Thread": NodeTable(
                "Thread",
                (),
                pa.table(
                    {"id": ["n1"], "thread_id": ["t1"], "agent_id": ["ag1"], "session_id": ["s"]}
                ),
            )
        },
    )
    store.load(g)
    assert store.resolve("ag1") == [Hit("Thread", "n1", "t1", "s")]


def test_parent_chain_nearest_first(loaded: Neo4jStore) -> None:
    assert loaded.parent_chain(tid("agent-c")) == [hit("agent-b"), hit("agent-a"), hit("s-claude")]
    assert loaded.parent_chain(tid("agent-a")) == [hit("s-claude")]
    assert loaded.parent_chain(tid("s-claude")) == []
    assert loaded.parent_chain(tid("codex-child")) == [hit("codex-root", "codex-root")]
    assert loaded.parent_chain("no-such-node") == []


def test_parent_chain_stops_on_a_cycle(loaded: Neo4jStore) -> None:
    x, y, z = (nid("Thread", f"cyc/{t}") for t in "xyz")
    chain = loaded.parent_chain(x)
    assert [h.node_id for h in chain] == [y, z]
    assert [h.id for h in chain] == ["y", "z"]


def test_descendants_with_depth(loaded: Neo4jStore) -> None:
    assert loaded.descendant_threads(tid("s-claude")) == [
        (hit("agent-a"), 1),
        (hit("agent-d"), 1),
        (hit("agent-b"), 2),
        (hit("agent-c"), 3),
    ]
    assert loaded.descendant_threads(tid("agent-b")) == [(hit("agent-c"), 1)]
    assert loaded.descendant_threads(tid("agent-c")) == []
    assert loaded.descendant_threads(tid("codex-root")) == [(hit("codex-child", "codex-root"), 1)]


def test_descendants_on_a_cycle_exclude_the_start(loaded: Neo4jStore) -> None:
    got = loaded.descendant_threads(nid("Thread", "cyc/x"))
    assert [(h.id, d) for h, d in got] == [("z", 1), ("y", 2)]


def test_descendants_take_the_smallest_depth(store: Neo4jStore) -> None:
    # d has two parents: b (depth 2 below r) and r itself (depth 1).
    ids = ["r", "b", "c", "d"]
    g = GraphTables(
        "t",
        1,
        1,
        "thread",
        nodes={
            "Thread": NodeTable(
                "Thread", (), pa.table({"id": ids, "thread_id": ids, "session_id": ["s"] * 4})
            )
        },
        edges={
            "PARENT_THREAD": EdgeTable(
                "PARENT_THREAD",
                "Thread",
                "Thread",
                pa.table({"source": ["b", "c", "d", "d"], "target": ["r", "b", "c", "r"]}),
            )
        },
    )
    store.load(g)
    assert [(h.id, d) for h, d in store.descendant_threads("r")] == [("b", 1), ("d", 1), ("c", 2)]


def test_session_threads(loaded: Neo4jStore) -> None:
    got = loaded.session_threads("s-claude")
    assert got == [
        ThreadInfo(
            tid("agent-a"),
            "agent-a",
            tid("s-claude"),
            "subagent",
            "general-purpose",
            "Explore the repo",
            12,
        ),
        ThreadInfo(
            tid("agent-b"), "agent-b", tid("agent-a"), "subagent", "Explore", "Find the parser", 7
        ),
        ThreadInfo(
            tid("agent-c"), "agent-c", tid("agent-b"), "subagent", "general-purpose", None, 3
        ),
        ThreadInfo(tid("agent-d"), "agent-d", tid("s-claude"), "subagent", None, None, 5),
        ThreadInfo(tid("s-claude"), "s-claude", None, "main", None, None, 40),
    ]
    assert loaded.session_threads("codex-root") == [
        ThreadInfo(tid("codex-child"), "codex-child", tid("codex-root"), "codex", None, None, 9),
        ThreadInfo(tid("codex-root"), "codex-root", None, "codex", None, None, 20),
    ]
    assert loaded.session_threads("nope") == []


def test_sessions(loaded: Neo4jStore) -> None:
    got = {s.session_id: s.to_json() for s in loaded.sessions()}
    assert got["s-claude"] == {
        "session_id": "s-claude",
        "threads": 5,
        "agents": 4,
        "messages": 67,
        "first_seen": "2025-01-02T03:04:05.123456+00:00",
        "last_seen": "2025-01-02T04:00:00+00:00",
    }
    assert got["codex-root"] == {
        "session_id": "codex-root",
        "threads": 2,
        "agents": 1,  # the child thread: "agents" are threads another spawned
        "messages": 29,
        "first_seen": "2025-02-01T10:00:00+00:00",
        "last_seen": "2025-02-01T11:30:00.500000+00:00",
    }
    assert got["cyc"]["first_seen"] is None and got["cyc"]["threads"] == 3
    assert [s.session_id for s in loaded.sessions()] == ["codex-root", "cyc", "s-claude"]


def test_iso_matches_python_isoformat(loaded: Neo4jStore) -> None:
    # The NetworkX side formats with datetime.isoformat() on UTC-aware values.
    first = lineage_graph().nodes["Session"].table.column("first_seen").to_pylist()
    want = sorted(d.isoformat() for d in first if isinstance(d, datetime))
    got = sorted(s.first_seen for s in loaded.sessions() if s.first_seen)
    assert got == want


def test_parent_chain_on_a_fork_takes_the_smallest_parent_id(store: Neo4jStore) -> None:
    ids = ["r", "b", "c", "d"]
    g = GraphTables(
        "t", 1, 1, "thread",
        nodes={"Thread": NodeTable("Thread", (), pa.table(
            {"id": ids, "thread_id": ids, "session_id": ["s"] * 4}))},
        edges={"PARENT_THREAD": EdgeTable("PARENT_THREAD", "Thread", "Thread", pa.table(
            {"source": ["b", "c", "d", "d"], "target": ["r", "b", "c", "r"]}))},
    )  # fmt: skip
    store.load(g)
    assert [h.id for h in store.parent_chain("d")] == ["c", "b", "r"]


def test_same_answers_as_the_networkx_store(loaded: Neo4jStore) -> None:
    from graphkit.enrich.networkx_store import NetworkXStore

    nx_store = NetworkXStore()
    nx_store.load(lineage_graph())
    nx_store.load(cycle_graph())
    threads = lineage_graph().nodes["Thread"].table.column("id").to_pylist()
    threads += [nid("Thread", f"cyc/{t}") for t in "xyz"]
    for user_id in ["s-claude", "agent-a", "agent-c", "codex-root", "codex-child", "x", "nope"]:
        by_hit = lambda h: (h.type, h.id, h.node_id)  # noqa: E731
        want = sorted(nx_store.resolve(user_id), key=by_hit)
        assert loaded.resolve(user_id) == want, user_id
    for node_id in threads:
        assert loaded.parent_chain(node_id) == nx_store.parent_chain(node_id)
        key = lambda hd: (hd[1], hd[0].id)  # noqa: E731
        assert loaded.descendant_threads(node_id) == sorted(
            nx_store.descendant_threads(node_id), key=key
        )
    for session_id in ["s-claude", "codex-root", "cyc"]:
        by_id = lambda t: t.id  # noqa: E731
        assert loaded.session_threads(session_id) == sorted(
            nx_store.session_threads(session_id), key=by_id
        )
    by_session = lambda s: s.session_id  # noqa: E731
    assert loaded.sessions() == sorted(nx_store.sessions(), key=by_session)


def test_hostile_property_name_is_refused(store: Neo4jStore) -> None:
    g = lineage_graph()
    bad = "x: 1}) MATCH (m) DETACH DELETE m //"
    g.nodes["Model"] = NodeTable("Model", ("model",), pa.table({"id": ["m"], bad: ["v"]}))
    with pytest.raises(StoreError, match="refusing property"):
        store.load(g)
    assert store.node_counts(["Session"]) == {"Session": 0}
