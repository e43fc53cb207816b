"""The verdict's positions: duplicates dropped, the rest in ``order_by`` order; and the
verdict on values no count can be (token counts past 2^53, infinite, no number), whose
rows are rejected naming file, row and column.

``positions_of`` sorts all rows (beside the dedupe, on a pool) and cuts the order to
the rows kept; here it is compared with the rule written out in Python: the first
row of each dedupe key (every row without one), then a stable sort of those rows."""

from __future__ import annotations

import json
import random
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphkit.contract.loader import load_contract
from graphkit.projection.verdict import positions_of, reject_mask
from tests.helpers.cli import graphkit
from tests.helpers.rows import (
    identity_cases,
    read_rejects,
    table,
    usage_rows,
    with_touched_files,
)

_T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _expected(cols: dict[str, list[Any]], bad: list[bool], dedupe: list[str],
              order_by: list[str]) -> list[int]:
    live = [i for i, b in enumerate(bad) if not b]  # positions count rows not rejected
    seen: set[tuple[Any, ...]] = set()
    kept = []
    for at, i in enumerate(live):
        key = tuple(cols[c][i] for c in dedupe)
        if dedupe and all(v is not None for v in key):
            if key in seen:
                continue
            seen.add(key)
        kept.append(at)
    def key(at: int) -> tuple[Any, ...]:
        # Arrow's ascending sort puts nulls last, column by column.
        values = [cols[c][live[at]] for c in order_by]
        return tuple((True, 0) if v is None else (False, v) for v in values)

    return sorted(kept, key=key)  # stable: ties stay in position order


def _column(values: list[Any], kind: str) -> pa.Array:
    if kind == "time":
        return pa.array(values, pa.timestamp("us", tz="UTC"))
    arr = pa.array(values, pa.string())
    return arr.dictionary_encode() if kind == "dictionary" else arr


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("threads", [False, True])
def test_positions_are_the_kept_rows_sorted(seed: int, threads: bool) -> None:
    rnd = random.Random(seed)
    n = rnd.choice([0, 1, 7, 300, 5000])
    ids = [f"p{rnd.randrange(max(1, n // 3))}" if rnd.random() > 0.1 else None
           for _ in range(n)]
    times = [_T0 + timedelta(seconds=rnd.randrange(5)) if rnd.random() > 0.1 else None
             for _ in range(n)]
    other = [rnd.choice(["a", "b", "", None]) for _ in range(n)]
    bad = [rnd.random() < 0.05 for _ in range(n)]
    cols = {"part_id": ids, "message_created_at": times, "model": other}
    kinds = {"part_id": rnd.choice(["plain", "dictionary"]), "message_created_at": "time",
             "model": rnd.choice(["plain", "dictionary"])}
    table = pa.table({c: _column(v, kinds[c]) for c, v in cols.items()})
    base = load_contract("ai-gateway-graph").spec
    shapes: list[tuple[Any, list[str]]] = [
        ("part_id", ["message_created_at", "part_id"]),  # the shipped contract's
        ("part_id", ["model", "message_created_at"]),
        (["part_id", "model"], ["message_created_at"]),
        (None, ["part_id", "model"]),
        ("part_id", []),
    ]
    pool = ThreadPoolExecutor(2) if threads else None
    try:
        for dedupe, order_by in shapes:
            spec = base.model_copy(update={"dedupe": dedupe, "order_by": order_by})
            keys = [dedupe] if isinstance(dedupe, str) else list(dedupe or [])
            want = _expected(cols, bad, keys, order_by)
            for on_dictionary in (True, False):
                got, dropped = positions_of(spec, table, pa.array(bad, pa.bool_()),
                                            on_dictionary, pool)
                got_list = list(range(n - sum(bad))) if got is None else got.to_pylist()
                assert got_list == want, (dedupe, order_by, on_dictionary)
                assert dropped == n - sum(bad) - len(want)
    finally:
        if pool is not None:
            pool.shutdown()


@pytest.mark.parametrize("rejected", [False, True])
def test_reject_mask_names_the_first_rule_a_row_meets(rejected: bool) -> None:
    # The shipped contract's rules: a blank session_id, no message_id, schema_version < 6.
    rows = pa.table({
        "session_id": ["s", " " if rejected else "s", "s", "" if rejected else "s", "s"],
        "message_id": ["m", "m", None if rejected else "m", None if rejected else "m", "m"],
        "schema_version": [7, 7, 7, 7, 5 if rejected else 6],
    })
    contract = load_contract("ai-gateway-graph")
    bad, reason, column = reject_mask(contract, rows)
    by_column = {r.column: r.reason for r in contract.spec.reject}
    want = ([None, "session_id", "message_id", "session_id", "schema_version"] if rejected
            else [None] * 5)
    assert bad.to_pylist() == [w is not None for w in want]
    assert column.to_pylist() == want
    assert reason.to_pylist() == [None if w is None else by_column[w] for w in want]


