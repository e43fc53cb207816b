"""Options several commands share, as click decorators, and the values read from them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from graphkit.cli.errors import UserError

# Every path argument and option. Not `readable=True`: graphkit says itself, in one
# line naming the path and the fix, what it cannot read; click's own check printed its
# three-line usage message instead.
PATH = click.Path(path_type=Path, readable=False)

_QUIET = "graphkit.quiet"


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:
        ctx.meta[_QUIET] = True  # meta is shared by the group's and the command's context
    return value


def quiet_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``-q/--quiet``: no progress on stderr. The group and every command that shows
    progress take it, so ``graphkit -q build`` and ``graphkit build -q`` agree."""
    return click.option("-q", "--quiet", is_flag=True, expose_value=False, is_eager=True,
                        callback=_set_quiet,
                        help="Show no progress on stderr (it is shown only on a "
                             "terminal anyway).")(f)


def quiet() -> bool:
    """Whether -q/--quiet was given (to the group or the command)."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(_QUIET))


# Read commands print JSON Lines: one object per line, every object shaped
# {"record": KIND, ...that record's fields} (KIND is session, lineage, tree,
# node, edge or diff), so a pipe can mix and filter them by one key.
def format_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--json`` (JSON Lines) and ``--csv`` (a header row, then one row per record)."""
    f = click.option("--csv", "as_csv", is_flag=True,
                     help="Print CSV: a header row, then one row per record.")(f)
    return click.option("--json", "as_json", is_flag=True,
                        help='Print JSON Lines: one {"record": KIND, ...} object per line.')(f)


def output_format(as_json: bool, as_csv: bool) -> str:
    """``json``, ``csv`` or ``text`` from the two flags (never both)."""
    if as_json and as_csv:
        raise UserError("give --json or --csv, not both")
    return "json" if as_json else "csv" if as_csv else "text"


def time_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--since`` and ``--until``: only records (or, of a built graph, nodes
    and edges active) in that time, on record timestamps
    (read by :func:`graphkit.core.when.parse_window`)."""
    f = click.option("--until", help="Only records at or before this time: YYYY-MM-DD (the "
                                     "whole day), an ISO timestamp (an offset or an IANA "
                                     "zone after it: 2026-11-20T18:00 Europe/Berlin), "
                                     "today, yesterday, '2 hours ago' (UTC).")(f)
    return click.option("--since", help="Only records at or after this time: YYYY-MM-DD, an "
                                        "ISO timestamp (an offset or an IANA zone after "
                                        "it: 2026-11-20T10:00 Europe/Berlin), today, "
                                        "yesterday, '7 days ago' (UTC).")(f)


def password_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--ask-password``: prompt for the Neo4j password instead of NEO4J_PASSWORD."""
    return click.option("--ask-password", is_flag=True,
                        help="Prompt for the Neo4j password instead of reading "
                             "NEO4J_PASSWORD.")(f)


def store_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--snapshot DIR`` or ``--neo4j`` (with ``--ask-password``): which graph to ask."""
    f = password_option(f)
    f = click.option("--neo4j", is_flag=True,
                     help="Ask the Neo4j server named by NEO4J_URI/NEO4J_USERNAME/"
                          "NEO4J_PASSWORD/NEO4J_DATABASE instead of a snapshot.")(f)
    return click.option("--snapshot", "snapshot_dir",
                        type=PATH,
                        help="The snapshot folder to read (default: the latest snapshot "
                             "built from your own ~/.claude and ~/.codex history, from "
                             "the snapshot index).")(f)
