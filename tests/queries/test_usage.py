"""Token usage per thread, subtree and session: exact on generated rows with known
usage and on the HypAware fixture; the CLI's shapes, cost and time windows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from graphkit.builds.run import build
from graphkit.enrich.base import LineageReader
from graphkit.enrich.networkx_store import NetworkXStore
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.queries.lineage import sessions
from graphkit.queries.prices import Cost, load_prices, usage_groups
from graphkit.queries.usage import TOKEN_FIELDS, Tokens, require_sessions, session_usage
from graphkit.queries.window import Window
from graphkit.snapshot import write_snapshot
from graphkit.sources.iceberg import read_iceberg
from tests.helpers.cli import graphkit
from tests.helpers.generated_transcripts import Truth as TranscriptTruth
from tests.helpers.generated_transcripts import generate as generate_transcripts
from tests.helpers.paths import CACHE
from tests.helpers.rows import table
from tests.helpers.usage_rows import FIELDS, Truth, generate


def _stores(graph: Any, tmp: Path) -> Iterator[LineageReader]:
    nx = NetworkXStore()
    nx.load(graph)
    yield nx
    write_snapshot(graph, tmp / "snap")
    yield SnapshotReader(tmp / "snap")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[LineageReader], Truth]:
    rows, truth = generate()
    graph = build(table(rows)).graph
    return list(_stores(graph, tmp_path_factory.mktemp("gen"))), truth


def _expected_subtree(truth: Truth, tid: str) -> dict[str, int]:
    out = dict(truth.threads[tid].own)
    for other, t in truth.threads.items():
        if t.parent == tid:
            for f, n in _expected_subtree(truth, other).items():
                out[f] += n
    return out


def test_generated_usage_is_exact(generated: tuple[list[LineageReader], Truth]) -> None:
    stores, truth = generated
    sids = sorted({t.session_id for t in truth.threads.values()})
    for store in stores:
        answers = {u.session_id: u for u in session_usage(store, sids)}
        assert set(answers) == set(sids)
        for sid in sids:
            u = answers[sid]
            mine = truth.session_threads(sid)
            assert {t.id for t in u.threads} == set(mine)
            for t in u.threads:
                assert t.own.to_json() == mine[t.id].own, t.id
                assert t.subtree.to_json() == _expected_subtree(truth, t.id), t.id
                assert t.parent == mine[t.id].parent
                assert {m: tok.to_json() for m, tok in t.by_model.items()} == \
                    mine[t.id].by_model
            total = {f: sum(t.own[f] for t in mine.values()) for f in FIELDS}
            assert u.total.to_json() == total
            roots = [t for t in mine.values() if t.parent is None and t.kind != "subagent"]
            assert u.own.to_json() == {f: sum(t.own[f] for t in roots) for f in FIELDS}


def test_an_orphan_counts_in_the_total_not_the_session_own(
        generated: tuple[list[LineageReader], Truth]) -> None:
    stores, truth = generated
    orphan = next(k for k in truth.threads if k.startswith("orphan"))
    sid = truth.threads[orphan].session_id
    u = session_usage(stores[0], [sid])[0]
    t = next(t for t in u.threads if t.id == orphan)
    assert t.parent is None and t.depth == 0 and t.own.total() > 0
    main = next(t for t in u.threads if t.id == sid)
    assert u.own == main.own
    assert u.total == main.subtree + t.subtree


def _fixture_truth() -> dict[tuple[str, str], dict[str, int]]:
    """Usage per (session, thread) summed straight from the cache's attributes,
    each part_id once: the contract is not involved."""
    rows = read_iceberg(CACHE).to_pylist()
    out: dict[tuple[str, str], dict[str, int]] = {}
    seen = set()
    for r in rows:
        if r["part_id"] in seen:
            continue
        seen.add(r["part_id"])
        usage = json.loads(r["attributes"] or "{}").get("usage")
        thread = r["agent_id"] or r["conversation_id"] or r["session_id"]
        acc = out.setdefault((r["session_id"], thread), dict.fromkeys(FIELDS, 0))
        if usage:
            acc["input_tokens"] += usage.get("input_tokens", 0)
            acc["output_tokens"] += usage.get("output_tokens", 0)
            acc["cache_creation_input_tokens"] += usage.get("cache_write_tokens", 0)
            acc["cache_read_input_tokens"] += usage.get("cache_read_tokens", 0)
    return out


def test_hypaware_fixture_usage_is_exact(tmp_path: Path) -> None:
    truth = _fixture_truth()
    assert sum(sum(v.values()) for v in truth.values()) > 0
    graph = build(CACHE).graph
    for store in _stores(graph, tmp_path):
        got = {}
        for u in session_usage(store, require_sessions(store, [])):
            for t in u.threads:
                got[(u.session_id, t.id)] = t.own.to_json()
            total = {f: sum(v[f] for (s, _), v in truth.items() if s == u.session_id)
                     for f in FIELDS}
            assert u.total.to_json() == total
        assert got == truth
    # Nested subagents: the session C tree adds up through two levels.
    c = session_usage(store, ["9e4f0a36-5b7c-4d8e-9f10-2a3b4c5d6e03"])[0]
    sub = {t.id: t for t in c.threads}
    assert sub["c1aa11bb22cc33dd"].subtree == \
        sub["c1aa11bb22cc33dd"].own + sub["c2ee44ff55aa66bb"].own
    assert c.own == sub["9e4f0a36-5b7c-4d8e-9f10-2a3b4c5d6e03"].own


@pytest.fixture(scope="module")
def fixture_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("hyp") / "snap"
    write_snapshot(build(CACHE).graph, d)
    return d


def test_cli_json_has_the_issue_shape(fixture_snapshot: Path) -> None:
    r = graphkit("usage", "--snapshot", str(fixture_snapshot), "--json")
    assert r.returncode == 0, r.output
    lines = [json.loads(x) for x in r.output.splitlines()]
    assert len(lines) == 4
    for obj in lines:  # the issue's shape, after the record kind every read command names
        assert list(obj) == ["record", "session_id", "own", "total", "cost_usd", "cost_note",
                             "unpriced_models", "threads"]
        assert obj["record"] == "usage"
        for t in (obj["own"], obj["total"]):
            assert list(t) == list(TOKEN_FIELDS)
        for th in obj["threads"]:
            assert list(th) == ["id", "parent", "own", "subtree", "depth", "kind",
                                "agent_type", "own_cost_usd", "subtree_cost_usd", "cost_note"]
    one = graphkit("usage", "9e4f0a36-5b7c-4d8e-9f10-2a3b4c5d6e03", "--snapshot",
                str(fixture_snapshot), "--json")
    assert [json.loads(x)["session_id"] for x in one.output.splitlines()] == [
        "9e4f0a36-5b7c-4d8e-9f10-2a3b4c5d6e03"]


def test_unknown_session_is_one_line_exit_2(fixture_snapshot: Path) -> None:
    r = graphkit("usage", "nope", "--snapshot", fixture_snapshot)
    assert r.returncode == 2
    assert "no session has the id 'nope'" in r.output
    assert "Traceback" not in r.output


def test_by_model_costs_from_the_shipped_table_and_unknown_models_are_unpriced(
        fixture_snapshot: Path) -> None:
    by: dict[str, list[dict[str, Any]]] = {}
    for sid in ("5b0e7a52-1c7d-4c55-9a43-0f4a0c2d7a01", "019a7b10-2c3d-7e4f-8a9b-0c1d2e3f4a01"):
        r = graphkit("usage", sid, "--snapshot", str(fixture_snapshot), "--by", "model", "--json")
        assert r.returncode == 0, r.output
        for o in map(json.loads, r.output.splitlines()):
            assert o["record"] == "usage_group" and o["by"] == "model"
            assert o["session_id"] == sid and o["sessions"] == 1  # one session asked
            by.setdefault(o["session_id"], []).append(o)
    prices = load_prices()
    for g in by["5b0e7a52-1c7d-4c55-9a43-0f4a0c2d7a01"]:
        p = prices.models[g["key"]]
        cost = sum(g[f] * rate for f, rate in zip(TOKEN_FIELDS, p, strict=True)) / 1e6
        assert g["cost_usd"] == pytest.approx(cost) and g["unpriced_models"] == []
        assert g["cost_note"] is None
    codex = {g["key"]: g for g in by["019a7b10-2c3d-7e4f-8a9b-0c1d2e3f4a01"]}
    mini = codex["gpt-5-codex-mini"]
    assert mini["cost_usd"] is None and mini["input_tokens"] == 1052  # unpriced, not zero
    assert mini["unpriced_models"] == ["gpt-5-codex-mini"]
    assert mini["cost_note"] == "no price for gpt-5-codex-mini"
    assert codex["gpt-5-codex"]["cost_usd"] > 0
    # Every session: one group per model across them, adding the sessions' groups up.
    every = [json.loads(x) for x in graphkit("usage", "--snapshot", str(fixture_snapshot), "--by",
                                          "model", "--json").output.splitlines()]
    assert all(g["session_id"] is None for g in every)
    sonnet = next(g for g in every if g["key"] == "claude-sonnet-4-5")
    assert sonnet["sessions"] == 3 and sonnet["output_tokens"] == 835
    csv_out = graphkit("usage", "--snapshot", str(fixture_snapshot), "--by", "model", "--csv")
    assert csv_out.output.splitlines()[0].startswith("session_id,by,key,input_tokens")


def test_by_agent_type_groups_threads(fixture_snapshot: Path) -> None:
    r = graphkit("usage", "019a7b10-2c3d-7e4f-8a9b-0c1d2e3f4a01", "--snapshot",
              str(fixture_snapshot), "--by", "agent-type", "--json")
    groups = [json.loads(x) for x in r.output.splitlines()]
    assert {g["by"] for g in groups} == {"agent-type"}
    assert {g["key"]: g["output_tokens"] for g in groups} == {
        "thread": 410, "child-thread": 220}


def test_prices_file_overrides_and_bad_file_is_exit_2(fixture_snapshot: Path,
                                                      tmp_path: Path) -> None:
    mine = tmp_path / "prices.json"
    mine.write_text(json.dumps({"as_of": "2026-01-01", "models": {
        "gpt-5-codex-mini": {"input": 1.0, "output": 1.0, "cache_read": 1.0}}}))
    r = graphkit("usage", "019a7b10-2c3d-7e4f-8a9b-0c1d2e3f4a01", "--snapshot",
              str(fixture_snapshot), "--by", "model", "--json", "--prices", str(mine))
    groups = {g["key"]: g for g in map(json.loads, r.output.splitlines())}
    # The shipped table is not merged in: gpt-5-codex is unpriced now.
    assert groups["gpt-5-codex"]["unpriced_models"] == ["gpt-5-codex"]
    assert groups["gpt-5-codex"]["cost_usd"] is None
    mini = groups["gpt-5-codex-mini"]
    assert mini["cost_usd"] == pytest.approx((1052 + 220 + 2048) / 1e6)
    (tmp_path / "bad.json").write_text("{not json")
    bad = graphkit("usage", "--snapshot", fixture_snapshot, "--prices", tmp_path / "bad.json")
    assert bad.returncode == 2 and "not JSON" in bad.output


def test_shipped_price_table_is_dated_and_names_its_source() -> None:
    t = load_prices()
    assert t.as_of and datetime.fromisoformat(t.as_of)
    assert t.source and "anthropic.com" in t.source and "openai.com" in t.source
    assert t.price("claude-sonnet-4-5-20250929") == t.price("claude-sonnet-4-5")
    assert t.price("anthropic/claude-haiku-4-5") == t.price("claude-haiku-4-5")
    assert t.price("claude-sonnet-4-5-mystery") is None


def test_cost_of_mixed_models_is_unknown_not_partial() -> None:
    c = Cost()
    table = load_prices()
    c.add(table, "claude-haiku-4-5", Tokens(1_000_000, 0, 0, 0))
    assert c.known == pytest.approx(1.0)
    c.add(table, "model-nobody-prices", Tokens(5, 0, 0, 0))
    assert c.known is None and c.usd == pytest.approx(1.0)


def test_groups_add_up_to_the_session_total(generated: tuple[list[LineageReader],
                                                             Truth]) -> None:
    stores, _ = generated
    for u in session_usage(stores[1], require_sessions(stores[1], [])):
        for by in ("model", "agent-type"):
            groups = usage_groups(u, by, load_prices())
            total = Tokens()
            for g in groups:
                total = total + g.tokens
            assert total == u.total


def test_time_window_keeps_threads_active_in_it(
        generated: tuple[list[LineageReader], Truth]) -> None:
    stores, truth = generated
    store = stores[1]
    first = sorted(truth.first.items(), key=lambda kv: kv[1])
    cut = first[2][1]  # sessions lie hours apart: the first two end before it
    picked = require_sessions(store, [], Window(cut, None))
    assert picked == [s for s, t in first if t >= cut]
    before = require_sessions(store, [], Window(None, datetime(2026, 11, 20, 8, tzinfo=UTC)))
    assert before == []
    u = session_usage(store, [first[0][0]], Window(cut, None))[0]
    assert u.threads == [] and u.total == Tokens()


def test_cli_since_accepts_plain_words(fixture_snapshot: Path) -> None:
    r = graphkit("usage", "--snapshot", str(fixture_snapshot), "--json", "--since", "yesterday")
    assert r.returncode == 0 and r.output == ""  # the fixture is older than yesterday
    r = graphkit("usage", "--snapshot", str(fixture_snapshot), "--json", "--since",
              "2026-11-22", "--until", "2026-11-22")
    assert [json.loads(x)["session_id"] for x in r.output.splitlines()] == [
        "9e4f0a36-5b7c-4d8e-9f10-2a3b4c5d6e03"]
    bad = graphkit("usage", "--snapshot", fixture_snapshot, "--since", "last blue moon")
    assert bad.returncode == 2 and "--since" in bad.output


def test_table_and_tsv_output(fixture_snapshot: Path) -> None:
    r = graphkit("usage", "9e4f0a36-5b7c-4d8e-9f10-2a3b4c5d6e03", "--snapshot",
              str(fixture_snapshot))
    lines = r.output.splitlines()  # piped: TSV with one header
    assert lines[0].startswith("session_id\tthread\tparent\tdepth")
    rows = graphkit("usage", "9e4f0a36-5b7c-4d8e-9f10-2a3b4c5d6e03", "--snapshot",
                 str(fixture_snapshot), "--csv").output.splitlines()
    assert rows[0].startswith("session_id,thread,parent,depth") and len(rows) == 4
    assert [ln.split("\t")[1] for ln in lines[1:]] == [
        "9e4f0a36-5b7c-4d8e-9f10-2a3b4c5d6e03", "c1aa11bb22cc33dd", "c2ee44ff55aa66bb"]
    assert lines[3].split("\t")[2] == "c1aa11bb22cc33dd"


# --- from transcripts: Claude Code sessions and Codex rollouts ------------------------


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[LineageReader],
                                                                   TranscriptTruth]:
    root = tmp_path_factory.mktemp("transcripts")
    truth = generate_transcripts(root)
    graph = build([root / "claude", root / "codex"], fingerprints=False).graph
    return list(_stores(graph, root)), truth


def test_transcript_usage_is_exact(transcripts: tuple[list[LineageReader],
                                                      TranscriptTruth]) -> None:
    # Split responses counted once with their last line's numbers, a missing requestId
    # still a pair, Codex cumulative totals as deltas with cached input as cache reads,
    # a repeated token_count adding nothing, a fork's copied prefix not counted again.
    stores, truth = transcripts
    for store in stores:
        got, subtree = {}, {}
        for u in session_usage(store, require_sessions(store, [])):
            for t in u.threads:
                got[(u.session_id, t.id)] = t.own.to_json()
                subtree[(u.session_id, t.id)] = t.subtree.to_json()
                assert t.parent == truth.parents[(u.session_id, t.id)]
        assert got == {k: dict(v) for k, v in truth.own.items()}
        for (sid, tid), sub in subtree.items():
            below = [k for k in truth.own if k[0] == sid and _under(truth, k, tid)]
            assert sub == {f: sum(truth.own[k][f] for k in below) for f in FIELDS}


def _under(truth: TranscriptTruth, key: tuple[str, str], top: str) -> bool:
    cur: str | None = key[1]
    while cur is not None:
        if cur == top:
            return True
        cur = truth.parents[(key[0], cur)]
    return False


def test_replayed_prefixes_count_once_in_messages_and_tokens(
        transcripts: tuple[list[LineageReader], TranscriptTruth]) -> None:
    stores, truth = transcripts
    for store in stores:
        messages = {s.session_id: s.messages for s in sessions(store)}
        assert messages == truth.messages
        every = Tokens()
        for u in session_usage(store, require_sessions(store, [])):
            every = every + u.total
        assert every.to_json() == {f: sum(v[f] for v in truth.by_model.values())
                                   for f in FIELDS}


def test_transcript_usage_by_model(transcripts: tuple[list[LineageReader],
                                                      TranscriptTruth]) -> None:
    stores, truth = transcripts
    per: dict[str, Tokens] = {}
    for u in session_usage(stores[1], require_sessions(stores[1], [])):
        for m, tok in u.by_model().items():
            per[m] = per.get(m, Tokens()) + tok
    assert {m: t.to_json() for m, t in per.items()} == {
        m: {f: v.get(f, 0) for f in FIELDS} for m, v in truth.by_model.items()}
