"""What changed between two graphs: nodes and edges added, removed and changed.

Graphs are compared type by type. Nodes match on their deterministic ``id``
(the same natural key gives the same id on every build and machine); edges
match on ``(source, target)`` within their type. Matching is a hash lookup
(``pyarrow.compute.index_in``) and properties compare column by column with
Arrow kernels over the matched rows; only rows that differ become Python
objects, when records are asked for.

>>> from graphkit.builds.run import example_rows, graph_from_records
>>> old = graph_from_records(example_rows()[:3])
>>> new = graph_from_records(example_rows())
>>> d = diff_graphs(old, old)
>>> d.is_empty()
True
>>> d = diff_graphs(old, new)
>>> d.counts()["nodes"]["Thread"]
{'added': 2, 'removed': 0, 'changed': 0}
>>> d.new_child_threads()
{'th-root': ['th-child']}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from graphkit.core.errors import GraphkitError
from graphkit.core.graph import EDGE_SOURCE, EDGE_TARGET, NODE_ID, GraphTables, LineageVocabulary

Element = Literal["node", "edge"]
CHANGES = ("added", "removed", "changed")
# Joins the parts of an edge's match key; a control character no id contains.
_SEP = "\x1f"


@dataclass(frozen=True)
class TableDiff:
    """How one node or edge type differs between two graphs.

    ``added`` holds rows of the new graph, ``removed`` rows of the old, and
    ``changed`` the matched rows whose properties differ, each sorted by the
    user-facing key. Node tables have the columns ``id`` and ``key``; edge
    tables ``source``, ``target``, ``source_key`` and ``target_key``.
    ``changes[i]`` maps each changed property of ``changed``'s row ``i`` to
    its ``(old, new)`` values.
    """

    element: Element
    type: str
    added: pa.Table
    removed: pa.Table
    changed: pa.Table
    changes: list[dict[str, tuple[Any, Any]]]
    source_type: str | None = None  # edges only: the node types of the two ends
    target_type: str | None = None

    def counts(self) -> dict[str, int]:
        """``{"added": n, "removed": n, "changed": n}``."""
        return {"added": self.added.num_rows, "removed": self.removed.num_rows,
                "changed": self.changed.num_rows}

    def is_empty(self) -> bool:
        """Whether nothing of this type differs."""
        return not any(self.counts().values())

    def records(self) -> Iterator[dict[str, Any]]:
        """One JSON-ready dict per added, removed and changed node or edge."""
        for change in CHANGES:
            table: pa.Table = getattr(self, change)
            cols = {c: table.column(c).to_pylist() for c in table.column_names}
            for i in range(table.num_rows):
                diffs = self.changes[i] if change == "changed" else {}
                rec: dict[str, Any] = {"record": self.element, "change": change,
                                       "type": self.type}
                if self.element == "node":
                    rec["id"], rec["key"] = cols["id"][i], cols["key"][i]
                else:
                    rec["source"] = {"type": self.source_type, "id": cols["source"][i],
                                     "key": cols["source_key"][i]}
                    rec["target"] = {"type": self.target_type, "id": cols["target"][i],
                                     "key": cols["target_key"][i]}
                rec["changes"] = {p: {"old": plain(o), "new": plain(n)}
                                  for p, (o, n) in diffs.items()}
                yield rec


@dataclass
class GraphDiff:
    """What :func:`graphkit.diff_snapshots` found: every node and edge type's
    :class:`TableDiff` (``nodes``, ``edges``), and the child threads each session gained.

    Its ``repr`` is long (it holds the rows that differ): ask ``counts()``,
    ``records()`` or ``summary()`` instead.

    >>> from graphkit.builds.run import example_graph
    >>> diff = diff_graphs(example_graph(), example_graph())
    >>> diff.is_empty(), diff.counts(), sorted(diff.nodes)[:2]
    (True, {'nodes': {}, 'edges': {}}, ['Agent', 'File'])
    """

    nodes: dict[str, TableDiff] = field(default_factory=dict)
    edges: dict[str, TableDiff] = field(default_factory=dict)
    # Added child threads (subagents, Codex child threads) by session id.
    child_threads: dict[str, list[str]] = field(default_factory=dict)

    def is_empty(self) -> bool:
        """Whether the two graphs are the same."""
        return all(d.is_empty() for d in (*self.nodes.values(), *self.edges.values()))

    def counts(self) -> dict[str, dict[str, dict[str, int]]]:
        """Added/removed/changed counts by element and type (types with changes only)."""
        return {"nodes": {t: d.counts() for t, d in self.nodes.items() if not d.is_empty()},
                "edges": {t: d.counts() for t, d in self.edges.items() if not d.is_empty()}}

    def new_child_threads(self) -> dict[str, list[str]]:
        """Sessions that gained subagents or child threads: session id → the
        added threads' ids (sessions and threads sorted)."""
        return self.child_threads

    def records(self) -> Iterator[dict[str, Any]]:
        """Every change as a JSON-ready dict: nodes, then edges, by type."""
        for d in (*self.nodes.values(), *self.edges.values()):
            yield from d.records()

    def summary(self) -> dict[str, Any]:
        """The closing ``{"record": "diff", ...}`` line: counts and new child threads."""
        return {"record": "diff", **self.counts(), "new_child_threads": self.child_threads}


