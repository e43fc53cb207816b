"""Which graph a command asks: the ``--snapshot``/``--neo4j``/``--ask-password`` options
read into one call of :func:`graphkit.open_store` (notes about the source on stderr)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

import graphkit
from graphkit.cli.errors import UserError
from graphkit.cli.render import err

if TYPE_CHECKING:
    from graphkit import LineageReader, Neo4jStore


def password(ask: bool) -> str | None:
    """The Neo4j password typed at a prompt (never echoed) with ``--ask-password``;
    None to read ``NEO4J_PASSWORD``."""
    return click.prompt("Neo4j password", hide_input=True) if ask else None


def neo4j_store(ask_password: bool, *, warn: bool = False,
                **kwargs: Any) -> AbstractContextManager[Neo4jStore]:
    """The Neo4j store named by NEO4J_* (the password optionally prompted), for a
    ``with``: entering checks the connection, leaving closes it. With ``warn``, a
    warning on stderr (even with --quiet: it is about the answer, not progress) while
    a load into the database has not finished."""
    return graphkit.open_neo4j(password=password(ask_password), notes=err if warn else None,
                               **kwargs)


def open_reader(snapshot_dir: Path | None, neo4j: bool,
                ask_password: bool = False) -> AbstractContextManager[LineageReader]:
    """The store a query command asks (see :func:`graphkit.open_store`)."""
    if neo4j and snapshot_dir is not None:
        raise UserError("give --snapshot DIR or --neo4j, not both")
    return graphkit.open_store(snapshot_dir, neo4j=neo4j,
                               password=password(ask_password) if neo4j else None, notes=err)


def default_sources() -> list[Path]:
    """The user's own transcript folders, for commands given no SOURCE."""
    paths = graphkit.default_transcript_roots()
    if not paths:
        raise UserError("no SOURCE given and no ~/.claude/projects or ~/.codex/sessions "
                        "found; name a file or folder to read")
    err("reading " + ", ".join(str(p) for p in paths))
    return paths
