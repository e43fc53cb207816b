"""Load a :class:`GraphTables` into a real Neo4j server and answer lineage questions there.

Loads are idempotent: every node is ``MERGE``d on its deterministic ``id``
(backed by a uniqueness constraint) and every relationship ``MERGE``d between
its two ends, so a rerun, or a rerun after a crash, converges to the same
graph. Rows go in ``UNWIND`` batches inside managed write transactions, which
the driver retries on transient failures.

Where to connect is a :class:`~graphkit.enrich.neo4j.config.Neo4jConfig`
(from ``NEO4J_*`` variables, credentials never shown), the driver plumbing
:mod:`~graphkit.enrich.neo4j.connection`; how a load runs is
:mod:`~graphkit.enrich.neo4j.load`, how a table becomes batch parameters, and
a property value an Arrow column again, :mod:`~graphkit.enrich.neo4j.convert`;
reading a whole graph back is :mod:`~graphkit.enrich.neo4j.read_back`. This
module holds the store itself: its schema and the lineage questions.

Every load first commits a ``GraphkitLoad`` marker node and removes it when it has
written the whole graph. ``load(if_exists="replace")`` deletes the graph's labels,
then loads: killed midway, the database holds part of the new graph (and the
marker saying so) until the same command is run again, which deletes and loads
again and converges to exactly the new graph. A killed merge (or create) leaves
its marker too, until a merge of those labels finishes.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from graphkit.core.errors import StoreError
from graphkit.core.graph import (
    EDGE_SOURCE,
    EDGE_TARGET,
    NODE_ID,
    GraphTables,
    LineageVocabulary,
)
from graphkit.core.progress import ProgressLike
from graphkit.core.text import is_text
from graphkit.enrich.base import (
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
from graphkit.enrich.neo4j import convert, cypher, load, lock, read_back
from graphkit.enrich.neo4j.config import Neo4jConfig
from graphkit.enrich.neo4j.connection import Neo4jConnection
from graphkit.enrich.neo4j.load import IF_EXISTS_CHOICES, LOAD_MARKER
from graphkit.enrich.neo4j.read_back import TEST_DATABASE_MARKER
from graphkit.enrich.walk import descendant_ids, parent_chain_ids

# Where these names lived before the store was split; callers import them from here.
__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_WORKERS", "IF_EXISTS_CHOICES", "LOAD_MARKER",
           "TEST_DATABASE_MARKER", "Neo4jConfig", "Neo4jStore", "lookup_indexes"]

# Measured with `python -m bench.neo4j_load --repeat 2 --naive-rows 30000`
# (103,701 nodes + 214,802 relationships, fresh launcher per run, 2 shared
# cores, 1 GiB heap): best-of-2 rows/s by batch size 500: 20.9k, 1000: 21.8k,
# 2000: 23.0k, 5000: 25.5k, 10000: 18.6k, 20000: 15.5k; naive per-row MERGE
# 765 rows/s (33x slower than 5000). Flat from 500 to 5000 within the noise,
# worse above: bigger transactions cost heap and GC in the 1 GiB launcher.
DEFAULT_BATCH_SIZE = 5000
# Sessions writing at once. bench/NEO4J_LOAD.md at d9272aa's sweep (1M-row snapshot,
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


class Neo4jStore(Neo4jConnection):
    """A Neo4j database holding graphkit graphs; a :class:`LineageReader`.

    Making one connects to nothing; the first question (or ``with``) does, and an
    unreachable server is one :class:`~graphkit.core.errors.StoreError` line. Options
    are checked first.

    >>> Neo4jStore(batch_size=0)
    Traceback (most recent call last):
    ...
    graphkit.core.errors.StoreError: batch size must be positive, got 0

    With a server (``NEO4J_*`` set):

    >>> from graphkit.builds.run import example_graph
    >>> with Neo4jStore.from_env() as store:  # doctest: +SKIP
    ...     report = store.load(example_graph(), if_exists="merge")
    >>> report.nodes["Thread"]  # doctest: +SKIP
    5
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
        lock_wait: float | None = None,
    ) -> None:
        if batch_size < 1:
            raise StoreError(f"batch size must be positive, got {batch_size}")
        self.batch_size = batch_size
        if workers < 1:
            raise StoreError(f"workers must be positive, got {workers}")
        self.workers = workers
        # Seconds a load waits for another's load lock (None: GRAPHKIT_LOAD_LOCK_WAIT,
        # else lock.DEFAULT_LOCK_WAIT).
        self.lock_wait = lock.lock_wait_from_env() if lock_wait is None else lock_wait
        self._vocabulary = vocabulary
        self.indexes = tuple(indexes if indexes is not None else lookup_indexes(vocabulary))
        for label, prop in self.indexes:  # refuse bad names before touching the server
            cypher.property_index(label, prop)
        super().__init__(config, max_retry_seconds=max_retry_seconds)

    @classmethod
    def from_env(cls, **kwargs: Any) -> Neo4jStore:
        """A store configured from ``NEO4J_*`` (see :meth:`Neo4jConfig.from_env`)."""
        return cls(Neo4jConfig.from_env(), **kwargs)

    # --- loading ------------------------------------------------------------

    def load(
        self,
        graph: GraphTables,
        *,
        if_exists: IfExists = "merge",
        batch_size: int | None = None,
        workers: int | None = None,
        progress: ProgressLike = None,
        lock_wait: float | None = None,
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
        (see :mod:`graphkit.enrich.neo4j.plan`). ``progress`` gets one line per
        batch: records done/total and records/s.

        The load holds the database's load lock (:meth:`load_lock`), waiting for
        another load at most ``lock_wait`` seconds (default :attr:`lock_wait`).
        """
        return load.load_graph(self, graph, if_exists=if_exists, batch_size=batch_size,
                               workers=workers, progress=progress, lock_wait=lock_wait)

    def leader_counts(self, labels: Sequence[str]) -> dict[str, int]:
        """:meth:`node_counts` read on the cluster leader (a write transaction):
        a follower that lags behind could call a database empty that is not."""

        def work(tx: Any) -> dict[str, int]:
            return {r["label"]: r["count"] for r in tx.run(cypher.count_nodes(labels))}

        with self.driver_errors(), self.driver_session() as session:
            return dict(session.execute_write(work))

    def load_lock(self, wait: float | None = None, progress: ProgressLike = None,
                  engine: str = "driver") -> AbstractContextManager[None]:
        """Hold the database's one load lock while the body runs (:mod:`.lock`): a second
        graphkit load waits here until the first is done, at most ``wait`` seconds
        (default :attr:`lock_wait`), then fails with
        :class:`~graphkit.enrich.neo4j.lock.LoadLockTimeout` naming the holder. Two loads
        at once into an empty database both chose CREATE (one failed on a constraint,
        or relationships were made twice); two replace loads deleted each other's
        nodes, leaving relationships unwritten."""
        return lock.load_lock(self, wait=self.lock_wait if wait is None else wait,
                              progress=progress, engine=engine)

    def unfinished_loads(self) -> list[dict[str, Any]]:
        """The loads that began writing and have not finished (killed, failed, or
        running now), oldest first: ``mode``, ``labels``, ``started_at``, ``host``,
        ``pid``. While there is one, the graph in the database is incomplete."""
        return self.read(cypher.load_markers(LOAD_MARKER))

    def interrupted_load(self) -> bool:
        """True if a load began and has not finished (:meth:`unfinished_loads`): the
        graph in the database is incomplete until the same load is run again."""
        return bool(self.unfinished_loads())

    def ensure_schema(self, labels: Sequence[str]) -> None:
        """Uniqueness on ``id`` for every label, the lookup indexes, then wait for them."""
        statements = [cypher.unique_id_constraint(lab) for lab in labels]
        statements += [cypher.property_index(lab, prop) for lab, prop in self.indexes]
        for statement in statements:
            self.execute(statement)
        self.execute(cypher.AWAIT_INDEXES, seconds=300)

    def delete_labels(self, labels: Sequence[str], batch_size: int | None = None) -> int:
        """Detach-delete every node with one of ``labels``, a batch per transaction."""
        limit = batch_size or self.batch_size
        total = 0
        for label in labels:
            query = cypher.delete_nodes_batch(label)
            while True:
                deleted = self.write(query, limit=limit)
                total += deleted
                if deleted < limit:
                    break
        return total

    def node_counts(self, labels: Sequence[str]) -> dict[str, int]:
        """Number of nodes per label (0 for an absent label)."""
        if not labels:
            return {}
        rows = self.read(cypher.count_nodes(labels))
        return {r["label"]: r["count"] for r in rows}

    def relationship_counts(self, rel_types: Sequence[str]) -> dict[str, int]:
        """Number of relationships per type (0 for an absent type)."""
        if not rel_types:
            return {}
        rows = self.read(cypher.count_relationships(rel_types))
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
        rows = self.read(cypher.resolve(self.vocabulary), id=user_id)
        hits = [Hit(r["type"], r["node_id"], r["id"], r["session_id"]) for r in rows]
        return sorted(hits, key=lambda h: (h.type, h.id, h.node_id))

    def parent_chain(self, thread_node_id: str) -> list[Hit]:
        """Ancestor threads along PARENT_THREAD, nearest first (the walking
        rules are :mod:`graphkit.enrich.walk`'s; one query fetches the edges)."""
        rows = self.read(cypher.parent_edges(self.vocabulary), id=thread_node_id)
        return self._parents(thread_node_id, [self._edge(r["child"], r["node_id"], r)
                                              for r in rows])

    def descendant_threads(self, thread_node_id: str) -> list[tuple[Hit, int]]:
        """Threads below along reversed PARENT_THREAD, each once at its smallest
        depth, ordered by depth then id."""
        rows = self.read(cypher.child_edges(self.vocabulary), id=thread_node_id)
        return self._descendants(thread_node_id, [self._edge(r["parent"], r["node_id"], r)
                                                  for r in rows])

    def thread_walk(self, thread_node_id: str, session_id: str) -> ThreadWalk:
        """:meth:`parent_chain`, :meth:`descendant_threads` and the session's
        :meth:`continuation_edges` upward, in one round trip
        (:class:`~graphkit.enrich.base.ThreadWalkReader`)."""
        rows = self.read(cypher.thread_walk(self.vocabulary), id=thread_node_id,
                          session=session_id)
        return self._walk(thread_node_id, rows)

    def lineage_walk(self, user_id: str) -> tuple[list[Hit], ThreadWalk | None]:
        """:meth:`resolve` and, for an id naming one thread, :meth:`thread_walk`,
        in one round trip (:class:`~graphkit.enrich.base.LineageWalkReader`)."""
        if not is_text(user_id):
            return [], None
        rows = self.read(cypher.lineage_walk(self.vocabulary), id=user_id)
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
        (:class:`~graphkit.enrich.base.ContinuationEdgeReader`); none when the
        vocabulary names no continuation edge."""
        v = self.vocabulary
        if not v.continues or not is_text(session_id):
            return []
        rows = self.read(cypher.continuation_edges(v, v.continues, up=up), id=session_id)
        return [ContinuationEdge(r["start"], r["near"], r["far"], plain(r["how"]),
                                 str(r["key"])) for r in rows]

    def session_threads(self, session_id: str) -> list[ThreadInfo]:
        """The threads of a session with their parent's node id and agent facts."""
        if not is_text(session_id):
            return []
        rows = self.read(cypher.session_threads(self.vocabulary), id=session_id)
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
            for r in self.read(cypher.sessions(self.vocabulary))
        ]

    def node_rows(self, node_type: str, columns: Sequence[str],
                  where: tuple[str, Sequence[str]] | None = None) -> list[dict[str, Any]]:
        """The nodes of one type with ``columns``, ordered by id."""
        query = cypher.node_rows(node_type, columns, where[0] if where else None)
        rows = self.read(query, values=texts(where[1]) if where else [])
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
        rows = self.read(query, sources=texts(sources or []), targets=texts(targets or []))
        out = [{EDGE_SOURCE: r["source"], EDGE_TARGET: r["target"],
                **{c: plain(v) for c, v in zip(columns, r["vals"], strict=True)}}
               for r in rows]
        # Python's string order, as the other stores (Cypher's may differ).
        return sorted(out, key=lambda r: (r[EDGE_SOURCE], r[EDGE_TARGET]))

    def node_properties(self, label: str, key: str,
                        values: Sequence[str]) -> list[dict[str, Any]]:
        """All properties of the ``label`` nodes whose ``key`` is one of ``values``
        (times as ISO text, as the other stores give them)."""
        rows = self.read(cypher.node_properties(label, key), values=texts(values))
        return [{k: convert.iso_text(v) if hasattr(v, "to_native") else v
                 for k, v in r["p"].items()} for r in rows]

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
        return read_back.read_graph(self, labels, rel_types)
