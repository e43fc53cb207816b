"""Lineage questions follow the vocabulary a contract declares, on every store,
and are refused clearly on a contract that declares none."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphkit.builds.run import build
from graphkit.core.errors import ContractError, QueryError
from graphkit.enrich.networkx_store import NetworkXStore
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.queries.lineage import ancestors, descendants, session_tree, sessions
from graphkit.snapshot import write_snapshot
from tests.helpers.cli import graphkit
from tests.helpers.rows import row, write_parquet

# Runs made of steps; a step names the step that started it. No Session, no
# Thread, no PARENT_THREAD anywhere: only the vocabulary says what is what.
RUNS = """
contract: runs
version: 1
input:
  session_id: {type: string, required: true}
  conversation_id: {type: string}
  parent_thread_id: {type: string}
  message_id: {type: string}
  message_created_at: {type: timestamp}
lineage:
  session: Run
  session_key: run_id
  thread: Step
  thread_key: step_id
  thread_session: run_id
  has_thread: HAS_STEP
  parent: STARTED_BY
nodes:
  - type: Run
    key: [session_id]
    properties: {run_id: {first: session_id}, first_seen: {min: message_created_at}}
  - type: Step
    key: [conversation_id]
    where: {not_null: [conversation_id]}
    properties: {step_id: {first: conversation_id}, run_id: {first: session_id}}
edges:
  - type: HAS_STEP
    where: {not_null: [conversation_id]}
    from: {type: Run, key: [session_id]}
    to: {type: Step, key: [conversation_id]}
  - type: STARTED_BY
    where: {not_null: [parent_thread_id]}
    from: {type: Step, key: [conversation_id]}
    to: {type: Step, key: [parent_thread_id]}
"""


def _rows(tmp_path: Path) -> Path:
    return write_parquet([
        row("r1", conversation_id="s1"),
        row("r1", conversation_id="s2", parent_thread_id="s1"),
        row("r1", conversation_id="s3", parent_thread_id="s2"),
    ], tmp_path / "rows.parquet")


@pytest.fixture()
def runs(tmp_path: Path) -> Path:
    path = tmp_path / "runs.yaml"
    path.write_text(RUNS)
    return path


def test_a_contract_with_its_own_vocabulary_answers_on_every_store(
        tmp_path: Path, runs: Path) -> None:
    graph = build(_rows(tmp_path), contract=str(runs)).graph
    nx_store = NetworkXStore()
    nx_store.load(graph)
    write_snapshot(graph, tmp_path / "snap")
    for store in (nx_store, SnapshotReader(tmp_path / "snap")):
        assert [(r.type, r.id) for r in ancestors(store, "s3")] == [
            ("Step", "s2"), ("Step", "s1"), ("Run", "r1")]
        assert [r.id for r in descendants(store, "s1")] == ["s2", "s3"]
        tree = session_tree(store, "r1")
        assert [c.ref.id for c in tree.children] == ["s1"]
        assert [(s.session_id, s.threads, s.agents) for s in sessions(store)] == [("r1", 3, 2)]


def test_a_contract_without_vocabulary_is_refused_by_name(tmp_path: Path, runs: Path) -> None:
    bare = tmp_path / "bare.yaml"
    bare.write_text(RUNS.split("lineage:")[0] + "nodes:" + RUNS.split("\nnodes:")[1])
    graph = build(_rows(tmp_path), contract=str(bare)).graph
    store = NetworkXStore()
    store.load(graph)
    with pytest.raises(QueryError, match="declares no lineage vocabulary"):
        ancestors(store, "s3")
    write_snapshot(graph, tmp_path / "snap")
    r = graphkit("sessions", "--snapshot", tmp_path / "snap")
    assert r.returncode == 2 and "contract 'runs' declares no lineage vocabulary" in r.output
    assert "Traceback" not in r.output


@pytest.mark.parametrize(("change", "message"), [
    (("parent: STARTED_BY", "parent: NOPE"), "names edge type 'NOPE'"),
    (("thread: Step", "thread: Nope"), "names node type 'Nope'"),
    (("thread_key: step_id", "thread_key: missing"), "have no property 'missing'"),
    (("has_thread: HAS_STEP", "has_thread: STARTED_BY"), "must go from Run to Step"),
    (("session: Run", "session: \"Run\\n\""), "not a valid label"),
])
def test_a_wrong_vocabulary_is_a_contract_error_with_its_line(
        tmp_path: Path, change: tuple[str, str], message: str) -> None:
    from graphkit.contract.loader import load_contract

    path = tmp_path / "bad.yaml"
    path.write_text(RUNS.replace(*change))
    with pytest.raises(ContractError, match=message) as err:
        load_contract(str(path))
    assert err.value.line is not None and err.value.line > 1
