"""Token usage per thread, per subagent tree and per session — the same from any store.

Every thread's own usage is four sums on its node (``input_tokens``,
``output_tokens``, ``cache_creation_input_tokens``, ``cache_read_input_tokens``:
the default contract's names, summed from ``attributes.usage`` of the rows that
carry it); its usage by model sits on its ``USED_MODEL`` edges. This module adds
them up the session tree: a thread's *subtree* is itself and every thread below
it; a session's *total* is all of its threads (orphans included), its *own* the
threads that are no one's child and no subagent (the main loop, a Codex root).

>>> from graphkit.builds.run import build, records_table
>>> from graphkit.enrich.networkx_store import NetworkXStore
>>> import json
>>> rows = [{"session_id": "s", "message_id": "m1", "part_id": "p1", "role": "assistant",
...          "attributes": json.dumps({"usage": {"input_tokens": 3, "output_tokens": 5}})}]
>>> store = NetworkXStore(); _ = store.load(build(records_table(rows)).graph)
>>> session_usage(store, ["s"])[0].total.to_json()["output_tokens"]
5
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from graphkit.core.errors import QueryError
from graphkit.enrich.base import LineageReader, ThreadTableReader
from graphkit.queries.lineage import session_tree, sessions, twin_hint
from graphkit.queries.tokens import (
    ADVISOR_FIELDS,
    ADVISOR_MODEL,
    BILLING_FIELDS,
    EDGE_FIELDS,
    MODEL,
    MODEL_KEY,
    TOKEN_FIELDS,
    USED_MODEL,
    Step,
    Tokens,
    add_advisor,
    add_all,
    add_model,
    model_remainder,
    walk_steps,
)
from graphkit.queries.window import Window

# Thread kinds that are someone's child even when the parent link is missing
# (the last three: Claude subagents no tool call spawned, see claude_links).
CHILD_KINDS = ("subagent", "child-thread", "warmup", "compaction", "orphan",
               # runs Claude Code starts itself, and HypAware's OTEL rows of a subagent
               # type (claude_records.side_run_kind, sources.captures.OTEL_KIND)
               "prompt-suggestion", "side-question", "otel-agent-type")


@dataclass
class ThreadUsage:
    """One thread's usage: its own, its subtree's, and its own by model."""

    id: str
    node_id: str
    parent: str | None  # the parent thread's id, None at a root or an orphan
    kind: str | None
    agent_type: str | None
    depth: int
    own: Tokens
    subtree: Tokens = field(default_factory=Tokens)
    by_model: dict[str, Tokens] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """``{"id", "parent", "own", "subtree"}``."""
        return {"id": self.id, "parent": self.parent, "own": self.own.to_json(),
                "subtree": self.subtree.to_json()}


@dataclass
class SessionUsage:
    """The answer of ``graphkit usage`` for one session."""

    session_id: str
    own: Tokens
    total: Tokens
    threads: list[ThreadUsage]  # in tree order: the main thread first, depth first

    def to_json(self) -> dict[str, Any]:
        """``{"session_id", "own", "total", "threads": [...]}``."""
        return {"session_id": self.session_id, "own": self.own.to_json(),
                "total": self.total.to_json(), "threads": [t.to_json() for t in self.threads]}

    def by_model(self) -> dict[str, Tokens]:
        """The session's usage per model (threads' own, added)."""
        out: dict[str, Tokens] = {}
        for t in self.threads:
            for m, tok in t.by_model.items():
                out[m] = out.get(m, Tokens()) + tok
        return dict(sorted(out.items()))


def _thread_usage(reader: LineageReader, session_ids: Sequence[str],
                  window: Window) -> list[list[ThreadUsage]]:
    """The threads of each session in tree order with their own usage and by model
    (a thread not active in ``window`` spent nothing in it). The store is asked
    once for every session's threads and model edges: asked per session, `usage`
    over 10k sessions filtered the whole edge table 10k times. A store answering
    Arrow tables is asked for every session's threads at once (:mod:`.usage_columns`)."""
    if isinstance(reader, ThreadTableReader):
        from graphkit.queries.usage_columns import table_usage

        distinct = list(dict.fromkeys(session_ids))
        found, mine, per_model = table_usage(reader, distinct, window)
        # A session with no thread, or an id naming none: as the walk finds it
        # (QueryError for the latter).
        found = [o or walk_steps(session_tree(reader, sid))
                 for sid, o in zip(distinct, found, strict=True)]
        at = {sid: i for i, sid in enumerate(distinct)}
        return [_usages(found[at[sid]], mine, per_model) for sid in session_ids]
    v = reader.vocabulary
    orders = [walk_steps(session_tree(reader, sid)) for sid in session_ids]
    ids = list(dict.fromkeys(step[0] for order in orders for step in order))
    # The times only when a window asks for them: each is a datetime made and
    # written as text, a third of `usage` on a session of 50k threads.
    times = [] if window.open else ["first_seen", "last_seen"]
    own = {r["id"]: Tokens.of(r) for r in reader.node_rows(
        v.thread, [*TOKEN_FIELDS, *BILLING_FIELDS, *times], where=("id", ids))
        if window.open or window.overlaps(r["first_seen"], r["last_seen"])}
    edges = reader.edge_rows(USED_MODEL, v.thread, MODEL, EDGE_FIELDS, sources=ids)
    names = {r["id"]: r[MODEL_KEY] for r in reader.node_rows(
        MODEL, [MODEL_KEY], where=("id", sorted({e["target"] for e in edges})))}
    models: dict[str, dict[str, Tokens]] = {}
    for e in edges:
        if e["source"] not in own:
            continue
        add_model(models, e["source"], names.get(e["target"]), Tokens.of(e))
        if e.get(ADVISOR_MODEL) is not None or any(e.get(f) for f in ADVISOR_FIELDS):
            add_advisor(models, own, e["source"], e)
    return [_usages(order, own, models) for order in orders]


