"""The ``graphkit`` command: a thin layer over the library.

Each command parses its options, calls one library function and prints the
result. Errors a user can cause (:class:`~graphkit.core.errors.GraphkitError`)
become one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.tree import Tree

from graphkit.core.errors import GraphkitError
from graphkit.queries.model import TreeNode
from graphkit.stores.base import LineageReader

err_console = Console(stderr=True, highlight=False)


class UserError(click.ClickException):
    """A :class:`GraphkitError` shown as one line, exit code 2."""

    exit_code = 2


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GraphkitError as exc:
            raise UserError(str(exc)) from None


@click.group(cls=_Group)
@click.version_option(package_name="graphkit")
def cli() -> None:
    """Build and query context graphs of AI agent sessions.

    Example: graphkit build samples/rows --snapshot out/graph
    """


def main() -> None:
    """Console-script entry point."""
    # jemalloc hands freed memory back to the OS where the system allocator
    # keeps it: a 1M-row build peaks ~20% lower. Set before pyarrow loads,
    # and only for the command line; a library caller keeps its own choice.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
    cli(prog_name="graphkit")


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str], None]]:
    if not enabled:
        yield lambda _m: None
        return
    with err_console.status("starting…") as status:
        yield lambda msg: status.update(msg)


def _echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, default=str))


def _parse_since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        raise UserError(f"--since {value!r} is not a date; use YYYY-MM-DD or an ISO "
                        "timestamp") from None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _password_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--ask-password", is_flag=True,
                        help="Prompt for the Neo4j password instead of reading "
                             "NEO4J_PASSWORD.")(f)


# -- build ------------------------------------------------------------------
@cli.command()
@click.argument("sources", nargs=-1, type=click.Path(path_type=Path))
@click.option("--snapshot", "snapshot_dir", type=click.Path(path_type=Path),
              help="Write the graph to this snapshot folder.")
@click.option("--contract", default="ai-gateway-graph", show_default=True,
              help="A shipped contract name or a path to a contract YAML file.")
@click.option("--granularity", type=click.Choice(["thread", "message"]), default="thread",
              show_default=True, help="`message` adds Message nodes with NEXT edges.")
@click.option("--rejects", "rejects_path", type=click.Path(path_type=Path),
              help="Where unusable rows go (default: SNAPSHOT.rejects.jsonl).")
@click.option("--include-content", is_flag=True, help="Keep message content in outputs.")
@click.option("--strict", is_flag=True, help="Fail on the first unreadable transcript line.")
@click.option("--since", help="Only rows at or after this date/time (UTC).")
@click.option("--cache-dir", type=click.Path(path_type=Path),
              help="Where the incremental transcript index lives "
                   "(default: beside the snapshot).")
@click.option("--store", type=click.Choice(["networkx", "neo4j"]), default="networkx",
              show_default=True,
              help="Where the graph goes besides the snapshot: the embedded NetworkX "
                   "graph, or also the Neo4j server named by NEO4J_URI.")
@click.option("--if-exists", type=click.Choice(["merge", "replace", "fail"]), default="merge",
              show_default=True, help="Neo4j: what to do when the graph's nodes already exist.")
@click.option("--batch-size", type=click.IntRange(min=1), help="Neo4j: rows per UNWIND batch.")
@_password_option
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local",
              show_default=True, help="spark: build on Spark (graphkit[spark]).")
@click.option("--partitions", help="Build partition by partition, bounded in memory: "
                                   "a count, or auto.")
@click.option("--spark-master", help="Spark master URL (spark://HOST:7077, local[4], k8s://…).")
def build(sources: tuple[Path, ...], snapshot_dir: Path | None, contract: str,
          granularity: str, rejects_path: Path | None, include_content: bool, strict: bool,
          since: str | None, cache_dir: Path | None, store: str, if_exists: str,
          batch_size: int | None, ask_password: bool, as_json: bool, engine: str,
          partitions: str | None, spark_master: str | None) -> None:
    """Build a session graph from message rows or transcripts.

    SOURCES are Parquet/Feather/JSON Lines files or folders (hive partitions
    included), Claude Code or Codex transcript folders or files, or HypAware
    caches. With no SOURCES, reads ~/.claude/projects and ~/.codex/sessions.

    Example: graphkit build samples/rows --snapshot out/graph
    """
    from graphkit.pipeline import build as run_build
    from graphkit.snapshot import write_snapshot
    from graphkit.sources.rows import write_rejects

    if snapshot_dir is None and store != "neo4j":
        raise UserError("give --snapshot DIR to say where the graph goes (or --store neo4j)")
    paths = list(sources) or _default_sources()
    if engine != "local" or partitions is not None or spark_master:
        from graphkit.engine.command import engine_build

        with _progress(not as_json and sys.stderr.isatty()) as say:
            summary, skipped = engine_build(
                paths, snapshot_dir, engine=engine, partitions=partitions,
                spark_master=spark_master, contract=contract, granularity=granularity,
                rejects_path=rejects_path, include_content=include_content, strict=strict,
                since=_parse_since(since), cache_dir=cache_dir or _cache_dir(snapshot_dir),
                store=store, progress=say)
        _echo_json(summary) if as_json else _print_summary(summary, skipped)
        return
    with ExitStack() as stack, _progress(not as_json and sys.stderr.isatty()) as say:
        # Connected (and the credentials checked) before the build, not after it.
        neo = stack.enter_context(_neo4j_store(ask_password)) if store == "neo4j" else None
        result = run_build(paths, contract=contract, granularity=granularity, strict=strict,
                           since=_parse_since(since), include_content=include_content,
                           cache_dir=cache_dir or _cache_dir(snapshot_dir), progress=say)
        summary = result.summary()
        target = snapshot_dir or Path("graphkit-neo4j")
        rejects_file = rejects_path or target.with_name(target.name + ".rejects.jsonl")
        if result.projection.rows_rejected:
            write_rejects(rejects_file, result.projection.rejects,
                          include_content=include_content)
            summary["rejects_file"] = str(rejects_file)
        elif rejects_path is None and rejects_file.exists():
            rejects_file.unlink()  # a stale file would claim rejects this build did not have
        if snapshot_dir is not None:
            say(f"writing {snapshot_dir}")
            write_snapshot(result.graph, snapshot_dir, inputs=result.sources.fingerprints,
                           summary=summary, include_content=include_content)
            summary["snapshot"] = str(snapshot_dir)
        if neo is not None:
            say(f"loading into Neo4j at {neo.config.display_uri}")
            report = neo.load(result.graph, if_exists=if_exists, batch_size=batch_size)
            summary["neo4j"] = report.to_json()
    if as_json:
        _echo_json(summary)
        return
    _print_summary(summary, result.sources.skipped)


def _print_summary(summary: dict[str, Any], skipped: list[dict[str, Any]]) -> None:
    console = Console(highlight=False)
    click.echo(f"rows read {summary['rows_read']}, used {summary['rows_used']}, "
                  f"rejected {summary['rows_rejected']}, duplicates {summary['duplicate_rows']}"
                  + (f", transcript lines skipped {len(skipped)}" if skipped else ""))
    t = Table(show_header=True, header_style="bold")
    t.add_column("kind")
    t.add_column("type")
    t.add_column("count", justify="right")
    for k, v in summary["nodes"].items():
        t.add_row("node", k, str(v))
    for k, v in summary["edges"].items():
        t.add_row("edge", k, str(v))
    console.print(t)
    for etype, d in summary.get("dropped_edges", {}).items():
        click.echo(f"note: {etype}: " + ", ".join(f"{v} {k.replace('_', ' ')}"
                                                     for k, v in d.items() if v)
                      + " (see `graphkit check`)")
    for s in skipped[:5]:
        click.echo(f"skipped {s['path']}:{s['line']}: {s['reason']}")
    if len(skipped) > 5:
        click.echo(f"… and {len(skipped) - 5} more skipped line(s)")
    if summary.get("rejects_file"):
        click.echo(f"rejected rows written to {summary['rejects_file']}")
    if summary.get("snapshot"):
        click.echo(f"snapshot written to {summary['snapshot']}")
    if summary.get("neo4j"):
        n = summary["neo4j"]
        click.echo(f"loaded into Neo4j: {sum(n['nodes'].values())} nodes, "
                      f"{sum(n['edges'].values())} relationships in {n['seconds']} s")


def _cache_dir(snapshot_dir: Path | None) -> Path:
    """Where the transcript index lives: beside the snapshot, never in the
    user's transcript folders."""
    if snapshot_dir is not None:
        return snapshot_dir.parent / f".{snapshot_dir.name}.cache"
    return Path.home() / ".cache" / "graphkit"


