"""The embedded store: a NetworkX ``MultiDiGraph`` holding the projected graph.

Nodes are keyed by their deterministic id and carry ``type`` plus their key
and property columns; edges are keyed by their type, so loading the same graph
twice leaves one node and one edge per id — a rerun converges.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Hashable, Sequence
from datetime import UTC, date, datetime, timedelta
from datetime import time as dtime
from decimal import Decimal
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
from graphkit.enrich.base import (
    Hit,
    IfExists,
    LoadReport,
    SessionSummary,
    ThreadInfo,
    require_vocabulary,
)
from graphkit.enrich.base import plain as plain_value
from graphkit.enrich.walk import descendant_ids, parent_chain_ids

TYPE = "type"  # the node/edge attribute holding the label or relationship type

# Graph attributes (G.graph) other than these scalars hold JSON text, so that
# networkx's own writers (GraphML, GEXF, node-link JSON) accept the graph as is.
ENCODING = "encoding"  # which property keys hold encoded values, and how
TYPES = "types"  # each node/edge type's key, ends and exact Arrow schema
LINEAGE = "lineage"

# How a property value that networkx's writers refuse is held on a node/edge.
ISO8601 = "iso8601"  # timestamps, dates, times: ``isoformat()`` text
JSON = "json"  # lists, structs, maps: JSON text (times inside as ISO-8601, bytes as base64)
BASE64 = "base64"  # binary: base64 text
TEXT = "text"  # decimals: their exact decimal text (and numbers an export format cannot spell)


def value_encoding(t: pa.DataType) -> str | None:
    """How a column of Arrow type ``t`` is held as a networkx attribute: None
    when its values (str, int, float, bool) are kept as they are.

    >>> value_encoding(pa.timestamp("us", tz="UTC")), value_encoding(pa.list_(pa.string()))
    ('iso8601', 'json')
    >>> value_encoding(pa.int64()) is None
    True
    """
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
        return ISO8601
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return BASE64
    if pa.types.is_decimal(t):
        return TEXT
    if pa.types.is_nested(t):
        return JSON
    if (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t)
            or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_null(t)):
        return None
    raise StoreError(f"a column of Arrow type {t} cannot be held in a networkx graph",
                     hint="cast it to text or a number in the contract")


def json_value(value: Any, t: pa.DataType) -> Any:
    """``value`` (a Python value of Arrow type ``t``) as JSON-able data."""
    if value is None:
        return None
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [json_value(v, t.value_type) for v in value]
    if pa.types.is_struct(t):
        return {f.name: json_value(value.get(f.name), f.type) for f in t}
    if pa.types.is_map(t):
        return [[json_value(k, t.key_type), json_value(v, t.item_type)] for k, v in value]
    kind = value_encoding(t)
    if kind == ISO8601:
        return value.isoformat()
    if kind == BASE64:
        return base64.b64encode(value).decode("ascii")
    if kind == TEXT:
        return str(value)
    return value


def restore(value: Any, t: pa.DataType) -> Any:
    """The inverse of :func:`plain`."""
    if value is None:
        return None
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [restore(v, t.value_type) for v in value]
    if pa.types.is_struct(t):
        return {f.name: restore(value.get(f.name), f.type) for f in t}
    if pa.types.is_map(t):
        return [(restore(k, t.key_type), restore(v, t.item_type)) for k, v in value]
    if pa.types.is_timestamp(t):
        return datetime.fromisoformat(value)
    if pa.types.is_date(t):
        return date.fromisoformat(value)
    if pa.types.is_time(t):
        return dtime.fromisoformat(value)
    if value_encoding(t) == BASE64:
        return base64.b64decode(value)
    if pa.types.is_decimal(t):
        return Decimal(value)
    if isinstance(value, str) and pa.types.is_floating(t):  # NaN/±Infinity as text
        return float(value)
    if isinstance(value, str) and pa.types.is_integer(t):  # past signed 64 bits, as text
        return int(value)
    return value


def encode_column(column: pa.ChunkedArray | pa.Array) -> list[Any]:
    """A column's values as networkx attribute values (see :func:`value_encoding`)."""
    t = column.type
    values = column.to_pylist()
    kind = value_encoding(t)
    if kind is None:
        return values
    if kind == JSON:
        return [None if v is None else json.dumps(json_value(v, t), ensure_ascii=False)
                for v in values]
    return [json_value(v, t) for v in values]


