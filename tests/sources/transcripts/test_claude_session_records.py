"""Claude Code 2.1.2xx–3xx: the records that are no message but say something of the
session (continued-in, the jobs' state.json, fork-context-ref, relocated, worktree-state,
cost-state), the new bookkeeping records, side runs and Warmup files. Fixtures under
``tests/fixtures/shaped/`` (see its README for the sources of each shape)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from graphkit.builds.run import build, check
from graphkit.sources.transcripts import default_transcript_roots, read_transcripts
from tests.helpers.paths import SHAPED
from tests.helpers.transcripts import write_jsonl


def _graph(*sources: Path) -> Any:
    return build(list(sources), fingerprints=False).graph


def _threads(graph: Any) -> dict[str, dict[str, Any]]:
    return {r["thread_id"]: r for r in graph.nodes["Thread"].table.to_pylist()}


def _continues(graph: Any) -> list[tuple[str, str, str]]:
    s = graph.nodes["Session"].table
    name = dict(zip(s.column("id").to_pylist(), s.column("session_id").to_pylist(),
                    strict=True))
    e = graph.edges["CONTINUES"].table
    return sorted((name[a], name[b], h) for a, b, h in zip(
        e.column("source").to_pylist(), e.column("target").to_pylist(),
        e.column("how").to_pylist(), strict=True))


def _parents(graph: Any) -> dict[str, str]:
    t = graph.nodes["Thread"].table
    name = dict(zip(t.column("id").to_pylist(), t.column("thread_id").to_pylist(),
                    strict=True))
    e = graph.edges["PARENT_THREAD"].table
    return {name[a]: name[b] for a, b in zip(e.column("source").to_pylist(),
                                             e.column("target").to_pylist(), strict=True)}


OLD, NEW = "b9000000-1111-4a00-8000-000000000001", "b9000000-2222-4a00-8000-000000000002"


def test_a_background_continuation_continues_and_its_copy_counts_once() -> None:
    """``/background`` moved the conversation to a new session id, which replays the old
    one's three lines (same uuids, restamped, ``sessionKind: "bg"``): one CONTINUES edge
    (how ``background``), each replayed message and its usage in the old session only."""
    graph = _graph(SHAPED / "claude-background-continuation")
    assert _continues(graph) == [(NEW, OLD, "background")]
    threads = _threads(graph)
    assert (threads[OLD]["messages"], threads[OLD]["output_tokens"]) == (3, 200)
    assert (threads[NEW]["messages"], threads[NEW]["output_tokens"]) == (1, 300)
    # tokens equal to the raw file's responses, each once: 200 + 300
    sessions = graph.nodes["Session"].table.to_pylist()
    assert sum(s["output_tokens"] for s in sessions) == 500
    assert read_transcripts([SHAPED / "claude-background-continuation"]).skipped == []


def test_the_copy_alone_is_read_whole(tmp_path: Path) -> None:
    """Without the old transcript the copy is all there is of those messages: kept."""
    shutil.copytree(SHAPED / "claude-background-continuation", tmp_path / "src")
    (tmp_path / "src" / "-home-dev-app" / f"{OLD}.jsonl").unlink()
    threads = _threads(_graph(tmp_path / "src"))
    assert threads[NEW]["messages"] == 4


def test_a_jobs_state_json_gives_the_fork_its_parent() -> None:
    root = SHAPED / "claude-job-fork" / ".claude"
    graph = _graph(root / "projects", root / "jobs")
    assert _continues(graph) == [("f0b00000-2222-4b00-8000-000000000002",
                                  "f0b00000-1111-4b00-8000-000000000001", "background")]
    assert _continues(_graph(root / "projects")) == []  # the state is what says it


def test_build_with_no_source_reads_the_jobs_beside_the_projects(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    shutil.copytree(SHAPED / "claude-job-fork" / ".claude", home / ".claude")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    roots = default_transcript_roots()
    assert home / ".claude" / "jobs" in roots
    result = read_transcripts(roots)
    assert result.skipped == []
    assert "background" in "".join(a or "" for a in result.table["attributes"].to_pylist())


@pytest.mark.parametrize("state", ["{", "[1]", '{"forkSessionId": 5}'])
def test_a_broken_jobs_state_is_said_or_ignored(tmp_path: Path, state: str) -> None:
    job = tmp_path / ".claude" / "jobs" / "abc" / "state.json"
    job.parent.mkdir(parents=True)
    job.write_text(state)
    result = read_transcripts([tmp_path / ".claude" / "jobs"])
    assert result.table.num_rows == 0
    assert all("state.json" in s.reason or s.line == 1 for s in result.skipped)


def test_a_fork_subagent_hangs_under_the_call_of_the_thread_it_forked() -> None:
    """The fork's file opens with ``fork-context-ref``; no sidecar, no result naming it:
    the ``fork`` Agent call of the thread holding ``parentLastUuid`` spawned it, and the
    context it inherited (copied in) is not its own messages or usage."""
    graph = _graph(SHAPED / "claude-fork-subagent")
    session = "f0c00000-3333-4c00-8000-000000000003"
    assert _parents(graph) == {"a7f0c0de0000fork": session}
    threads = _threads(graph)
    fork = threads["a7f0c0de0000fork"]
    assert (fork["kind"], fork["messages"], fork["input_tokens"], fork["output_tokens"]) == (
        "subagent", 2, 3, 150)
    assert (threads[session]["messages"], threads[session]["output_tokens"]) == (4, 130)
    agent = graph.nodes["Agent"].table.to_pylist()
    assert [(a["agent_id"], a["agent_type"]) for a in agent] == [("a7f0c0de0000fork", "fork")]


def test_new_records_are_known_and_side_runs_are_their_own_kind() -> None:
    result = read_transcripts([SHAPED / "claude-side-runs"])
    assert result.skipped == []  # frame-link, atis-latch, relocated, … are known
    assert result.agents == {"prompt-suggestion": 1, "side-question": 1}
    assert not [f for f in result.findings if f["check"] == "orphan-subagent"]
    graph = _graph(SHAPED / "claude-side-runs")
    kinds = {k: v["kind"] for k, v in _threads(graph).items()}
    assert kinds["aprompt_suggestion-33a4cf"] == "prompt-suggestion"
    assert kinds["aside_question-9b1c2d"] == "side-question"
    # worktree-state and relocated: the session works in the worktree of /home/dev/app
    assert graph.nodes["Workspace"].table.select(["cwd", "repo_root"]).to_pylist() == [
        {"cwd": "/home/dev/app/.claude/worktrees/calm-otter", "repo_root": "/home/dev/app"}]


def test_a_warmup_file_with_two_session_ids_is_one_agent_of_one_session() -> None:
    graph = _graph(SHAPED / "claude-warmup-two-sessions")
    agents = graph.nodes["Agent"].table.to_pylist()
    assert [(a["agent_id"], a["session_id"]) for a in agents] == [
        ("7e7e7e7e", "c0ffee00-6666-4a5b-9c8d-000000000061")]
    assert graph.node_counts()["Session"] == 1
    _, findings = check([SHAPED / "claude-warmup-two-sessions"])
    assert not [f for f in findings if f.check.endswith("-in-two-sessions")]


@pytest.mark.slow
def test_a_present_session_without_messages_is_said_so() -> None:
    _, findings = check([SHAPED / "claude-empty-session"])
    checks = {f.check for f in findings}
    assert "session-without-messages" in checks and "missing-session" not in checks
    # the subagent of a session whose file is absent is still a missing session
    _, findings = check([SHAPED / "claude-missing-session"])
    assert "missing-session" in {f.check for f in findings}


@pytest.mark.parametrize("record", [
    {"type": "continued-in", "sessionId": "s"},
    {"type": "cost-state", "sessionId": "s", "totalCostUSD": "lots"},
    {"type": "cost-state", "totalCostUSD": 1.5, "modelUsage": [1, 2]},
    {"type": "fork-context-ref", "agentId": ["x"], "parentLastUuid": 7},
    {"type": "worktree-state", "worktreeSession": "elsewhere"},
    {"type": "relocated", "relocatedCwd": None},
])
def test_hostile_session_records(tmp_path: Path, record: dict[str, Any]) -> None:
    """A session record of the wrong shape is a skipped line or nothing; no traceback."""
    s = "a0000000-0000-4000-8000-00000000000a"
    write_jsonl(tmp_path / "-w" / f"{s}.jsonl", [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": s,
         "timestamp": "2026-09-01T00:00:00Z", "message": {"role": "user", "content": "hi"}},
        record])
    result = read_transcripts([tmp_path])
    assert result.table.num_rows == 1
    assert all(s.line == 2 for s in result.skipped)
    build([tmp_path], fingerprints=False)


def test_cost_state_is_kept_in_the_facts() -> None:
    from graphkit.sources.transcripts.claude import parse_claude

    path = SHAPED / "claude-background-continuation" / "-home-dev-app" / f"{NEW}.jsonl"
    facts = parse_claude(path, path.read_bytes()).facts
    assert facts["cost_state"][NEW]["total_cost_usd"] == pytest.approx(0.0612)
    assert json.dumps(facts)  # facts stay JSON (the index keeps them)