# -- load -------------------------------------------------------------------
@cli.command()
@click.argument("snapshot_dir", type=click.Path(path_type=Path))
@click.option("--if-exists", type=click.Choice(["merge", "replace", "fail"]), default="merge",
              show_default=True,
              help="merge updates what is there, replace deletes the graph's node types "
                   "first, fail refuses if any exist.")
@click.option("--batch-size", type=click.IntRange(min=1), help="Rows per UNWIND batch.")
@_password_option
@click.option("--json", "as_json", is_flag=True, help="Print the load report as JSON.")
def load(snapshot_dir: Path, if_exists: str, batch_size: int | None, ask_password: bool,
         as_json: bool) -> None:
    """Load a snapshot into the Neo4j server named by NEO4J_URI.

    Example: NEO4J_URI=bolt://127.0.0.1:7687 graphkit load out/graph --if-exists replace
    """
    from graphkit.snapshot import read_snapshot

    graph = read_snapshot(snapshot_dir)
    with _neo4j_store(ask_password) as neo:
        report = neo.load(graph, if_exists=if_exists, batch_size=batch_size)
    if as_json:
        _echo_json(report.to_json())
        return
    click.echo(f"loaded {sum(report.nodes.values())} nodes and {sum(report.edges.values())} "
               f"relationships into {neo.config.display_uri} in {report.seconds:.2f} s")


