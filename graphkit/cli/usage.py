"""``graphkit usage`` and ``files``: tokens and cost per subagent tree, files per thread."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from graphkit.cli.app import cli
from graphkit.cli.options import PATH, format_options, output_format, store_options, time_options
from graphkit.cli.render import echo_csv, echo_records, echo_table, err, shown, tsv_line
from graphkit.cli.stores import open_reader
from graphkit.core.when import parse_window

if TYPE_CHECKING:  # imported when a usage command runs, not by every command
    from rich.table import Table

    from graphkit.queries.prices import Cost, PriceTable, UsageGroup
    from graphkit.queries.usage import SessionUsage, ThreadUsage


def _usd(cost: Cost) -> str:
    if cost.known is not None:
        return f"${cost.known:,.4f}"
    priced = f"${cost.usd:,.4f} + " if cost.usd else ""
    return f"{priced}unpriced"


def _label(t: ThreadUsage) -> str:
    what = t.agent_type or t.kind or "thread"
    return _plain(f"{t.id} ({what})")


def _plain(text: str) -> str:
    """``text`` (ids, agent types, model names from the rows) as rich shows it
    literally: control characters as escapes, ``[...]`` not taken as markup (an id
    ``[link=…]x[/link]`` made a link; ESC reached the terminal)."""
    from rich.markup import escape

    return escape(shown(text))


def usage_indent(depth: int) -> str:
    """A thread's indentation in the terminal table: two blanks a level up to
    ``graphkit tree``'s :data:`~graphkit.cli.query.DRAWN_LEVELS`, then its depth
    written out (a chain 20,000 deep indented in full is 4·10⁸ blanks)."""
    from graphkit.cli.query import DRAWN_LEVELS

    if not depth:
        return ""
    deep = f"depth {depth}: " if depth > DRAWN_LEVELS else ""
    return "  " * min(depth, DRAWN_LEVELS) + "└─ " + deep


def _print_session(u: SessionUsage, table: PriceTable) -> None:
    from rich.table import Table

    from graphkit.queries.prices import session_cost, subtree_costs

    costs = subtree_costs(u, table)
    cost = session_cost(u, table)
    title = (f"session {_plain(u.session_id)}: total {u.total.total():,} tokens, "
             f"{_usd(cost)}" + (f" (no price for {_plain(', '.join(sorted(cost.unpriced)))})"
                                if cost.unpriced else ""))
    t = Table(title=title, title_justify="left", show_header=True, header_style="bold")
    # Own tokens per kind, then the subtree's (the thread and all below it).
    t.add_column("thread", overflow="fold")
    for col in ("in", "out", "c.write", "c.read", "subtree", "subtree $"):
        t.add_column(col, justify="right", no_wrap=True)
    for i, th in enumerate(u.threads):
        pad = usage_indent(th.depth)
        own = th.own.astuple()
        t.add_row(pad + _label(th), *(f"{n:,}" for n in own), f"{th.subtree.total():,}",
                  _usd(costs[i]))
    t.add_row("[bold]total[/bold]", *(f"{n:,}" for n in u.total.astuple()),
              f"{u.total.total():,}", "")
    print_whole(t)


def _print_groups(sid: str, by: str, groups: list[UsageGroup]) -> None:
    from rich.table import Table

    t = Table(title=f"session {_plain(sid)} by {by}", title_justify="left",
              header_style="bold")
    t.add_column(by, overflow="fold")
    for col in ("in", "out", "c.write", "c.read", "cost"):
        t.add_column(col, justify="right", no_wrap=True)
    for g in groups:
        t.add_row(_plain(g.key), *(f"{n:,}" for n in g.tokens.astuple()), _usd(g.cost))
    print_whole(t)


# The narrowest the first (label) column is drawn when the counts leave it no room.
_LABEL_WIDTH = 12


def print_whole(t: Table) -> None:
    """Print a table of a label column and count columns (``no_wrap``) on the terminal
    so that no count loses a digit. Rich fits a table to the terminal by cutting
    ``no_wrap`` cells to ``12,345,…`` and squeezing the label column to nothing once
    the counts alone are wider than the terminal (11-digit counts on 80 columns);
    then the table is drawn as wide as the counts need, and the terminal wraps its
    lines. Tables that fit are drawn as before."""
    from rich.cells import cell_len
    from rich.console import Console

    console = Console(highlight=False)
    counts = t.columns[1:]
    need = sum(max([cell_len(str(c.header)), *(cell_len(str(v)) for v in c.cells)]) + 2
               for c in counts) + _LABEL_WIDTH + 2 + len(t.columns) + 1
    if need > console.width:  # print(width=) takes no more than the console's own
        console = Console(highlight=False, width=need)
    console.print(t)


THREAD_COLUMNS = ("session_id", "thread", "parent", "depth", "kind", "agent_type",
                  "own_input", "own_output", "own_cache_write", "own_cache_read",
                  "subtree_input", "subtree_output", "subtree_cache_write",
                  "subtree_cache_read")
GROUP_COLUMNS = ("session_id", "by", "key", "input_tokens", "output_tokens",
                 "cache_creation_input_tokens", "cache_read_input_tokens", "cost_usd",
                 "unpriced_models")
FILE_COLUMNS = ("session_id", "thread", "path", "reads", "writes", "first_seen", "last_seen")


def _thread_rows(answers: list[SessionUsage]) -> Iterator[dict[str, Any]]:
    for u in answers:
        for t in u.threads:
            yield dict(zip(THREAD_COLUMNS, (u.session_id, t.id, t.parent, t.depth, t.kind,
                                            t.agent_type, *t.own.astuple(),
                                            *t.subtree.astuple()), strict=True))


def _group_records(answers: list[SessionUsage], by: str,
                   table: PriceTable) -> Iterator[dict[str, Any]]:
    from graphkit.queries.prices import usage_groups

    for u in answers:
        for g in usage_groups(u, by, table):
            yield {"record": "usage_group", "session_id": u.session_id, "by": by,
                   "key": g.key, **g.tokens.to_json(), "cost_usd": g.cost.known,
                   "unpriced_models": sorted(g.cost.unpriced)}


@cli.command()
@click.argument("session_ids", nargs=-1)
@store_options
@click.option("--by", type=click.Choice(["model", "agent-type"]),
              help="Group each session's usage by model or by agent type, with cost.")
@click.option("--prices", "prices_path", type=PATH,
              help="A price table (JSON) instead of the shipped one.")
@time_options
@format_options
def usage(session_ids: tuple[str, ...], snapshot_dir: Path | None, neo4j: bool,
          ask_password: bool, by: str | None, prices_path: Path | None, since: str | None,
          until: str | None, as_json: bool, as_csv: bool) -> None:
    """Token usage per session: each thread's own, its subtree (itself and
    every subagent below it) and the session total, with cost in USD from a
    dated price table shipped with graphkit (a model it lacks is unpriced,
    never zero). No SESSION_ID: every session.

    --json prints one {"record": "usage", "session_id", "own", "total",
    "threads": [{"id", "parent", "own", "subtree"}]} line per session (token
    counts as {"input_tokens", "output_tokens", "cache_creation_input_tokens",
    "cache_read_input_tokens"}); with --by, one {"record": "usage_group",
    "session_id", "by", "key", <counts>, "cost_usd", "unpriced_models"} line per
    model or agent type. --csv: one row per thread (or group).

    Example: graphkit usage 8299ed6e-811c-4fa7-b124-c205cd625a7f --snapshot out/graph
    """
    from graphkit.queries.prices import load_prices, usage_groups
    from graphkit.queries.usage import require_sessions, session_usage
    from graphkit.queries.window import Window

    fmt = output_format(as_json, as_csv)
    lo, hi = parse_window(since, until)
    table = load_prices(prices_path)
    with open_reader(snapshot_dir, neo4j, ask_password) as reader:
        w = Window(lo, hi)
        answers = session_usage(reader, require_sessions(reader, session_ids, w), w)
    if answers and not any(u.total.total() for u in answers):
        # All zero is what a graph built before usage was on it looks like, too.
        err("note: no thread of these sessions carries token usage (rows need "
            "attributes.usage; a snapshot built by an older graphkit has none: rebuild it)")
    if by is not None and fmt != "text":
        groups = _group_records(answers, by, table)
        echo_records(groups) if fmt == "json" else echo_csv(GROUP_COLUMNS, groups)
    elif fmt == "json":
        echo_records({"record": "usage", **u.to_json()} for u in answers)
    elif fmt == "csv":
        echo_csv(THREAD_COLUMNS, _thread_rows(answers))
    elif not sys.stdout.isatty():
        rows = _group_records(answers, by, table) if by else _thread_rows(answers)
        cols = GROUP_COLUMNS if by else THREAD_COLUMNS
        click.echo("\n".join([tsv_line(cols), *(tsv_line([r.get(c) for c in cols]) for r in rows)]))
    else:
        for u in answers:
            if by is not None:
                _print_groups(u.session_id, by, usage_groups(u, by, table))
            else:
                _print_session(u, table)
        err(f"prices: {table.path} (as of {table.as_of})")


@cli.command()
@click.argument("session_ids", nargs=-1)
@store_options
@click.option("--path", "pattern",
              help="Only files matching this: a glob over the whole path (*/src/*.py) or "
                   "a path ending (src/app.py). Without SESSION_IDs: across all sessions.")
@time_options
@format_options
def files(session_ids: tuple[str, ...], snapshot_dir: Path | None, neo4j: bool,
          ask_password: bool, pattern: str | None, since: str | None, until: str | None,
          as_json: bool, as_csv: bool) -> None:
    """Files each thread read or wrote (Read/Edit/Write/MultiEdit/NotebookEdit,
    Glob/Grep naming a file, Codex apply_patch), paths made absolute against
    the session's cwd. --path answers "which agents changed this file".

    --json prints one {"record": "file", "session_id", "thread", "path",
    "reads", "writes"} line per (thread, file); --csv the same with first and
    last time.

    Example: graphkit files --path src/routes/auth.ts --snapshot out/graph
    """
    from graphkit.queries.files import touches
    from graphkit.queries.usage import require_sessions
    from graphkit.queries.window import Window

    fmt = output_format(as_json, as_csv)
    lo, hi = parse_window(since, until)
    with open_reader(snapshot_dir, neo4j, ask_password) as reader:
        ids = require_sessions(reader, session_ids) if session_ids else None
        found = touches(reader, ids, pattern, Window(lo, hi))
    if fmt == "json":
        echo_records({"record": "file", **f.to_json()} for f in found)
        return
    rows = [dict(zip(FILE_COLUMNS, (f.session_id, f.thread, f.path, f.reads, f.writes,
                                    f.first_seen, f.last_seen), strict=True)) for f in found]
    if fmt == "csv":
        echo_csv(FILE_COLUMNS, rows)
        return
    if not sys.stdout.isatty():
        click.echo("\n".join([tsv_line(FILE_COLUMNS), *(tsv_line([r[c] for c in FILE_COLUMNS])
                                                    for r in rows)]))
        return
    echo_table(FILE_COLUMNS, ([r[c] for c in FILE_COLUMNS] for r in rows),
               right=("reads", "writes"))
