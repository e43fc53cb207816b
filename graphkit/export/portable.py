"""The graph networkx's writers take, made XML-safe for GraphML and GEXF.

:func:`graphkit.stores.networkx_store.to_networkx` already holds every value
as a str, int, float or bool (times as ISO-8601 text, lists/maps as JSON
text, nulls left out) and names the encoded keys in ``G.graph["encoding"]``.
XML 1.0 cannot carry some characters at all (NUL and most other C0 controls,
U+FFFE, U+FFFF) and GraphML's parser turns ``\\r`` into ``\\n``; a string
property holding any of them is written as JSON text with ASCII escapes, for
every node (edge) of that type, and recorded as ``"json"`` in the encoding, so
the value reads back exactly.
"""

from __future__ import annotations

import json
import re
from typing import Any

import networkx as nx
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.core.graph import EDGE_SOURCE, EDGE_TARGET, NODE_ID, GraphTables
from graphkit.stores.networkx_store import (
    ENCODING,
    JSON,
    TYPE,
    graph_json,
    to_networkx,
    value_encoding,
)

# What XML 1.0 cannot hold, plus CR (normalised away by XML parsers in text).
XML_UNSAFE = "[\x00-\x08\x0b\x0c\x0e-\x1f\r\ufffe\uffff]"
_XML_UNSAFE = re.compile(XML_UNSAFE)


def _unsafe_columns(table: pa.Table, skip: tuple[str, ...]) -> list[str]:
    out = []
    for f in table.schema:
        if f.name in skip:
            continue
        t = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
        kind = value_encoding(t)
        if kind is None and (pa.types.is_string(t) or pa.types.is_large_string(t)):
            col = table.column(f.name)
            col = col.cast(t) if pa.types.is_dictionary(f.type) else col
            if pc.any(pc.match_substring_regex(col, XML_UNSAFE)).as_py():
                out.append(f.name)
        elif kind == JSON:
            out.append(f.name)  # checked value by value below: JSON text keeps U+FFFE raw
    return out


def _reencode(values: list[dict[str, Any]], key: str, kinds: dict[str, str]) -> None:
    """Hold ``key`` of every attribute dict as ASCII-escaped JSON text, if any needs it."""
    present = [a[key] for a in values if key in a]
    if kinds.get(key) == JSON:
        if not any(_XML_UNSAFE.search(v) for v in present):
            return
        for a in values:
            if key in a:
                a[key] = json.dumps(json.loads(a[key]), ensure_ascii=True)
    else:
        for a in values:
            if key in a:
                a[key] = json.dumps(a[key], ensure_ascii=True)
    kinds[key] = JSON


def xml_networkx(graph: GraphTables) -> nx.MultiDiGraph:
    """``to_networkx(graph)`` with every value an XML 1.0 document can hold exactly."""
    G = to_networkx(graph)
    encoding = graph_json(G, ENCODING)
    nodes_by_type: dict[str, list[dict[str, Any]]] = {}
    for _n, a in G.nodes(data=True):
        nodes_by_type.setdefault(a[TYPE], []).append(a)
    edges_by_type: dict[str, list[dict[str, Any]]] = {}
    for _u, _v, a in G.edges(data=True):
        edges_by_type.setdefault(a[TYPE], []).append(a)
    for ntype, nt in graph.nodes.items():
        kinds = encoding.setdefault("nodes", {}).setdefault(ntype, {})
        for key in _unsafe_columns(nt.table, (NODE_ID,)):
            _reencode(nodes_by_type.get(ntype, []), key, kinds)
    for etype, et in graph.edges.items():
        kinds = encoding.setdefault("edges", {}).setdefault(etype, {})
        for key in _unsafe_columns(et.table, (EDGE_SOURCE, EDGE_TARGET)):
            _reencode(edges_by_type.get(etype, []), key, kinds)
    G.graph[ENCODING] = json.dumps(encoding, sort_keys=True)
    return G
