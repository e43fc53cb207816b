"""``graphkit export`` and ``graphkit snapshot``: graphs leaving and entering
graphkit's snapshot format."""

from __future__ import annotations

from pathlib import Path

import click

import graphkit
from graphkit.cli.app import cli
from graphkit.cli.errors import UserError
from graphkit.cli.options import PATH, password_option, quiet_option
from graphkit.cli.render import echo_json, err, progress, shown
from graphkit.cli.stores import neo4j_store


@cli.command("export")
@click.argument("snapshot_dir", type=PATH)
@click.option("--format", "fmt", type=click.Choice(graphkit.export_formats()),
              help="node-link, graphml, gexf: one file; neo4j-csv, neo4j-parquet: a folder "
                   "for neo4j-admin import; cypher: a script; edges: one row per edge "
                   "(.parquet or .csv); otlp-json: OpenTelemetry traces (OTLP/JSON), a "
                   "trace per session.")
@click.argument("out", required=False)
@click.option("--otlp-endpoint", "endpoint", metavar="URL",
              help="Send the snapshot as OpenTelemetry traces to this OTLP/HTTP receiver "
                   "(protobuf; a URL without a path gets /v1/traces) instead of writing "
                   "OUT; headers from OTEL_EXPORTER_OTLP_HEADERS.")
@click.option("--include-content", is_flag=True,
              help="otlp-json and --otlp-endpoint: add message text (from a snapshot "
                   "built with --include-content) and subagent descriptions.")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@quiet_option
def export(snapshot_dir: Path, fmt: str | None, out: str | None, endpoint: str | None,
           include_content: bool, as_json: bool) -> None:
    """Export a snapshot for other tools: OUT is a file, a folder, or - (stdout)
    for the one-file formats; or, with --otlp-endpoint, send it as OpenTelemetry
    traces to a receiver (Phoenix, Langfuse, Jaeger, an OpenTelemetry Collector).

    Example: graphkit export out/graph --format gexf graph.gexf
    """
    if endpoint is not None:
        if fmt is not None or out is not None:
            raise UserError("--otlp-endpoint sends the traces; give no --format or OUT")
        with progress() as say:
            report = graphkit.send_traces(snapshot_dir, endpoint,
                                          include_content=include_content,
                                   progress=say)
    else:
        if fmt is None or out is None:
            raise UserError("give --format FORMAT and OUT (or --otlp-endpoint URL)")
        if as_json and out == "-":
            raise UserError("--json prints to stdout, where OUT - writes the graph; give a "
                            "file")
        with progress() as say:
            report = graphkit.export_snapshot(snapshot_dir, fmt, out, progress=say,
                                     include_content=include_content)
    if as_json:
        echo_json(report.to_json())
        return
    say_done = err if out == "-" else click.echo
    verb = "sent" if endpoint is not None else "wrote"
    say_done(f"{verb} {report.said()} as {report.format} to {report.out} in "
             f"{report.seconds:.2f} s")
    for note in report.notes:
        say_done(f"note: {note}")


@cli.command("snapshot")
@click.argument("snapshot_dir", type=PATH)
@click.option("--neo4j", is_flag=True, required=True,
              help="Read the graph from the Neo4j server named by NEO4J_URI/NEO4J_USERNAME/"
                   "NEO4J_PASSWORD/NEO4J_DATABASE.")
@click.option("--contract", default="ai-gateway-graph", show_default=True,
              help="The contract whose keys, column types and lineage the snapshot takes "
                   "(a shipped name or a YAML path).")
@click.option("--no-contract", is_flag=True,
              help="Keep what Neo4j holds as found: types from the values, no keys.")
@click.option("--granularity", type=click.Choice(["thread", "message"]),
              help="Default: message if Neo4j holds Message nodes, else thread.")
@click.option("--include-content", is_flag=True, help="Keep message content properties.")
@password_option
@click.option("--json", "as_json", is_flag=True, help="Print the node/edge counts as JSON.")
@quiet_option
def snapshot(snapshot_dir: Path, neo4j: bool, contract: str, no_contract: bool,
             granularity: str | None, include_content: bool, ask_password: bool,
             as_json: bool) -> None:
    """Take a snapshot of a graph that lives in Neo4j: every label and
    relationship type found there, property types restored from its values.

    Example: NEO4J_URI=bolt://127.0.0.1:7687 graphkit snapshot --neo4j out/from-neo4j
    """
    # The warning of an unfinished load comes before the progress display, which
    # would hide it.
    with neo4j_store(ask_password, warn=True) as neo, progress() as say:
        say(f"reading the graph in {neo.config.display_uri}")
        manifest = graphkit.snapshot_neo4j(neo, snapshot_dir,
                                           contract=None if no_contract else contract,
                                           granularity=granularity,
                                           include_content=include_content)
    counts = manifest["counts"]
    if as_json:
        echo_json({"snapshot": str(snapshot_dir), **counts})
        return
    click.echo(f"snapshot of {sum(counts['nodes'].values())} nodes and "
               f"{sum(counts['edges'].values())} relationships written to "
               f"{shown(snapshot_dir)}")
