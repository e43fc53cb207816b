"""A build once :func:`graphkit.builds.snapshot.build_snapshot` knows one is needed, and
what it writes: the graph built in memory (:func:`graphkit.builds.run.build`), the rejects
and skipped lines beside the snapshot, the snapshot, its entry in the snapshot index, the
build record (:class:`~graphkit.builds.uptodate.UpToDate`) and the store.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphkit.builds.options import BuildOptions, Sources, as_paths, is_table
from graphkit.builds.outputs import BuildOutputs
from graphkit.builds.result import BuildResult
from graphkit.builds.run import build
from graphkit.builds.uptodate import UpToDate
from graphkit.core.errors import GraphkitError
from graphkit.snapshot.rejects import (
    check_rejects_folder,
    check_side_names,
    remove_stale,
    write_rejects,
    write_skipped_lines,
)
from graphkit.snapshot.write import EarlyTables, check_snapshot_target, write_snapshot

if TYPE_CHECKING:
    from graphkit.enrich.neo4j.store import Neo4jStore
    from graphkit.sources.read import Progress


def build_and_write(sources: Sources, outputs: BuildOutputs, options: BuildOptions,
                    neo4j: Neo4jStore | None, progress: Progress | None,
                    uptodate: UpToDate | None) -> tuple[BuildResult, dict[str, Any]]:
    """Check what is in the way of ``outputs``, build ``sources`` with ``options`` and
    write the outputs (``uptodate``: the decision that asked for this build, which
    records it); the result and the summary."""
    _check_outputs(outputs, [] if is_table(sources) else as_paths(sources))
    early = None
    if outputs.snapshot is not None:
        # The snapshot's tables are written as the projection makes them.
        early = EarlyTables(outputs.snapshot, options.include_content)
    try:
        return _build_and_write(sources, outputs, options, neo4j, progress, uptodate, early)
    except BaseException:
        if early is not None:
            early.abandon()
        raise


def _check_outputs(outputs: BuildOutputs, sources: Sequence[Path]) -> None:
    """Refuse, before anything is built, what is in the way of the outputs (and an
    output that would overwrite one of ``sources``)."""
    if outputs.snapshot is not None:
        check_snapshot_target(outputs.snapshot)  # a file in the way fails now, not after
    check_side_names(outputs.rejects, outputs.cache)  # first: is_dir() raises
    check_rejects_folder(outputs.rejects, sources)
    _check_cache_writable(outputs.cache)


def _build_and_write(sources: Sources, outputs: BuildOutputs, options: BuildOptions,
                     neo4j: Neo4jStore | None, progress: Progress | None,
                     uptodate: UpToDate | None, early: EarlyTables | None
                     ) -> tuple[BuildResult, dict[str, Any]]:
    """Build, write the rejects and the snapshot (``early``: its tables already being
    written), load the store."""
    say: Callable[[str], None] = progress or (lambda _msg: None)
    with _cache_errors(outputs.cache):
        # The cache as named by the outputs: beside the snapshot unless given.
        result = build(sources, replace(options, cache_dir=outputs.cache), progress=progress,
                       input_state=uptodate.inputs if uptodate is not None else None,
                       table_sink=early.add if early is not None else None)
    summary = result.summary()
    _write_side_files(result, outputs, options, summary)
    manifest = None  # the one written (the build record takes its tables' digests)
    if outputs.snapshot is not None:
        say(f"writing {outputs.snapshot}")
        manifest = write_snapshot(result.graph, outputs.snapshot,
                                  inputs=result.sources.fingerprints, summary=summary,
                                  include_content=options.include_content, early=early)
        summary["snapshot"] = str(outputs.snapshot)
        if not is_table(sources):  # rows in memory have no source set to index
            g = result.graph
            summary.update(outputs.record_in_index(as_paths(sources), g.contract_name,
                                                   g.contract_version, g.granularity))
    if result.sources.transcripts:
        # After the snapshot: how much the cache saved is no part of what was built.
        summary["transcripts"] = dict(result.sources.transcripts)
    if uptodate is not None:
        with _cache_errors(uptodate.cache_dir):
            uptodate.record((result.contract.name, result.contract.version), summary,
                            result.sources.skipped, manifest)
    if options.store == "networkx":
        from graphkit.enrich.networkx_store import NetworkXStore

        summary["networkx"] = NetworkXStore().load(result.graph).to_json()
    if neo4j is not None:
        say(f"loading into Neo4j at {neo4j.config.display_uri}")
        summary["neo4j"] = neo4j.load(result.graph, if_exists=options.if_exists,
                                      batch_size=options.batch_size,
                                      progress=progress).to_json()
    return result, summary


def _write_side_files(result: BuildResult, outputs: BuildOutputs, options: BuildOptions,
                      summary: dict[str, Any]) -> None:
    """The rejects and skipped-lines files beside the snapshot, named in the summary; a
    stale one of graphkit's own default name removed (it would claim what this build
    did not have)."""
    if result.projection.rows_rejected:
        write_rejects(outputs.rejects, result.projection.rejects,
                      include_content=options.include_content)
        summary["rejects_file"] = str(outputs.rejects)
    elif not outputs.rejects_given:
        remove_stale(outputs.rejects)
    if result.sources.skipped:
        write_skipped_lines(outputs.skipped_lines, result.sources.skipped)
        summary["skipped_lines_file"] = str(outputs.skipped_lines)
    elif not outputs.rejects_given:
        remove_stale(outputs.skipped_lines)


@contextmanager
def _cache_errors(cache_dir: Path | None) -> Iterator[None]:
    """An OSError on a path in the build's cache folder (a file where a folder of it
    should be, a folder where one of its files should be, a full disk) as one line
    saying what to do: the folder is graphkit's own, and a fresh one only costs time."""
    try:
        yield
    except OSError as exc:
        if cache_dir is None:
            raise
        top = os.path.abspath(cache_dir)
        inside = [str(f) for f in (exc.filename, exc.filename2) if f is not None and
                  os.path.commonpath([top, os.path.abspath(f)]) == top]
        if not inside:
            raise
        raise GraphkitError(f"cannot use the build cache: {exc.strerror or exc}",
                            path=inside[-1],
                            hint=f"remove {cache_dir} (the next build makes it again) or give "
                                 "another --cache-dir"
                            ) from None


def _check_cache_writable(cache_dir: Path | None) -> None:
    """Refuse, before anything is built, a cache folder (or the folder it would be made
    in) the user may not write: the build record is written after the snapshot, so a
    refusal then left a new snapshot in place of the old under an exit 2 (another
    user's snapshot in a folder anyone may write, its cache theirs)."""
    if cache_dir is None:
        return
    path = Path(os.path.abspath(cache_dir))
    from graphkit.core.files import snapshot_around

    around = snapshot_around(path)
    if around is not None:  # its files there: that snapshot could not be replaced
        raise GraphkitError(f"refusing to keep the build cache inside the snapshot {around}",
                            path=str(cache_dir), hint="give --cache-dir a folder outside it")
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is None or not existing.is_dir():
        return  # a file in the way is the build's own one-line refusal (_cache_errors)
    if not os.access(existing, os.W_OK | os.X_OK):
        raise GraphkitError("cannot use the build cache: Permission denied",
                            path=str(existing),
                            hint=f"give a --cache-dir the user running graphkit may write "
                                 f"to, or remove {cache_dir} (the next build makes it again)")
