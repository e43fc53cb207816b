"""``graphkit usage`` and ``files``: tokens and cost per session, day, model, agent type
or subagent tree, and files per thread."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

import graphkit
from graphkit.cli.app import cli
from graphkit.cli.options import PATH, format_options, output_format, store_options, time_options
from graphkit.cli.render import echo_csv, echo_records, echo_table, err, shown, tsv_line, usd
from graphkit.cli.stores import open_reader
from graphkit.core.when import parse_window

if TYPE_CHECKING:  # named for types only: imported when a usage command runs
    from rich.table import Table

    from graphkit import Tokens, UsageReport

# --by: the library's groupings, and `thread`: each thread with its subagent tree.
BY = ("session", "day", "model", "agent-type", "thread")
TOKEN_HEADS = ("in", "out", "c.write", "c.read")


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


def _table(first: str, more: Iterable[str] = ()) -> Table:
    from rich.table import Table

    t = Table(show_header=True, header_style="bold")
    t.add_column(first, overflow="fold")
    for col in more:
        t.add_column(col, justify="right", no_wrap=True)
    return t


def _counts(tokens: Tokens, billed: bool = False) -> list[str]:
    """The four counts as cells, and with ``billed`` the 1-hour cache writes (a part of
    the writes) and web searches."""
    more = (tokens.cache_creation_1h_input_tokens, tokens.web_search_requests) \
        if billed else ()
    return [f"{n:,}" for n in (*tokens.astuple(), *more)]


def _token_heads(report: UsageReport) -> tuple[str, ...]:
    """The count columns: the four, and "1h write" and "searches" where some session
    has some (the table of data without them stays as it was)."""
    return (*TOKEN_HEADS, "1h write", "searches") if _billed_report(report) else TOKEN_HEADS


def _billed_report(report: UsageReport) -> bool:
    return any(u.total.billed() for u in report.sessions)


def print_threads(report: UsageReport) -> None:
    """``usage --by thread`` on a terminal: one table, a row per session (its total)
    and under it a row per thread, indented under its parent, with its own tokens,
    its subtree's (itself and every subagent below it) and the subtree's cost; then
    the total of all sessions."""
    billed = _billed_report(report)
    t = _table("thread", (*_token_heads(report), "subtree", "subtree $",
                          *_claude_heads(report)))
    for i, (u, costs) in enumerate(zip(report.sessions, report.costs, strict=True)):
        t.add_row(f"[bold]session {_plain(u.session_id)}[/bold]", *_counts(u.total, billed),
                  f"{u.total.total():,}", usd(costs.total), *_claude_cells(report, i))
        for th, below in zip(u.threads, costs.subtree, strict=True):
            what = th.agent_type or th.kind or "thread"
            t.add_row(usage_indent(th.depth + 1) + _plain(f"{th.id} ({what})"),
                      *_counts(th.own, billed), f"{th.subtree.total():,}", usd(below),
                      *_claude_cells(report, None))
    tokens, cost = report.total()
    t.add_row("[bold]total[/bold]", *_counts(tokens, billed), f"{tokens.total():,}",
              usd(cost), *_claude_cells(report, None))
    print_whole(t)
    print_gaps(report)


def print_groups(report: UsageReport) -> None:
    """``usage`` on a terminal: one table, a row per group (per session unless
    ``--by`` says otherwise), then a total row."""
    by = report.by or "session"
    across = by != "session"
    claude = [] if across else _claude_heads(report)
    of = {u.session_id: i for i, u in enumerate(report.sessions)}
    billed = _billed_report(report)
    t = _table(by, (*_token_heads(report), "total", "cost",
                    *(["sessions"] if across else []), *claude))
    for g in report.groups:
        t.add_row(_plain(g.key), *_counts(g.tokens, billed), f"{g.tokens.total():,}",
                  usd(g.cost),
                  *([f"{g.sessions:,}"] if across else []),
                  *(_claude_cells(report, of.get(g.key)) if claude else []))
    tokens, cost = report.group_total()
    seen = len({u.session_id for u in report.sessions if u.total.total()})
    t.add_row("[bold]total[/bold]", *_counts(tokens, billed), f"{tokens.total():,}",
              usd(cost), *([f"{seen:,}"] if across else []),
              *(_claude_cells(report, None) if claude else []))
    print_whole(t)
    if not across:
        print_gaps(report)


def _claude_heads(report: UsageReport) -> list[str]:
    """The columns of Claude Code's own figure and the gap, where a session has one
    (none otherwise: the table of data without it stays as it was)."""
    return ["claude $", "gap $"] if any(c.claude for c in report.costs) else []


def _claude_cells(report: UsageReport, session: int | None) -> list[str]:
    """A row's cells under :func:`_claude_heads`: the figure of the ``session``-th
    session of ``report`` (blank where there is none, or for a row of no session)."""
    if not any(c.claude for c in report.costs):
        return []
    claude = report.costs[session].claude if session is not None else None
    if claude is None:
        return ["", ""]
    gap = "" if claude.gap is None else f"{claude.gap:+,.4f}"
    return [f"${claude.usd:,.4f}", gap]


def print_gaps(report: UsageReport) -> None:
    """A note on stderr per session whose cost Claude Code puts otherwise, with why
    where the data says."""
    for u, costs in zip(report.sessions, report.costs, strict=True):
        c = costs.claude
        if c is None or (c.gap == 0 and c.cause is None):
            continue
        gap = "unknown" if c.gap is None else f"{c.gap:+,.4f} USD"
        err(f"note: session {u.session_id}: Claude Code's own figure ({c.source}) is "
            f"${c.usd:,.4f}, gap {gap}" + (f": {c.cause}" if c.cause else
                                          ": cause unknown"))


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
                  "subtree_cache_read", "own_cost_usd", "subtree_cost_usd",
                  "session_cost_usd", "cost_note")
GROUP_COLUMNS = ("session_id", "by", "key", "input_tokens", "output_tokens",
                 "cache_creation_input_tokens", "cache_read_input_tokens", "cost_usd",
                 "unpriced_models", "cost_note", "sessions")
FILE_COLUMNS = ("session_id", "thread", "path", "reads", "writes", "first_seen", "last_seen")
# A record's token counts -> a thread row's short names: the four, then what Claude bills
# beside them (columns only where some thread has some, as in --json).
_SHORT = (("input_tokens", "input"), ("output_tokens", "output"),
          ("cache_creation_input_tokens", "cache_write"),
          ("cache_read_input_tokens", "cache_read"))
BILLED = (("cache_creation_1h_input_tokens", "cache_write_1h"),
          ("web_search_requests", "web_searches"))
# Claude Code's own figure and its gap: columns only where some session has one.
CLAUDE_COLUMNS = ("claude_cost_usd", "cost_gap_usd", "cost_gap_cause")


def _billed(records: list[dict[str, Any]]) -> bool:
    """Whether any count of ``records`` (``usage`` or ``usage_group`` records) is one
    Claude bills beside the four."""
    key = BILLED[0][0]
    return any(key in r.get("total", r) for r in records)


def _claude(records: list[dict[str, Any]]) -> bool:
    """Whether any of ``records`` holds Claude Code's own figure."""
    return any(CLAUDE_COLUMNS[0] in r for r in records)


