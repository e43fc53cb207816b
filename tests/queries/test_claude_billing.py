"""Cost as Claude bills it (issue 30): the 1-hour cache writes at their rate, web
searches at the fee, the advisor's tokens at the advisor model's rate, thinking tokens
once (as output); and Claude Code's own figure (``cost-state``) beside graphkit's with
the gap and its cause. Fixture: ``tests/fixtures/shaped/claude-billing`` (its README
row); hostile shapes are written here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphkit.enrich.networkx_store import NetworkXStore
from graphkit.queries.prices import load_prices
from graphkit.queries.records import usage_records
from graphkit.queries.usage_report import UsageReport, usage
from tests.helpers.paths import SHAPED
from tests.helpers.transcripts import graph_of, skipped_lines, write_jsonl

BILLING = SHAPED / "claude-billing"
SESSION = "b1110000-5555-4b00-8000-000000000005"


def _report(*sources: Path, by: str | None = None) -> UsageReport:
    store = NetworkXStore()
    store.load(graph_of(*sources))
    return usage(store, by=by)


def _rate(model: str, kind: str) -> float:
    return getattr(load_prices().rates(model), kind)


def test_each_kind_is_priced_at_its_own_rate_and_the_advisor_at_its_model() -> None:
    # The fixture's counts by model (its README): the executor's, then the advisor's.
    sonnet = {"input": 12, "output": 980, "cache_creation": 5500 - 3000,
              "cache_creation_1h": 3000, "cache_read": 70600}
    opus = {"input": 12000, "output": 800, "cache_creation": 0, "cache_creation_1h": 1000,
            "cache_read": 8000}
    want_sonnet = sum(n * _rate("claude-sonnet-4-6", k) for k, n in sonnet.items()) / 1e6 \
        + 2 * _rate("claude-sonnet-4-6", "web_search") / 1000
    want_opus = sum(n * _rate("claude-opus-4-8", k) for k, n in opus.items()) / 1e6
    groups = {g.key: g for g in _report(BILLING, by="model").groups}
    assert sorted(groups) == ["claude-opus-4-8", "claude-sonnet-4-6"]
    assert groups["claude-sonnet-4-6"].cost.known == pytest.approx(want_sonnet)
    assert groups["claude-opus-4-8"].cost.known == pytest.approx(want_opus)
    # Thinking tokens (450 of the first response's 600) are output once, not added.
    assert groups["claude-sonnet-4-6"].tokens.output_tokens == 100 + 500 + 80 + 300
    assert groups["claude-sonnet-4-6"].tokens.web_search_requests == 2
    # The README's hand-computed figures, the same sums.
    assert (round(want_sonnet, 6), round(want_opus, 6)) == (0.083291, 0.094)


def test_claudes_own_figure_stands_beside_graphkits_with_the_gap_and_its_cause() -> None:
    report = _report(BILLING)
    [costs] = report.costs
    mine = costs.total.known
    assert mine == pytest.approx(0.177291)
    assert costs.claude is not None and costs.claude.source == "cost-state"
    assert costs.claude.usd == pytest.approx(0.181191)
    assert costs.claude.gap == pytest.approx(0.181191 - mine)
    # Claude counts the haiku request its WebSearch ran, which no message holds.
    assert costs.claude.cause is not None
    assert "claude-haiku-4-5 ($0.0239)" in costs.claude.cause
    [rec] = usage_records(report)
    assert (rec["claude_cost_usd"], rec["cost_gap_usd"]) == (0.181191, costs.claude.gap)


def _session(root: Path, sid: str, lines: list[dict[str, Any]]) -> None:
    base = {"sessionId": sid, "isSidechain": False, "cwd": "/w", "version": "2.1.271"}
    write_jsonl(root / "-w" / f"{sid}.jsonl", [{**base, **e} for e in lines])


def _answer(sid: str, usage_: dict[str, Any]) -> dict[str, Any]:
    return {"type": "assistant", "uuid": f"a-{sid}", "timestamp": "2026-09-20T10:00:01Z",
            "requestId": f"req-{sid}", "message": {
                "id": f"msg-{sid}", "role": "assistant", "model": "claude-sonnet-4-6",
                "content": [{"type": "text", "text": "x"}], "usage": usage_}}


def _advised(model: Any) -> dict[str, Any]:
    return {"input_tokens": 10, "output_tokens": 10, "iterations": [
        {"type": "message", "input_tokens": 10, "output_tokens": 10},
        {"type": "advisor_message", "model": model, "input_tokens": 1000,
         "output_tokens": 100}]}


def test_an_advisor_the_table_cannot_price_is_unpriced_with_a_note_never_zero(
        tmp_path: Path) -> None:
    _session(tmp_path, "s-unknown", [_answer("s-unknown", _advised("claude-mystery-9")),
                                     {"type": "cost-state", "totalCostUSD": 0.5}])
    _session(tmp_path, "s-nameless", [_answer("s-nameless", _advised(7))])
    by = {u.session_id: c for u, c in zip(*(lambda r: (r.sessions, r.costs))(
        _report(tmp_path)), strict=True)}
    unknown, nameless = by["s-unknown"], by["s-nameless"]
    assert unknown.total.known is None
    assert unknown.total.note == "no price for claude-mystery-9"
    assert nameless.total.known is None
    assert nameless.total.note == "1,100 tokens name no model"
    # Claude's figure stays; the gap is unknown, and says why.
    assert unknown.claude is not None and unknown.claude.usd == 0.5
    assert unknown.claude.gap is None
    assert unknown.claude.cause == "graphkit's figure is unknown (no price for claude-mystery-9)"
    assert nameless.claude is None


def test_a_cost_state_without_model_usage_gives_the_gap_and_no_cause(tmp_path: Path) -> None:
    _session(tmp_path, "s-bare", [_answer("s-bare", {"input_tokens": 1_000_000}),
                                  {"type": "cost-state", "totalCostUSD": 4.0,
                                   "modelUsage": ["not", "a", "map"]}])
    [costs] = _report(tmp_path).costs
    assert costs.total.known == pytest.approx(_rate("claude-sonnet-4-6", "input"))
    assert costs.claude is not None
    assert costs.claude.gap == pytest.approx(4.0 - costs.total.known)
    assert costs.claude.cause is None  # nothing says why: the CLI says "cause unknown"


@pytest.mark.parametrize("total", [-1.0, "12.5", None, True, "1e400", 2**53, 10**400])
def test_a_cost_state_whose_total_is_no_cost_is_a_skipped_line(tmp_path: Path,
                                                                total: Any) -> None:
    record = {"type": "cost-state", "totalCostUSD": total,
              "modelUsage": {"claude-sonnet-4-6": {"costUSD": -3, "inputTokens": 10**400}}}
    _session(tmp_path, "s-odd", [_answer("s-odd", {"input_tokens": 5})])
    path = tmp_path / "-w" / "s-odd.jsonl"
    text = json.dumps({"sessionId": "s-odd", **record})
    if total == "1e400":  # JSON's own number past a float: read as infinity
        text = text.replace('"1e400"', "1e400")
    elif total == 10**400:  # an integer of 401 digits: no float holds it
        assert str(10**400) in text
    path.write_text(path.read_text() + text + "\n")
    assert [(line, why) for _, line, why in skipped_lines(tmp_path)] == [
        (2, "cost-state record without a totalCostUSD from 0 to 9,007,199,254,740,991")]
    [costs] = _report(tmp_path).costs
    assert costs.claude is None


def test_negative_or_huge_model_counts_of_a_cost_state_are_left_out(tmp_path: Path) -> None:
    _session(tmp_path, "s-neg", [_answer("s-neg", {"input_tokens": 5}), {
        "type": "cost-state", "totalCostUSD": 0.25, "modelUsage": {"claude-sonnet-4-6": {
            "costUSD": 0.25, "inputTokens": -5, "outputTokens": 10**400,
            "cacheReadInputTokens": 7}}}])
    [costs] = _report(tmp_path).costs
    assert costs.claude is not None
    assert costs.claude.models == {"claude-sonnet-4-6": {"cost_usd": 0.25,
                                                         "cache_read_input_tokens": 7}}


def test_a_session_without_claudes_figure_keeps_its_record(tmp_path: Path) -> None:
    _session(tmp_path, "s-plain", [_answer("s-plain", {"input_tokens": 5})])
    report = _report(tmp_path)
    assert report.costs[0].claude is None
    [rec] = usage_records(report)
    assert not {"claude_cost_usd", "cost_gap_usd", "cost_gap_cause"} & set(rec)
    assert set(rec["total"]) == {"input_tokens", "output_tokens",
                                 "cache_creation_input_tokens", "cache_read_input_tokens"}


def test_a_background_sessions_figure_counting_its_origin_says_so() -> None:
    # Claude Code's running total goes on into the background copy: its cost-state
    # counts the origin's tokens too (the fixture's README row).
    report = _report(SHAPED / "claude-background-continuation")
    by = {u.session_id: c for u, c in zip(report.sessions, report.costs, strict=True)}
    origin, copy = "b9000000-1111-4a00-8000-000000000001", "b9000000-2222-4a00-8000-000000000002"
    assert by[origin].claude is None
    claude = by[copy].claude
    assert claude is not None and claude.usd == 0.0612
    assert claude.gap == pytest.approx(0.0612 - (by[copy].total.known or 0))
    assert claude.cause == ("Claude Code's figure counts the session this one continues "
                            f"(background) too, {origin}: the same tokens as both")


def test_the_causes_a_gap_can_have() -> None:
    from graphkit.queries.prices import ClaudeCost, Cost, compare_claude
    from graphkit.queries.tokens import Tokens

    table = load_prices()
    mine = {"claude-sonnet-4-6": Tokens(1_000_000, web_search_requests=1)}
    ours = Cost.of(table, mine)
    assert ours.known == pytest.approx(3.0 + 0.01)

    def gap(models: dict[str, dict[str, float]], usd: float = 9.0) -> str | None:
        return compare_claude(ClaudeCost(usd, "cost-state", models), ours, mine,
                              table).cause

    # The same tokens and searches, another price: rates the transcripts do not name.
    assert gap({"claude-sonnet-4-6": {"cost_usd": 9.0, "input_tokens": 1_000_000,
                                      "web_search_requests": 1}}) == (
        "the same tokens of claude-sonnet-4-6 at other rates than the price table's "
        "(fast mode, data residency or long context: the transcripts do not say)")
    assert gap({"claude-sonnet-4-6": {"cost_usd": 9.0, "input_tokens": 1_000_000,
                                      "web_search_requests": 3}}) == (
        "the same tokens of claude-sonnet-4-6 at other rates than the price table's "
        "(fast mode, data residency or long context: the transcripts do not say); "
        "Claude counted 3 web searches, the transcripts 1")
    assert gap({"claude-sonnet-4-6": {"input_tokens": 400_000}}) == (
        "the transcripts hold 600,000 more tokens of claude-sonnet-4-6 than Claude counted")
    # Equal figures: no gap, no cause.
    same = compare_claude(ClaudeCost(ours.known or 0, "cost-state"), ours, mine, table)
    assert (same.gap, same.cause) == (0, None)


def test_rows_whose_cost_state_models_hold_odd_values_keep_the_numbers_only(
        tmp_path: Path) -> None:
    # Rows written by other tools than graphkit's reader: attributes.claude.cost_state as
    # they please. A 400-digit count was an OverflowError traceback in `usage`.
    from tests.helpers.rows import row, write_parquet

    state = {"total_cost_usd": 1.25, "models": {
        "claude-sonnet-4-6": {"cost_usd": 1.25, "input_tokens": 10**400, "output_tokens": "7",
                              "cache_read_input_tokens": 3, "web_search_requests": True},
        "claude-haiku-4-5": "not a map"}}
    attrs = {"usage": {"input_tokens": 100}, "claude": {"cost_state": state}}
    text = json.dumps(attrs)
    assert str(10**400) in text
    source = write_parquet([row("s-rows", message_id="m1", model="claude-sonnet-4-6",
                                attributes=text)], tmp_path / "rows.parquet")
    [costs] = _report(source).costs
    assert costs.claude is not None and costs.claude.usd == 1.25
    assert costs.claude.models == {"claude-sonnet-4-6": {"cost_usd": 1.25,
                                                         "cache_read_input_tokens": 3}}
