"""``graphkit build``, ``rows`` and ``check``: from sources to a graph, rows or findings."""

from __future__ import annotations

import gc
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from graphkit.cli.app import (
    PATH,
    UserError,
    all_written,
    cli,
    default_sources,
    echo_json,
    err,
    neo4j_store,
    password_option,
    progress,
    quiet,
    quiet_option,
    shown,
    time_options,
    window,
)


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
              show_default=True, help="spark: build on Spark (graphkit[spark]).")
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
def build(sources: tuple[Path, ...], snapshot_dir: Path | None, contract: str,
          granularity: str, rejects_path: Path | None, include_content: bool, strict: bool,
          since: str | None, until: str | None, cache_dir: Path | None, store: str,
          if_exists: Any, batch_size: int | None, ask_password: bool, as_json: bool,
          engine: str, partitions: str | None, spark_master: str | None,
          hash_inputs: bool, watch: bool, poll: float | None) -> None:
    """Build a session graph from message rows or transcripts.

    SOURCES are Parquet/Feather/JSON Lines files or folders (hive partitions
    included), Claude Code or Codex transcript folders or files, or HypAware
    caches. With no SOURCES, reads ~/.claude/projects and ~/.codex/sessions
    (and, without --snapshot, writes your history's snapshot where the read
    commands find it: `graphkit build && graphkit sessions`).

    Example: graphkit build samples/rows --snapshot out/graph
    """
    lo, hi = window(since, until)
    if watch:
        _refuse_watch(store, engine, partitions, spark_master)
    elif poll is not None:
        raise UserError("--poll works with --watch only")
    paths = list(sources) or default_sources()
    if not sources and snapshot_dir is None and store != "neo4j":
        snapshot_dir = history_snapshot()
    # Passed only when given: a build without it keeps its incremental build key.
    hashing: dict[str, Any] = {"hash_inputs": True} if hash_inputs else {}
    if engine != "local" or partitions is not None or spark_master:
        from graphkit.builds.partitioned.command import engine_build
        from graphkit.builds.uptodate import skipped_lines_summary

        # What the imports made lives as long as the process: kept out of the collector's
        # scans.
        gc.freeze()
        if hash_inputs:
            raise UserError("--hash-inputs works with the default engine only; drop --engine/"
                            "--partitions/--spark-master, or drop --hash-inputs")

        with progress() as say:
            summary, skipped = engine_build(
                paths, snapshot_dir, engine=engine, partitions=partitions,
                spark_master=spark_master, contract=contract, granularity=granularity,
                rejects_path=rejects_path, include_content=include_content, strict=strict,
                since=lo, until=hi, cache_dir=cache_dir, store=store, progress=say)
        if as_json:
            echo_json({**summary, "skipped_lines": skipped_lines_summary(skipped)})
        else:
            print_summary(summary, skipped)
        return
    options: dict[str, Any] = dict(
        contract=contract, granularity=granularity, strict=strict,
        include_content=include_content, cache_dir=cache_dir, rejects_path=rejects_path,
        store=store, ask_password=ask_password, if_exists=if_exists, batch_size=batch_size,
        **hashing)
    if not watch:
        _print_build(*_one_build(paths, snapshot_dir, lo, hi, **options), as_json=as_json)
        # Every file of the build is written, renamed and closed (its pools joined) by
        # now: the process may end without the interpreter's teardown.
        all_written()
        return
    _watch(paths, snapshot_dir, since, until, as_json, poll, options)


def _refuse_watch(store: str, engine: str, partitions: str | None,
                  spark_master: str | None) -> None:
    """What --watch cannot do: it keeps a snapshot (and its cache) up to date in this
    process; a store outside it or another engine would redo their whole load each time."""
    other = ("--store " + store if store != "snapshot" else
             "--engine " + engine if engine != "local" else
             "--partitions" if partitions is not None else
             "--spark-master" if spark_master else None)
    if other is not None:
        raise UserError(f"--watch keeps a snapshot up to date with the default engine; it "
                        f"does not work with {other} (build without --watch, or drop {other})")


