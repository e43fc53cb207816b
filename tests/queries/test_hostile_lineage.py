"""Hostile lineage questions: ids that
are not UTF-8, parent links that loop, chains thousands deep. Every store gives the
same answer or the same one-line error; the Neo4j side is in
tests/e2e/neo4j/test_hostile.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphkit.builds.run import build
from graphkit.cli.query import _tree_lines
from graphkit.core.graph import GraphTables
from graphkit.enrich.base import LineageReader, ThreadInfo
from graphkit.enrich.networkx_store import NetworkXStore
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.queries.lineage import lineage, session_tree
from graphkit.queries.usage import session_usage
from graphkit.snapshot import write_snapshot
from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.rows import identity_cases, loop_rows, row, table


class Reversed:
    """A store listing a session's threads in the opposite order (Neo4j sorts
    them by id; the Arrow and NetworkX stores keep the graph's order)."""

    def __init__(self, inner: NetworkXStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def session_threads(self, session_id: str) -> list[ThreadInfo]:
        return list(reversed(self.inner.session_threads(session_id)))


def test_a_sessions_threads_in_a_parent_loop_come_in_one_order_whatever_the_store() -> None:
    # Was: the depth of a thread in a loop was where the walk entered the loop,
    # in the store's own order of the session's threads, so `graphkit lineage CY`
    # listed c1, c2, c3 in one order from a snapshot and in another from Neo4j.
    store = NetworkXStore()
    store.load(build(table(loop_rows()), fingerprints=False).graph)
    reader: LineageReader = store
    answers = [lineage(r, "CY").to_json() for r in (reader, Reversed(store))]
    assert answers[0] == answers[1]
    assert sorted(d["id"] for d in answers[0]["descendants"]) == ["c1", "c2", "c3", "c4",
                                                                 "self"]


def test_a_session_of_many_parent_loops_hangs_each_loop_once_under_it() -> None:
    # Was: each loop was cut by searching every thread's children for it, by ==
    # (8,000 two-thread loops: 75 CPU-s for `graphkit tree`; bench/shapes.py's
    # "parent-loops" measures the growth). Each loop now leaves its known parent.
    n = 300
    rows = [row("LP", conversation_id="LP", message_id="root")]
    for k in range(n):
        a, b = f"a{k:03d}", f"b{k:03d}"
        rows += [row("LP", conversation_id=a, parent_thread_id=b, message_id=f"m{a}"),
                 row("LP", conversation_id=b, parent_thread_id=a, message_id=f"m{b}")]
    store = NetworkXStore()
    store.load(build(table(rows), fingerprints=False).graph)
    tree = session_tree(store, "LP")
    heads = [c for c in tree.children if c.cycle]
    assert [h.ref.id for h in heads] == [f"a{k:03d}" for k in range(n)]
    assert all([c.ref.id for c in h.children] == [f"b{h.ref.id[1:]}"] and
               not h.children[0].children for h in heads)
    assert [c.ref.id for c in tree.children if not c.cycle] == ["LP"]


def _deep(n: int) -> GraphTables:
    rows = [row("DEEP", conversation_id="d0", message_id="dm0")]
    rows += [row("DEEP", conversation_id=f"d{i}", parent_thread_id=f"d{i - 1}",
                 message_id=f"dm{i}") for i in range(1, n)]
    return build(table(rows), fingerprints=False).graph


@pytest.mark.slow
def test_a_session_tree_ten_thousand_threads_deep_is_drawn(tmp_path: Path) -> None:
    # Was: RecursionError in the tree's sort (every store), its JSON, its drawing and
    # `graphkit usage`.
    n = 10_000
    graph = _deep(n)
    write_snapshot(graph, tmp_path / "s")
    store = NetworkXStore()
    store.load(graph)
    for reader in (store, SnapshotReader(tmp_path / "s")):
        tree = session_tree(reader, "DEEP")
        node, depth = tree.to_json(), 0
        while node["children"]:
            (node,) = node["children"]
            depth += 1
        assert (depth, node["id"]) == (n, f"d{n - 1}")  # the session, then d0, d1…
        lines = _tree_lines(tree)
        assert len(lines) == n + 1 and lines[-1].strip().startswith(
            f"└── depth {n}: d{n - 1} ")
        (usage,) = session_usage(reader, ["DEEP"])  # was a RecursionError too
        assert [t.depth for t in usage.threads] == list(range(n))
    assert [r.id for r in lineage(store, f"d{n - 1}").ancestors][:2] == [f"d{n - 2}",
                                                                          f"d{n - 3}"]


@pytest.mark.parametrize("command", ["lineage", "tree", "usage", "files"])
def test_an_id_that_is_not_utf8_names_nothing(tmp_path: Path, command: str) -> None:
    # Was: a TypeError traceback from Arrow (the bytes reach Python as lone
    # surrogates, which no Arrow string can hold); the other stores said "no such id".
    snap = tmp_path / "snap"
    write_snapshot(build(table(identity_cases()), fingerprints=False).graph, snap)
    proc = graphkit(command, b"a\xffb".decode("utf-8", "surrogateescape"), "--snapshot", snap)
    line = one_line_error(proc, "has the id 'a\\udcffb'")
    assert line.startswith("Error: no ")
    reader = SnapshotReader(snap)
    assert reader.resolve("\udcff") == [] and reader.session_threads("\ud800") == []
    assert reader.node_rows("Thread", ["thread_id"], where=("id", ["\udcff"])) == []
    assert reader.edge_rows("HAS_THREAD", "Session", "Thread", [], sources=["\udcff"]) == []


@pytest.mark.slow
def test_the_drawing_of_a_ten_thousand_deep_tree_is_bounded_and_json_complete(
        tmp_path: Path) -> None:
    # Was: each line indented by its depth, 4 characters a level: 200 MB
    # of blanks for 10,000 levels (and as much again on a terminal). Now indentation
    # stops at DRAWN_LEVELS and a deeper node says its depth; --json and --csv are whole.
    import io

    from rich.console import Console

    from graphkit.cli.query import DRAWN_LEVELS, _tree_lines

    n = 10_000
    write_snapshot(_deep(n), tmp_path / "s")
    proc = graphkit("tree", "DEEP", "--snapshot", tmp_path / "s")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == n + 1 and len(proc.stdout) < 2_000_000
    indent = 4 * DRAWN_LEVELS
    assert max(len(line) for line in lines) <= indent + len("└── depth 10000: ") + 40
    assert lines[DRAWN_LEVELS].startswith(" " * 4 * (DRAWN_LEVELS - 1) + "└── d15 ")
    assert lines[-1] == " " * indent + f"└── depth {n}: d{n - 1} (child-thread, 1 messages)"
    records = graphkit("tree", "DEEP", "--snapshot", tmp_path / "s", "--json")
    depths = [json.loads(line)["depth"] for line in records.stdout.splitlines()]
    assert depths == list(range(n + 1))
    # The terminal drawing (rich markup) is the same lines, never wrapped or cut.
    out = io.StringIO()
    console = Console(file=out, width=80, highlight=False, color_system=None)
    for line in _tree_lines(session_tree(SnapshotReader(tmp_path / "s"), "DEEP"),
                            markup=True)[:40]:
        console.print(line, overflow="ignore", crop=False, soft_wrap=True)
    assert out.getvalue().splitlines() == lines[:40]
