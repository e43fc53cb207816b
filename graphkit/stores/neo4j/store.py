"""Load a :class:`GraphTables` into a real Neo4j server and answer lineage questions there.

Loads are idempotent: every node is ``MERGE``d on its deterministic ``id``
(backed by a uniqueness constraint) and every relationship ``MERGE``d between
its two ends, so a rerun, or a rerun after a crash, converges to the same
graph. Rows go in ``UNWIND`` batches inside managed write transactions, which
the driver retries on transient failures.

Where to connect is a :class:`~graphkit.stores.neo4j.config.Neo4jConfig`
(from ``NEO4J_*`` variables, credentials never shown); how a table becomes
batch parameters, and a property value an Arrow column again, is
:mod:`graphkit.stores.neo4j.convert`.

``load(if_exists="replace")`` deletes the graph's labels, then loads. If it is
killed midway the database holds part of the new graph (and a
``GraphkitLoad`` marker node saying so) until the same command is run again:
that rerun deletes and loads again and converges to exactly the new graph.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow as pa

from graphkit.core.errors import StoreError, first_line
from graphkit.core.graph import (
    EDGE_SOURCE,
    EDGE_TARGET,
    NODE_ID,
    EdgeTable,
    GraphTables,
    LineageVocabulary,
    NodeTable,
)
from graphkit.core.progress import ProgressLike, Task, as_progress
from graphkit.core.text import is_text
from graphkit.stores.base import (
    ContinuationEdge,
    Hit,
    IfExists,
    LoadReport,
    SessionSummary,
    ThreadInfo,
    ThreadWalk,
    plain,
    require_vocabulary,
    texts,
)
from graphkit.stores.neo4j import convert, cypher, plan
from graphkit.stores.neo4j.config import Neo4jConfig, driver_module
from graphkit.stores.walk import descendant_ids, parent_chain_ids

IF_EXISTS_CHOICES: tuple[str, ...] = ("merge", "replace", "fail")

# Measured with `python -m bench.neo4j_load --repeat 2 --naive-rows 30000`
# (103,701 nodes + 214,802 relationships, fresh launcher per run, 2 shared
# cores, 1 GiB heap): best-of-2 rows/s by batch size 500: 20.9k, 1000: 21.8k,
# 2000: 23.0k, 5000: 25.5k, 10000: 18.6k, 20000: 15.5k; naive per-row MERGE
# 765 rows/s (33x slower than 5000). Flat from 500 to 5000 within the noise,
# worse above: bigger transactions cost heap and GC in the 1 GiB launcher.
DEFAULT_BATCH_SIZE = 5000
# Sessions writing at once. bench/NEO4J_LOAD.md's sweep (1M-row snapshot,
# server CPU s on a 2-core machine): 1 worker 63.8, 2 workers 71-77, 4
# workers 77.8; no retries. Every extra session costs server CPU (GC, JIT of
# concurrent paths), so the default fills 2 server cores and no more; a
# bigger server takes --workers N (the partitions never contend).
DEFAULT_WORKERS = 2

# The default contract's lineage vocabulary (what `--neo4j` queries walk).
DEFAULT_VOCABULARY = LineageVocabulary()


def lookup_indexes(v: LineageVocabulary | None) -> list[tuple[str, str]]:
    """(label, property) pairs the lineage reads look up by."""
    if v is None:
        return []
    return [(v.thread, p) for p in dict.fromkeys((v.thread_key, *v.thread_aliases,
                                                  v.thread_session))] + [
        (v.session, v.session_key)]


DEFAULT_INDEXES: tuple[tuple[str, str], ...] = tuple(lookup_indexes(DEFAULT_VOCABULARY))

# A node of this label exists while a replace-load runs; a killed one leaves it.
LOAD_MARKER = "GraphkitLoad"
# Labels of bookkeeping nodes that are no part of any graph, so never read back as one:
# the load marker, and the node the test suite leaves in a database it may clear.
TEST_DATABASE_MARKER = "GraphkitTestDatabase"
BOOKKEEPING_LABELS = frozenset({LOAD_MARKER, TEST_DATABASE_MARKER})

# The driver logs routing retries and server notifications (16 lines of
# Cypher for a query on a database without graphkit's labels) through
# `logging`; with no handler, Python prints WARNINGs to stderr. graphkit turns
# every failure into one StoreError line, so the driver's log stays quiet
# unless the application configures logging itself.
logging.getLogger("neo4j").addHandler(logging.NullHandler())


class Neo4jStore:
    """A Neo4j database holding graphkit graphs; a :class:`LineageReader`.

    Usage (needs a server, so not a doctest)::

        with Neo4jStore.from_env() as store:   # verifies the connection
            report = store.load(graph, if_exists="merge")
            store.parent_chain(store.resolve("agent-id")[0].node_id)
    """

    def __init__(
        self,
        config: Neo4jConfig | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        workers: int = DEFAULT_WORKERS,
        indexes: Sequence[tuple[str, str]] | None = None,
        max_retry_seconds: float = 30.0,
        vocabulary: LineageVocabulary | None = DEFAULT_VOCABULARY,
    ) -> None:
        self.config = config if config is not None else Neo4jConfig.from_env()
        self.config.check()
        driver = driver_module()
        if batch_size < 1:
            raise StoreError(f"batch size must be positive, got {batch_size}")
        self.batch_size = batch_size
        if workers < 1:
            raise StoreError(f"workers must be positive, got {workers}")
        self.workers = workers
        self._vocabulary = vocabulary
        self.indexes = tuple(indexes if indexes is not None else lookup_indexes(vocabulary))
        for label, prop in self.indexes:  # refuse bad names before touching the server
            cypher.property_index(label, prop)
        cfg = self.config
        auth = (cfg.user, cfg.password) if cfg.password is not None else None
        with self._errors():
            # Notifications off at the server: a query on a database without
            # graphkit's labels is a normal question (answer: nothing), not a
            # warning with the query text printed.
            self._driver = driver.GraphDatabase.driver(
                cfg.uri, auth=auth, max_transaction_retry_time=max_retry_seconds,
                notifications_min_severity="OFF",
            )
            self._bookmarks = driver.GraphDatabase.bookmark_manager()

    @classmethod
    def from_env(cls, **kwargs: Any) -> Neo4jStore:
        """A store configured from ``NEO4J_*`` (see :meth:`Neo4jConfig.from_env`)."""
        return cls(Neo4jConfig.from_env(), **kwargs)

    # --- lifecycle ----------------------------------------------------------

    def verify(self) -> None:
        """Fail now, with a one-line :class:`StoreError`, if the server, the
        credentials or the database are wrong."""
        # An auto-commit query, not a managed transaction: those retry an
        # unreachable server for max_retry_seconds, and a typo in NEO4J_URI
        # should fail at once.
        with self._errors(), self._session() as session:
            session.run("RETURN 1").consume()

    def close(self) -> None:
        """Close the driver and its connections."""
        self._driver.close()

    def __enter__(self) -> Neo4jStore:
        try:
            self.verify()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- loading ------------------------------------------------------------

    def load(
        self,
        graph: GraphTables,
        *,
        if_exists: IfExists = "merge",
        batch_size: int | None = None,
        workers: int | None = None,
        progress: ProgressLike = None,
    ) -> LoadReport:
        """Write ``graph``: schema first, then nodes, then relationships (``progress``
        hears records written of the total, batch by batch).

        ``if_exists``: ``merge`` upserts into what is there (a rerun converges);
        ``replace`` first deletes every node with one of the graph's labels;
        ``fail`` raises :class:`StoreError` if any such node exists.

        If the database then holds no node with any of the graph's labels, nodes
        and relationships are ``CREATE``d (no lookup per row; the id constraints
        still refuse a duplicate), else ``MERGE``d; ``report.write_mode`` says
        which. Batches run in ``workers`` sessions at once: node batches freely,
        relationship batches split so that no two concurrent ones share a node
        (see :mod:`graphkit.stores.neo4j.plan`). ``progress`` gets one line per
        batch: records done/total and records/s.
        """
        if if_exists not in IF_EXISTS_CHOICES:
            raise StoreError(
                f"unknown if_exists {if_exists!r}", hint=f"use one of {IF_EXISTS_CHOICES}"
            )
        size = batch_size or self.batch_size
        n_workers = workers or self.workers
        if n_workers < 1:
            raise StoreError(f"workers must be positive, got {n_workers}")
        started = time.perf_counter()
        labels = sorted(graph.nodes)
        # Building every query first validates every name before anything is written.
        for lab in labels:
            cypher.merge_nodes(lab, convert.node_props(graph.nodes[lab].table))
        for t, e in sorted(graph.edges.items()):
            cypher.merge_relationships(t, e.source_type, e.target_type, convert.edge_props(e.table))
        convert.check_columns(graph)
        report = LoadReport(batch_size=size)
        if labels and if_exists == "fail":
            existing = {k: v for k, v in self.node_counts(labels).items() if v}
            if existing:
                raise StoreError(
                    "the database already holds this graph's labels "
                    + ", ".join(f"{k} ({v})" for k, v in existing.items()),
                    hint="load with --if-exists merge or replace",
                )
        with ThreadPoolExecutor(1, thread_name_prefix="graphkit-plan") as planner:
            # The relationship plan is NumPy work: it runs while the server
            # builds the schema and takes the nodes.
            planned = planner.submit(plan.edge_partitions, graph, n_workers)
            self.ensure_schema(labels)
            report.resumed_replace = self._marker_count() > 0
            if if_exists == "replace":
                self._write(cypher.create_load_marker(LOAD_MARKER), labels=labels)
                report.removed = self.delete_labels(labels)
            ends = sorted({*labels, *(e.source_type for e in graph.edges.values()),
                           *(e.target_type for e in graph.edges.values())})
            empty = not any(self._leader_counts(ends).values()) if ends else True
            report.write_mode = "create" if empty else "merge"
            report.workers = n_workers
            meter = _Meter(as_progress(progress).start(
                "loading Neo4j", unit="records",
                total=sum(graph.node_counts().values()) + sum(graph.edge_counts().values())))
            node_ids = np.full(plan.node_offsets(graph)[1], -1, np.int64)
            report.nodes = self._load_nodes(graph, empty, size, n_workers, meter, node_ids)
            self._load_edges(graph, planned.result(), empty, size, meter, report, node_ids)
        if if_exists == "replace":
            # Whole now, and so is any killed replace before this one. (A merge
            # cannot say so: labels a killed replace had not yet cleared still
            # hold the old graph's nodes, so only a replace clears the marker.)
            self._write(cypher.delete_load_markers(LOAD_MARKER))
        meter.task.done()
        report.seconds = time.perf_counter() - started
        return report

    def _load_nodes(self, graph: GraphTables, create: bool, size: int, n_workers: int,
                    meter: _Meter, node_ids: np.ndarray) -> dict[str, int]:
        """Every node batch, ``n_workers`` at a time (distinct ids never contend).

        Each batch returns its nodes' internal ids, kept in ``node_ids`` at the
        nodes' positions (:func:`plan.node_offsets`) for the relationships.
        """
        offsets, _ = plan.node_offsets(graph)
        jobs: list[tuple[str, str, int, pa.Table]] = []
        for label in sorted(graph.nodes):
            table = graph.nodes[label].table
            props, epoch = convert.node_props(table), convert.epoch_columns(table)
            # CREATE would refuse a second row with the same id: MERGE folds them.
            query = (cypher.create_nodes(label, props, epoch, node_ids=True)
                     if create and not plan.has_duplicate_ids(table)
                     else cypher.merge_nodes(label, props, epoch, node_ids=True))
            if epoch:
                table = convert.as_epoch(table, epoch)
            jobs += [(label, query, offsets[label] + i, table.slice(i, size))
                     for i in range(0, table.num_rows, size)]
        written = {label: 0 for label in sorted(graph.nodes)}

        def one(job: tuple[str, str, int, pa.Table]) -> tuple[str, int]:
            label, query, start, rows = job
            at, ids = self._write_ids(query, **convert.node_params(rows))
            node_ids[start + at] = ids
            meter.add(rows.num_rows, label)
            return label, len(at)

        with ThreadPoolExecutor(n_workers, thread_name_prefix="graphkit-load") as pool:
            for label, done in pool.map(one, jobs):
                written[label] += done
        return written

    def _load_edges(self, graph: GraphTables, load_plan: plan.LoadPlan, create: bool,
                    size: int, meter: _Meter, report: LoadReport,
                    node_ids: np.ndarray) -> None:
        """Each partition's relationship batches in one session, the partitions at once.

        Rows whose two ends this load wrote find them by internal id; the
        others (an end not among the graph's nodes) by label and id, as before.
        """
        by_id, by_key, tables = {}, {}, {}
        for etype, e in graph.edges.items():
            props, epoch = convert.edge_props(e.table), convert.epoch_columns(e.table)
            creating = create and etype not in load_plan.repeated_pairs
            by_id[etype] = cypher.relationships_by_node_id(
                etype, e.source_type, e.target_type, props, epoch, create=creating)
            by_key[etype] = (
                cypher.create_relationships(etype, e.source_type, e.target_type, props, epoch)
                if creating
                else cypher.merge_relationships(etype, e.source_type, e.target_type, props,
                                                epoch))
            tables[etype] = convert.as_epoch(e.table, epoch) if epoch else e.table
        parts = len(next(iter(load_plan.partitions.values()), [None]))
        failed = threading.Event()

        def write(etype: str, rows: np.ndarray) -> int:
            ends = load_plan.ends[etype]
            src, dst = ends.source[rows], ends.target[rows]
            s = np.where(src >= 0, node_ids[src], -1)
            t = np.where(dst >= 0, node_ids[dst], -1)
            known = (src >= 0) & (dst >= 0) & (s >= 0) & (t >= 0)
            done = 0
            if known.any():
                batch = tables[etype].take(pa.array(rows[known]))
                done += self._write(by_id[etype], s=s[known].tolist(), t=t[known].tolist(),
                                    **convert.edge_params(batch))
            if not known.all():
                batch = tables[etype].take(pa.array(rows[~known]))
                done += self._write(by_key[etype], **convert.edge_params(batch))
            return done

        def one_partition(p: int) -> dict[str, int]:
            written: dict[str, int] = {}
            for etype in sorted(graph.edges):
                rows = load_plan.partitions[etype][p]
                for i in range(0, len(rows), size):
                    if failed.is_set():  # another partition failed: stop early
                        return written
                    try:
                        done = write(etype, rows[i:i + size])
                    except BaseException:
                        failed.set()
                        raise
                    written[etype] = written.get(etype, 0) + done
                    meter.add(len(rows[i:i + size]), etype)
            return written

        totals = {etype: 0 for etype in sorted(graph.edges)}
        with ThreadPoolExecutor(parts, thread_name_prefix="graphkit-load") as pool:
            for written in pool.map(one_partition, range(parts)):
                for etype, done in written.items():
                    totals[etype] += done
        report.edges = totals
        for etype, edges in sorted(graph.edges.items()):
            if totals[etype] < edges.table.num_rows:
                report.skipped_edges[etype] = edges.table.num_rows - totals[etype]

    def _leader_counts(self, labels: Sequence[str]) -> dict[str, int]:
        """:meth:`node_counts` read on the cluster leader (a write transaction):
        a follower that lags behind could call a database empty that is not."""

        def work(tx: Any) -> dict[str, int]:
            return {r["label"]: r["count"] for r in tx.run(cypher.count_nodes(labels))}

        with self._errors(), self._session() as session:
            return dict(session.execute_write(work))

    def _marker_count(self) -> int:
        return int(self._read(cypher.count_nodes([LOAD_MARKER]))[0]["count"])

    def interrupted_load(self) -> bool:
        """True if a ``replace`` load was killed and not yet run again: the graph
        in the database is incomplete until it is."""
        return self._marker_count() > 0

    def ensure_schema(self, labels: Sequence[str]) -> None:
        """Uniqueness on ``id`` for every label, the lookup indexes, then wait for them."""
        statements = [cypher.unique_id_constraint(lab) for lab in labels]
        statements += [cypher.property_index(lab, prop) for lab, prop in self.indexes]
        for statement in statements:
            self._run_auto(statement)
        self._run_auto(cypher.AWAIT_INDEXES, seconds=300)

    def delete_labels(self, labels: Sequence[str], batch_size: int | None = None) -> int:
        """Detach-delete every node with one of ``labels``, a batch per transaction."""
        limit = batch_size or self.batch_size
        total = 0
        for label in labels:
            query = cypher.delete_nodes_batch(label)
            while True:
                deleted = self._write(query, limit=limit)
                total += deleted
                if deleted < limit:
                    break
        return total

    def node_counts(self, labels: Sequence[str]) -> dict[str, int]:
        """Number of nodes per label (0 for an absent label)."""
        if not labels:
            return {}
        rows = self._read(cypher.count_nodes(labels))
        return {r["label"]: r["count"] for r in rows}

    def relationship_counts(self, rel_types: Sequence[str]) -> dict[str, int]:
        """Number of relationships per type (0 for an absent type)."""
        if not rel_types:
            return {}
        rows = self._read(cypher.count_relationships(rel_types))
        return {r["type"]: r["count"] for r in rows}

    # --- LineageReader ------------------------------------------------------

    @property
    def vocabulary(self) -> LineageVocabulary:
        """What lineage walks here: the default contract's unless given."""
        return require_vocabulary(self._vocabulary, None)

    def resolve(self, user_id: str) -> list[Hit]:
        """Threads whose ``thread_id`` or ``agent_id`` is ``user_id``; Sessions whose
        ``session_id`` is."""
        if not is_text(user_id):
            return []  # not UTF-8: the driver cannot send it, and it names nothing
        rows = self._read(cypher.resolve(self.vocabulary), id=user_id)
        hits = [Hit(r["type"], r["node_id"], r["id"], r["session_id"]) for r in rows]
        return sorted(hits, key=lambda h: (h.type, h.id, h.node_id))

    def parent_chain(self, thread_node_id: str) -> list[Hit]:
        """Ancestor threads along PARENT_THREAD, nearest first (the walking
        rules are :mod:`graphkit.stores.walk`'s; one query fetches the edges)."""
        rows = self._read(cypher.parent_edges(self.vocabulary), id=thread_node_id)
        return self._parents(thread_node_id, [self._edge(r["child"], r["node_id"], r)
                                              for r in rows])

    def descendant_threads(self, thread_node_id: str) -> list[tuple[Hit, int]]:
        """Threads below along reversed PARENT_THREAD, each once at its smallest
        depth, ordered by depth then id."""
        rows = self._read(cypher.child_edges(self.vocabulary), id=thread_node_id)
        return self._descendants(thread_node_id, [self._edge(r["parent"], r["node_id"], r)
                                                  for r in rows])

    def thread_walk(self, thread_node_id: str, session_id: str) -> ThreadWalk:
        """:meth:`parent_chain`, :meth:`descendant_threads` and the session's
        :meth:`continuation_edges` upward, in one round trip
        (:class:`~graphkit.stores.base.ThreadWalkReader`)."""
        rows = self._read(cypher.thread_walk(self.vocabulary), id=thread_node_id,
                          session=session_id)
        return self._walk(thread_node_id, rows)

    def lineage_walk(self, user_id: str) -> tuple[list[Hit], ThreadWalk | None]:
        """:meth:`resolve` and, for an id naming one thread, :meth:`thread_walk`,
        in one round trip (:class:`~graphkit.stores.base.LineageWalkReader`)."""
        if not is_text(user_id):
            return [], None
        rows = self._read(cypher.lineage_walk(self.vocabulary), id=user_id)
        found = next((r["hits"] for r in rows if r["dir"] == "hits"), None) or []
        hits = sorted((Hit(h["type"], h["node_id"], h["id"], h["session_id"]) for h in found),
                      key=lambda h: (h.type, h.id, h.node_id))
        threads = {h.node_id for h in hits if h.type == self.vocabulary.thread}
        if len(threads) != 1:
            return hits, None
        return hits, self._walk(threads.pop(), [r for r in rows if r["dir"] != "hits"])

    def _walk(self, thread_node_id: str, rows: list[dict[str, Any]]) -> ThreadWalk:
        """A :class:`ThreadWalk` from :func:`cypher.thread_walk`'s rows."""
        up = [self._edge(r["near"], r["far"], r) for r in rows if r["dir"] == "up"]
        down = [self._edge(r["near"], r["far"], r) for r in rows if r["dir"] == "down"]
        return ThreadWalk(
            self._parents(thread_node_id, up),
            self._descendants(thread_node_id, down),
            [ContinuationEdge(r["start"], r["near"], r["far"], plain(r["how"]), str(r["id"]))
             for r in rows if r["dir"] == "continues"])

    def _edge(self, near: str, far: str, row: dict[str, Any]) -> tuple[str, Hit]:
        """A fetched parent edge: its end nearer the start, the far thread's hit."""
        return near, Hit(self.vocabulary.thread, far, row["id"], row["session_id"])

    @staticmethod
    def _parents(start: str, edges: list[tuple[str, Hit]]) -> list[Hit]:
        """The parent chain over fetched edges (child node id, parent's hit)."""
        parents: dict[str, list[str]] = {}
        hits: dict[str, Hit] = {}
        for child, hit in edges:
            parents.setdefault(child, []).append(hit.node_id)
            hits[hit.node_id] = hit
        return [hits[n] for n in parent_chain_ids(start, parents.get)]

    @staticmethod
    def _descendants(start: str, edges: list[tuple[str, Hit]]) -> list[tuple[Hit, int]]:
        """Descendants over fetched edges (parent node id, child's hit)."""
        children: dict[str, list[str]] = {}
        hits: dict[str, Hit] = {}
        for parent, hit in edges:
            children.setdefault(parent, []).append(hit.node_id)
            hits[hit.node_id] = hit
        below = descendant_ids(
            start, lambda level: [c for n in level for c in children.get(n, [])])
        out = [(hits[n], d) for n, d in below]
        return sorted(out, key=lambda hd: (hd[1], hd[0].id, hd[0].node_id))

    def continuation_edges(self, session_id: str, *, up: bool) -> list[ContinuationEdge]:
        """Every continuation edge reachable from a session, in one round trip
        (:class:`~graphkit.stores.base.ContinuationEdgeReader`); none when the
        vocabulary names no continuation edge."""
        v = self.vocabulary
        if not v.continues or not is_text(session_id):
            return []
        rows = self._read(cypher.continuation_edges(v, v.continues, up=up), id=session_id)
        return [ContinuationEdge(r["start"], r["near"], r["far"], plain(r["how"]),
                                 str(r["key"])) for r in rows]

    def session_threads(self, session_id: str) -> list[ThreadInfo]:
        """The threads of a session with their parent's node id and agent facts."""
        if not is_text(session_id):
            return []
        rows = self._read(cypher.session_threads(self.vocabulary), id=session_id)
        return [
            ThreadInfo(
                node_id=r["node_id"],
                id=r["id"],
                parent_node_id=r["parent_node_id"],
                kind=r["kind"],
                agent_type=r["agent_type"],
                description=r["description"],
                messages=r["messages"],
                first_seen=convert.iso_text(r["first_seen"]),
            )
            for r in rows
        ]

    def sessions(self) -> list[SessionSummary]:
        """One summary per Session node, ordered by session id."""
        return [
            SessionSummary(
                session_id=r["session_id"],
                threads=r["threads"],
                agents=r["agents"],
                messages=r["messages"],
                first_seen=convert.iso_text(r["first_seen"]),
                last_seen=convert.iso_text(r["last_seen"]),
            )
            for r in self._read(cypher.sessions(self.vocabulary))
        ]

    def node_rows(self, node_type: str, columns: Sequence[str],
                  where: tuple[str, Sequence[str]] | None = None) -> list[dict[str, Any]]:
        """The nodes of one type with ``columns``, ordered by id."""
        query = cypher.node_rows(node_type, columns, where[0] if where else None)
        rows = self._read(query, values=texts(where[1]) if where else [])
        out = [{NODE_ID: r["id"], **{c: plain(v) for c, v in zip(columns, r["vals"],
                                                                  strict=True)}}
               for r in rows]
        return sorted(out, key=lambda r: r[NODE_ID])

    def edge_rows(self, edge_type: str, source_type: str, target_type: str,
                  columns: Sequence[str], sources: Sequence[str] | None = None,
                  targets: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The edges of one type with ``columns``, ordered by (source, target)."""
        query = cypher.edge_rows(edge_type, source_type, target_type, columns,
                                 from_sources=sources is not None,
                                 to_targets=targets is not None)
        rows = self._read(query, sources=texts(sources or []), targets=texts(targets or []))
        out = [{EDGE_SOURCE: r["source"], EDGE_TARGET: r["target"],
                **{c: plain(v) for c, v in zip(columns, r["vals"], strict=True)}}
               for r in rows]
        # Python's string order, as the other stores (Cypher's may differ).
        return sorted(out, key=lambda r: (r[EDGE_SOURCE], r[EDGE_TARGET]))

    def node_properties(self, label: str, key: str,
                        values: Sequence[str]) -> list[dict[str, Any]]:
        """All properties of the ``label`` nodes whose ``key`` is one of ``values``
        (times as ISO text, as the other stores give them)."""
        rows = self._read(cypher.node_properties(label, key), values=texts(values))
        return [{k: convert.iso_text(v) if hasattr(v, "to_native") else v
                 for k, v in r["p"].items()} for r in rows]

    # --- driver plumbing ----------------------------------------------------

    def _write(self, query: str, **params: Any) -> int:
        """One managed write transaction (retried by the driver); returns its count."""

        def work(tx: Any) -> int:
            record = tx.run(query, params).single()
            return int(record[0]) if record is not None else 0

        with self._errors(), self._session() as session:
            return int(session.execute_write(work))

    def _write_ids(self, query: str, **params: Any) -> tuple[np.ndarray, np.ndarray]:
        """One managed write of a node batch built with ``node_ids=True``
        (:func:`cypher.merge_nodes`): the rows it wrote (positions in the batch)
        and their nodes' internal ids."""

        def work(tx: Any) -> tuple[list[int], list[int]]:
            record = tx.run(query, params).single()
            return (list(record["rows"]), list(record["node_ids"])) if record else ([], [])

        with self._errors(), self._session() as session:
            rows, ids = session.execute_write(work)
        return np.asarray(rows, np.int64), np.asarray(ids, np.int64)

    def _read(self, query: str, **params: Any) -> list[dict[str, Any]]:
        """One read query in an auto-commit transaction, retried on a transient
        failure (a read is safe to repeat). Not a managed transaction: its
        COMMIT is a second round trip per query, and lineage asks four or five
        short questions (measured 4.1 vs 1.6 ms a query on this machine)."""
        for attempt in range(_READ_ATTEMPTS):
            try:
                with self._session(read=True) as session:
                    return [r.data() for r in session.run(query, params)]
            except Exception as exc:
                if attempt + 1 < _READ_ATTEMPTS and _retryable(exc):
                    time.sleep(0.05 * 2 ** attempt)
                    continue
                with self._errors():
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _run_auto(self, query: str, **params: Any) -> None:
        # Schema commands and procedures: an auto-commit transaction of their own.
        with self._errors(), self._session() as session:
            session.run(query, params).consume()

    def _session(self, *, read: bool = False) -> Any:
        # One bookmark manager for every session: on a cluster a read follows
        # the writes of the same store (causal consistency) even when parallel
        # write sessions made them. Read sessions may go to a read replica.
        return self._driver.session(database=self.config.database,
                                    bookmark_manager=self._bookmarks,
                                    default_access_mode="READ" if read else "WRITE")

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Turn driver failures into one-line :class:`StoreError`s (never the password)."""
        try:
            yield
        except StoreError:
            raise
        except Exception as exc:
            error = self._classify(exc)
            if error is None:
                raise  # not the driver's: a bug, keep the traceback
            raise error from None

    def _classify(self, exc: Exception) -> StoreError | None:
        """The one-line error for a driver failure, credentials redacted; None if
        ``exc`` is not one."""
        from neo4j.exceptions import (
            AuthError,
            ConfigurationError,
            DriverError,
            Neo4jError,
            ServiceUnavailable,
            SessionExpired,
        )

        where = self.config.display_uri
        detail = self.config.redact(first_line(exc, 300))
        if isinstance(exc, AuthError):
            return StoreError(
                f"Neo4j at {where} refused the credentials of user {self.config.user!r}",
                hint="check NEO4J_USERNAME and NEO4J_PASSWORD",
            )
        if isinstance(exc, ServiceUnavailable | SessionExpired):
            return StoreError(
                f"cannot reach Neo4j at {where} ({detail})",
                hint="is the server running? set NEO4J_URI, or start one: graphkit neo4j-server",
            )
        if isinstance(exc, Neo4jError):
            code = exc.code or ""
            if code.endswith("DatabaseNotFound"):
                return StoreError(
                    f"Neo4j at {where} has no database {self.config.database!r}",
                    hint="check NEO4J_DATABASE (Community has one user database, 'neo4j')",
                )
            return StoreError(f"Neo4j at {where} failed: {code}: {detail}")
        if isinstance(exc, ConfigurationError | ValueError):
            return StoreError(f"bad Neo4j settings for {where}: {detail}")
        if isinstance(exc, DriverError | OSError):
            return StoreError(f"Neo4j driver error for {where}: {detail}")
        return None

    # --- reading a whole graph back (graphkit snapshot --neo4j) --------------

    def read_graph(self, labels: Sequence[str] | None = None,
                   rel_types: Sequence[str] | None = None) -> GraphTables:
        """Every node and relationship in the database (or only those with
        ``labels`` / of ``rel_types``) as tables.

        A node's ``id`` property is its id (its ``elementId`` if it has none).
        Column types come from the values the driver returns: integers int64,
        floats float64, datetimes ``timestamp[us, tz=UTC]``, local datetimes
        ``timestamp[us]``, dates ``date32``, lists as lists; a property whose
        values mix types is text. Keys and the contract are unknown here
        (empty, ``"neo4j"``): :mod:`graphkit.export.from_neo4j` restores them
        from a contract.
        """
        # The token lists keep names whose nodes were all deleted: keep those in use.
        if labels is None:
            labels = [r["label"] for r in self._read(
                "CALL db.labels() YIELD label RETURN label ORDER BY label")
                if r["label"] not in BOOKKEEPING_LABELS
                and self._read(f"MATCH (n:{cypher.quote_name(r['label'])}) RETURN 1 LIMIT 1")]
        if rel_types is None:
            rel_types = [r["t"] for r in self._read(
                "CALL db.relationshipTypes() YIELD relationshipType AS t RETURN t ORDER BY t")
                if self._read(f"MATCH ()-[:{cypher.quote_name(r['t'], 'relationship type')}]->()"
                              " RETURN 1 LIMIT 1")]
        for name in labels:
            cypher.quote_name(name)
        for name in rel_types:
            cypher.quote_name(name, "relationship type")
        graph = GraphTables("neo4j", 0, 0, "thread")
        for label in labels:
            graph.nodes[label] = NodeTable(label, (), self._read_nodes(label))
        for rel_type in rel_types:
            graph.edges[rel_type] = self._read_relationships(rel_type)
        return graph

    def _read_nodes(self, label: str) -> pa.Table:
        query = (f"MATCH (n:{cypher.quote_name(label)}) "
                 "RETURN coalesce(n.id, elementId(n)) AS id, properties(n) AS p ORDER BY id")

        def work(tx: Any) -> tuple[list[str], list[dict[str, Any]]]:
            ids, props = [], []
            for r in tx.run(query):
                ids.append(r["id"])
                props.append({k: v for k, v in r["p"].items() if k != NODE_ID})
            return ids, props

        with self._errors(), self._session() as session:
            ids, props = session.execute_read(work)
        return convert.property_table({NODE_ID: pa.array(ids, pa.string())}, props)

    def _read_relationships(self, rel_type: str) -> EdgeTable:
        query = (f"MATCH (a)-[r:{cypher.quote_name(rel_type, 'relationship type')}]->(b) "
                 "RETURN coalesce(a.id, elementId(a)) AS s, coalesce(b.id, elementId(b)) AS t, "
                 "labels(a) AS sl, labels(b) AS tl, properties(r) AS p ORDER BY s, t")

        def work(tx: Any) -> tuple[list[str], list[str], set[tuple[str, str]],
                                   list[dict[str, Any]]]:
            src, dst, ends, props = [], [], set(), []
            for r in tx.run(query):
                src.append(r["s"])
                dst.append(r["t"])
                ends.add((":".join(sorted(r["sl"])), ":".join(sorted(r["tl"]))))
                props.append(dict(r["p"]))
            return src, dst, ends, props

        with self._errors(), self._session() as session:
            src, dst, ends, props = session.execute_read(work)
        if len(ends) > 1:
            raise StoreError(
                f"relationships of type {rel_type} join several label pairs "
                f"({', '.join(f'{a}->{b}' for a, b in sorted(ends))}); a graphkit edge type "
                "joins one", hint="name the relationship types to read")
        source_type, target_type = next(iter(ends)) if ends else ("", "")
        table = convert.property_table({EDGE_SOURCE: pa.array(src, pa.string()),
                                 EDGE_TARGET: pa.array(dst, pa.string())}, props)
        return EdgeTable(rel_type, source_type, target_type, table)


# Tries of a read that failed transiently (a leader switch, a lock timeout).
_READ_ATTEMPTS = 3


def _retryable(exc: Exception) -> bool:
    """Whether the driver calls ``exc`` transient (worth running the read again)."""
    check = getattr(exc, "is_retryable", None)
    return bool(check()) if callable(check) else False


class _Meter:
    """Records written so far, counted on a progress task after every batch (from
    any thread), with the label or type the batch wrote."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self._lock = threading.Lock()

    def add(self, records: int, what: str) -> None:
        with self._lock:
            self.task.set_source(what)
            self.task.advance(records)
