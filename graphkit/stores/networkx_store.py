"""The embedded store: a NetworkX ``MultiDiGraph`` holding the projected graph.

Nodes are keyed by their deterministic id and carry ``type`` plus their key
and property columns; edges are keyed by their type, so loading the same graph
twice leaves one node and one edge per id — a rerun converges.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx
import pyarrow as pa

from graphkit.core.errors import StoreError
from graphkit.core.graph import EDGE_SOURCE, EDGE_TARGET, NODE_ID, EdgeTable, GraphTables, NodeTable
from graphkit.stores.base import Hit, SessionSummary, ThreadInfo
from graphkit.stores.walk import descendant_ids, parent_chain_ids

LoadPolicy = Literal["merge", "replace", "fail"]
TYPE = "type"  # the node/edge attribute holding the label or relationship type


@dataclass
class LoadReport:
    """What a load wrote."""

    nodes: dict[str, int] = field(default_factory=dict)
    edges: dict[str, int] = field(default_factory=dict)
    removed: int = 0
    seconds: float = 0.0


def _records(table: pa.Table) -> list[dict[str, Any]]:
    return table.to_pylist()


def to_networkx(graph: GraphTables, G: nx.MultiDiGraph | None = None) -> nx.MultiDiGraph:
    """Add ``graph`` to ``G`` (a new ``MultiDiGraph`` if not given) and return it.

    The graph-level attributes remember each table's Arrow schema, so
    :func:`from_networkx` gives back the same tables.
    """
    G = nx.MultiDiGraph() if G is None else G
    meta = G.graph
    meta.setdefault("contract", graph.contract_name)
    meta.setdefault("contract_version", graph.contract_version)
    meta.setdefault("id_recipe", graph.id_recipe)
    meta["granularity"] = graph.granularity
    meta.setdefault("node_schemas", {}).update(
        {t: n.table.schema for t, n in graph.nodes.items()})
    meta.setdefault("node_keys", {}).update({t: n.key for t, n in graph.nodes.items()})
    meta.setdefault("edge_schemas", {}).update(
        {t: e.table.schema for t, e in graph.edges.items()})
    meta.setdefault("edge_ends", {}).update(
        {t: (e.source_type, e.target_type) for t, e in graph.edges.items()})
    meta.setdefault("indexes", {}).update(graph.meta.get("indexes", {}))
    for ntype, nt in graph.nodes.items():
        recs = _records(nt.table)
        G.add_nodes_from((r.pop(NODE_ID), {TYPE: ntype, **r}) for r in recs)
    for etype, et in graph.edges.items():
        recs = _records(et.table)
        G.add_edges_from(
            (r.pop(EDGE_SOURCE), r.pop(EDGE_TARGET), etype, {TYPE: etype, **r}) for r in recs)
    return G


def from_networkx(G: nx.MultiDiGraph) -> GraphTables:
    """The :class:`GraphTables` held in ``G`` (the inverse of :func:`to_networkx`)."""
    meta = G.graph
    graph = GraphTables(meta.get("contract", "unknown"), int(meta.get("contract_version", 0)),
                        int(meta.get("id_recipe", 0)), meta.get("granularity", "thread"))
    graph.meta["indexes"] = dict(meta.get("indexes", {}))
    by_type: dict[str, list[dict[str, Any]]] = {t: [] for t in meta.get("node_schemas", {})}
    for nid, attrs in G.nodes(data=True):
        rec = {NODE_ID: nid, **{k: v for k, v in attrs.items() if k != TYPE}}
        by_type.setdefault(attrs[TYPE], []).append(rec)
    for ntype, recs in by_type.items():
        schema = meta["node_schemas"][ntype]
        recs.sort(key=lambda r: r[NODE_ID])
        graph.nodes[ntype] = NodeTable(ntype, tuple(meta["node_keys"][ntype]),
                                       pa.Table.from_pylist(recs, schema=schema))
    edges: dict[str, list[dict[str, Any]]] = {t: [] for t in meta.get("edge_schemas", {})}
    for u, v, k, attrs in G.edges(keys=True, data=True):
        rec = {EDGE_SOURCE: u, EDGE_TARGET: v,
               **{a: b for a, b in attrs.items() if a != TYPE}}
        edges.setdefault(k, []).append(rec)
    for etype, recs in edges.items():
        recs.sort(key=lambda r: (r[EDGE_SOURCE], r[EDGE_TARGET]))
        src, dst = meta["edge_ends"][etype]
        graph.edges[etype] = EdgeTable(etype, src, dst, pa.Table.from_pylist(
            recs, schema=meta["edge_schemas"][etype]))
    return graph


class NetworkXStore:
    """The embedded store, and a :class:`~graphkit.stores.base.LineageReader`.

    >>> from graphkit.pipeline import example_graph
    >>> store = NetworkXStore()
    >>> store.load(example_graph()).nodes["Thread"]
    5
    >>> store.load(example_graph()).nodes["Thread"]  # a rerun converges
    5
    >>> store.graph.number_of_nodes() == NetworkXStore(store.graph).graph.number_of_nodes()
    True
    """

    def __init__(self, graph: nx.MultiDiGraph | None = None) -> None:
        self.graph: nx.MultiDiGraph = graph if graph is not None else nx.MultiDiGraph()
        self._index: dict[str, dict[str, list[str]]] | None = None

    def load(self, graph: GraphTables, *, if_exists: LoadPolicy = "merge") -> LoadReport:
        """Load ``graph``; ``if_exists`` says what to do when nodes of its types exist."""
        t0 = time.perf_counter()
        types = set(graph.nodes)
        existing = [n for n, a in self.graph.nodes(data=True) if a.get(TYPE) in types]
        removed = 0
        if existing:
            if if_exists == "fail":
                raise StoreError(
                    f"the store already holds {len(existing)} node(s) of types "
                    f"{', '.join(sorted(types))}",
                    hint="use --if-exists merge to update them or replace to start over")
            if if_exists == "replace":
                self.graph.remove_nodes_from(existing)
                removed = len(existing)
            elif if_exists != "merge":
                raise StoreError(f"unknown load policy {if_exists!r}",
                                 hint="use merge, replace or fail")
        to_networkx(graph, self.graph)
        self._index = None
        return LoadReport(graph.node_counts(), graph.edge_counts(), removed,
                          time.perf_counter() - t0)

    # -- lookups -----------------------------------------------------------
    def _lookup(self) -> dict[str, dict[str, list[str]]]:
        if self._index is None:
            idx: dict[str, dict[str, list[str]]] = {"thread": {}, "session": {}}
            for nid, a in self.graph.nodes(data=True):
                t = a.get(TYPE)
                if t == "Thread":
                    for prop in ("thread_id", "agent_id"):
                        v = a.get(prop)
                        if v is not None:
                            lst = idx["thread"].setdefault(v, [])
                            if nid not in lst:
                                lst.append(nid)
                elif t == "Session":
                    idx["session"].setdefault(a.get("session_id"), []).append(nid)
            self._index = idx
        return self._index

    def _hit(self, nid: str) -> Hit:
        a = self.graph.nodes[nid]
        if a[TYPE] == "Session":
            return Hit("Session", nid, a["session_id"], a["session_id"])
        return Hit("Thread", nid, a.get("thread_id"), a.get("session_id"))

    def _neighbours(self, nid: str, etype: str, *, incoming: bool = False) -> list[str]:
        adj = self.graph.pred[nid] if incoming else self.graph.succ[nid]
        return [other for other, keys in adj.items() if etype in keys]

    # -- LineageReader -----------------------------------------------------
    def resolve(self, user_id: str) -> list[Hit]:
        """Threads whose ``thread_id``/``agent_id`` is ``user_id``, and the Session with it."""
        idx = self._lookup()
        nids = idx["thread"].get(user_id, []) + idx["session"].get(user_id, [])
        return [self._hit(n) for n in nids]

    def parent_chain(self, thread_node_id: str) -> list[Hit]:
        """Parent threads, nearest first."""
        chain = parent_chain_ids(thread_node_id,
                                 lambda n: self._neighbours(n, "PARENT_THREAD"))
        return [self._hit(n) for n in chain]

    def descendant_threads(self, thread_node_id: str) -> list[tuple[Hit, int]]:
        """Every thread below, with its depth (1 = a direct child)."""
        below = descendant_ids(thread_node_id, lambda level: [
            c for n in level for c in self._neighbours(n, "PARENT_THREAD", incoming=True)])
        return [(self._hit(n), d) for n, d in below]

    def session_threads(self, session_id: str) -> list[ThreadInfo]:
        """All threads of a session, each with its parent's node id."""
        out: list[ThreadInfo] = []
        for snid in self._lookup()["session"].get(session_id, []):
            for tnid in self._neighbours(snid, "HAS_THREAD"):
                a = self.graph.nodes[tnid]
                parents = sorted(self._neighbours(tnid, "PARENT_THREAD"))
                agents = self._neighbours(tnid, "HAS_AGENT")
                ag = self.graph.nodes[agents[0]] if agents else {}
                out.append(ThreadInfo(
                    node_id=tnid, id=a.get("thread_id"),
                    parent_node_id=parents[0] if parents else None,
                    kind=a.get("kind"), agent_type=ag.get("agent_type"),
                    description=ag.get("description"), messages=a.get("messages")))
        return out

    def sessions(self) -> list[SessionSummary]:
        """One summary per Session node."""
        out = []
        for nid, a in self.graph.nodes(data=True):
            if a.get(TYPE) != "Session":
                continue
            threads = self._neighbours(nid, "HAS_THREAD")
            agents = {ag for t in threads for ag in self._neighbours(t, "HAS_AGENT")}
            out.append(SessionSummary(
                session_id=a["session_id"], threads=len(threads), agents=len(agents),
                messages=int(a.get("messages") or 0),
                first_seen=_iso(a.get("first_seen")), last_seen=_iso(a.get("last_seen"))))
        return out


def _iso(v: Any) -> str | None:
    return None if v is None else v.isoformat()
