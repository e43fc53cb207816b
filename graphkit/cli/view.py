"""``graphkit diff`` and ``graphkit view``: comparing snapshots and looking at a session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

import graphkit
from graphkit.cli.app import cli
from graphkit.cli.errors import UserError
from graphkit.cli.options import PATH, format_options, output_format, store_options
from graphkit.cli.render import echo_csv, echo_records, progress, shown
from graphkit.cli.stores import open_reader

if TYPE_CHECKING:
    from graphkit import GraphDiff

# How many changes of one type the text output lists before summarising the rest.
_TEXT_LIMIT = 20
DIFF_CSV_COLUMNS = ("record", "change", "type", "id", "key", "source_id", "source_key",
                    "target_id", "target_key", "property", "old", "new")
_MARK = {"added": ("+", "green"), "removed": ("-", "red"), "changed": ("~", "yellow")}


@cli.command()
@click.argument("old", type=PATH)
@click.argument("new", type=PATH)
@click.option("--include-content", is_flag=True,
              help="Allow snapshots that hold message content (their text is printed).")
@format_options
def diff(old: Path, new: Path, include_content: bool, as_json: bool, as_csv: bool) -> None:
    """Show the nodes and edges added, removed and changed from snapshot OLD to
    NEW, by type, with ids, user-facing keys and changed properties, and the
    sessions that gained subagents or child threads.

    --json prints one {"record": "node"|"edge", ...} line per change and a
    closing {"record": "diff", ...} line with the counts; --csv one row per
    changed property. A snapshot compared with itself prints no changes.

    Example: graphkit diff out/graph-last-week out/graph --json
    """
    fmt = output_format(as_json, as_csv)
    d = graphkit.diff_snapshots(old, new, include_content=include_content)
    if fmt == "json":
        echo_records(d.records())
        echo_records([d.summary()])
    elif fmt == "csv":
        echo_csv(DIFF_CSV_COLUMNS, _diff_csv_rows(d))
    else:
        _print_diff(d)


def _diff_csv_rows(d: GraphDiff) -> Iterator[dict[str, Any]]:
    """Changes in long form: one row per changed property (added and removed
    nodes or edges are one row with no property)."""
    for rec in d.records():
        base = {k: rec.get(k) for k in ("record", "change", "type", "id", "key")}
        for end in ("source", "target"):
            if end in rec:
                base[f"{end}_id"] = rec[end]["id"]
                base[f"{end}_key"] = rec[end]["key"]
        if not rec["changes"]:
            yield base
        for prop, ch in rec["changes"].items():
            yield {**base, "property": prop, "old": ch["old"], "new": ch["new"]}


def _print_diff(d: GraphDiff) -> None:
    if d.is_empty():
        click.echo("no differences")
        return
    for element, diffs in (("nodes", d.nodes), ("edges", d.edges)):
        changed = {t: td for t, td in diffs.items() if not td.is_empty()}
        if not changed:
            continue
        click.echo(f"{element}:")
        for t, td in changed.items():
            c = td.counts()
            click.echo(f"  {t}: " + ", ".join(f"{n} {k}" for k, n in c.items() if n))
    children = d.new_child_threads()
    if children:
        click.echo("sessions that gained subagents or child threads:")
        for sid, threads in children.items():
            more = f", … {len(threads) - 5} more" if len(threads) > 5 else ""
            click.echo(f"  {shown(sid)}: {len(threads)} "
                       f"({', '.join(shown(t) for t in threads[:5])}{more})")
    listed: dict[tuple[str, str], int] = {}
    for rec in d.records():
        group = (rec["record"], rec["type"])
        listed[group] = listed.get(group, 0) + 1
        if listed[group] > _TEXT_LIMIT:
            continue
        mark, colour = _MARK[rec["change"]]
        what = (shown(rec["key"]) if rec["record"] == "node"
                else f"{shown(rec['source']['key'])} -> {shown(rec['target']['key'])}")
        line = f"{mark} {rec['type']} {what}"
        if rec["changes"]:
            line += ": " + ", ".join(f"{p} {shown(c['old'])} -> {shown(c['new'])}"
                                     for p, c in rec["changes"].items())
        click.secho(line, fg=colour)
    for (element, t), n in listed.items():
        if n > _TEXT_LIMIT:
            click.echo(f"… and {n - _TEXT_LIMIT} more {element} changes of {t} "
                       "(--json or --csv lists all)")


@cli.command()
@click.argument("session_id", required=False)
@store_options
@click.option("--out", "out", required=True, type=PATH,
              help="The HTML file to write (- for stdout); without SESSION_ID, the folder "
                   "of the history site.")
@click.option("--include-content", is_flag=True,
              help="Show message text (from a snapshot built with --granularity message "
                   "--include-content).")
def view(session_id: str | None, snapshot_dir: Path | None, neo4j: bool, ask_password: bool,
         out: Path, include_content: bool) -> None:
    """Write one session as a self-contained HTML page: its threads and
    subagents as a collapsible tree beside a timeline (who spawned whom, agent
    type, model, message and token counts, cost per thread and subtree, start
    and end times); clicking a thread shows its lineage up to the session.
    Without SESSION_ID, write the whole history as an offline site in the folder
    OUT: index.html lists every session (start, workspace, threads, subagents,
    tokens, cost; sort by any column, filter by workspace and time), each
    linking to its own page. Pages work offline and load nothing; message text
    only with --include-content.

    Example: graphkit view 8299ed6e-811c-4fa7-b124-c205cd625a7f --snapshot out/graph --out
    session.html
    """
    if session_id is None:
        if str(out) == "-":
            raise UserError("the history site is a folder: give --out DIR (or a SESSION_ID "
                            "for one page on stdout)")
        with open_reader(snapshot_dir, neo4j, ask_password) as reader, progress() as say:
            site = graphkit.write_site(reader, out, include_content=include_content,
                                       progress=say)
        click.echo(f"wrote {shown(out)}: {site.sessions} session"
                   f"{'s' if site.sessions != 1 else ''}, {site.threads} threads; "
                   f"open {shown(Path(out) / 'index.html')}")
        return
    with open_reader(snapshot_dir, neo4j, ask_password) as reader:
        page = graphkit.session_page(reader, session_id, include_content=include_content)
        directory = getattr(reader, "directory", None)  # a snapshot's: never written over
    if str(out) == "-":
        click.echo(page.html, nl=False)
        return
    graphkit.write_html(page.html, out, sources=[directory] if directory is not None else [],
                        private=include_content)
    n = page.threads
    click.echo(f"wrote {shown(out)}: session {shown(session_id)}, "
               f"{n} thread{'s' if n != 1 else ''}")

