"""Group-bys over dictionary-coded columns.

The projection dictionary-encodes its text columns once (each distinct value
stored once, rows hold int32 indices). Grouping and aggregating the indices
hashes and copies four bytes per row instead of a string; the strings are
looked up only for the (few) groups in the result. Because every dictionary
holds each value once, indices and values are interchangeable for grouping,
``first``/``last``, ``count`` and ``count_distinct``; ``min``/``max`` of text
need the values (a dictionary is not sorted), so those read them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from graphkit.contract.spec import Aggregation
from graphkit.core.errors import ContractError, SourceError

# Aggregations that give the same answer on a dictionary's indices as on its values.
_ON_INDICES = ("first", "last", "count", "count_distinct", "count_all")


def single(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    """``col`` as one array (chunks concatenated)."""
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
    if (isinstance(col, pa.ChunkedArray) and col.num_chunks > 1
            and (pa.types.is_string(col.type) or pa.types.is_large_string(col.type))):
        # Encoded chunk by chunk, every chunk shares the one dictionary built over all of
        # them (first occurrences in order, as for the chunks joined): joining the encoded
        # chunks copies int32 indices, where joining the text first copied every string.
        return col.dictionary_encode().combine_chunks()
    arr = single(col)
    t = arr.type
    if pa.types.is_dictionary(t):
        # combine_chunks above already unified the chunks' dictionaries.
        dic = arr.dictionary
        if unique:
            return arr
        # One hash pass: a dictionary already holding each value once (and no
        # null) encodes to itself, in its own order.
        u = dic.dictionary_encode()
        if len(u.dictionary) == len(dic) and dic.null_count == 0:
            return arr
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


def numbers(arr: pa.Array, column: str) -> pa.Array:
    """``arr`` as numbers for ``sum``: integers stay, text (a JSON path's value,
    e.g. a token count) becomes int64, or float64 where some value has a fraction.
    Text that is no number is a :class:`ContractError` naming the column."""
    if pa.types.is_dictionary(arr.type):
        # Convert the (short) dictionary and take by the indices, rather than a string
        # per row. Only where every entry is an integer: the answer is then what the
        # rows' own values give (a fraction or a non-number among entries no row uses
        # must not change the type or fail: those go the per-row way).
        values = None
        if pa.types.is_string(arr.type.value_type) or pa.types.is_large_string(
                arr.type.value_type):
            try:
                values = arr.dictionary.cast(pa.int64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                values = None
        if values is not None:
            return pc.take(values, arr.indices)
        arr = arr.cast(arr.type.value_type)
    if pa.types.is_null(arr.type):
        return arr.cast(pa.int64())
    if pa.types.is_integer(arr.type):
        return arr
    if pa.types.is_floating(arr.type):
        return _finite(arr)
    if pa.types.is_boolean(arr.type):
        return arr.cast(pa.int64())
    try:
        return arr.cast(pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    try:
        return _finite(arr.cast(pa.float64()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    # The first value Arrow's cast refuses (" 6": Python's float() would take it).
    bad = next(v for v in arr.to_pylist() if v is not None and not _is_number(v))
    raise ContractError(f"`sum` of column {column!r} met {str(bad)[:40]!r}, which is no number",
                        hint="sum a column holding numbers (or text holding them)")


def _finite(arr: pa.Array) -> pa.Array:
    """``arr`` (floats) with every value that is no finite number null: ``Infinity``,
    ``NaN`` and numbers past a float's range (``1e400``, an integer of 400 digits) are
    no count, and a sum holding one could be neither shown nor loaded as one."""
    finite = pc.is_finite(arr)
    if pc.all(pc.fill_null(finite, True)).as_py():
        return arr
    return pc.if_else(finite, arr, pa.scalar(None, arr.type))


def not_numbers(col: pa.ChunkedArray | pa.Array) -> pa.Array | None:
    """Per row, whether ``col`` holds text that :func:`numbers` cannot read as a
    number; None when every value can be read (the usual case: one cast, no
    Python per value). The check runs on each distinct text once."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    values = arr.dictionary if pa.types.is_dictionary(arr.type) else arr
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return None  # numbers, booleans and nulls are all summed
    try:
        values.cast(pa.float64())
        return None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    bad = pa.array([v for v in pc.unique(values).to_pylist()
                    if v is not None and not _is_number(v)], values.type)
    if pa.types.is_dictionary(arr.type):
        entries = pc.indices_nonzero(pc.is_in(arr.dictionary, value_set=bad))
        return pc.fill_null(pc.is_in(arr.indices, value_set=entries.cast(arr.indices.type)),
                            False)
    return pc.fill_null(pc.is_in(arr, value_set=bad), False)


