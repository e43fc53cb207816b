"""``usage`` over a store that answers Arrow tables (:class:`ThreadTableReader`: a
snapshot read in place): the same answer as :mod:`.usage`'s walk, as columnar work.

Asked for every session of a snapshot of 300k one-thread sessions, the walk (one
:func:`~graphkit.queries.lineage.session_tree` per session: resolve the id, look
its threads up, make a tree, sort it) took ~90 µs a session. Here the threads of
all sessions come as one table; a session none of whose threads has a parent or
shares a node (every one-thread session, most sessions of a big snapshot) is
ordered by one sort of that table, since its tree is flat: its threads in
:func:`~graphkit.queries.lineage.session_tree`'s order (the main thread first,
then by first time, then id). Only the other sessions are built as trees.
Own and by-model counts come from the Thread and ``USED_MODEL`` tables as columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from graphkit.core.times import TIMESTAMP, iso_texts
from graphkit.enrich.base import ThreadInfo, ThreadTableReader, plain
from graphkit.queries.lineage import thread_tree
from graphkit.queries.tokens import (
    ADVISOR_FIELDS,
    ADVISOR_MODEL,
    BILLING_FIELDS,
    EDGE_FIELDS,
    MODEL,
    MODEL_KEY,
    TOKEN_FIELDS,
    UNKNOWN_MODEL,
    USED_MODEL,
    Step,
    Tokens,
    add_advisor,
    add_all,
    add_model,
    count,
    walk_steps,
)
from graphkit.queries.window import Window

# A thread's counts: the four and what is billed beside them (Tokens' fields in order).
_THREAD_FIELDS = (*TOKEN_FIELDS, *BILLING_FIELDS)


def table_orders(reader: ThreadTableReader, session_ids: Sequence[str],
                 columns: Sequence[str]) -> tuple[list[list[Step]], pa.Table]:
    """Each session's threads in tree order (``session_ids`` distinct) and the Thread
    ``columns`` of the rows of :meth:`~ThreadTableReader.session_thread_table` with
    ``node_id``; a session with no thread has an empty list."""
    info, extra = reader.session_thread_table(session_ids, columns)
    orders: list[list[Step]] = [[] for _ in session_ids]
    n = info.num_rows
    session = info.column("session")
    # Sessions that need a tree: a thread with a parent, a thread twice, a null id.
    dup = pa.table({"s": session, "n": info.column("node_id")}).group_by(["s", "n"]) \
        .aggregate([([], "count_all")])
    tree = pc.unique(pa.concat_arrays([c.combine_chunks().cast(pa.int64()) for c in (
        session.filter(pc.is_valid(info.column("parent_node_id"))),
        session.filter(pc.is_null(info.column("id"))),
        dup.column("s").filter(pc.greater(dup.column("count_all"), 1)))]))
    in_tree = pc.is_in(session.cast(pa.int64()), value_set=tree)
    flat = info.append_column("row", pa.array(range(n), pa.int64())).filter(pc.invert(in_tree))
    # session_tree's order of a session's children: the main thread, then by first
    # time (none: ""), then id; a stable sort keeps the store's order of equals.
    flat = flat.append_column("main", pc.if_else(pc.fill_null(
        pc.equal(flat.column("kind").cast(pa.string()), "main"), False), 0, 1))
    flat = flat.append_column("first", pc.fill_null(flat.column("first_seen"), ""))
    flat = flat.take(pc.sort_indices(flat, sort_keys=[
        ("session", "ascending"), ("main", "ascending"), ("first", "ascending"),
        ("id", "ascending")]))
    cols = [flat.column(c).to_pylist() for c in ("session", "node_id", "id", "kind",
                                                  "agent_type")]
    for s, nid, tid, kind, agent_type in zip(*cols, strict=True):
        orders[s].append((nid, tid, kind, agent_type, None, 0))
    _tree_orders(reader, session_ids, info.filter(in_tree), orders)
    return orders, extra.append_column("node_id", info.column("node_id"))


def _tree_orders(reader: ThreadTableReader, session_ids: Sequence[str], rows: pa.Table,
                 orders: list[list[Step]]) -> None:
    """The sessions of ``rows`` walked as trees, as :func:`.usage.session_usage` walks
    every session of other stores."""
    threads: dict[int, list[ThreadInfo]] = {}
    for r in rows.to_pylist():
        threads.setdefault(r["session"], []).append(ThreadInfo(
            node_id=r["node_id"], id=r["id"], parent_node_id=r["parent_node_id"],
            kind=r["kind"], agent_type=r["agent_type"], first_seen=r["first_seen"]))
    for s, ts in threads.items():
        orders[s] = walk_steps(thread_tree(reader.vocabulary, session_ids[s], ts))


def counts(col: pa.ChunkedArray | pa.Array) -> list[int]:
    """A token column as :func:`.tokens.count` reads each value: integers as they are,
    null as 0; any other type value by value."""
    if pa.types.is_integer(col.type):
        return pc.fill_null(col, 0).to_pylist()
    if col.null_count == len(col):  # a sparse property the snapshot lacks
        return [0] * len(col)
    return [count(v) for v in col.to_pylist()]


def _advised(edges: pa.Table) -> pa.Table:
    """The ``USED_MODEL`` edges of ``edges`` that carry an advisor's tokens (none, and
    no row is looked at, in a snapshot of data without them)."""
    if all(edges.column(f).null_count == edges.num_rows for f in ADVISOR_FIELDS):
        return edges.slice(0, 0)
    mask = pc.is_valid(edges.column(ADVISOR_FIELDS[0]))
    for f in ADVISOR_FIELDS[1:]:
        mask = pc.or_(mask, pc.is_valid(edges.column(f)))
    return edges.filter(mask)


def _utc(col: pa.ChunkedArray) -> pa.ChunkedArray | None:
    """A zoned time column as UTC microseconds (the instant kept); None for any
    other type, which goes value by value."""
    t = col.type
    if not pa.types.is_timestamp(t) or not t.tz or t.unit not in ("s", "ms", "us"):
        return None
    return col.cast(pa.timestamp(t.unit, tz="UTC")).cast(TIMESTAMP)


def active(window: Window, first: pa.ChunkedArray, last: pa.ChunkedArray) -> list[bool]:
    """Per row, whether [first, last] meets ``window`` (:meth:`Window.overlaps`): by
    Arrow for zoned times and zoned bounds, else value by value."""
    if window.open:
        return [True] * len(first)
    lo, hi = _utc(first), _utc(last)
    bounds = [b for b in (window.since, window.until) if b is not None]
    if lo is None or hi is None or any(b.tzinfo is None for b in bounds):
        return [window.overlaps(plain(a), plain(b))
                for a, b in zip(first.to_pylist(), last.to_pylist(), strict=True)]
    lo, hi = pc.coalesce(lo, hi), pc.coalesce(hi, lo)
    mask = pc.is_valid(lo)
    if window.since is not None:
        since = pa.scalar(window.since.astimezone(UTC), TIMESTAMP)
        mask = pc.and_(mask, pc.fill_null(pc.greater_equal(hi, since), False))
    if window.until is not None:
        until = pa.scalar(window.until.astimezone(UTC), TIMESTAMP)
        mask = pc.and_(mask, pc.fill_null(pc.less_equal(lo, until), False))
    return mask.to_pylist()


def table_usage(reader: ThreadTableReader, session_ids: Sequence[str], window: Window
                ) -> tuple[list[list[Step]], dict[str, Tokens], dict[str, dict[str, Tokens]]]:
    """Each session's threads in tree order (``session_ids`` distinct), and the own
    usage and usage by model of its threads active in ``window``, by node id: what
    :func:`.usage.session_usage` adds up."""
    v = reader.vocabulary
    times = [] if window.open else ["first_seen", "last_seen"]
    orders, extra = table_orders(reader, session_ids, [*_THREAD_FIELDS, *times])
    keep = active(window, extra.column("first_seen"), extra.column("last_seen")) \
        if times else [True] * extra.num_rows
    own = {nid: Tokens(*n) for nid, *n, k in zip(
        extra.column("node_id").to_pylist(), *(counts(extra.column(f)) for f in _THREAD_FIELDS),
        keep, strict=True) if k}
    models: dict[str, dict[str, Tokens]] = {}
    edges = reader.edge_table(USED_MODEL, v.thread, MODEL, EDGE_FIELDS)
    if edges is None or not own:
        return orders, own, models
    edges = edges.filter(pc.is_in(edges.column("source"),
                                  value_set=pa.array(list(own), pa.string())))
    names = reader.node_table(MODEL, [MODEL_KEY])
    if names is None:
        name = pa.nulls(edges.num_rows, pa.string()).to_pylist()
    else:
        name = pc.take(names.column(MODEL_KEY), pc.index_in(
            edges.column("target"), value_set=names.column("id").combine_chunks())).to_pylist()
    for src, n, *c in zip(edges.column("source").to_pylist(), name,
                          *(counts(edges.column(f)) for f in _THREAD_FIELDS), strict=True):
        add_model(models, src, n, Tokens(*c))
    for e in _advised(edges).select(["source", ADVISOR_MODEL, *ADVISOR_FIELDS]).to_pylist():
        add_advisor(models, own, e["source"], e)
    return orders, own, models


def session_order(reader: ThreadTableReader, window: Window) -> list[str] | None:
    """The ids of every session active in ``window`` in the order of
    :func:`~graphkit.queries.lineage.sessions` (first seen as ISO text, none first,
    then id), from the Session table's columns: a summary of each session only to
    sort them was a tenth of ``usage`` over 300k sessions. None where an id is not
    text (the summaries' order is then Python's)."""
    v = reader.vocabulary
    t = reader.node_table(v.session, [v.session_key, "first_seen", "last_seen"])
    if t is None:
        return []
    key = t.column(v.session_key)
    if not pa.types.is_string(key.type) or key.null_count:
        return None
    keep = active(window, t.column("first_seen"), t.column("last_seen"))
    t = pa.table({"f": pa.array(iso_texts(t.column("first_seen")), pa.string()).fill_null(""),
                  "i": key}).filter(pa.array(keep, pa.bool_()))
    order = pc.sort_indices(t, sort_keys=[("f", "ascending"), ("i", "ascending")])
    return t.column("i").take(order).to_pylist()


def session_totals(reader: ThreadTableReader, session_ids: Sequence[str], window: Window
                   ) -> tuple[dict[str, Tokens], dict[str, dict[str, Tokens]]]:
    """Each session's whole usage and its usage by model (what its threads' rows name
    none of under :data:`~graphkit.queries.tokens.UNKNOWN_MODEL`), of its threads active
    in ``window``: ``graphkit sessions``' columns, added up by Arrow (a Python value per
    thread and edge was most of ``sessions`` over 19k threads)."""
    v = reader.vocabulary
    times = [] if window.open else ["first_seen", "last_seen"]
    t = reader.node_table(v.thread, [v.thread_session, *_THREAD_FIELDS, *times])
    if t is None:
        return {}, {}
    keep = pc.is_in(t.column(v.thread_session).cast(pa.string()),
                    value_set=pa.array(list(session_ids), pa.string()))
    if times:
        keep = pc.and_(keep, pa.array(active(window, t.column("first_seen"),
                                             t.column("last_seen")), pa.bool_()))
    t = t.filter(keep)
    session = t.column(v.thread_session).cast(pa.string())
    counted = pa.table({"s": session, **{f: _count_array(t.column(f)) for f in _THREAD_FIELDS}})
    totals = _sums(counted, ["s"])
    models: dict[str, dict[str, Tokens]] = {}
    edges = reader.edge_table(USED_MODEL, v.thread, MODEL, EDGE_FIELDS)
    if edges is not None and t.num_rows:
        at = pc.index_in(edges.column("source"), value_set=t.column("id").combine_chunks())
        edges = edges.filter(pc.is_valid(at))
        owner = pc.take(session, at.filter(pc.is_valid(at)))
        names = reader.node_table(MODEL, [MODEL_KEY])
        name = (pa.nulls(edges.num_rows, pa.string()) if names is None else pc.take(
            names.column(MODEL_KEY).cast(pa.string()),
            pc.index_in(edges.column("target"), value_set=names.column("id").combine_chunks())))
        by = pa.table({"s": owner, "m": pc.fill_null(pc.if_else(
            pc.equal(name, ""), pa.scalar(None, pa.string()), name), UNKNOWN_MODEL),
            **{f: _count_array(edges.column(f)) for f in _THREAD_FIELDS}})
        for (sid, model), tokens in _sums(by, ["s", "m"]).items():
            models.setdefault(sid, {})[model] = tokens
        advised = _advised(edges.append_column("__s", owner))
        for e in advised.select(["__s", ADVISOR_MODEL, *ADVISOR_FIELDS]).to_pylist():
            # The advisor's tokens: its model's, and part of the session's whole usage.
            tokens = Tokens.advisor(e)
            if tokens.total():
                add_model(models, e["__s"], e[ADVISOR_MODEL], tokens)
                totals[e["__s"]] = totals.get(e["__s"], Tokens()) + tokens
    for sid, total in totals.items():
        per = models.setdefault(sid, {})
        rest = total - add_all(per.values()) if per else total
        if any(rest.astuple()):  # usage on rows naming no model
            per[UNKNOWN_MODEL] = per.get(UNKNOWN_MODEL, Tokens()) + rest
    return {sid: totals[sid] for sid in totals}, models


def _count_array(col: pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
    """A token column as int64 counts (:func:`counts`), staying in Arrow for integers."""
    if pa.types.is_integer(col.type):
        return pc.fill_null(col, 0).cast(pa.int64())
    if col.null_count == len(col):  # a sparse property the snapshot lacks
        return pa.repeat(pa.scalar(0, pa.int64()), len(col))
    return pa.array(counts(col), pa.int64())


def _sums(t: pa.Table, keys: list[str]) -> dict[Any, Tokens]:
    """The token columns of ``t`` summed per ``keys`` (one key: its value; more: a tuple)."""
    g = t.group_by(keys).aggregate([(f, "sum") for f in _THREAD_FIELDS])
    cols = [g.column(f"{f}_sum").to_pylist() for f in _THREAD_FIELDS]
    ids = list(zip(*(g.column(k).to_pylist() for k in keys), strict=True))
    return {(k[0] if len(keys) == 1 else k): Tokens(*c)
            for k, *c in zip(ids, *cols, strict=True)}
