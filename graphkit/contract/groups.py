"""Group-bys over dictionary-coded columns, and the key texts and ids of groups.

The projection dictionary-encodes its text columns once (each distinct value
stored once, rows hold int32 indices). Grouping and aggregating the indices
hashes and copies four bytes per row instead of a string; the strings are
looked up only for the (few) groups in the result. Because every dictionary
holds each value once, indices and values are interchangeable for grouping,
``first``/``last``, ``count`` and ``count_distinct``; ``min``/``max`` of text
need the values (a dictionary is not sorted), so those read them.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from graphkit.contract.model import Aggregation
from graphkit.core.ids import _NULL, _SEP, NODE_ID_RECIPE

# Aggregations that give the same answer on a dictionary's indices as on its values.
_ON_INDICES = ("first", "last", "count", "count_distinct", "count_all")


def _single(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def encode(col: pa.ChunkedArray | pa.Array, unique: bool = False) -> pa.Array:
    """``col`` as one dictionary array whose dictionary holds each value once.

    Text columns are encoded; a dictionary column whose dictionary repeats a
    value is re-encoded (cheap: the work is on the dictionary); other columns
    come back as they are. ``unique`` says the caller knows the dictionary
    already holds each value once (and no null), which skips hashing it.
    """
    arr = _single(col)
    t = arr.type
    if pa.types.is_dictionary(t):
        # combine_chunks above already unified the chunks' dictionaries.
        dic = arr.dictionary
        if unique or (dic.null_count == 0 and pc.count_distinct(dic).as_py() == len(dic)):
            return arr
        u = dic.dictionary_encode()
        return pa.DictionaryArray.from_arrays(pc.take(u.indices, arr.indices), u.dictionary)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return arr.dictionary_encode()
    return arr


def decode(col: pa.ChunkedArray | pa.Array) -> pa.Array | pa.ChunkedArray:
    """The values of a dictionary column; any other column unchanged."""
    if not pa.types.is_dictionary(col.type):
        return col
    return col.cast(col.type.value_type)


def decoded(table: pa.Table) -> pa.Table:
    """``table`` with every dictionary column replaced by its values."""
    if not any(pa.types.is_dictionary(f.type) for f in table.schema):
        return table
    return pa.Table.from_arrays([decode(c) for c in table.columns], names=table.column_names)


def aggregate(table: pa.Table, keys: list[str], props: dict[str, Aggregation]) -> pa.Table:
    """Group ``table`` by ``keys``: the key columns (as values), then one column per
    property, named for it. Groups come in the order of their first row."""
    work: dict[str, pa.Array] = {}
    dicts: dict[str, pa.Array] = {}

    def source(col: str, op: str) -> str:
        arr = _single(table.column(col))
        if not pa.types.is_dictionary(arr.type):
            work[col] = arr
            return col
        if op in _ON_INDICES:
            name = "__i_" + col
            work[name] = arr.indices
            dicts[name] = arr.dictionary
            return name
        name = "__v_" + col
        work[name] = arr.cast(arr.type.value_type)
        return name

    key_names = [source(k, "first") for k in keys]
    specs: list[tuple[Any, str]] = []
    names: dict[tuple[str, str], str] = {}
    out_cols: list[tuple[str, str, str, str]] = []  # (property, result, source, op)
    for prop, agg in props.items():
        op = "count_all" if (agg.op == "count" and agg.column == "*") else agg.op
        src = "" if op == "count_all" else source(agg.column, op)
        if (src, op) not in names:
            names[(src, op)] = "count_all" if op == "count_all" else f"{src}_{op}"
            specs.append(([] if op == "count_all" else src, op))
        out_cols.append((prop, names[(src, op)], src, op))
    # Key names double as columns; a property may read a key column too.
    grouped = pa.table(work).group_by(key_names, use_threads=False).aggregate(specs)
    cols = []
    for k in key_names:
        v = _single(grouped.column(k))
        cols.append(pc.take(dicts[k], v) if k in dicts else v)
    for _prop, res, src, op in out_cols:
        v = _single(grouped.column(res))
        if src in dicts and op in ("first", "last"):
            v = pc.take(dicts[src], v)
        cols.append(v)
    return pa.Table.from_arrays(cols, names=[*keys, *(o[0] for o in out_cols)])


def key_text(parts: list[pa.Array | pa.ChunkedArray | None], n: int) -> pa.Array:
    """One text per row joining the key parts the way :func:`graphkit.core.ids.node_id` does.

    ``None`` in ``parts`` is a key part that is always null.
    """
    arrays = []
    for p in parts:
        if p is None:
            arrays.append(pa.nulls(n, pa.string()))
        else:
            arr = _single(p)
            arrays.append(arr if pa.types.is_string(arr.type) else arr.cast(pa.string()))
    return pc.binary_join_element_wise(*arrays, _SEP, null_handling="replace",
                                       null_replacement=_NULL)


def hash_ids(node_type: str, keys: pa.Array) -> pa.Array:
    """Node ids for distinct key texts (see :func:`graphkit.core.ids.node_id`).

    Only the SHA-256 per key runs in Python; the UUID text is built for all
    ids at once with numpy (what ``str(uuid.UUID(bytes=digest[:16], version=5))``
    gives).
    """
    import numpy as np

    prefix = f"graphkit.node.v{NODE_ID_RECIPE}{_SEP}{node_type}{_SEP}".encode()
    sha = hashlib.sha256
    n = len(keys)
    raw = b"".join([sha(prefix + k).digest()[:16]
                    for k in _single(keys).cast(pa.binary()).to_pylist()])
    b = np.frombuffer(raw, dtype=np.uint8).reshape(n, 16).copy()
    b[:, 6] = (b[:, 6] & 0x0F) | 0x50  # version 5
    b[:, 8] = (b[:, 8] & 0x3F) | 0x80  # RFC 4122 variant
    hexes = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    digits = np.empty((n, 32), dtype=np.uint8)
    digits[:, 0::2] = hexes[b >> 4]
    digits[:, 1::2] = hexes[b & 0x0F]
    text = np.full((n, 36), ord("-"), dtype=np.uint8)
    for lo, hi, at in ((0, 8, 0), (8, 12, 9), (12, 16, 14), (16, 20, 19), (20, 32, 24)):
        text[:, at:at + hi - lo] = digits[:, lo:hi]
    offsets = np.arange(0, 36 * (n + 1), 36, dtype=np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(text))
