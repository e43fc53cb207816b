"""A partitioned build into a snapshot: ``graphkit build --engine local|spark
--partitions N|auto --spark-master URL``, reached through
:func:`graphkit.builds.snapshot.build_snapshot`.

The options are checked where they are made (:class:`~graphkit.builds.options.BuildOptions`);
the files beside the snapshot (rejects, skipped lines, the snapshot index) are the ones
:class:`~graphkit.builds.outputs.BuildOutputs` names, with the in-memory build's rules.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphkit.builds.options import BuildOptions
from graphkit.builds.outputs import BuildOutputs
from graphkit.builds.result import SnapshotResult
from graphkit.core.errors import GraphkitError

if TYPE_CHECKING:
    from graphkit.sources.read import Progress


def engine_build(sources: list[Path], outputs: BuildOutputs, options: BuildOptions,
                 progress: Progress | None = None) -> tuple[SnapshotResult, dict[str, Any]]:
    """Run a partitioned build (local or Spark) into ``outputs.snapshot``: the result
    (its graph read from the snapshot when asked for) and the summary."""
    from graphkit.snapshot.rejects import check_side_names, remove_stale

    snapshot_dir = outputs.snapshot
    if snapshot_dir is None:
        raise GraphkitError(f"--engine {options.engine} / --partitions writes a snapshot",
                            hint="give --snapshot DIR")
    check_side_names(outputs.rejects, outputs.cache)
    # The engines read transcripts through the cache the outputs name (beside the snapshot
    # unless given).
    options = replace(options, cache_dir=outputs.cache)
    if options.engine == "spark":
        from graphkit.builds.partitioned.spark import build_spark

        result = build_spark(sources, snapshot_dir, options, progress=progress,
                             rejects_file=outputs.rejects)
    else:
        from graphkit.builds.partitioned.local import build_local

        result = build_local(sources, snapshot_dir, options, progress=progress,
                             rejects_file=outputs.rejects)
    if result.rejects is None and not outputs.rejects_given:
        remove_stale(outputs.rejects)  # it would claim rejects this build did not have
    summary = dict(result.summary)
    if not result.skipped and not outputs.rejects_given:
        remove_stale(outputs.skipped_lines)
    summary["snapshot"] = str(snapshot_dir)
    m = result.manifest
    summary.update(outputs.record_in_index(sources, m["contract"]["name"],
                                           m["contract"]["version"], m["granularity"]))
    rejects = outputs.rejects if result.rejects is not None else None
    return SnapshotResult(options.contract, snapshot_dir, summary, result.skipped,
                          rejects), summary
