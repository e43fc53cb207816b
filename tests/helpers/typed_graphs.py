"""Graphs for the export tests: every property type graphkit may hold, and
strings chosen to break writers (quotes, backslashes, backticks, newlines,
control characters, non-BMP unicode, markup)."""

from __future__ import annotations

import math
import struct
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pyarrow as pa

from graphkit.builds.run import graph_from_records
from graphkit.core.errors import QueryError
from graphkit.core.graph import EdgeTable, GraphTables, LineageVocabulary, NodeTable
from graphkit.core.ids import node_id
from graphkit.queries.lineage import lineage, session_tree, sessions
from tests.helpers.rows import row, spawned

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


FLOATS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, 1.7976931348623157e308, 0.1, None]


# Strings that break writers, from rows: separators, quotes, controls, bidi marks,
# emoji, ids equal after case folding or NFC, an empty string beside nulls, 1 MB.
STRINGS = ["tab\there", "nl\nx", "cr\r\nx", "q'\"`", "c,o;m|m", "back\\slash\\", "nul\x00x",
           "rtl\u200f\u202eabc", "emoji 😀", "", " ", "Straße", "STRASSE", "e\u0301", "\u00e9",
           "\u2028ls", "\ufeffbom", "\x7f del", "x" * 1_000_000]


def bits(v: Any) -> Any:
    if isinstance(v, float):
        return ("float", struct.pack(">d", v))
    if isinstance(v, list):
        return [bits(x) for x in v]
    if isinstance(v, dict):
        return {k: bits(x) for k, x in v.items()}
    return (type(v).__name__, v)


def assert_exact(a: GraphTables, b: GraphTables, *, types: bool = True) -> None:
    """Same types, columns (any order), column types and values, bit for bit."""
    assert sorted(a.nodes) == sorted(b.nodes) and sorted(a.edges) == sorted(b.edges)
    pairs = [(t, a.nodes[t].table, b.nodes[t].table, ["id"]) for t in a.nodes]
    pairs += [(t, a.edges[t].table, b.edges[t].table, ["source", "target"]) for t in a.edges]
    for t, x, y, key in pairs:
        assert sorted(x.column_names) == sorted(y.column_names), t
        x, y = (z.sort_by([(c, "ascending") for c in key]) for z in (x, y))
        for name in x.column_names:
            if types:
                assert x.schema.field(name).type == y.schema.field(name).type, (t, name)
            assert bits(x.column(name).to_pylist()) == bits(y.column(name).to_pylist()), (
                t, name)


def number_graph(*, wide: bool = True) -> GraphTables:
    """Floats NaN/±inf/-0.0/subnormal/max, int64 at ±2^63 and ±(2^53+1), uint64 past
    2^63 (``wide``), times at years 1 and 9999 with fractions, leap days, ns."""
    n = len(FLOATS)
    names = [f"n{i}" for i in range(n)]
    ids = [node_id("Num", [x]) for x in names]
    cols: dict[str, pa.Array] = {
        "id": pa.array(ids), "name": pa.array(names),
        "f64": pa.array(FLOATS, pa.float64()),
        "f32": pa.array(FLOATS, pa.float32()),
        "i64": pa.array([2**63 - 1, -2**63, 2**53 + 1, -(2**53 + 1), 0, 1, -1, 2**31, None],
                        pa.int64()),
        "when": pa.array([datetime(1, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
                          datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
                          datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC),
                          datetime(2024, 2, 29, tzinfo=UTC), datetime(2000, 2, 29, tzinfo=UTC),
                          *[datetime(2026, 1, 1, tzinfo=UTC)] * 3, None],
                         pa.timestamp("us", tz="UTC")),
        "ns": pa.array([-2**62, 2**63 - 1, 1, 0, 1_700_000_000_123_456_789, 5, 6, 7, None],
                       pa.timestamp("ns", tz="UTC")),
        "floats": pa.array([[math.nan], [-0.0], [math.inf, -math.inf], [], [1.5], [], [], [],
                            None], pa.list_(pa.float64())),
        "text": pa.array(["", " ", "nan", "NaN", "Infinity", "null", "0", "-0", None]),
    }
    if wide:
        cols["u64"] = pa.array([2**64 - 1, 2**63, 0, 1, 2**53 + 1, 5, 6, 7, None], pa.uint64())
    g = GraphTables("numbers", 1, 1, "thread")
    g.nodes["Num"] = NodeTable("Num", ("name",), pa.table(cols).sort_by("id"))
    edges = pa.table({"source": pa.array(ids[1:]), "target": pa.array(ids[:-1]),
                      "w": pa.array(FLOATS[:-1], pa.float64()),
                      "big": pa.array([2**63 - 1] * (n - 1), pa.int64())})
    g.edges["NEXT"] = EdgeTable("NEXT", "Num", "Num",
                                edges.sort_by([("source", "ascending"), ("target", "ascending")]))
    g.meta["indexes"] = {"Num": ["name"]}
    return g


def hostile_rows() -> list[dict[str, Any]]:
    """Sessions from rows holding every hostile string in ids, paths, models, branches,
    agent types and descriptions; token counts at ±(2^53 - 1); times at years 1 and
    9999 and a leap day; one session of a single row."""
    times = [datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
             datetime(1, 1, 1, tzinfo=UTC), datetime(2024, 2, 29, tzinfo=UTC)]
    out = []
    for i, s in enumerate(STRINGS):
        sid = f"s{i}-{s[:50]}"
        out.append(row(sid, message_id=f"m{i}", part_type="tool_call", tool_call_id=f"tu{i}",
                       tool_name="Task" if i % 2 else s or "T", cwd=s, model=s or None,
                       git_branch=s, input_tokens=(-1) ** i * (2**53 - 1), output_tokens=0))
        out.append(row(sid, agent_id=f"ag{i}{s[:30]}", is_sidechain=True, message_id=f"a{i}",
                       attributes=spawned(f"tu{i}", agent_type=s, description=s),
                       message_created_at=times[i % 3]))
    out.append(row("lonely", message_id="one"))
    return out
