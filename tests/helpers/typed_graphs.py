"""Graphs for the export tests: every property type graphkit may hold, and
strings chosen to break writers (quotes, backslashes, backticks, newlines,
control characters, non-BMP unicode, markup)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pyarrow as pa

from graphkit.core.errors import QueryError
from graphkit.core.graph import EdgeTable, GraphTables, LineageVocabulary, NodeTable
from graphkit.core.ids import node_id
from graphkit.queries.lineage import lineage, session_tree, sessions

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)

HOSTILE = [
    "it's \"quoted\"",
    "back\\slash \\' \\\" \\n not a newline",
    "`backtick` ``double``",
    "line one\nline two\r\nline three\ttab",
    "emoji 😀 and é, ß, 中文, \u2028 separator",
    "<img src=x onerror=alert(1)> & </graph>",
    "'); MATCH (n) DETACH DELETE n; //",
    "semi;colon|pipe,comma",
    "",
    " leading and trailing ",
]
# Characters XML 1.0 cannot hold (GraphML/GEXF must still round-trip them).
CONTROL = "nul\x00 bell\x07 esc\x1b end"


def _ids(ntype: str, keys: list[tuple[Any, ...]]) -> list[str]:
    return [node_id(ntype, list(key)) for key in keys]


def typed_graph(*, neo4j_safe: bool = False) -> GraphTables:
    """Two node types and two edge types over every property type.

    ``neo4j_safe`` leaves out what Neo4j cannot store (structs, NUL), for the
    tests that compare with a MERGE load into Neo4j.
    """
    names = [*HOSTILE, "plain", None if neo4j_safe else CONTROL]
    names = [n for n in names if n is not None]
    n = len(names)
    doc_ids = _ids("Doc", [(x,) for x in names])
    cols: dict[str, pa.Array] = {
        "id": pa.array(doc_ids, pa.string()),
        "name": pa.array(names, pa.string()),
        "title": pa.array([None if i % 3 == 0 else f"title {names[i]}" for i in range(n)],
                          pa.string()),
        "tags": pa.array([[names[i], "x;y", "z"] if i % 2 else None for i in range(n)],
                         pa.list_(pa.string())),
        "scores": pa.array([[i, -i, 2**40] for i in range(n)], pa.list_(pa.int64())),
        "when": pa.array([T0 + timedelta(seconds=i, microseconds=i * 7) for i in range(n)],
                         pa.timestamp("us", tz="UTC")),
        "day": pa.array([date(2026, 1, 1) + timedelta(days=i) for i in range(n)], pa.date32()),
        "local": pa.array([datetime(2026, 2, 3, 4, 5, 6, 789000) if i % 2 else None
                           for i in range(n)], pa.timestamp("ms")),
        "n": pa.array(list(range(n)), pa.int32()),
        "big": pa.array([2**53 + i for i in range(n)], pa.int64()),
        "ratio": pa.array([i / 3 for i in range(n)], pa.float64()),
        "flag": pa.array([i % 2 == 0 if i % 5 else None for i in range(n)], pa.bool_()),
    }
    if not neo4j_safe:
        cols["meta"] = pa.array([{"a": i, "b": names[i]} for i in range(n)],
                                pa.struct([("a", pa.int64()), ("b", pa.string())]))
    docs = pa.table(cols)
    people = [("Ada", "Lovelace"), ("Grace", None), ("O'Brien", "`x`")]
    person_ids = _ids("Person", people)
    persons = pa.table({
        "id": pa.array(person_ids, pa.string()),
        "first": pa.array([p[0] for p in people], pa.string()),
        "last": pa.array([p[1] for p in people], pa.string()),
    })
    wrote = pa.table({
        "source": pa.array([person_ids[i % 3] for i in range(n)], pa.string()),
        "target": pa.array(doc_ids, pa.string()),
        "since": pa.array([T0 - timedelta(days=i) for i in range(n)],
                          pa.timestamp("us", tz="UTC")),
        "weight": pa.array([float(i) for i in range(n)], pa.float64()),
        "label": pa.array([names[i] for i in range(n)], pa.string()),
    })
    cites = pa.table({
        "source": pa.array(doc_ids[1:], pa.string()),
        "target": pa.array(doc_ids[:-1], pa.string()),
    })
    g = GraphTables("typed-test", 1, 1, "thread")
    g.nodes["Doc"] = NodeTable("Doc", ("name",), _sorted(docs, ["id"]))
    g.nodes["Person"] = NodeTable("Person", ("first", "last"), _sorted(persons, ["id"]))
    g.edges["WROTE"] = EdgeTable("WROTE", "Person", "Doc", _sorted(wrote, ["source", "target"]))
    g.edges["CITES"] = EdgeTable("CITES", "Doc", "Doc", _sorted(cites, ["source", "target"]))
    g.meta["indexes"] = {"Doc": ["name"], "Person": []}
    return g


def lineage_graph() -> GraphTables:
    """The default contract's graph of a few real-shaped sessions (Claude
    subagents nested two deep, a Codex child thread), with hostile strings in
    agent descriptions."""
    from graphkit.builds.run import graph_from_records
    from tests.helpers.rows import identity_cases, row, spawned

    rows = identity_cases()
    sess = "c1a0de00-0000-4000-8000-0000000000ff"
    rows += [
        row(sess, message_id="hm1", part_type="tool_call", tool_name="Task",
            tool_call_id="toolu_H", cwd="/tmp/it's \"here\""),
        row(sess, agent_id="agent'H`1", is_sidechain=True, message_id="hm2",
            attributes=spawned("toolu_H", agent_type="Explore",
                               description=HOSTILE[1] + HOSTILE[3] + HOSTILE[4])),
    ]
    return graph_from_records(rows)


def sorted_graph(g: GraphTables) -> GraphTables:
    """``g`` with every table sorted by id (nodes) or ends (edges), for comparing."""
    out = GraphTables(g.contract_name, g.contract_version, g.id_recipe, g.granularity,
                      lineage=g.lineage or LineageVocabulary())
    for t, nt in g.nodes.items():
        out.nodes[t] = NodeTable(t, nt.key, _sorted(nt.table, ["id"]))
    for t, et in g.edges.items():
        out.edges[t] = EdgeTable(t, et.source_type, et.target_type,
                                 _sorted(et.table, ["source", "target"]))
    return out


def _sorted(table: pa.Table, by: list[str]) -> pa.Table:
    return table.sort_by([(c, "ascending") for c in by])


def assert_same_graph(a: GraphTables, b: GraphTables, *, exact_types: bool = True) -> None:
    """Same node and edge types, keys, ends, columns, types and values (any row order)."""
    a, b = sorted_graph(a), sorted_graph(b)
    assert sorted(a.nodes) == sorted(b.nodes)
    assert sorted(a.edges) == sorted(b.edges)
    for t in a.nodes:
        assert a.nodes[t].key == b.nodes[t].key, t
        _same_table(a.nodes[t].table, b.nodes[t].table, f"node {t}", exact_types)
    for t in a.edges:
        ea, eb = a.edges[t], b.edges[t]
        assert (ea.source_type, ea.target_type) == (eb.source_type, eb.target_type), t
        _same_table(ea.table, eb.table, f"edge {t}", exact_types)


def _same_table(x: pa.Table, y: pa.Table, what: str, exact_types: bool) -> None:
    assert x.column_names == y.column_names, what
    if exact_types:
        assert x.schema.remove_metadata().equals(y.schema.remove_metadata()), (
            what, x.schema, y.schema)
    for name in x.column_names:
        assert x.column(name).to_pylist() == y.column(name).to_pylist(), (what, name)


def answers(reader: Any, graph: GraphTables) -> dict[str, Any]:
    """Every lineage answer graphkit gives about ``graph``'s threads and sessions."""
    thread = graph.nodes["Thread"].table
    ids = sorted({*thread.column("thread_id").to_pylist(),
                  *(a for a in thread.column("agent_id").to_pylist() if a)})
    session_ids = sorted(graph.nodes["Session"].table.column("session_id").to_pylist())
    out: dict[str, Any] = {"lineage": [], "errors": []}
    for i in ids:
        try:
            out["lineage"].append(lineage(reader, i).to_json())
        except QueryError as exc:  # an id two threads share is an answer too
            out["errors"].append(str(exc))
    out["trees"] = [session_tree(reader, s).to_json() for s in session_ids]
    out["sessions"] = [s.to_json() for s in sessions(reader)]
    return out
