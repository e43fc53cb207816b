"""The list of sessions: what each holds (threads, subagents, messages), when it ran,
where (its workspace), with which models, and what its tokens cost — the same from
any store.

Tokens and cost are the session's whole usage, as :func:`graphkit.queries.usage_report.usage`
gives it (every thread, orphans included), so the two answers agree; within a time
window, only the threads active in it count, as there.

>>> from graphkit.builds.run import example_graph
>>> from graphkit.enrich.networkx_store import NetworkXStore
>>> store = NetworkXStore(); _ = store.load(example_graph())
>>> [(s.session_id, s.threads, s.agents) for s in sessions(store)]
[('sess-1', 3, 2), ('th-root', 2, 1)]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from graphkit.enrich.base import LineageReader, SessionSummary, ThreadTableReader
from graphkit.queries.lineage import sessions as session_summaries
from graphkit.queries.prices import Cost, PriceTable, load_prices
from graphkit.queries.tokens import (
    ADVISOR_FIELDS,
    ADVISOR_MODEL,
    BILLING_FIELDS,
    EDGE_FIELDS,
    MODEL,
    MODEL_KEY,
    TOKEN_FIELDS,
    USED_MODEL,
    Tokens,
    add_advisor,
    add_model,
    model_remainder,
)
from graphkit.queries.window import When, Window

# The default contract's names for where a session ran.
IN_WORKSPACE = "IN_WORKSPACE"
WORKSPACE = "Workspace"
WORKSPACE_KEY = "workspace"


@dataclass
class SessionRow:
    """One row of ``graphkit sessions``: a session's summary, workspace, models,
    tokens and cost."""

    session_id: str
    threads: int
    agents: int  # threads other than a main loop: subagents, child threads
    messages: int
    first_seen: str | None = None
    last_seen: str | None = None
    workspaces: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)  # most tokens first
    tokens: Tokens = field(default_factory=Tokens)
    cost: Cost = field(default_factory=Cost)

    @classmethod
    def of(cls, s: SessionSummary) -> SessionRow:
        """A row with the summary's counts and times, no usage yet."""
        return cls(s.session_id, s.threads, s.agents, s.messages, s.first_seen, s.last_seen)


def sessions(store: LineageReader, *, since: When = None, until: When = None,
             limit: int | None = None,
             prices: PriceTable | str | Path | None = None) -> list[SessionRow]:
    """Return the sessions of a graph, oldest first, with their workspaces, models,
    tokens and cost.

    Parameters
    ----------
    store : LineageReader
        The graph (a snapshot reader, the NetworkX or the Neo4j store).
    since, until : datetime or str, optional
        Only sessions active in this window (a session whose first-to-last span meets
        it), and of them only the threads active in it count tokens. Text is read as
        :func:`graphkit.core.when.parse_when` reads it (``2026-11-20``, ``7 days ago``).
    limit : int, optional
        Only the ``limit`` most recent of them.
    prices : PriceTable or path, optional
        The price table (default: the one shipped with graphkit).

    Returns
    -------
    list of SessionRow
        Ordered by first time (none first), then id.

    Raises
    ------
    GraphkitError
        A bound is no time, or the price table cannot be read.

    Examples
    --------
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> row = sessions(store, limit=1)[0]
    >>> row.session_id, row.tokens.total(), row.cost.known
    ('th-root', 0, 0.0)
    """
    window = Window.of(since, until)
    table = prices if isinstance(prices, PriceTable) else load_prices(
        Path(prices) if prices is not None else None)
    rows = [SessionRow.of(s) for s in session_summaries(store)
            if window.overlaps(s.first_seen, s.last_seen)]
    if limit is not None:
        rows = rows[-limit:] if limit > 0 else []
    if rows:
        _add_usage(store, rows, window, table)
        _add_workspaces(store, rows)
    return rows


def _add_usage(store: LineageReader, rows: list[SessionRow], window: Window,
               table: PriceTable) -> None:
    """Each session's tokens, models and cost from its threads' own usage and
    ``USED_MODEL`` edges, with :mod:`.usage`'s rules (usage naming no model counted
    under :data:`~graphkit.queries.tokens.UNKNOWN_MODEL`)."""
    wanted = [r.session_id for r in rows]
    if isinstance(store, ThreadTableReader):
        from graphkit.queries.usage_columns import session_totals

        totals, by_session = session_totals(store, wanted, window)
    else:
        totals, by_session = _session_totals(store, wanted, window)
    for r in rows:
        models = by_session.get(r.session_id, {})
        r.tokens = totals.get(r.session_id, Tokens())
        r.models = sorted((m for m, t in models.items() if t.total()),
                          key=lambda m: (-models[m].total(), m))
        r.cost = Cost.of(table, models)


def _session_totals(store: LineageReader, wanted: list[str], window: Window
                    ) -> tuple[dict[str, Tokens], dict[str, dict[str, Tokens]]]:
    """Each session's whole usage and usage by model, from the store's rows."""
    v = store.vocabulary
    times = [] if window.open else ["first_seen", "last_seen"]
    threads = store.node_rows(v.thread, [v.thread_session, *TOKEN_FIELDS, *BILLING_FIELDS,
                                         *times], where=(v.thread_session, wanted))
    owner: dict[str, str] = {}
    own: dict[str, Tokens] = {}
    for t in threads:
        if window.open or window.overlaps(t["first_seen"], t["last_seen"]):
            owner[t["id"]] = str(t[v.thread_session])
            own[t["id"]] = Tokens.of(t)
    edges = store.edge_rows(USED_MODEL, v.thread, MODEL, EDGE_FIELDS, sources=list(own))
    names = {r["id"]: r[MODEL_KEY] for r in store.node_rows(
        MODEL, [MODEL_KEY], where=("id", sorted({e["target"] for e in edges})))}
    per_thread: dict[str, dict[str, Tokens]] = {}
    for e in edges:
        if e["source"] in own:
            add_model(per_thread, e["source"], names.get(e["target"]), Tokens.of(e))
            if e.get(ADVISOR_MODEL) is not None or any(e.get(f) for f in ADVISOR_FIELDS):
                add_advisor(per_thread, own, e["source"], e)
    by_session: dict[str, dict[str, Tokens]] = {}
    totals: dict[str, Tokens] = {}
    for node, tokens in own.items():
        sid = owner[node]
        totals[sid] = totals.get(sid, Tokens()) + tokens
        models = by_session.setdefault(sid, {})
        for model, used in model_remainder(tokens, per_thread.get(node)).items():
            models[model] = models.get(model, Tokens()) + used
    return totals, by_session


def _add_workspaces(store: LineageReader, rows: list[SessionRow]) -> None:
    """Each session's workspaces (``IN_WORKSPACE`` edges), sorted."""
    v = store.vocabulary
    nodes = {n["id"]: str(n[v.session_key]) for n in store.node_rows(
        v.session, [v.session_key], where=(v.session_key, [r.session_id for r in rows]))}
    edges = store.edge_rows(IN_WORKSPACE, v.session, WORKSPACE, [], sources=list(nodes))
    names = {n["id"]: n[WORKSPACE_KEY] for n in store.node_rows(
        WORKSPACE, [WORKSPACE_KEY], where=("id", sorted({e["target"] for e in edges})))}
    found: dict[str, set[str]] = {}
    for e in edges:
        name = names.get(e["target"])
        if name is not None:
            found.setdefault(nodes[e["source"]], set()).add(str(name))
    for r in rows:
        r.workspaces = sorted(found.get(r.session_id, ()))
