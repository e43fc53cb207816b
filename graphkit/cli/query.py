"""``graphkit sessions``, ``lineage`` and ``tree``: questions asked of a built graph."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

import graphkit
from graphkit.cli.app import cli
from graphkit.cli.options import format_options, output_format, store_options, time_options
from graphkit.cli.render import (
    echo_csv,
    echo_lines,
    echo_records,
    echo_table,
    err,
    shown,
    tsv_line,
    usd,
)
from graphkit.cli.stores import open_reader
from graphkit.core.when import parse_window, utc_text

if TYPE_CHECKING:  # named for types only: a module is imported when its command runs
    from graphkit import Continuation, Lineage, TreeNode

# The table and TSV; --csv adds nothing hidden (JSON holds the per-kind token counts).
SESSION_COLUMNS = ("session_id", "workspace", "threads", "agents", "messages", "models",
                   "tokens", "cost_usd", "first_seen", "last_seen")
SESSION_CSV_COLUMNS = ("session_id", "threads", "agents", "messages", "first_seen",
                       "last_seen", "workspaces", "models", "total_tokens", "cost_usd",
                       "cost_note")
LINEAGE_CSV_COLUMNS = ("id", "session_id", "relation", "step", "type", "node")
TREE_COLUMNS = ("type", "id", "depth", "parent_type", "parent_id", "kind", "agent_type",
                "description", "messages", "first_seen", "cycle")


@cli.command()
@store_options
@click.option("--limit", type=click.IntRange(min=1), help="Show only the N most recent sessions.")
@time_options
@format_options
def sessions(snapshot_dir: Path | None, neo4j: bool, ask_password: bool, limit: int | None,
             since: str | None, until: str | None, as_json: bool, as_csv: bool) -> None:
    """List sessions, oldest first: workspace, threads, agents, messages, models,
    tokens, cost in USD, first and last time.

    "agents" counts the session's threads other than its main loop: Claude
    subagents and Codex child threads; tokens are all four kinds (input, output,
    cache write, cache read) of every thread, as `graphkit usage` adds them, and
    cost is empty (null) where a model has no price. On a terminal a table;
    piped, plain TSV with a header line (ids never truncated, times as
    YYYY-MM-DDTHH:MM:SSZ in UTC); --json one {"record": "session", "session_id",
    "threads", "agents", "messages", "first_seen", "last_seen", "workspaces",
    "models", "tokens", "total_tokens", "cost_usd", "cost_note",
    "unpriced_models"} line per session; --csv those columns.

    Example: graphkit sessions --snapshot out/graph --limit 5 --json
    """
    fmt = output_format(as_json, as_csv)
    since_at, until_at = parse_window(since, until)
    with open_reader(snapshot_dir, neo4j, ask_password) as reader:
        rows = graphkit.sessions(reader, since=since_at, until=until_at, limit=limit)
    if fmt == "json":
        echo_records(graphkit.session_records(rows))
        return
    if fmt == "csv":
        echo_csv(SESSION_CSV_COLUMNS, graphkit.session_records(rows))
        return
    terminal = sys.stdout.isatty()
    cells: Iterator[list[object]] = (
        [s.session_id, ", ".join(s.workspaces), s.threads, s.agents, s.messages,
         ", ".join(s.models), f"{s.tokens.total():,}" if terminal else s.tokens.total(),
         usd(s.cost) if terminal else s.cost.known, utc_text(s.first_seen),
         utc_text(s.last_seen)] for s in rows)
    if not terminal:
        echo_lines(tsv_line(c) for c in [list[object](SESSION_COLUMNS), *cells])
        return
    heads = [c if c != "cost_usd" else "cost" for c in SESSION_COLUMNS]
    echo_table(heads, cells, right=("threads", "agents", "messages", "tokens", "cost"))


@cli.command()
@click.argument("ids", nargs=-1, required=True)
@store_options
@format_options
def lineage(ids: tuple[str, ...], snapshot_dir: Path | None, neo4j: bool,
            ask_password: bool, as_json: bool, as_csv: bool) -> None:
    """Show who spawned a thread or subagent, up to its session, and all it spawned.

    ID is an agent_id, a thread id (conversation_id) or a session_id. --json
    prints one {"record": "lineage", "id", "session_id", "ancestors",
    "descendants", "continues"} line per ID (continues: the sessions its
    session continues, nearest first, with how: resume, fork, branch,
    compaction or teammate); --csv one row per ancestor, descendant or
    continued session (relation, step from 1 nearest, type, node).

    Example: graphkit lineage 818d8962058765a6 --snapshot out/graph --json
    """
    fmt = output_format(as_json, as_csv)
    with open_reader(snapshot_dir, neo4j, ask_password) as reader:
        answers = graphkit.lineage_many(reader, ids)
    # stderr: the answers on stdout keep their shape
    for note in dict.fromkeys(n for a in answers for n in a.notes):
        err(f"note: {note}")
    if fmt == "json":
        echo_records(graphkit.lineage_records(answers))
        return
    if fmt == "csv":
        echo_csv(LINEAGE_CSV_COLUMNS, _lineage_rows(answers))
        return
    for a in answers:
        up = " → ".join(f"{r.type} {shown(r.id)}" for r in a.ancestors) or "(none)"
        down = ", ".join(shown(r.id) for r in a.descendants) or "(none)"
        text = (f"{shown(a.id)}  (session {shown(a.session_id)})\n  ancestors:   {up}\n"
                f"  descendants: {down}")
        if a.continues:
            text += "\n  continues:   " + _continues_text(a.continues)
        click.echo(text)


def _continues_text(chain: list[Continuation]) -> str:
    """The continued sessions a level at a time: ``→`` between levels, ``,`` within
    one (a session continuing two others continues each directly; an arrow between
    them would say one continues the other)."""
    levels: dict[int, list[str]] = {}
    for c in chain:
        levels.setdefault(c.depth, []).append(f"{shown(c.id)} ({shown(c.how or '?')})")
    return " → ".join(", ".join(names) for _, names in sorted(levels.items()))


def _lineage_rows(answers: list[Lineage]) -> Iterator[dict[str, Any]]:
    """Lineage in long form: one row per (id, ancestor, descendant or continued session);
    ``step`` is how many links away (1 nearest), so siblings share one."""
    for a in answers:
        # Ancestors are one chain (the n-th is n steps up); descendants and continued
        # sessions branch, and carry their depth.
        down = a.descendant_depths or list(range(1, len(a.descendants) + 1))
        groups: list[tuple[str, list[tuple[int, str, str]]]] = [
            ("ancestor", [(i, r.type, r.id) for i, r in enumerate(a.ancestors, 1)]),
            ("descendant", [(d, r.type, r.id) for d, r in zip(down, a.descendants,
                                                                strict=True)]),
            ("continues", [(c.depth, c.type, c.id) for c in a.continues])]
        for relation, refs in groups:
            for step, kind, node in refs:
                yield {"id": a.id, "session_id": a.session_id, "relation": relation,
                       "step": step, "type": kind, "node": node}


def tree_label(node: TreeNode, *, markup: bool) -> str:
    """One line of ``graphkit tree``: the id, then kind, agent type, messages."""
    from rich.markup import escape

    info = node.info
    ident = escape(shown(node.ref.id)) if markup else shown(node.ref.id)
    if info is None:
        return f"[bold]Session[/bold] {ident}" if markup else f"Session {ident}"
    bits = [info.kind or "thread"]
    if info.agent_type:
        bits.append(info.agent_type)
    if info.messages is not None:
        bits.append(f"{info.messages} messages")
    if node.cycle:
        bits.append("in a parent cycle")
    detail = shown(", ".join(bits))
    if markup:
        return f"{ident} [dim]({escape(detail)})[/dim]"
    return f"{ident} ({detail})"


#: Levels of indentation ``graphkit tree`` draws; a node deeper than this is drawn at
#: this indentation with its depth written out. Real subagent chains are a few deep,
#: but one a thousand deep indented in full is megabytes of blanks (10,000 deep: 200 MB).
DRAWN_LEVELS = 16


def _tree_lines(root: TreeNode, *, markup: bool = False) -> list[str]:
    """``graphkit tree``'s lines: the session, then each node under its parent,
    indented by its depth up to :data:`DRAWN_LEVELS` levels; a node below that
    stays at that indentation and says its depth (``depth 17: …``)."""
    from rich.markup import escape

    # A loop, not recursion: a chain of subagents can be thousands deep.
    lines = [tree_label(root, markup=markup)]
    stack = [(c, "", i == len(root.children) - 1, 1)
             for i, c in reversed(list(enumerate(root.children)))]
    while stack:
        node, prefix, last, depth = stack.pop()
        deep = f"depth {depth}: " if depth > DRAWN_LEVELS else ""
        lines.append(prefix + ("└── " if last else "├── ") + (escape(deep) if markup else deep)
                     + tree_label(node, markup=markup))
        child_prefix = prefix
        if depth <= DRAWN_LEVELS:
            child_prefix += "    " if last else "│   "
        stack.extend((c, child_prefix, i == len(node.children) - 1, depth + 1)
                     for i, c in reversed(list(enumerate(node.children))))
    return lines


def _depth_exceeds(root: TreeNode, levels: int) -> bool:
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > levels:
            return True
        stack.extend((c, depth + 1) for c in node.children)
    return False


@cli.command()
@click.argument("session_id")
@store_options
@format_options
def tree(session_id: str, snapshot_dir: Path | None, neo4j: bool, ask_password: bool,
         as_json: bool, as_csv: bool) -> None:
    """Draw a session's threads and subagents as a tree: the main thread first,
    children by start time, then the sessions it continues and those that
    continue it. Colour on a terminal, plain text when piped; --json one
    {"record": "tree", ...} line per node in drawing order, with its depth and
    parent, then one {"record": "continuation", "session_id", "direction",
    "type", "id", "how", "depth"} line per continuing or continued session;
    --csv the tree nodes as CSV.

    Example: graphkit tree 8299ed6e-811c-4fa7-b124-c205cd625a7f --snapshot out/graph
    """
    fmt = output_format(as_json, as_csv)
    with open_reader(snapshot_dir, neo4j, ask_password) as reader:
        answer = graphkit.tree(reader, session_id)
    records = graphkit.tree_records(answer)
    for note in answer.notes:  # stderr: the tree on stdout keeps its shape
        err(f"note: {note}")
    if fmt == "json":
        echo_records(records)
        return
    if fmt == "csv":
        echo_csv(TREE_COLUMNS, (r for r in records if r["record"] == "tree"))
        return
    root = answer.root
    links = ([("continues", c) for c in answer.continues]
             + [("continued_by", c) for c in answer.continued_by])
    # One line per direction, a level at a time (as `lineage` writes them): a line per
    # session said "K continues A (resume)" of a session two steps away, whose resume
    # was its origin's.
    lines = [f"  {d.replace('_', ' ')} {_continues_text([c for e, c in links if e == d])}"
             for d in dict.fromkeys(d for d, _ in links)]
    if not sys.stdout.isatty():
        click.echo("\n".join(_tree_lines(root) + lines))
        return
    from rich.console import Console
    from rich.tree import Tree

    if _depth_exceeds(root, DRAWN_LEVELS):
        console = Console(highlight=False)
        for line in _tree_lines(root, markup=True):
            console.print(line, overflow="ignore", crop=False, soft_wrap=True)
        for line in lines:
            click.echo(line)
        return
    view = Tree(tree_label(root, markup=True))
    stack = [(view, root)]
    while stack:  # a loop, not recursion: a tree may be thousands deep
        parent, node = stack.pop()
        stack.extend((parent.add(tree_label(c, markup=True)), c) for c in node.children)
    Console(highlight=False).print(view)
    for line in lines:
        click.echo(line)
