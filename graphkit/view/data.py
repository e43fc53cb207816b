"""What the lineage view shows of one session, gathered from a store.

The tree comes from :func:`graphkit.queries.lineage.session_tree`, so the page
draws exactly what ``graphkit tree`` prints; the thread and session nodes'
own properties (model, end time, token counts, …) come from the snapshot's
tables or from Neo4j. Everything becomes plain JSON-ready values here; the
page's script only displays them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphkit._version import __version__
from graphkit.core.errors import GraphkitError
from graphkit.core.graph import LineageVocabulary
from graphkit.enrich.base import LineageReader
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.queries.lineage import session_tree
from graphkit.queries.model import TreeNode
from graphkit.snapshot.read import read_manifest

VIEW_FORMAT = 1
# Node properties the page shows in their own places, not in the property table.
_SHOWN = {"id", "kind", "model", "messages", "first_seen", "last_seen"}
# The columns a message node's content and order come from (the default contract's).
_TEXT, _ORDER = "text", ("created_at", "message_index")


def session_view(reader: LineageReader, session_id: str, *, include_content: bool = False,
                 source: str = "", costs: dict[str, tuple[float | None, float | None]]
                 | None = None, index_href: str | None = None) -> dict[str, Any]:
    """The page's data for ``session_id``: the session, and its threads in tree
    order, each with its parent's index (``None`` under the session) and depth.

    Message text is included only with ``include_content``, and only from a
    snapshot built with ``--granularity message --include-content``. ``costs``: each
    thread's own and subtree cost in USD by thread node id (None: a model without a
    price), from :func:`graphkit.view.history.thread_costs`; ``index_href``: the
    history page a site's session page links back to.
    """
    v = reader.vocabulary
    root = session_tree(reader, session_id)  # raises QueryError for an unknown session
    order: list[tuple[TreeNode, int | None, int]] = []
    _preorder(root, None, 0, order)
    node_ids = [n.info.node_id for n, _, _ in order if n.info is not None]
    holds_content = isinstance(reader, SnapshotReader) and bool(
        read_manifest(reader.directory).get("include_content"))
    # Without --include-content, a snapshot that holds content shows only the
    # fields the page names, so no content a contract put on a thread leaks.
    show_props = include_content or not holds_content
    props = {p["id"]: p for p in _node_props(reader, v.thread, "id", node_ids)}
    session_props = next(iter(_node_props(reader, v.session, v.session_key, [session_id])), {})
    content = _content(reader, v, node_ids) if include_content else None
    threads = []
    for node, parent, depth in order:
        info = node.info
        assert info is not None  # only the root (the session) has no thread info
        p = props.get(info.node_id, {})
        threads.append({
            "id": info.id, "parent": parent, "depth": depth,
            "kind": info.kind, "agent_type": info.agent_type, "description": info.description,
            "model": p.get("model"), "messages": info.messages,
            "tokens": _tokens(p),
            "first_seen": _iso(p.get("first_seen")) or info.first_seen,
            "last_seen": _iso(p.get("last_seen")), "cycle": node.cycle,
            "props": _extra(p) if show_props else {},
            "content": (content or {}).get(info.node_id, []) if include_content else None,
            **({"cost_usd": costs.get(info.node_id, (None, None))[0],
                "subtree_cost_usd": costs.get(info.node_id, (None, None))[1]}
               if costs is not None else {}),
        })
    return {
        "format": VIEW_FORMAT,
        "generated_by": f"graphkit {__version__}",
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "source": source,
        "include_content": include_content,
        "content_found": bool(content) if include_content else None,
        "session": {"id": session_id, "first_seen": _iso(session_props.get("first_seen")),
                    "last_seen": _iso(session_props.get("last_seen")),
                    "messages": session_props.get("messages"),
                    "props": _extra(session_props) if show_props else {}},
        "threads": threads,
        **({"index_href": index_href} if index_href is not None else {}),
    }


def _preorder(node: TreeNode, parent: int | None, depth: int,
              out: list[tuple[TreeNode, int | None, int]]) -> None:
    """Threads in drawing order (the session itself is not a row)."""
    stack = [(c, parent, depth + 1) for c in reversed(node.children)]
    while stack:
        n, p, d = stack.pop()
        out.append((n, p, d))
        me = len(out) - 1
        stack.extend((c, me, d + 1) for c in reversed(n.children))


def _node_props(reader: LineageReader, label: str, key: str,
                values: Sequence[str]) -> list[dict[str, Any]]:
    """Every property of the ``label`` nodes whose ``key`` is in ``values``."""
    if not values:
        return []
    if isinstance(reader, SnapshotReader):
        return _snapshot_nodes(reader.directory, label, key, values).to_pylist()
    # Neo4j answers with a query of its own; looked up by name so this module
    # does not import the optional neo4j driver.
    fetch = getattr(reader, "node_properties", None)
    return list(fetch(label, key, values)) if fetch is not None else []


def _snapshot_nodes(directory: Path, label: str, key: str, values: Sequence[str]) -> pa.Table:
    info = read_manifest(directory)["nodes"].get(label)
    if not info:
        return pa.table({})
    t = _node_table(Path(directory) / info["file"])
    if key not in t.column_names:
        return t.slice(0, 0)
    return t.filter(pc.fill_null(pc.is_in(t.column(key), value_set=pa.array(
        list(values), pa.string())), False))


# A history site asks for thousands of sessions' nodes: each table is read once per
# version of its file (the name, size and time say which), not once per session.
_TABLES: dict[tuple[str, int, int], pa.Table] = {}


def _node_table(path: Path) -> pa.Table:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _TABLES:
        if len(_TABLES) >= 16:
            _TABLES.clear()
        _TABLES[key] = pq.read_table(path)
    return _TABLES[key]


def _content(reader: LineageReader, v: LineageVocabulary,
             node_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Message text by thread node id: the nodes with a ``text`` property that an
    edge from the thread reaches, in time order."""
    if not isinstance(reader, SnapshotReader):
        raise GraphkitError("--include-content reads message text from a snapshot",
                            hint="give --snapshot DIR (built with --granularity message "
                                 "--include-content) instead of --neo4j")
    directory = reader.directory
    m = read_manifest(directory)
    out: dict[str, list[dict[str, Any]]] = {}
    ids = pa.array(node_ids, pa.string())
    for info in m["edges"].values():
        target = m["nodes"].get(info["target_type"])
        if info["source_type"] != v.thread or not target:
            continue
        if _TEXT not in pq.read_schema(directory / target["file"]).names:
            continue
        edges = pq.read_table(directory / info["file"], columns=["source", "target"])
        edges = edges.filter(pc.is_in(edges.column("source"), value_set=ids))
        msgs = _snapshot_nodes(directory, info["target_type"], "id",
                               edges.column("target").to_pylist())
        order = [(c, "ascending") for c in _ORDER if c in msgs.column_names]
        msgs = msgs.sort_by([*order, ("id", "ascending")])
        owner = dict(zip(edges.column("target").to_pylist(), edges.column("source").to_pylist(),
                         strict=True))
        for rec in msgs.to_pylist():
            out.setdefault(owner[rec["id"]], []).append(
                {"at": _iso(rec.get("created_at")), "text": rec.get(_TEXT),
                 **({"role": rec["role"]} if rec.get("role") else {})})
    return out


def _tokens(props: dict[str, Any]) -> int | None:
    """The sum of a node's numeric ``*tokens*`` properties, when it has any."""
    counts = [v for k, v in props.items() if "token" in k.lower()
              and isinstance(v, int | float) and not isinstance(v, bool)]
    return int(sum(counts)) if counts else None


def _extra(props: dict[str, Any]) -> dict[str, Any]:
    """The properties not shown elsewhere on the page, JSON-ready and sorted."""
    return {k: _plain(v) for k, v in sorted(props.items()) if k not in _SHOWN and v is not None}


def _iso(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return (value.astimezone(UTC) if value.tzinfo else value).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no NaN or infinity
    if isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_plain(x) for x in value]
    if isinstance(value, dict):
        return {str(k): _plain(x) for k, x in value.items()}
    return _iso(value)