def _usages(order: list[Step], own: dict[str, Tokens],
            models: dict[str, dict[str, Tokens]]) -> list[ThreadUsage]:
    out = []
    zero = Tokens()
    for node_id, thread_id, kind, agent_type, parent, depth in order:
        mine = own.get(node_id, zero)
        per = model_remainder(mine, models.get(node_id))
        # subtree: filled by _subtrees; given here, not made by the default factory.
        out.append(ThreadUsage(thread_id, node_id, parent, kind, agent_type, depth, mine,
                               mine, per))
    return out


def _subtrees(threads: list[ThreadUsage]) -> None:
    """Fill each thread's ``subtree``: threads come depth first, so a thread's
    subtree is it and the threads after it until depth returns to its own.
    From the last: a thread's subtree is its own and its children's subtrees,
    which lie on the stack above anything shallower (one pass, where adding up
    every thread after each was quadratic in a chain thousands deep)."""
    done: list[tuple[int, Tokens]] = []
    for t in reversed(threads):
        total = t.own
        while done and done[-1][0] > t.depth:
            total = total + done.pop()[1]
        t.subtree = total
        done.append((t.depth, total))


def session_usage(reader: LineageReader, session_ids: Sequence[str],
                  window: Window | None = None) -> list[SessionUsage]:
    """Usage of each session in ``session_ids`` (in that order); with ``window``,
    only the threads active in it count (each whole: see :mod:`.window`), and
    threads that spent nothing there, themselves or below, are left out.

    Raises :class:`QueryError` for an id that names no session.
    """
    window = window or Window()
    out = []
    for sid, threads in zip(session_ids, _thread_usage(reader, session_ids, window),
                            strict=True):
        _subtrees(threads)
        if not window.open:
            threads = [t for t in threads if t.subtree.total()]
        own = add_all(t.own for t in threads
                      if t.depth == 0 and t.kind not in CHILD_KINDS)
        out.append(SessionUsage(sid, own, add_all(t.own for t in threads), threads))
    return out


def require_sessions(reader: LineageReader, session_ids: Sequence[str],
                     window: Window | None = None) -> list[str]:
    """``session_ids`` as given, or every session (active in ``window``, oldest
    first) when none is; an id naming no session is a :class:`QueryError`."""
    if not session_ids:
        w = window or Window()
        if isinstance(reader, ThreadTableReader):
            from graphkit.queries.usage_columns import session_order

            found = session_order(reader, w)
            if found is not None:
                return found
        return [s.session_id for s in sessions(reader) if w.overlaps(s.first_seen, s.last_seen)]
    v = reader.vocabulary
    for sid in session_ids:
        if not any(h.type == v.session for h in reader.resolve(sid)):
            raise QueryError(f"no session has the id {sid!r}",
                             hint=twin_hint(reader, sid, (v.session,))
                             or "list sessions with `graphkit sessions`")
    return list(dict.fromkeys(session_ids))
