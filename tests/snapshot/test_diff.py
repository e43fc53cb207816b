"""graphkit diff: nodes and edges added, removed and changed between two snapshots."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from graphkit.builds.run import graph_from_records
from graphkit.core.errors import GraphkitError
from graphkit.core.graph import EdgeTable, GraphTables, NodeTable
from graphkit.snapshot import write_snapshot
from graphkit.snapshot.diff import diff_graphs, diff_snapshots
from tests.helpers.cli import graphkit
from tests.helpers.rows import CLAUDE, CODEX_ROOT, identity_cases, row, spawned


def _rows_without(rows: list[dict[str, Any]], message_ids: set[str]) -> list[dict[str, Any]]:
    return [r for r in rows if r["message_id"] not in message_ids and r["session_id"]]


def _week_pair() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Last week's rows (no nested subagent agentB, no Codex session) and this
    week's (agentB spawned by agentA, one more main-loop message, Codex gone)."""
    rows = identity_cases()
    old = _rows_without(rows, {"bm1"})
    new = _rows_without(rows, {"xm1", "ym1"})
    new.append(row(CLAUDE, message_id="cm3", role="user", cwd="/home/dev/src/webapp"))
    return old, new


def _snap(rows: list[dict[str, Any]], path: Path, **kw: Any) -> Path:
    write_snapshot(graph_from_records(rows), path, **kw)
    return path


def test_a_snapshot_against_itself_is_empty(tmp_path: Path) -> None:
    snap = _snap(identity_cases()[:-1], tmp_path / "s")
    d = diff_snapshots(snap, snap)
    assert d.is_empty()
    assert list(d.records()) == []
    assert d.counts() == {"nodes": {}, "edges": {}}
    r = graphkit("diff", snap, snap, "--json")
    assert r.returncode == 0, r.output
    assert [json.loads(x) for x in r.output.splitlines()] == [
        {"record": "diff", "nodes": {}, "edges": {}, "new_child_threads": {}}]
    assert graphkit("diff", snap, snap).output == "no differences\n"


def test_added_removed_and_changed_with_keys_and_properties(tmp_path: Path) -> None:
    old_rows, new_rows = _week_pair()
    old_g, new_g = graph_from_records(old_rows), graph_from_records(new_rows)
    d = diff_graphs(old_g, new_g)
    recs = list(d.records())
    by = {(r["record"], r["change"], r["type"]): r for r in recs}

    def keys(element: str, change: str, type_: str) -> list[str]:
        return sorted(r["key"] for r in recs
                      if (r["record"], r["change"], r["type"]) == (element, change, type_))

    # Ids are the deterministic node ids of each side's own tables.
    new_ids = dict(zip(new_g.nodes["Thread"].table.column("thread_id").to_pylist(),
                       new_g.nodes["Thread"].table.column("id").to_pylist(), strict=True))
    assert keys("node", "added", "Thread") == ["agentB"]
    assert by[("node", "added", "Thread")]["id"] == new_ids["agentB"]
    assert keys("node", "removed", "Thread") == sorted(
        {r["conversation_id"] for r in old_rows if r.get("conversation_id")})
    assert keys("node", "removed", "Session") == [CODEX_ROOT]
    assert keys("node", "added", "Agent") == ["agentB"]
    # The Claude session gained a message: its main thread and Session changed.
    changed_threads = [r for r in recs if r["change"] == "changed" and r["type"] == "Thread"]
    assert [r["key"] for r in changed_threads] == [CLAUDE]
    old_msgs = len({r["message_id"] for r in old_rows
                    if r["session_id"] == CLAUDE and not r.get("agent_id")})
    assert changed_threads[0]["changes"]["messages"] == {"old": old_msgs, "new": old_msgs + 1}
    last = changed_threads[0]["changes"]["last_seen"]
    assert last["new"] > last["old"] and last["new"].endswith("+00:00")
    # Edges name their ends by id and by the key a user would type.
    (parent,) = [r for r in recs if r["type"] == "PARENT_THREAD" and r["change"] == "added"]
    assert parent["source"] == {"type": "Thread", "id": new_ids["agentB"], "key": "agentB"}
    assert parent["target"] == {"type": "Thread", "id": new_ids["agentA"], "key": "agentA"}
    assert d.new_child_threads() == {CLAUDE: ["agentB"]}
    assert d.counts()["edges"]["HAS_AGENT"] == {"added": 1, "removed": 0, "changed": 0}


