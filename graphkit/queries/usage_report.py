"""``graphkit usage`` as one answer: every session's tokens per thread, subagent tree
and session (:mod:`.usage`), what they cost (:mod:`.prices`), and, asked for, the
usage grouped by session, day, model or agent type.

>>> from graphkit.builds.run import build, records_table
>>> from graphkit.enrich.networkx_store import NetworkXStore
>>> import json
>>> rows = [{"session_id": "s", "message_id": "m1", "part_id": "p1", "role": "assistant",
...          "model": "claude-haiku-4-5",
...          "attributes": json.dumps({"usage": {"input_tokens": 1_000_000}})}]
>>> store = NetworkXStore(); _ = store.load(build(records_table(rows)).graph)
>>> report = usage(store)
>>> report.costs[0].total.known, report.costs[0].subtree[0].known
(1.0, 1.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from graphkit.enrich.base import LineageReader
from graphkit.queries.prices import (
    Cost,
    PriceTable,
    UsageGroup,
    group_usage,
    load_prices,
    session_cost,
    subtree_costs,
    thread_cost,
    total_cost,
)
from graphkit.queries.tokens import Tokens
from graphkit.queries.usage import SessionUsage, require_sessions, session_usage
from graphkit.queries.window import When, Window, utc_day


@dataclass
class SessionCosts:
    """What one session cost: in all, and per thread (its own and its subtree's), in
    :attr:`SessionUsage.threads`' order."""

    total: Cost
    own: list[Cost]
    subtree: list[Cost]


@dataclass
class UsageReport:
    """The answer of ``graphkit usage``: the sessions' usage and costs, and the
    groups asked for (``by``)."""

    sessions: list[SessionUsage]
    costs: list[SessionCosts]
    prices: PriceTable
    by: str | None = None
    groups: list[UsageGroup] = field(default_factory=list)

    @property
    def has_tokens(self) -> bool:
        """Whether any thread carries token usage (a graph built before usage was on
        it has none, and looks all zero)."""
        return any(u.total.total() for u in self.sessions)

    def total(self) -> tuple[Tokens, Cost]:
        """The tokens and cost of every session together."""
        tokens, cost = Tokens(), Cost()
        for u, c in zip(self.sessions, self.costs, strict=True):
            tokens = tokens + u.total
            cost.merge(c.total, self.prices)
        return tokens, cost

    def group_total(self) -> tuple[Tokens, Cost]:
        """The tokens and cost of :attr:`groups` together (their table's total row)."""
        return total_cost(self.groups, self.prices)


def usage(store: LineageReader, session_ids: Sequence[str] = (), *, since: When = None,
          until: When = None, by: str | None = None,
          prices: PriceTable | str | Path | None = None) -> UsageReport:
    """Return the token usage and cost of sessions: per thread (its own and its
    subtree's: itself and every subagent below it) and per session, and grouped
    ``by`` session, day, model or agent type.

    Parameters
    ----------
    store : LineageReader
        The graph.
    session_ids : sequence of str
        The sessions to report (none: every session, oldest first).
    since, until : datetime or str, optional
        Only threads active in this window count (and, with no ``session_ids``, only
        sessions active in it are reported).
    by : {"session", "day", "model", "agent-type"}, optional
        Also group the threads' own usage across the sessions by this key
        (:func:`graphkit.queries.prices.group_usage`).
    prices : PriceTable or path, optional
        The price table (default: the one shipped with graphkit). A model it lacks is
        unpriced: its cost is unknown (None), never zero.

    Returns
    -------
    UsageReport

    Raises
    ------
    QueryError
        An id names no session.
    GraphkitError
        A bound is no time, ``by`` is unknown, the price table cannot be read, or a
        cost is past a float's range.

    Examples
    --------
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> report = usage(store, ["sess-1"], by="session")
    >>> [t.id for t in report.sessions[0].threads], [g.key for g in report.groups]
    (['sess-1', 'ag-1', 'ag-2'], ['sess-1'])
    >>> report.has_tokens, report.costs[0].total.known  # a graph with no usage on it
    (False, 0.0)
    """
    window = Window.of(since, until)
    table = prices if isinstance(prices, PriceTable) else load_prices(
        Path(prices) if prices is not None else None)
    answers = session_usage(store, require_sessions(store, session_ids, window), window)
    costs = []
    for u in answers:
        own = [thread_cost(t, table) for t in u.threads]
        costs.append(SessionCosts(session_cost(u, table), own, subtree_costs(u, table, own)))
    report = UsageReport(answers, costs, table, by)
    if by is not None:
        days = _thread_days(store, answers) if by == "day" else None
        report.groups = group_usage(answers, by, table, days)
    return report


def _thread_days(store: LineageReader, answers: list[SessionUsage]) -> dict[str, str]:
    """Thread node id → the UTC day it started."""
    ids = [t.node_id for u in answers for t in u.threads]
    out = {}
    for r in store.node_rows(store.vocabulary.thread, ["first_seen"], where=("id", ids)):
        day = utc_day(r["first_seen"])
        if day is not None:
            out[r["id"]] = day
    return out