def _one_build(paths: list[Path], snapshot_dir: Path | None, lo: Any, hi: Any, *,
               contract: str, granularity: str, strict: bool, include_content: bool,
               cache_dir: Path | None, rejects_path: Path | None, store: str,
               ask_password: bool, if_exists: Any, batch_size: int | None,
               freeze: bool = True, **hashing: Any
               ) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """One local build, or the kept snapshot when nothing changed: the summary, the
    skipped lines and the notes to print (none for a kept snapshot: nothing was read).
    ``freeze``: move what exists now out of the cyclic collector's scans (once a process)."""
    inputs = None
    if store == "snapshot" and snapshot_dir is not None:
        from graphkit.builds.uptodate import input_state

        inputs = input_state(paths)  # walked once: the build below takes it
        kept = _kept(paths, inputs, snapshot_dir, cache_dir, contract, rejects_path,
                     granularity=granularity, strict=strict, since=lo, until=hi,
                     include_content=include_content, **hashing)
        if kept is not None:
            return kept[0], kept[1], []
    from graphkit.builds.run import build_snapshot, source_messages

    if freeze:
        # What the imports made lives as long as the process: kept out of the collector's
        # scans.
        gc.freeze()
    with ExitStack() as stack:
        # Connected (and the credentials checked, any prompt answered) before the
        # build and its progress display, not after them.
        neo = stack.enter_context(neo4j_store(ask_password)) if store == "neo4j" else None
        say = stack.enter_context(progress())
        result, summary = build_snapshot(
            paths, snapshot_dir, rejects_path=rejects_path, store=store, neo4j=neo,
            if_exists=if_exists, batch_size=batch_size, progress=say, contract=contract,
            granularity=granularity, strict=strict, since=lo, until=hi,
            include_content=include_content, cache_dir=cache_dir, input_state=inputs,
            **hashing)
    # stderr: stdout stays the summary. --quiet keeps them out (they are in the
    # --json summary and the snapshot's manifest either way).
    notes = [] if quiet() else source_messages(result.sources)
    return summary, result.sources.skipped, notes


def _print_build(summary: dict[str, Any], skipped: list[dict[str, Any]], notes: list[str],
                 *, as_json: bool, extra: dict[str, Any] | None = None) -> None:
    """What :func:`build` prints: notes on stderr, then the summary (``extra`` added to
    the JSON)."""
    from graphkit.builds.uptodate import skipped_lines_summary

    if summary.get("index_note"):
        err(summary["index_note"])
    for message in notes:
        err(f"note: {message}")
    if as_json:
        echo_json({**summary, "skipped_lines": skipped_lines_summary(skipped),
                   **(extra or {})})
        return
    print_summary(summary, skipped)


