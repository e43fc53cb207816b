"""``graphkit build``, ``rows`` and ``check``: from sources to a graph, rows or findings.

Each command makes its options one value (:class:`graphkit.BuildOptions`, checked once),
makes one call to the public API and renders what it returns.
"""

from __future__ import annotations

import gc
import sys
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any

import click

import graphkit
from graphkit.cli.app import cli
from graphkit.cli.errors import UserError
from graphkit.cli.options import PATH, password_option, quiet, quiet_option, time_options
from graphkit.cli.process import all_written
from graphkit.cli.render import echo_json, err, progress, shown
from graphkit.cli.stores import default_sources, neo4j_store
from graphkit.core.errors import GraphkitError
from graphkit.core.progress import Progress, Task
from graphkit.core.when import parse_window


@cli.command()
@click.argument("sources", nargs=-1, type=PATH)
@click.option("--snapshot", "snapshot_dir", type=PATH,
              help="Write the graph to this snapshot folder (with no SOURCES: by default "
                   "your history's snapshot in graphkit's data folder).")
@click.option("--contract", default="ai-gateway-graph", show_default=True,
              help="A shipped contract name or a path to a contract YAML file.")
@click.option("--granularity", type=click.Choice(["thread", "message"]), default="thread",
              show_default=True, help="`message` adds Message nodes with NEXT edges.")
@click.option("--rejects", "rejects_path", type=PATH,
              help="Where unusable rows go (default: SNAPSHOT.rejects.jsonl).")
@click.option("--include-content", is_flag=True, help="Keep message content in outputs.")
@click.option("--strict", is_flag=True, help="Fail on the first unreadable transcript line.")
@time_options
@click.option("--cache-dir", type=PATH,
              help="Where the incremental transcript index lives "
                   "(default: beside the snapshot).")
@click.option("--store", type=click.Choice(["snapshot", "networkx", "neo4j"]),
              default="snapshot", show_default=True,
              help="Where the graph goes besides the snapshot: nowhere else, also an "
                   "in-process NetworkX graph (its counts are reported), or also the "
                   "Neo4j server named by NEO4J_URI.")
@click.option("--if-exists", type=click.Choice(["merge", "replace", "fail"]), default="merge",
              show_default=True, help="Neo4j: what to do when the graph's nodes already exist.")
@click.option("--batch-size", type=click.IntRange(min=1), help="Neo4j: rows per UNWIND batch.")
@password_option
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@quiet_option
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local",
              show_default=True, help="spark: build on Spark (agent-graphkit[spark]).")
@click.option("--partitions", help="Build partition by partition, bounded in memory: "
                                   "a count, or auto.")
@click.option("--spark-master", help="Spark master URL for --engine spark (spark://HOST:7077, "
                                     "local[4], k8s://…; default: the spark-submit session, "
                                     "else local[*]).")
@click.option("--hash-inputs", is_flag=True,
              help="Record each row file's SHA-256 in the manifest (default: size and "
                   "mtime; hashing reads every byte again).")
@click.option("--watch", is_flag=True,
              help="Build, then keep running: rebuild incrementally in this process "
                   "whenever the sources change, one summary line per rebuild, until "
                   "Ctrl-C.")
@click.option("--poll", type=click.FloatRange(min=0.05), metavar="SECONDS",
              help="With --watch: look for changes by walking the sources every SECONDS "
                   "instead of OS file events (network filesystems).")
