"""``graphml``: GraphML (``nx.write_graphml``), one file; opens in Cytoscape,
yEd, Gephi and networkx.

Each node carries ``type`` and its properties; each edge ``type`` and its
properties. Edge ids are ``TYPE:n``, unique in the file as GraphML requires
(``nx.read_graphml`` makes them the edge keys; :func:`read` groups edges by
``type``). Times are ISO-8601 text,
lists/maps JSON text, nulls left out; strings XML cannot hold are JSON text
(see :mod:`graphkit.export.portable`). The graph element's data names the
encoded keys (``encoding``) and keeps each type's exact Arrow schema
(``types``), so :func:`read` restores the tables.
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx

from graphkit.core.graph import GraphTables
from graphkit.enrich.networkx_store import from_networkx
from graphkit.export.portable import xml_networkx
from graphkit.export.registry import ExportReport, Format, Output, Progress


def write(graph: GraphTables, out: Output, progress: Progress) -> ExportReport:
    """Write ``graph`` as GraphML to ``out`` (a file or stdout)."""
    progress("building the networkx graph")
    G = _unique_edge_ids(xml_networkx(graph, nonfinite_as_text=True))
    progress(f"writing {G.number_of_nodes()} nodes and {G.number_of_edges()} edges")
    with out.open_binary() as fh:
        nx.write_graphml(G, fh, encoding="utf-8")
    return ExportReport("graphml", out.name, graph.node_counts(), graph.edge_counts())


def _unique_edge_ids(G: nx.MultiDiGraph) -> nx.MultiDiGraph:
    # In memory an edge's key is its type (one edge per type between two
    # nodes); GraphML readers such as Gephi's merge edges that share an id.
    H = nx.MultiDiGraph()
    H.graph.update(G.graph)
    H.add_nodes_from(G.nodes(data=True))
    H.add_edges_from((u, v, f"{k}:{i}", d)
                     for i, (u, v, k, d) in enumerate(G.edges(keys=True, data=True)))
    return H


def read(path: Path) -> GraphTables:
    """The tables in a GraphML file written by :func:`write`."""
    return from_networkx(nx.read_graphml(path, force_multigraph=True))


FORMAT = Format("graphml", "GraphML for Cytoscape, yEd, Gephi (one file; - for stdout)", write,
                read=read)
