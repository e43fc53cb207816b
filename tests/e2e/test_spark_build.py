"""The Spark engine on a real local Spark (``local[2]``) writes the same snapshot as
the local engines, table for table and byte for byte.

One Spark session (tests/e2e/conftest.py) serves the folder: starting the JVM is
the slow part.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphkit.builds.partitioned import build_local
from graphkit.builds.partitioned.spark import build_spark
from graphkit.core.errors import GraphkitError
from tests.helpers.cli import graphkit
from tests.helpers.rows import identity_cases, table, write_parquet
from tests.helpers.same_build import (
    assert_same_snapshot,
    continuation_rows,
    digests,
    generated_rows,
    reference,
    same_summary,
)


def test_generated_rows_and_hypaware_cache(spark: Any, fixtures: Path, tmp_path: Path) -> None:
    gen = generated_rows(tmp_path / "gen-rows", rows=5000)
    cache = fixtures / "hypaware-cache" / "cache"
    for name, sources, n in [("gen", [gen], 3), ("cache", [cache], 2)]:
        out = tmp_path / name
        summary = reference(sources, out / "memory")
        local = build_local(sources, out / "local", partitions=n, fingerprints=False)
        r = build_spark(sources, out / "spark", partitions=n, spark=spark, fingerprints=False)
        assert r.summary["engine"]["name"] == "spark"
        assert same_summary(r.summary, summary) and same_summary(local.summary, summary)
        assert digests(out / "spark") == digests(out / "local")
        assert_same_snapshot(out / "memory", out / "spark")


def test_mixed_sources_rejects_and_message_granularity(spark: Any, fixtures: Path,
                                                       sample_rows: Path,
                                                       tmp_path: Path) -> None:
    # Parquet read by Spark; JSON Lines and transcripts read by graphkit and handed
    # to Spark as Arrow tables; rejected and duplicate rows among them.
    jsonl = tmp_path / "in" / "rows.jsonl"
    jsonl.parent.mkdir()
    rows = table(identity_cases()).to_pylist()
    jsonl.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    sources = [sample_rows, jsonl, fixtures / "hypaware-cache" / "home" / ".codex" / "sessions"]
    opts = {"granularity": "message", "cache_dir": tmp_path / "cache"}
    summary = reference(sources, tmp_path / "memory", **opts)
    assert summary["rows_rejected"] == 1 and summary["duplicate_rows"] >= 1
    r = build_spark(sources, tmp_path / "spark", partitions=2, spark=spark,
                    fingerprints=False, **opts)
    assert same_summary(r.summary, summary)
    assert r.rejects is not None and r.rejects.column("message_id").to_pylist() == ["orphan"]
    assert_same_snapshot(tmp_path / "memory", tmp_path / "spark")


def test_a_bad_column_type_is_one_line(spark: Any, tmp_path: Path) -> None:
    # message_index holds text: the driver checks each Parquet file's schema against
    # the contract before Spark reads it, so the error is graphkit's one line (a
    # value failing inside a Spark task comes back the same way, see _guard).
    rows = table(identity_cases()).set_column(
        table(identity_cases()).schema.get_field_index("message_index"), "message_index",
        pa.array(["x"] * 8))
    pq.write_table(rows, tmp_path / "bad.parquet")
    with pytest.raises(GraphkitError) as err:
        build_spark([tmp_path / "bad.parquet"], tmp_path / "out", spark=spark,
                    fingerprints=False)
    assert "message_index" in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()


def test_cli_engine_spark(spark: Any, sample_rows: Path, tmp_path: Path) -> None:
    # The running session is reused (and left running), as under spark-submit.
    res = graphkit("build", sample_rows, "--snapshot", tmp_path / "s", "--engine", "spark",
                   "--json")
    assert res.returncode == 0, res.output
    out = json.loads(res.output)
    assert out["engine"]["name"] == "spark" and out["engine"]["master"] == "local[2]"
    reference([sample_rows], tmp_path / "memory")
    assert digests(tmp_path / "s") == digests(tmp_path / "memory")
    assert len(json.loads((tmp_path / "s" / "manifest.json").read_text())["inputs"]) == 4
    assert spark.sparkContext._jsc is not None  # still running


@pytest.mark.slow
def test_continuations_across_partitions(spark: Any, sample_rows: Path, tmp_path: Path) -> None:
    # Sessions continuing sessions of other Spark partitions (the sample's resume and
    # fork, and generated ones): the merged edges, drop counts and bytes of the
    # in-memory build.
    from pyspark.sql import functions as F

    rows, pairs = continuation_rows()
    gen = write_parquet(rows, tmp_path / "gen" / "rows.parquet")
    part = [F.pmod(F.xxhash64(c), F.lit(3)) for c in ("s", "o")]  # as _project_stage keys
    crossing = spark.createDataFrame(pairs, ["s", "o"]).filter(part[0] != part[1]).count()
    assert crossing > len(pairs) // 3
    sources = [sample_rows, gen.parent]
    summary = reference(sources, tmp_path / "memory")
    assert summary["edges"]["CONTINUES"] == len(set(pairs)) + 2
    assert summary["dropped_edges"]["CONTINUES"]["missing_target"] > 0
    r = build_spark(sources, tmp_path / "spark", partitions=3, spark=spark, fingerprints=False)
    assert same_summary(r.summary, summary)
    assert_same_snapshot(tmp_path / "memory", tmp_path / "spark")