def build(sources: tuple[Path, ...], snapshot_dir: Path | None, since: str | None,
          until: str | None, ask_password: bool, as_json: bool, **given: Any) -> None:
    """Build a session graph from message rows or transcripts.

    SOURCES are Parquet/Feather/JSON Lines files or folders (hive partitions
    included), Claude Code or Codex transcript folders or files, or HypAware
    caches. With no SOURCES, reads ~/.claude/projects and ~/.codex/sessions
    (and, without --snapshot, writes your history's snapshot where the read
    commands find it: `graphkit build && graphkit sessions`).

    Example: graphkit build samples/rows --snapshot out/graph
    """
    lo, hi = parse_window(since, until)
    # Every other option is a BuildOptions field of the same name.
    options = graphkit.BuildOptions(since=lo, until=hi, **given)
    paths = list(sources) or default_sources()
    if not sources and snapshot_dir is None and options.store != "neo4j":
        snapshot_dir = graphkit.history_snapshot()
        err(f"writing the snapshot to {shown(snapshot_dir)} (--snapshot DIR to choose)")
    if options.watch:
        _watch(paths, snapshot_dir, options, since, until, as_json)
        return
    with ExitStack() as stack:
        # Connected (and the credentials checked, any prompt answered) before the
        # build and its progress display, not after them.
        neo = stack.enter_context(neo4j_store(ask_password)) if options.store == "neo4j" else None
        shown_progress = stack.enter_context(WhenBuilding())
        result, summary = graphkit.build_snapshot(paths, snapshot_dir, options, neo4j=neo,
                                                  progress=shown_progress)
    # stderr: stdout stays the summary. --quiet keeps them out (they are in the
    # --json summary and the snapshot's manifest either way).
    _print_build(summary, result.skipped, [] if quiet() else result.notes, as_json=as_json)
    if not options.partitioned:
        # Every file of the build is written, renamed and closed (its pools joined) by
        # now: the process may end without the interpreter's teardown.
        all_written()


# Whether this process has frozen what its first build imported (see WhenBuilding).
_frozen: list[bool] = []


class WhenBuilding(Progress):
    """The progress display (:func:`graphkit.cli.app.progress`), started at the build's
    first report rather than before the call: a rebuild that keeps its snapshot reports
    nothing, and so never loads rich on a terminal. A context manager: leaving it ends
    the display.

    The first report of the process's first build comes after the build's imports, and
    what they made lives as long as the process: it is frozen then, out of the cyclic
    collector's scans (bench/PROFILE_NOTES.md at d9272aa, "the cyclic GC"; once: freezing at every
    rebuild of a watch would park its uncollected garbage for good)."""

    def __init__(self) -> None:
        self._stack = ExitStack()
        self._shown: Progress | None = None

    def _started(self) -> Progress:
        if self._shown is None:
            if not _frozen:
                gc.freeze()
                _frozen.append(True)
            self._shown = self._stack.enter_context(progress())
        return self._shown

    def note(self, message: str) -> None:
        self._started().note(message)

    def start(self, name: str, total: int | None = None, unit: str = "") -> Task:
        return self._started().start(name, total, unit)

    def __enter__(self) -> WhenBuilding:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stack.__exit__(exc_type, exc, tb)


def _print_build(summary: dict[str, Any], skipped: list[dict[str, Any]], notes: list[str],
                 *, as_json: bool, extra: dict[str, Any] | None = None) -> None:
    """What :func:`build` prints: notes on stderr, then the summary (``extra`` added to
    the JSON)."""
    if summary.get("index_note"):
        err(summary["index_note"])
    for message in notes:
        err(f"note: {message}")
    if as_json:
        echo_json({**summary, "skipped_lines": graphkit.skipped_lines_summary(skipped),
                   **(extra or {})})
        return
    print_summary(summary, skipped)


def _watch(paths: list[Path], snapshot_dir: Path | None, options: graphkit.BuildOptions,
           since: str | None, until: str | None, as_json: bool) -> None:
    """``--watch``: the first build as a plain one prints it, then one line (``--json``:
    one object) per rebuild; notes and skipped lines only when new
    (:func:`graphkit.watch_builds`)."""
    from graphkit.cli.watch import rebuild_line

    def options_now() -> graphkit.BuildOptions:
        try:
            lo, hi = parse_window(since, until)  # "2 hours ago" is now's, as a new build's would be
        except UserError as exc:  # a rebuild's failure, reported: the watch goes on
            raise GraphkitError(exc.message) from None
        return replace(options, since=lo, until=hi)

    def report(got: graphkit.Rebuild) -> None:
        for message in [] if quiet() else got.notes:
            err(f"note: {message}")
        for line in got.new_skipped:  # the first build's are in its summary
            err(f"skipped {shown(line['path'])}:{line['line']}: {shown(line['reason'])}")
        extra = {"watch": {"rebuild": got.n, "changed_paths": got.changed,
                           "seconds": round(got.seconds, 4), "cpu_seconds": round(got.cpu, 4),
                           **({"error": got.error} if got.error else {})}}
        if got.error:
            err(f"Error: {got.error}")
        if got.summary is not None and (got.n == 0 or as_json):
            _print_build(got.summary, got.skipped, [], as_json=as_json, extra=extra)
        elif as_json:
            echo_json(extra)
        else:
            if got.summary is not None and got.summary.get("index_note"):
                err(got.summary["index_note"])
            click.echo(rebuild_line(got.n, got.changed, got.summary, got.seconds))
        sys.stdout.flush()  # a pipe's reader sees each rebuild as it is done

    code = graphkit.watch_builds(paths, snapshot_dir, options_now, report,
                                 progress=WhenBuilding, say=err)
    if code:
        sys.exit(code)