def decode_column(values: list[Any], field: pa.Field, kind: str | None = None) -> pa.Array:
    """The Arrow column of ``field`` from attribute values made by :func:`encode_column`.

    ``kind`` is the encoding recorded for the key (default: the one its type
    implies); an exporter may have held text as JSON where a format needs it.
    """
    t = field.type
    kind = kind or value_encoding(t)
    if kind is None:
        return pa.array(values, type=t)
    if kind == ISO8601 and pa.types.is_timestamp(t):
        # Arrow parses ISO-8601 with offsets, vectorized; isoformat() writes
        # microseconds, which a coarser unit cannot parse directly.
        text = pa.array(values, type=pa.string())
        try:
            parsed = text.cast(t if t.unit == "ns" else pa.timestamp("us", tz=t.tz))
        except pa.ArrowInvalid:
            if t.unit != "ns":
                raise
            # Arrow's parser overflows within a second of the earliest ns time
            # (1677-09-21T00:12:43.145224192); whole seconds and the fraction apart do not.
            parsed = pa.array([None if v is None else _iso_nanoseconds(v) for v in values],
                              pa.int64()).cast(t)
        return parsed.cast(t)
    if kind == JSON:
        return pa.array([None if v is None else restore(json.loads(v), t) for v in values],
                        type=t)
    return pa.array([restore(v, t) for v in values], type=t)


_ISO_FRACTION = re.compile(r"(.*T\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(.*)")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _iso_nanoseconds(text: str) -> int:
    """Nanoseconds since 1970 of ISO-8601 ``text`` with up to nine fraction digits."""
    m = _ISO_FRACTION.fullmatch(text)
    if m is None:
        raise StoreError(f"not an ISO-8601 time: {text!r}")
    whole = datetime.fromisoformat(m[1] + m[3])
    whole = whole if whole.tzinfo else whole.replace(tzinfo=UTC)
    seconds = (whole - _EPOCH) // timedelta(seconds=1)
    return seconds * 1_000_000_000 + int((m[2] or "").ljust(9, "0"))


def schema_text(schema: pa.Schema) -> str:
    """``schema`` as base64 of its Arrow IPC form: exact, and JSON-able."""
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def schema_from_text(text: str) -> pa.Schema:
    """The inverse of :func:`schema_text`."""
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


def graph_json(G: nx.MultiDiGraph, name: str) -> dict[str, Any]:
    """A graph attribute held as JSON text (see :data:`ENCODING`, :data:`TYPES`),
    as a dict; ``{}`` if absent."""
    value = G.graph.get(name)
    if isinstance(value, str):
        loaded: dict[str, Any] = json.loads(value)
        return loaded
    return dict(value) if isinstance(value, dict) else {}


def _describe(schema: pa.Schema) -> dict[str, Any]:
    # Readable column types for people and other tools; "arrow" is what
    # from_networkx trusts.
    return {"columns": [[f.name, str(f.type)] for f in schema], "arrow": schema_text(schema)}


