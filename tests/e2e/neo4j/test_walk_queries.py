"""The walking queries on a real server: each fetches what it walks in one round
trip, visits each node once (a pruning breadth-first expand, not every path),
and answers as the NetworkX store does on graphs built to have exponentially
many paths."""

from __future__ import annotations

import pyarrow as pa
import pytest
from neo4j.exceptions import CypherSyntaxError, ServiceUnavailable

from graphkit.core.errors import QueryError
from graphkit.core.graph import GraphTables, LineageVocabulary, NodeTable
from graphkit.enrich.neo4j import cypher
from graphkit.enrich.neo4j.connection import _retryable
from graphkit.enrich.neo4j.store import Neo4jStore
from graphkit.enrich.networkx_store import NetworkXStore
from graphkit.queries.continuations import continued_by, continues
from graphkit.queries.lineage import lineage
from tests.helpers.store_graphs import _edges, nid

LEVELS = 16  # 2**16 paths from the top to the bottom of each ladder


def ladder_graph(levels: int = LEVELS) -> GraphTables:
    """Sessions ``a0, b0 … a{n}, b{n}``, each of level i continuing both of
    level i+1 (``top`` continues both of level 0); in one session ``ladder``,
    threads ``ta0, tb0 …`` likewise, each with both threads of the level above
    as parents (a hostile shape: ``t-bottom`` has 2**levels paths up)."""
    names = [f"{side}{i}" for i in range(levels) for side in "ab"]
    sessions = ["top", *names, "bottom", "lone", "ladder"]
    snode = {s: nid("Session", s) for s in sessions}
    cont: list[tuple[str, str]] = []
    how: list[str] = []
    prev = ["top"]
    for i in range(levels):
        level = [f"a{i}", f"b{i}"]
        for p in prev:
            for c in level:
                cont.append((snode[p], snode[c]))
                how.append("resume" if c.startswith("a") else "fork")
        prev = level
    cont += [(snode[p], snode["bottom"]) for p in prev]
    how += ["compaction"] * len(prev)
    threads = ["t-top", *[f"t{n}" for n in names], "t-bottom"]
    tnode = {t: nid("Thread", f"ladder/{t}") for t in threads}
    parent: list[tuple[str, str]] = []
    above = ["t-top"]
    for i in range(levels):
        level = [f"ta{i}", f"tb{i}"]
        parent += [(tnode[c], tnode[p]) for c in level for p in above]
        above = level
    parent += [(tnode["t-bottom"], tnode[p]) for p in above]
    srows = [dict(id=snode[s], session_id=s, messages=1) for s in sessions]
    trows = [dict(id=tnode[t], thread_id=t, session_id="ladder", kind="codex", messages=1)
             for t in threads]
    # A thread of a continuing session: its lineage also walks the sessions' ladder.
    tnode["t-a3"] = nid("Thread", "a3/t-a3")
    trows.append(dict(id=tnode["t-a3"], thread_id="t-a3", session_id="a3", kind="codex",
                      messages=1))
    return GraphTables(
        "test", 1, 1, "thread",
        nodes={
            "Session": NodeTable("Session", ("session_id",), pa.Table.from_pylist(srows)),
            "Thread": NodeTable("Thread", ("thread_id",), pa.Table.from_pylist(trows)),
        },
        edges={
            "HAS_THREAD": _edges("HAS_THREAD", "Session", "Thread",
                                 [(snode["ladder"], tnode[t]) for t in threads]
                                 + [(snode["a3"], tnode["t-a3"])]),
            "PARENT_THREAD": _edges("PARENT_THREAD", "Thread", "Thread", parent),
            "CONTINUES": _edges("CONTINUES", "Session", "Session", cont, how=how),
        },
        lineage=LineageVocabulary(),
    )


@pytest.fixture
def loaded(store: Neo4jStore) -> tuple[Neo4jStore, NetworkXStore]:
    g = ladder_graph()
    store.load(g)
    nx = NetworkXStore()
    nx.load(g)
    return store, nx


def _operators(plan: dict) -> list[str]:
    return [plan["operatorType"].split("@")[0]] + [
        o for c in plan.get("children", []) for o in _operators(c)]


@pytest.mark.parametrize("which", ["parent", "child", "continues", "continued_by",
                                   "thread_walk", "lineage_walk"])
def test_walks_visit_each_node_once(loaded: tuple[Neo4jStore, NetworkXStore],
                                    which: str) -> None:
    """A plain variable-length expand enumerates every path (2**16 here, and
    unbounded on a hostile graph); the pruning one visits each node once."""
    store, _ = loaded
    v = LineageVocabulary()
    query = {"parent": cypher.parent_edges(v), "child": cypher.child_edges(v),
             "continues": cypher.continuation_edges(v, "CONTINUES", up=True),
             "continued_by": cypher.continuation_edges(v, "CONTINUES", up=False),
             "thread_walk": cypher.thread_walk(v), "lineage_walk": cypher.lineage_walk(v)}[which]
    with store.driver_session() as session:
        plan = session.run("EXPLAIN " + query, id="x", session="y").consume().plan
    expands = [o for o in _operators(plan) if o.startswith("VarLengthExpand")]
    assert expands and all("Pruning" in o for o in expands), _operators(plan)


