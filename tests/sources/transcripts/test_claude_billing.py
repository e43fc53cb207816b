"""What Claude bills beyond the four token counts, as the transcript reader puts it in
the rows (issue 30, "cost as Claude bills it"): the advisor's iterations, web searches
(the API's own and a WebSearch result's ``searchCount``), the 1-hour cache writes and
Claude Code's own ``cost-state``; and the graph's sparse properties that carry them,
absent from the tables of data without them. Fixture: ``tests/fixtures/shaped/
claude-billing`` (see its README row)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from graphkit.builds.partitioned import build_local
from graphkit.builds.run import build
from graphkit.sources.transcripts import read_transcripts
from tests.helpers.paths import FIXTURES, SHAPED
from tests.helpers.rows import row, write_parquet
from tests.helpers.same_build import assert_same_snapshot, reference, same_summary
from tests.helpers.transcripts import write_jsonl

BILLING = SHAPED / "claude-billing"
SESSION = "b1110000-5555-4b00-8000-000000000005"


def _usages(folder: Path) -> list[dict[str, Any]]:
    """The ``attributes.usage`` of every row that carries one, in row order."""
    table = read_transcripts([folder]).table
    docs = [json.loads(a) for a in table.column("attributes").to_pylist() if a]
    return [d["usage"] for d in docs if "usage" in d]


def test_each_response_carries_what_claude_bills_beside_its_four_counts() -> None:
    advised, searching, answer = _usages(BILLING)
    # The advisor's response: the last line's counts (streamed lines carry partial ones),
    # its 1-hour writes, and the advisor_message iteration as the advisor's own usage.
    assert advised == {
        "input_tokens": 4, "output_tokens": 600, "cache_creation_input_tokens": 5000,
        "cache_read_input_tokens": 20000, "cache_creation_1h_input_tokens": 3000,
        "advisor": {"model": "claude-opus-4-8", "input_tokens": 12000, "output_tokens": 800,
                    "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 8000,
                    "cache_creation_1h_input_tokens": 1000}}
    # The WebSearch result's searchCount sits on the message whose call ran them.
    assert searching == {"input_tokens": 3, "output_tokens": 80,
                         "cache_creation_input_tokens": 500, "cache_read_input_tokens": 25000,
                         "web_search_requests": 2}
    assert answer == {"input_tokens": 5, "output_tokens": 300,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 25600}


def test_thinking_tokens_are_part_of_the_output_never_added() -> None:
    line = json.loads((BILLING / "projects" / "-home-dev-shop" / f"{SESSION}.jsonl")
                      .read_text().splitlines()[4])
    usage = line["message"]["usage"]
    assert usage["output_tokens_details"]["thinking_tokens"] == 450
    assert _usages(BILLING)[0]["output_tokens"] == usage["output_tokens"] == 600


def _session(tmp_path: Path, lines: list[dict[str, Any]]) -> Path:
    s = "c2220000-6666-4c00-8000-000000000006"
    base = {"sessionId": s, "isSidechain": False, "cwd": "/w"}
    write_jsonl(tmp_path / "-w" / f"{s}.jsonl", [{**base, **e} for e in lines])
    return tmp_path


def _call(uuid: str, at: str, call: str, name: str = "WebSearch") -> dict[str, Any]:
    return {"type": "assistant", "uuid": uuid, "timestamp": at, "requestId": f"r-{uuid}",
            "message": {"id": f"m-{uuid}", "role": "assistant", "model": "claude-sonnet-4-6",
                        "content": [{"type": "tool_use", "id": call, "name": name,
                                     "input": {"query": "q"}}],
                        "usage": {"input_tokens": 1, "output_tokens": 2}}}


def _result(uuid: str, at: str, call: str, tur: dict[str, Any]) -> dict[str, Any]:
    return {"type": "user", "uuid": uuid, "timestamp": at, "toolUseResult": tur,
            "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call, "content": "found"}]}}


def test_a_websearch_before_search_count_counts_its_server_searches(tmp_path: Path) -> None:
    """Before ``searchCount``, Claude Code's WebSearch result lists each server search
    (an object naming its ``srvtoolu_`` id) among text commentary; another tool's
    ``results`` are no searches, and a search count of a result never reads as tokens."""
    _session(tmp_path, [
        _call("a1", "2026-09-01T00:00:01Z", "t1"),
        _result("u1", "2026-09-01T00:00:02Z", "t1", {"query": "q", "results": [
            {"tool_use_id": "srvtoolu_1", "content": []}, "and then",
            {"tool_use_id": "srvtoolu_2", "content": []}, {"content": []}]}),
        _call("a2", "2026-09-01T00:00:03Z", "t2", name="mcp__search__find"),
        _result("u2", "2026-09-01T00:00:04Z", "t2", {"results": [
            {"tool_use_id": "srvtoolu_3"}]}),
        _call("a3", "2026-09-01T00:00:05Z", "t3"),
        _result("u3", "2026-09-01T00:00:06Z", "t3", {"searchCount": "two"}),
    ])
    searches = [u.get("web_search_requests") for u in _usages(tmp_path)]
    assert searches == [2, None, None]


def test_the_apis_own_web_searches_are_read_from_the_usage() -> None:
    usages = _usages(SHAPED / "claude-server-tools")
    assert [u.get("web_search_requests") for u in usages] == [2]


def test_cost_state_rides_on_one_row_of_its_session() -> None:
    table = read_transcripts([BILLING]).table
    docs = [json.loads(a) if a else {} for a in table.column("attributes").to_pylist()]
    states = [d["claude"]["cost_state"] for d in docs if "cost_state" in d.get("claude", {})]
    assert len(states) == 1
    assert states[0]["total_cost_usd"] == pytest.approx(0.181191)
    assert states[0]["models"]["claude-haiku-4-5-20251001"] == {
        "cost_usd": 0.0239, "input_tokens": 2400, "output_tokens": 300,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
        "web_search_requests": 2}


def _columns(graph: Any) -> dict[str, list[str]]:
    return {"Session": graph.nodes["Session"].table.column_names,
            "Thread": graph.nodes["Thread"].table.column_names,
            "USED_MODEL": graph.edges["USED_MODEL"].table.column_names}


def test_the_graph_carries_them_and_data_without_them_keeps_its_tables() -> None:
    cols = _columns(build([BILLING], fingerprints=False).graph)
    assert {"claude_cost_usd", "claude_cost_models"} <= set(cols["Session"])
    assert "claude_request_cost_usd" not in cols["Session"]  # HypAware's, none here
    assert {"cache_creation_1h_input_tokens", "web_search_requests"} <= set(cols["Thread"])
    assert cols["USED_MODEL"][-8:] == [
        "cache_creation_1h_input_tokens", "web_search_requests", "advisor_model",
        "advisor_input_tokens", "advisor_output_tokens",
        "advisor_cache_creation_input_tokens", "advisor_cache_creation_1h_input_tokens",
        "advisor_cache_read_input_tokens"]
    plain = _columns(build([SHAPED / "claude-compaction"], fingerprints=False).graph)
    assert plain["USED_MODEL"] == ["source", "target", "messages", "input_tokens",
                                   "output_tokens", "cache_creation_input_tokens",
                                   "cache_read_input_tokens"]
    assert plain["Session"][-4:] == ["input_tokens", "output_tokens",
                                     "cache_creation_input_tokens", "cache_read_input_tokens"]


def test_hypaware_otel_rows_carry_claudes_per_request_cost() -> None:
    rows = FIXTURES / "hypaware-capture-paths" / "rows"
    # Each response's cost_usd, once per message (the rows of its other parts, none here,
    # would carry no usage).
    each = {r["message_id"]: json.loads(r["attributes"])["claude"]["cost_usd"]
            for r in pq.read_table(rows / "otel.parquet").to_pylist()
            if "cost_usd" in json.loads(r["attributes"] or "{}").get("claude", {})}
    assert len(each) == 10
    otel = build([rows / "otel.parquet"], fingerprints=False).graph.nodes["Session"].table
    assert otel.column("claude_request_cost_usd").to_pylist() == [
        pytest.approx(sum(each.values()))]
    backfill = build([rows / "backfill.parquet"], fingerprints=False).graph
    assert "claude_request_cost_usd" not in backfill.nodes["Session"].table.column_names


def _billed_rows(folder: Path) -> Path:
    """Three sessions' rows, only one of them with billing fields: a partition of the
    others lacks the sparse columns, another has them."""
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 40,
             "cache_creation_1h_input_tokens": 30, "web_search_requests": 1,
             "advisor": {"model": "claude-opus-4-8", "input_tokens": 7}}
    rows = []
    for s in ("s-a", "s-b", "s-c"):
        for i in range(3):
            attrs = {"usage": usage if s == "s-b" else {"input_tokens": 3}}
            rows.append(row(s, message_id=f"{s}-{i}", model="claude-sonnet-4-6",
                            attributes=json.dumps(attrs)))
    return write_parquet(rows, folder / "rows.parquet")


@pytest.mark.parametrize("n", [2, 3])
def test_a_partitioned_build_puts_the_sparse_columns_where_the_in_memory_one_does(
        tmp_path: Path, n: int) -> None:
    rows = _billed_rows(tmp_path / "in")
    summary = reference([rows], tmp_path / "ref")
    r = build_local([rows], tmp_path / f"p{n}", partitions=n, fingerprints=False)
    assert same_summary(r.summary, summary)
    assert_same_snapshot(tmp_path / "ref", tmp_path / f"p{n}")
    edges = pq.read_table(tmp_path / f"p{n}" / "edges" / "USED_MODEL.parquet")
    # One thread a session, one model: s-b's edge has the advisor's 3 x 7 tokens.
    assert sorted(edges.column("advisor_input_tokens").to_pylist(), key=str) == [21, None, None]
