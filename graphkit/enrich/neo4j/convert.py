"""Graph tables as Neo4j parameters, and Neo4j values back as Arrow columns.

Loading sends each batch's columns as lists (UTC timestamps as epoch
integers: the driver converts every datetime in Python, ~100 µs each, see
bench/NEO4J_LOAD.md at d9272aa); reading a graph back types each property from the
values the driver returns.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from graphkit.core.errors import StoreError
from graphkit.core.graph import EDGE_SOURCE, EDGE_TARGET, NODE_ID, GraphTables
from graphkit.enrich.neo4j import cypher

# --- rows ---------------------------------------------------------------------

_STORABLE = (
    pa.types.is_string,
    pa.types.is_large_string,
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_boolean,
    pa.types.is_timestamp,
    pa.types.is_date,
    pa.types.is_null,
    pa.types.is_binary,
    pa.types.is_large_binary,
)


def _storable(t: pa.DataType) -> bool:
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _storable(t.value_type) and not pa.types.is_null(t.value_type)
    return any(check(t) for check in _STORABLE)


def check_columns(graph: GraphTables) -> None:
    """Neo4j properties are scalars or lists of scalars: refuse anything else up front."""
    tables = [(f"node {k}", n.table) for k, n in graph.nodes.items()]
    tables += [(f"relationship {k}", e.table) for k, e in graph.edges.items()]
    for what, table in tables:
        for name in table.column_names:
            cypher.quote_name(name, "property")
            if not _storable(table.schema.field(name).type):
                raise StoreError(
                    f"{what} column {name!r} has type {table.schema.field(name).type},"
                    " which Neo4j cannot store as a property",
                    hint="serialize it to JSON text in the contract",
                )
            _check_values(what, name, table.column(name))


INT64_MAX = 2**63 - 1
# The longest string (UTF-8 bytes) Neo4j 5.26's RANGE index takes; measured: a
# longer value fails the write with "Property value is too large to index".
INDEX_MAX_BYTES = 8164


def _check_values(what: str, name: str, column: pa.ChunkedArray) -> None:
    """Refuse, before anything is written, values Neo4j would refuse mid-load
    (a list holding a null) or could not hold (an integer past signed 64 bits,
    which the driver cannot even send)."""
    flat, in_list = column, False
    while pa.types.is_list(flat.type) or pa.types.is_large_list(flat.type):
        flat, in_list = pc.list_flatten(flat), True
    if in_list and flat.null_count:
        raise StoreError(f"{what} column {name!r} has lists holding nulls, which Neo4j "
                         "cannot store", hint="drop the nulls in the contract")
    if flat.type == pa.uint64() and (pc.max(flat).as_py() or 0) > INT64_MAX:
        raise StoreError(f"{what} column {name!r} holds {pc.max(flat).as_py()}, past the "
                         "signed 64-bit integers Neo4j stores",
                         hint="cast it to text or a float in the contract")


def check_indexed(graph: GraphTables, indexes: list[tuple[str, str]]) -> None:
    """Refuse a string too long for the lookup index on its property (Neo4j would
    fail the load midway), naming the node and the property."""
    for label, prop in indexes:
        nt = graph.nodes.get(label)
        if nt is None or prop not in nt.table.column_names:
            continue
        col = nt.table.column(prop)
        if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            continue
        sizes = pc.binary_length(col)
        longest = pc.max(sizes).as_py()
        if longest is not None and longest > INDEX_MAX_BYTES:
            at = pc.index(sizes, longest).as_py()
            raise StoreError(
                f"node {label} {nt.table.column(NODE_ID)[at].as_py()} has a {prop} of "
                f"{longest:,} bytes; Neo4j's index on {label}.{prop} holds at most "
                f"{INDEX_MAX_BYTES:,}", hint="shorten or hash the value in the contract")


def node_props(table: pa.Table) -> list[str]:
    return [n for n in table.column_names if n != NODE_ID]


def edge_props(table: pa.Table) -> list[str]:
    return [n for n in table.column_names if n not in (EDGE_SOURCE, EDGE_TARGET)]


_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def epoch_columns(table: pa.Table) -> dict[str, int]:
    """Timestamp columns in zone UTC with no value before 1970, by name: their
    units per second. These travel as integers (see :func:`cypher.utc_from_epoch`)."""
    out = {}
    for f in table.schema:
        if pa.types.is_timestamp(f.type) and f.type.tz == "UTC" and f.name not in (
                NODE_ID, EDGE_SOURCE, EDGE_TARGET):
            low = pc.min(table.column(f.name).cast(pa.int64())).as_py()
            if low is None or low >= 0:
                out[f.name] = _PER_SECOND[f.type.unit]
    return out


def as_epoch(table: pa.Table, epoch: dict[str, int]) -> pa.Table:
    for name in epoch:
        i = table.schema.get_field_index(name)
        table = table.set_column(i, name, table.column(i).cast(pa.int64()))
    return table


def node_params(batch: pa.Table) -> dict[str, list[Any]]:
    """Parameters of :func:`cypher.merge_nodes` / :func:`cypher.create_nodes`."""
    params = {"ids": batch.column(NODE_ID).to_pylist()}
    params.update({f"c{i}": batch.column(p).to_pylist()
                   for i, p in enumerate(node_props(batch))})
    return params


def edge_params(batch: pa.Table) -> dict[str, list[Any]]:
    """Parameters of :func:`cypher.merge_relationships` / :func:`cypher.create_relationships`."""
    params = {
        "sources": batch.column(EDGE_SOURCE).to_pylist(),
        "targets": batch.column(EDGE_TARGET).to_pylist(),
    }
    params.update({f"c{i}": batch.column(p).to_pylist()
                   for i, p in enumerate(edge_props(batch))})
    return params


def iso_text(value: Any) -> str | None:
    """ISO-8601 text as the NetworkX store writes it: ``isoformat()`` of a UTC datetime."""
    if value is None or isinstance(value, str):
        return value
    if hasattr(value, "to_native"):  # neo4j.time.DateTime / Date
        value = value.to_native()
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


# --- reading back -------------------------------------------------------------


def property_table(first: dict[str, pa.Array], props: list[dict[str, Any]]) -> pa.Table:
    """``first`` then one column per property name (sorted), typed from the values."""
    names = sorted({k for p in props for k in p})
    cols = dict(first)
    for name in names:
        cols[name] = _column([p.get(name) for p in props])
    return pa.table(cols)


def _native(value: Any) -> Any:
    """A driver value as plain Python: temporal types native (aware ones in UTC)."""
    if isinstance(value, list):
        return [_native(v) for v in value]
    if hasattr(value, "to_native"):  # neo4j.time.DateTime / Date / Time
        value = value.to_native()
        if isinstance(value, datetime) and value.tzinfo is not None:
            value = value.astimezone(UTC)
        return value
    if value is None or isinstance(value, str | int | float | bool | bytes | date):
        return value
    return str(value)  # durations, points: their text


def _nanoseconds(values: list[Any]) -> pa.Array | None:
    """Neo4j DateTimes that carry nanoseconds (Python's datetime stops at
    microseconds) as a ``timestamp[ns]`` column; None if none needs it."""
    present = [v for v in values if v is not None]
    if not present or not all(hasattr(v, "nanosecond") and hasattr(v, "to_native")
                              and v.tzinfo is not None for v in present):
        return None
    if all(v.nanosecond % 1000 == 0 for v in present):
        return None
    out: list[int | None] = []
    for v in values:
        if v is None:
            out.append(None)
            continue
        micros = (v.to_native() - _EPOCH) // timedelta(microseconds=1)
        out.append(micros * 1000 + v.nanosecond % 1000)
    return pa.array(out, pa.int64()).cast(pa.timestamp("ns", tz="UTC"))


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _column(values: list[Any]) -> pa.Array:
    """An Arrow column for property values, text if they mix types."""
    nanos = _nanoseconds(values)
    if nanos is not None:
        return nanos
    native = [_native(v) for v in values]
    present = [v for v in native if v is not None]
    if present and all(isinstance(v, datetime) and v.tzinfo is not None for v in present):
        return pa.array(native, pa.timestamp("us", tz="UTC"))
    try:
        return pa.array(native)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return pa.array([None if v is None else str(v) for v in native], pa.string())
