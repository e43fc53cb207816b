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

from collections.abc import Sequence

from graphkit.queries.model import Continuation
from graphkit.stores.base import LineageReader


def _session_nodes(reader: LineageReader, session_ids: Sequence[str]) -> dict[str, str]:
    v = reader.vocabulary
    return {r["id"]: str(r[v.session_key]) for r in reader.node_rows(
        v.session, [v.session_key], where=(v.session_key, list(session_ids)))}


def _walk(reader: LineageReader, session_id: str, *, up: bool) -> list[Continuation]:
    """Breadth first along CONTINUES edges (``up``: to what a session continues;
    else to what continues it), each session once at its smallest depth, ordered
    by depth then id."""
    v = reader.vocabulary
    if not v.continues:
        return []
    start = _session_nodes(reader, [session_id])
    seen = set(start)
    level = sorted(start)
    found: list[tuple[int, str, str | None]] = []
    depth = 0
    while level:
        depth += 1
        edges = reader.edge_rows(v.continues, v.session, v.session, ["how"],
                                 sources=level if up else None,
                                 targets=None if up else level)
        nxt: dict[str, str | None] = {}
        for e in edges:
            other = e["target"] if up else e["source"]
            if other not in seen and other not in nxt:
                nxt[other] = e["how"]
        seen.update(nxt)
        found += [(depth, nid, how) for nid, how in nxt.items()]
        level = sorted(nxt)
    names = _session_nodes_by_id(reader, [nid for _, nid, _ in found])
    out = [Continuation(v.session, names.get(nid, nid), how, d) for d, nid, how in found]
    return sorted(out, key=lambda c: (c.depth, c.id))


def _session_nodes_by_id(reader: LineageReader, node_ids: Sequence[str]) -> dict[str, str]:
    v = reader.vocabulary
    if not node_ids:
        return {}
    return {r["id"]: str(r[v.session_key]) for r in reader.node_rows(
        v.session, [v.session_key], where=("id", list(node_ids)))}


def continues(reader: LineageReader, session_id: str) -> list[Continuation]:
    """The sessions ``session_id`` continues, nearest first (then by id)."""
    return _walk(reader, session_id, up=True)


def continued_by(reader: LineageReader, session_id: str) -> list[Continuation]:
    """The sessions that continue ``session_id``, nearest first (then by id)."""
    return _walk(reader, session_id, up=False)
