"""Which rows a projection uses: the verdict on contract-shaped rows.

Reject rules first (each rejected row keeps its first reason and column), then
the rows whose summed column, or an element of an unnested array a rule sums,
holds text that is no number or a number no count can be, then duplicates
dropped by the dedupe key (the first row of each key stays) and the rest put
in ``order_by`` order. The rows are not moved here: the verdict is masks and
positions, which :func:`graphkit.projection.project.project` applies once.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Protocol

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.contract.expr import JsonPath, all_valid, filter_mask
from graphkit.contract.loader import LoadedContract
from graphkit.contract.spec import Contract, EdgeRule, NodeRule
from graphkit.core.schema import FILE_COL, arange
from graphkit.projection.conform import has_unique_dictionary
from graphkit.projection.groups import (
    LARGEST_COUNT,
    decode,
    decoded,
    encode,
    no_counts,
    not_numbers,
)
from graphkit.projection.unnest import Parsed, rows_not_counts

_ORDER = "__order"


class Submits(Protocol):
    """Where a job can run: a thread pool, or the projection's run-it-now stand-in."""

    def submit(self, fn: Any, /, *args: Any) -> Future[Any]: ...


class Verdict(msgspec.Struct):
    """Which rows are rejected (and why), and the positions of the rows to use;
    ``encoded``: columns already being dictionary-encoded (the projection's
    ``_encode_early``)."""

    bad: pa.Array
    reason: pa.Array
    column: pa.Array
    positions: pa.Array | None
    duplicates: int
    encoded: dict[str, Future[pa.Array]] = msgspec.field(default_factory=dict)


def reject_mask(contract: LoadedContract,
                 rows: pa.Table) -> tuple[pa.Array, pa.Array, pa.Array]:
    """(rejected?, reason, column) per row: the first reject rule a row meets."""
    n = rows.num_rows
    reason = pa.nulls(n, pa.string())
    column = pa.nulls(n, pa.string())
    masks = [filter_mask(rows, rule.when) for rule in contract.spec.reject]
    if not any(pc.any(m).as_py() for m in masks):
        # No row rejected (the usual case): no text arrays merged rule by rule.
        return pc.is_valid(reason), reason, column
    for rule, mask in zip(contract.spec.reject, masks, strict=True):
        reason, column = _first_reason(reason, column, mask, rule.reason, rule.column)
    return pc.is_valid(reason), reason, column


def _first_reason(reason: pa.Array, column: pa.Array, mask: pa.Array, why: str,
                  name: str | None) -> tuple[pa.Array, pa.Array]:
    """``reason`` and ``column`` with ``why`` and ``name`` where ``mask`` holds and the
    row has no reason yet: a row keeps the first reason it was rejected for."""
    fresh = pc.and_(mask, pc.is_null(reason))
    return (pc.if_else(fresh, pa.scalar(why), reason),
            pc.if_else(fresh, pa.scalar(name, pa.string()), column))


def reject_columns(contract: LoadedContract) -> set[str]:
    out: set[str] = set()
    for r in contract.spec.reject:
        out |= r.when.columns()
    return out


def split_rejects(rows: pa.Table, bad: pa.Array, reason: pa.Array,
           column: pa.Array) -> tuple[pa.Table, pa.Table]:
    """(kept rows, rejects with ``__reason`` and ``__column``)."""
    if not pc.any(bad).as_py():
        return rows, _plain(rows.slice(0, 0)).append_column("__reason",
                                                            pa.array([], pa.string())) \
            .append_column("__column", pa.array([], pa.string()))
    rejects = _plain(rows.filter(bad)).append_column("__reason", reason.filter(bad)) \
        .append_column("__column", column.filter(bad))
    return rows.filter(pc.invert(bad)), rejects


def _plain(table: pa.Table) -> pa.Table:
    """``table`` with the text columns read dictionary-encoded decoded again (all
    but the provenance ``__file``), so the rejects are the same whichever way a
    source stored its text."""
    cols = [c if name == FILE_COL else decode(c)
            for name, c in zip(table.column_names, table.columns, strict=True)]
    return pa.Table.from_arrays(cols, names=table.column_names)


def _first_rows(rows: pa.Table, column: str) -> tuple[pa.Array | None, int]:
    """Positions of the rows to keep when deduplicating on one dictionary column
    (the first row of each value, and every row where it is null), ascending,
    and the number of rows dropped; ``None`` positions when nothing is dropped.

    With one dictionary holding each value once, the value's index is its
    group: the first position per index is a scatter-min over an array as long
    as the dictionary, not a hash group-by of the rows.
    """
    import numpy as np

    f = rows.schema.field(column)
    arr = encode(rows.column(column), unique=has_unique_dictionary(f))
    n = len(arr)
    if len(arr.dictionary) == 0:
        return None, 0  # no key at all (a column the source lacks): every row stays
    valid = pc.is_valid(arr.indices).to_numpy(zero_copy_only=False)
    idx = pc.fill_null(arr.indices, 0).to_numpy(zero_copy_only=False)
    at = np.arange(n, dtype=np.int64)
    first = np.full(len(arr.dictionary), n, dtype=np.int64)
    np.minimum.at(first, idx[valid], at[valid])
    keep = ~valid | (first[idx] == at)
    kept = np.flatnonzero(keep)
    if len(kept) == n:
        return None, 0
    return pa.array(kept), n - len(kept)


