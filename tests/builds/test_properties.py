"""Property-based tests of the engine (hypothesis): for generated sessions of
Claude main loops with nested subagents and Codex threads with child threads,

* one Session per distinct usable ``session_id`` (null or blank is "no
  session": those rows are rejected, never a Session);
* every Thread is held by the Session of its own ``session_id``;
* every generated parent link becomes exactly one PARENT_THREAD edge, within
  the session, and the lineage has no cycle;
* node and edge ids are the same whatever the row order and however often a
  row is repeated;
* snapshot → NetworkX → snapshot gives back the same tables.

Derandomized: CI runs the same examples every time.
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import networkx as nx
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from graphkit.builds.run import graph_from_records
from graphkit.contract.loader import load_contract
from graphkit.core.graph import GraphTables
from graphkit.enrich.networkx_store import from_networkx, to_networkx
from graphkit.snapshot import read_snapshot, write_snapshot
from tests.helpers.cli import graphkit
from tests.helpers.rows import spawned

CONTRACT = load_contract()
T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
PROPS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                 phases=[Phase.explicit, Phase.generate, Phase.shrink],
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Real-looking ids, and the ways a writer spells "no session".
SESSION_IDS = st.sampled_from(["5b0e7a52-1c7d-4c55-9a43-0f4a0c2d7a01", "sess-b", "sess-c",
                               "s", " padded ", ""," ", "\t\n", "\u3000", None])


@dataclass
class Spec:
    """One generated session: its id, its flavour and its threads' parents."""

    session_id: str | None
    codex: bool
    parents: list[int]  # thread i>0 has parent parents[i-1] < i
    messages: list[int]  # messages per thread


@st.composite
def specs(draw: st.DrawFn) -> list[Spec]:
    out = []
    for _ in range(draw(st.integers(1, 4))):
        n = draw(st.integers(1, 5))
        out.append(Spec(
            session_id=draw(SESSION_IDS),
            codex=draw(st.booleans()),
            parents=[draw(st.integers(0, i - 1)) for i in range(1, n)],
            messages=[draw(st.integers(1, 3)) for _ in range(n)],
        ))
    return out


@dataclass
class Generated:
    rows: list[dict[str, Any]]
    # (session_id, thread_id) of every thread in a usable session, and its parent's
    parent_of: dict[tuple[str, str], tuple[str, str] | None] = field(default_factory=dict)
    usable: set[str] = field(default_factory=set)


def usable(session_id: str | None) -> bool:
    return session_id is not None and session_id.strip() != ""


def rows_of(specs: list[Spec]) -> Generated:
    """Rows shaped like the real writers': Claude subagents name the tool call
    that spawned them, Codex children name their parent thread."""
    out = Generated([])
    clock = iter(range(1, 10**6))
    for s_idx, spec in enumerate(specs):
        threads = []  # per thread: (conversation_id, agent_id, thread_id)
        for t_idx in range(len(spec.messages)):
            if spec.codex:
                conv = f"th-{s_idx}-{t_idx}"
                threads.append((conv, None, conv))
            else:
                agent = None if t_idx == 0 else f"ag-{s_idx}-{t_idx}"
                threads.append((None, agent, agent or spec.session_id))
        for t_idx, n_messages in enumerate(spec.messages):
            conv, agent, thread_id = threads[t_idx]
            parent = spec.parents[t_idx - 1] if t_idx else None
            for m in range(n_messages):
                n = next(clock)
                mid = f"m-{s_idx}-{t_idx}-{m}"
                row: dict[str, Any] = {
                    "session_id": spec.session_id, "conversation_id": conv, "agent_id": agent,
                    "message_id": mid, "part_id": f"{mid}:0", "message_index": n,
                    "message_created_at": T0 + timedelta(seconds=n), "schema_version": 7,
                    "part_type": "text", "provider": "openai" if spec.codex else "anthropic",
                }
                if parent is not None and spec.codex:
                    row["parent_thread_id"] = threads[parent][0]
                if parent is not None and not spec.codex:
                    row["attributes"] = spawned(f"call-{s_idx}-{parent}-{t_idx}")
                out.rows.append(row)
            # The thread's spawning calls: one tool_call part per child it spawned.
            for child in range(len(spec.messages)):
                if child and spec.parents[child - 1] == t_idx and not spec.codex:
                    n = next(clock)
                    mid = f"call-msg-{s_idx}-{t_idx}-{child}"
                    out.rows.append({
                        "session_id": spec.session_id, "agent_id": agent, "message_id": mid,
                        "part_id": f"{mid}:0", "message_index": n, "schema_version": 7,
                        "message_created_at": T0 + timedelta(seconds=n),
                        "part_type": "tool_call", "tool_name": "Task",
                        "tool_call_id": f"call-{s_idx}-{t_idx}-{child}",
                        "provider": "anthropic"})
            if usable(spec.session_id):
                sid = str(spec.session_id)
                out.usable.add(sid)
                assert thread_id is not None
                out.parent_of[(sid, thread_id)] = (
                    None if parent is None else (sid, str(threads[parent][2])))
    return out


def build(rows: list[dict[str, Any]], granularity: str = "thread") -> GraphTables:
    return graph_from_records(rows, contract=CONTRACT, granularity=granularity)


def column(graph: GraphTables, node_type: str, name: str) -> list[Any]:
    nt = graph.nodes.get(node_type)
    return [] if nt is None else nt.table.column(name).to_pylist()


