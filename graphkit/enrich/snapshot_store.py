"""Lineage answers straight from a snapshot's Arrow tables.

Loading a 100k-thread snapshot into NetworkX takes seconds; a single
``graphkit lineage`` at the prompt should not. This reader reads only the
columns lineage needs and answers one id with a few vectorized filters,
exactly as :class:`~graphkit.enrich.networkx_store.NetworkXStore` does (same
ordering rules), without importing networkx. Whole-graph questions
(``sessions``, ``tree``) build Python indexes on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from graphkit.core.graph import LineageVocabulary
from graphkit.core.text import is_text
from graphkit.core.times import iso_texts
from graphkit.enrich.base import (
    ContinuationEdge,
    Hit,
    SessionSummary,
    ThreadInfo,
    plain,
    require_vocabulary,
    texts,
)
from graphkit.enrich.walk import descendant_ids, parent_chain_ids
from graphkit.snapshot.format import SnapshotError
from graphkit.snapshot.read import check_ends, manifest_lineage, read_manifest, read_table

# The columns read per role: the vocabulary's names first, display properties after.
_THREAD_SHOW = ("kind", "messages", "first_seen")
_SESSION_SHOW = ("messages", "first_seen", "last_seen")
_AGENT_SHOW = ("agent_type", "description")
_EMPTY_EDGES = pa.table({"source": pa.array([], pa.string()),
                         "target": pa.array([], pa.string())})
# Vectorized scans of a whole column answer the first few steps of a walk (one
# lineage at the prompt: no Python index of 100k edges to build). A walk that
# goes on (a chain 20k deep, `usage` over every session) would scan the whole
# column per step, quadratic in all: past this many steps the reader builds
# Python indexes once (O(rows)) and answers the rest from them.
_SCANS = 16


def _group(keys: list[Any], values: list[Any]) -> dict[Any, list[Any]]:
    out: dict[Any, list[Any]] = {}
    for a, b in zip(keys, values, strict=True):
        out.setdefault(a, []).append(b)
    return out


class SnapshotReader:
    """A snapshot folder as a store: a :class:`~graphkit.enrich.base.LineageReader` that
    answers from the snapshot's Arrow tables in place, reading only the tables a
    question needs (what the read commands use).

    Making one reads and checks the manifest and the Thread and Session tables
    (:class:`~graphkit.snapshot.format.SnapshotError` if the folder is no snapshot);
    ``directory`` (a str or a Path) is kept as a Path.

    >>> import tempfile
    >>> from pathlib import Path
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.snapshot import write_snapshot
    >>> from graphkit.queries.lineage import ancestors
    >>> d = Path(tempfile.mkdtemp()) / "snap"
    >>> _ = write_snapshot(example_graph(), d)
    >>> [r.id for r in ancestors(SnapshotReader(d), "ag-2")]
    ['ag-1', 'sess-1', 'sess-1']
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._manifest = read_manifest(self.directory)
        self._vocabulary = manifest_lineage(self._manifest)
        v = self.vocabulary
        self._tcols = ("id", v.thread_key, v.thread_session, *_THREAD_SHOW)
        self._threads = self._nodes(v.thread, self._tcols + tuple(v.thread_aliases),
                                    required=(v.thread_key,))
        self._scols = ("id", v.session_key, *_SESSION_SHOW)
        self._sessions = self._nodes(v.session, self._scols, required=(v.session_key,))
        self._parent = self._edges(v.parent)
        self._known(v.parent, self._parent, v.thread, self._threads, v.thread, self._threads)
        self._scans = 0  # vectorized scans so far (see _SCANS)
        self._tables: dict[tuple[str, str, tuple[str, ...]], pa.Table] = {}

    @property
    def vocabulary(self) -> LineageVocabulary:
        """What lineage walks in this snapshot (recorded in its manifest)."""
        return require_vocabulary(self._vocabulary,
                                  self._manifest.get("contract", {}).get("name"))

    def _nodes(self, node_type: str | None, wanted: tuple[str, ...],
               required: tuple[str, ...] = ()) -> pa.Table:
        info = self._manifest["nodes"].get(node_type) if node_type else None
        if not info:
            return pa.table({c: pa.array([], pa.string()) for c in wanted})
        # Checked against the manifest (size, sha256, rows); absent columns left out.
        t = read_table(self.directory, info, columns=list(dict.fromkeys(wanted)))
        for c in required:
            if c not in t.column_names:
                # The ids a user types: without them every answer would be made of nulls
                # (a manifest's lineage edited to name another column).
                raise SnapshotError(f"the manifest's lineage names the column {c!r}, which "
                                    f"{info['file']} lacks", path=str(self.directory),
                                    hint="the snapshot was changed after graphkit wrote it; "
                                         "rebuild it")
        for c in dict.fromkeys(wanted):
            if c not in t.column_names:
                t = t.append_column(c, pa.nulls(t.num_rows, pa.string()))
        return t

    def _edges(self, edge_type: str | None) -> pa.Table:
        info = self._manifest["edges"].get(edge_type) if edge_type else None
        if not info:
            return _EMPTY_EDGES
        return read_table(self.directory, info, columns=["source", "target"])

    def _known(self, edge_type: str | None, edges: pa.Table, source: str | None,
               sources: pa.Table, target: str | None, targets: pa.Table) -> None:
        """That the edges' ends are nodes of the tables read (see :func:`check_ends`)."""
        if not edge_type or edges.num_rows == 0:
            return
        check_ends(self.directory, edge_type, edges, "source", str(source), sources.column("id"))
        check_ends(self.directory, edge_type, edges, "target", str(target), targets.column("id"))

    # -- single-id questions: vectorized filters --------------------------
    def _thread_hits(self, mask: pa.ChunkedArray | pa.Array) -> list[Hit]:
        v = self.vocabulary
        t = self._threads.filter(mask)
        return [Hit(v.thread, i, tid, sid) for i, tid, sid in zip(
            t.column("id").to_pylist(), t.column(v.thread_key).to_pylist(),
            t.column(v.thread_session).to_pylist(), strict=True)]

    def _hits(self, nids: list[str]) -> dict[str, Hit]:
        if not nids:
            return {}
        mask = pc.is_in(self._threads.column("id"), value_set=pa.array(nids, pa.string()))
        return {h.node_id: h for h in self._thread_hits(mask)}

    def resolve(self, user_id: str) -> list[Hit]:
        """Threads whose id (or an alias such as ``agent_id``) is ``user_id``,
        and the Session with it."""
        v = self.vocabulary
        if not is_text(user_id):
            return []
        if not self._scanning() and self._lookup is not None:
            threads, sessions = self._lookup
            ids, keys, sids = self._thread_columns
            hits = [Hit(v.thread, ids[r], keys[r], sids[r]) for r in threads.get(user_id, ())]
            return hits + [Hit(v.session, i, user_id, user_id)
                           for i in sessions.get(user_id, ())]
        t = self._threads
        mask = pc.equal(t.column(v.thread_key), user_id)
        for alias in v.thread_aliases:
            mask = pc.or_kleene(mask, pc.equal(t.column(alias), user_id))
        hits = self._thread_hits(pc.fill_null(mask, False))
        hits += [Hit(v.session, i, user_id, user_id) for i in self._session_nodes(user_id)]
        return hits

    def _session_nodes(self, session_id: str) -> list[str]:
        """Node ids of the sessions keyed ``session_id``, in table order."""
        if not self._scanning() and self._lookup is not None:
            return list(self._lookup[1].get(session_id, ()))
        s = self._sessions.filter(pc.fill_null(
            pc.equal(self._sessions.column(self.vocabulary.session_key), session_id), False))
        return s.column("id").to_pylist()

    @cached_property
    def _thread_columns(self) -> tuple[list[Any], list[Any], list[Any]]:
        v = self.vocabulary
        return tuple(self._threads.column(c).to_pylist()
                     for c in ("id", v.thread_key, v.thread_session))

    @cached_property
    def _lookup(self) -> tuple[dict[str, list[int]], dict[str, list[str]]] | None:
        """Thread rows by every id a user types (key and aliases, each row once,
        in table order) and session node ids by key; ``None`` where a column is
        not text (there the scans' comparison rules apply, not a dict's)."""
        v = self.vocabulary
        cols = [self._threads.column(c) for c in (v.thread_key, *v.thread_aliases)]
        skey = self._sessions.column(v.session_key)
        if not all(pa.types.is_string(c.type) or pa.types.is_large_string(c.type)
                   for c in (*cols, skey)):
            return None
        found: dict[str, set[int]] = {}
        for col in cols:
            for row, value in enumerate(col.to_pylist()):
                if value is not None:
                    found.setdefault(value, set()).add(row)
        threads = {k: sorted(rows) for k, rows in found.items()}
        sessions = _group(skey.to_pylist(), self._sessions.column("id").to_pylist())
        sessions.pop(None, None)
        return threads, sessions

    def _scanning(self) -> bool:
        """Whether to answer this step with a vectorized scan (see :data:`_SCANS`)."""
        self._scans += 1
        return self._scans <= _SCANS

    @cached_property
    def _walk_index(self) -> dict[str, dict[str, list[Any]]]:
        src = self._parent.column("source").to_pylist()
        dst = self._parent.column("target").to_pylist()
        # down: a parent's children with their row number, to keep the table's order.
        return {"up": _group(src, dst), "down": _group(dst, list(enumerate(src)))}

    def _parents_of(self, nid: str) -> list[str]:
        if not self._scanning():
            return self._walk_index["up"].get(nid, [])
        mask = pc.equal(self._parent.column("source"), nid)
        return self._parent.filter(mask).column("target").to_pylist()

    def _children_of(self, level: list[str]) -> list[str]:
        if not self._scanning():
            down = self._walk_index["down"]
            # Edge table order within the level, as the filter gives it.
            return [c for _, c in sorted((i, c) for n in set(level)
                                         for i, c in down.get(n, []))]
        mask = pc.is_in(self._parent.column("target"), value_set=pa.array(level, pa.string()))
        return self._parent.filter(mask).column("source").to_pylist()

    def parent_chain(self, thread_node_id: str) -> list[Hit]:
        """Parent threads, nearest first."""
        chain = parent_chain_ids(thread_node_id, self._parents_of)
        hits = self._hits(chain)
        return [hits[n] for n in chain]

    def descendant_threads(self, thread_node_id: str) -> list[tuple[Hit, int]]:
        """Every thread below, with its depth (1 = a direct child)."""
        below = descendant_ids(thread_node_id, self._children_of)
        hits = self._hits([n for n, _ in below])
        return [(hits[n], d) for n, d in below]

    # -- whole-graph questions: Python indexes, built once ------------------
    @cached_property
    def _session_edges(self) -> tuple[pa.Table, pa.Table, pa.Table]:
        """HAS_THREAD and HAS_AGENT edges and the Agent nodes, read and checked once:
        a snapshot whose edges name nodes it lacks is refused."""
        v = self.vocabulary
        agents = self._nodes(v.agent, ("id", *_AGENT_SHOW))
        th = self._threads
        has_thread, has_agent = self._edges(v.has_thread), self._edges(v.has_agent)
        self._known(v.has_thread, has_thread, v.session, self._sessions, v.thread, th)
        self._known(v.has_agent, has_agent, v.thread, th, v.agent, agents)
        return has_thread, has_agent, agents

    @cached_property
    def _index(self) -> dict[str, Any]:
        def pairs(t: pa.Table) -> list[tuple[str, str]]:
            return list(zip(t.column("source").to_pylist(), t.column("target").to_pylist(),
                            strict=True))

        def group(ps: list[tuple[str, str]]) -> dict[str, list[str]]:
            out: dict[str, list[str]] = {}
            for a, b in ps:
                out.setdefault(a, []).append(b)
            return out

        acols = ("id", *_AGENT_SHOW)
        th = self._threads
        has_thread, has_agent, agents = self._session_edges
        return {
            "thread": {r[0]: r[1:] for r in zip(*(th.column(c).to_pylist()
                                                  for c in self._tcols), strict=True)},
            "agent": {r[0]: r[1:] for r in zip(*(agents.column(c).to_pylist()
                                                 for c in acols), strict=True)},
            "parents": group(pairs(self._parent)),
            "has_thread": group(pairs(has_thread)),
            "has_agent": group(pairs(has_agent)),
        }

    def session_threads(self, session_id: str) -> list[ThreadInfo]:
        """All threads of a session, each with its parent's node id. The first few
        sessions asked (see :data:`_SCANS`) by Arrow joins: `tree` of one session of
        300k built a Python index of every thread first (2.8 s)."""
        if not is_text(session_id):
            return []
        if self._scanning():
            info, _ = self.session_thread_table([session_id])
            return [ThreadInfo(**r) for r in info.drop_columns(["session"]).to_pylist()]
        idx = self._index
        out: list[ThreadInfo] = []
        for snid in self._session_nodes(session_id):
            for tnid in idx["has_thread"].get(snid, []):
                thread_id, _sid, kind, messages, first = idx["thread"][tnid]
                parents = sorted(idx["parents"].get(tnid, []))
                agents = idx["has_agent"].get(tnid, [])
                agent_type, description = (idx["agent"].get(agents[0], (None, None))
                                           if agents else (None, None))
                out.append(ThreadInfo(node_id=tnid, id=thread_id,
                                      parent_node_id=parents[0] if parents else None,
                                      kind=kind, agent_type=agent_type,
                                      description=description, messages=messages,
                                      first_seen=_iso(first)))
        return out

    def _session_rows(self, session_ids: Sequence[str]) -> pa.Table:
        """The HAS_THREAD edges of the sessions keyed ``session_ids``, with ``session``
        (the key's position), in :meth:`session_threads`' order: session by session,
        each session's nodes in table order, each node's threads in edge order."""
        v = self.vocabulary
        s = self._sessions
        has_thread = self._session_edges[0]
        keys = pa.array(texts(session_ids), pa.string())
        skey = s.column(v.session_key)
        if not (pa.types.is_string(skey.type) or pa.types.is_large_string(skey.type)):
            skey = pa.chunked_array([pa.array([k if is_text(k) else None
                                               for k in skey.to_pylist()], pa.string())])
        pos = pc.index_in(skey, value_set=keys)
        chosen, chosen_pos = s.filter(pc.is_valid(pos)), pos.filter(pc.is_valid(pos))
        edges = has_thread.append_column("row", pa.array(range(has_thread.num_rows),
                                                         pa.int64()))
        srow = pc.index_in(edges.column("source"), value_set=chosen.column("id")
                           .combine_chunks())
        edges = edges.append_column("srow", srow).filter(pc.is_valid(srow))
        edges = edges.append_column("session", pc.take(chosen_pos, edges.column("srow")))
        return edges.take(pc.sort_indices(edges, sort_keys=[
            ("session", "ascending"), ("srow", "ascending"), ("row", "ascending")]))

    def session_thread_table(self, session_ids: Sequence[str],
                             columns: Sequence[str] = ()) -> tuple[pa.Table, pa.Table]:
        """:meth:`session_threads` of every session in ``session_ids`` (distinct
        ids; an id naming no session has no rows) by Arrow joins: ``usage`` over 300k
        sessions spent most of its time resolving, indexing and making Python values
        one session at a time.

        Two tables, row for row: the threads as ``session`` (the position of their
        session's id in ``session_ids``) and :class:`ThreadInfo`'s fields (``node_id``,
        ``id``, ``parent_node_id``, ``kind``, ``agent_type``, ``description``,
        ``messages``, ``first_seen`` as ISO text), in the order :meth:`session_threads`
        gives them session by session; and the Thread table's ``columns`` for the
        same rows."""
        v = self.vocabulary
        th = self._threads
        _, has_agent, agents = self._session_edges
        edges = self._session_rows(session_ids)
        nids = edges.column("target").combine_chunks()
        trow = pc.index_in(nids, value_set=th.column("id").combine_chunks())
        # A thread's parent: the smallest of its parents' node ids (as sorted()[0]).
        # Only the edges of these threads are grouped: one session at the prompt.
        parents = self._parent.filter(pc.is_in(self._parent.column("source"), value_set=nids)) \
            .group_by("source").aggregate([("target", "min")])
        parent = pc.take(parents.column("target_min"),
                         pc.index_in(nids, value_set=parents.column("source").combine_chunks()))
        # Its agent: its first HAS_AGENT edge's, in edge order.
        mine = pc.is_in(has_agent.column("source"), value_set=nids)
        first = pa.table({"source": has_agent.column("source"),
                          "row": pa.array(range(has_agent.num_rows), pa.int64())}) \
            .filter(mine).group_by("source").aggregate([("row", "min")])
        arow = pc.take(first.column("row_min"),
                       pc.index_in(nids, value_set=first.column("source").combine_chunks()))
        agent = pc.index_in(pc.take(has_agent.column("target"), arow),
                            value_set=agents.column("id").combine_chunks())
        info = pa.table({
            "session": edges.column("session"), "node_id": nids,
            "id": pc.take(th.column(v.thread_key), trow),
            "parent_node_id": parent,
            "kind": pc.take(th.column("kind"), trow),
            "agent_type": pc.take(agents.column(_AGENT_SHOW[0]), agent),
            "description": pc.take(agents.column(_AGENT_SHOW[1]), agent),
            "messages": pc.take(th.column("messages"), trow),
            "first_seen": pa.array(iso_texts(pc.take(th.column("first_seen"), trow)),
                                   pa.string()),
        })
        extra = self._table("nodes", v.thread, ["id", *columns])
        if extra is None:  # pragma: no cover - there are threads, so there is a table
            extra = pa.table({c: pa.nulls(0, pa.string()) for c in ["id", *columns]})
        extra = extra.take(pc.index_in(nids, value_set=extra.column("id").combine_chunks()))
        return info, extra.select(list(columns))

    def node_table(self, node_type: str, columns: Sequence[str]) -> pa.Table | None:
        """The nodes of one type as an Arrow table of ``id`` and ``columns``, in
        table order (a column the nodes lack is null); None without such nodes."""
        return self._table("nodes", node_type, ["id", *columns])

    def edge_table(self, edge_type: str, source_type: str, target_type: str,
                   columns: Sequence[str]) -> pa.Table | None:
        """The edges :meth:`edge_rows` answers, as an Arrow table of ``source``,
        ``target`` and ``columns`` in table order; None without such edges."""
        info = self._manifest["edges"].get(edge_type)
        if not info or (info.get("source_type", source_type),
                        info.get("target_type", target_type)) != (source_type, target_type):
            return None
        return self._table("edges", edge_type, ["source", "target", *columns])

    def sessions(self) -> list[SessionSummary]:
        """One summary per Session node. Counted by Arrow, not through :attr:`_index`:
        building that index (every thread's row as Python values) and a datetime per
        time was 5 of the 5.6 s of ``graphkit sessions`` over 300k sessions."""
        s = self._sessions
        has_thread, has_agent, _agents = self._session_edges
        # A session's agents: its threads with a parent or an agent (as _index counts).
        child = pc.or_(pc.is_in(has_thread.column("target"), value_set=self._parent.column(
            "source").combine_chunks()), pc.is_in(has_thread.column("target"),
                                                  value_set=has_agent.column(
                                                      "source").combine_chunks()))
        per = pa.table({"s": has_thread.column("source"), "a": child.cast(pa.int64())}) \
            .group_by("s").aggregate([([], "count_all"), ("a", "sum")])
        at = pc.index_in(s.column("id"), value_set=per.column("s").combine_chunks())
        threads = pc.fill_null(pc.take(per.column("count_all"), at), 0).to_pylist()
        agent_counts = pc.fill_null(pc.take(per.column("a_sum"), at), 0).to_pylist()
        _nid, sid, messages, first, last = self._scols
        firsts = iso_texts(s.column(first))
        out = [SessionSummary(session_id=i, threads=n, agents=a, messages=int(m or 0),
                              first_seen=f, last_seen=la)
               for i, n, a, m, f, la in zip(
                   s.column(sid).to_pylist(), threads, agent_counts,
                   s.column(messages).to_pylist(), firsts, iso_texts(s.column(last)),
                   strict=True)]
        # In the order queries.lineage.sessions sorts them (first seen, then id), so its
        # sort finds them sorted: a sort of 300k out of order took 0.6 s.
        keys = pa.table({"f": pa.array(firsts, pa.string()).fill_null(""),
                         "i": s.column(sid).cast(pa.string())})
        order = pc.sort_indices(keys, sort_keys=[("f", "ascending"), ("i", "ascending")])
        return [out[r] for r in order.to_pylist()]

    # -- generic tables: the columns asked for, read in place -----------------
    def _table(self, kind: str, type_name: str, columns: list[str]) -> pa.Table | None:
        info = self._manifest[kind].get(type_name)
        if not info:
            return None
        key = (kind, type_name, tuple(dict.fromkeys(columns)))
        if key in self._tables:
            # Read once per reader: `usage` asks the same table for every session.
            return self._tables[key]
        # Checked against the manifest like every other read; absent columns left out.
        t = read_table(self.directory, info, columns=list(key[2]))
        for c in key[2]:
            if c not in t.column_names:
                t = t.append_column(c, pa.nulls(t.num_rows, pa.string()))
        self._tables[key] = t
        return t

    def node_rows(self, node_type: str, columns: Sequence[str],
                  where: tuple[str, Sequence[str]] | None = None) -> list[dict[str, Any]]:
        """The nodes of one type with ``columns``, ordered by id."""
        cols = ["id", *columns]
        t = self._table("nodes", node_type, cols + ([where[0]] if where else []))
        if t is None:
            return []
        if where is not None:
            values = pa.array(texts(where[1]), pa.string())
            t = t.filter(pc.is_in(t.column(where[0]).cast(pa.string()), value_set=values))
        return _rows(t.sort_by([("id", "ascending")]), cols)

    def edge_rows(self, edge_type: str, source_type: str, target_type: str,
                  columns: Sequence[str], sources: Sequence[str] | None = None,
                  targets: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The edges of one type with ``columns``, ordered by (source, target)."""
        info = self._manifest["edges"].get(edge_type)
        if not info or (info.get("source_type", source_type),
                        info.get("target_type", target_type)) != (source_type, target_type):
            return []
        cols = ["source", "target", *columns]
        t = self._table("edges", edge_type, cols)
        if t is None:
            return []
        for end, ids in (("source", sources), ("target", targets)):
            if ids is not None:
                t = t.filter(pc.is_in(t.column(end), value_set=pa.array(texts(ids),
                                                                            pa.string())))
        return _rows(t.sort_by([("source", "ascending"), ("target", "ascending")]), cols)

    def continuation_edges(self, session_id: str, *, up: bool) -> list[ContinuationEdge]:
        """Every ``continues`` edge whose near end is reachable from the session
        ``session_id`` (a :class:`~graphkit.enrich.base.ContinuationEdgeReader`):
        the edge table read and indexed once, where a walk through
        :meth:`edge_rows` filtered and sorted the whole table per level
        (quadratic along a chain of 20k resumes)."""
        v = self.vocabulary
        if not v.continues or not is_text(session_id):
            return []
        starts = self._session_nodes(session_id)
        info = self._manifest["edges"].get(v.continues)
        if not starts or not info or (info.get("source_type", v.session),
                                      info.get("target_type", v.session)) != (v.session,
                                                                              v.session):
            return []
        t = self._table("edges", v.continues, ["source", "target", "how"])
        if t is None or t.num_rows == 0:
            return []
        near, far = ("source", "target") if up else ("target", "source")
        hows = [plain(h) for h in t.column("how").to_pylist()]
        by_near = _group(t.column(near).to_pylist(),
                         list(zip(t.column(far).to_pylist(), hows, strict=True)))
        found: list[tuple[str, str, str, Any]] = []
        for start in starts:
            seen, stack = {start}, [start]
            while stack:
                node = stack.pop()
                for other, how in by_near.get(node, ()):
                    found.append((start, node, other, how))
                    if other not in seen:
                        seen.add(other)
                        stack.append(other)
        fars = sorted({f for _, _, f, _ in found})
        s = self._sessions.filter(pc.is_in(self._sessions.column("id"),
                                           value_set=pa.array(fars, pa.string())))
        keys = dict(zip(s.column("id").to_pylist(), s.column(v.session_key).to_pylist(),
                        strict=True))
        return [ContinuationEdge(st, n, f, how, str(keys.get(f, f))) for st, n, f, how in found]


def _iso(value: Any) -> str | None:
    return None if value is None else value.isoformat()


def _rows(t: pa.Table, cols: list[str]) -> list[dict[str, Any]]:
    """``t``'s rows as dicts of ``cols``, values as every store answers them
    (:func:`plain`): only time columns are converted, the rest go as Arrow gives
    them (a call per value was a third of `usage` on a session of 50k threads)."""
    values = [t.column(c).to_pylist() for c in cols]
    for i, c in enumerate(cols):
        if pa.types.is_temporal(t.schema.field(c).type):
            values[i] = [plain(v) for v in values[i]]
    return [dict(zip(cols, r, strict=True)) for r in zip(*values, strict=True)]
