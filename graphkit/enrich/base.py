"""The interface every store implements, and the records it answers with.

A store (NetworkX, a snapshot read in place, Neo4j) answers a few primitive
questions (:class:`LineageReader`); the functions in :mod:`graphkit.queries`
compose them, sort them and shape them, so every store gives byte-identical
``--json`` output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol, runtime_checkable

from graphkit.core.errors import QueryError
from graphkit.core.text import is_text

if TYPE_CHECKING:  # only named: the CLI's start (and a kept rebuild) need no pyarrow
    import pyarrow as pa

    from graphkit.core.graph import LineageVocabulary

# What a load does when the graph's node types already hold nodes.
IfExists = Literal["merge", "replace", "fail"]


@dataclass
class LoadReport:
    """What one store's ``load`` did, the same fields for every store: ``nodes`` and
    ``edges`` written by type, ``removed``, ``skipped_edges``, ``seconds``, and for
    Neo4j its ``batch_size``, ``workers``, ``write_mode`` and ``target`` (the server,
    credentials never shown). :func:`graphkit.load_snapshot` returns one.

    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> report = NetworkXStore().load(example_graph())
    >>> report.nodes["Thread"], report.edges["PARENT_THREAD"]
    (5, 3)
    """

    nodes: dict[str, int] = field(default_factory=dict)  # nodes written per type
    edges: dict[str, int] = field(default_factory=dict)  # edges written per type
    removed: int = 0  # nodes deleted by if_exists="replace"
    seconds: float = 0.0
    skipped_edges: dict[str, int] = field(default_factory=dict)  # an end node was missing
    batch_size: int | None = None  # Neo4j: rows per UNWIND batch
    # Neo4j: a replace-load had been killed before this one (its marker was found).
    resumed_replace: bool = False
    # Neo4j: "create" if the target held none of the graph's labels, else "merge".
    write_mode: str | None = None
    workers: int | None = None  # Neo4j: sessions writing at once
    # Where the graph went, for a person (Neo4j: its URI, credentials never shown);
    # not in to_json, whose fields stay those of every store.
    target: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A plain dict for ``--json`` output."""
        return {
            "nodes": dict(self.nodes),
            "edges": dict(self.edges),
            "removed": self.removed,
            "seconds": round(self.seconds, 3),
            "skipped_edges": dict(self.skipped_edges),
            "batch_size": self.batch_size,
            "resumed_replace": self.resumed_replace,
            "write_mode": self.write_mode,
            "workers": self.workers,
        }


@dataclass(frozen=True)
class Hit:
    """A node matching a user's id: its store-internal node id and where it lives."""

    type: str  # the vocabulary's thread or session node type
    node_id: str  # the deterministic graph id
    id: str  # the user-facing id
    session_id: str


@dataclass(frozen=True)
class ThreadInfo:
    """One thread of a session, with the node id of its parent thread if any."""

    node_id: str
    id: str
    parent_node_id: str | None
    kind: str | None = None
    agent_type: str | None = None
    description: str | None = None
    messages: int | None = None
    first_seen: str | None = None


