"""Check a source's Arrow schema against a contract and bring its columns to
the contract's types; join the sources' pieces into the one table the
projection reads.

Runs per source file before any row is projected, so a wrong type is reported
with the file, the column and the contract line that asked for it. The sources
layer never sees the contract: :func:`read_spec` tells it what to read, and
:func:`conform_sources` shapes what it read.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from graphkit.contract.expr import blank_to_null
from graphkit.contract.loader import LoadedContract
from graphkit.core.errors import SourceError, first_line
from graphkit.core.schema import first_failing_row, json_as_text, tag_rows
from graphkit.core.times import TIMESTAMP, epoch_times, naive_as_utc, text_times
from graphkit.sources.read import ReadSpec, SourceRows, since_filter

# Text columns read dictionary-encoded (Parquet stores ids and names that way)
# stay encoded, in this one type, so the projection need not encode them again.
TEXT_DICT = pa.dictionary(pa.int32(), pa.string())
# Field metadata: this dictionary column's dictionary holds each value once.
UNIQUE_DICTIONARY = b"graphkit.unique_dictionary"


def _is_text(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        return _is_text(t.value_type)
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_bytes(t: pa.DataType) -> bool:
    """Binary columns: Parquet text some writers store without its UTF-8 annotation
    (read as the text it holds; bytes that are not UTF-8 are refused by the cast)."""
    if pa.types.is_dictionary(t):
        return _is_bytes(t.value_type)
    return pa.types.is_binary(t) or pa.types.is_large_binary(t)


def _compatible(kind: str, t: pa.DataType) -> bool:
    if pa.types.is_null(t):
        return True
    if kind in ("string", "json") and _is_bytes(t):
        return True
    if kind == "string":
        return _is_text(t)
    if kind == "int":
        return pa.types.is_integer(t)
    if kind == "float":
        return pa.types.is_integer(t) or pa.types.is_floating(t)
    if kind == "bool":
        return pa.types.is_boolean(t)
    if kind == "timestamp":
        return (pa.types.is_timestamp(t) or pa.types.is_date(t) or _is_text(t)
                or pa.types.is_integer(t) or pa.types.is_floating(t))
    if kind == "json":
        # A map (Spark's and DuckDB's map<string, string>) is read as the object it is;
        # a JSON array written as one (touched_files: [{...}]) as a list: its JSON text
        # (round eight: refused, where the same array as text builds).
        return (_is_text(t) or pa.types.is_struct(t) or pa.types.is_map(t)
                or pa.types.is_list(t))
    return False


def _target(kind: str) -> pa.DataType | None:
    return {
        "string": pa.string(),
        "int": pa.int64(),
        "float": pa.float64(),
        "bool": pa.bool_(),
        "timestamp": TIMESTAMP,
        "json": None,  # text stays text, structs stay structs
    }[kind]


def check_schema(contract: LoadedContract, schema: pa.Schema, source: str) -> None:
    """Raise :class:`SourceError` if ``schema`` lacks a required column or
    holds a column of an incompatible type."""
    for name, col in contract.spec.input.items():
        line = contract.line_of("input", name)
        where = f"{contract.path.name}:{line}" if line else contract.path.name
        if name not in schema.names:
            if col.required:
                raise SourceError(
                    f"required column {name!r} is missing (the contract {contract.name} "
                    f"needs it, {where})",
                    path=source,
                    hint="add the column, or use a contract that does not require it",
                )
            continue
        t = schema.field(name).type
        if not _compatible(col.type, t):
            raise SourceError(
                f"column {name!r} has type {t}, but the contract {contract.name} "
                f"expects {col.type} ({where})",
                path=source,
                hint="convert the column, or change its type in a copy of the contract",
            )


def conform(contract: LoadedContract, table: pa.Table, source: str) -> pa.Table:
    """``table`` reduced to the contract's input columns, in contract types.

    Optional columns the source lacks become typed null columns, so every
    source concatenates into one table. A table of no rows and no columns (a JSON
    Lines file that is empty: JSON has no schema) lacks no column: it is zero rows.
    """
    if table.num_rows or table.num_columns:
        check_schema(contract, table.schema, source)
    arrays = []
    fields = []
    for name, col in contract.spec.input.items():
        target = _target(col.type)
        if name in table.column_names:
            arr = table.column(name)
            if pa.types.is_dictionary(arr.type):
                if col.type in ("string", "json") and _is_text(arr.type):
                    # Keep the encoding; only the index and value types are made uniform.
                    target = TEXT_DICT
                else:
                    arr = arr.cast(arr.type.value_type)
            if col.type == "json" and (pa.types.is_map(arr.type) or pa.types.is_list(arr.type)):
                arr = json_as_text(arr.combine_chunks() if isinstance(arr, pa.ChunkedArray)
                                   else arr)
            if col.type == "json" and not (pa.types.is_struct(arr.type)
                                           or pa.types.is_dictionary(arr.type)):
                target = pa.string()
            if _is_bytes(arr.type):
                target = pa.string()
            if target is not None and arr.type != target:
                def read(part: Any, col: Any = col, target: Any = target,
                         name: str = name) -> Any:
                    if col.type == "timestamp" and _is_text(part.type):
                        part = text_times(part)
                    elif col.type == "timestamp" and (pa.types.is_integer(part.type)
                                                      or pa.types.is_floating(part.type)):
                        part = epoch_times(part, name, source)
                    elif col.type == "timestamp" and pa.types.is_timestamp(part.type) \
                            and part.type.tz is None:
                        # Naive timestamps are taken as UTC, as HypAware writes them.
                        part = naive_as_utc(part)
                    return part.cast(target)
                try:
                    arr = read(arr)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise SourceError(
                        f"column {name!r} cannot be read as {col.type}: {first_line(exc)}",
                        path=source, row=first_failing_row(arr, read), column=name,
                        hint="fix the values or the column type",
                    ) from None
        else:
            arr = pa.nulls(table.num_rows, target or pa.string())
        if col.type == "timestamp" and arr.type == TIMESTAMP:
            _check_time_range(arr, name, source)
        if col.blank_is_null or col.null_values:
            arr = blank_to_null(arr, col.blank_is_null, tuple(col.null_values))
        arrays.append(arr)
        fields.append(pa.field(name, arr.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


# Times a snapshot can hold and every reader turn back into a date: years 1 to 9999
# (Python's datetime, ISO 8601). Arrow holds far wider ones (year 0, 10000, ±290,000).
_EARLIEST = pa.scalar(datetime(1, 1, 1, tzinfo=UTC), TIMESTAMP)
_LATEST = pa.scalar(datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), TIMESTAMP)


def _check_time_range(arr: pa.Array | pa.ChunkedArray, name: str, source: str) -> None:
    """Refuse a time outside years 1-9999, naming its row: written into a snapshot it
    would break every command reading it back."""
    bad = pc.or_(pc.less(arr, _EARLIEST), pc.greater(arr, _LATEST))
    if not pc.any(bad).as_py():
        return
    row = pc.index(bad, True).as_py()
    value = pc.cast(arr.cast(pa.int64())[row], pa.int64()).as_py()
    raise SourceError(f"time out of range: {value} microseconds from 1970 is outside "
                      "years 1 to 9999", path=source, row=row + 1, column=name,
                      hint="fix the value, or drop the row")


def combine_dictionaries(table: pa.Table) -> pa.Table:
    """``table`` with every dictionary column of several chunks made one chunk.

    Parquet gives each row group its own dictionary; concatenating the chunks
    unifies them into one dictionary holding each value once, which group-bys
    over the indices (and grouping by them at all) need. A column already in
    one chunk is left as it is.
    """
    todo = [i for i, f in enumerate(table.schema)
            if pa.types.is_dictionary(f.type) and table.column(i).num_chunks > 1]
    if not todo:
        return table
    # Largest first, on two threads: concatenation runs in Arrow without the GIL.
    todo.sort(key=lambda i: -table.column(i).nbytes)
    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        combined = dict(zip(todo, pool.map(lambda i: table.column(i).combine_chunks(), todo),
                            strict=True))
    out = table
    for i in sorted(todo):
        f = table.schema.field(i)
        # Concatenation unifies through a hash table of values, so the result
        # holds each value once; the field says so, and the projection need
        # not hash the dictionary again to find out.
        meta = {**(f.metadata or {}), UNIQUE_DICTIONARY: b"1"}
        out = out.set_column(i, f.with_metadata(meta), pa.chunked_array([combined[i]]))
    return out


def has_unique_dictionary(f: pa.Field) -> bool:
    """Whether ``f`` was marked by :func:`combine_dictionaries` as holding each value once."""
    return bool(f.metadata) and f.metadata.get(UNIQUE_DICTIONARY) == b"1"


def read_spec(contract: LoadedContract, include_content: bool = False) -> ReadSpec:
    """What the sources must read for ``contract``: its input columns, of which the
    text and JSON ones may come dictionary-encoded."""
    return ReadSpec(
        columns=tuple(contract.spec.input),
        text_columns=tuple(n for n, c in contract.spec.input.items()
                           if c.type in ("string", "json")),
        include_content=include_content)


def conform_table(contract: LoadedContract, table: pa.Table, label: str) -> pa.Table:
    """One table in the contract's input columns and types, with the row-locator
    columns (``label`` and 1-based row numbers): what the projection reads."""
    return tag_rows(conform(contract, table, label), label)


def conform_sources(contract: LoadedContract, rows: SourceRows, *,
                    since: datetime | None = None, until: datetime | None = None) -> pa.Table:
    """The pieces of ``rows`` conformed to ``contract``, tagged and joined into one table
    (rows from ``since`` to ``until`` only, each bound optional). Takes the pieces out
    of ``rows`` so their memory goes once they are joined."""
    pieces, rows.pieces = rows.pieces, []
    if len(pieces) < 2:
        tables = [conform_table(contract, table, label) for label, table in pieces]
    else:
        # Pieces on two threads: the casts and blank checks are Arrow's (GIL released),
        # ~0.06 CPU-s over the five files of 1M rows that ran alone on one core. map
        # gives the tables in piece order, and the first failing piece (in that order)
        # raises, as one after another would.
        with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
            tables = list(pool.map(lambda piece: conform_table(contract, piece[1], piece[0]),
                                   pieces))
    if not tables:
        raise SourceError("no sources given", hint="name at least one file or folder")
    tables = _unify_text(_unify_json(tables, contract))
    combined = combine_dictionaries(pa.concat_tables(tables, promote_options="permissive"))
    return since_filter(combined, since, until)


def _unify_json(tables: list[pa.Table], contract: LoadedContract) -> list[pa.Table]:
    """Make JSON columns one type across tables: text, unless all are structs."""
    json_cols = [n for n, c in contract.spec.input.items() if c.type == "json"]
    out = tables
    for name in json_cols:
        types = {t.schema.field(name).type for t in out}
        if len(types) <= 1 or not any(pa.types.is_struct(t) for t in types):
            continue
        fixed = []
        for t in out:
            col = t.column(name)
            if not (pa.types.is_string(col.type) or pa.types.is_dictionary(col.type)):
                arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
                t = t.set_column(t.schema.get_field_index(name), name,
                                 json_as_text(arr) if not pa.types.is_null(arr.type)
                                 else pa.nulls(len(arr), pa.string()))
            fixed.append(t)
        out = fixed
    return out


def _unify_text(tables: list[pa.Table]) -> list[pa.Table]:
    """Where one source has a text column dictionary-encoded (Parquet) and another
    plain (JSON Lines, transcripts, a column it lacks), encode the plain ones so
    the tables concatenate; the projection would encode them anyway."""
    if len(tables) < 2:
        return tables
    out = list(tables)
    for name in out[0].column_names:
        types = {t.schema.field(name).type for t in out}
        if TEXT_DICT not in types or len(types) == 1:
            continue
        for i, t in enumerate(out):
            col = t.column(name)
            if col.type != TEXT_DICT:
                out[i] = t.set_column(t.schema.get_field_index(name), name,
                                      col.cast(TEXT_DICT))
    return out
