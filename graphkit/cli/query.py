"""``graphkit sessions``, ``lineage`` and ``tree``: questions asked of a built graph."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from graphkit.cli.app import cli, echo_json, open_reader, store_options, time_options, window
from graphkit.queries.model import TreeNode


def _tsv(cells: list[object]) -> str:
    # Tabs and newlines inside a value would break the columns a pipe reads.
    return "\t".join("" if c is None else str(c).replace("\t", " ").replace("\n", " ")
                     for c in cells)


@cli.command()
@store_options
@click.option("--limit", type=click.IntRange(min=1), help="Show only the N most recent sessions.")
@time_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def sessions(snapshot_dir: Path | None, neo4j: bool, ask_password: bool, limit: int | None,
             since: str | None, until: str | None, as_json: bool) -> None:
    """List sessions with their thread, agent and message counts.

    "agents" counts the session's threads other than its main loop: Claude
    subagents and Codex child threads. On a terminal a table; piped, plain TSV
    with a header line (ids and dates never truncated).

    Example: graphkit sessions --snapshot out/graph --json
    """
    from graphkit.queries.lineage import sessions as list_sessions
    from graphkit.queries.window import Window

    w = Window(*window(since, until))
    with open_reader(snapshot_dir, neo4j, ask_password) as reader:
        rows = [s for s in list_sessions(reader) if w.overlaps(s.first_seen, s.last_seen)]
    if limit is not None:
        rows = rows[-limit:]
    if as_json:
        echo_json([s.to_json() for s in rows])
        return
    cols = ("session_id", "threads", "agents", "messages", "first_seen", "last_seen")
    if not sys.stdout.isatty():
        lines = [_tsv(list(cols))]
        lines += [_tsv([s.session_id, s.threads, s.agents, s.messages, s.first_seen,
                        s.last_seen]) for s in rows]
        click.echo("\n".join(lines))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(show_header=True, header_style="bold")
    for col in cols:
        t.add_column(col, justify="right" if col in ("threads", "agents", "messages") else "left",
                     no_wrap=True)
    for s in rows:
        t.add_row(s.session_id, str(s.threads), str(s.agents), str(s.messages),
                  s.first_seen or "", s.last_seen or "")
    Console(highlight=False).print(t)


@cli.command()
@click.argument("ids", nargs=-1, required=True)
@store_options
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line per ID.")
def lineage(ids: tuple[str, ...], snapshot_dir: Path | None, neo4j: bool,
            ask_password: bool, as_json: bool) -> None:
    """Show who spawned a thread or subagent, up to its session, and all it spawned.

    ID is an agent_id, a thread id (conversation_id) or a session_id.

    Example: graphkit lineage a1f0c3e2b4d5a6a7 --snapshot out/graph --json
    """
    from graphkit.queries.lineage import lineage_many

    with open_reader(snapshot_dir, neo4j, ask_password) as reader:
        answers = lineage_many(reader, ids)
    for a in answers:
        if as_json:
            echo_json(a.to_json())
            continue
        up = " → ".join(f"{r.type} {r.id}" for r in a.ancestors) or "(none)"
        down = ", ".join(r.id for r in a.descendants) or "(none)"
        text = (f"{a.id}  (session {a.session_id})\n  ancestors:   {up}\n"
                f"  descendants: {down}")
        if a.continues:
            text += "\n  continues:   " + " → ".join(f"{c.id} ({c.how or '?'})"
                                                    for c in a.continues)
        click.echo(text)


def tree_label(node: TreeNode, *, markup: bool) -> str:
    """One line of ``graphkit tree``: the id, then kind, agent type, messages."""
    from rich.markup import escape

    info = node.info
    ident = escape(node.ref.id) if markup else node.ref.id
    if info is None:
        return f"[bold]Session[/bold] {ident}" if markup else f"Session {ident}"
    bits = [info.kind or "thread"]
    if info.agent_type:
        bits.append(info.agent_type)
    if info.messages is not None:
        bits.append(f"{info.messages} messages")
    if node.cycle:
        bits.append("in a parent cycle")
    detail = ", ".join(bits)
    if markup:
        return f"{ident} [dim]({escape(detail)})[/dim]"
    return f"{ident} ({detail})"


def _plain_tree(node: TreeNode, prefix: str = "", last: bool = True,
                top: bool = True) -> list[str]:
    lines = [tree_label(node, markup=False) if top
             else prefix + ("└── " if last else "├── ") + tree_label(node, markup=False)]
    child_prefix = "" if top else prefix + ("    " if last else "│   ")
    for i, c in enumerate(node.children):
        lines += _plain_tree(c, child_prefix, i == len(node.children) - 1, False)
    return lines


@cli.command()
@click.argument("session_id")
@store_options
@click.option("--json", "as_json", is_flag=True, help="Print the tree as nested JSON.")
def tree(session_id: str, snapshot_dir: Path | None, neo4j: bool, ask_password: bool,
         as_json: bool) -> None:
    """Draw a session's threads and subagents as a tree: the main thread first,
    children by start time. Colour on a terminal, plain text when piped.

    Example: graphkit tree 5b0e7a52-1c7d-4c55-9a43-0f4a0c2d7a01 --snapshot out/graph
    """
    from graphkit.queries.continuations import continued_by, continues
    from graphkit.queries.lineage import session_tree

    with open_reader(snapshot_dir, neo4j, ask_password) as reader:
        root = session_tree(reader, session_id)
        before, after = continues(reader, session_id), continued_by(reader, session_id)
    links = ([f"continues {c.id} ({c.how or '?'})" for c in before]
             + [f"continued by {c.id} ({c.how or '?'})" for c in after])
    if as_json:
        out = root.to_json()
        out["continues"] = [c.to_json() for c in before]
        out["continued_by"] = [c.to_json() for c in after]
        echo_json(out)
        return
    if not sys.stdout.isatty():
        click.echo("\n".join(_plain_tree(root) + [f"  {x}" for x in links]))
        return
    from rich.console import Console
    from rich.tree import Tree

    view = Tree(tree_label(root, markup=True))

    def add(parent: Tree, node: TreeNode) -> None:
        for c in node.children:
            add(parent.add(tree_label(c, markup=True)), c)

    add(view, root)
    Console(highlight=False).print(view)
    for x in links:
        click.echo(f"  {x}")