def _watch(paths: list[Path], snapshot_dir: Path | None, since: str | None,
           until: str | None, as_json: bool, poll: float | None,
           options: dict[str, Any]) -> None:
    """``--watch``: the first build as a plain one prints it, then one line (``--json``:
    one object) per rebuild; notes only when new. See :mod:`graphkit.cli.watch`."""
    from graphkit.builds.run import default_rejects_path
    from graphkit.builds.uptodate import default_cache_dir
    from graphkit.cli.watch import Rebuild, own_outputs, rebuild_line, watch_builds
    from graphkit.contract.search import contract_candidates
    from graphkit.snapshot.index import index_path
    from graphkit.snapshot.rejects import skipped_lines_path

    rejects = options["rejects_path"] or default_rejects_path(snapshot_dir)
    ignore = own_outputs([snapshot_dir, options["cache_dir"] or default_cache_dir(snapshot_dir),
                          rejects, skipped_lines_path(rejects), index_path()])
    seen: set[str] = set()  # notes and skipped lines already shown
    builds = [0]

    def build_once() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        lo, hi = window(since, until)  # "2 hours ago" is now's, as a new build's would be
        summary, skipped, notes = _one_build(paths, snapshot_dir, lo, hi,
                                             freeze=not builds[0], **options)
        builds[0] += 1
        for message in [m for m in notes if m not in seen]:
            err(f"note: {message}")
        seen.update(notes)
        # Lines skipped since the last build (a bad line appended), each once; the first
        # build's are in its summary.
        for line in skipped:
            mark = f"{line['path']}:{line['line']}: {line['reason']}"
            if mark not in seen and builds[0] > 1:
                err(f"skipped {shown(line['path'])}:{line['line']}: {shown(line['reason'])}")
            seen.add(mark)
        return summary, skipped

    def report(n: int, changed: int, got: Rebuild) -> None:
        extra = {"watch": {"rebuild": n, "changed_paths": changed,
                           "seconds": round(got.seconds, 4), "cpu_seconds": round(got.cpu, 4),
                           **({"error": got.error} if got.error else {})}}
        if got.error:
            err(f"Error: {got.error}")
        if got.summary is not None and (n == 0 or as_json):
            _print_build(got.summary, got.skipped, [], as_json=as_json, extra=extra)
        elif as_json:
            echo_json(extra)
        else:
            if got.summary is not None and got.summary.get("index_note"):
                err(got.summary["index_note"])
            click.echo(rebuild_line(n, changed, got))
        sys.stdout.flush()  # a pipe's reader sees each rebuild as it is done

    # Watched too: an edit of the contract rebuilds (every file that could be it: the
    # build key's, so a contract file appearing earlier in the search rebuilds as well).
    code = watch_builds(paths, ignore, build_once, report, poll,
                        files=contract_candidates(options["contract"]))
    if code:
        sys.exit(code)


def history_snapshot() -> Path:
    """Where ``graphkit build`` with no SOURCE and no ``--snapshot`` writes: a folder
    beside the snapshot index, so the read commands find it with no arguments."""
    from graphkit.snapshot.index import index_path

    snap = index_path().parent / "history"
    err(f"writing the snapshot to {shown(snap)} (--snapshot DIR to choose)")
    return snap


def _kept(paths: list[Path], inputs: list[list[Any]], snapshot_dir: Path,
          cache_dir: Path | None, contract: str, rejects_path: Path | None,
          **options: Any) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """The summary of a rebuild that finds nothing changed since the last one, checked
    before the build's own imports (pyarrow, the contract model): then it is all the
    command costs. None: build (the build checks again, as library callers get it)."""
    from graphkit.builds.uptodate import build_key, default_cache_dir, kept_build

    key = build_key(contract, paths, snapshot_dir, {**options, "rejects_path": rejects_path})
    return kept_build(cache_dir or default_cache_dir(snapshot_dir), key, paths, snapshot_dir,
                      inputs)


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
def rows(sources: tuple[Path, ...], out: str, include_content: bool, strict: bool,
         since: str | None, until: str | None, cache_dir: Path | None) -> None:
    """Write the ai_gateway_messages rows graphkit reads from SOURCES to Parquet.

    With no SOURCES, reads ~/.claude/projects and ~/.codex/sessions.

    Example: graphkit rows ~/.claude/projects --out claude-rows.parquet
    """
    from graphkit.builds.run import write_rows

    lo, hi = window(since, until)
    paths = list(sources) or default_sources()
    with progress() as say:
        result = write_rows(paths, Path(out) if out != "-" else out, progress=say,
                            strict=strict, since=lo, until=hi, cache_dir=cache_dir,
                            include_content=include_content)
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
    from graphkit.builds.run import check as run_check
    from graphkit.contract.loader import load_contract
    from graphkit.projection.checks import unchecked

    lo, hi = window(since, until)
    c = load_contract(contract)
    with progress() as bars:
        n_rows, findings = run_check(list(sources), contract=c, since=lo, until=hi,
                                     progress=bars)
    for note in unchecked(c):
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
