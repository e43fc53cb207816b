"""``neo4j-parquet``: a folder of Parquet files for ``neo4j-admin database
import full --input-type=parquet`` (Neo4j 5.26's importer reads Parquet; see
:mod:`graphkit.export.bulk` for the layout and the header types).

Columns keep their Parquet types (times as timestamps, lists as lists), with
the same ``name:type`` headers as the CSV folder. Two things the 5.26 importer
does differently from CSV: lists of times are read only as text, so they are
written as lists of ISO-8601 strings (typed by the header), as is a column
of times holding one before 1970 with a fraction of a second (which the
importer fails on as a Parquet timestamp); and an empty string is read as
null, so it is absent after the import.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphkit.core.graph import GraphTables
from graphkit.export.bulk import (
    TEMPORAL,
    BulkPlan,
    BulkTable,
    Column,
    map_list_values,
    temporal_text,
    write_folder,
)
from graphkit.export.registry import ExportReport, Format, Output, Progress


def _values(col: Column) -> pa.ChunkedArray:
    if col.is_list and col.kind in TEMPORAL:
        return map_list_values(col.values, lambda v: temporal_text(v, col.kind).combine_chunks())
    if pa.types.is_timestamp(col.values.type) and _fraction_before_1970(col.values):
        return temporal_text(col.values, col.kind)
    return col.values


def _fraction_before_1970(values: pa.ChunkedArray) -> bool:
    """Whether a time before 1970 has a fraction of a second: the 5.26 importer
    fails on those read as Parquet timestamps ("Invalid value for NanoOfSecond:
    -999000000"), and reads them right as ISO-8601 text (as it reads lists of times)."""
    t = values.type
    if t.unit == "s":
        return False
    ticks = values.cast(pa.int64())
    per_second = {"ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[t.unit]
    early = ticks.filter(pc.fill_null(pc.less(ticks, 0), False))
    # Integer division truncates: a whole second leaves nothing over.
    whole = pc.multiply(pc.divide(early, per_second), per_second)
    return bool(pc.any(pc.not_equal(early, whole)).as_py())


def _writer(t: BulkTable, path: Path) -> None:
    pq.write_table(pa.table({c.header: _values(c) for c in t.columns}), path)


def _extra(_plan: BulkPlan) -> list[str]:
    return ["--input-type=parquet"]


def write(graph: GraphTables, out: Output, progress: Progress) -> ExportReport:
    """Write ``graph``'s import folder (Parquet) to ``out``."""
    notes = ["an empty string is imported as absent (neo4j-admin 5.26 reads it from "
             "Parquet as null); lists of times are written as ISO-8601 text, which the "
             "header types"]
    return write_folder(graph, out, progress, fmt="neo4j-parquet", suffix=".parquet",
                        writer=_writer, extra_args=_extra, file_notes=notes)


FORMAT = Format("neo4j-parquet",
                "a folder of Parquet files for neo4j-admin database import --input-type=parquet",
                write, folder=True)
