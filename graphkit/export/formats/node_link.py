"""``node-link``: networkx's node-link JSON (``nx.node_link_data``), one file.

Read it back with ``nx.node_link_graph(json.load(f), edges="edges")`` and, for
graphkit's tables, :func:`graphkit.enrich.networkx_store.from_networkx`.
Values are held as :func:`~graphkit.enrich.networkx_store.to_networkx` holds
them: times as ISO-8601 text, lists/maps as JSON text, nulls left out, and
``graph.encoding`` names those keys.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, TextIO

import networkx as nx

from graphkit.core.graph import GraphTables
from graphkit.enrich.networkx_store import from_networkx
from graphkit.export.portable import json_networkx
from graphkit.export.registry import ExportError, ExportReport, Format, Output, Progress

# networkx 3.4 began warning that the default name of the edge list will change
# from "links" to "edges"; naming it keeps files the same across versions.
EDGES_KEY = "edges"


def write(graph: GraphTables, out: Output, progress: Progress) -> ExportReport:
    """Write ``graph`` as node-link JSON to ``out`` (a file or stdout)."""
    for etype, et in graph.edges.items():
        if "key" in et.table.column_names:  # node-link's own field for the edge key
            raise ExportError(f"edge type {etype} has a property named 'key', which "
                              "node-link JSON uses for each edge's key",
                              hint="rename the property in the contract, or use --format "
                                   "graphml")
    progress("building the networkx graph")
    G = json_networkx(graph)
    progress(f"writing {G.number_of_nodes()} nodes and {G.number_of_edges()} edges")
    data = nx.node_link_data(G, edges=EDGES_KEY)
    with out.open_binary() as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8", newline="\n")
        write_json(data, text)
        text.write("\n")
        text.flush()
        text.detach()
    return ExportReport("node-link", out.name, graph.node_counts(), graph.edge_counts())


def write_json(data: dict[str, Any], text: TextIO, chunk: int = 4096) -> None:
    """``json.dump(data, text, ensure_ascii=False)``, byte for byte, by the C encoder:
    ``json.dump`` encodes value by value in Python (the C encoder only makes whole
    strings), ~60% of a node-link export of 300k sessions. The top-level lists are
    encoded a few thousand items at a time, not as one string of the whole file."""
    # allow_nan=False: the file is standard JSON (json_networkx held NaN/Infinity as text).
    encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode
    text.write("{")
    for i, (key, value) in enumerate(data.items()):
        text.write((", " if i else "") + encode(key) + ": ")
        if not isinstance(value, list):
            text.write(encode(value))
            continue
        text.write("[")
        for start in range(0, len(value), chunk):
            text.write((", " if start else "") + ", ".join(map(encode, value[start:start + chunk])))
        text.write("]")
    text.write("}")


def read(path: Path) -> GraphTables:
    """The tables in a node-link file written by :func:`write`."""
    with open(path, encoding="utf-8") as fh:
        G = nx.node_link_graph(json.load(fh), directed=True, multigraph=True, edges=EDGES_KEY)
    return from_networkx(G)


FORMAT = Format("node-link", "networkx node-link JSON (one file; - for stdout)", write,
                read=read)