@cli.command("neo4j-server")
@click.option("--port", type=int, default=7687, show_default=True, help="Bolt port on 127.0.0.1.")
@click.option("--data", "data_dir", type=click.Path(path_type=Path),
              help="Data folder to keep between runs (default: a temporary one).")
def neo4j_server(port: int, data_dir: Path | None) -> None:
    """Run a local Neo4j 5.26 server (from enrich/neo4j-launcher) until Ctrl-C.

    For development and trying graphkit out: Bolt on 127.0.0.1 only, no
    authentication.

    Example: graphkit neo4j-server --port 7687
    """
    import time

    from graphkit.stores.neo4j.server import start_local_neo4j

    with _progress(sys.stderr.isatty()) as say:
        say("building/starting Neo4j (first run downloads its jars from Maven Central)")
        server = start_local_neo4j(data_dir, auth=False, port=port)
    with server:
        click.echo(f"Neo4j is up: export NEO4J_URI={server.uri}  (Ctrl-C stops it)")
        try:
            while server.process.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            pass


# -- queries ----------------------------------------------------------------
def _neo4j_store(ask_password: bool, **kwargs: Any) -> Any:
    """A Neo4j store from NEO4J_* (the password optionally prompted, never echoed).

    Use it in a ``with``: entering checks the connection, leaving closes it.
    """
    from graphkit.stores.neo4j.store import Neo4jConfig, Neo4jStore

    password = click.prompt("Neo4j password", hide_input=True) if ask_password else None
    return Neo4jStore(Neo4jConfig.from_env(password=password), **kwargs)