def diff_snapshots(old: str | Path, new: str | Path, *,
                   include_content: bool = False) -> GraphDiff:
    """Return what changed from the snapshot folder ``old`` to ``new``: nodes and edges
    added, removed and changed, type by type (``graphkit diff``).

    Nodes match on their id (the same natural key gives the same id on every build),
    edges on ``(source, target)`` within their type.

    Parameters
    ----------
    old, new : str or Path
        Two snapshot folders.
    include_content : bool
        Allow snapshots built with ``--include-content``: their diff shows message text,
        so it must be asked for.

    Returns
    -------
    GraphDiff
        ``is_empty()``, ``counts()`` (added/removed/changed by type), ``records()``
        (one JSON-ready dict per change), ``new_child_threads()`` and ``summary()``.

    Raises
    ------
    GraphkitError
        A snapshot holds message content and ``include_content`` is not set;
        ``SnapshotError``: a folder is not a readable snapshot.

    Examples
    --------
    >>> import tempfile
    >>> from graphkit.builds.run import example_rows, graph_from_records
    >>> from graphkit.snapshot.write import write_snapshot
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = write_snapshot(graph_from_records(example_rows()[:3]), d / "before")
    >>> _ = write_snapshot(graph_from_records(example_rows()), d / "after")
    >>> diff = diff_snapshots(d / "before", d / "after")
    >>> diff.counts()["nodes"]["Thread"], diff.new_child_threads()
    ({'added': 2, 'removed': 0, 'changed': 0}, {'th-root': ['th-child']})
    >>> diff_snapshots(str(d / "after"), str(d / "after")).is_empty()
    True
    """
    from graphkit.snapshot.read import read_manifest, read_snapshot

    for label, directory in (("OLD", old), ("NEW", new)):
        if read_manifest(directory).get("include_content") and not include_content:
            raise GraphkitError(
                f"{label} holds message content (it was built with --include-content)",
                path=str(directory),
                hint="pass --include-content to compare it, content included")
    return diff_graphs(read_snapshot(old), read_snapshot(new))


def diff_graphs(old: GraphTables, new: GraphTables) -> GraphDiff:
    """The differences from graph ``old`` to graph ``new``, type by type."""
    out = GraphDiff()
    for ntype in sorted(set(old.nodes) | set(new.nodes)):
        a, b = old.nodes.get(ntype), new.nodes.get(ntype)
        before = _node_view(old, ntype) if a is not None else None
        after = _node_view(new, ntype) if b is not None else None
        out.nodes[ntype] = _diff_tables("node", ntype, before, after, ("id", "key"),
                                        lambda rows, _new: rows)
    keys = {False: _KeyLookup(old), True: _KeyLookup(new)}

    def name_ends(rows: pa.Table, from_new: bool) -> pa.Table:
        # Only the rows that differ get their ends named: one scan of the
        # graph's ids each, not a lookup for every edge of both graphs.
        k = keys[from_new]
        return (rows.append_column("source_key", k.keys_of(rows.column("source")))
                .append_column("target_key", k.keys_of(rows.column("target"))))

    for etype in sorted(set(old.edges) | set(new.edges)):
        ea, eb = old.edges.get(etype), new.edges.get(etype)
        before = _edge_view(old, etype) if ea is not None else None
        after = _edge_view(new, etype) if eb is not None else None
        ends = eb if eb is not None else ea
        assert ends is not None  # the type came from one of the two graphs
        out.edges[etype] = _diff_tables(
            "edge", etype, before, after, ("source", "target"), name_ends,
            source_type=ends.source_type, target_type=ends.target_type)
    out.child_threads = _child_threads(out, new)
    return out


# -- the user-facing key of every node --------------------------------------

def _key_column(graph: GraphTables, ntype: str) -> pa.ChunkedArray:
    """The id a user would type for each node of ``ntype``: the thread or
    session key the lineage vocabulary names, else the key columns joined by ``/``."""
    nt = graph.nodes[ntype]
    t = nt.table
    v = graph.lineage
    named = {v.thread: v.thread_key, v.session: v.session_key} if v else {}
    if ntype in named and named[ntype] in t.column_names:
        return pc.cast(t.column(named[ntype]), pa.string())
    parts = [pc.cast(t.column(k), pa.string()) for k in nt.key if k in t.column_names]
    if not parts:
        return t.column(NODE_ID)
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, "/", null_handling="replace",
                                       null_replacement="")