def test_continuations_match_networkx_on_a_ladder(
        loaded: tuple[Neo4jStore, NetworkXStore]) -> None:
    store, nx = loaded
    for sid in ("top", "a3", "b7", "bottom", "lone", "no-such-session"):
        for walk in (continues, continued_by):
            assert walk(store, sid) == walk(nx, sid), (walk.__name__, sid)
    down = continues(store, "top")
    assert [c.id for c in down[:2]] == ["a0", "b0"]
    assert [(c.id, c.how, c.depth) for c in down[-1:]] == [("bottom", "compaction",
                                                            LEVELS + 1)]
    assert len(down) == 2 * LEVELS + 1
    assert [c.depth for c in continued_by(store, "bottom")][-1] == LEVELS + 1


def test_lineage_matches_networkx_on_a_ladder(
        loaded: tuple[Neo4jStore, NetworkXStore]) -> None:
    store, nx = loaded
    for tid in ("t-top", "ta0", "tb9", "t-bottom", "t-a3", "a3", "ladder"):
        assert lineage(store, tid) == lineage(nx, tid), tid
    walk = store.thread_walk(nid("Thread", "ladder/tb9"), "ladder")
    assert walk.parents == store.parent_chain(nid("Thread", "ladder/tb9"))
    assert walk.descendants == store.descendant_threads(nid("Thread", "ladder/tb9"))
    assert walk.continuations == []
    assert [c.id for c in lineage(store, "t-a3").continues] == [
        f"{side}{i}" for i in range(4, LEVELS) for side in "ab"] + ["bottom"]
    up = lineage(store, "t-bottom").ancestors
    assert len(up) == LEVELS + 2  # one parent per level (the smallest id), then the session
    assert len(lineage(store, "t-top").descendants) == 2 * LEVELS + 1


def test_one_round_trip_resolves_and_walks_as_two_do(
        loaded: tuple[Neo4jStore, NetworkXStore]) -> None:
    """``lineage_walk`` gives :meth:`resolve`'s hits and, for an id naming one
    thread, :meth:`thread_walk`'s answer; for any other id no walk."""
    store, _ = loaded
    # "twice" names one thread by two of its ids; "tb9" becomes ambiguous.
    store.execute(
        "MATCH (p:Thread {thread_id: 'ta2'}) "
        "CREATE (:Thread {id: 'twice-node', thread_id: 'twice', agent_id: 'twice', "
        "session_id: 'ladder'})-[:PARENT_THREAD]->(p), "
        "(:Thread {id: 'dup-node', thread_id: 'tb9', session_id: 'elsewhere'})")
    walked = 0
    for uid in ("t-top", "ta0", "t-bottom", "t-a3", "twice", "tb9", "a3", "ladder",
                "no-such-id"):
        hits, walk = store.lineage_walk(uid)
        assert hits == store.resolve(uid), uid
        threads = {h.node_id: h for h in hits if h.type == "Thread"}
        if len(threads) != 1:
            assert walk is None, uid
            continue
        (hit,) = threads.values()
        assert walk == store.thread_walk(hit.node_id, hit.session_id), uid
        walked += 1
    assert walked == 5
    up = [r.id for r in lineage(store, "twice").ancestors]
    assert (up[0], up[-2:], len(up)) == ("ta2", ["t-top", "ladder"], 5)
    with pytest.raises(QueryError, match="ambiguous"):
        lineage(store, "tb9")


def test_a_chain_through_another_label_is_not_walked(
        loaded: tuple[Neo4jStore, NetworkXStore]) -> None:
    """``continues`` joins sessions; an edge of that type through a node of
    another label is fetched by the one query but never walked, as a store
    walking a level at a time would not reach past it either."""
    store, nx = loaded
    store.execute(
        "MATCH (s:Session {session_id: 'lone'}) "
        "CREATE (s)-[:CONTINUES {how: 'resume'}]->(:Decoy {id: 'decoy'})"
        "-[:CONTINUES {how: 'fork'}]->(:Session {id: 'hidden-node', session_id: 'hidden'})")
    assert continues(store, "lone") == continues(nx, "lone") == []
    assert continued_by(store, "hidden") == []


def test_only_transient_failures_are_read_again(store: Neo4jStore) -> None:
    assert _retryable(ServiceUnavailable("the server went away"))
    assert not _retryable(ValueError("not the driver's"))
    with store.driver_session() as session, pytest.raises(CypherSyntaxError) as err:
        session.run("MATCH (n RETURN n").consume()
    assert not _retryable(err.value)
