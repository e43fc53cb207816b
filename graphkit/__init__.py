"""graphkit: context graphs of AI agent sessions.

The pipeline reads in one direction, and so does the package:
``core`` (leaf) → ``sources`` → ``contract`` → ``projection`` → ``snapshot`` →
``enrich`` → ``queries`` → ``builds`` → ``export`` → ``view`` → ``cli``. The names
below are the front door: the command line reaches the library only through them,
and nothing a user calls needs a private module.

Every question has a function returning a typed answer and one turning that answer
into the JSON-able records ``graphkit … --json`` prints: ``sessions`` /
``session_records``, ``lineage_many`` / ``lineage_records``, ``tree`` /
``tree_records``, ``usage`` / ``usage_records``, ``files`` / ``file_records``.
Every name, grouped by what it is for and with an example that runs, is in
docs/python-api.md; every path a function takes may be a ``str`` or a ``Path``.

>>> import graphkit
>>> result = graphkit.build("samples/rows")
>>> sorted(result.graph.node_counts())[:3]
['Agent', 'File', 'Model']
>>> store = graphkit.NetworkXStore(); _ = store.load(result.graph)
>>> [r.type for r in graphkit.ancestors(store, "818d8962058765a6")][-1]
'Session'
>>> rows = graphkit.sessions(store, limit=1)          # the answer, typed
>>> [r["record"] for r in graphkit.session_records(rows)]  # what --json prints
['session']

Every build option is one checked value, :class:`BuildOptions`; keywords make one too:

>>> options = graphkit.BuildOptions(granularity="message")
>>> graphkit.build("samples/rows", options).graph.node_counts()["Message"] > 0
True
>>> graphkit.build("samples/rows", granularity="message").graph.granularity
'message'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphkit._version import __version__ as __version__
from graphkit.core.lazy import lazy_exports

# Public name -> module. Loaded on first use so that `graphkit --help` and a
# query at the prompt do not pay for pyarrow compute, pydantic or networkx.
_EXPORTS = {
    "build": "graphkit.builds.run",
    "build_snapshot": "graphkit.builds.snapshot",
    "check": "graphkit.builds.run",
    "write_rows": "graphkit.builds.run",
    "records_table": "graphkit.builds.run",
    "BuildOptions": "graphkit.builds.options",
    "BuildResult": "graphkit.builds.result",
    "skipped_lines_summary": "graphkit.builds.result",
    "history_snapshot": "graphkit.builds.outputs",
    "watch_builds": "graphkit.builds.watch",
    "Rebuild": "graphkit.builds.watch",
    "unchecked": "graphkit.projection.checks",
    "load_contract": "graphkit.contract.loader",
    "write_snapshot": "graphkit.snapshot.write",
    "read_snapshot": "graphkit.snapshot.read",
    "SnapshotReader": "graphkit.enrich.snapshot_store",
    "to_networkx": "graphkit.enrich.networkx_store",
    "from_networkx": "graphkit.enrich.networkx_store",
    "NetworkXStore": "graphkit.enrich.networkx_store",
    "Neo4jStore": "graphkit.enrich.neo4j.store",
    "Neo4jConfig": "graphkit.enrich.neo4j.store",
    "lineage": "graphkit.queries.lineage",
    "lineage_many": "graphkit.queries.lineage",
    "ancestors": "graphkit.queries.lineage",
    "descendants": "graphkit.queries.lineage",
    "session_tree": "graphkit.queries.lineage",
    "tree": "graphkit.queries.lineage",
    "sessions": "graphkit.queries.sessions",
    "SessionRow": "graphkit.queries.sessions",
    "usage": "graphkit.queries.usage_report",
    "UsageReport": "graphkit.queries.usage_report",
    "files": "graphkit.queries.files",
    "FileTouch": "graphkit.queries.files",
    "load_prices": "graphkit.queries.prices",
    "PriceTable": "graphkit.queries.prices",
    "Cost": "graphkit.queries.prices",
    "UsageGroup": "graphkit.queries.prices",
    "GROUPINGS": "graphkit.queries.prices",
    "SessionUsage": "graphkit.queries.usage",
    "ThreadUsage": "graphkit.queries.usage",
    "Tokens": "graphkit.queries.tokens",
    "Lineage": "graphkit.queries.model",
    "Ref": "graphkit.queries.model",
    "SessionTree": "graphkit.queries.model",
    "TreeNode": "graphkit.queries.model",
    "Continuation": "graphkit.queries.model",
    "session_records": "graphkit.queries.records",
    "lineage_records": "graphkit.queries.records",
    "tree_records": "graphkit.queries.records",
    "usage_records": "graphkit.queries.records",
    "file_records": "graphkit.queries.records",
    "open_store": "graphkit.enrich.open",
    "open_neo4j": "graphkit.enrich.open",
    "latest_own_snapshot": "graphkit.enrich.open",
    "LoadReport": "graphkit.enrich.base",
    "LineageReader": "graphkit.enrich.base",
    "load_snapshot": "graphkit.enrich.neo4j.engines",
    "start_local_neo4j": "graphkit.enrich.neo4j.server",
    "default_transcript_roots": "graphkit.sources.transcripts",
    "diff_snapshots": "graphkit.snapshot.diff",
    "GraphDiff": "graphkit.snapshot.diff",
    "export_snapshot": "graphkit.export.registry",
    "export_formats": "graphkit.export.registry",
    "ExportReport": "graphkit.export.registry",
    "snapshot_neo4j": "graphkit.export.from_neo4j",
    "send_traces": "graphkit.export.otlp",
    "session_page": "graphkit.view.page",
    "SessionPage": "graphkit.view.page",
    "write_html": "graphkit.view.html",
    "write_site": "graphkit.view.history",
    "serve_mcp": "graphkit.serve.mcp",
    "MCP_PAGE_SIZE": "graphkit.serve.mcp",
    "read_manifest": "graphkit.snapshot.read",
    "SiteReport": "graphkit.view.history",
    "GraphTables": "graphkit.core.graph",
    "LineageVocabulary": "graphkit.core.graph",
    "GraphkitError": "graphkit.core.errors",
}

__all__ = [
    "GROUPINGS",
    "MCP_PAGE_SIZE",
    "BuildOptions",
    "BuildResult",
    "Continuation",
    "Cost",
    "ExportReport",
    "FileTouch",
    "GraphDiff",
    "GraphTables",
    "GraphkitError",
    "Lineage",
    "LineageReader",
    "LineageVocabulary",
    "LoadReport",
    "Neo4jConfig",
    "Neo4jStore",
    "NetworkXStore",
    "PriceTable",
    "Rebuild",
    "Ref",
    "SessionPage",
    "SessionRow",
    "SessionTree",
    "SessionUsage",
    "SiteReport",
    "SnapshotReader",
    "ThreadUsage",
    "Tokens",
    "TreeNode",
    "UsageGroup",
    "UsageReport",
    "ancestors",
    "build",
    "build_snapshot",
    "check",
    "default_transcript_roots",
    "descendants",
    "diff_snapshots",
    "export_formats",
    "export_snapshot",
    "file_records",
    "files",
    "from_networkx",
    "history_snapshot",
    "latest_own_snapshot",
    "lineage",
    "lineage_many",
    "lineage_records",
    "load_contract",
    "load_prices",
    "load_snapshot",
    "open_neo4j",
    "open_store",
    "read_manifest",
    "read_snapshot",
    "records_table",
    "send_traces",
    "serve_mcp",
    "session_page",
    "session_records",
    "session_tree",
    "sessions",
    "skipped_lines_summary",
    "snapshot_neo4j",
    "start_local_neo4j",
    "to_networkx",
    "tree",
    "tree_records",
    "unchecked",
    "usage",
    "usage_records",
    "watch_builds",
    "write_html",
    "write_rows",
    "write_site",
    "write_snapshot",
]


__getattr__ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


if TYPE_CHECKING:
    from graphkit.builds.options import BuildOptions
    from graphkit.builds.outputs import history_snapshot
    from graphkit.builds.result import BuildResult, skipped_lines_summary
    from graphkit.builds.run import build, check, records_table, write_rows
    from graphkit.builds.snapshot import build_snapshot
    from graphkit.builds.watch import Rebuild, watch_builds
    from graphkit.contract.loader import load_contract
    from graphkit.core.errors import GraphkitError
    from graphkit.core.graph import GraphTables, LineageVocabulary
    from graphkit.enrich.base import LineageReader, LoadReport
    from graphkit.enrich.neo4j.engines import load_snapshot
    from graphkit.enrich.neo4j.server import start_local_neo4j
    from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
    from graphkit.enrich.networkx_store import NetworkXStore, from_networkx, to_networkx
    from graphkit.enrich.open import latest_own_snapshot, open_neo4j, open_store
    from graphkit.enrich.snapshot_store import SnapshotReader
    from graphkit.export.from_neo4j import snapshot_neo4j
    from graphkit.export.otlp import send_traces
    from graphkit.export.registry import ExportReport, export_formats, export_snapshot
    from graphkit.projection.checks import unchecked
    from graphkit.queries.files import FileTouch, files
    from graphkit.queries.lineage import (
        ancestors,
        descendants,
        lineage,
        lineage_many,
        session_tree,
        tree,
    )
    from graphkit.queries.model import Continuation, Lineage, Ref, SessionTree, TreeNode
    from graphkit.queries.prices import GROUPINGS, Cost, PriceTable, UsageGroup, load_prices
    from graphkit.queries.records import (
        file_records,
        lineage_records,
        session_records,
        tree_records,
        usage_records,
    )
    from graphkit.queries.sessions import SessionRow, sessions
    from graphkit.queries.tokens import Tokens
    from graphkit.queries.usage import SessionUsage, ThreadUsage
    from graphkit.queries.usage_report import UsageReport, usage
    from graphkit.serve.mcp import MCP_PAGE_SIZE, serve_mcp
    from graphkit.snapshot.diff import GraphDiff, diff_snapshots
    from graphkit.snapshot.read import read_manifest, read_snapshot
    from graphkit.snapshot.write import write_snapshot
    from graphkit.sources.transcripts import default_transcript_roots
    from graphkit.view.history import SiteReport, write_site
    from graphkit.view.html import write_html
    from graphkit.view.page import SessionPage, session_page
