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
    """A whole graph: node tables by type, edge tables by type, and provenance.

    ``nodes`` maps a node type to its table (``id``, then its properties), ``edges`` an
    edge type to its table (``source``, ``target``, properties); ``contract_name``,
    ``contract_version``, ``id_recipe`` and ``granularity`` say how it was made, and
    ``lineage`` which types the lineage questions walk. :func:`graphkit.build` and
    :func:`graphkit.read_snapshot` return one.

    >>> from graphkit.builds.run import example_graph
    >>> graph = example_graph()
    >>> graph.node_counts()["Thread"], graph.nodes["Session"].table.column_names[:2]
    (5, ['id', 'session_id'])
    """

    contract_name: str
    contract_version: int
    id_recipe: int
    granularity: str
    nodes: dict[str, NodeTable] = field(default_factory=dict)
    edges: dict[str, EdgeTable] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    # What lineage questions walk; None when the contract declares nothing.
    lineage: LineageVocabulary | None = None

    def node_counts(self) -> dict[str, int]:
        """Number of nodes per type."""
        return {t: n.table.num_rows for t, n in sorted(self.nodes.items())}

    def edge_counts(self) -> dict[str, int]:
        """Number of edges per type."""
        return {t: e.table.num_rows for t, e in sorted(self.edges.items())}


@dataclass(frozen=True)
class LineageVocabulary:
    """Which parts of a graph the lineage questions walk, as the contract
    declares them (its ``lineage:`` section).

    The defaults are the default contract's names. A graph whose contract
    declares no vocabulary has none, and lineage questions on it are refused
    with a message naming what is missing.

    >>> LineageVocabulary().parent, LineageVocabulary(parent="SPAWNED_BY").parent
    ('PARENT_THREAD', 'SPAWNED_BY')
    """

    session: str = "Session"  # the anchor node type
    session_key: str = "session_id"  # the Session property a user types
    thread: str = "Thread"  # the node type lineage walks
    thread_key: str = "thread_id"  # the Thread property a user types
    thread_aliases: tuple[str, ...] = ("agent_id",)  # other Thread properties a user may type
    thread_session: str = "session_id"  # the Thread property naming its session
    has_thread: str = "HAS_THREAD"  # Session -> Thread
    parent: str = "PARENT_THREAD"  # child Thread -> parent Thread
    agent: str | None = "Agent"  # optional: the node describing a subagent run
    has_agent: str | None = "HAS_AGENT"  # Thread -> Agent
    # optional: Session -> the Session it continues (resume, fork, branch,
    # compaction, teammate), with the way in its `how` property
    continues: str | None = "CONTINUES"

    def to_json(self) -> dict[str, Any]:
        """The plain dict written into a snapshot manifest."""
        return {
            "session": self.session, "session_key": self.session_key,
            "thread": self.thread, "thread_key": self.thread_key,
            "thread_aliases": list(self.thread_aliases),
            "thread_session": self.thread_session, "has_thread": self.has_thread,
            "parent": self.parent, "agent": self.agent, "has_agent": self.has_agent,
            "continues": self.continues,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LineageVocabulary:
        """The inverse of :meth:`to_json`."""
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        if "thread_aliases" in known:
            known["thread_aliases"] = tuple(known["thread_aliases"])
        return cls(**known)

    def names(self) -> list[str]:
        """Every label and relationship type it names (for the allow-list check)."""
        return [n for n in (self.session, self.thread, self.has_thread, self.parent,
                            self.agent, self.has_agent, self.continues) if n]