def _encoded(table: pa.Table, skip: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for f in table.schema:
        kind = value_encoding(f.type)
        if kind is not None and f.name not in skip:
            out[f.name] = kind
    return out


def _attr_dicts(table: pa.Table, skip: tuple[str, ...]) -> list[dict[str, Any]]:
    """One attribute dict per row, without the ``skip`` columns and without nulls
    (networkx's writers refuse None; an absent key reads back as null)."""
    names = [n for n in table.column_names if n not in skip]
    cols = [encode_column(table.column(n)) for n in names]
    return [{n: v for n, v in zip(names, row, strict=True) if v is not None}
            for row in zip(*cols, strict=True)] if names else [{} for _ in range(table.num_rows)]


def to_networkx(graph: GraphTables, G: nx.MultiDiGraph | None = None) -> nx.MultiDiGraph:
    """Return ``graph`` as a networkx ``MultiDiGraph``: added to ``G``, or to a new one.

    Nodes are keyed by id and carry ``type`` and their non-null properties;
    edges are keyed by their type. The result is writable as it is by
    ``nx.write_graphml``, ``nx.write_gexf`` and ``nx.node_link_data``: values
    those writers refuse are held as text (see :func:`value_encoding`), and
    ``G.graph["encoding"]`` (JSON text) names which keys of which type hold
    what. ``G.graph["types"]`` keeps each table's exact Arrow schema, so
    :func:`from_networkx` gives back the same tables.

    Parameters
    ----------
    graph : GraphTables
        The graph.
    G : networkx.MultiDiGraph, optional
        A graph to add to (default: a new one).

    Returns
    -------
    networkx.MultiDiGraph
        ``G``, with the graph's nodes and edges.

    See Also
    --------
    from_networkx : the inverse.

    Examples
    --------
    >>> from graphkit.builds.run import example_graph
    >>> G = to_networkx(example_graph())
    >>> json.loads(G.graph["encoding"])["nodes"]["Session"]
    {'first_seen': 'iso8601', 'last_seen': 'iso8601'}
    >>> from_networkx(G).node_counts() == example_graph().node_counts()
    True
    """
    G = nx.MultiDiGraph() if G is None else G
    meta = G.graph
    meta.setdefault("contract", graph.contract_name)
    meta.setdefault("contract_version", graph.contract_version)
    meta.setdefault("id_recipe", graph.id_recipe)
    meta["granularity"] = graph.granularity
    types = graph_json(G, TYPES)
    encoding = graph_json(G, ENCODING)
    node_types, edge_types = types.setdefault("nodes", {}), types.setdefault("edges", {})
    node_enc, edge_enc = encoding.setdefault("nodes", {}), encoding.setdefault("edges", {})
    indexes = graph.meta.get("indexes", {})
    _check_no_type_property(graph)
    for ntype, nt in graph.nodes.items():
        node_types[ntype] = {"key": list(nt.key), "index": list(indexes.get(ntype, [])),
                             **_describe(nt.table.schema)}
        node_enc[ntype] = _encoded(nt.table, (NODE_ID,))
        ids = nt.table.column(NODE_ID).to_pylist()
        attrs = _attr_dicts(nt.table, (NODE_ID,))
        G.add_nodes_from((i, {TYPE: ntype, **a}) for i, a in zip(ids, attrs, strict=True))
    for etype, et in graph.edges.items():
        edge_types[etype] = {"source_type": et.source_type, "target_type": et.target_type,
                             **_describe(et.table.schema)}
        edge_enc[etype] = _encoded(et.table, (EDGE_SOURCE, EDGE_TARGET))
        src = et.table.column(EDGE_SOURCE).to_pylist()
        dst = et.table.column(EDGE_TARGET).to_pylist()
        attrs = _attr_dicts(et.table, (EDGE_SOURCE, EDGE_TARGET))
        G.add_edges_from((u, v, etype, {TYPE: etype, **a})
                         for u, v, a in zip(src, dst, attrs, strict=True))
    meta[TYPES] = json.dumps(types, sort_keys=True)
    meta[ENCODING] = json.dumps({"version": 1, **encoding}, sort_keys=True)
    if graph.lineage is not None:
        meta[LINEAGE] = json.dumps(graph.lineage.to_json(), sort_keys=True)
    return G


def _check_no_type_property(graph: GraphTables) -> None:
    """Refuse a property named ``type``: the attribute holds each node's and edge's
    type here, so the property would replace it (the node read back as a node of
    that value's type, its lookups and exports with it)."""
    tables = [("node type", t, nt.table) for t, nt in graph.nodes.items()]
    tables += [("edge type", t, et.table) for t, et in graph.edges.items()]
    for what, name, table in tables:
        if TYPE in table.column_names:
            raise StoreError(f"{what} {name} has a property named {TYPE!r}, which a networkx "
                             f"graph uses for the {what.split()[0]}'s type",
                             hint="rename the property in the contract")


def _table(recs: list[dict[str, Any]], desc: dict[str, Any] | None,
           kinds: dict[str, str]) -> pa.Table:
    """A table from attribute dicts, typed by the recorded schema if there is one.

    Attributes the schema does not name (added to ``G`` by hand) become extra
    columns of an inferred type rather than being dropped.
    """
    if desc is None:  # a type added to G by hand: let Arrow infer
        return pa.Table.from_pylist(recs)
    schema = schema_from_text(desc["arrow"])
    cols = [decode_column([r.get(f.name) for r in recs], f, kinds.get(f.name))
            for f in schema]
    extra = sorted({k for r in recs for k in r} - set(schema.names))
    for name in extra:
        col = pa.array([r.get(name) for r in recs])
        schema = schema.append(pa.field(name, col.type))
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=schema)


