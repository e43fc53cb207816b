"""Exports of a graph or snapshot to formats other tools read: networkx's
node-link JSON, GraphML, GEXF (Gephi), Neo4j's bulk-import folders, a Cypher
script, and a flat edge list for dataframes.

>>> import tempfile
>>> from pathlib import Path
>>> from graphkit.builds.run import example_graph
>>> out = Path(tempfile.mkdtemp()) / "graph.graphml"
>>> export_graph(example_graph(), "graphml", out).nodes["Thread"]
5
>>> "gexf" in format_names()
True
"""

from graphkit.export.registry import (
    ExportError,
    ExportReport,
    Format,
    Output,
    export_graph,
    export_snapshot,
    format_names,
    get_format,
)

__all__ = ["ExportError", "ExportReport", "Format", "Output", "export_graph",
           "export_snapshot", "format_names", "get_format"]
