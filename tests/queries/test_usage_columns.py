"""``usage`` over a snapshot by Arrow (:mod:`graphkit.queries.usage_columns`) gives
the per-session walk's answer: random graphs with subagent trees, orphans, parent
loops, continuations, one-row sessions with and without usage or model, with and
without time windows; and it walks only the sessions that are trees."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from graphkit.builds.run import build
from graphkit.core.graph import LineageVocabulary
from graphkit.enrich import snapshot_store as reader_module
from graphkit.enrich.base import Hit, LineageReader, SessionSummary, ThreadInfo
from graphkit.enrich.networkx_store import NetworkXStore
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.queries.usage import require_sessions, session_usage
from graphkit.queries.window import Window
from graphkit.snapshot import write_snapshot
from tests.helpers.rows import row, table
from tests.helpers.usage_rows import PLAN, Gen, claude_id


class Walked:
    """A snapshot reader seen as a plain :class:`LineageReader` (no Arrow tables):
    ``usage`` through it walks every session, as for NetworkX or Neo4j."""

    def __init__(self, inner: SnapshotReader) -> None:
        self.inner = inner

    @property
    def vocabulary(self) -> LineageVocabulary:
        return self.inner.vocabulary

    def resolve(self, user_id: str) -> list[Hit]:
        return self.inner.resolve(user_id)

    def parent_chain(self, thread_node_id: str) -> list[Hit]:
        return self.inner.parent_chain(thread_node_id)

    def descendant_threads(self, thread_node_id: str) -> list[tuple[Hit, int]]:
        return self.inner.descendant_threads(thread_node_id)

    def session_threads(self, session_id: str) -> list[ThreadInfo]:
        return self.inner.session_threads(session_id)

    def sessions(self) -> list[SessionSummary]:
        return self.inner.sessions()

    def node_rows(self, node_type: str, columns: Sequence[str],
                  where: tuple[str, Sequence[str]] | None = None) -> list[dict[str, Any]]:
        return self.inner.node_rows(node_type, columns, where)

    def edge_rows(self, edge_type: str, source_type: str, target_type: str,
                  columns: Sequence[str], sources: Sequence[str] | None = None,
                  targets: Sequence[str] | None = None) -> list[dict[str, Any]]:
        return self.inner.edge_rows(edge_type, source_type, target_type, columns,
                                    sources, targets)


class Counted(SnapshotReader):
    """A snapshot reader that counts the sessions asked for one at a time."""

    walked: list[str]

    def session_threads(self, session_id: str) -> list[ThreadInfo]:
        self.walked = [*getattr(self, "walked", []), session_id]
        return super().session_threads(session_id)


def _one_row_sessions(g: Gen, n: int) -> None:
    """Sessions of one row: usage or none, a model or none, some of them subagent
    rows whose spawning call is missing (an orphan alone in its session)."""
    r = g.rng
    for i in range(n):
        sid = f"one-{i:04d}"
        attrs: dict[str, Any] = {}
        if r.random() < 0.7:
            attrs["usage"] = {"input_tokens": r.randint(0, 900), "output_tokens": r.randint(0, 90)}
        kw: dict[str, Any] = {}
        if r.random() < 0.15:
            kw = {"agent_id": f"lone-{i}", "is_sidechain": True}
            attrs["claude"] = {"spawned_by_tool_use_id": "toolu_nowhere",
                               "agent_type": r.choice(["Explore", "Plan"]),
                               "description": f"look {i}"}
        g.rows.append(row(sid, message_id=f"one-m{i}", message_created_at=g.clock
                          + timedelta(minutes=r.randint(0, 3000)),
                          model=r.choice(["claude-sonnet-4-5", "gpt-5-codex", None]),
                          attributes=json.dumps(attrs) if attrs else None, **kw))


def _loop(g: Gen, sid: str) -> None:
    """A Codex session whose two child threads name each other as parent."""
    for me, other in (("loop-a", "loop-b"), ("loop-b", "loop-a")):
        g.rows.append(row(sid, conversation_id=me, parent_thread_id=other, provider="openai",
                          message_id=f"{me}-m", model="gpt-5-codex",
                          message_created_at=g.clock, attributes=json.dumps(
                              {"usage": {"input_tokens": 5, "output_tokens": 7}})))


def random_rows(seed: int) -> list[dict[str, Any]]:
    g = Gen(seed)
    r = g.rng
    for i in range(r.randint(2, 7)):
        plan = PLAN.get(i)
        g.claude_session(claude_id(i), depth=r.randint(1, 4),
                         continues=(claude_id(plan[0]), plan[1]) if plan and r.random() < 0.7
                         else None)
        if r.random() < 0.4:
            g.orphan(claude_id(i))
        g.clock += timedelta(hours=r.randint(0, 8))
    for i in range(r.randint(0, 3)):
        g.codex_session(f"019a0000-root-{seed}-{i}", children=r.randint(0, 3))
    _one_row_sessions(g, r.randint(5, 40))
    if r.random() < 0.5:
        _loop(g, "loop-session")
    return g.rows


def _answer(reader: LineageReader, window: Window) -> list[Any]:
    ids = require_sessions(reader, [], window)
    return [ids] + [(u.to_json(), {t.id: {m: k.to_json() for m, k in t.by_model.items()}
                                   for t in u.threads},
                     [(t.kind, t.agent_type, t.depth) for t in u.threads])
                    for u in session_usage(reader, ids, window)]


def _windows(rows: list[dict[str, Any]], rng: random.Random) -> list[Window]:
    times = sorted(r["message_created_at"] for r in rows)
    out = [Window()]
    for _ in range(3):
        a, b = sorted(rng.sample(times, 2))
        out += [Window(a, b), Window(a, None), Window(None, b)]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_columnar_usage_equals_the_walk(tmp_path: Path, seed: int) -> None:
    rows = random_rows(seed)
    graph = build(table(rows)).graph
    write_snapshot(graph, tmp_path / "snap")
    nx = NetworkXStore()
    nx.load(graph)
    snap = SnapshotReader(tmp_path / "snap")
    for w in _windows(rows, random.Random(seed)):
        columnar = _answer(snap, w)
        assert columnar == _answer(Walked(SnapshotReader(tmp_path / "snap")), w)
        assert columnar == _answer(nx, w)


def test_session_thread_table_is_session_threads(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    rows = random_rows(3)
    # With content: a subagent's description is content (issue 31), and both ways of
    # answering must carry it alike.
    write_snapshot(build(table(rows), include_content=True).graph, tmp_path / "snap",
                   include_content=True)
    snap = SnapshotReader(tmp_path / "snap")
    ids = [*[s.session_id for s in snap.sessions()][::-1], "no-such-session"]
    info, extra = snap.session_thread_table(ids, ["input_tokens", "messages"])
    got: dict[int, list[ThreadInfo]] = {}
    for r in info.to_pylist():
        got.setdefault(r.pop("session"), []).append(ThreadInfo(**r))
    monkeypatch.setattr(reader_module, "_SCANS", 0)  # session_threads from the Python index
    indexed = SnapshotReader(tmp_path / "snap")
    assert any(t.agent_type and t.description for ts in got.values() for t in ts)
    for i, sid in enumerate(ids):
        assert got.get(i, []) == indexed.session_threads(sid), sid
    assert extra.column_names == ["input_tokens", "messages"]
    assert extra.column("messages").to_pylist() == info.column("messages").to_pylist()


def test_only_sessions_that_are_trees_are_walked(tmp_path: Path) -> None:
    g = Gen(11)
    g.claude_session(claude_id(0), depth=2)
    _one_row_sessions(g, 30)
    write_snapshot(build(table(g.rows)).graph, tmp_path / "snap")
    reader = Counted(tmp_path / "snap")
    answers = session_usage(reader, require_sessions(reader, []))
    assert len(answers) == 31
    # No session asked for one at a time: the one with subagents is built as a
    # tree from the same table as the others.
    assert getattr(reader, "walked", []) == []
    assert any(len(u.threads) > 1 for u in answers)


def test_a_session_asked_twice_is_answered_twice(tmp_path: Path) -> None:
    g = Gen(5)
    g.claude_session(claude_id(0), depth=2)
    _one_row_sessions(g, 3)
    write_snapshot(build(table(g.rows)).graph, tmp_path / "snap")
    snap = SnapshotReader(tmp_path / "snap")
    ids = [claude_id(0), "one-0001", claude_id(0)]
    assert [u.to_json() for u in session_usage(snap, ids)] == \
        [u.to_json() for u in session_usage(Walked(snap), ids)]