@contextmanager
def _reader(snapshot_dir: Path | None, neo4j: bool,
            ask_password: bool = False) -> Iterator[LineageReader]:
    if neo4j and snapshot_dir is not None:
        raise UserError("give --snapshot DIR or --neo4j, not both")
    if neo4j:
        with _neo4j_store(ask_password) as neo:
            yield neo
        return
    if snapshot_dir is None:
        raise UserError("give --snapshot DIR (or --neo4j) to say which graph to ask")
    from graphkit.snapshot.reader import SnapshotReader

    # Straight from the Arrow tables, not through NetworkX: a user at the
    # prompt asking about one id should not wait for a whole graph to load.
    yield SnapshotReader(snapshot_dir)


def _store_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = _password_option(f)
    f = click.option("--neo4j", is_flag=True,
                     help="Ask the Neo4j server named by NEO4J_URI/NEO4J_USERNAME/"
                          "NEO4J_PASSWORD/NEO4J_DATABASE instead of a snapshot.")(f)
    return click.option("--snapshot", "snapshot_dir", type=click.Path(path_type=Path),
                        help="The snapshot folder to read.")(f)


@cli.command()
@_store_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def sessions(snapshot_dir: Path | None, neo4j: bool, ask_password: bool, as_json: bool) -> None:
    """List sessions with their thread, agent and message counts.

    Example: graphkit sessions --snapshot out/graph --json
    """
    from graphkit.queries.lineage import sessions as list_sessions

    with _reader(snapshot_dir, neo4j, ask_password) as reader:
        rows = list_sessions(reader)
    if as_json:
        _echo_json([s.to_json() for s in rows])
        return
    t = Table(show_header=True, header_style="bold")
    for col in ("session_id", "threads", "agents", "messages", "first_seen", "last_seen"):
        t.add_column(col, justify="right" if col in ("threads", "agents", "messages") else "left",
                     no_wrap=col == "session_id", min_width=36 if col == "session_id" else None)
    for s in rows:
        t.add_row(s.session_id, str(s.threads), str(s.agents), str(s.messages),
                  s.first_seen or "", s.last_seen or "")
    Console(highlight=False).print(t)


@cli.command()
@click.argument("ids", nargs=-1, required=True)
@_store_options
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line per ID.")
def lineage(ids: tuple[str, ...], snapshot_dir: Path | None, neo4j: bool,
            ask_password: bool, as_json: bool) -> None:
    """Show who spawned a thread or subagent, up to its session, and all it spawned.

    ID is an agent_id, a thread id (conversation_id) or a session_id.

    Example: graphkit lineage a1f0c3e2b4d5a6a7 --snapshot out/graph --json
    """
    from graphkit.queries.lineage import lineage_many

    with _reader(snapshot_dir, neo4j, ask_password) as reader:
        answers = lineage_many(reader, ids)
    for a in answers:
        if as_json:
            _echo_json(a.to_json())
            continue
        up = " → ".join(f"{r.type} {r.id}" for r in a.ancestors) or "(none)"
        down = ", ".join(r.id for r in a.descendants) or "(none)"
        click.echo(f"{a.id}  (session {a.session_id})\n  ancestors:   {up}\n"
                   f"  descendants: {down}")


def _label(node: TreeNode) -> str:
    info = node.info
    if info is None:
        return f"[bold]Session[/bold] {node.ref.id}"
    bits = [info.kind or "thread"]
    if info.agent_type:
        bits.append(info.agent_type)
    text = f"{node.ref.id} [dim]({', '.join(bits)}"
    if info.messages is not None:
        text += f", {info.messages} messages"
    return text + ")[/dim]"