def test_cli_text_csv_and_json_agree(tmp_path: Path) -> None:
    old_rows, new_rows = _week_pair()
    old, new = _snap(old_rows, tmp_path / "old"), _snap(new_rows, tmp_path / "new")
    lines = [json.loads(x) for x in graphkit("diff", old, new, "--json").output.splitlines()]
    assert all(set(x) >= {"record"} for x in lines)
    summary = lines[-1]
    assert summary["record"] == "diff"
    assert summary["new_child_threads"] == {CLAUDE: ["agentB"]}
    changes = lines[:-1]
    assert sum(sum(c.values()) for kind in ("nodes", "edges")
               for c in summary[kind].values()) == len(changes)
    r = graphkit("diff", old, new, "--csv")
    table = list(csv.DictReader(io.StringIO(r.output)))
    # One CSV row per added/removed record, one per changed property.
    assert len(table) == sum(max(1, len(c["changes"])) for c in changes)
    msg = [t for t in table if t["type"] == "Thread" and t["property"] == "messages"]
    assert len(msg) == 1 and int(msg[0]["new"]) == int(msg[0]["old"]) + 1
    text = graphkit("diff", old, new).output
    assert "+ Thread agentB" in text and f"- Session {CODEX_ROOT}" in text
    assert "+ PARENT_THREAD agentB -> agentA" in text
    assert f"{CLAUDE}: 1 (agentB)" in text


def _graph(nodes: dict[str, pa.Table], edges: dict[str, pa.Table]) -> GraphTables:
    g = GraphTables("t", 1, 1, "thread")
    g.nodes = {t: NodeTable(t, ("k",), tab) for t, tab in nodes.items()}
    g.edges = {t: EdgeTable(t, "N", "N", tab) for t, tab in edges.items()}
    return g


def test_parallel_edges_schema_changes_and_lists() -> None:
    n_old = pa.table({"id": ["a", "b"], "k": ["ka", "kb"], "tags": [["x"], ["y"]],
                      "gone": [1, None]})
    n_new = pa.table({"id": ["a", "b"], "k": ["ka", "kb"], "tags": [["x"], ["y", "z"]],
                      "fresh": [None, 2.5]})
    e_old = pa.table({"source": ["a", "a"], "target": ["b", "b"], "w": [1, 2]})
    e_new = pa.table({"source": ["a", "a", "a"], "target": ["b", "b", "b"], "w": [1, 3, 4]})
    d = diff_graphs(_graph({"N": n_old}, {"E": e_old}), _graph({"N": n_new}, {"E": e_new}))
    (na,) = [r for r in d.records() if r["record"] == "node" and r["key"] == "ka"]
    (nb,) = [r for r in d.records() if r["record"] == "node" and r["key"] == "kb"]
    assert na["changes"] == {"gone": {"old": 1, "new": None}}
    assert nb["changes"] == {"tags": {"old": ["y"], "new": ["y", "z"]},
                             "fresh": {"old": None, "new": 2.5}}
    edges = d.edges["E"]
    # Three parallel a->b edges against two: two matched in order, one added.
    assert edges.counts() == {"added": 1, "removed": 0, "changed": 1}
    (changed,) = [r for r in edges.records() if r["change"] == "changed"]
    assert changed["changes"] == {"w": {"old": 2, "new": 3}}


def test_a_type_on_one_side_only_is_all_added_or_removed() -> None:
    n = pa.table({"id": ["a"], "k": ["ka"]})
    d = diff_graphs(_graph({"N": n}, {}), _graph({"M": n}, {}))
    assert d.counts()["nodes"] == {"M": {"added": 1, "removed": 0, "changed": 0},
                                   "N": {"added": 0, "removed": 1, "changed": 0}}


def test_content_needs_include_content(tmp_path: Path) -> None:
    rows = [dict(r, content_text="secret words") for r in identity_cases()[:-1]]
    g = graph_from_records(rows, granularity="message")
    write_snapshot(g, tmp_path / "c", include_content=True)
    plain = _snap(identity_cases()[:-1], tmp_path / "p")
    with pytest.raises(GraphkitError, match="holds message content"):
        diff_snapshots(plain, tmp_path / "c")
    r = graphkit("diff", plain, tmp_path / "c")
    assert r.returncode == 2 and len(r.output.strip().splitlines()) == 1
    assert "--include-content" in r.output
    ok = graphkit("diff", plain, tmp_path / "c", "--json", "--include-content")
    assert ok.returncode == 0 and '"Message"' in ok.output


def test_diff_of_two_builds_of_grown_history(tmp_path: Path) -> None:
    """A later build of the same rows plus a new subagent spawned by an old one."""
    rows = identity_cases()[:-1]
    more = [*rows, row(CLAUDE, agent_id="agentC", is_sidechain=True,
                       attributes=spawned("toolu_A", agent_type="Plan"), message_id="cc1")]
    d = diff_graphs(graph_from_records(rows), graph_from_records(more))
    assert d.new_child_threads() == {CLAUDE: ["agentC"]}
    assert {(r["type"], r["change"]) for r in d.records()} >= {
        ("Thread", "added"), ("Agent", "added"), ("HAS_THREAD", "added"),
        ("PARENT_THREAD", "added"), ("HAS_AGENT", "added")}
