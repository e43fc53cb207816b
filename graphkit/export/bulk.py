"""Folders for Neo4j's offline importer, ``neo4j-admin database import full``
(the ``neo4j-csv`` and ``neo4j-parquet`` formats share all but the file writer).

::

    OUT/
      README.md                  the exact import command, and what to run after
      schema.cypher              constraints and indexes (run once the server is up)
      nodes/<Label>.<ext>        id:ID(<Label>), key and property columns
      relationships/<TYPE>.<ext> :START_ID(<Source>), :END_ID(<Target>), :TYPE, properties
      skipped/<TYPE>.csv         relationships whose end node is not in the graph (if any)
      graphkit-export.json       counts and notes

Each label has its own ID space, so a relationship names the label of each
end. Header types follow the Arrow types: ``string``, ``int`` (8–32-bit),
``long``, ``float``, ``double``, ``boolean``, ``datetime`` (zoned, written in
UTC), ``localdatetime``, ``date``, ``localtime``, and ``<type>[]`` for lists of
those. What Neo4j cannot store as a property (structs, maps, nested lists,
binary, decimals) is written as text and listed in the README.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from graphkit.core.errors import StoreError
from graphkit.core.graph import EDGE_SOURCE, EDGE_TARGET, NODE_ID, EdgeTable, GraphTables
from graphkit.core.progress import as_progress
from graphkit.enrich.neo4j import cypher
from graphkit.enrich.neo4j.convert import check_indexed
from graphkit.enrich.neo4j.store import lookup_indexes
from graphkit.enrich.networkx_store import BASE64, JSON, json_value, value_encoding
from graphkit.export.registry import ExportError, ExportReport, Output, Progress, write_marker

# Arrow type -> neo4j-admin header type, for the scalar types Neo4j stores natively.
_SCALARS: list[tuple[Callable[[pa.DataType], bool], str]] = [
    (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t), "string"),
    (lambda t: t in (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16()), "int"),
    (pa.types.is_integer, "long"),
    (lambda t: t in (pa.float16(), pa.float32()), "float"),
    (pa.types.is_floating, "double"),
    (pa.types.is_boolean, "boolean"),
    (lambda t: pa.types.is_timestamp(t) and t.tz is not None, "datetime"),
    (pa.types.is_timestamp, "localdatetime"),
    (pa.types.is_date, "date"),
    (pa.types.is_time, "localtime"),
]
TEMPORAL = ("datetime", "localdatetime", "date", "localtime")

INT64_MAX = 2**63 - 1

# Where the array delimiter may come from: the default first.
ARRAY_DELIMITERS = (";", "|", "\x1f", "\x1e", "\x1d")


def scalar_type(t: pa.DataType) -> str | None:
    """The neo4j-admin header type of a scalar Arrow type, None if Neo4j has none.

    >>> scalar_type(pa.timestamp("us", tz="UTC")), scalar_type(pa.int32())
    ('datetime', 'int')
    """
    if pa.types.is_dictionary(t):
        t = t.value_type
    for check, name in _SCALARS:
        if check(t):
            return name
    return None


@dataclass
class Column:
    """One file column: its header and its values, still typed (the writer formats them)."""

    header: str
    values: pa.ChunkedArray
    kind: str  # the header type without [] (string, long, datetime, ...)
    is_list: bool = False
    prop: str | None = None  # the property it holds (None: an ID, START/END_ID or TYPE)


@dataclass
class BulkTable:
    """One file to write: a label's nodes or a type's relationships."""

    folder: str  # "nodes" or "relationships"
    name: str  # the label or the relationship type
    columns: list[Column]
    rows: int
    label: str | None = None  # nodes: the label passed on the command line


@dataclass
class BulkPlan:
    """Everything a folder writer needs, and what it must tell the user."""

    tables: list[BulkTable] = field(default_factory=list)
    skipped: dict[str, pa.Table] = field(default_factory=dict)  # dangling relationships
    encoded: dict[str, str] = field(default_factory=dict)  # "Label.prop" -> how
    notes: list[str] = field(default_factory=list)


def _chunked(values: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray:
    return values if isinstance(values, pa.ChunkedArray) else pa.chunked_array([values])


def _as_text(values: pa.ChunkedArray, how: str) -> pa.ChunkedArray:
    """Values Neo4j cannot store, as the text graphkit encodes them as elsewhere."""
    t = values.type
    out: list[str | None] = []
    for v in values.to_pylist():
        if v is None:
            out.append(None)
        elif how == JSON:
            out.append(json.dumps(json_value(v, t), ensure_ascii=False))
        else:
            out.append(str(json_value(v, t)))
    return pa.chunked_array([pa.array(out, pa.string())])


def _column(name: str, values: pa.ChunkedArray, what: str, plan: BulkPlan) -> Column | None:
    """The file column of one property (None for a column of nulls only)."""
    cypher.quote_name(name, "property")
    t = values.type
    if pa.types.is_null(t):
        return None
    if pa.types.is_dictionary(t):
        values, t = values.cast(t.value_type), t.value_type
    kind = scalar_type(t)
    _check_long(values, what, name)
    if kind is not None:
        return Column(f"{name}:{kind}", values, kind, prop=name)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = scalar_type(t.value_type)
        if inner is not None:
            flat = pc.list_flatten(values)
            if flat.null_count:
                raise ExportError(f"{what} property {name!r} has lists holding nulls, which "
                                  "Neo4j cannot store", hint="drop the nulls in the contract")
            return Column(f"{name}:{inner}[]", values, inner, is_list=True, prop=name)
    how = value_encoding(t) or JSON
    how = how if how in (JSON, BASE64) else "text"
    plan.encoded[f"{what}.{name}"] = how
    return Column(f"{name}:string", _as_text(values, how), "string", prop=name)


def _check_long(values: pa.ChunkedArray, what: str, name: str) -> None:
    """Refuse an integer past signed 64 bits: Neo4j's ``long`` cannot hold it, and
    the importer would store another number in its place."""
    flat = values
    while pa.types.is_list(flat.type) or pa.types.is_large_list(flat.type):
        flat = pc.list_flatten(flat)
    if flat.type == pa.uint64() and (pc.max(flat).as_py() or 0) > INT64_MAX:
        raise ExportError(f"{what} property {name!r} holds {pc.max(flat).as_py()}, past the "
                          "signed 64-bit integers Neo4j stores",
                          hint="cast it to text or a float in the contract")


def _ids_in(ids: pa.ChunkedArray, table: pa.Table | None) -> pa.ChunkedArray:
    if table is None:
        return pa.chunked_array([pa.array([False] * len(ids))])
    return _chunked(pc.fill_null(pc.is_in(ids, value_set=table.column(NODE_ID)), False))


def _relationships(graph: GraphTables, etype: str, et: EdgeTable, plan: BulkPlan) -> BulkTable:
    cypher.quote_name(etype, "relationship type")
    table = et.table
    src_nodes = graph.nodes.get(et.source_type)
    dst_nodes = graph.nodes.get(et.target_type)
    ok = pc.and_(_ids_in(table.column(EDGE_SOURCE), src_nodes.table if src_nodes else None),
                 _ids_in(table.column(EDGE_TARGET), dst_nodes.table if dst_nodes else None))
    bad = table.filter(pc.invert(ok))
    if bad.num_rows:
        plan.skipped[etype] = bad.select([EDGE_SOURCE, EDGE_TARGET])
        plan.notes.append(f"{bad.num_rows} {etype} relationship(s) name an end node that is not "
                          f"in the graph; they are in skipped/{etype}.csv, not in the import")
        table = table.filter(ok)
    n = table.num_rows
    cols = [Column(f":START_ID({cypher.quote_name(et.source_type)[1:-1]})",
                   _chunked(table.column(EDGE_SOURCE)), "string"),
            Column(f":END_ID({cypher.quote_name(et.target_type)[1:-1]})",
                   _chunked(table.column(EDGE_TARGET)), "string"),
            Column(":TYPE", pa.chunked_array([pa.array([etype] * n, pa.string())]), "string")]
    for name in et.properties:
        col = _column(name, _chunked(table.column(name)), etype, plan)
        if col is not None:
            cols.append(col)
    return BulkTable("relationships", etype, cols, n)


def plan_import(graph: GraphTables) -> BulkPlan:
    """The files of ``graph``'s import folder, before any is written."""
    plan = BulkPlan()
    for label, nt in sorted(graph.nodes.items()):
        q = cypher.quote_name(label)[1:-1]
        cols = [Column(f"{NODE_ID}:ID({q})", _chunked(nt.table.column(NODE_ID)), "string",
                       prop=NODE_ID)]
        for name in nt.table.column_names:
            if name != NODE_ID:
                col = _column(name, _chunked(nt.table.column(name)), label, plan)
                if col is not None:
                    cols.append(col)
        plan.tables.append(BulkTable("nodes", label, cols, nt.table.num_rows, label=label))
    for etype, et in sorted(graph.edges.items()):
        plan.tables.append(_relationships(graph, etype, et, plan))
    return plan


