"""The interface every store implements, and the records it answers with.

A store (NetworkX, a snapshot read in place, Neo4j) answers a few primitive
questions (:class:`LineageReader`); the functions in :mod:`graphkit.queries`
compose them, sort them and shape them, so every store gives byte-identical
``--json`` output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Hit:
    """A node matching a user's id: its store-internal node id and where it lives."""

    type: str  # "Thread" or "Session"
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






class LineageReader(Protocol):
    """The primitive questions every store answers."""

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
