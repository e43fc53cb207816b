"""A build into a snapshot folder (and a store): :func:`build_snapshot`, what
``graphkit build`` runs.

In order: the options made one value and the paths the build writes named
(:class:`~graphkit.builds.outputs.BuildOutputs`); the up-to-date decision
(:class:`~graphkit.builds.uptodate.UpToDate`), before anything heavy is imported; then
the build and what it writes (:func:`graphkit.builds.write.build_and_write`: in memory,
the rejects and skipped lines, the snapshot, its index entry and the store), or a
partitioned build (:func:`graphkit.builds.partitioned.command.engine_build`).

Light to import: a rebuild that keeps its snapshot loads nothing more.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphkit.builds.options import BuildOptions, Sources, as_paths, is_table
from graphkit.builds.outputs import BuildOutputs
from graphkit.builds.result import BuildResult, SnapshotResult
from graphkit.builds.uptodate import UpToDate
from graphkit.core.errors import GraphkitError

if TYPE_CHECKING:
    from graphkit.enrich.neo4j.store import Neo4jStore
    from graphkit.sources.read import Progress


def build_snapshot(
    sources: Sources,
    snapshot_dir: str | Path | None,
    options: BuildOptions | None = None,
    *,
    neo4j: Neo4jStore | None = None,
    progress: Progress | None = None,
    **keywords: Any,
) -> tuple[BuildResult, dict[str, Any]]:
    """Build ``sources`` into a snapshot folder and return the build and its summary
    (what ``graphkit build`` runs).

    The rejects and skipped lines are written beside the snapshot, the snapshot is
    swapped into place whole (a failed build leaves the last one), and the graph is
    loaded into ``options.store``. When nothing changed since the last build of the
    same sources with the same options, the snapshot is kept and nothing is read
    (``summary["snapshot_reused"]``).

    Parameters
    ----------
    sources : str, Path, sequence of them, or pyarrow.Table
        As :func:`graphkit.build` takes them.
    snapshot_dir : str, Path or None
        The snapshot folder (None: the graph goes only to Neo4j, with
        ``store="neo4j"``). An existing folder must be a graphkit snapshot.
    options : BuildOptions, optional
        The build's options. ``store`` is ``snapshot`` (the snapshot alone),
        ``networkx`` (also loaded into an in-process NetworkX graph, whose counts the
        summary reports) or ``neo4j`` (also loaded into ``neo4j``).
    neo4j : Neo4jStore, optional
        A connected store, for ``store="neo4j"``.
    progress : callable, optional
        Called with a line for each step.
    **keywords
        Build options by name: they make ``options`` (or replace its values).

    Returns
    -------
    tuple of (BuildResult, dict)
        The build (for a kept or partitioned build, a result that reads its graph
        from the snapshot when asked) and the summary ``graphkit build --json``
        prints: ``snapshot``, rows read, used and rejected, ``nodes``, ``edges``, ….

    Raises
    ------
    GraphkitError
        No snapshot folder and no Neo4j store; options that clash; the snapshot
        folder is not graphkit's or cannot be written (``SnapshotError``); a source
        or the contract cannot be read (``SourceError``, ``ContractError``).

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "graph"
    >>> result, summary = build_snapshot("samples/rows", str(out), granularity="message")
    >>> summary["snapshot"] == str(out), summary["nodes"]["Session"]
    (True, 14)
    >>> again = build_snapshot("samples/rows", out, BuildOptions(granularity="message"))
    >>> again[1]["snapshot_reused"], again[0].graph.node_counts()["Session"]
    (True, 14)
    """
    options = BuildOptions.of(options, **keywords)
    outputs = BuildOutputs.of(snapshot_dir, options)
    in_memory = is_table(sources)
    if options.partitioned:
        if in_memory:
            raise GraphkitError("a partitioned build reads files, not a table in memory",
                                hint="build the table with the default engine")
        from graphkit.builds.partitioned.command import engine_build

        return engine_build(as_paths(sources), outputs, options, progress)
    if outputs.snapshot is None and options.store != "neo4j":
        raise GraphkitError("no snapshot folder given",
                            hint="give --snapshot DIR to say where the graph goes "
                                 "(or --store neo4j)")
    if options.store == "neo4j" and neo4j is None:
        raise GraphkitError("--store neo4j needs a Neo4j connection",
                            hint="set NEO4J_URI (and NEO4J_USERNAME/NEO4J_PASSWORD)")
    uptodate = (UpToDate(as_paths(sources), outputs, options)
                if not in_memory and UpToDate.applies(outputs, options) else None)
    if uptodate is not None and (kept := uptodate.kept()) is not None:
        summary, skipped = kept
        rejects = outputs.rejects if summary.get("rejects_file") else None
        return SnapshotResult(options.contract, uptodate.snapshot_dir, summary, skipped,
                              rejects), summary
    # A build is needed: its modules (pyarrow, the contract, the projection) load now.
    from graphkit.builds.write import build_and_write

    return build_and_write(sources, outputs, options, neo4j, progress, uptodate)
