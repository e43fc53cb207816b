"""``project(..., unresolved=True)``: what a partition of the rows gives the merge for an
edge whose end is no node of its rows — kept with its end ids and rows rather than
counted as dropped, the same whichever shortcuts the projection takes."""

from __future__ import annotations

import pyarrow as pa
import pytest

from graphkit.contract.loader import load_contract
from graphkit.core.ids import node_id
from graphkit.projection.edges import UNRESOLVED_ROWS
from graphkit.projection.project import Projection, Shortcuts
from tests.helpers.contracts import dictionary_coded, run
from tests.helpers.rows import row, table

# The shortcuts that change how edges are made: ends named by key code or by key text,
# edge types started as their node types are ready or after all of them.
EDGE_WAYS = [Shortcuts(group_by_key_columns=g, rules_as_ready=r)
             for g in (True, False) for r in (True, False)]


def _rows() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Origin sessions, and sessions continuing them (and one no row holds)."""
    origins = [row("o-0", conversation_id="o-0", provider="openai", message_id="o0"),
               row("o-1", message_id="o1"), row("o-2", message_id="o2")]
    later = []
    for i in range(4):
        sid = f"s-{i}"
        cont = '{"continues": {"session_id": "o-1", "how": "fork"}}'
        for j, attrs in enumerate([
                cont if i % 2 else '{"claude": {"resumed_from": "o-2"}}',
                # Two rules find s-3 -> o-1: one edge, `how` from the first rule's rows.
                '{"claude": {"resumed_from": "o-1"}}' if i == 3 else None,
                '{"continues": {"session_id": "gone", "how": "resume"}}' if i == 0 else None]):
            later.append(row(sid, message_id=f"{sid}-{j}", attributes=attrs))
    # A Codex child thread whose parent thread is an origin's.
    later.append(row("s-0", conversation_id="s-0-child", parent_thread_id="o-0",
                     provider="openai", message_id="child"))
    return origins, later


def _pairs(t: pa.Table) -> list[tuple[str, str]]:
    return list(zip(t.column("source").to_pylist(), t.column("target").to_pylist(),
                    strict=True))


@pytest.mark.parametrize("coded", [False, True], ids=["plain-text", "dictionary-text"])
def test_an_edge_to_a_node_of_other_rows_is_kept_unresolved(coded: bool) -> None:
    c = load_contract()
    origins, later = _rows()
    part = table(later)
    if coded:
        part = dictionary_coded(part)
    counted = run(c, part)
    whole = run(c, table(origins + later))
    kept = run(c, part, unresolved=True)
    lost = kept.unresolved["CONTINUES"]
    # Every edge the whole rows make from these rows, and the one to no session at all,
    # with its ids by the id recipe and the rows behind it.
    gone = node_id("Session", ["gone"])
    found = whole.graph.edges["CONTINUES"].table
    assert sorted(_pairs(lost)) == sorted([*_pairs(found), (node_id("Session", ["s-0"]), gone)])
    assert lost.column("how").to_pylist() == [
        dict(zip(_pairs(found), found.column("how").to_pylist(), strict=True)).get(p, "resume")
        for p in _pairs(lost)]
    assert sum(lost.column(UNRESOLVED_ROWS).to_pylist()) == \
        counted.dropped_edges["CONTINUES"]["missing_target"] > 0
    assert kept.dropped_edges["CONTINUES"]["missing_target"] == 0
    parent = kept.unresolved["PARENT_THREAD"]
    assert _pairs(parent) == _pairs(whole.graph.edges["PARENT_THREAD"].table)
    # The found edges and nodes are the plain projection's.
    for t, n in counted.graph.nodes.items():
        assert kept.graph.nodes[t].table.equals(n.table), t
    for t, e in counted.graph.edges.items():
        assert kept.graph.edges[t].table.equals(e.table), t


def _same_unresolved(a: Projection, b: Projection) -> None:
    assert a.unresolved.keys() == b.unresolved.keys()
    for t, lost in a.unresolved.items():
        assert lost.equals(b.unresolved[t]), t
    assert a.dropped_edges == b.dropped_edges


@pytest.mark.parametrize("granularity", ["thread", "message"])
@pytest.mark.parametrize("coded", [False, True], ids=["plain-text", "dictionary-text"])
def test_unresolved_edges_are_the_same_every_way(granularity: str, coded: bool) -> None:
    _origins, later = _rows()
    part = table(later)
    if coded:
        part = dictionary_coded(part)
    c = load_contract()
    base = run(c, part, granularity=granularity, unresolved=True)
    assert {"CONTINUES", "PARENT_THREAD"} <= base.unresolved.keys()
    for shortcuts in EDGE_WAYS[1:]:
        _same_unresolved(base, run(c, part, granularity=granularity, shortcuts=shortcuts,
                                   unresolved=True))
