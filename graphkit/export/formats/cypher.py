"""``cypher``: a Cypher script that recreates the graph, one statement per line.

Run it with ``cypher-shell -f graph.cypher`` (or statement by statement
through a driver, splitting on newlines): first the uniqueness constraints and
indexes a ``graphkit load`` makes, then ``UNWIND [...] AS row MERGE ...``
batches. It MERGEs on ``id``, so running it twice changes nothing.

A script cannot use parameters, so every value is a Cypher literal: strings
single-quoted with ``\\\\``, ``\\'``, ``\\n``, ``\\r``, ``\\t`` and ``\\uXXXX``
escapes for every other control or line-separator character (so no
statement spans two lines); times as ``datetime('…Z')`` (in UTC),
``localdatetime``, ``date``, ``localtime``; lists as lists. Labels, types and
property names are checked and backtick-quoted as in every graphkit query.
What Neo4j cannot store (structs, maps, nested lists, binary, decimals) is
written as text, as in the ``neo4j-csv`` folder.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Iterator
from typing import Any

from graphkit.core.graph import GraphTables
from graphkit.core.progress import as_progress
from graphkit.enrich.neo4j import cypher
from graphkit.export.bulk import (
    TEMPORAL,
    BulkTable,
    Column,
    map_list_values,
    plan_import,
    schema_statements,
    temporal_text,
)
from graphkit.export.registry import ExportReport, Format, Output, Progress

BATCH = 500  # rows per UNWIND statement: big enough to be quick, small to parse

_ESCAPES = {ord("\\"): "\\\\", ord("'"): "\\'", ord("\n"): "\\n", ord("\r"): "\\r",
            ord("\t"): "\\t"}
# Every other C0/C1 control and the characters str.splitlines() breaks on.
_ESCAPES.update({c: f"\\u{c:04x}" for c in [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029]
                 if c not in _ESCAPES})


def string_literal(value: str) -> str:
    r"""``value`` as a single-quoted Cypher string literal on one line.

    >>> print(string_literal("it's a \\ and a\nnewline"))
    'it\'s a \\ and a\nnewline'
    """
    return "'" + value.translate(_ESCAPES) + "'"


def float_literal(value: float) -> str:
    """A float literal Cypher reads back as the same double.

    >>> float_literal(1e20), float_literal(0.1), float_literal(float("nan"))
    ('1.0E20', '0.1', '(0.0/0.0)')
    """
    if math.isnan(value):
        return "(0.0/0.0)"
    if math.isinf(value):
        return "(1.0/0.0)" if value > 0 else "(-1.0/0.0)"
    text = repr(value)
    if "e" in text:
        mantissa, exp = text.split("e")
        mantissa = mantissa if "." in mantissa else mantissa + ".0"
        return f"{mantissa}E{int(exp)}"
    return text


def _scalar(kind: str) -> Callable[[Any], str]:
    if kind == "string":
        return string_literal
    if kind in ("int", "long"):
        return str
    if kind in ("float", "double"):
        return float_literal
    if kind == "boolean":
        return lambda v: "true" if v else "false"
    if kind in TEMPORAL:  # values already ISO-8601 text (see _literals)
        return lambda v: f"{kind}({string_literal(v)})"
    raise AssertionError(f"no literal for {kind}")  # bulk.scalar_type names no other


def _literals(col: Column) -> list[str | None]:
    """Every value of ``col`` as a Cypher literal (None for null)."""
    values = col.values
    if col.kind in TEMPORAL:  # ISO-8601 text first, vectorized
        values = (map_list_values(values, lambda v: temporal_text(v, col.kind).combine_chunks())
                  if col.is_list else temporal_text(values, col.kind))
    lit = _scalar(col.kind)
    if col.is_list:
        return [None if v is None else "[" + ", ".join(lit(x) for x in v) + "]"
                for v in values.to_pylist()]
    return [None if v is None else lit(v) for v in values.to_pylist()]


def _maps(cols: list[Column]) -> list[str]:
    """One map literal per row, of the non-null properties."""
    keys = [cypher.quote_name(c.prop or "", "property") + ": " for c in cols]
    lits = [_literals(c) for c in cols]
    rows = len(cols[0].values) if cols else 0
    return ["{" + ", ".join(k + v for k, v in zip(keys, (lit[i] for lit in lits), strict=True)
                            if v is not None) + "}"
            for i in range(rows)]


def _node_statements(t: BulkTable) -> Iterator[str]:
    label = cypher.quote_name(t.name)
    maps = _maps(t.columns)  # the id column included: SET n += row keeps it
    for i in range(0, len(maps), BATCH):
        yield (f"UNWIND [{', '.join(maps[i:i + BATCH])}] AS row "
               f"MERGE (n:{label} {{id: row.id}}) SET n += row;")


def _relationship_statements(t: BulkTable, ends: tuple[str, str]) -> Iterator[str]:
    start, end, props = t.columns[0], t.columns[1], t.columns[3:]
    src = [string_literal(v) for v in start.values.to_pylist()]
    dst = [string_literal(v) for v in end.values.to_pylist()]
    maps = _maps(props) if props else ["{}"] * len(src)
    rows = [f"[{a}, {b}, {m}]" for a, b, m in zip(src, dst, maps, strict=True)]
    a, b = cypher.quote_name(ends[0]), cypher.quote_name(ends[1])
    rel = cypher.quote_name(t.name, "relationship type")
    for i in range(0, len(rows), BATCH):
        yield (f"UNWIND [{', '.join(rows[i:i + BATCH])}] AS r "
               f"MATCH (a:{a} {{id: r[0]}}) MATCH (b:{b} {{id: r[1]}}) "
               f"MERGE (a)-[e:{rel}]->(b) SET e += r[2];")


def write(graph: GraphTables, out: Output, progress: Progress) -> ExportReport:
    """Write ``graph`` as a Cypher script to ``out`` (a file or stdout)."""
    plan = plan_import(graph)
    report = ExportReport("cypher", out.name, graph.node_counts(),
                          {t.name: t.rows for t in plan.tables if t.folder == "relationships"})
    report.notes = plan.notes + [f"encoded as text: {k} ({v})"
                                 for k, v in sorted(plan.encoded.items())]
    with out.open_binary() as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8", newline="\n")
        text.write(f"// {graph.contract_name} v{graph.contract_version}: "
                   f"{sum(report.nodes.values())} nodes, {sum(report.edges.values())} "
                   "relationships. Written by `graphkit export --format cypher`;\n"
                   "// run with `cypher-shell -f FILE`: one statement per line.\n")
        for s in schema_statements(graph):
            text.write(s + ";\n")
        text.write("CALL db.awaitIndexes(300);\n")
        task = as_progress(progress).start("writing cypher", unit="rows",
                                           total=sum(t.rows for t in plan.tables))
        for i, t in enumerate(plan.tables, 1):
            progress(f"writing {t.folder} {t.name} ({i}/{len(plan.tables)}, {t.rows} rows)")
            if t.folder == "nodes":
                statements = _node_statements(t)
            else:
                et = graph.edges[t.name]
                statements = _relationship_statements(t, (et.source_type, et.target_type))
            for s in statements:
                text.write(s + "\n")
            task.advance(t.rows)
        task.done()
        text.flush()
        text.detach()
    return report


FORMAT = Format("cypher", "a Cypher script that recreates the graph (one file; - for stdout)",
                write)
