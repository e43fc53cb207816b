"""The array forms of transcript linking give exactly what the Python passes they replaced
gave: thread numbering, the held-once test, usage spots and texts, the UTC date, reading
a file by one open."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphkit.sources.transcripts.buffer import dumps_decoded
from graphkit.sources.transcripts.claude_links import _held_once
from graphkit.sources.transcripts.extras import TOKEN_KEYS, with_extras
from graphkit.sources.transcripts.files import read_file
from graphkit.sources.transcripts.links import (
    ColumnCodes,
    number_messages,
    number_threads,
)

SETTINGS = settings(max_examples=300, deadline=None, derandomize=True, database=None)

# Few distinct values, so that threads and message ids repeat, interleave and collide.
_NAMES = st.sampled_from(["a", "b", "c", "é", ""])
_ROWS = st.lists(st.tuples(_NAMES, st.one_of(st.none(), _NAMES), st.sampled_from("mnopq"),
                           st.integers(-2**40, 2**40)), max_size=40)


def _table(rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.table({
        "session_id": pa.array([r[0] for r in rows], pa.string()),
        "agent_id": pa.array([r[1] for r in rows], pa.string()),
        "message_id": pa.array([r[2] for r in rows], pa.string()),
        "_file": pa.array([len(r[0]) % 2 for r in rows], pa.int32()),
    })


@pytest.mark.slow
@SETTINGS
@given(_ROWS)
def test_number_threads_is_number_messages(rows: list[tuple[Any, ...]]) -> None:
    threads = [(r[0], r[1]) for r in rows]
    ts = [r[3] for r in rows]
    index, start = number_messages(threads, [r[2] for r in rows], ts)
    got = number_threads(_table(rows), ("session_id", "agent_id"), np.array(ts, np.int64))
    assert got.index.tolist() == index
    assert got.keys == list(start)  # threads in order of first appearance
    assert got.started.tolist() == list(start.values())
    assert [got.keys[c] for c in got.code] == threads


def _held_once_reference(table: pa.Table) -> bool:
    if not table.num_rows or table["message_id"].null_count:
        return False
    holders: dict[Any, set[tuple[Any, Any]]] = {}
    for mid, sess, f in zip(*(table[c].to_pylist() for c in ("message_id", "session_id",
                                                              "_file")), strict=True):
        holders.setdefault(mid, set()).add((sess, f))
    return all(len(h) == 1 for h in holders.values())


@pytest.mark.slow
@SETTINGS
@given(_ROWS)
def test_held_once(rows: list[tuple[Any, ...]]) -> None:
    table = _table(rows)
    assert _held_once(table) == _held_once_reference(table)


def _with_extras_reference(attributes: list[str | None], table: pa.Table,
                           facts: list[dict[str, Any]],
                           continues: dict[str, tuple[str, str]] | None = None
                           ) -> list[str | None]:
    """with_extras's usage as it was: a dict of every message's last part, json per row."""
    last: dict[int, int] = {}
    order = sorted(range(table.num_rows), key=lambda r: (
        table["_file"][r].as_py(), table["line"][r].as_py(), table["part_index"][r].as_py(), r))
    for r in order:
        last[(table["_file"][r].as_py() << 32) | table["line"][r].as_py()] = r
    out, seen = list(attributes), set()
    extra: dict[int, dict[str, Any]] = {}
    for f, fact in enumerate(facts):
        for line, key, usage in fact.get("usage", []):
            spot = last.get((f << 32) | line) if 0 <= line < 2**32 else None
            if spot is None or key in seen:
                continue
            seen.add(key)
            row = extra.setdefault(spot, {})
            acc = row.get("usage")
            row["usage"] = ({k: usage[k] for k in TOKEN_KEYS if k in usage} if acc is None
                            else {k: acc.get(k, 0) + usage.get(k, 0) for k in TOKEN_KEYS
                                  if k in acc or k in usage})
    for i, (agent, sess) in enumerate(zip(table["agent_id"].to_pylist(),
                                          table["session_id"].to_pylist(), strict=True)):
        if continues and agent is None and sess in continues:
            origin, how = continues[sess]
            extra.setdefault(i, {})["continues"] = {"session_id": origin, "how": how}
    for i, add in extra.items():
        text = out[i]
        doc = json.loads(text) if text else {}
        doc.update(add)
        out[i] = dumps_decoded(doc)
    return out


# What the parser writes (ints), and values a fast path must hand on to msgspec/json.
_COUNT = st.one_of(st.integers(0, 2**70), st.booleans(), st.floats(allow_nan=False))


@pytest.mark.slow
@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 4), st.integers(0, 2)),
                min_size=1, max_size=15),
       st.lists(st.lists(st.tuples(st.integers(-1, 5), st.sampled_from("xyz"),
                                   st.dictionaries(st.sampled_from(TOKEN_KEYS), _COUNT)),
                         max_size=4), min_size=3, max_size=3),
       st.lists(st.sampled_from([None, "", '{"claude":{"agent_kind":"orphan"}}',
                                 '{"claude":{"agent_type":1e+16}}', '{"codex":{"x":"\ud800"}}',
                                 '{"usage":{"input_tokens":1}}', '{"claude": {"a": 1}}']),
                min_size=15, max_size=15),
       st.one_of(st.none(), st.just({"s": ("o", "branch")}),
                 st.just({"t": ("s", "compaction"), "s": ("t", "teammate")})))
def test_usage_extras(rows: list[tuple[int, int, int]], usage: list[list[Any]],
                      attrs: list[str | None],
                      continues: dict[str, tuple[str, str]] | None) -> None:
    """Usage alone, added to a thread's attributes, and (with ``continues``) beside a
    continuation on the same row: as json writes the merged object."""
    table = pa.table({"_file": pa.array([r[0] for r in rows], pa.int32()),
                      "line": pa.array([r[1] for r in rows], pa.int32()),
                      "part_index": pa.array([r[2] for r in rows], pa.int32()),
                      "agent_id": pa.array([None if r[2] else "a" for r in rows], pa.string()),
                      "session_id": pa.array(["st"[r[1] % 2] for r in rows], pa.string())})
    facts = [{"usage": [list(u) for u in file_usage]} for file_usage in usage]
    attributes = attrs[:len(rows)]
    assert with_extras(attributes, table, facts, continues) == _with_extras_reference(
        attributes, table, facts, continues)


@pytest.mark.slow
@SETTINGS
@given(_ROWS, st.integers(0, 40))
def test_shared_codes(rows: list[tuple[Any, ...]], cut: int) -> None:
    """Codes encoded for the held-once test number threads as fresh ones do, and codes
    of another table (settling filtered it) are not used for this one."""
    table = _table(rows)
    ts = np.array([r[3] for r in rows], np.int64)
    fresh = number_threads(table, ("session_id", "agent_id"), ts)
    codes = ColumnCodes(table)
    assert _held_once(table, codes) == _held_once_reference(table)
    shared = number_threads(table, ("session_id", "agent_id"), ts, codes)
    assert shared.index.tolist() == fresh.index.tolist()
    assert shared.keys == fresh.keys and shared.code.tolist() == fresh.code.tolist()
    other = table.slice(0, min(cut, len(rows)))
    got = number_threads(other, ("session_id", "agent_id"), ts[:other.num_rows], codes)
    want = number_threads(other, ("session_id", "agent_id"), ts[:other.num_rows])
    assert got.index.tolist() == want.index.tolist() and got.keys == want.keys


def test_date_cast_is_strftime() -> None:
    when = [dt.datetime(1, 1, 1, tzinfo=dt.UTC), dt.datetime(999, 12, 31, 23, 59, tzinfo=dt.UTC),
            dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC),
            dt.datetime(1970, 1, 1, tzinfo=dt.UTC), dt.datetime(2000, 2, 29, 12, tzinfo=dt.UTC),
            dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC), None]
    ts = pa.chunked_array([pa.array(when, pa.timestamp("us", tz="UTC"))])
    assert pc.cast(pc.cast(ts, pa.date32()), pa.string()).equals(
        pc.strftime(ts, format="%Y-%m-%d"))


def test_read_file(tmp_path: Path) -> None:
    for size in (0, 1, 4096, 300_001):
        path = tmp_path / f"f{size}"
        path.write_bytes(os.urandom(size))
        st_, data = read_file(path)
        assert data == path.read_bytes()
        assert (st_.st_size, st_.st_mtime_ns, st_.st_ino) == (
            path.stat().st_size, path.stat().st_mtime_ns, path.stat().st_ino)
    # A file whose size says 0 but holds more (as /proc files do) is read to its end.
    if Path("/proc/self/status").exists():
        assert read_file("/proc/self/status")[1].startswith(b"Name:")
    for missing, why in ((tmp_path / "nope", FileNotFoundError), (tmp_path, IsADirectoryError)):
        try:
            read_file(missing)
        except OSError as exc:
            assert isinstance(exc, why)
            try:
                missing.read_bytes()
            except OSError as old:
                assert exc.strerror == old.strerror
        else:
            raise AssertionError(f"{missing} read")
