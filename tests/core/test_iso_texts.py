"""``iso_texts``: Arrow-made ISO text equal to ``datetime.isoformat()`` value for value."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from graphkit.core.times import TIMESTAMP, iso_texts

_YEAR_1000 = -30_610_224_000_000_000  # microseconds since 1970
_YEAR_9999_END = 253_402_300_799_999_999


def _python(arr: pa.Array | pa.ChunkedArray) -> list[str | None]:
    return [None if v is None else v.isoformat() for v in arr.to_pylist()]


def test_utc_microseconds_over_years_1000_to_9999_match_isoformat() -> None:
    rng = random.Random(7)
    ticks = [rng.randint(_YEAR_1000, _YEAR_9999_END) for _ in range(20_000)]
    ticks += [t - t % 1_000_000 for t in ticks[:2_000]]  # whole seconds: no fraction
    ticks += [_YEAR_1000, _YEAR_9999_END, 0, -1, 1, -1_000_000, 999_999, 1_000]
    arr = pa.array(ticks, pa.int64()).cast(TIMESTAMP)
    chunked = pa.chunked_array([arr[:7], arr[7:]])
    assert iso_texts(chunked) == _python(chunked)
    assert iso_texts(pa.array([*ticks[:5], None], pa.int64()).cast(TIMESTAMP)) == \
        _python(pa.array([*ticks[:5], None], pa.int64()).cast(TIMESTAMP))


@pytest.mark.parametrize("unit", ["s", "ms"])
def test_coarser_units_match_isoformat(unit: str) -> None:
    scale = {"s": 1_000_000, "ms": 1_000}[unit]
    rng = random.Random(8)
    ticks = [rng.randint(_YEAR_1000, _YEAR_9999_END) // scale for _ in range(2_000)]
    arr = pa.array(ticks, pa.int64()).cast(pa.timestamp(unit, tz="UTC"))
    assert iso_texts(arr) == _python(arr)


def test_what_arrow_writes_otherwise_goes_value_by_value() -> None:
    early = pa.array([_YEAR_1000 - 1, 0], pa.int64()).cast(TIMESTAMP)  # year 999
    assert iso_texts(early) == ["0999-12-31T23:59:59.999999+00:00",
                                "1970-01-01T00:00:00+00:00"]
    berlin = pa.array([datetime(2026, 7, 1, 12, tzinfo=UTC)], pa.timestamp("us", "Europe/Berlin"))
    assert iso_texts(berlin) == _python(berlin) == ["2026-07-01T14:00:00+02:00"]
    assert iso_texts(pa.array([None, None], TIMESTAMP)) == [None, None]
    assert iso_texts(pa.array([], TIMESTAMP)) == []