def from_networkx(G: nx.MultiDiGraph) -> GraphTables:
    """Return the :class:`GraphTables` held in ``G`` (the inverse of :func:`to_networkx`).

    ``G`` may also be a graph read back by ``nx.read_graphml``,
    ``nx.node_link_graph`` or (with its ``label`` attributes renamed back)
    ``nx.read_gexf`` from a file written from :func:`to_networkx`'s graph.
    Nodes are grouped by their ``type`` attribute, edges by theirs (their key if
    they have none); a graph graphkit did not make gets contract ``unknown``.

    Parameters
    ----------
    G : networkx.MultiDiGraph
        The graph.

    Returns
    -------
    GraphTables
        One table per node type and per edge type, with the Arrow types
        :func:`to_networkx` recorded (text where it recorded none).

    Examples
    --------
    >>> import networkx as nx
    >>> from graphkit.builds.run import example_graph
    >>> back = from_networkx(nx.node_link_graph(nx.node_link_data(to_networkx(example_graph()))))
    >>> back.node_counts() == example_graph().node_counts()
    True
    >>> G = nx.MultiDiGraph(); G.add_nodes_from(["ann", "bob"], type="Person")
    >>> _ = G.add_edge("ann", "bob", type="KNOWS")
    >>> from_networkx(G).edge_counts()
    {'KNOWS': 1}
    """
    meta = G.graph
    types = graph_json(G, TYPES)
    encoding = graph_json(G, ENCODING)
    lineage = graph_json(G, LINEAGE)
    graph = GraphTables(meta.get("contract", "unknown"), int(meta.get("contract_version", 0)),
                        int(meta.get("id_recipe", 0)), meta.get("granularity", "thread"),
                        lineage=LineageVocabulary.from_json(lineage) if lineage else None)
    node_types: dict[str, Any] = types.get("nodes", {})
    edge_types: dict[str, Any] = types.get("edges", {})
    node_kinds, edge_kinds = encoding.get("nodes", {}), encoding.get("edges", {})
    graph.meta["indexes"] = {t: list(d.get("index", [])) for t, d in node_types.items()}
    by_type: dict[str, list[dict[str, Any]]] = {t: [] for t in node_types}
    for nid, attrs in G.nodes(data=True):
        rec = {NODE_ID: nid, **{k: v for k, v in attrs.items() if k != TYPE}}
        by_type.setdefault(attrs[TYPE], []).append(rec)
    for ntype, recs in by_type.items():
        recs.sort(key=lambda r: r[NODE_ID])
        desc = node_types.get(ntype)
        graph.nodes[ntype] = NodeTable(ntype, tuple(desc["key"]) if desc else (),
                                       _table(recs, desc, node_kinds.get(ntype, {})))
    edges: dict[str, list[dict[str, Any]]] = {t: [] for t in edge_types}
    # A graph read back by nx.read_gexf without parallel edges is a DiGraph.
    edge_iter = (G.edges(keys=True, data=True) if G.is_multigraph()
                 else ((u, v, None, d) for u, v, d in G.edges(data=True)))
    for u, v, k, attrs in edge_iter:
        rec = {EDGE_SOURCE: u, EDGE_TARGET: v,
               **{a: b for a, b in attrs.items() if a != TYPE}}
        edges.setdefault(attrs.get(TYPE, k), []).append(rec)
    for etype, recs in edges.items():
        recs.sort(key=lambda r: (r[EDGE_SOURCE], r[EDGE_TARGET]))
        desc = edge_types.get(etype)
        src, dst = (desc["source_type"], desc["target_type"]) if desc else ("", "")
        graph.edges[etype] = EdgeTable(etype, src, dst,
                                       _table(recs, desc, edge_kinds.get(etype, {})))
    return graph


