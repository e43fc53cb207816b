"""Codex's ``~/.codex/state_<n>.sqlite``: spawn edges name the parents of threads whose
parent rollout is absent or archived, ``threads`` names them; read read-only, and a
database that cannot be read is a note (fixture ``tests/fixtures/shaped/codex-state-db``)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from graphkit.builds.run import build
from graphkit.sources.transcripts import read_transcripts
from graphkit.sources.transcripts.codex_state import read_state, state_databases
from tests.helpers.paths import SHAPED

HOME = SHAPED / "codex-state-db" / ".codex"
ROOT = "019f1000-0000-7000-8000-000000000001"
CHILD = "019f1000-0000-7000-8000-000000000002"
GRAND = "019f1000-0000-7000-8000-000000000003"
SIB = "019f1000-0000-7000-8000-000000000004"


def _threads(*sources: Path) -> dict[str, dict[str, Any]]:
    table = read_transcripts(list(sources)).table
    out: dict[str, dict[str, Any]] = {}
    for r in table.to_pylist():
        out.setdefault(r["conversation_id"], r)
    return out


def test_edges_give_sessions_and_parents_the_rollouts_lack() -> None:
    threads = _threads(HOME / "sessions")
    # the grandchild's parent (an archived child) has no rollout here: the edge names it,
    # and the session is the root reached through it
    assert (threads[GRAND]["session_id"], threads[GRAND]["parent_thread_id"]) == (ROOT, CHILD)
    assert (threads[SIB]["session_id"], threads[SIB]["parent_thread_id"]) == (ROOT, ROOT)
    assert threads[GRAND]["is_sidechain"] is True


def test_names_come_from_the_threads_table() -> None:
    import json

    threads = _threads(HOME / "sessions")
    codex = {t: json.loads(r["attributes"])["codex"] for t, r in threads.items()}
    assert (codex[SIB]["agent_nickname"], codex[SIB]["agent_role"]) == ("Hopper", "explorer")
    assert codex[ROOT]["thread_name"] == "Migration"


def test_the_graph_hangs_the_sibling_under_the_root() -> None:
    graph = build([HOME / "sessions"], fingerprints=False).graph
    assert graph.node_counts()["Session"] == 1
    t = graph.nodes["Thread"].table
    name = dict(zip(t.column("id").to_pylist(), t.column("thread_id").to_pylist(),
                    strict=True))
    e = graph.edges["PARENT_THREAD"].table
    assert [(name[a], name[b]) for a, b in zip(e.column("source").to_pylist(),
                                               e.column("target").to_pylist(),
                                               strict=True)] == [(SIB, ROOT)]


def test_the_database_is_found_from_the_home_or_a_rollout(tmp_path: Path) -> None:
    assert state_databases([HOME], []) == [HOME / "state_5.sqlite"]
    rollout = next((HOME / "sessions").rglob("*.jsonl"))
    assert state_databases([], [rollout]) == [HOME / "state_5.sqlite"]
    copy = tmp_path / ".codex"
    shutil.copytree(HOME, copy)
    shutil.copy(copy / "state_5.sqlite", copy / "state_7.sqlite")
    assert [p.name for p in state_databases([copy], [])] == ["state_7.sqlite",
                                                              "state_5.sqlite"]


def test_it_is_opened_read_only(tmp_path: Path) -> None:
    copy = tmp_path / ".codex"
    shutil.copytree(HOME, copy)
    db = copy / "state_5.sqlite"
    before = db.read_bytes()
    writer = sqlite3.connect(db)
    writer.execute("BEGIN IMMEDIATE")  # Codex writing meanwhile: reading does not block it
    state = read_state([db])
    writer.execute("INSERT INTO thread_spawn_edges VALUES ('x', 'y', 'open')")
    writer.rollback()
    writer.close()
    assert state.parents[GRAND] == CHILD and not state.notes
    assert db.read_bytes() == before


@pytest.mark.parametrize("damage", ["garbage", "no-tables", "wrong-columns"])
def test_a_database_that_cannot_be_read_is_a_note(tmp_path: Path, damage: str) -> None:
    copy = tmp_path / ".codex"
    shutil.copytree(HOME, copy)
    db = copy / "state_5.sqlite"
    db.unlink()
    if damage == "garbage":
        db.write_bytes(b"not a database at all" * 100)
    else:
        con = sqlite3.connect(db)
        if damage == "wrong-columns":
            con.execute("CREATE TABLE thread_spawn_edges (a TEXT, b TEXT)")
        con.close()
    result = read_transcripts([copy / "sessions"])
    assert result.table.num_rows == 6
    notes = [f for f in result.findings if f["check"] == "codex-state"]
    assert bool(notes) == (damage != "no-tables")
    build([copy / "sessions"], fingerprints=False)  # no traceback
