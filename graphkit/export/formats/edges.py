"""``edges``: one row per edge with both ends' types and natural keys, for
pandas, DuckDB or a spreadsheet; Parquet or CSV by OUT's suffix (CSV on stdout).

Columns, for every edge type in one table:

- ``type``: the edge type; ``source_type`` / ``target_type``: the end nodes' types;
- ``source_key`` / ``target_key``: the end's natural key as text: the key
  value itself for a one-column key, a JSON array (``["s-1", null]``) for a
  composite one; empty if the end node is not in the graph;
- ``source_<col>`` / ``target_<col>``: each key column of the ends, typed (null
  where that end's type has no such column);
- ``source_id`` / ``target_id``: graphkit's node ids (to join the node tables);
- then the edge properties (an edge property whose name clashes with one of
  the columns above is written as ``edge_<name>``).

In CSV, times are ISO-8601 text (zoned ones in UTC, ``Z``) and lists/maps are
JSON text; Parquet keeps their types.
"""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from graphkit.core.graph import EDGE_SOURCE, EDGE_TARGET, NODE_ID, EdgeTable, GraphTables
from graphkit.core.text import FORMULA_STARTS
from graphkit.enrich.networkx_store import json_value, value_encoding
from graphkit.export.bulk import scalar_type, temporal_text
from graphkit.export.registry import ExportError, ExportReport, Format, Output, Progress

FIXED = ("type", "source_type", "source_key", "target_type", "target_key")


def _key_text(nodes: pa.Table, key: tuple[str, ...], index: pa.Array) -> pa.Array:
    """Each row's natural key as text (``index`` picks the node row; null: no node)."""
    if not key:
        return pa.nulls(len(index), pa.string())
    cols = [nodes.column(k).take(index) for k in key]
    if len(key) == 1:
        return cols[0].cast(pa.string()).combine_chunks()
    rows = zip(*(c.to_pylist() for c in cols), strict=True)
    found = index.is_valid().to_pylist()
    return pa.array([json.dumps([None if v is None else str(v) for v in r], ensure_ascii=False)
                     if ok else None for r, ok in zip(rows, found, strict=True)], pa.string())


def _end_columns(graph: GraphTables, node_type: str, ids: pa.ChunkedArray,
                 side: str) -> dict[str, pa.Array]:
    nt = graph.nodes.get(node_type)
    n = len(ids)
    if nt is None:
        return {f"{side}_key": pa.nulls(n, pa.string())}
    index = pc.index_in(ids, value_set=nt.table.column(NODE_ID))
    index = index.combine_chunks() if isinstance(index, pa.ChunkedArray) else index
    out: dict[str, pa.Array] = {f"{side}_key": _key_text(nt.table, nt.key, index)}
    for k in nt.key:
        out[f"{side}_{k}"] = nt.table.column(k).take(index).combine_chunks()
    return out


def _edge_rows(graph: GraphTables, etype: str, et: EdgeTable) -> pa.Table:
    n = et.table.num_rows
    src, dst = et.table.column(EDGE_SOURCE), et.table.column(EDGE_TARGET)
    s_cols = _end_columns(graph, et.source_type, src, "source")
    t_cols = _end_columns(graph, et.target_type, dst, "target")
    cols: dict[str, pa.Array | pa.ChunkedArray] = {
        "type": pa.array([etype] * n, pa.string()),
        "source_type": pa.array([et.source_type] * n, pa.string()),
        "source_key": s_cols.pop("source_key"),
        "target_type": pa.array([et.target_type] * n, pa.string()),
        "target_key": t_cols.pop("target_key"),
    }
    cols.update(s_cols)
    cols.update(t_cols)
    cols["source_id"], cols["target_id"] = src, dst
    for p in et.properties:
        name = p if p not in cols and not p.startswith(("source_", "target_")) else f"edge_{p}"
        cols[name] = et.table.column(p)
    return pa.table(cols)


def edge_table(graph: GraphTables) -> pa.Table:
    """Every edge of ``graph`` as one table (see the module docstring)."""
    tables = [_edge_rows(graph, t, et) for t, et in sorted(graph.edges.items())]
    if not tables:
        return pa.table({c: pa.array([], pa.string()) for c in FIXED})
    # Key and property columns differ by type: missing ones become nulls.
    table = pa.concat_tables(tables, promote_options="permissive")
    names = table.column_names
    ends = [n for n in names if n.startswith("source_") and n not in (*FIXED, "source_id")]
    ends += [n for n in names if n.startswith("target_") and n not in (*FIXED, "target_id")]
    first = [*FIXED, *ends, "source_id", "target_id"]
    return table.select(first + [n for n in names if n not in first])


def csv_ready(table: pa.Table) -> pa.Table:
    """``table`` with times as ISO-8601 text, nested values as JSON text, and text that
    starts like a spreadsheet formula (``=``, ``+``, ``-``, ``@``, tab, carriage return)
    behind a single quote, as OWASP's CSV-injection guidance says: ids, tool names and
    file paths are text a transcript chose."""
    for i, f in enumerate(table.schema):
        t = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
        kind = scalar_type(t)
        col = table.column(i)
        if kind in ("datetime", "localdatetime", "date", "localtime"):
            table = table.set_column(i, f.name, temporal_text(col, kind))
        elif kind is None and not pa.types.is_null(t):
            how = value_encoding(t)
            text = [None if v is None else (json.dumps(json_value(v, t), ensure_ascii=False)
                                            if how == "json" else str(json_value(v, t)))
                    for v in col.to_pylist()]
            table = table.set_column(i, f.name, pa.array(text, pa.string()))
        t = table.schema.field(i).type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            table = table.set_column(i, table.schema.field(i),
                                     formula_safe(table.column(i).cast(t)))
    return table


def formula_safe(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """:func:`~graphkit.core.text.csv_cell` of every value of a text column, in Arrow.

    >>> formula_safe(pa.chunked_array([["=1+1", "a", None, "@x"]])).to_pylist()
    ["'=1+1", 'a', None, "'@x"]
    """
    starts = "^[" + re.escape("".join(FORMULA_STARTS)) + "]"
    risky = pc.fill_null(pc.match_substring_regex(col, starts), False)
    if not pc.any(risky).as_py():
        return col
    quoted = pc.binary_join_element_wise(pa.scalar("'", col.type), col, pa.scalar("", col.type))
    return pc.if_else(risky, quoted, col)


def write(graph: GraphTables, out: Output, progress: Progress) -> ExportReport:
    """Write every edge of ``graph`` as a Parquet or CSV table to ``out``."""
    if out.suffix not in (".parquet", ".csv", ""):
        raise ExportError(f"the edges format writes .parquet or .csv, not {out.suffix!r}",
                          path=out.name, hint="end OUT in .parquet or .csv, or give - for CSV")
    progress(f"joining {sum(graph.edge_counts().values())} edges to their ends")
    table = edge_table(graph)
    progress(f"writing {table.num_rows} rows")
    with out.open_binary() as fh:
        if out.suffix == ".parquet":
            pq.write_table(table, fh)
        else:
            pacsv.write_csv(csv_ready(table), fh)
    return ExportReport("edges", out.name, {}, graph.edge_counts())


FORMAT = Format("edges", "one row per edge with both ends' types and keys "
                         "(.parquet or .csv; - for CSV on stdout)", write)