class NetworkXStore:
    """The embedded store, and a :class:`~graphkit.enrich.base.LineageReader`.

    >>> from graphkit.builds.run import example_graph
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
        self._property_index: dict[tuple[str, str], dict[Any, list[str]]] = {}
        self._vocabulary_of: tuple[Any, LineageVocabulary | None] | None = None

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
        self._property_index = {}
        return LoadReport(graph.node_counts(), graph.edge_counts(), removed,
                          time.perf_counter() - t0)

    @property
    def vocabulary(self) -> LineageVocabulary:
        """What lineage walks here (from the loaded graph's contract)."""
        # Parsed once per stored value (a lineage query asks ~15 times); a new value,
        # set by a load or by hand, is parsed again.
        raw = self.graph.graph.get(LINEAGE)
        if self._vocabulary_of is None or self._vocabulary_of[0] is not raw:
            self._vocabulary_of = (raw, _vocabulary(self.graph))
        return require_vocabulary(self._vocabulary_of[1], self.graph.graph.get("contract"))

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
        :meth:`graphkit.enrich.base.LineageReader.node_rows`)."""
        G = self.graph
        if where is None:
            nids = [nid for nid, a in G.nodes(data=True) if a.get(TYPE) == node_type]
        elif where[0] == NODE_ID:
            nids = [n for n in dict.fromkeys(where[1])
                    if n in G and G.nodes[n].get(TYPE) == node_type]
        else:
            # Through an index, not a scan of every node: lineage asks this per query
            # (a session's node by its key), and a scan made a lookup in a 1M-row graph
            # ~10 ms where the rest of lineage takes ~0.1 ms.
            by_value = self._by_property(node_type, where[0])
            nids = [n for v in dict.fromkeys(where[1]) for n in by_value.get(v, ())]
        rows = [{NODE_ID: n, **{c: plain_value(G.nodes[n].get(c)) for c in columns}}
                for n in nids]
        return sorted(rows, key=lambda r: r[NODE_ID])

    def _by_property(self, node_type: str, prop: str) -> dict[Any, list[str]]:
        """Node ids of ``node_type`` by their value of ``prop`` (built once per load)."""
        key = (node_type, prop)
        if key not in self._property_index:
            idx: dict[Any, list[str]] = {}
            for nid, a in self.graph.nodes(data=True):
                value = a.get(prop)
                if a.get(TYPE) == node_type and isinstance(value, Hashable):
                    idx.setdefault(value, []).append(nid)
            self._property_index[key] = idx
        return self._property_index[key]

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
                            **{c: plain_value(attrs.get(c)) for c in columns}})
        return sorted(out, key=lambda r: (r[EDGE_SOURCE], r[EDGE_TARGET]))


def _vocabulary(G: nx.MultiDiGraph) -> LineageVocabulary | None:
    data = graph_json(G, LINEAGE)
    return LineageVocabulary.from_json(data) if data else None


def _iso(v: Any) -> str | None:
    # Times are held as ISO-8601 text (to_networkx); a graph built by hand may hold datetimes.
    return v if v is None or isinstance(v, str) else v.isoformat()
