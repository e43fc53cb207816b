"""The session list (graphkit.sessions): every store gives the same rows, tokens and
cost as usage adds them, within a time window too."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphkit.builds.run import build
from graphkit.enrich.base import LineageReader
from graphkit.enrich.networkx_store import NetworkXStore
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.queries.prices import load_prices, session_cost
from graphkit.queries.sessions import sessions
from graphkit.queries.usage import session_usage
from graphkit.queries.window import Window
from graphkit.snapshot import write_snapshot
from tests.helpers.rows import table
from tests.helpers.usage_rows import generate


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> list[LineageReader]:
    rows, _ = generate()
    graph = build(table(rows)).graph
    nx = NetworkXStore()
    nx.load(graph)
    d = tmp_path_factory.mktemp("sessions") / "snap"
    write_snapshot(graph, d)
    return [nx, SnapshotReader(d)]  # rows one by one; Arrow columns (usage_columns)


@pytest.mark.parametrize("since", [None, datetime(2026, 11, 20, 12, tzinfo=UTC)])
def test_every_store_lists_the_same_usage_as_usage_adds_it(
        stores: list[LineageReader], since: datetime | None) -> None:
    prices = load_prices()
    answers = [sessions(s, since=since, prices=prices) for s in stores]
    assert answers[0] == answers[1]
    assert any(r.tokens.total() for r in answers[0]) and any(r.models for r in answers[0])
    window = Window(since, None)
    for store in stores:
        rows = sessions(store, since=since, prices=prices)
        used = session_usage(store, [r.session_id for r in rows], window)
        for r, u in zip(rows, used, strict=True):
            assert r.tokens == u.total
            assert r.cost.known == session_cost(u, prices).known
            assert set(r.models) <= set(u.by_model())


def test_limit_keeps_the_most_recent(stores: list[LineageReader]) -> None:
    every = sessions(stores[1])
    assert sessions(stores[1], limit=2) == every[-2:]
    assert sessions(stores[1], limit=0) == []


def test_written_bounds_are_read_as_the_cli_reads_them(stores: list[LineageReader]) -> None:
    day = sessions(stores[1], since="2026-11-20", until="2026-11-20")
    assert 0 < len(day) < len(sessions(stores[1]))
    assert day == sessions(
        stores[1], since=datetime(2026, 11, 20, tzinfo=UTC),
        until=datetime(2026, 11, 20, 23, 59, 59, 999999, tzinfo=UTC))