@cli.command()
@click.argument("session_id")
@_store_options
@click.option("--json", "as_json", is_flag=True, help="Print the tree as nested JSON.")
def tree(session_id: str, snapshot_dir: Path | None, neo4j: bool, ask_password: bool,
         as_json: bool) -> None:
    """Draw a session's threads and subagents as a tree.

    Example: graphkit tree 5b0e7a52-1c7d-4c55-9a43-0f4a0c2d7a01 --snapshot out/graph
    """
    from graphkit.queries.lineage import session_tree

    with _reader(snapshot_dir, neo4j, ask_password) as reader:
        root = session_tree(reader, session_id)
    if as_json:
        _echo_json(root.to_json())
        return
    view = Tree(_label(root))

    def add(parent: Tree, node: TreeNode) -> None:
        for c in node.children:
            add(parent.add(_label(c)), c)

    add(view, root)
    Console(highlight=False).print(view)


# -- rows -------------------------------------------------------------------
@cli.command()
@click.argument("sources", nargs=-1, type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(path_type=Path),
              help="The Parquet file to write.")
@click.option("--include-content", is_flag=True, help="Keep message content columns.")
@click.option("--strict", is_flag=True, help="Fail on the first unreadable transcript line.")
@click.option("--since", help="Only rows at or after this date/time (UTC).")
@click.option("--cache-dir", type=click.Path(path_type=Path),
              help="Where the incremental transcript index lives.")
def rows(sources: tuple[Path, ...], out: Path, include_content: bool, strict: bool,
         since: str | None, cache_dir: Path | None) -> None:
    """Write the ai_gateway_messages rows graphkit reads from SOURCES to Parquet.

    With no SOURCES, reads ~/.claude/projects and ~/.codex/sessions.

    Example: graphkit rows ~/.claude/projects --out claude-rows.parquet
    """
    import pyarrow.parquet as pq

    from graphkit.sources.messages import read_message_rows

    paths = list(sources) or _default_sources()
    with _progress(sys.stderr.isatty()) as say:
        say("reading " + ", ".join(str(p) for p in paths))
        result = read_message_rows(paths, strict=strict, since=_parse_since(since),
                                   cache_dir=cache_dir, include_content=include_content)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        pq.write_table(result.table, tmp)
        tmp.replace(out)
    click.echo(f"wrote {result.table.num_rows} rows to {out}"
               + (f" ({len(result.skipped)} transcript line(s) skipped)"
                  if result.skipped else ""))


def _default_sources() -> list[Path]:
    from graphkit.sources.transcripts import default_transcript_roots

    paths = default_transcript_roots()
    if not paths:
        raise UserError("no SOURCE given and no ~/.claude/projects or ~/.codex/sessions "
                        "found; name a file or folder to read")
    err_console.print("reading " + ", ".join(str(p) for p in paths))
    return paths


# -- check ------------------------------------------------------------------
@cli.command()
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--contract", default="ai-gateway-graph", show_default=True,
              help="A shipped contract name or a path to a contract YAML file.")
@click.option("--json", "as_json", is_flag=True, help="Print findings as a JSON array.")
def check(sources: tuple[Path, ...], contract: str, as_json: bool) -> None:
    """Check identity columns without building: null sessions, ids shared by
    sessions, missing parents, cycles, pre-LLP-0030 rows. Exit code 1 if any.

    Example: graphkit check samples/rows
    """
    from graphkit.contract.checks import check_rows
    from graphkit.contract.loader import load_contract
    from graphkit.sources.rows import read_sources

    c = load_contract(contract)
    rows = read_sources(list(sources), c, fingerprints=False)
    findings = check_rows(c, rows.table)
    if as_json:
        _echo_json([f.to_json() for f in findings])
    else:
        if not findings:
            click.echo(f"ok: {rows.table.num_rows} rows, no identity problems found")
        for f in findings:
            click.echo(f"{f.check}: {f.message}")
            for ex in f.examples:
                click.echo("    " + ", ".join(f"{k}={v}" for k, v in ex.items()))
    if findings:
        sys.exit(1)
