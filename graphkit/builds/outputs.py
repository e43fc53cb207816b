"""Every path a build writes, named once: :class:`BuildOutputs`.

The snapshot folder, the rejects file beside it, the skipped-lines file beside that, the
incremental build's cache folder and graphkit's snapshot index: the build writes them,
the up-to-date check stats them, and ``--watch`` ignores them, all from one record made
from the snapshot folder and the options.

Light to import (no pyarrow): the command line's no-op rebuild reads it before the
build's own imports.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from graphkit.builds.options import BuildOptions
from graphkit.core.files import own_outputs
from graphkit.snapshot.index import index_path, record_snapshot


def default_cache_dir(snapshot_dir: Path) -> Path:
    """Where the incremental transcript index lives: beside the snapshot (never in the
    user's transcript folders).

    >>> default_cache_dir(Path("out/graph")).as_posix()
    'out/.graph.cache'
    """
    return snapshot_dir.parent / f".{snapshot_dir.name}.cache"


def default_rejects_path(snapshot_dir: Path | None) -> Path:
    """``SNAPSHOT.rejects.jsonl`` beside the snapshot (``graphkit.rejects.jsonl``
    when the graph goes only to Neo4j).

    >>> default_rejects_path(Path("out/graph")).as_posix()
    'out/graph.rejects.jsonl'
    """
    target = snapshot_dir or Path("graphkit")
    return target.with_name(target.name + ".rejects.jsonl")


def history_snapshot() -> Path:
    """Return the snapshot folder a build of your own history goes to when none is
    named (``graphkit build`` with no arguments).

    It lies beside graphkit's snapshot index (``$GRAPHKIT_HOME``, else
    ``$XDG_DATA_HOME/graphkit``, else ``~/.local/share/graphkit``), so the read
    commands find it with no arguments (:func:`graphkit.latest_own_snapshot`).

    Returns
    -------
    Path
        ``…/graphkit/history``; nothing is made or read.

    Examples
    --------
    >>> folder = history_snapshot()
    >>> folder.name, folder.parent == index_path().parent
    ('history', True)
    """
    return index_path().parent / "history"


class BuildOutputs(NamedTuple):
    """The files and folders one build writes (a record: it cannot change once made).

    ``snapshot``: the snapshot folder (None: the graph goes only to Neo4j).
    ``rejects``: unusable rows; ``rejects_given``: named by the caller (``--rejects``),
    so never removed as stale. ``cache``: the incremental build's folder (None: no
    snapshot and none named). ``index_file``: graphkit's snapshot index.

    >>> out = BuildOutputs.of(Path("/t/out/graph"), BuildOptions())
    >>> [p.as_posix() for p in (out.rejects, out.skipped_lines, out.cache)]
    ['/t/out/graph.rejects.jsonl', '/t/out/graph.skipped.jsonl', '/t/out/.graph.cache']
    >>> out.owns()("/t/out/.graph.cache/record"), out.owns()("/t/out/other")
    (True, False)
    """

    snapshot: Path | None
    rejects: Path
    rejects_given: bool
    cache: Path | None
    index_file: Path

    @classmethod
    def of(cls, snapshot_dir: str | Path | None, options: BuildOptions) -> BuildOutputs:
        """The outputs of a build into ``snapshot_dir`` with ``options``."""
        snapshot = Path(snapshot_dir) if snapshot_dir is not None else None
        cache = options.cache_dir or (default_cache_dir(snapshot) if snapshot is not None
                                      else None)
        return cls(snapshot, options.rejects_path or default_rejects_path(snapshot),
                   options.rejects_path is not None, cache, index_path())

    @property
    def skipped_lines(self) -> Path:
        """Skipped transcript lines: beside the rejects file (its name follows it)."""
        from graphkit.snapshot.rejects import skipped_lines_path  # pyarrow: not for a no-op

        return skipped_lines_path(self.rejects)

    def side_files(self) -> list[Path]:
        """The files written beside the snapshot: rejects, then skipped lines."""
        return [self.rejects, self.skipped_lines]

    def owns(self) -> Callable[[str], bool]:
        """A test of whether an absolute path is one of these outputs, inside one, or one's
        temporary sibling (a snapshot inside a watched folder starts no rebuild)."""
        return own_outputs([self.snapshot, self.cache, *self.side_files(), self.index_file])

    def record_in_index(self, sources: Sequence[Path], contract_name: str,
                        contract_version: int, granularity: str) -> dict[str, str]:
        """Record the snapshot in graphkit's snapshot index (it becomes the latest build
        of its sources; a damaged index is set aside), as summary fields: ``index``, and
        ``index_note`` when something was wrong. A snapshot written is not failed for an
        index that cannot be: the note says so instead."""
        assert self.snapshot is not None
        try:
            idx = record_snapshot(self.snapshot, sources, contract_name, contract_version,
                                  granularity, path=self.index_file)
        except OSError as exc:
            return {"index_note": f"{self.index_file}: could not record the snapshot in the "
                                  f"index: {exc.strerror or exc}"}
        return {"index": str(idx.path), **({"index_note": idx.problem} if idx.problem else {})}