def _node_view(graph: GraphTables, ntype: str) -> pa.Table:
    """The node table with its user-facing ``key`` (key columns count as properties
    no more: the id already stands for them)."""
    nt = graph.nodes[ntype]
    t = nt.table
    props = [c for c in t.column_names if c != NODE_ID and c not in nt.key]
    return pa.table({"id": t.column(NODE_ID), "key": _key_column(graph, ntype),
                     **{f"p:{c}": t.column(c) for c in props}})


class _KeyLookup:
    """Node id → user-facing key over a whole graph, for naming edge ends."""

    def __init__(self, graph: GraphTables) -> None:
        ids = [graph.nodes[t].table.column(NODE_ID) for t in sorted(graph.nodes)]
        keys = [_key_column(graph, t) for t in sorted(graph.nodes)]
        self.ids = pa.chunked_array([c for a in ids for c in a.chunks], pa.string()) \
            .combine_chunks()
        self.keys = pa.chunked_array([c for a in keys for c in a.chunks], pa.string()) \
            .combine_chunks()

    def keys_of(self, node_ids: pa.ChunkedArray) -> pa.Array:
        """The keys of ``node_ids`` (null where the node is not in the graph)."""
        if not len(node_ids):
            return pa.array([], pa.string())
        # Hash the few wanted ids and scan the graph's once, rather than hash
        # the whole graph's ids for every lookup.
        wanted = pc.unique(node_ids)
        hit = pc.is_valid(pc.index_in(self.ids, value_set=wanted))
        found = pc.indices_nonzero(hit)
        ids, keys = pc.take(self.ids, found), pc.take(self.keys, found)
        return pc.take(keys, pc.index_in(node_ids, value_set=ids))


def _edge_view(graph: GraphTables, etype: str) -> pa.Table:
    """The edge table with a unique match key ``m`` first."""
    t = graph.edges[etype].table
    src, dst = t.column(EDGE_SOURCE), t.column(EDGE_TARGET)
    props = [c for c in t.column_names if c not in (EDGE_SOURCE, EDGE_TARGET)]
    return pa.table({"m": _edge_match_key(src, dst), "source": src, "target": dst,
                     **{f"p:{c}": t.column(c) for c in props}})


def _edge_match_key(src: pa.ChunkedArray, dst: pa.ChunkedArray) -> pa.Array:
    """``source␟target``, with an occurrence number when one pair has several
    edges of one type, so parallel edges match one to one in order."""
    pair = pc.binary_join_element_wise(src, dst, _SEP).combine_chunks()
    if pc.count_distinct(pair).as_py() == len(pair):
        return pair
    import numpy as np

    order = pc.array_sort_indices(pair)
    ranked = pc.take(pair, order)
    same = np.zeros(len(ranked), dtype=bool)
    if len(ranked) > 1:
        same[1:] = pc.equal(ranked[1:], ranked[:-1]).to_numpy(zero_copy_only=False)
    pos = np.arange(len(ranked))
    run_start = np.maximum.accumulate(np.where(same, 0, pos))
    occurrence = np.empty(len(ranked), dtype=np.int64)
    occurrence[order.to_numpy()] = pos - run_start
    return pc.binary_join_element_wise(pair, pc.cast(pa.array(occurrence), pa.string()), _SEP)


# -- matching and comparing --------------------------------------------------

def _empty_like(names: tuple[str, ...]) -> pa.Table:
    return pa.table({n: pa.array([], pa.string()) for n in names})


# Turns the identifying columns of rows that differ into their output columns;
# the flag says whether the rows come from the new graph.
Namer = Callable[[pa.Table, bool], pa.Table]


def _diff_tables(element: Element, type_: str, old: pa.Table | None, new: pa.Table | None,
                 ident: tuple[str, ...], name: Namer, *,
                 source_type: str | None = None, target_type: str | None = None) -> TableDiff:
    """Match ``old`` and ``new`` rows on their match column and compare the rest."""
    mcol = "id" if element == "node" else "m"
    empty = name(_empty_like(ident), True)
    if old is None or new is None:
        present = new if new is not None else old
        assert present is not None
        rows = _sorted(name(present.select(list(ident)), new is not None), element)
        added, removed = (rows, empty) if new is not None else (empty, rows)
        return TableDiff(element, type_, added, removed, empty, [], source_type, target_type)
    old_m, new_m = old.column(mcol).combine_chunks(), new.column(mcol).combine_chunks()
    in_old = pc.index_in(new_m, value_set=old_m)
    added = name(new.take(pc.indices_nonzero(pc.is_null(in_old))).select(list(ident)), True)
    gone = pc.invert(pc.is_in(old_m, value_set=new_m))
    removed = name(old.take(pc.indices_nonzero(gone)).select(list(ident)), False)
    new_pos = pc.indices_nonzero(pc.is_valid(in_old))
    a, b = old.take(pc.take(in_old, new_pos)), new.take(new_pos)
    changed, changes = _changed_rows(a, b, ident, element, name)
    return TableDiff(element, type_, _sorted(added, element), _sorted(removed, element),
                     changed if changes else empty, changes, source_type, target_type)