@dataclass
class SessionSummary:
    """One row of ``graphkit sessions``."""

    session_id: str
    threads: int
    agents: int
    messages: int
    first_seen: str | None = None
    last_seen: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The object printed by ``graphkit sessions --json``."""
        return {
            "session_id": self.session_id,
            "threads": self.threads,
            "agents": self.agents,
            "messages": self.messages,
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
        }


def texts(values: Sequence[str]) -> list[str]:
    """``values`` without those that cannot be stored text
    (:func:`~graphkit.core.text.is_text`)."""
    return [v for v in values if is_text(v)]


def plain(value: Any) -> Any:
    """A property value as every store answers it: times as ISO-8601 text in
    UTC (``isoformat()``), everything else as it is.

    >>> plain(datetime(2026, 1, 2, 3, 4, tzinfo=UTC)), plain(7)
    ('2026-01-02T03:04:00+00:00', 7)
    """
    if hasattr(value, "to_native"):  # a neo4j.time value
        value = value.to_native()
    if isinstance(value, datetime):
        return (value.astimezone(UTC) if value.tzinfo is not None else value).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


class LineageReader(Protocol):
    """The primitive questions every store answers: the type the query functions
    (:func:`graphkit.lineage`, :func:`graphkit.sessions`, …) take as ``store``.

    :class:`graphkit.SnapshotReader`, :class:`graphkit.NetworkXStore` and
    :class:`graphkit.Neo4jStore` implement it, and answer every question alike.

    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> def session_ids(store: LineageReader) -> list[str]:
    ...     return sorted(s.session_id for s in store.sessions())
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> session_ids(store), store.vocabulary.thread
    (['sess-1', 'th-root'], 'Thread')
    """

    @property
    def vocabulary(self) -> LineageVocabulary:
        """The graph's lineage vocabulary; raises :class:`QueryError` when its
        contract declares none."""
        ...

    def resolve(self, user_id: str) -> list[Hit]:
        """Thread nodes whose user-facing id or ``agent_id`` equals ``user_id``,
        and Session nodes whose ``session_id`` equals it."""
        ...

    def parent_chain(self, thread_node_id: str) -> list[Hit]:
        """Parent threads of a thread, nearest first, following PARENT_THREAD
        edges; stops before a node already seen (a cycle)."""
        ...

    def descendant_threads(self, thread_node_id: str) -> list[tuple[Hit, int]]:
        """Every thread below a thread along reversed PARENT_THREAD edges, with
        its depth (1 = direct child); each thread once, at its smallest depth."""
        ...

    def session_threads(self, session_id: str) -> list[ThreadInfo]:
        """All Thread nodes of a session with their parent's node id."""
        ...

    def sessions(self) -> list[SessionSummary]:
        """One summary per Session node."""
        ...

    def node_rows(self, node_type: str, columns: Sequence[str],
                  where: tuple[str, Sequence[str]] | None = None) -> list[dict[str, Any]]:
        """The nodes of one type as ``{"id", *columns}`` (a column a node lacks
        is null), ordered by id; with ``where = (prop, values)`` only those whose
        ``prop`` (``id`` included) is one of ``values``. Values are plain
        (:func:`plain`)."""
        ...

    def edge_rows(self, edge_type: str, source_type: str, target_type: str,
                  columns: Sequence[str], sources: Sequence[str] | None = None,
                  targets: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The edges of one type between nodes of the two types as
        ``{"source", "target", *columns}`` (node ids), ordered by source then
        target; with ``sources`` only edges from those node ids, with
        ``targets`` only edges to those."""
        ...


class ContinuationEdge(NamedTuple):
    """A ``continues`` edge reachable from a session (``start``, its node id):
    ``near`` is its end nearer to the session, ``far`` the other, ``key`` the
    far end's session key."""

    start: str
    near: str
    far: str
    how: str | None
    key: str


@runtime_checkable
class ContinuationEdgeReader(Protocol):
    """A store that fetches a session's whole continuation chain at once (a
    server, where each question is a round trip); the others are walked a
    level at a time through :meth:`LineageReader.edge_rows`."""

    def continuation_edges(self, session_id: str, *, up: bool) -> list[ContinuationEdge]:
        """Every Session-to-Session ``continues`` edge whose near end is
        reachable from the session ``session_id`` (``up``: along the edges; else
        against them)."""
        ...


@dataclass(frozen=True)
class ThreadWalk:
    """What ``lineage`` asks about one thread, fetched together."""

    parents: list[Hit]  # as parent_chain
    descendants: list[tuple[Hit, int]]  # as descendant_threads
    continuations: list[ContinuationEdge]  # as continuation_edges(session, up=True)


@runtime_checkable
class ThreadWalkReader(Protocol):
    """A store that answers a thread's lineage walks in one round trip."""

    def thread_walk(self, thread_node_id: str, session_id: str) -> ThreadWalk:
        """The thread's parent chain and descendants, and every continuation
        edge reachable upward from its session ``session_id``."""
        ...


@runtime_checkable
class LineageWalkReader(Protocol):
    """A store that resolves a user's id and walks its thread in one round trip."""

    def lineage_walk(self, user_id: str) -> tuple[list[Hit], ThreadWalk | None]:
        """:meth:`LineageReader.resolve`'s hits for ``user_id`` and, when they
        name exactly one thread, that thread's :class:`ThreadWalk` (else ``None``)."""
        ...


@runtime_checkable
class ThreadTableReader(LineageReader, Protocol):
    """A store that answers many sessions' threads, and whole node and edge tables,
    as Arrow tables (a snapshot read in place): questions over every session are
    then columnar work, not a Python walk per session."""

    def session_thread_table(self, session_ids: Sequence[str],
                             columns: Sequence[str] = ()) -> tuple[pa.Table, pa.Table]:
        """:meth:`LineageReader.session_threads` of each of ``session_ids`` (distinct)
        as one table (``session``: the id's position in ``session_ids``; ``node_id``,
        ``id``, ``parent_node_id``, ``kind``, ``agent_type``, ``first_seen``), and the
        Thread nodes' ``columns`` for the same rows."""
        ...

    def node_table(self, node_type: str, columns: Sequence[str]) -> pa.Table | None:
        """The nodes of one type: ``id`` and ``columns``; None if there are none."""
        ...

    def edge_table(self, edge_type: str, source_type: str, target_type: str,
                   columns: Sequence[str]) -> pa.Table | None:
        """The edges :meth:`LineageReader.edge_rows` answers: ``source``, ``target``
        and ``columns``, unordered; None if there are none."""
        ...


def require_vocabulary(vocabulary: LineageVocabulary | None,
                       contract: str | None) -> LineageVocabulary:
    """``vocabulary``, or a :class:`QueryError` saying the graph's contract
    declares none (so lineage questions cannot be asked of it)."""
    if vocabulary is None:
        raise QueryError(
            f"contract {contract or '(unknown)'!r} declares no lineage vocabulary, so this "
            "graph has no sessions, threads or parent links to walk",
            hint="add a `lineage:` section to the contract (session, session_key, thread, "
                 "thread_key, thread_session, has_thread, parent) and rebuild")
    return vocabulary