def print_summary(summary: dict[str, Any], skipped: list[dict[str, Any]]) -> None:
    """The build summary for people: counts, a node/edge table, notes and paths."""
    click.echo(f"rows read {summary['rows_read']}, used {summary['rows_used']}, "
               f"rejected {summary['rows_rejected']}, duplicates {summary['duplicate_rows']}"
               + (f", transcript lines skipped {len(skipped)}" if skipped else ""))
    rows = [("node", k, str(v)) for k, v in summary["nodes"].items()]
    rows += [("edge", k, str(v)) for k, v in summary["edges"].items()]
    plain = plain_table(("kind", "type", "count"), rows)
    if plain is not None:
        click.echo(plain, nl=False)
    else:
        from rich.console import Console
        from rich.table import Table

        t = Table(show_header=True, header_style="bold")
        t.add_column("kind")
        t.add_column("type")
        t.add_column("count", justify="right")
        for row in rows:
            t.add_row(*row)
        Console(highlight=False).print(t)
    if summary.get("transcripts"):
        tr = summary["transcripts"]
        groups = (f"; {tr['sessions_projected']} sessions in {tr['groups_projected']} link "
                  f"groups projected, {tr['sessions_reused']} in {tr['groups_reused']} kept"
                  if "groups_projected" in tr else "")
        click.echo(f"transcripts: {tr['files_parsed']} files parsed, {tr['files_reused']} reused"
                   + groups + (" (nothing changed: the snapshot was kept)"
                               if summary.get("snapshot_reused") else ""))
    unknown = summary.get("unknown_records") or {}
    if unknown:
        click.echo(f"unknown record types: {len(unknown)} (" + ", ".join(
            f"{shown(k)} ×{v['count']} first at {shown(v['first'])}"
            for k, v in list(unknown.items())[:5]) + (", …" if len(unknown) > 5 else "")
            + "; see `graphkit check`)")
    otel = summary.get("otel_capture")
    if otel and otel.get("unlinked_sessions"):
        click.echo(f"OTEL capture: {otel['unlinked_rows']} subagent row(s) in "
                   f"{otel['unlinked_sessions']} session(s) carry no spawn link; "
                   f"{otel['what_to_do']} (see `graphkit check`)")
    for etype, d in summary.get("dropped_edges", {}).items():
        click.echo(f"note: {etype}: " + ", ".join(f"{v} {k.replace('_', ' ')}"
                                                  for k, v in d.items() if v)
                   + " (see `graphkit check`)")
    for s in skipped[:5]:
        click.echo(f"skipped {shown(s['path'])}:{s['line']}: {shown(s['reason'])}")
    if len(skipped) > 5:
        click.echo(f"… and {len(skipped) - 5} more skipped line(s)")
    if summary.get("rejects_file"):
        click.echo(f"rejected rows written to {shown(summary['rejects_file'])}")
    if summary.get("snapshot"):
        click.echo(f"snapshot kept (its inputs, contract and options are unchanged): "
                   f"{shown(summary['snapshot'])}" if summary.get("snapshot_reused")
                   else f"snapshot written to {shown(summary['snapshot'])}")
    for name in ("networkx", "neo4j"):
        if summary.get(name):
            n = summary[name]
            click.echo(f"loaded into {'NetworkX' if name == 'networkx' else 'Neo4j'}: "
                       f"{sum(n['nodes'].values())} nodes, "
                       f"{sum(n['edges'].values())} edges in {n['seconds']} s")


# Environment that changes what rich prints (colour, width, terminal handling).
_RICH_ENV = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES",
             "JUPYTER_COLUMNS", "JUPYTER_LINES")