def _sorted(t: pa.Table, element: Element) -> pa.Table:
    keys = ["key", "id"] if element == "node" else ["source_key", "target_key", "source",
                                                    "target"]
    return t.sort_by([(k, "ascending") for k in keys])


def _changed_rows(a: pa.Table, b: pa.Table, ident: tuple[str, ...], element: Element,
                  name: Namer) -> tuple[pa.Table, list[dict[str, tuple[Any, Any]]]]:
    """The rows of ``b`` whose properties differ from the matched rows of ``a``,
    sorted by key, with each row's changed properties as ``(old, new)``."""
    props = sorted({c for c in (*a.column_names, *b.column_names) if c.startswith("p:")})
    masks: dict[str, pa.Array] = {}
    for p in props:
        m = _differs(a.column(p) if p in a.column_names else None,
                     b.column(p) if p in b.column_names else None, b.num_rows)
        if pc.any(m).as_py():
            masks[p] = m
    if not masks:
        return _empty_like(ident), []
    flags = list(masks.values())
    any_changed = flags[0]
    for m in flags[1:]:
        any_changed = pc.or_(any_changed, m)
    rows = b.select(list(ident)).append_column("_pos", pa.array(range(b.num_rows), pa.int64()))
    rows = _sorted(name(rows.filter(any_changed), True), element)
    pos = rows.column("_pos")
    per_prop = {p: (pc.take(m, pos).to_pylist(),
                    _values(a, p, pos), _values(b, p, pos)) for p, m in masks.items()}
    changes = [{p[2:]: (olds[i], news[i]) for p, (flags, olds, news) in per_prop.items()
                if flags[i]} for i in range(rows.num_rows)]
    return rows.drop_columns(["_pos"]), changes


def _values(t: pa.Table, column: str, pos: pa.ChunkedArray) -> list[Any]:
    if column not in t.column_names:
        return [None] * len(pos)
    return list(pc.take(t.column(column), pos).to_pylist())


def _differs(a: pa.ChunkedArray | None, b: pa.ChunkedArray | None, n: int) -> pa.Array:
    """Per row, whether two aligned columns differ (two nulls are equal; a
    column missing on one side counts as nulls)."""
    if a is None and b is None:
        return pa.array([False] * n)
    if a is None or b is None:
        present = a if a is not None else b
        assert present is not None
        return pc.is_valid(present)
    if a.type != b.type:
        try:
            b = pc.cast(b, a.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return _differs_python(a, b)
    if pa.types.is_nested(a.type) or pa.types.is_dictionary(a.type):
        # Arrow has no equality kernel for lists/structs; few properties are nested.
        return _differs_python(a, b)
    equal = pc.fill_null(pc.equal(a, b), False)
    same = pc.or_(equal, pc.and_(pc.is_null(a), pc.is_null(b)))
    if pa.types.is_floating(a.type):
        same = pc.or_(same, pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False))
    return pc.invert(same)


def _differs_python(a: pa.ChunkedArray, b: pa.ChunkedArray) -> pa.Array:
    return pa.array([x != y for x, y in zip(a.to_pylist(), b.to_pylist(), strict=True)],
                    pa.bool_())


def _child_threads(d: GraphDiff, new: GraphTables) -> dict[str, list[str]]:
    """Added threads that have a parent in ``new``, by their session."""
    v: LineageVocabulary | None = new.lineage
    if v is None or v.thread not in d.nodes or v.thread not in new.nodes:
        return {}
    added = d.nodes[v.thread].added.column("id")
    parent = new.edges.get(v.parent)
    if parent is None or not len(added):
        return {}
    children = pc.filter(added, pc.is_in(added, value_set=parent.table.column(EDGE_SOURCE)
                                         .combine_chunks()))
    threads = new.nodes[v.thread].table
    if v.thread_session not in threads.column_names:
        return {}
    at = pc.index_in(children, value_set=threads.column(NODE_ID).combine_chunks())
    sessions = pc.take(threads.column(v.thread_session), at).to_pylist()
    names = pc.take(_key_column(new, v.thread), at).to_pylist()
    out: dict[str, list[str]] = {}
    for sid, name in zip(sessions, names, strict=True):
        out.setdefault(str(sid), []).append(str(name))
    return {s: sorted(out[s]) for s in sorted(out)}


def plain(value: Any) -> Any:
    """``value`` as JSON can hold it: times as ISO text, bytes as hex."""
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value
