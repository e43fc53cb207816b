"""The lineage view: one session's threads and subagents as a self-contained,
offline HTML page (a collapsible tree beside a timeline; clicking a thread
shows its lineage up to the session).

>>> import tempfile
>>> from pathlib import Path
>>> from graphkit.builds.run import example_graph
>>> from graphkit.snapshot import write_snapshot
>>> from graphkit.enrich.snapshot_store import SnapshotReader
>>> d = Path(tempfile.mkdtemp()) / "snap"
>>> _ = write_snapshot(example_graph(), d)
>>> data = session_view(SnapshotReader(d), "sess-1")
>>> [(t["id"], t["parent"], t["depth"]) for t in data["threads"]]
[('sess-1', None, 1), ('ag-1', 0, 2), ('ag-2', 1, 3)]
>>> "<script" in render_html(data)
True
"""

from graphkit.view.data import session_view
from graphkit.view.html import embed_json, render_html, write_html

__all__ = ["embed_json", "render_html", "session_view", "write_html"]