def _indexes(graph: GraphTables) -> list[tuple[str, str]]:
    indexes = dict.fromkeys(lookup_indexes(graph.lineage))
    for label, props in sorted(graph.meta.get("indexes", {}).items()):
        indexes.update(dict.fromkeys((label, p) for p in props))
    return [(label, prop) for label, prop in indexes if label in graph.nodes]


def schema_statements(graph: GraphTables) -> list[str]:
    """The constraints and indexes a MERGE load creates, as Cypher statements."""
    statements = [cypher.unique_id_constraint(label) for label in sorted(graph.nodes)]
    return statements + [cypher.property_index(label, prop) for label, prop in _indexes(graph)]


def index_notes(graph: GraphTables) -> list[str]:
    """The indexes in schema.cypher that Neo4j will fail to build: a string longer
    than its RANGE index holds (an online load refuses such a graph up front)."""
    try:
        check_indexed(graph, _indexes(graph))
    except StoreError as exc:
        return [f"{exc.message}: that index in schema.cypher will fail to build"]
    return []


def import_command(plan: BulkPlan, suffix: str, extra: list[str]) -> list[str]:
    """``neo4j-admin database import full`` with every file, run from the folder."""
    args = ["neo4j-admin", "database", "import", "full", "neo4j"]
    for t in plan.tables:
        path = f"{t.folder}/{t.name}{suffix}"
        args.append(f"--nodes={t.label}={path}" if t.folder == "nodes"
                    else f"--relationships={path}")
    return args + extra


