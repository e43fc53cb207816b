"""The projected graph as Arrow tables: what a contract produces and every
store and snapshot consumes.

Keeping the graph columnar between projection and load means the enrich stage
can batch it (Neo4j ``UNWIND``) or write it (Parquet) without a per-row Python
object in between.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

# Columns every node table has first: the deterministic id, then the key columns.
NODE_ID = "id"
# Columns every edge table has first: the ids of its two ends.
EDGE_SOURCE = "source"
EDGE_TARGET = "target"


@dataclass(frozen=True)
class NodeTable:
    """All nodes of one type: ``id``, the key columns, then the properties."""

    type: str
    key: tuple[str, ...]
    table: pa.Table

    @property
    def properties(self) -> list[str]:
        """Names of the non-id, non-key columns."""
        skip = {NODE_ID, *self.key}
        return [n for n in self.table.column_names if n not in skip]


@dataclass(frozen=True)
class EdgeTable:
    """All edges of one type: ``source``, ``target`` (node ids), then properties."""

    type: str
    source_type: str
    target_type: str
    table: pa.Table

    @property
    def properties(self) -> list[str]:
        """Names of the columns after ``source`` and ``target``."""
        return [n for n in self.table.column_names if n not in (EDGE_SOURCE, EDGE_TARGET)]


@dataclass
class GraphTables:
    """A whole graph: node tables by type, edge tables by type, and provenance."""

    contract_name: str
    contract_version: int
    id_recipe: int
    granularity: str
    nodes: dict[str, NodeTable] = field(default_factory=dict)
    edges: dict[str, EdgeTable] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def node_counts(self) -> dict[str, int]:
        """Number of nodes per type."""
        return {t: n.table.num_rows for t, n in sorted(self.nodes.items())}

    def edge_counts(self) -> dict[str, int]:
        """Number of edges per type."""
        return {t: e.table.num_rows for t, e in sorted(self.edges.items())}
