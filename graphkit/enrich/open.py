"""Opening the graph a question is asked of: a snapshot read in place (by default the
latest one built from the user's own history) or a Neo4j server.

Notes about the answer's source ("using …", "the graph in Neo4j is incomplete") go to
a ``notes`` callback: the command line prints them on stderr, a library caller may
keep or drop them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphkit.core.errors import GraphkitError

if TYPE_CHECKING:
    from graphkit.enrich.base import LineageReader
    from graphkit.enrich.neo4j.store import Neo4jStore

Notes = Callable[[str], None]


def _quiet(_: str) -> None:
    """Where notes go when the caller wants none."""


@contextmanager
def open_store(snapshot: str | Path | None = None, *, neo4j: bool = False,
               password: str | None = None,
               notes: Notes | None = None) -> Iterator[LineageReader]:
    """Yield the store a question is asked of, closed when the block ends.

    Parameters
    ----------
    snapshot : str or Path, optional
        A snapshot folder, read in place (straight from its Arrow tables: one id's
        question does not wait for a whole graph to load). None: the latest snapshot
        built from the user's own ``~/.claude`` and ``~/.codex`` history, from the
        snapshot index (:func:`latest_own_snapshot`).
    neo4j : bool
        Ask the Neo4j server named by ``NEO4J_*`` instead (:func:`open_neo4j`).
    password : str, optional
        The Neo4j password, instead of ``NEO4J_PASSWORD``.
    notes : callable, optional
        Hears one line about the source of the answer: which snapshot was picked, or
        that the graph in Neo4j is incomplete while a load has not finished.

    Yields
    ------
    LineageReader
        A :class:`~graphkit.enrich.snapshot_store.SnapshotReader` or a
        :class:`~graphkit.enrich.neo4j.store.Neo4jStore`.

    Raises
    ------
    GraphkitError
        Both a snapshot and ``neo4j`` are given; no snapshot is given and the user's
        history has none yet; the snapshot cannot be read; Neo4j cannot be reached.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.snapshot.write import write_snapshot
    >>> d = Path(tempfile.mkdtemp()) / "snap"
    >>> _ = write_snapshot(example_graph(), d)
    >>> with open_store(d) as store:
    ...     [s.session_id for s in store.sessions()], describe_store(store)[:9]
    (['sess-1', 'th-root'], 'snapshot ')
    """
    if neo4j and snapshot is not None:
        raise GraphkitError("give --snapshot DIR or --neo4j, not both")
    if neo4j:
        with open_neo4j(password=password, notes=notes) as neo:
            yield neo
        return
    from graphkit.enrich.snapshot_store import SnapshotReader

    yield SnapshotReader(Path(snapshot) if snapshot is not None
                         else latest_own_snapshot(notes))


@contextmanager
def open_neo4j(*, password: str | None = None, notes: Notes | None = None,
               **options: Any) -> Iterator[Neo4jStore]:
    """Yield the Neo4j store named by ``NEO4J_URI``/``NEO4J_USERNAME``/``NEO4J_PASSWORD``/
    ``NEO4J_DATABASE``, its connection checked, closed when the block ends.

    Parameters
    ----------
    password : str, optional
        The password, instead of ``NEO4J_PASSWORD`` (never shown or stored).
    notes : callable, optional
        Hears a warning while a load into the database has not finished: its graph is
        incomplete, and an answer read from it would otherwise look whole.
    **options
        Passed to :class:`~graphkit.enrich.neo4j.store.Neo4jStore` (``batch_size``,
        ``workers``, ``lock_wait``, …).

    Yields
    ------
    Neo4jStore

    Raises
    ------
    StoreError
        The server, the credentials or the database are wrong (one line, never the
        password).

    Examples
    --------
    The connection is checked when the block starts:

    >>> import os
    >>> from unittest import mock
    >>> env = {"NEO4J_URI": "bolt://127.0.0.1:1", "NEO4J_PASSWORD": "secret"}
    >>> with mock.patch.dict(os.environ, env), open_neo4j() as neo:
    ...     pass
    Traceback (most recent call last):
    ...
    graphkit.core.errors.StoreError: cannot reach Neo4j at bolt://127.0.0.1:1 ...

    With a server running (``graphkit neo4j-server``, and ``NEO4J_*`` set):

    >>> from graphkit.queries.sessions import sessions
    >>> with open_neo4j(notes=print) as neo:  # doctest: +SKIP
    ...     print(len(sessions(neo)))
    14
    """
    from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore

    with Neo4jStore(Neo4jConfig.from_env(password=password), **options) as neo:
        warning = unfinished_load_warning(neo) if notes is not None else None
        if notes is not None and warning is not None:
            notes(warning)
        yield neo


def unfinished_load_warning(neo: Neo4jStore) -> str | None:
    """Return the warning that a load into ``neo`` has not finished (its graph is
    incomplete), naming it and whether it runs now; None when every load finished."""
    from graphkit.enrich.neo4j.lock import describe, running_loads

    unfinished = neo.unfinished_loads()
    if not unfinished:
        return None
    first = unfinished[0]
    how = (f"`graphkit load --if-exists {first['mode']}` started {first['started_at']}"
           + (f" by pid {first['pid']} on {first['host']}" if first.get("host") else ""))
    running = running_loads(neo)
    state = (f"is running now ({describe(running[0])})" if running else
             "did not finish (killed or failed); run it again to complete the graph")
    more = f" (and {len(unfinished) - 1} more)" if len(unfinished) > 1 else ""
    return f"warning: the graph in {neo.config.display_uri} is incomplete: {how}{more} {state}"


def latest_own_snapshot(notes: Notes | None = None) -> Path:
    """Return the folder of the latest snapshot built from the user's own transcript
    folders (:func:`graphkit.default_transcript_roots`), from the snapshot index.

    What the read commands answer from when no ``--snapshot`` is given.

    Parameters
    ----------
    notes : callable, optional
        Hears which snapshot was picked (so the answer's source is never a guess) and
        any problem with the index.

    Returns
    -------
    Path

    Raises
    ------
    GraphkitError
        The index holds no build of the user's transcript folders yet.

    Examples
    --------
    >>> import os, tempfile
    >>> from unittest import mock
    >>> home = Path(tempfile.mkdtemp()); (home / ".claude" / "projects").mkdir(parents=True)
    >>> with mock.patch.dict(os.environ, {"HOME": str(home), "GRAPHKIT_HOME": str(home),
    ...                                   "CLAUDE_CONFIG_DIR": "", "CODEX_HOME": ""}):
    ...     latest_own_snapshot()
    Traceback (most recent call last):
    ...
    graphkit.core.errors.GraphkitError: give --snapshot DIR (or --neo4j): the snapshot index
    (...) has no build of your own history (...) yet; ...
    """
    from graphkit.snapshot.index import SnapshotIndex
    from graphkit.sources.transcripts import default_transcript_roots

    say = notes or _quiet
    idx = SnapshotIndex.load()
    if idx.problem:
        say(idx.problem)
    roots = default_transcript_roots()
    entry = idx.latest(roots) if roots else None
    if entry is None:
        mine = ", ".join(str(p) for p in roots) or "~/.claude/projects, ~/.codex/sessions"
        raise GraphkitError(f"give --snapshot DIR (or --neo4j): the snapshot index "
                            f"({idx.path}) has no build of your own history ({mine}) yet; "
                            "`graphkit build --snapshot DIR` makes one")
    say(f"using {entry['snapshot']} (built {entry.get('built_at', '?')} from "
        + ", ".join(entry["sources"]) + ")")
    return Path(entry["snapshot"])


def describe_store(store: object) -> str:
    """Return where a store's graph lives, for a page or a note: ``snapshot DIR`` or
    ``Neo4j URI`` (credentials never shown); empty for a store in memory."""
    directory = getattr(store, "directory", None)
    config = getattr(store, "config", None)
    if directory is not None:
        return f"snapshot {directory}"
    if config is not None:
        return f"Neo4j {config.display_uri}"
    return ""