# The largest whole number a float (and so JSON, in most readers) holds exactly. No
# token or read count comes near it; a value past it is a damaged count (2**64 - 1 is
# a -1 written unsigned), and a few of them would wrap an int64 sum without a word.
LARGEST_COUNT = 2**53 - 1


def no_counts(col: pa.ChunkedArray | pa.Array, whole: bool) -> dict[str, pa.Array]:
    """Per row, whether ``col`` holds a number a ``sum`` of counts must not take:
    ``"large"``: past ±:data:`LARGEST_COUNT`; with ``whole``, ``"partial"``: negative or
    with a fraction (an unnested element's reads and writes count tool calls). Only
    kinds some row has are keys. Text that is no number is :func:`not_numbers`'s; an
    infinite value (``1e400``) is no number at all and summed as none (:func:`_finite`).
    The checks run on each distinct value once where the column is dictionary-coded."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    values = arr.dictionary if pa.types.is_dictionary(arr.type) else arr
    f = _floats(values)
    if f is None:
        return {}
    finite = pc.is_finite(f)
    masks = {"large": pc.and_(finite, pc.greater(pc.abs(f), float(LARGEST_COUNT)))}
    if whole:
        masks["partial"] = pc.and_(finite, pc.or_(pc.less(f, 0.0),
                                                  pc.not_equal(f, pc.floor(f))))
    out: dict[str, pa.Array] = {}
    for kind, mask in masks.items():
        mask = pc.fill_null(mask, False)
        if not pc.any(mask).as_py():
            continue
        if pa.types.is_dictionary(arr.type):
            mask = pc.fill_null(pc.take(mask, arr.indices), False)
        out[kind] = mask
    return out


def _floats(values: pa.Array) -> pa.Array | None:
    """``values`` as floats, text that is no number null; None for booleans and nulls.
    Integers of any width too (a uint64 compared with an int64 bound was an
    ArrowInvalid); a float orders them rightly about 2^53, which is all asked of it."""
    if pa.types.is_floating(values.type):
        return values
    if pa.types.is_integer(values.type):
        return pc.cast(values, pa.float64(), safe=False)
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return None
    try:
        return values.cast(pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    bad = not_numbers(values)
    kept = values if bad is None else pc.if_else(bad, pa.scalar(None, values.type), values)
    return kept.cast(pa.float64())


def _is_number(v: object) -> bool:
    try:
        pa.array([str(v)]).cast(pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    return True


def index_column(key: str) -> str:
    """The name :func:`aggregate` gives a key column's dictionary indices."""
    return "__index_" + key


def aggregate(table: pa.Table, keys: list[str], props: dict[str, Aggregation], *,
              key_indices: bool = False) -> pa.Table:
    """Group ``table`` by ``keys``: the key columns (as values), then one column per
    property, named for it. ``first``/``last`` skip nulls. The order of the groups
    is fixed by the rows (first-row order, except that Arrow may place a group
    with a null key later); callers that need an order sort.

    With ``key_indices``, each dictionary-coded key column also comes as the
    group's dictionary index, in a last column named by :func:`index_column`.
    """
    work: dict[str, pa.Array] = {}
    dicts: dict[str, pa.Array] = {}

    def source(col: str, op: str) -> str:
        arr = single(table.column(col))
        if op == "sum":
            name = "__n_" + col
            work[name] = numbers(arr, col)
            return name
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
    table_ = pa.table(work)
    coded = _coded_keys(table_, key_names)
    by_codes = [sp for sp in specs if sp[1] == "count_distinct" and coded is not None
                and _fits(coded[1], _small_ints(table_.column(sp[0])))]
    grouped = table_.group_by(key_names, use_threads=False).aggregate(
        [sp for sp in specs if sp not in by_codes])
    check_sums(table_, grouped, key_names, [str(sp[0]) for sp in specs if sp[1] == "sum"])
    if by_codes and coded is not None:
        grouped = _count_distinct_by_codes(table_, grouped, key_names, coded,
                                           [str(sp[0]) for sp in by_codes])
    cols = []
    for k in key_names:
        v = single(grouped.column(k))
        cols.append(pc.take(dicts[k], v) if k in dicts else v)
    for _prop, res, src, op in out_cols:
        v = single(grouped.column(res))
        if src in dicts and op in ("first", "last"):
            v = pc.take(dicts[src], v)
        cols.append(v)
    out_names = [*keys, *(o[0] for o in out_cols)]
    if key_indices:
        for k, name in zip(keys, key_names, strict=True):
            if name in dicts:
                cols.append(single(grouped.column(name)))
                out_names.append(index_column(k))
    return pa.Table.from_arrays(cols, names=out_names)


