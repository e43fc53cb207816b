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

import contextlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphkit.core.errors import QueryError
from graphkit.enrich.base import LineageReader
from graphkit.queries.prices import (
    ClaudeCost,
    Cost,
    PriceTable,
    UsageGroup,
    compare_claude,
    counts_match,
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
    # Claude Code's own figure for the session and its gap to ``total``, where the
    # session's data holds one (a cost-state record, or HypAware's per-request costs).
    claude: ClaudeCost | None = None


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
    # Claude's figure is the whole session's: beside a window's share it says nothing.
    claude = claude_costs(store, [u.session_id for u in answers]) if window.open else {}
    costs = []
    for u in answers:
        own = [thread_cost(t, table) for t in u.threads]
        whole = session_cost(u, table)
        theirs = claude.get(u.session_id)
        if theirs is not None:
            theirs = _with_origin(store, u, compare_claude(theirs, whole, u.by_model(), table))
        costs.append(SessionCosts(whole, own, subtree_costs(u, table, own), theirs))
    report = UsageReport(answers, costs, table, by)
    if by is not None:
        days = _thread_days(store, answers) if by == "day" else None
        report.groups = group_usage(answers, by, table, days)
    return report


# The default contract's Session properties holding Claude Code's own cost.
CLAUDE_COST = "claude_cost_usd"
CLAUDE_COST_MODELS = "claude_cost_models"
CLAUDE_REQUEST_COST = "claude_request_cost_usd"


def claude_costs(store: LineageReader, session_ids: Sequence[str]) -> dict[str, ClaudeCost]:
    """Claude Code's own figure for each of ``session_ids`` whose graph holds one: its
    last cost-state record, else the per-request costs HypAware's OTEL rows carry."""
    v = store.vocabulary
    out: dict[str, ClaudeCost] = {}
    for r in store.node_rows(v.session, [v.session_key, CLAUDE_COST, CLAUDE_COST_MODELS,
                                         CLAUDE_REQUEST_COST],
                             where=(v.session_key, list(session_ids))):
        sid = r[v.session_key]
        state, asked = _usd(r[CLAUDE_COST]), _usd(r[CLAUDE_REQUEST_COST])
        if state is not None:
            models: Any = None
            with contextlib.suppress(ValueError, TypeError, RecursionError):
                models = json.loads(r[CLAUDE_COST_MODELS] or "null")
            if not isinstance(models, dict):
                models = {}
            out[str(sid)] = ClaudeCost(state, "cost-state", {
                str(m): {k: x for k, x in u.items()
                         if not isinstance(x, str) and _usd(x) is not None}
                for m, u in models.items() if isinstance(u, dict)})
        elif asked is not None:
            out[str(sid)] = ClaudeCost(asked, "requests")
    return out


def _with_origin(store: LineageReader, u: SessionUsage, claude: ClaudeCost) -> ClaudeCost:
    """``claude`` with the gap's cause where Claude's counts are this session's and
    the session's it continues together (a background continuation replays its
    origin's conversation, and Claude Code's running cost carries the origin's on)."""
    if not claude.gap or not claude.models or claude.cause is None:
        return claude
    from graphkit.queries.continuations import continues

    for origin in continues(store, u.session_id):
        if origin.depth != 1:
            continue
        try:
            before = session_usage(store, [origin.id])[0]
        except QueryError:
            continue
        both = dict(u.by_model())
        for model, tokens in before.by_model().items():
            both[model] = both.get(model, Tokens()) + tokens
        if counts_match(claude, both):
            how = f" ({origin.how})" if origin.how else ""
            return ClaudeCost(claude.usd, claude.source, claude.models, claude.gap,
                              f"Claude Code's figure counts the session this one continues"
                              f"{how} too, {origin.id}: the same tokens as both")
    return claude


def _usd(value: Any) -> float | None:
    """A cost read from the store, or None (none, or no finite number: text that is no
    number, or an integer past a float's range from a store that keeps any)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        usd = float(value)
    except (ValueError, OverflowError):
        return None
    return usd if math.isfinite(usd) else None


def _thread_days(store: LineageReader, answers: list[SessionUsage]) -> dict[str, str]:
    """Thread node id → the UTC day it started."""
    ids = [t.node_id for u in answers for t in u.threads]
    out = {}
    for r in store.node_rows(store.vocabulary.thread, ["first_seen"], where=("id", ids)):
        day = utc_day(r["first_seen"])
        if day is not None:
            out[r["id"]] = day
    return out