def edges(graph: GraphTables, edge_type: str) -> list[tuple[str, str]]:
    et = graph.edges.get(edge_type)
    if et is None:
        return []
    return list(zip(et.table.column("source").to_pylist(), et.table.column("target").to_pylist(),
                    strict=True))


@pytest.mark.slow
@PROPS
@given(specs())
def test_one_session_per_usable_session_id(generated: list[Spec]) -> None:
    g = rows_of(generated)
    graph = build(g.rows)
    sessions = column(graph, "Session", "session_id")
    assert sorted(sessions) == sorted(g.usable)  # each once; blank and null never
    assert all(usable(s) for s in column(graph, "Thread", "session_id"))


@pytest.mark.slow
@PROPS
@given(specs())
def test_every_thread_reaches_its_session_and_lineage_is_exact(generated: list[Spec]) -> None:
    g = rows_of(generated)
    graph = build(g.rows)
    session_of_node = dict(zip(column(graph, "Session", "id"),
                               column(graph, "Session", "session_id"), strict=True))
    thread = {i: (s, t) for i, s, t in zip(column(graph, "Thread", "id"),
                                           column(graph, "Thread", "session_id"),
                                           column(graph, "Thread", "thread_id"), strict=True)}
    held = {}
    for s, t in edges(graph, "HAS_THREAD"):
        assert t not in held, "a thread held by two sessions"
        held[t] = session_of_node[s]
    assert {t: held.get(t) for t in thread} == {t: st_[0] for t, st_ in thread.items()}
    assert set(thread.values()) == set(g.parent_of)  # one Thread per generated thread

    parent_edges = edges(graph, "PARENT_THREAD")
    got = {thread[c]: thread[p] for c, p in parent_edges}
    assert len(got) == len(parent_edges), "a thread with two parents"
    want = {c: p for c, p in g.parent_of.items() if p is not None}
    assert got == want
    lineage = nx.DiGraph(parent_edges)
    assert nx.is_directed_acyclic_graph(lineage)


def shuffled_with_repeats(rows: list[dict[str, Any]], seed: int, repeats: int) -> list[Any]:
    rnd = random.Random(seed)
    out = [dict(r) for r in rows] + [dict(rnd.choice(rows)) for _ in range(repeats)]
    rnd.shuffle(out)
    return out


def sorted_tables(graph: GraphTables) -> dict[str, pa.Table]:
    out = {}
    for t, nt in graph.nodes.items():
        out[f"node {t}"] = nt.table.sort_by("id")
    for t, et in graph.edges.items():
        out[f"edge {t}"] = et.table.sort_by([("source", "ascending"), ("target", "ascending")])
    return out


@pytest.mark.slow
@PROPS
@given(specs(), st.integers(0, 2**32 - 1), st.integers(0, 30),
       st.sampled_from(["thread", "message"]))
def test_ids_and_values_stable_under_order_and_duplication(
    generated: list[Spec], seed: int, repeats: int, granularity: str
) -> None:
    g = rows_of(generated)
    a = sorted_tables(build(g.rows, granularity))
    b = sorted_tables(build(shuffled_with_repeats(g.rows, seed, repeats), granularity))
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].equals(b[name]), name


@pytest.mark.slow
@settings(PROPS, max_examples=25)
@given(specs(), st.sampled_from(["thread", "message"]))
def test_snapshot_networkx_snapshot_is_lossless(generated: list[Spec], granularity: str) -> None:
    graph = build(rows_of(generated).rows, granularity)
    with tempfile.TemporaryDirectory() as tmp:
        write_snapshot(graph, Path(tmp) / "a")
        back = read_snapshot(Path(tmp) / "a")
        again = from_networkx(to_networkx(back))
        write_snapshot(again, Path(tmp) / "b")
        final = read_snapshot(Path(tmp) / "b")
    for got in (back, again, final):
        assert set(got.nodes) == set(graph.nodes) and set(got.edges) == set(graph.edges)
        for t, nt in graph.nodes.items():
            assert got.nodes[t].key == nt.key
            assert got.nodes[t].table.equals(nt.table, check_metadata=False), t
        for t, et in graph.edges.items():
            assert (got.edges[t].source_type, got.edges[t].target_type) == (
                et.source_type, et.target_type)
            assert got.edges[t].table.equals(et.table, check_metadata=False), t


def test_blank_session_ids_are_rejected_and_checked(tmp_path: Path) -> None:
    """The examples behind the property, through the CLI: build rejects them
    with a reason, `check` flags them."""
    import json

    from tests.helpers.rows import row, write_parquet

    rows = [row(sid, message_id=f"m{i}") for i, sid in enumerate(["", "  ", "\t", "real"])]
    src = write_parquet(rows, tmp_path / "rows.parquet")
    built = graphkit("build", src, "--snapshot", tmp_path / "s", "--json")
    assert built.returncode == 0, built.output
    summary = json.loads(built.output)
    assert summary["nodes"]["Session"] == 1 and summary["rows_rejected"] == 3
    rejects = (tmp_path / "s.rejects.jsonl").read_text().splitlines()
    assert len(rejects) == 3 and all("blank" in json.loads(r)["reason"] for r in rejects)
    checked = graphkit("check", src, "--json")
    assert checked.returncode == 1
    (finding,) = [f for f in json.loads(checked.output) if f["check"] == "null-session"]
    assert finding["count"] == 3
