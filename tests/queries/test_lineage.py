"""Lineage in both directions, on hand-built cases and on generated data."""

from __future__ import annotations

import random

import pytest

from graphkit.builds.run import graph_from_records
from graphkit.core.errors import QueryError
from graphkit.enrich.networkx_store import NetworkXStore
from graphkit.queries.lineage import (
    ancestors,
    descendants,
    lineage,
    resolve,
    session_tree,
    sessions,
)
from graphkit.queries.model import Ref
from samples.generate import generate
from tests.helpers.rows import CLAUDE, CODEX_CHILD, CODEX_ROOT, identity_cases, row


@pytest.fixture(scope="module")
def store() -> NetworkXStore:
    s = NetworkXStore()
    s.load(graph_from_records(identity_cases()))
    return s


def T(i: str) -> Ref:
    return Ref("Thread", i)


def test_ancestors_up_to_the_session(store: NetworkXStore) -> None:
    assert ancestors(store, "agentB") == [T("agentA"), T(CLAUDE), Ref("Session", CLAUDE)]
    assert ancestors(store, "agentA") == [T(CLAUDE), Ref("Session", CLAUDE)]
    assert ancestors(store, CODEX_CHILD) == [T(CODEX_ROOT), Ref("Session", CODEX_ROOT)]


def test_main_loop_and_root_thread_have_only_their_session(store: NetworkXStore) -> None:
    # A Claude session id names the main-loop thread; it is not its own ancestor.
    assert ancestors(store, CLAUDE) == [Ref("Session", CLAUDE)]
    assert ancestors(store, CODEX_ROOT) == [Ref("Session", CODEX_ROOT)]


def test_descendants_nearest_first(store: NetworkXStore) -> None:
    assert descendants(store, CLAUDE) == [T("agentA"), T("agentB")]
    assert descendants(store, "agentA") == [T("agentB")]
    assert descendants(store, "agentB") == []
    assert descendants(store, CODEX_ROOT) == [T(CODEX_CHILD)]


def test_lineage_json_shape(store: NetworkXStore) -> None:
    assert lineage(store, "agentB").to_json() == {
        "id": "agentB",
        "session_id": CLAUDE,
        "ancestors": [{"type": "Thread", "id": "agentA"}, {"type": "Thread", "id": CLAUDE},
                      {"type": "Session", "id": CLAUDE}],
        "descendants": [],
        "continues": [],
    }


def test_unknown_id_is_a_clear_error(store: NetworkXStore) -> None:
    with pytest.raises(QueryError, match="no thread, agent or session has the id 'zzz'"):
        lineage(store, "zzz")


def test_ambiguous_id_names_the_candidates() -> None:
    s = NetworkXStore()
    s.load(graph_from_records([row("s1", agent_id="dup", message_id="a"),
                               row("s2", agent_id="dup", message_id="b")]))
    with pytest.raises(QueryError) as info:
        resolve(s, "dup")
    assert "ambiguous" in str(info.value)
    assert "session s1" in str(info.value) and "session s2" in str(info.value)


def test_session_id_without_a_thread_of_that_id() -> None:
    # A Codex session whose id is not a thread id: the session's threads are
    # its descendants and it has no ancestors.
    s = NetworkXStore()
    s.load(graph_from_records([
        row("sess", conversation_id="t1", message_id="a"),
        row("sess", conversation_id="t2", parent_thread_id="t1", message_id="b"),
    ]))
    assert lineage(s, "sess").to_json() == {
        "id": "sess", "session_id": "sess", "ancestors": [],
        "descendants": [{"type": "Thread", "id": "t1"}, {"type": "Thread", "id": "t2"}],
        "continues": []}


def test_session_tree(store: NetworkXStore) -> None:
    tree = session_tree(store, CLAUDE)
    assert tree.to_json()["children"][0]["id"] == CLAUDE
    sub = tree.children[0].children
    assert [c.ref.id for c in sub] == ["agentA"]
    assert sub[0].info is not None and sub[0].info.agent_type == "Explore"
    assert [c.ref.id for c in sub[0].children] == ["agentB"]
    with pytest.raises(QueryError, match="is a thread of session"):
        session_tree(store, "agentA")


def test_sessions_summary(store: NetworkXStore) -> None:
    got = {s.session_id: (s.threads, s.agents, s.messages) for s in sessions(store)}
    # "agents" counts threads spawned by another: Claude subagents and Codex child threads.
    assert got == {CLAUDE: (3, 2, 4), CODEX_ROOT: (2, 1, 2)}


def test_cycle_does_not_hang() -> None:
    s = NetworkXStore()
    s.load(graph_from_records([
        row("s", conversation_id="a", parent_thread_id="b", message_id="1"),
        row("s", conversation_id="b", parent_thread_id="a", message_id="2"),
    ]))
    assert ancestors(s, "a") == [T("b"), Ref("Session", "s")]
    assert descendants(s, "a") == [T("b")]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 12])
def test_lineage_matches_truth_on_generated_data(seed: int) -> None:
    """Many sessions of both kinds, subagent chains up to depth 4, duplicated rows."""
    rows, truth = generate(60, seed=seed, max_depth=4, duplicate_rate=0.05)
    s = NetworkXStore()
    from graphkit.contract.loader import load_contract
    from graphkit.core.schema import tag_rows
    from graphkit.projection.conform import conform
    from graphkit.projection.project import project

    c = load_contract()
    s.load(project(c, tag_rows(conform(c, rows, "gen"), "gen")).graph)
    assert max(len(truth.ancestors(t)) for t in truth.parent) == 4
    ids = list(truth.parent)
    random.Random(seed).shuffle(ids)
    for tid in ids[:150]:
        got = lineage(s, tid)
        assert got.session_id == truth.session_of[tid]
        assert [r.id for r in got.ancestors] == [*truth.ancestors(tid), truth.session_of[tid]]
        assert {r.id for r in got.descendants} == truth.descendants(tid)
    summary = {x.session_id: x for x in sessions(s)}
    for sid, counts in truth.sessions.items():
        assert summary[sid].threads == counts["threads"]
        assert summary[sid].agents == counts["agents"]
        assert summary[sid].messages == counts["messages"]


def test_snapshot_reader_answers_exactly_like_networkx(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The CLI's fast snapshot path and the NetworkX store give identical JSON."""
    from graphkit.contract.loader import load_contract
    from graphkit.core.schema import tag_rows
    from graphkit.enrich.snapshot_store import SnapshotReader
    from graphkit.projection.conform import conform
    from graphkit.projection.project import project
    from graphkit.queries.lineage import lineage_many
    from graphkit.snapshot import write_snapshot

    rows, truth = generate(40, seed=5, max_depth=4)
    c = load_contract()
    graph = project(c, tag_rows(conform(c, rows, "gen"), "gen")).graph
    nx_store = NetworkXStore()
    nx_store.load(graph)
    write_snapshot(graph, tmp_path / "snap")
    snap = SnapshotReader(tmp_path / "snap")
    ids = [*truth.parent, *truth.sessions]
    assert [x.to_json() for x in lineage_many(snap, ids)] == [
        x.to_json() for x in lineage_many(nx_store, ids)]
    assert [s.to_json() for s in sessions(snap)] == [s.to_json() for s in sessions(nx_store)]
    for sid in truth.sessions:
        assert session_tree(snap, sid).to_json() == session_tree(nx_store, sid).to_json()
    with pytest.raises(QueryError):
        lineage(snap, "not-an-id")
