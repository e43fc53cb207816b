"""``neo4j-csv``: a folder of CSV files for ``neo4j-admin database import full``
(see :mod:`graphkit.export.bulk` for the layout and the header types).

Every value is quoted (RFC 4180, quotes doubled, backslashes literal) and a
null is an empty unquoted field, which the importer leaves out, so an empty
string stays an empty string. Lists are joined with ``;`` (or the first of
``|``, U+001F, U+001E, U+001D no element contains; the README's command then
names it), and an empty list is written as null. NaN and ±infinity are
written ``NaN``/``Infinity``/``-Infinity``, the spelling the importer reads.
Values with line breaks need ``--multiline-fields=true``, which the README's
command then carries.
"""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from graphkit.core.graph import GraphTables
from graphkit.export.bulk import (
    ARRAY_DELIMITERS,
    TEMPORAL,
    BulkPlan,
    BulkTable,
    Column,
    any_text_match,
    arg_char,
    map_list_values,
    temporal_text,
    unused,
    write_folder,
)
from graphkit.export.registry import ExportError, ExportReport, Format, Output, Progress


def _list_values(plan: BulkPlan) -> list[pa.ChunkedArray]:
    return [c.values for t in plan.tables for c in t.columns if c.is_list]


def _delimiter(plan: BulkPlan) -> str:
    found = unused(_list_values(plan), ARRAY_DELIMITERS)
    if found is None:
        raise ExportError("every array delimiter neo4j-admin could use (" + ", ".join(
            arg_char(c) for c in ARRAY_DELIMITERS) + ") occurs inside a list element",
            hint="use --format neo4j-parquet, which keeps lists as lists")
    return found


FLOATS = ("double", "float")


def float_text(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Floats as neo4j-admin parses them: Arrow writes ``nan``/``inf``/``-inf``,
    which the importer refuses ("Not a number"), so those are spelled as Java
    does, ``NaN``/``Infinity``/``-Infinity``. A float32 is written as its exact
    double (``0.10000000149011612``, not ``0.1``): the importer reads ``float``
    columns as doubles (Cypher type normalization), as an online load widens them."""
    if values.type != pa.float64():
        values = values.cast(pa.float64())
    text = values.cast(pa.string())
    if pc.all(pc.fill_null(pc.is_finite(values), True)).as_py():
        return text
    for test, spelled in ((pc.is_nan(values), "NaN"),
                          (pc.equal(values, math.inf), "Infinity"),
                          (pc.equal(values, -math.inf), "-Infinity")):
        text = pc.if_else(pc.fill_null(test, False), pa.scalar(spelled), text)
    return text


def _text(col: Column, delimiter: str) -> pa.ChunkedArray:
    values = col.values
    if col.is_list:
        kind = col.kind

        def element_text(v: pa.Array) -> pa.Array:
            if kind in TEMPORAL:
                return temporal_text(v, kind)
            return float_text(v) if kind in FLOATS else v.cast(pa.string())

        joined = pc.binary_join(map_list_values(values, element_text), delimiter)
        # An empty list would be one empty element: leave it out like a null.
        empty = pc.equal(pc.list_value_length(values), 0)
        return pc.if_else(pc.fill_null(empty, False), pa.scalar(None, pa.string()), joined)
    if col.kind in TEMPORAL:
        return temporal_text(values, col.kind)
    if col.kind in FLOATS:
        return float_text(values)
    return values


def _multiline(plan: BulkPlan) -> bool:
    return any(any_text_match(c.values, "[\r\n]") for t in plan.tables for c in t.columns)


def write(graph: GraphTables, out: Output, progress: Progress) -> ExportReport:
    """Write ``graph``'s import folder (CSV) to ``out``."""
    delimiter: list[str] = []

    def writer(t: BulkTable, path: Path) -> None:
        if not delimiter:
            raise RuntimeError("the array delimiter is chosen before any file is written")
        table = pa.table({c.header: _text(c, delimiter[0]) for c in t.columns})
        pacsv.write_csv(table, path, pacsv.WriteOptions(quoting_style="all_valid"))

    def extra(plan: BulkPlan) -> list[str]:
        args = []
        if delimiter[0] != ";":
            args.append(f"--array-delimiter={arg_char(delimiter[0])}")
        if _multiline(plan):
            args.append("--multiline-fields=true")
        return args

    def choose(plan: BulkPlan) -> None:
        delimiter.append(_delimiter(plan))

    notes = ["an empty list is written as null (absent), as CSV cannot tell them apart"]
    return write_folder(graph, out, progress, fmt="neo4j-csv", suffix=".csv", writer=writer,
                        extra_args=extra, file_notes=notes, before=choose)


FORMAT = Format("neo4j-csv", "a folder of CSV files for neo4j-admin database import", write,
                folder=True)
