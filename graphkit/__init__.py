"""graphkit: context graphs of AI agent sessions.

The pipeline reads in one direction, and so does the package:
``core`` (leaf) → ``sources`` → ``contract`` → ``stores`` → ``queries`` →
``snapshot`` → ``pipeline`` → ``cli``. The names below are the front door;
nothing a user calls needs a private module.

>>> import graphkit
>>> result = graphkit.build("samples/rows")
>>> sorted(result.graph.node_counts())[:3]
['Agent', 'File', 'Model']
>>> store = graphkit.NetworkXStore(); _ = store.load(result.graph)
>>> [r.type for r in graphkit.ancestors(store, "818d8962058765a6")][-1]
'Session'

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
    "ancestors": "graphkit.queries.lineage",
    "descendants": "graphkit.queries.lineage",
    "session_tree": "graphkit.queries.lineage",
    "sessions": "graphkit.queries.lineage",
    "GraphTables": "graphkit.core.graph",
    "LineageVocabulary": "graphkit.core.graph",
    "GraphkitError": "graphkit.core.errors",
}

__all__ = [
    "BuildOptions",
    "BuildResult",
    "GraphTables",
    "GraphkitError",
    "LineageVocabulary",
    "Neo4jConfig",
    "Neo4jStore",
    "NetworkXStore",
    "Rebuild",
    "SnapshotReader",
    "ancestors",
    "build",
    "build_snapshot",
    "check",
    "descendants",
    "from_networkx",
    "history_snapshot",
    "lineage",
    "load_contract",
    "read_snapshot",
    "records_table",
    "session_tree",
    "sessions",
    "skipped_lines_summary",
    "to_networkx",
    "unchecked",
    "watch_builds",
    "write_rows",
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
    from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
    from graphkit.enrich.networkx_store import NetworkXStore, from_networkx, to_networkx
    from graphkit.enrich.snapshot_store import SnapshotReader
    from graphkit.projection.checks import unchecked
    from graphkit.queries.lineage import ancestors, descendants, lineage, session_tree, sessions
    from graphkit.snapshot.read import read_snapshot
    from graphkit.snapshot.write import write_snapshot