def _dedupe_columns(spec: Contract) -> list[str]:
    return [spec.dedupe] if isinstance(spec.dedupe, str) else list(spec.dedupe or [])


def key_columns(spec: Contract) -> list[str]:
    """The dedupe and order columns, each once."""
    return list(dict.fromkeys([*_dedupe_columns(spec), *(spec.order_by or [])]))


def start_order(spec: Contract, table: pa.Table, bad: pa.Array,
                pool: Submits) -> Future[pa.Array] | None:
    """The sort :func:`positions_of` needs (of ``table`` without its rejected rows),
    submitted to ``pool`` now; ``None`` without ``order_by``. A caller that queues
    other jobs on a first-in-first-out pool submits the sort before them: the dedupe
    waits for it at its end, so a sort queued last left the dedupe's tail (and the
    cut of the order to the kept rows) alone on one core."""
    if not spec.order_by:
        return None
    keys = table.select(spec.order_by)
    if pc.any(bad).as_py():
        keys = keys.filter(pc.invert(bad))
    return pool.submit(_order, keys)


def positions_of(spec: Contract, table: pa.Table, bad: pa.Array,
                 on_dictionary: bool, pool: Submits | None = None,
                 sorting: Future[pa.Array] | None = None,
                 ) -> tuple[pa.Array | None, int]:
    """Positions (in ``table`` without its rejected rows) of the rows to use, in
    order: duplicates dropped (the first row of each dedupe key stays), then
    sorted by ``order_by``; ``None`` for all rows as they are. And the number
    of duplicates dropped. ``pool``: where the sort runs, beside the dedupe;
    ``sorting``: the sort already submitted there (:func:`start_order`).

    All rows are sorted, duplicates too, and the order is then cut to the rows
    kept: the sort is stable and the kept positions ascend, so the kept rows come
    in the order a sort of them alone gives (ties by position either way), and
    the sort needs no copy of the kept rows' keys, nor to wait for the dedupe.
    """
    rows = table.select(key_columns(spec))
    if pc.any(bad).as_py():
        rows = rows.filter(pc.invert(bad))
    if sorting is None and spec.order_by:
        keys = rows.select(spec.order_by)
        sorting = pool.submit(_order, keys) if pool is not None else _done(_order(keys))
    positions: pa.Array | None = None
    duplicates = 0
    dedupe = _dedupe_columns(spec)
    # A text key (an id column a source stores plain) is encoded on the way: one
    # hash pass, then the same scatter-min as for a dictionary column.
    key_type = rows.schema.field(dedupe[0]).type if len(dedupe) == 1 else None
    coded_key = (on_dictionary and key_type is not None
                 and (pa.types.is_dictionary(key_type) or pa.types.is_string(key_type)
                      or pa.types.is_large_string(key_type)))
    if coded_key:
        positions, duplicates = _first_rows(rows, dedupe[0])
    elif dedupe:
        # By values: Arrow groups a dictionary column by its indices, and a
        # coalesce of dictionary columns repeats values in its dictionary.
        keyed = decoded(rows.select(dedupe)).append_column(
            _ORDER, arange(0, rows.num_rows))
        valid = all_valid(keyed, dedupe)
        with_key = keyed.filter(valid) if not pc.all(valid).as_py() else keyed
        keep = with_key.group_by(dedupe, use_threads=False).aggregate([(_ORDER, "min")])
        if keep.num_rows != with_key.num_rows:
            duplicates = with_key.num_rows - keep.num_rows
            kept = keep.column(f"{_ORDER}_min").combine_chunks()
            if with_key.num_rows != keyed.num_rows:
                # Rows without a key cannot be told apart, so all of them stay.
                rest = keyed.filter(pc.invert(valid)).column(_ORDER).combine_chunks()
                kept = pa.concat_arrays([kept, rest])
            positions = pc.take(kept, pc.sort_indices(kept))
    if sorting is not None:
        order = sorting.result()
        positions = order if positions is None else _kept_in_order(order, positions,
                                                                   rows.num_rows)
    return positions, duplicates


def _order(keys: pa.Table) -> pa.Array:
    """The stable ascending order of ``keys``' rows, column by column."""
    # Arrow sorts tables by values, not by dictionary entries.
    return pc.sort_indices(decoded(keys), sort_keys=[(c, "ascending") for c in keys.column_names])


