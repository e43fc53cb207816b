"""Which graph a command asks: a snapshot read in place (by default the latest one built
from the user's own history) or a Neo4j server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from graphkit.cli.errors import UserError
from graphkit.cli.render import err

if TYPE_CHECKING:
    from graphkit.enrich.base import LineageReader
    from graphkit.enrich.neo4j.store import Neo4jStore


def neo4j_store(ask_password: bool, **kwargs: Any) -> Neo4jStore:
    """A Neo4j store from NEO4J_* (the password optionally prompted, never echoed).

    Use it in a ``with``: entering checks the connection, leaving closes it.
    """
    from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore

    password = click.prompt("Neo4j password", hide_input=True) if ask_password else None
    return Neo4jStore(Neo4jConfig.from_env(password=password), **kwargs)


def warn_unfinished_loads(neo: Neo4jStore) -> None:
    """A warning on stderr (even with --quiet: it is about the answer, not progress)
    while a load into the database has not finished: its graph is incomplete, and an
    answer read from it would otherwise look whole."""
    from graphkit.enrich.neo4j.lock import describe, running_loads

    unfinished = neo.unfinished_loads()
    if not unfinished:
        return
    first = unfinished[0]
    how = (f"`graphkit load --if-exists {first['mode']}` started {first['started_at']}"
           + (f" by pid {first['pid']} on {first['host']}" if first.get("host") else ""))
    running = running_loads(neo)
    state = (f"is running now ({describe(running[0])})" if running else
             "did not finish (killed or failed); run it again to complete the graph")
    more = f" (and {len(unfinished) - 1} more)" if len(unfinished) > 1 else ""
    err(f"warning: the graph in {neo.config.display_uri} is incomplete: {how}{more} {state}")


@contextmanager
def open_reader(snapshot_dir: Path | None, neo4j: bool,
                ask_password: bool = False) -> Iterator[LineageReader]:
    """The store a query command asks: a snapshot read in place, or Neo4j."""
    if neo4j and snapshot_dir is not None:
        raise UserError("give --snapshot DIR or --neo4j, not both")
    if neo4j:
        with neo4j_store(ask_password) as neo:
            warn_unfinished_loads(neo)
            yield neo
        return
    if snapshot_dir is None:
        snapshot_dir = latest_own_snapshot()
    from graphkit.enrich.snapshot_store import SnapshotReader

    # Straight from the Arrow tables, not through NetworkX: a user at the
    # prompt asking about one id should not wait for a whole graph to load.
    yield SnapshotReader(snapshot_dir)


def latest_own_snapshot() -> Path:
    """The latest snapshot built from the user's own transcript folders, from the
    snapshot index (named on stderr, so the answer's source is never a guess)."""
    from graphkit.snapshot.index import SnapshotIndex
    from graphkit.sources.transcripts import default_transcript_roots

    idx = SnapshotIndex.load()
    if idx.problem:
        err(idx.problem)
    roots = default_transcript_roots()
    entry = idx.latest(roots) if roots else None
    if entry is None:
        mine = ", ".join(str(p) for p in roots) or "~/.claude/projects, ~/.codex/sessions"
        raise UserError(f"give --snapshot DIR (or --neo4j): the snapshot index ({idx.path}) "
                        f"has no build of your own history ({mine}) yet; "
                        "`graphkit build --snapshot DIR` makes one")
    err(f"using {entry['snapshot']} (built {entry.get('built_at', '?')} from "
        + ", ".join(entry["sources"]) + ")")
    return Path(entry["snapshot"])


def default_sources() -> list[Path]:
    """The user's own transcript folders, for commands given no SOURCE."""
    from graphkit.sources.transcripts import default_transcript_roots

    paths = default_transcript_roots()
    if not paths:
        raise UserError("no SOURCE given and no ~/.claude/projects or ~/.codex/sessions "
                        "found; name a file or folder to read")
    err("reading " + ", ".join(str(p) for p in paths))
    return paths
