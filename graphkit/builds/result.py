"""What a build gives back: :class:`BuildResult` (a graph built in memory) and
:class:`SnapshotResult` (a build whose graph is a snapshot on disk: one kept because
nothing changed, or one a partitioned build wrote), read only when asked for.

Light to import: a kept rebuild answers with a :class:`SnapshotResult` before pyarrow,
the contract model or the build's modules are loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphkit.contract.loader import LoadedContract
    from graphkit.core.graph import GraphTables
    from graphkit.projection.project import Projection
    from graphkit.sources.read import SourceRows

# How many skipped transcript lines a JSON summary lists (``lines_skipped`` is the total;
# every one is in the skipped-lines file beside the snapshot).
SKIPPED_IN_SUMMARY = 100


def skipped_lines_summary(skipped: Sequence[dict[str, Any]],
                          cap: int = SKIPPED_IN_SUMMARY) -> list[dict[str, Any]]:
    """Return the first ``cap`` skipped transcript lines as ``graphkit build --json``
    lists them: ``{"file", "line", "reason"}`` (line 0: a whole file).

    A build's :attr:`BuildResult.skipped` holds every line that gave no rows (each also
    in the skipped-lines file beside the snapshot); a summary lists the first ones.

    Parameters
    ----------
    skipped : sequence of dict
        ``{"path", "line", "reason"}`` records, as :attr:`BuildResult.skipped` holds them.
    cap : int
        How many to list (default 100).

    Returns
    -------
    list of dict

    Examples
    --------
    >>> skipped_lines_summary([{"path": "a.jsonl", "line": 3, "reason": "not JSON"}])
    [{'file': 'a.jsonl', 'line': 3, 'reason': 'not JSON'}]
    """
    return [{"file": s["path"], "line": s["line"], "reason": s["reason"]}
            for s in skipped[:cap]]


def source_messages(sources: SourceRows) -> list[str]:
    """What reading the sources has to say: its notes, then each finding not already
    among them (``check: message``), one line each."""
    out = list(sources.notes)
    out += [f"{f['check']}: {f['message']}" for f in sources.findings
            if f["message"] not in sources.notes]
    return out


@dataclass
class BuildResult:
    """A built graph and the account of the rows behind it: what :func:`graphkit.build`
    returns.

    ``graph`` is the :class:`~graphkit.core.graph.GraphTables`; ``summary()`` counts rows
    read, used, rejected and duplicated, skipped lines, and nodes and edges by type;
    ``skipped`` lists the transcript lines that gave no rows and ``notes`` what reading
    said. ``contract`` is the contract used, ``sources`` the rows' account and
    ``timings`` the seconds of each stage.

    >>> from graphkit.builds.run import build
    >>> result = build("samples/rows")
    >>> result.summary()["rows_rejected"], result.skipped, result.graph.granularity
    (0, [], 'thread')
    """

    contract: LoadedContract
    projection: Projection
    sources: SourceRows
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def graph(self) -> GraphTables:
        """The projected graph."""
        return self.projection.graph

    @property
    def skipped(self) -> list[dict[str, Any]]:
        """Every transcript line (or, with ``line`` 0, whole file) that gave no rows, as
        ``{"path", "line", "reason"}``."""
        return self.sources.skipped

    @property
    def notes(self) -> list[str]:
        """What reading the sources has to say, one line each (:func:`source_messages`)."""
        return source_messages(self.sources)

    def summary(self) -> dict[str, Any]:
        """Counts for the closing summary and the snapshot manifest."""
        p = self.projection
        # A copy of a message part merged into another copy (HypAware's capture paths,
        # transcripts beside their rows) was read, and is a duplicate.
        merged = self.sources.merged_copies
        out = {
            "rows_read": p.rows_read + merged,
            "rows_used": p.rows_used,
            "rows_rejected": p.rows_rejected,
            "duplicate_rows": p.duplicates + merged,
            "lines_skipped": len(self.sources.skipped),
            "nodes": self.graph.node_counts(),
            "edges": self.graph.edge_counts(),
            "dropped_edges": {t: d for t, d in p.dropped_edges.items() if any(d.values())},
        }
        if self.sources.captures:  # HypAware rows captured through OTEL were read
            out["otel_capture"] = dict(self.sources.captures)
        from graphkit.sources.transcripts.drift import unknown_records

        unknown = unknown_records(self.sources.skipped)
        if unknown:  # record types no reader knows: the next format change, counted
            out["unknown_records"] = unknown
        return out


class SnapshotResult(BuildResult):
    """A build whose graph is the snapshot in ``snapshot_dir``: the contract, the
    account and the graph are read only when asked for (the command line needs only the
    summary and the skipped lines, and a kept rebuild must not pay for more).

    ``rejects_file``: the rejects written beside the snapshot, if any.
    """

    def __init__(self, contract: str | LoadedContract, snapshot_dir: Path,
                 summary: dict[str, Any], skipped: list[dict[str, Any]],
                 rejects_file: Path | None) -> None:
        self.timings = {}
        self._named, self._dir, self._summary = contract, snapshot_dir, summary
        self._skipped, self._rejects = skipped, rejects_file
        self._contract: LoadedContract | None = None
        self._projection: Projection | None = None
        self._sources: SourceRows | None = None

    @property
    def contract(self) -> LoadedContract:
        if self._contract is None:
            from graphkit.contract.loader import LoadedContract, load_contract

            named = self._named
            self._contract = named if isinstance(named, LoadedContract) else load_contract(named)
        return self._contract

    @contract.setter
    def contract(self, value: LoadedContract) -> None:
        self._contract = value

    @property
    def sources(self) -> SourceRows:
        if self._sources is None:
            from graphkit.sources.read import SourceRows

            self._sources = SourceRows(skipped=self._skipped,
                                       transcripts=self._summary.get("transcripts", {}))
        return self._sources

    @sources.setter
    def sources(self, value: SourceRows) -> None:
        self._sources = value

    @property
    def projection(self) -> Projection:
        if self._projection is None:
            import pyarrow as pa

            from graphkit.projection.project import Projection
            from graphkit.snapshot.read import read_snapshot

            s = self._summary
            rejects = pa.table({})
            if s.get("rows_rejected") and self._rejects is not None:
                import pyarrow.json as pj

                rejects = pj.read_json(self._rejects)
            self._projection = Projection(read_snapshot(self._dir), s["rows_read"],
                                          s["rows_used"], s["duplicate_rows"], rejects,
                                          s.get("dropped_edges", {}))
        return self._projection

    @projection.setter
    def projection(self, value: Projection) -> None:
        self._projection = value

    @property
    def skipped(self) -> list[dict[str, Any]]:
        return self._skipped

    @property
    def notes(self) -> list[str]:
        return []  # nothing was read this time

    def summary(self) -> dict[str, Any]:
        return dict(self._summary)
