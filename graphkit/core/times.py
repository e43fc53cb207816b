"""Times written as text in row files, read as the graph's times (``timestamp[us, UTC]``).

Arrow's cast reads ISO 8601 text that names its zone; real row files also hold text
that does not (DuckDB's and Spark's ``2026-11-20 09:00:00``), and fractions of nine
digits (Go's RFC 3339, Java). Both the contract's conform step and ``graphkit rows``
read them here, so the two agree.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from graphkit.core.errors import SourceError

TIMESTAMP = pa.timestamp("us", tz="UTC")

# Integer times since 1970 are read only in the unit their size names. Years 2000 to
# 2100 (946,684,800 to 4,102,444,800 s) in s, ms, us and ns are four ranges a thousand
# times apart, each spanning a factor of 4.3, so they never overlap: a column whose
# values all fall in one range has one reading. Anything else (1970-era counts, mixed
# units, years past 2100) is refused rather than read decades off.
_EPOCH_FIRST, _EPOCH_END = 946_684_800, 4_102_444_800
_EPOCH_UNITS = (("s", 1, "seconds"), ("ms", 10**3, "milliseconds"),
                ("us", 10**6, "microseconds"), ("ns", 10**9, "nanoseconds"))

# Text that names its zone: a time of day, then Z or an offset (+02, +0200, +02:00).
_ZONED = r"[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?\s*(?:[Zz]|[+-]\d\d(?::?\d\d)?)$"


def naive_as_utc(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Times with no zone (naive timestamps, or text that names none) taken as UTC, as
    HypAware writes them: ``timestamp[us, UTC]``."""
    return pc.assume_timezone(arr.cast(pa.timestamp("us")), "UTC")


def _utc(arr: pa.Array | pa.ChunkedArray, zoned: bool) -> pa.Array | pa.ChunkedArray:
    """Text times as ``timestamp[us, UTC]``; ``zoned``: they name their zone, else UTC."""
    return arr.cast(TIMESTAMP) if zoned else naive_as_utc(arr)