def thread_columns(records: list[dict[str, Any]]) -> tuple[str, ...]:
    """The columns of :func:`thread_rows`: :data:`THREAD_COLUMNS`, with the billed
    counts after each four and Claude's figure at the end where ``records`` have them."""
    if not _billed(records) and not _claude(records):
        return THREAD_COLUMNS
    more = [s for _, s in BILLED] if _billed(records) else []
    at = THREAD_COLUMNS.index("own_cost_usd")
    return (*THREAD_COLUMNS[:10], *(f"own_{s}" for s in more), *THREAD_COLUMNS[10:at],
            *(f"subtree_{s}" for s in more), *THREAD_COLUMNS[at:],
            *(CLAUDE_COLUMNS if _claude(records) else ()))


def group_columns(records: list[dict[str, Any]]) -> tuple[str, ...]:
    """The columns of ``usage --by`` as CSV: :data:`GROUP_COLUMNS`, with the billed
    counts after the four and Claude's figure at the end where ``records`` have them."""
    at = GROUP_COLUMNS.index("cost_usd")
    return (*GROUP_COLUMNS[:at], *(k for k, _ in BILLED if _billed(records)),
            *GROUP_COLUMNS[at:], *(CLAUDE_COLUMNS if _claude(records) else ()))


def group_rows(records: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``usage --by`` rows: the records, a group without billed counts showing 0 where
    another has some."""
    billed = _billed(records)
    for rec in records:
        yield {**{k: 0 for k, _ in BILLED}, **rec} if billed else rec


def thread_rows(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``usage --csv`` and piped rows: the ``usage`` records flattened, a row per
    thread, token counts and costs in columns (:func:`thread_columns`; a count a thread
    lacks is 0, Claude's figure blank for a session without one)."""
    names = (*_SHORT, *BILLED)
    for rec in records:
        claude = {c: rec.get(c) for c in CLAUDE_COLUMNS}
        for t in rec["threads"]:
            yield {"session_id": rec["session_id"], "thread": t["id"], "parent": t["parent"],
                   "depth": t["depth"], "kind": t["kind"], "agent_type": t["agent_type"],
                   **{f"own_{s}": t["own"].get(k, 0) for k, s in names},
                   **{f"subtree_{s}": t["subtree"].get(k, 0) for k, s in names},
                   "own_cost_usd": t["own_cost_usd"], "subtree_cost_usd": t["subtree_cost_usd"],
                   "session_cost_usd": rec["cost_usd"], "cost_note": t["cost_note"], **claude}


@cli.command()
@click.argument("session_ids", nargs=-1)
@store_options
@click.option("--by", type=click.Choice(BY),
              help="One row per session (the terminal's default), per day (a thread's "
                   "first), per model or per agent type, with cost; thread: each thread "
                   "with its subagent tree's tokens and cost.")
@click.option("--prices", "prices_path", type=PATH,
              help="A price table (JSON) instead of the shipped one.")
@time_options
@format_options
def usage(session_ids: tuple[str, ...], snapshot_dir: Path | None, neo4j: bool,
          ask_password: bool, by: str | None, prices_path: Path | None, since: str | None,
          until: str | None, as_json: bool, as_csv: bool) -> None:
    """Token usage and its cost in USD per session: each thread's own, its subtree
    (itself and every subagent below it) and the session total, priced from a dated
    table shipped with graphkit (a model it lacks is unpriced: its cost is null with
    a note why, never zero). No SESSION_ID: every session.

    Priced as Claude bills: 1-hour cache writes at their rate, web searches at the fee,
    advisor tokens at the advisor model's rate. Where the session's data holds Claude
    Code's own figure (a transcript's cost-state record, or HypAware's per-request
    costs), it is shown beside graphkit's with the gap and, where known, its cause.

    On a terminal one table: a row per session (or per --by group) and a total row;
    "1h write" and "searches" columns where some thread has some, "claude $" and "gap $"
    where a session has Claude's figure, and a note per gap on stderr.
    --json prints one {"record": "usage", "session_id", "own", "total", "cost_usd",
    "cost_note", "unpriced_models", "threads": [{"id", "parent", "own", "subtree",
    "depth", "kind", "agent_type", "own_cost_usd", "subtree_cost_usd", "cost_note"}]}
    line per session (token counts as {"input_tokens", "output_tokens",
    "cache_creation_input_tokens", "cache_read_input_tokens"}, and
    "cache_creation_1h_input_tokens", "web_search_requests" where there are some;
    "claude_cost_usd", "cost_gap_usd", "cost_gap_cause" where the session has Claude's
    figure); with --by session|day|model|agent-type, one {"record": "usage_group",
    "session_id", "by", "key", <counts>, "cost_usd", "unpriced_models", "cost_note",
    "sessions"} line per group across the sessions (--by session: Claude's figure too).
    --csv and piped: one row per thread with its own, subtree and session cost (or per
    group); the columns of those extra fields only where the data has them.

    Example: graphkit usage --snapshot out/graph --by day
    """
    fmt = output_format(as_json, as_csv)
    since_at, until_at = parse_window(since, until)
    table = graphkit.load_prices(prices_path)  # a bad table fails before the graph is read
    terminal = fmt == "text" and sys.stdout.isatty()
    group = None if by == "thread" else by or ("session" if terminal else None)
    with open_reader(snapshot_dir, neo4j, ask_password) as reader:
        report = graphkit.usage(reader, session_ids, since=since_at, until=until_at,
                                by=group, prices=table)
    if report.sessions and not report.has_tokens:
        # All zero is what a graph built before usage was on it looks like, too.
        err("note: no thread of these sessions carries token usage (rows need "
            "attributes.usage; a snapshot built by an older graphkit has none: rebuild it)")
    records = graphkit.usage_records(report)
    if fmt == "json":
        echo_records(records)
        return
    cols = group_columns(records) if group else thread_columns(records)
    rows = group_rows(records) if group else thread_rows(records)
    if fmt == "csv":
        echo_csv(cols, rows)
    elif not terminal:
        click.echo("\n".join([tsv_line(cols), *(tsv_line([r.get(c) for c in cols])
                                                for r in rows)]))
    else:
        print_threads(report) if group is None else print_groups(report)
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

    Example: graphkit files --path src/handlers.py --snapshot out/graph
    """
    fmt = output_format(as_json, as_csv)
    since_at, until_at = parse_window(since, until)
    with open_reader(snapshot_dir, neo4j, ask_password) as reader:
        found = graphkit.files(reader, session_ids, path=pattern, since=since_at,
                               until=until_at)
    if fmt == "json":
        echo_records(graphkit.file_records(found))
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