def readme(fmt: str, graph: GraphTables, plan: BulkPlan, command: list[str],
           file_notes: list[str], suffix: str) -> str:
    """README.md written beside the files: how to import them, and what changed."""
    head, rest = command[:5], command[5:]
    shown = " \\\n    ".join([" ".join(head), *(shlex.quote(a) for a in rest)])
    lines = [
        f"# {graph.contract_name} v{graph.contract_version} graph for `neo4j-admin` ({fmt})",
        "",
        "Written by `graphkit export --format " + fmt + "`. Import it into a new, empty "
        "database with Neo4j 5's offline importer (the server stopped), from this folder:",
        "",
        "```sh",
        shown,
        "```",
        "",
        "(Add `--overwrite-destination=true` to replace an existing `neo4j` database.) Then "
        "start Neo4j and create the uniqueness constraints and indexes a `graphkit load` "
        "makes, so MERGE loads and lineage lookups use them:",
        "",
        "```sh",
        "cypher-shell -f schema.cypher",
        "```",
        "",
        "Nodes keep graphkit's `id` property (each label is its own ID space); null "
        "values are simply absent, as in a `graphkit load`.",
    ]
    notes = list(file_notes) + plan.notes
    if plan.encoded:
        notes.append("written as text because Neo4j cannot store them as properties: "
                     + ", ".join(f"{k} ({v})" for k, v in sorted(plan.encoded.items())))
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    counts = [f"- `{t.folder}/{t.name}{suffix}`: {t.rows} rows" for t in plan.tables]
    return "\n".join([*lines, "", "## Files", "", *counts, ""])


Writer = Callable[[BulkTable, Path], None]


