"""``graphkit build --engine local|spark --partitions N|auto --spark-master URL``.

The CLI hands the parsed options here; everything the engines need to decide
lives in this package. The files beside the snapshot (rejects, skipped lines,
the snapshot index) follow the in-memory build's rules
(:func:`graphkit.builds.run.build_snapshot`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from graphkit.core.errors import GraphkitError
from graphkit.sources.read import Progress


class EngineOptionError(GraphkitError):
    """Build options that do not fit together."""


def parse_partitions(value: str | None) -> int | None:
    """``N`` → N, ``auto`` (or nothing) → None (sized from the input)."""
    if value is None or value.strip().lower() == "auto":
        return None
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise EngineOptionError(f"--partitions {value!r} is not a positive number",
                                hint="give a count such as 8, or auto")
    return n


def _check(snapshot_dir: Path | None, engine: str, store: str,
           spark_master: str | None) -> Path:
    if snapshot_dir is None:
        raise EngineOptionError(f"--engine {engine} / --partitions writes a snapshot",
                                hint="give --snapshot DIR")
    if store != "snapshot":
        raise EngineOptionError("a partitioned build writes the snapshot only",
                                hint="build with --snapshot DIR, then `graphkit load DIR"
                                     + (" --engine spark`" if engine == "spark" else "`"))
    if spark_master and engine != "spark":
        raise EngineOptionError("--spark-master needs --engine spark")
    return snapshot_dir


def engine_build(
    sources: list[Path],
    snapshot_dir: Path | None,
    *,
    engine: str,
    partitions: str | None,
    spark_master: str | None,
    contract: str,
    granularity: str,
    rejects_path: Path | None,
    include_content: bool,
    strict: bool,
    since: datetime | None,
    cache_dir: Path | None,
    store: str = "snapshot",
    until: datetime | None = None,
    progress: Progress | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run a partitioned build (local or Spark); the summary and skipped lines."""
    from graphkit.snapshot.index import record_snapshot
    from graphkit.snapshot.rejects import check_side_names, remove_stale, skipped_lines_path

    snapshot_dir = _check(snapshot_dir, engine, store, spark_master)
    n = parse_partitions(partitions)
    rejects_file = rejects_path or snapshot_dir.with_name(snapshot_dir.name + ".rejects.jsonl")
    cache_dir = cache_dir or snapshot_dir.parent / f".{snapshot_dir.name}.cache"
    check_side_names(rejects_file, cache_dir)
    kwargs: dict[str, Any] = dict(
        contract=contract, partitions=n, granularity=granularity, strict=strict, since=since,
        until=until, cache_dir=cache_dir,
        progress=progress, include_content=include_content, rejects_file=rejects_file)
    if engine == "spark":
        from graphkit.builds.partitioned.spark import build_spark

        result = build_spark(sources, snapshot_dir, master=spark_master, **kwargs)
    else:
        from graphkit.builds.partitioned.local import build_local

        result = build_local(sources, snapshot_dir, **kwargs)
    if result.rejects is None and rejects_path is None:
        remove_stale(rejects_file)  # it would claim rejects this build did not have
    summary = dict(result.summary)
    if not result.skipped and rejects_path is None:
        remove_stale(skipped_lines_path(rejects_file))
    summary["snapshot"] = str(snapshot_dir)
    m = result.manifest
    try:
        idx = record_snapshot(snapshot_dir, sources, m["contract"]["name"],
                              m["contract"]["version"], m["granularity"])
        summary["index"] = str(idx.path)
        if idx.problem:
            summary["index_note"] = idx.problem
    except OSError as exc:
        summary["index_note"] = f"could not record the snapshot in the index: {exc}"
    return summary, result.skipped
