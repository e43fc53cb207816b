"""Which thread read or wrote which file — the same from any store.

The default contract makes a ``File`` node per absolute path a tool call named
and a ``TOUCHED`` edge from each thread to each file it touched, with
``reads``/``writes`` counts and first/last time. These functions read them
back per session, or per path pattern across sessions ("which agents changed
this file?").
"""

from __future__ import annotations

import fnmatch
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphkit.enrich.base import LineageReader
from graphkit.queries.usage import require_sessions
from graphkit.queries.window import When, Window
from graphkit.sources.touched import DRIVE as _DRIVE

TOUCHED = "TOUCHED"
FILE = "File"
FILE_KEY = "file_path"
_EDGE_COLUMNS = ("reads", "writes", "first_seen", "last_seen")


@dataclass(frozen=True, order=True)
class FileTouch:
    """One (thread, file) pair: how often the thread read and wrote the file, and when
    first and last. :func:`files` returns them.

    >>> touch = FileTouch("s-1", "ag-1", "/repo/src/app.py", reads=2, writes=1)
    >>> touch.path, touch.reads + touch.writes
    ('/repo/src/app.py', 3)
    """

    session_id: str
    thread: str
    path: str
    reads: int
    writes: int
    first_seen: str | None = None
    last_seen: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"session_id", "thread", "path", "reads", "writes"}``."""
        return {"session_id": self.session_id, "thread": self.thread, "path": self.path,
                "reads": self.reads, "writes": self.writes}


def matches(path: str, pattern: str) -> bool:
    r"""Whether ``path`` matches ``pattern``: a shell glob over the whole path
    (``*/src/*.py``), or, without glob characters, a path ending
    (``src/app.py`` matches ``/home/dev/web/src/app.py``) or the path itself.

    >>> matches("/w/src/app.py", "src/app.py"), matches("/w/src/app.py", "*.py")
    (True, True)
    >>> matches("/w/xsrc/app.py", "src/app.py")
    False

    The pattern is spelled as the build spells paths (``./a.py`` is ``a.py``, ``//``
    one ``/``, Unicode NFC), and a Windows path (``C:\w\src\app.py``) is matched
    with ``/`` or ``\`` between its parts, as a user may type either:

    >>> matches(r"C:\w\src\app.py", "src/app.py"), matches("/w/a.py", "./a.py")
    (True, True)
    """
    # Both sides: a source's own touched_files column may hold NFD paths.
    pattern = unicodedata.normalize("NFC", pattern)
    if not path.isascii():
        path = unicodedata.normalize("NFC", path)
    if _DRIVE.match(path):
        path, pattern = path.replace("\\", "/"), pattern.replace("\\", "/")
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(path, pattern)
    pattern = _spelled(pattern.rstrip("/\\"))
    return path == pattern or path.endswith("/" + pattern.lstrip("/")) \
        or path.endswith("\\" + pattern.lstrip("\\"))


def _spelled(pattern: str) -> str:
    """A plain pattern without ``.`` segments and doubled ``/`` (what the build's paths
    never hold); ``..`` is kept (it names no part of a path ending)."""
    lead = "/" if pattern.startswith("/") else ""
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    return lead + "/".join(parts) if parts else pattern


def touches(reader: LineageReader, session_ids: Sequence[str] | None = None,
            pattern: str | None = None, window: Window | None = None) -> list[FileTouch]:
    """Every (thread, file) pair of the given sessions (all sessions if None),
    only files matching ``pattern`` if given, only pairs active in ``window``;
    ordered by session, thread, path."""
    window = window or Window()
    v = reader.vocabulary
    where = ((v.thread_session, list(session_ids)) if session_ids is not None else None)
    threads = {r["id"]: r for r in reader.node_rows(
        v.thread, [v.thread_key, v.thread_session], where=where)}
    edges = reader.edge_rows(TOUCHED, v.thread, FILE, _EDGE_COLUMNS,
                             sources=sorted(threads) if session_ids is not None else None)
    paths = {r["id"]: r[FILE_KEY] for r in reader.node_rows(
        FILE, [FILE_KEY], where=("id", sorted({e["target"] for e in edges})))}
    out = []
    for e in edges:
        t = threads.get(e["source"])
        path = paths.get(e["target"])
        if t is None or path is None or (pattern is not None and not matches(path, pattern)):
            continue
        if not window.overlaps(e["first_seen"], e["last_seen"]):
            continue
        out.append(FileTouch(str(t[v.thread_session]), str(t[v.thread_key]), str(path),
                             int(e["reads"] or 0), int(e["writes"] or 0),
                             e["first_seen"], e["last_seen"]))
    return sorted(out)


def files(store: LineageReader, session_ids: Sequence[str] = (), *, path: str | None = None,
          since: When = None, until: When = None) -> list[FileTouch]:
    """Return which thread read or wrote which file: every (thread, file) pair.

    Parameters
    ----------
    store : LineageReader
        The graph.
    session_ids : sequence of str
        Only these sessions (none: every session).
    path : str, optional
        Only files matching it (:func:`matches`: a glob over the whole path, or a path
        ending): "which agents changed this file?".
    since, until : datetime or str, optional
        Only pairs active in this window.

    Returns
    -------
    list of FileTouch
        Ordered by session, thread, path.

    Raises
    ------
    QueryError
        An id names no session.
    GraphkitError
        ``since`` or ``until`` is no time.

    Examples
    --------
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> files(store, path="*.py")
    []
    """
    window = Window.of(since, until)
    ids = require_sessions(store, session_ids) if session_ids else None
    return touches(store, ids, path, window)
