"""``graphkit mcp``: serve the graph to agents over MCP (stdio); the server is
:mod:`graphkit.serve.mcp`."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

import graphkit
from graphkit.cli.app import cli
from graphkit.cli.errors import UserError
from graphkit.cli.options import PATH
from graphkit.cli.stores import open_reader

if TYPE_CHECKING:
    from graphkit import LineageReader


@cli.command("mcp")
@click.option("--snapshot", "snapshot_dir", type=PATH,
              help="The snapshot folder to answer from (default: the latest snapshot "
                   "built from your own ~/.claude and ~/.codex history).")
@click.option("--neo4j", is_flag=True,
              help="Answer from the Neo4j server named by NEO4J_URI/NEO4J_USERNAME/"
                   "NEO4J_PASSWORD/NEO4J_DATABASE instead of a snapshot.")
@click.option("--page", type=click.IntRange(min=1), default=graphkit.MCP_PAGE_SIZE,
              show_default=True,
              help="Sessions per page of the sessions tool (a cursor asks for the next).")
def mcp_command(snapshot_dir: Path | None, neo4j: bool, page: int) -> None:
    """Serve the graph to agents over MCP (stdio): tools sessions, lineage, tree,
    usage and files answer as the commands' --json does (structuredContent),
    read-only; the snapshot's manifest and contract are resources. Add it to
    Claude Code with `claude mcp add graphkit -- graphkit mcp` (docs/mcp.md).

    Example: graphkit mcp --snapshot out/graph
    """
    try:
        import mcp  # noqa: F401 (only: is the extra installed)
    except ImportError:
        raise UserError("graphkit mcp needs the MCP SDK: pip install 'graphkit[mcp]'") from None
    if neo4j and snapshot_dir is not None:
        raise UserError("give --snapshot DIR or --neo4j, not both")
    if not neo4j:
        snapshot_dir = (snapshot_dir if snapshot_dir is not None
                        else graphkit.latest_own_snapshot())
        graphkit.read_manifest(snapshot_dir)  # a folder that is no snapshot fails now, not per call
    # stdout carries the protocol: what the SDK logs goes to stderr, warnings only.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)

    @contextmanager
    def open_store() -> Iterator[LineageReader]:
        try:
            with open_reader(snapshot_dir, neo4j) as reader:
                yield reader
        except click.ClickException as exc:  # a store that cannot be opened: a tool error
            raise graphkit.GraphkitError(exc.format_message()) from None

    graphkit.serve_mcp(open_store, None if neo4j else snapshot_dir, page=page)