def text_times(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Times written as text, as ``timestamp[us, UTC]``. ISO 8601 with a zone is read by one
    cast; when that fails, text without a zone (``2026-11-20 09:00:00``, as DuckDB and
    Spark write a naive time) is read as UTC, each value by whether it names its zone,
    and fractions past microseconds (Go's and Java's nanoseconds) are cut."""
    try:
        return arr.cast(TIMESTAMP)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    text = pc.replace_substring_regex(arr.cast(pa.string()), r"(\.\d{6})\d+", r"\1")
    zoned = pc.fill_null(pc.match_substring_regex(text, _ZONED), False)
    none = pa.scalar(None, pa.string())
    return pc.if_else(zoned, _utc(pc.if_else(zoned, text, none), True),
                      _utc(pc.if_else(zoned, none, text), False))


def _epoch_unit(value: float) -> str | None:
    return next((unit for unit, scale, _ in _EPOCH_UNITS
                 if _EPOCH_FIRST * scale <= value < _EPOCH_END * scale), None)


def epoch_times(arr: pa.Array | pa.ChunkedArray, column: str,
                source: str) -> pa.Array | pa.ChunkedArray:
    """Integer times since 1970 (pandas' ``to_json`` writes ms, Spark's ``unix_timestamp``
    s, Go's ``UnixNano`` ns), or floating ones (Python's ``time.time()``: seconds with a
    fraction), as ``timestamp[us, UTC]``, in the one unit that puts every value in years
    2000 to 2100; a column that fits no unit, or two, or holds NaN, is a
    :class:`SourceError` naming ``source`` and ``column``. Fractions past microseconds
    are rounded to the nearest.

    >>> epoch_times(pa.array([1_764_000_000_000, None]), "t", "f").to_pylist()[0].isoformat()
    '2025-11-24T16:00:00+00:00'
    >>> epoch_times(pa.array([1_764_000_000.25]), "t", "f").to_pylist()[0].isoformat()
    '2025-11-24T16:00:00.250000+00:00'
    """
    hint = "write the times as a timestamp column or as ISO 8601 text"
    floating = pa.types.is_floating(arr.type)
    ints = arr.cast(pa.float64() if floating else pa.int64())
    if floating and pc.any(pc.is_nan(ints)).as_py():
        raise SourceError("a time since 1970 is NaN", path=source, column=column, hint=hint)
    bounds = pc.min_max(ints).as_py()
    low, high = bounds["min"], bounds["max"]
    if low is None:
        return pa.nulls(len(arr), TIMESTAMP)
    unit = _epoch_unit(low)
    if unit is None or unit != _epoch_unit(high):
        if unit is not None and _epoch_unit(high) is not None:
            raise SourceError(
                f"times since 1970 in more than one unit: {low} reads as {unit}, {high} as "
                f"{_epoch_unit(high)} since 1970", path=source, column=column, hint=hint)
        odd = low if unit is None else high
        raise SourceError(
            f"{odd} is no time in years 2000 to 2100 as seconds, milliseconds, "
            "microseconds or nanoseconds since 1970 (the unit of a time written as a "
            "number is read from its size)", path=source, column=column, hint=hint)
    if floating:  # to the nearest microsecond (a float's 1.2 s is 1.19999…)
        scale = next(s for u, s, _ in _EPOCH_UNITS if u == unit)
        micros = pc.round(pc.multiply(ints, 10**6 / scale)).cast(pa.int64())
        return micros.cast(TIMESTAMP)
    # In range, so no overflow; safe=False only lets nanoseconds be cut.
    return pc.cast(ints.cast(pa.timestamp(unit, tz="UTC")), TIMESTAMP, safe=False)


# From year 1000 on, Arrow writes a time's year as isoformat does (four digits); before
# it, fewer. 1000-01-01T00:00:00Z in microseconds since 1970:
_ISO_LOW_US = -30_610_224_000_000_000


def iso_texts(arr: pa.Array | pa.ChunkedArray) -> list[str | None]:
    """Each value as ``datetime.isoformat()`` writes it when read back as a Python
    datetime (``2026-11-20T10:00:00.250000+00:00``; no fraction when the microseconds
    are 0), made by Arrow for UTC times: a summary of 300k sessions spent most of its
    time making and printing 600k datetimes one by one. The UTC times are written as
    zoneless ones (``2026-11-20 10:00:00.250000``: Arrow's zoned cast and ``strftime``
    look the zone up per value, ten times slower) and the text mended to isoformat's.
    Other types, zones and years before 1000 go value by value.

    >>> from datetime import datetime, UTC
    >>> iso_texts(pa.array([datetime(2026, 11, 20, 10, 0, 0, 250000, tzinfo=UTC),
    ...                     datetime(2026, 11, 20, 10, 0, tzinfo=UTC), None], TIMESTAMP))
    ['2026-11-20T10:00:00.250000+00:00', '2026-11-20T10:00:00+00:00', None]
    """
    t = arr.type
    utc = pa.types.is_timestamp(t) and t.tz in ("UTC", "+00:00", "Z")
    if not utc or t.unit not in ("s", "ms", "us"):
        return [None if v is None else v.isoformat() for v in arr.to_pylist()]
    us = arr.cast(TIMESTAMP)
    low = pc.min(us.cast(pa.int64())).as_py()
    if low is None:
        return [None] * len(arr)
    if low < _ISO_LOW_US:
        return [None if v is None else v.isoformat() for v in us.to_pylist()]
    text = us.cast(pa.timestamp("us")).cast(pa.string())  # 2026-11-20 10:00:00.250000
    text = pc.utf8_replace_slice(text, start=10, stop=11, replacement="T")
    text = pc.if_else(pc.ends_with(text, ".000000"), pc.utf8_slice_codeunits(text, 0, 19), text)
    return pc.binary_join_element_wise(text, "+00:00", "").to_pylist()
