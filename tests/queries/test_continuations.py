"""Sessions that continue others: CONTINUES edges from rows, ``lineage --json``'s
``continues`` nearest first, ``tree`` showing both directions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphkit.builds.run import build
from graphkit.enrich.base import LineageReader
from graphkit.enrich.networkx_store import NetworkXStore
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.queries.continuations import continued_by, continues
from graphkit.queries.lineage import lineage, sessions
from graphkit.snapshot import write_snapshot
from tests.helpers.cli import graphkit
from tests.helpers.generated_transcripts import generate as generate_transcripts
from tests.helpers.paths import FIXTURES
from tests.helpers.rows import row, table
from tests.helpers.usage_rows import PLAN, claude_id, generate


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows, _ = generate()
    d = tmp_path_factory.mktemp("cont") / "snap"
    write_snapshot(build(table(rows)).graph, d)
    return d


@pytest.fixture(scope="module")
def stores(snapshot: Path) -> list[LineageReader]:
    rows, _ = generate()
    nx = NetworkXStore()
    nx.load(build(table(rows)).graph)
    return [nx, SnapshotReader(snapshot)]


def test_every_kind_of_continuation_is_an_edge(stores: list[LineageReader]) -> None:
    _, truth = generate()
    for store in stores:
        for sid, (origin, how) in truth.continues.items():
            got = continues(store, sid)
            assert got[0].id == origin and got[0].how == how, sid
        # A Codex child thread forks its parent's history but continues nothing.
        assert continues(store, "019a0000-root-0000") == []


def test_continues_is_nearest_first_along_the_chain(stores: list[LineageReader]) -> None:
    for store in stores:
        chain = continues(store, claude_id(3))
        assert [(c.id, c.how, c.depth) for c in chain] == [
            (claude_id(2), "compaction", 1), (claude_id(1), "branch", 2),
            (claude_id(0), "resume", 3)]
        assert [c.id for c in continued_by(store, claude_id(0))] == [
            claude_id(1), claude_id(2), claude_id(3)]
        assert [c.how for c in continued_by(store, claude_id(4))] == ["teammate"]


def test_lineage_json_gains_continues(stores: list[LineageReader]) -> None:
    for store in stores:
        sub = next(r.id for r in lineage(store, claude_id(2)).descendants)
        out = lineage(store, sub).to_json()  # a subagent: its session's chain
        assert out["continues"] == [
            {"type": "Session", "id": claude_id(1), "how": "branch"},
            {"type": "Session", "id": claude_id(0), "how": "resume"}]
        assert lineage(store, claude_id(0)).to_json()["continues"] == []


def test_cli_lineage_and_tree_show_continuations(snapshot: Path) -> None:
    r = graphkit("lineage", claude_id(1), "--snapshot", snapshot, "--json")
    assert json.loads(r.output)["continues"] == [
        {"type": "Session", "id": claude_id(0), "how": "resume"}]
    text = graphkit("lineage", claude_id(1), "--snapshot", snapshot)
    assert f"continues:   {claude_id(0)} (resume)" in text.output
    tree = graphkit("tree", claude_id(1), "--snapshot", snapshot)
    assert f"continues {claude_id(0)} (resume)" in tree.output
    assert f"continued by {claude_id(2)} (branch)" in tree.output
    records = [json.loads(x) for x in graphkit("tree", claude_id(1), "--snapshot", snapshot,
                                               "--json").output.splitlines()]
    links = [(r["direction"], r["id"], r["how"], r["depth"]) for r in records
             if r["record"] == "continuation"]
    assert links == [("continues", claude_id(0), "resume", 1),
                     ("continued_by", claude_id(2), "branch", 1),
                     ("continued_by", claude_id(3), "compaction", 2)]
    assert records[0]["record"] == "tree"
    rows = graphkit("lineage", claude_id(3), "--snapshot", snapshot, "--csv").output.splitlines()
    assert [r.split(",")[2:6] for r in rows if ",continues," in r] == [
        ["continues", "1", "Session", claude_id(2)], ["continues", "2", "Session", claude_id(1)],
        ["continues", "3", "Session", claude_id(0)]]


def test_a_missing_origin_is_dropped_and_counted() -> None:
    result = build(table([row("s2", attributes=json.dumps(
        {"continues": {"session_id": "not-loaded", "how": "fork"}}))]))
    assert result.graph.edge_counts()["CONTINUES"] == 0
    assert result.summary()["dropped_edges"]["CONTINUES"]["missing_target"] == 1


def test_plan_covers_every_claude_kind() -> None:
    assert {how for _, how in PLAN.values()} == {"resume", "branch", "compaction", "teammate"}


# --- from transcripts -------------------------------------------------------------------

TRANSCRIPTS = FIXTURES / "transcripts"


def test_transcript_continuations_of_every_kind(tmp_path: Path) -> None:
    truth = generate_transcripts(tmp_path)
    store = NetworkXStore()
    store.load(build([tmp_path / "claude", tmp_path / "codex"], fingerprints=False).graph)
    found = {}
    for s in sessions(store):
        chain = continues(store, s.session_id)
        if chain:
            found[s.session_id] = (chain[0].id, chain[0].how)
    assert found == truth.continues
    assert {how for _, how in found.values()} == {"resume", "branch", "compaction",
                                                  "teammate", "fork"}


def test_real_fixtures_continue_nothing(tmp_path: Path) -> None:
    # A plain copy of a session (same uuids, adds nothing), an in-session compaction,
    # and a Codex subagent forked from its parent thread are no continuations.
    log = TRANSCRIPTS / "claude-code-log"
    graph = build([log / "dag_compact_after_rewind.jsonl",
                   log / "dag_compact_after_rewind_preserved.jsonl", log / "codex"],
                  fingerprints=False).graph
    assert graph.edge_counts()["CONTINUES"] == 0
    assert graph.node_counts()["Session"] >= 4
