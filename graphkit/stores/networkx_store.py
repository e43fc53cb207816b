"""The embedded store: a NetworkX ``MultiDiGraph`` holding the projected graph.

Nodes are keyed by their deterministic id and carry ``type`` plus their key
and property columns; edges are keyed by their type, so loading the same graph
twice leaves one node and one edge per id — a rerun converges.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import networkx as nx
import pyarrow as pa

from graphkit.core.errors import StoreError
from graphkit.core.graph import (
    EDGE_SOURCE,
    EDGE_TARGET,
    NODE_ID,
    EdgeTable,
    GraphTables,
    LineageVocabulary,
    NodeTable,
)
from graphkit.stores.base import (
    Hit,
    IfExists,
    LoadReport,
    SessionSummary,
    ThreadInfo,
    plain,
    require_vocabulary,
)
from graphkit.stores.walk import descendant_ids, parent_chain_ids

TYPE = "type"  # the node/edge attribute holding the label or relationship type



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
    if graph.lineage is not None:
        meta["lineage"] = graph.lineage.to_json()
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
                        int(meta.get("id_recipe", 0)), meta.get("granularity", "thread"),
                        lineage=_vocabulary(G))
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

    def load(self, graph: GraphTables, *, if_exists: IfExists = "merge") -> LoadReport:
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

    @property
    def vocabulary(self) -> LineageVocabulary:
        """What lineage walks here (from the loaded graph's contract)."""
        return require_vocabulary(_vocabulary(self.graph), self.graph.graph.get("contract"))

    # -- lookups -----------------------------------------------------------
    def _lookup(self) -> dict[str, dict[str, list[str]]]:
        if self._index is None:
            v = self.vocabulary
            idx: dict[str, dict[str, list[str]]] = {"thread": {}, "session": {}}
            for nid, a in self.graph.nodes(data=True):
                t = a.get(TYPE)
                if t == v.thread:
                    for prop in (v.thread_key, *v.thread_aliases):
                        val = a.get(prop)
                        if val is not None:
                            lst = idx["thread"].setdefault(val, [])
                            if nid not in lst:
                                lst.append(nid)
                elif t == v.session:
                    idx["session"].setdefault(a.get(v.session_key), []).append(nid)
            self._index = idx
        return self._index

    def _hit(self, nid: str) -> Hit:
        v = self.vocabulary
        a = self.graph.nodes[nid]
        if a[TYPE] == v.session:
            return Hit(v.session, nid, a[v.session_key], a[v.session_key])
        return Hit(v.thread, nid, a.get(v.thread_key), a.get(v.thread_session))

    def _neighbours(self, nid: str, etype: str | None, *, incoming: bool = False) -> list[str]:
        if etype is None:
            return []
        adj = self.graph.pred[nid] if incoming else self.graph.succ[nid]
        return [other for other, keys in adj.items() if etype in keys]

    # -- LineageReader -----------------------------------------------------
    def resolve(self, user_id: str) -> list[Hit]:
        """Threads whose id (or an alias such as ``agent_id``) is ``user_id``,
        and the Session with it."""
        idx = self._lookup()
        nids = idx["thread"].get(user_id, []) + idx["session"].get(user_id, [])
        return [self._hit(n) for n in nids]

    def parent_chain(self, thread_node_id: str) -> list[Hit]:
        """Parent threads, nearest first."""
        parent = self.vocabulary.parent
        chain = parent_chain_ids(thread_node_id, lambda n: self._neighbours(n, parent))
        return [self._hit(n) for n in chain]

    def descendant_threads(self, thread_node_id: str) -> list[tuple[Hit, int]]:
        """Every thread below, with its depth (1 = a direct child)."""
        parent = self.vocabulary.parent
        below = descendant_ids(thread_node_id, lambda level: [
            c for n in level for c in self._neighbours(n, parent, incoming=True)])
        return [(self._hit(n), d) for n, d in below]

    def session_threads(self, session_id: str) -> list[ThreadInfo]:
        """All threads of a session, each with its parent's node id."""
        v = self.vocabulary
        out: list[ThreadInfo] = []
        for snid in self._lookup()["session"].get(session_id, []):
            for tnid in self._neighbours(snid, v.has_thread):
                a = self.graph.nodes[tnid]
                parents = sorted(self._neighbours(tnid, v.parent))
                agents = self._neighbours(tnid, v.has_agent)
                ag = self.graph.nodes[agents[0]] if agents else {}
                out.append(ThreadInfo(
                    node_id=tnid, id=a.get(v.thread_key),
                    parent_node_id=parents[0] if parents else None,
                    kind=a.get("kind"), agent_type=ag.get("agent_type"),
                    description=ag.get("description"), messages=a.get("messages"),
                    first_seen=_iso(a.get("first_seen"))))
        return out

    def sessions(self) -> list[SessionSummary]:
        """One summary per Session node."""
        v = self.vocabulary
        out = []
        for nid, a in self.graph.nodes(data=True):
            if a.get(TYPE) != v.session:
                continue
            threads = self._neighbours(nid, v.has_thread)
            agents = sum(1 for t in threads if self._neighbours(t, v.parent)
                         or self._neighbours(t, v.has_agent))
            out.append(SessionSummary(
                session_id=a[v.session_key], threads=len(threads), agents=agents,
                messages=int(a.get("messages") or 0),
                first_seen=_iso(a.get("first_seen")), last_seen=_iso(a.get("last_seen"))))
        return out


    # -- generic tables ------------------------------------------------------
    def node_rows(self, node_type: str, columns: Sequence[str],
                  where: tuple[str, Sequence[str]] | None = None) -> list[dict[str, Any]]:
        """The nodes of one type with ``columns``, ordered by id (see
        :meth:`graphkit.stores.base.LineageReader.node_rows`)."""
        prop, wanted = (where[0], set(where[1])) if where is not None else ("", None)
        out = []
        for nid, a in self.graph.nodes(data=True):
            if a.get(TYPE) != node_type:
                continue
            if wanted is not None and (nid if prop == NODE_ID else a.get(prop)) not in wanted:
                continue
            out.append({NODE_ID: nid, **{c: plain(a.get(c)) for c in columns}})
        return sorted(out, key=lambda r: r[NODE_ID])

    def edge_rows(self, edge_type: str, source_type: str, target_type: str,
                  columns: Sequence[str], sources: Sequence[str] | None = None,
                  targets: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The edges of one type with ``columns``, ordered by (source, target)."""
        G = self.graph
        if sources is None and targets is not None:
            starts = list(dict.fromkeys(u for t in targets if t in G for u in G.pred[t]))
        elif sources is not None:
            starts = [n for n in dict.fromkeys(sources) if n in G]
        else:
            starts = [n for n, a in G.nodes(data=True) if a.get(TYPE) == source_type]
        ends = set(targets) if targets is not None else None
        out = []
        for u in starts:
            if G.nodes[u].get(TYPE) != source_type:
                continue
            for v, keys in G.succ[u].items():
                attrs = keys.get(edge_type)
                if attrs is None or G.nodes[v].get(TYPE) != target_type or (
                        ends is not None and v not in ends):
                    continue
                out.append({EDGE_SOURCE: u, EDGE_TARGET: v,
                            **{c: plain(attrs.get(c)) for c in columns}})
        return sorted(out, key=lambda r: (r[EDGE_SOURCE], r[EDGE_TARGET]))


def _vocabulary(G: nx.MultiDiGraph) -> LineageVocabulary | None:
    data = G.graph.get("lineage")
    return LineageVocabulary.from_json(data) if isinstance(data, dict) else None


def _iso(v: Any) -> str | None:
    return None if v is None else v.isoformat()