def plain_table(header: tuple[str, str, str], rows: list[tuple[str, str, str]]) -> str | None:
    """The summary table as rich draws it into a pipe or file (no colour, 80 columns,
    heavy head, last column right-aligned), or None where rich might draw it otherwise
    (a terminal, a non-UTF-8 stream, wider than 80, non-ASCII text, environment that
    rich reads): then rich draws it. Spares importing rich (~0.07 CPU-s) in scripts."""
    import os

    out = sys.stdout
    cells = [header, *rows]
    if (out is None or out.isatty() or any(v in os.environ for v in _RICH_ENV)
            or not (getattr(out, "encoding", None) or "").lower().replace("-", "")
            .startswith("utf8")
            or not all(c.isascii() and c.isprintable() for row in cells for c in row)):
        return None
    widths = [max(len(row[i]) for row in cells) for i in range(3)]
    if sum(widths) + 10 > 80:
        return None

    def line(left: str, fill: str, mid: str, right: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right + "\n"

    def cells_of(row: tuple[str, str, str], bar: str) -> str:
        texts = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2].rjust(widths[2])]
        return bar + bar.join(f" {t} " for t in texts) + bar + "\n"

    return (line("┏", "━", "┳", "┓") + cells_of(header, "┃") + line("┡", "━", "╇", "┩")
            + "".join(cells_of(r, "│") for r in rows) + line("└", "─", "┴", "┘"))


@cli.command()
@click.argument("sources", nargs=-1, type=PATH)
@click.option("--out", "out", required=True, metavar="PATH",
              help="The Parquet file to write (- for stdout).")
@click.option("--include-content", is_flag=True, help="Keep message content columns.")
@click.option("--strict", is_flag=True, help="Fail on the first unreadable transcript line.")
@time_options
@click.option("--cache-dir", type=PATH,
              help="Where the incremental transcript index lives.")
@quiet_option
def rows(sources: tuple[Path, ...], out: str, since: str | None, until: str | None,
         **given: Any) -> None:
    """Write the ai_gateway_messages rows graphkit reads from SOURCES to Parquet.

    With no SOURCES, reads ~/.claude/projects and ~/.codex/sessions.

    Example: graphkit rows ~/.claude/projects --out claude-rows.parquet
    """
    lo, hi = parse_window(since, until)
    options = graphkit.BuildOptions(since=lo, until=hi, **given)
    paths = list(sources) or default_sources()
    with progress() as say:
        result = graphkit.write_rows(paths, Path(out) if out != "-" else out, options,
                                     progress=say)
    # To stderr: with --out - stdout carries the Parquet bytes.
    err(f"wrote {result.rows} rows to {'stdout' if out == '-' else result.out}"
        + (f" ({len(result.skipped)} transcript line(s) skipped)" if result.skipped else ""))
    for note in result.notes:  # repaired text, sources of no rows: nothing unsaid
        err(f"note: {note}")
    if result.left_out:
        err("content columns left out: " + ", ".join(result.left_out)
            + " (--include-content keeps them)")


@cli.command()
@click.argument("sources", nargs=-1, required=True, type=PATH)
@click.option("--contract", default="ai-gateway-graph", show_default=True,
              help="A shipped contract name or a path to a contract YAML file.")
@time_options
@click.option("--json", "as_json", is_flag=True, help="Print findings as a JSON array.")
@quiet_option
def check(sources: tuple[Path, ...], contract: str, since: str | None, until: str | None,
          as_json: bool) -> None:
    """Check identity columns without building: null sessions, ids shared by
    sessions, missing parents, cycles, pre-LLP-0030 rows.

    Exit code 0: no identity problem (warnings, such as transcript lines no reader
    knows or text made valid, are printed with their count); 1: identity problems
    found; 2: the sources or contract could not be read.

    Example: graphkit check samples/rows
    """
    lo, hi = parse_window(since, until)
    c = graphkit.load_contract(contract)
    with progress() as bars:
        n_rows, findings = graphkit.check(list(sources), contract=c, since=lo, until=hi,
                                          progress=bars)
    for note in graphkit.unchecked(c):
        err(f"note: {note}")
    problems = [f for f in findings if not f.warning]
    if as_json:
        echo_json([f.to_json() for f in findings])
    else:
        if not problems:
            click.echo(f"ok: {n_rows} rows, no identity problems found")
        for f in findings:
            click.echo(f"{'warning: ' if f.warning else ''}{f.check}: {shown(f.message)}")
            for ex in f.examples:
                click.echo("    " + ", ".join(f"{k}={shown(v)}" for k, v in ex.items()))
    if problems:
        sys.exit(1)
