"""Skewed shapes (bench/shapes.py): the answers stay right on them.

The snapshot reader answers a walk's first steps with vectorized scans and the
rest from Python indexes built once (``graphkit.enrich.snapshot_store._SCANS``);
``usage`` asks the store once for all sessions; continuations are walked from
one read of their edge table. Each path must answer exactly as the other and
as NetworkX. Speed itself is measured in ``bench/shapes.py``, not here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphkit.builds.run import build
from graphkit.enrich import snapshot_store as reader_module
from graphkit.enrich.base import LineageReader
from graphkit.enrich.networkx_store import NetworkXStore
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.queries.continuations import continued_by, continues
from graphkit.queries.lineage import lineage_many, session_tree, sessions
from graphkit.queries.prices import PriceTable, load_prices
from graphkit.queries.usage import SessionUsage, Tokens, session_usage
from graphkit.snapshot import write_snapshot
from tests.helpers.cli import graphkit
from tests.helpers.rows import row, table
from tests.helpers.usage_rows import generate


def _answers(store: LineageReader, ids: list[str], sids: list[str]) -> dict[str, object]:
    return {
        "lineage": [x.to_json() for x in lineage_many(store, ids)],
        "sessions": [s.to_json() for s in sessions(store)],
        "trees": [session_tree(store, s).to_json() for s in sids],
        "continues": [[c.to_json() for c in continues(store, s)] for s in sids],
        "continued_by": [[c.to_json() for c in continued_by(store, s)] for s in sids],
        "usage": [u.to_json() for u in session_usage(store, sids)],
    }


def test_indexed_and_scanned_snapshot_answers_are_networkx_answers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows, truth = generate()
    graph = build(table(rows)).graph
    write_snapshot(graph, tmp_path / "snap")
    nx = NetworkXStore()
    nx.load(graph)
    sids = [s.session_id for s in sessions(nx)]
    ids = [*truth.threads, *sids]
    want = _answers(nx, ids, sids)
    assert any(want["continues"]) and any(want["continued_by"])
    for scans in (0, 3, 10**9):  # indexes at once, after a few scans, never
        monkeypatch.setattr(reader_module, "_SCANS", scans)
        assert _answers(SnapshotReader(tmp_path / "snap"), ids, sids) == want, scans


def test_usage_of_many_sessions_at_once_is_each_alone(tmp_path: Path) -> None:
    rows, _ = generate()
    write_snapshot(build(table(rows)).graph, tmp_path / "snap")
    snap = SnapshotReader(tmp_path / "snap")
    sids = [s.session_id for s in sessions(snap)]
    together = [u.to_json() for u in session_usage(snap, sids)]
    alone = [session_usage(SnapshotReader(tmp_path / "snap"), [s])[0].to_json() for s in sids]
    assert together == alone and len(together) > 3


def _chain(n: int) -> list[dict[str, object]]:
    """One Codex session whose threads form one chain n deep."""
    tids = ["deep-s"] + [f"t{i:06d}" for i in range(1, n + 1)]
    return [row("deep-s", conversation_id=tids[i], parent_thread_id=tids[i - 1] if i else None,
                provider="openai", model="gpt-5-codex",
                attributes=json.dumps({"usage": {"input_tokens": 1, "output_tokens": 2}}))
            for i in range(n + 1)]


@pytest.fixture(scope="module")
def deep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("deep") / "snap"
    write_snapshot(build(table(_chain(20_000))).graph, d)
    return d


@pytest.mark.slow
def test_lineage_of_a_chain_20k_deep(deep: Path) -> None:
    snap = SnapshotReader(deep)
    bottom, top = lineage_many(snap, ["t020000", "t000001"])
    assert [r.id for r in bottom.ancestors] == [
        *(f"t{i:06d}" for i in range(19_999, 0, -1)), "deep-s", "deep-s"]
    assert bottom.descendants == []
    assert [r.id for r in top.descendants] == [f"t{i:06d}" for i in range(2, 20_001)]


@pytest.mark.slow
def test_cli_on_a_chain_20k_deep(deep: Path) -> None:
    got = graphkit("lineage", "t020000", "--snapshot", deep, "--json")
    assert got.returncode == 0, got.output
    answer = json.loads(got.output)
    assert len(answer["ancestors"]) == 20_001 and answer["ancestors"][-1]["id"] == "deep-s"
    got = graphkit("usage", "--snapshot", deep, "--json")
    assert got.returncode == 0, got.output
    (session,) = [json.loads(line) for line in got.output.splitlines()]
    threads = {t["id"]: t for t in session["threads"]}
    # Every thread's subtree holds itself and every thread below it.
    assert len(threads) == 20_001
    assert threads["t000001"]["subtree"]["output_tokens"] == 2 * 20_000
    assert threads["t020000"]["parent"] == "t019999"


@pytest.mark.slow
def test_a_resume_chain_of_5k_sessions(tmp_path: Path) -> None:
    n = 5000
    rows = [row(f"s{i:05d}", attributes=json.dumps(
        {"continues": {"session_id": f"s{i - 1:05d}", "how": "resume" if i % 2 else "fork"}}
        if i else {})) for i in range(n)]
    graph = build(table(rows)).graph
    write_snapshot(graph, tmp_path / "snap")
    nx = NetworkXStore()
    nx.load(graph)
    for store in (SnapshotReader(tmp_path / "snap"), nx):
        up = continues(store, f"s{n - 1:05d}")
        assert [(c.id, c.depth) for c in up] == [(f"s{i:05d}", n - 1 - i)
                                                 for i in range(n - 2, -1, -1)]
        assert [c.how for c in up[:2]] == ["resume", "fork"]  # s04999 (odd), s04998
        down = continued_by(store, "s00000")
        assert [c.id for c in down] == [f"s{i:05d}" for i in range(1, n)]


def _subtree_costs_by_sums(u: SessionUsage, table: PriceTable) -> list[tuple[str, list[str]]]:
    """The subtree costs as the terminal table shows them, added up the slow way:
    every thread and each one after it until the depth comes back."""
    from graphkit.cli.render import usd
    from graphkit.queries.prices import Cost, thread_cost

    own = [thread_cost(t, table) for t in u.threads]
    out = []
    for i, t in enumerate(u.threads):
        c = Cost()
        for j in range(i, len(u.threads)):
            if j > i and u.threads[j].depth <= t.depth:
                break
            c.usd += own[j].usd
            for m, tok in own[j].unpriced.items():
                c.unpriced[m] = c.unpriced.get(m, Tokens()) + tok
        out.append((usd(c), list(c.unpriced)))
    return out


@pytest.mark.slow
def test_subtree_costs_in_one_pass_are_the_sums(tmp_path: Path) -> None:
    from graphkit.cli.render import usd
    from graphkit.queries.prices import load_prices, subtree_costs

    rows, _ = generate()
    write_snapshot(build(table(rows)).graph, tmp_path / "snap")
    snap = SnapshotReader(tmp_path / "snap")
    prices = load_prices(None)
    answers = session_usage(snap, [s.session_id for s in sessions(snap)])
    assert any(len(u.threads) > 3 for u in answers)
    for u in answers:
        got = [(usd(c), list(c.unpriced)) for c in subtree_costs(u, prices)]
        assert got == _subtree_costs_by_sums(u, prices)
    # A chain 1,500 deep (the slow sums take ~1M steps).
    store = NetworkXStore()
    store.load(build(table(_chain(1500))).graph)
    (deep,) = session_usage(store, ["deep-s"])
    got = [(usd(c), list(c.unpriced)) for c in subtree_costs(deep, prices)]
    assert got == _subtree_costs_by_sums(deep, prices)
    assert got[0] == ("$0.0319", [])  # 1,501 threads of 1 input and 2 output tokens


def test_the_usage_table_of_a_deep_chain_stops_indenting(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Was: two blanks a level without end, 4·10⁸ blanks for a chain 20,000 deep. Now
    # the terminal table indents as `graphkit tree` does (DRAWN_LEVELS) and a deeper
    # thread says its depth.
    from graphkit.cli.query import DRAWN_LEVELS
    from graphkit.cli.usage import print_threads, usage_indent
    from graphkit.queries.usage_report import usage

    n = 3 * DRAWN_LEVELS
    write_snapshot(build(table(_chain(n))).graph, tmp_path / "snap")
    report = usage(SnapshotReader(tmp_path / "snap"), ["deep-s"], prices=load_prices())
    (u,) = report.sessions
    assert [t.depth for t in u.threads] == list(range(n + 1))
    print_threads(report)  # the session's row, then each thread a level below it
    out = capsys.readouterr().out
    assert f"depth {n + 1}: " in out and f"depth {DRAWN_LEVELS}: " not in out
    assert f"depth {DRAWN_LEVELS + 1}: " in out
    widest = 2 * DRAWN_LEVELS + len("└─ depth 99: t000099")
    assert all(len(line) <= widest + 120 for line in out.splitlines())
    assert usage_indent(0) == "" and usage_indent(2) == "    └─ "
    assert usage_indent(DRAWN_LEVELS) == "  " * DRAWN_LEVELS + "└─ "
    assert usage_indent(DRAWN_LEVELS + 5) == ("  " * DRAWN_LEVELS
                                              + f"└─ depth {DRAWN_LEVELS + 5}: ")
