"""``gexf``: GEXF 1.2 (``nx.write_gexf``), Gephi's own format, one file.

Each node's GEXF ``label`` is its type and natural key (what Gephi shows),
and its attributes are ``type`` and its properties; each edge's GEXF
``label`` is its relationship type. Values are held as for GraphML (times
ISO-8601 text, lists/maps JSON text, nulls left out, XML-unsafe strings JSON
text). GEXF gives a few attribute names a meaning of their own (``label``,
``start``, ``end``, ``weight``, ``type``, …): a property so named is written as
``prop_<name>``. GEXF has no graph-level attributes, so the encoding, the
renames and each type's exact Arrow schema go, as one JSON document, into the
standard ``<meta><description>`` element, which :func:`read` uses to restore
the tables.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import networkx as nx
from networkx.readwrite.gexf import GEXFWriter

from graphkit.core.graph import GraphTables
from graphkit.enrich.networkx_store import TYPE, from_networkx
from graphkit.export.portable import xml_networkx
from graphkit.export.registry import ExportError, ExportReport, Format, Output, Progress

# Attribute names networkx's GEXF writer/reader treat as GEXF's own, not data.
NODE_RESERVED = frozenset({"id", "label", "pid", "start", "end", "viz", "parents", "slices",
                           "spells"})
EDGE_RESERVED = frozenset({"id", "label", "weight", "start", "end", "viz", "key",
                           "networkx_key", "slices", "spells"})
PREFIX = "prop_"
VERSION = "1.2draft"


def _renamed(attrs: dict[str, Any], reserved: frozenset[str]) -> dict[str, Any]:
    return {(PREFIX + k if k in reserved else k): v for k, v in attrs.items()}


def _label(ntype: str, attrs: dict[str, Any], key: tuple[str, ...], nid: str) -> str:
    parts = [str(attrs[k]) for k in key if attrs.get(k) is not None]
    return f"{ntype} {' / '.join(parts) if parts else nid}"


def _check_prefixed(graph: GraphTables) -> None:
    """Refuse a property already named as a renamed one (``prop_label``): it would
    read back as ``label``, or clash with the ``label`` property renamed to it."""
    for what, tables, reserved in (("node type", graph.nodes, NODE_RESERVED),
                                   ("edge type", graph.edges, EDGE_RESERVED)):
        for name, t in tables.items():
            for col in t.table.column_names:
                if col.startswith(PREFIX) and col[len(PREFIX):] in reserved:
                    raise ExportError(
                        f"{what} {name} has a property named {col!r}, the name GEXF "
                        f"export gives a property named {col[len(PREFIX):]!r}",
                        hint="rename the property in the contract, or use --format graphml")


def gexf_graph(graph: GraphTables) -> tuple[nx.MultiDiGraph, dict[str, Any]]:
    """The graph to write and the JSON document for ``<meta><description>``."""
    _check_prefixed(graph)
    G = xml_networkx(graph)
    keys = {t: n.key for t, n in graph.nodes.items()}
    H = nx.MultiDiGraph()
    for n, a in G.nodes(data=True):
        attrs = _renamed(a, NODE_RESERVED)
        attrs["label"] = _label(a[TYPE], a, keys.get(a[TYPE], ()), n)
        H.add_nodes_from([(n, attrs)])
    for u, v, k, a in G.edges(keys=True, data=True):
        attrs = _renamed({x: y for x, y in a.items() if x != TYPE}, EDGE_RESERVED)
        # GEXF's edge "type" means directed/undirected/mutual: the relationship
        # type goes into the edge label, which Gephi shows.
        H.add_edges_from([(u, v, k, {"label": a[TYPE], **attrs})])
    described = dict(G.graph)
    described["gexf"] = {"prefix": PREFIX, "node_reserved": sorted(NODE_RESERVED),
                         "edge_reserved": sorted(EDGE_RESERVED)}
    return H, described


def write(graph: GraphTables, out: Output, progress: Progress) -> ExportReport:
    """Write ``graph`` as GEXF to ``out`` (a file or stdout)."""
    progress("building the networkx graph")
    H, described = gexf_graph(graph)
    progress(f"writing {H.number_of_nodes()} nodes and {H.number_of_edges()} edges")
    writer = GEXFWriter(encoding="utf-8", prettyprint=True, version=VERSION)
    writer.add_graph(H)
    meta = writer.xml.find("meta")
    if meta is None:  # every networkx GEXFWriter writes one; fail loudly if not
        raise RuntimeError("networkx's GEXF writer wrote no <meta> element")
    ET.SubElement(meta, "description").text = json.dumps(described, sort_keys=True)
    with out.open_binary() as fh:
        writer.write(fh)
    return ExportReport("gexf", out.name, graph.node_counts(), graph.edge_counts())


def description(path: Path) -> dict[str, Any]:
    """The JSON document in a GEXF file's ``<meta><description>``."""
    for _event, el in ET.iterparse(path):
        if el.tag.rsplit("}", 1)[-1] == "description":
            try:
                data: dict[str, Any] = json.loads(el.text or "")
            except ValueError:
                break
            return data
    raise ExportError("no graphkit description in the GEXF <meta>", path=str(path),
                      hint="only GEXF files written by `graphkit export --format gexf` "
                           "read back into tables")


def read(path: Path) -> GraphTables:
    """The tables in a GEXF file written by :func:`write` (read with ``nx.read_gexf``)."""
    described = description(path)
    G = nx.read_gexf(path)
    back = nx.MultiDiGraph()
    back.graph.update({k: v for k, v in described.items() if k != "gexf"})
    unprefix = len(PREFIX)

    def restore(attrs: dict[str, Any], reserved: frozenset[str]) -> dict[str, Any]:
        return {(k[unprefix:] if k.startswith(PREFIX) and k[unprefix:] in reserved else k): v
                for k, v in attrs.items()}

    # As (node, data) pairs, not keywords: a property may be named "key".
    back.add_nodes_from((n, restore({k: v for k, v in a.items() if k != "label"},
                                    NODE_RESERVED)) for n, a in G.nodes(data=True))
    edges = (G.edges(keys=True, data=True) if G.is_multigraph()
             else ((u, v, None, d) for u, v, d in G.edges(data=True)))
    for u, v, _k, a in edges:
        attrs = restore({k: x for k, x in a.items() if k not in ("id", "label")}, EDGE_RESERVED)
        back.add_edges_from([(u, v, a["label"], {TYPE: a["label"], **attrs})])
    return from_networkx(back)


FORMAT = Format("gexf", "GEXF 1.2 for Gephi (one file; - for stdout)", write, read=read)