def test_a_started_sort_gives_the_same_positions() -> None:
    # start_order submits the sort ahead of other jobs; positions_of then takes it.
    from graphkit.projection.verdict import start_order

    rnd = random.Random(5)
    n = 4000
    table = pa.table({
        "part_id": [f"p{rnd.randrange(1500)}" for _ in range(n)],
        "message_created_at": pa.array(
            [_T0 + timedelta(seconds=rnd.randrange(50)) for _ in range(n)],
            pa.timestamp("us", tz="UTC")),
        "model": [rnd.choice(["a", "b", None]) for _ in range(n)]})
    spec = load_contract("ai-gateway-graph").spec
    with ThreadPoolExecutor(2) as pool:
        for bad in ([False] * n, [rnd.random() < 0.05 for _ in range(n)]):
            mask = pa.array(bad, pa.bool_())
            plain = positions_of(spec, table, mask, True, pool)
            sorting = start_order(spec, table, mask, pool)
            assert sorting is not None
            started = positions_of(spec, table, mask, True, pool, sorting)
            assert started[1] == plain[1]
            assert started[0] is not None and plain[0] is not None
            assert started[0].equals(plain[0])


def test_the_sort_is_queued_before_the_early_encodes(monkeypatch: pytest.MonkeyPatch) -> None:
    # On the projection's first-in-first-out pool, a sort queued behind the early
    # encodes ran last and the dedupe (which waits for it) ended alone on one core.
    import graphkit.projection.project as project_module
    from graphkit.builds.run import build, example_rows, records_table
    from graphkit.projection.groups import encode
    from graphkit.projection.verdict import _order

    submitted: list[Any] = []

    class Recording(ThreadPoolExecutor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            submitted.append(fn)
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(project_module, "ThreadPoolExecutor", Recording)
    rows = [dict(r, message_id=f"{r['message_id']}-{i}", part_id=f"{r['part_id']}-{i}")
            for i in range(600) for r in example_rows()]  # 3 000 rows: the threaded path
    build(records_table(rows))
    assert _order in submitted and encode in submitted
    assert submitted.index(_order) < submitted.index(encode)


def test_columns_of_json_derived_ones_are_made_beside_the_dedupe(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The shipped contract's usage_cache_creation coalesces two JSON-path columns: made on
    # the pool right after the paths (beside the dedupe), not on the calling thread after.
    import threading

    from graphkit.builds.run import build, example_rows, records_table
    from graphkit.contract.expr import Coalesce

    on_main: dict[str, bool] = {}
    real = Coalesce.evaluate

    def recorded(self: Coalesce, table: pa.Table) -> Any:
        on_main[",".join(sorted(self.columns()))] = (
            threading.current_thread() is threading.main_thread())
        return real(self, table)

    monkeypatch.setattr(Coalesce, "evaluate", recorded)
    rows = [dict(r, message_id=f"{r['message_id']}-{i}", part_id=f"{r['part_id']}-{i}")
            for i in range(600) for r in example_rows()]  # 3 000 rows: the threaded path
    build(records_table(rows))
    assert on_main["usage_cache_creation_a,usage_cache_creation_b"] is False
    assert on_main["usage_cache_read_a,usage_cache_read_b"] is False


def test_infinite_token_counts_are_no_number(tmp_path: Path) -> None:
    # Was: Infinity / 1e400 in attributes.usage built a snapshot whose `usage` crashed
    # (OverflowError: cannot convert float infinity to integer).
    rows = [dict(r) for r in identity_cases() if r["session_id"]]
    rows[1]["attributes"] = '{"usage": {"input_tokens": Infinity, "output_tokens": 1e400}}'
    rows[3]["attributes"] = '{"usage": {"input_tokens": 12, "output_tokens": NaN}}'
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    assert graphkit("build", src, "--snapshot", tmp_path / "snap").returncode == 0
    proc = graphkit("usage", "--snapshot", tmp_path / "snap", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["record"] for line in proc.stdout.splitlines()]
    assert "inf" not in proc.stdout.lower() and "nan" not in proc.stdout.lower()
    assert '"own": {"input_tokens": 12, "output_tokens": 0' in proc.stdout


def test_a_token_count_that_is_no_number_rejects_its_row(tmp_path: Path) -> None:
    # Was: exit 2 for the whole build, naming the column but no file or row.
    rows = [dict(r) for r in identity_cases() if r["session_id"]]
    rows[2]["attributes"] = '{"usage": {"input_tokens": "lots", "output_tokens": 1}}'
    pq.write_table(table(rows), tmp_path / "rows.parquet")
    proc = graphkit("build", tmp_path / "rows.parquet", "--snapshot", tmp_path / "snap",
                    "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows_rejected"] == 1
    rejects = [json.loads(line) for line in
               (tmp_path / "snap.rejects.jsonl").read_text().splitlines()]
    assert [(r["source"], r["row"], r["column"]) for r in rejects] == [
        (str(tmp_path / "rows.parquet"), 3, "usage_input")]
    assert "usage.input_tokens" in rejects[0]["reason"]


def test_numbers_past_a_floats_range_keep_the_rest_of_their_document(tmp_path: Path) -> None:
    # Was: a number of more than 4,300 digits in `attributes` made
    # json.loads refuse the whole document, so the subagent lost its parent without a
    # word; 1,000 digits in touched_files (the Arrow way) summed to an infinite count
    # and `graphkit files` failed with an OverflowError traceback.
    rows = [dict(r) for r in identity_cases() if r["session_id"]]
    huge = "1" + "0" * 5000
    rows[2]["attributes"] = rows[2]["attributes"][:-1] + f', "usage": {{"input_tokens": {huge}}}}}'
    rows[3]["touched_files"] = '[{"path": "/a", "reads": 1' + "0" * 999 + ', "writes": 2}]'
    src = tmp_path / "rows.parquet"
    pq.write_table(with_touched_files(rows), src)
    assert graphkit("build", src, "--snapshot", tmp_path / "snap").returncode == 0
    lineage = graphkit("lineage", "agentA", "--snapshot", tmp_path / "snap", "--json")
    assert lineage.returncode == 0, lineage.stderr
    assert json.loads(lineage.stdout)["ancestors"][0]["type"] == "Thread"
    files = graphkit("files", "--snapshot", tmp_path / "snap", "--json")
    assert files.returncode == 0, files.stderr
    found = [json.loads(line) for line in files.stdout.splitlines()]
    assert [(f["path"], f["reads"], f["writes"]) for f in found] == [("/a", 0, 2)]
    usage = graphkit("usage", "--snapshot", tmp_path / "snap", "--json")
    assert usage.returncode == 0 and "inf" not in usage.stdout.lower(), usage.stderr


@pytest.mark.parametrize("count", [2**63 - 1, 2**64 - 1, 2**53, -(2**60), 1e300])
def test_a_token_count_no_count_can_be_rejects_its_row(tmp_path: Path,
                                                       count: int | float) -> None:
    # Was: two rows of 2**62 + 1 (or any count near int64's limit) summed to a negative
    # total without a word (Arrow's hash_sum wraps); 2**64 - 1 (a -1 written unsigned)
    # summed as 1.8e19 tokens.
    src = usage_rows(tmp_path, {0: {"input_tokens": count, "output_tokens": 1},
                                 1: {"input_tokens": count, "output_tokens": 2},
                                 2: {"input_tokens": 5, "output_tokens": 3}})
    snap = tmp_path / "snap"
    proc = graphkit("build", src, "--snapshot", snap, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows_rejected"] == 2
    rejects = read_rejects(snap)
    assert [(r["source"], r["row"], r["column"]) for r in rejects] == [
        (str(src), 1, "usage_input"), (str(src), 2, "usage_input")]
    assert "usage.input_tokens" in str(rejects[0]["reason"])
    assert "2^53" in str(rejects[0]["reason"])
    usage = graphkit("usage", "--snapshot", snap, "--json")
    assert usage.returncode == 0, usage.stderr
    totals = [json.loads(line)["total"] for line in usage.stdout.splitlines()
              if json.loads(line)["record"] == "usage"]
    assert all(0 <= t["input_tokens"] <= 5 for t in totals), totals


def test_the_largest_count_is_summed(tmp_path: Path) -> None:
    src = usage_rows(tmp_path, {0: {"input_tokens": 2**53 - 1}})
    proc = graphkit("build", src, "--snapshot", tmp_path / "snap", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["rows_rejected"] == 0, proc.stderr
