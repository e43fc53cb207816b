"""Sessions that continue other sessions — the same from any store.

A ``CONTINUES`` edge (the lineage vocabulary's ``continues``) goes from a
session to the one it continues, with ``how``: ``resume`` (a new session id
replaying the origin's messages), ``fork`` (Codex ``forked_from_id``), ``branch``
(Claude ``/branch``), ``compaction`` (a session started from another's
summary) or ``teammate`` (an agent-team member and its lead). The replayed
prefix is the origin's alone: sources keep each replayed message once, in the
session that first had it, so messages and tokens are counted once along a chain.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from graphkit.enrich.base import ContinuationEdge, ContinuationEdgeReader, LineageReader
from graphkit.queries.model import Continuation

Step = Callable[[list[str]], list[tuple[str, str, str | None]]]


def _session_nodes(reader: LineageReader, column: str, values: Sequence[str]) -> dict[str, str]:
    """Session node id → session key of the sessions whose ``column`` is in ``values``."""
    v = reader.vocabulary
    if not values:
        return {}
    return {r["id"]: str(r[v.session_key]) for r in reader.node_rows(
        v.session, [v.session_key], where=(column, list(values)))}


def _level_by_level(reader: LineageReader, continues: str, session_id: str,
                    up: bool) -> tuple[list[str], Step]:
    """The session's node ids and a step asking the store for one level's
    edges (one :meth:`~LineageReader.edge_rows` call per level)."""
    v = reader.vocabulary

    def step(level: list[str]) -> list[tuple[str, str, str | None]]:
        edges = reader.edge_rows(continues, v.session, v.session, ["how"],
                                 sources=level if up else None,
                                 targets=None if up else level)
        return [(e["source"], e["target"], e["how"]) if up else
                (e["target"], e["source"], e["how"]) for e in edges]

    return sorted(_session_nodes(reader, v.session_key, [session_id])), step


def _prefetched(edges: list[ContinuationEdge], up: bool) -> tuple[list[str], Step]:
    """The same from every reachable edge, fetched at once: a level's edges
    in the order :meth:`~LineageReader.edge_rows` gives (source, then target)."""
    by_near: dict[str, list[ContinuationEdge]] = {}
    for e in edges:
        by_near.setdefault(e.near, []).append(e)

    def step(level: list[str]) -> list[tuple[str, str, str | None]]:
        found = [e for n in level for e in by_near.get(n, [])]
        found.sort(key=lambda e: (e.near, e.far) if up else (e.far, e.near))
        return [(e.near, e.far, e.how) for e in found]

    return sorted({e.start for e in edges}), step


def _walk(reader: LineageReader, session_id: str, *, up: bool) -> list[Continuation]:
    """Breadth first along CONTINUES edges (``up``: to what a session continues;
    else to what continues it), each session once at its smallest depth, ordered
    by depth then id. A server fetches the reachable edges in one round trip;
    the walk over them is the same for every store."""
    v = reader.vocabulary
    if not v.continues:
        return []
    if isinstance(reader, ContinuationEdgeReader):
        return walk_edges(reader, reader.continuation_edges(session_id, up=up), up=up)
    level, step = _level_by_level(reader, v.continues, session_id, up)
    found = _breadth_first(level, step)
    names = _session_nodes(reader, "id", [nid for _, nid, _ in found])
    return _continuations(v.session, found, names)


def walk_edges(reader: LineageReader, edges: list[ContinuationEdge], *,
               up: bool) -> list[Continuation]:
    """The walk of :func:`continues` (``up``) or :func:`continued_by` over the
    edges a :class:`~graphkit.enrich.base.ContinuationEdgeReader` fetched."""
    level, step = _prefetched(edges, up)
    return _continuations(reader.vocabulary.session, _breadth_first(level, step),
                          {e.far: e.key for e in edges})


def _breadth_first(level: list[str], step: Step) -> list[tuple[int, str, str | None]]:
    """(depth, node id, how) of each session reached, once, at its smallest depth."""
    seen = set(level)
    found: list[tuple[int, str, str | None]] = []
    depth = 0
    while level:
        depth += 1
        nxt: dict[str, str | None] = {}
        for _near, other, how in step(level):
            if other not in seen and other not in nxt:
                nxt[other] = how
        seen.update(nxt)
        found += [(depth, nid, how) for nid, how in nxt.items()]
        level = sorted(nxt)
    return found


def _continuations(session_type: str, found: list[tuple[int, str, str | None]],
                   names: dict[str, str]) -> list[Continuation]:
    out = [Continuation(session_type, names.get(nid, nid), how, d) for d, nid, how in found]
    return sorted(out, key=lambda c: (c.depth, c.id))


def continues(reader: LineageReader, session_id: str) -> list[Continuation]:
    """The sessions ``session_id`` continues, nearest first (then by id)."""
    return _walk(reader, session_id, up=True)


def continued_by(reader: LineageReader, session_id: str) -> list[Continuation]:
    """The sessions that continue ``session_id``, nearest first (then by id)."""
    return _walk(reader, session_id, up=False)