def drop_absent(table: pa.Table, props: dict[str, Aggregation]) -> pa.Table:
    """``table`` without the columns of its ``sparse`` properties that hold no value
    (every one null, or no rows): a property only newer data carries leaves the tables
    of older data as they were.

    >>> t = pa.table({"a": [1, None], "b": pa.nulls(2, pa.int64())})
    >>> drop_absent(t, {"a": Aggregation(sum="x", sparse=True),
    ...                 "b": Aggregation(sum="y", sparse=True)}).column_names
    ['a']
    """
    gone = [name for name, agg in props.items() if agg.sparse and name in table.column_names
            and table.column(name).null_count == table.num_rows]
    return table.drop_columns(gone) if gone else table


def check_sums(table: pa.Table, grouped: pa.Table, key_names: list[str],
               sums: list[str]) -> None:
    """Refuse a group of ``grouped`` (``table`` grouped by ``key_names``, each of
    ``sums`` summed as ``<name>_sum``) whose integer sum wrapped: Arrow's ``hash_sum``
    does not check int64 overflow. No group can overflow while the largest value
    times the rows stays in range (always, with the verdict's :data:`LARGEST_COUNT`,
    below 1,024 rows of near-limit counts in one group); only past that are the sums
    done again as floats, whose error is far below the 2^64 a wrap is off by."""
    for src in sums:
        col = table.column(src)
        if not pa.types.is_integer(col.type) or table.num_rows == 0:
            continue
        span = pc.min_max(col).as_py()
        largest = max(abs(span["min"] or 0), abs(span["max"] or 0))
        if largest * table.num_rows < 2**63:
            continue
        floats = pa.table({**{k: table.column(k) for k in key_names},
                           src: pc.cast(col, pa.float64(), safe=False)})
        again = floats.group_by(key_names, use_threads=False).aggregate([(src, "sum")])
        # Both group-bys order the groups by first appearance of the keys.
        exact = pc.cast(single(grouped.column(f"{src}_sum")), pa.float64(), safe=False)
        wrapped = pc.greater(pc.abs(pc.subtract(exact, single(again.column(f"{src}_sum")))),
                             2.0**62)
        if pc.any(wrapped).as_py():
            column = src.removeprefix("__n_")
            raise SourceError(
                f"the `sum` of column {column!r} passes int64's range (±{2**63 - 1:,}) for "
                "one node or edge: its rows hold more counts near 2^53 than any count "
                "can be", column=column, hint="fix the values where the rows are written")


def dictionary_sizes(table: pa.Table, cols: Sequence[str]) -> tuple[int, ...] | None:
    """The dictionary length of each of ``cols``; ``None`` unless all are
    dictionary-coded text in one chunk."""
    sizes = []
    for c in cols:
        col = table.column(c)
        if not pa.types.is_dictionary(col.type) or col.num_chunks != 1:
            return None
        sizes.append(len(col.chunk(0).dictionary))
    return tuple(sizes)