def _done(value: pa.Array) -> Future[pa.Array]:
    done: Future[pa.Array] = Future()
    done.set_result(value)
    return done


def _kept_in_order(order: pa.Array, kept: pa.Array, n: int) -> pa.Array:
    """The entries of ``order`` (a permutation of ``range(n)``) that are in ``kept``,
    in ``order``'s order, typed as ``kept``."""
    import numpy as np

    keep = np.zeros(n, dtype=bool)
    keep[kept.to_numpy(zero_copy_only=False)] = True
    at = order.to_numpy(zero_copy_only=False)
    return pa.array(at[keep[at]], type=kept.type)


def _summed_columns(contract: LoadedContract) -> list[str]:
    """The row columns a node or edge rule sums (an unnested array's fields aside:
    :func:`unnested_sums`)."""
    out: dict[str, None] = {}
    rules: list[NodeRule | EdgeRule] = [*contract.spec.nodes, *contract.spec.edges]
    for rule in rules:
        fields = rule.unnest.fields if rule.unnest is not None else {}
        out.update((a.sum, None) for a in rule.properties.values()
                   if a.sum is not None and a.sum not in fields)
    return list(out)


def unnested_sums(contract: LoadedContract) -> dict[str, dict[str, str]]:
    """Per unnested column, the element keys some rule sums and the field naming each."""
    out: dict[str, dict[str, str]] = {}
    rules: list[NodeRule | EdgeRule] = [*contract.spec.nodes, *contract.spec.edges]
    for rule in rules:
        if rule.unnest is None:
            continue
        for a in rule.properties.values():
            if a.sum is not None and a.sum in rule.unnest.fields:
                out.setdefault(rule.unnest.column, {}).setdefault(
                    rule.unnest.fields[a.sum], a.sum)
    return out


def _what(contract: LoadedContract, name: str) -> str:
    """``name`` as a user finds it in their rows: a JSON path's column and keys too."""
    expr = contract.derived.get(name)
    if isinstance(expr, JsonPath):
        return f"{name} ({expr.column} → {'.'.join(expr.path)})"
    return name


_LARGE = (f"holds a number past ±{LARGEST_COUNT:,} (2^53 − 1), more than any count, "
          "which a `sum` could carry past int64's range")
_PARTIAL = ("holds a negative or fractional count; an array element's summed fields "
            "count things (reads, writes), so only whole numbers from 0 are summed")


def reject_non_numbers(contract: LoadedContract, rows: pa.Table, verdict: Verdict,
                       on_dictionary: bool, parsed: Parsed | None = None) -> Verdict:
    """``verdict`` with the rows whose summed column holds text that is no number
    (``"input_tokens": "x"`` in a row's attributes) or a number past
    :data:`LARGEST_COUNT` (and, in an unnested element, a negative or fractional
    count) rejected too, so they go to the
    rejects file with their file and row instead of stopping the whole build.
    It comes after the reject rules (a row they reject keeps their reason) and costs
    one cast per summed column when all is well; dedupe and order are worked out
    again only when a row is rejected here. ``parsed``: the unnested arrays' documents
    taken apart, kept for the unnest (read from the column's early encoding, where
    there is one: the very dictionary the unnest reads then)."""
    reason, column = verdict.reason, verdict.column
    fix = "fix the value where the rows are written"
    for name in _summed_columns(contract):
        if name not in rows.column_names:
            continue
        col = rows.column(name)
        mask = not_numbers(col)
        if mask is not None:
            reason, column = _first_reason(
                reason, column, mask,
                f"{_what(contract, name)} holds text that is no number, and a `sum` reads "
                f"it; {fix}", name)
        for _kind, mask in no_counts(col, whole=False).items():
            reason, column = _first_reason(
                reason, column, mask, f"{_what(contract, name)} {_LARGE}; {fix}", name)
    for array, summed in unnested_sums(contract).items():
        if array not in rows.column_names:
            continue
        # An element's value is no message row's: the row whose array holds it goes.
        early = verdict.encoded.get(array)
        documents = rows.column(array) if early is None else early.result()
        for (key, kind), mask in rows_not_counts(documents, list(summed), parsed).items():
            why = {"text": "holds text that is no number, and a `sum` reads it",
                   "large": _LARGE}.get(kind, _PARTIAL)
            reason, column = _first_reason(
                reason, column, mask, f"{summed[key]} ({array} → [].{key}) {why}; {fix}",
                array)
    if reason is verdict.reason:
        return verdict
    bad = pc.is_valid(reason)
    # The early encodings assumed no rejected row: _coded encodes afresh.
    positions, duplicates = positions_of(contract.spec, rows, bad, on_dictionary)
    return Verdict(bad, reason, column, positions, duplicates)


