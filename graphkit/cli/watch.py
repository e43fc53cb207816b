"""``graphkit build --watch``'s lines for people: one per rebuild.

The watch itself (the OS's file events, what to ignore, each rebuild, the signals) is
:func:`graphkit.watch_builds`; ``graphkit build`` renders each rebuild it reports.
"""

from __future__ import annotations

from typing import Any


def rebuild_line(n: int, changed: int, summary: dict[str, Any] | None, seconds: float) -> str:
    """One line for people: what rebuild ``n`` after ``changed`` changed paths did
    (``summary``; None: it failed) and how long it took.

    >>> s = {"rows_read": 9, "nodes": {"A": 2}, "edges": {"E": 1}, "transcripts": {
    ...     "files_parsed": 1, "files_reused": 4, "groups_projected": 1, "groups_reused": 2,
    ...     "sessions_projected": 1, "sessions_reused": 5}}
    >>> rebuild_line(3, 1, s, 0.123).split("; ")
    ['rebuild 3 (1 changed path): 1 file parsed, 4 reused', '1 session projected, 5 kept', \
'2 nodes, 1 edge', 'snapshot written in 0.12 s']
    """
    head = f"rebuild {n} ({changed} changed path{'s' * (changed != 1)})"
    s = summary
    if s is None:
        return f"{head}: failed; the snapshot is the previous one"
    if s.get("snapshot_reused"):
        return f"{head}: nothing changed, snapshot kept in {seconds:.2f} s"
    parts = []
    tr = s.get("transcripts") or {}
    if tr:
        parts.append(f"{_n(tr['files_parsed'], 'file')} parsed, {tr['files_reused']} reused")
        if "sessions_projected" in tr:
            parts.append(f"{_n(tr['sessions_projected'], 'session')} projected, "
                         f"{tr['sessions_reused']} kept")
    else:
        parts.append(f"{_n(s['rows_read'], 'row')} read")
    parts.append(f"{_n(sum(s['nodes'].values()), 'node')}, "
                 f"{_n(sum(s['edges'].values()), 'edge')}")
    return f"{head}: " + "; ".join(parts) + f"; snapshot written in {seconds:.2f} s"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"
