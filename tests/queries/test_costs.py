"""Costs of threads, subagent trees and sessions (graphkit.queries.prices): the sums
the command line prints, computed in the library."""

from __future__ import annotations

import sys

import pytest

from graphkit.core.errors import GraphkitError
from graphkit.queries import prices
from graphkit.queries.prices import Cost, PriceTable, subtree_costs, thread_cost
from graphkit.queries.usage import SessionUsage, ThreadUsage, Tokens

TABLE = PriceTable({"m": (1.0, 2.0, 0.0, 0.0)}, path="prices.json")


def _thread(tid: str, parent: str | None, depth: int, **by_model: Tokens) -> ThreadUsage:
    own = Tokens()
    for tok in by_model.values():
        own = own + tok
    return ThreadUsage(tid, tid, parent, "thread", None, depth, own, own, dict(by_model))


def test_a_subtree_costs_itself_and_every_thread_below() -> None:
    # a ─ b ─ c, and a ─ d: a's subtree is all four, b's is b and c.
    threads = [_thread("a", None, 0, m=Tokens(1_000_000)),
               _thread("b", "a", 1, m=Tokens(0, 1_000_000)),
               _thread("c", "b", 2, m=Tokens(2_000_000)),
               _thread("d", "a", 1, other=Tokens(5))]
    u = SessionUsage("s", Tokens(), Tokens(), threads)
    costs = subtree_costs(u, TABLE)
    assert [c.usd for c in costs] == [5.0, 4.0, 2.0, 0.0]
    # An unpriced model below makes the subtree's cost unknown, never a smaller number.
    assert [c.known for c in costs] == [None, 4.0, 2.0, None]
    assert costs[0].unpriced == {"other": Tokens(5)}
    assert thread_cost(threads[1], TABLE).known == 2.0


def test_costs_each_finite_whose_sum_is_not_are_one_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    one = Cost(usd=sys.float_info.max)
    big = PriceTable({"m": (1.5e308, 0.0, 0.0, 0.0)}, path="prices.json")
    with pytest.raises(GraphkitError, match=r"prices\.json: the cost of model 'm' is past"):
        one.add(big, "m", Tokens(1, 0, 0, 0))
    # Two threads costing 1.5e308 each (no price table reaches that per thread; the
    # sum's guard is what is tested): each finite, their subtree's sum not.
    monkeypatch.setattr(prices, "thread_cost", lambda t, table: Cost(usd=1.5e308))
    threads = [_thread("a", None, 0), _thread("b", "a", 1)]
    alone = subtree_costs(SessionUsage("s", Tokens(), Tokens(), threads[1:]), big)
    assert [c.usd for c in alone] == [1.5e308]
    with pytest.raises(GraphkitError, match="the cost of a subagent tree is past"):
        subtree_costs(SessionUsage("s", Tokens(), Tokens(), threads), big)
