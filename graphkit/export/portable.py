"""The graph networkx's writers take, made XML-safe for GraphML and GEXF.

:func:`graphkit.enrich.networkx_store.to_networkx` already holds every value
as a str, int, float or bool (times as ISO-8601 text, lists/maps as JSON
text, nulls left out) and names the encoded keys in ``G.graph["encoding"]``.
XML 1.0 cannot carry some characters at all (NUL and most other C0 controls,
U+FFFE, U+FFFF) and GraphML's parser turns ``\\r`` into ``\\n``; a string
property holding any of them is written as JSON text with ASCII escapes, for
every node (edge) of that type, and recorded as ``"json"`` in the encoding, so
the value reads back exactly.

Numbers a format cannot spell are held as text the same way, marked
``"text"``: a float column holding NaN or ±infinity in node-link JSON (JSON
has no such numbers; Python writes the non-standard ``NaN``/``Infinity``
tokens other parsers refuse) and GraphML (whose ``double`` is Java's, which
cannot read Python's ``nan``/``inf``), spelled ``NaN``, ``Infinity`` and
``-Infinity``; an integer column holding a value past signed 64 bits
(``uint64``) in GraphML and GEXF, whose ``long`` is 64-bit signed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

import networkx as nx
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.core.graph import EDGE_SOURCE, EDGE_TARGET, NODE_ID, GraphTables
from graphkit.enrich.networkx_store import (
    ENCODING,
    JSON,
    TEXT,
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


INT64_MAX = 2**63 - 1


def _nonfinite_floats(table: pa.Table, skip: tuple[str, ...]) -> list[str]:
    """Float columns holding NaN or ±infinity."""
    return [f.name for f in table.schema if f.name not in skip
            and pa.types.is_floating(f.type)
            and not pc.all(pc.fill_null(pc.is_finite(table.column(f.name)), True)).as_py()]


def _wide_integers(table: pa.Table, skip: tuple[str, ...]) -> list[str]:
    """Integer columns holding a value past signed 64 bits (only ``uint64`` can)."""
    return [f.name for f in table.schema if f.name not in skip and f.type == pa.uint64()
            and (pc.max(table.column(f.name)).as_py() or 0) > INT64_MAX]


def number_text(value: float | int) -> str:
    """A number as the text :func:`hold_numbers_as_text` writes: Java's and
    JavaScript's spelling of the non-finite floats (``float()`` reads them too),
    ``repr`` otherwise (exact: it reads back as the same float)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    return repr(value)


Columns = Callable[[pa.Table, tuple[str, ...]], list[str]]


def hold_numbers_as_text(G: nx.MultiDiGraph, graph: GraphTables,
                         finders: tuple[Columns, ...]) -> nx.MultiDiGraph:
    """Hold the number columns ``finders`` name as text (for every node/edge of
    their type), marked ``"text"`` in ``G``'s encoding; ``G`` is changed and returned."""
    encoding = graph_json(G, ENCODING)
    changed = False
    for scope, tables, skip in (("nodes", graph.nodes, (NODE_ID,)),
                                ("edges", graph.edges, (EDGE_SOURCE, EDGE_TARGET))):
        for name, t in tables.items():
            keys = sorted({k for find in finders for k in find(t.table, skip)})
            if not keys:
                continue
            kinds = encoding.setdefault(scope, {}).setdefault(name, {})
            items = (G.nodes(data=True) if scope == "nodes"
                     else ((u, a) for u, _v, a in G.edges(data=True)))
            for _n, a in items:
                if a[TYPE] == name:
                    for key in keys:
                        if key in a:
                            a[key] = number_text(a[key])
            kinds.update(dict.fromkeys(keys, TEXT))
            changed = True
    if changed:
        G.graph[ENCODING] = json.dumps(encoding, sort_keys=True)
    return G


def json_networkx(graph: GraphTables) -> nx.MultiDiGraph:
    """``to_networkx(graph)`` with every value standard JSON can hold (no NaN/Infinity)."""
    return hold_numbers_as_text(to_networkx(graph), graph, (_nonfinite_floats,))


def xml_networkx(graph: GraphTables, *, nonfinite_as_text: bool = False) -> nx.MultiDiGraph:
    """``to_networkx(graph)`` with every value an XML 1.0 document can hold exactly,
    integers past signed 64 bits as text and, with ``nonfinite_as_text`` (GraphML),
    float columns holding NaN or ±infinity too."""
    finders: tuple[Columns, ...] = (_wide_integers,)
    if nonfinite_as_text:
        finders += (_nonfinite_floats,)
    G = hold_numbers_as_text(to_networkx(graph), graph, finders)
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
