"""Times written as text in row files, read as the graph's times (``timestamp[us, UTC]``).

Arrow's cast reads ISO 8601 text that names its zone; real row files also hold text
that does not (DuckDB's and Spark's ``2026-11-20 09:00:00``), and fractions of nine
digits (Go's RFC 3339, Java). Both the contract's conform step and ``graphkit rows``
read them here, so the two agree.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

TIMESTAMP = pa.timestamp("us", tz="UTC")

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