def write_folder(graph: GraphTables, out: Output, progress: Progress, *, fmt: str,
                 suffix: str, writer: Writer, extra_args: Callable[[BulkPlan], list[str]],
                 file_notes: list[str],
                 before: Callable[[BulkPlan], None] | None = None) -> ExportReport:
    """Plan the import, write every file with ``writer``, then README and schema.

    ``before`` sees the plan first (the CSV writer picks its array delimiter);
    ``extra_args`` gives the format's options of the import command.
    """
    plan = plan_import(graph)
    plan.notes += index_notes(graph)
    if before is not None:
        before(plan)
    report = ExportReport(fmt, out.name, graph.node_counts(), {})
    with out.folder(fmt) as tmp:
        (tmp / "nodes").mkdir()
        (tmp / "relationships").mkdir()
        task = as_progress(progress).start(f"writing {fmt}", unit="rows",
                                           total=sum(t.rows for t in plan.tables))
        for i, t in enumerate(plan.tables, 1):
            progress(f"writing {t.folder}/{t.name}{suffix} ({i}/{len(plan.tables)}, "
                     f"{t.rows} rows)")
            writer(t, tmp / t.folder / f"{t.name}{suffix}")
            task.advance(t.rows)
            if t.folder == "relationships":
                report.edges[t.name] = t.rows
        task.done()
        if plan.skipped:
            import pyarrow.csv as pacsv

            (tmp / "skipped").mkdir()
            for etype, bad in plan.skipped.items():
                pacsv.write_csv(bad, tmp / "skipped" / f"{etype}.csv")
        command = import_command(plan, suffix, extra_args(plan))
        (tmp / "README.md").write_text(readme(fmt, graph, plan, command, file_notes, suffix),
                                       encoding="utf-8")
        (tmp / "schema.cypher").write_text(
            "".join(s + ";\n" for s in schema_statements(graph)), encoding="utf-8")
        report.notes = plan.notes + [f"encoded as text: {k} ({v})"
                                     for k, v in sorted(plan.encoded.items())]
        write_marker(tmp, report, {"command": command})
    return report


def temporal_text(values: pa.ChunkedArray | pa.Array, kind: str) -> pa.ChunkedArray:
    """Temporal values as the ISO-8601 text neo4j-admin parses (zoned ones in UTC, ``Z``)."""
    t = values.type
    if kind == "datetime":
        utc = values.cast(pa.timestamp(t.unit, tz="UTC"))
        text = pc.strftime(utc, format="%Y-%m-%dT%H:%M:%S")
        return _chunked(pc.binary_join_element_wise(text, pa.scalar("Z"), ""))
    if kind == "localdatetime":
        return _chunked(pc.strftime(values, format="%Y-%m-%dT%H:%M:%S"))
    return _chunked(values.cast(pa.string()))


def map_list_values(values: pa.ChunkedArray,
                    fn: Callable[[pa.Array], pa.Array]) -> pa.ChunkedArray:
    """``values`` (lists) with ``fn`` applied to the flattened elements."""
    chunks = []
    for chunk in values.chunks:
        if pa.types.is_large_list(chunk.type):
            chunk = chunk.cast(pa.list_(chunk.type.value_type))
        inner = fn(chunk.values)
        inner = inner.combine_chunks() if isinstance(inner, pa.ChunkedArray) else inner
        chunks.append(pa.ListArray.from_arrays(chunk.offsets, inner, mask=chunk.is_null()))
    return pa.chunked_array(chunks) if chunks else pa.chunked_array([], pa.list_(pa.string()))


def any_text_match(values: pa.ChunkedArray, pattern: str) -> bool:
    """Whether any string value (or list element) matches ``pattern``."""
    t = values.type
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        values = _chunked(pc.list_flatten(values))
        t = values.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t)) or len(values) == 0:
        return False
    return bool(pc.any(pc.match_substring_regex(values, pattern)).as_py())


def unused(values: list[pa.ChunkedArray], candidates: tuple[str, ...]) -> str | None:
    """The first of ``candidates`` no string in ``values`` contains."""
    for c in candidates:
        if not any(any_text_match(v, _regex_escape(c)) for v in values):
            return c
    return None


def _regex_escape(c: str) -> str:
    return "".join(f"\\x{{{ord(ch):x}}}" if not ch.isalnum() else ch for ch in c)


def arg_char(c: str) -> str:
    """A delimiter as neo4j-admin's options take it (``U+001F`` for controls)."""
    return c if c.isprintable() else f"U+{ord(c):04X}"