def key_codes(groups: pa.Table, cols: Sequence[str], sizes: Sequence[int]) -> pa.Array | None:
    """One int64 per group naming its key parts by their dictionary indices (from
    :func:`aggregate` with ``key_indices``; ``sizes`` from :func:`dictionary_sizes`):
    equal codes mean equal parts, for groups of tables whose key columns share
    their dictionaries. ``None`` if the codes would not fit in 62 bits or a
    column's indices are missing.
    """
    import numpy as np

    if any(index_column(c) not in groups.column_names for c in cols):
        return None
    total = 1
    for size in sizes:
        total *= size + 1
    if total >= 1 << 62:
        return None
    code = np.zeros(groups.num_rows, dtype=np.int64)
    for c, size in zip(cols, sizes, strict=True):
        # A null part is one past the dictionary's last index.
        idx = pc.fill_null(single(groups.column(index_column(c))), size)
        code = code * (size + 1) + idx.to_numpy(zero_copy_only=False).astype(np.int64)
    return pa.array(code)


_CODE_LIMIT = 1 << 62


def _small_ints(col: pa.ChunkedArray | pa.Array) -> int | None:
    """One past the largest value of an integer column of non-negative values (the
    dictionary indices :func:`aggregate` groups by); None for any other column."""
    arr = single(col)
    if not pa.types.is_integer(arr.type):
        return None
    lo_hi = pc.min_max(arr).as_py()
    if lo_hi["min"] is None:
        return 0
    return int(lo_hi["max"]) + 1 if lo_hi["min"] >= 0 else None


def _codes(arrs: Sequence[pa.Array], sizes: Sequence[int]) -> Any:
    """One int64 per row naming its values in ``arrs`` (null: one past the size)."""
    import numpy as np

    code = np.zeros(len(arrs[0]) if arrs else 0, dtype=np.int64)
    for arr, size in zip(arrs, sizes, strict=True):
        idx = pc.fill_null(arr, size).to_numpy(zero_copy_only=False).astype(np.int64)
        code = code * (size + 1) + idx
    return code


def _coded_keys(table: pa.Table, key_names: list[str]) -> tuple[list[int], int] | None:
    """(the sizes of the key columns, how many key codes there can be) when every key
    column holds small non-negative integers (dictionary indices); else None."""
    sizes = []
    total = 1
    for k in key_names:
        size = _small_ints(table.column(k))
        if size is None:
            return None
        sizes.append(size)
        total *= size + 1
        if total >= _CODE_LIMIT:
            return None
    return sizes, total


def _count_distinct_by_codes(table: pa.Table, grouped: pa.Table, key_names: list[str],
                             coded: tuple[list[int], int], columns: list[str]) -> pa.Table:
    """``grouped`` with a ``COLUMN_count_distinct`` column per one of ``columns``:
    Arrow's ``hash_count_distinct`` (non-null values), computed from integer codes.

    Arrow keeps a hash set per group. Here each value first names one group it
    occurs in (any one: the last write of a scatter), which counts that (group,
    value) pair; only rows in another group than their value's named one (few:
    a message id belongs to one thread) are paired as one int64 each and made
    distinct by Arrow's hash. The same counts, without hashing a pair per row."""
    import numpy as np

    sizes, _ = coded
    row_code = _codes([single(table.column(k)) for k in key_names], sizes)
    group_code = _codes([single(grouped.column(k)) for k in key_names], sizes)
    order = np.argsort(group_code, kind="stable")
    sorted_codes = group_code[order]
    for col in columns:
        values = single(table.column(col))
        span = (_small_ints(values) or 0) + 1
        valid = pc.is_valid(values).to_numpy(zero_copy_only=False)
        vals = pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(np.int64)[valid]
        codes = row_code[valid]
        named = np.full(span, -1, dtype=np.int64)  # row codes are never negative
        named[vals] = codes
        present = np.flatnonzero(named >= 0)
        other = codes != named[vals]
        extra = pc.unique(pa.array(codes[other] * span + vals[other], pa.int64())).to_numpy()
        owners = np.concatenate([named[present], extra // span])
        at = np.minimum(np.searchsorted(sorted_codes, owners), max(len(sorted_codes) - 1, 0))
        hit = sorted_codes[at] == owners if len(sorted_codes) else np.zeros(0, bool)
        counts = np.bincount(order[at[hit]], minlength=len(group_code)).astype(np.int64)
        grouped = grouped.append_column(f"{col}_count_distinct", pa.array(counts))
    return grouped


def _fits(total: int, span: int | None) -> bool:
    """Whether (group code, value) pairs fit one int64 (``span``: values' bound)."""
    return span is not None and total * (span + 1) < _CODE_LIMIT
