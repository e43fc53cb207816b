"""Claude Code transcripts → rows: every Claude fixture file, then each pitfall on a built file.

Expectations were derived by reading the fixture files (see the comment on each test).
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from graphkit.core.errors import SourceError
from graphkit.sources.transcripts import read_transcripts
from tests.helpers.transcripts import (
    assert_well_formed,
    assistant,
    fixtures,
    text,
    tool_result,
    tool_use,
    user,
    write_jsonl,
)

LOG = fixtures() / "transcripts" / "claude-code-log"
CCT = fixtures() / "transcripts" / "claude-code-transcripts"


def read(*paths: Path, **kw: Any) -> pa.Table:
    table = read_transcripts(list(paths), **kw).table
    assert_well_formed(table)
    return table


def threads(table: pa.Table) -> dict[tuple[str, str | None], dict[str, Any]]:
    """(session, agent) → rows, messages, is_sidechain values, spawned_by, attributes."""
    out: dict[tuple[str, str | None], dict[str, Any]] = {}
    for r in table.to_pylist():
        t = out.setdefault((r["session_id"], r["agent_id"]), {
            "rows": 0, "messages": set(), "sidechain": set(), "attrs": set()})
        t["rows"] += 1
        t["messages"].add(r["message_id"])
        t["sidechain"].add(r["is_sidechain"])
        doc = {k: v for k, v in json.loads(r["attributes"] or "{}").items() if k != "usage"}
        t["attrs"].add(json.dumps(doc, sort_keys=True) if doc else None)  # usage is per row
        assert r["conversation_id"] is None and r["parent_thread_id"] is None
        assert r["provider"] == "anthropic" and r["gateway_id"] == "graphkit-local"
    for t in out.values():
        t["messages"] = len(t["messages"])
        (attrs,) = t["attrs"]  # one value per thread
        t["claude"] = json.loads(attrs)["claude"] if attrs else {}
    return out


def test_dag_compact_after_rewind() -> None:
    # 12 lines, all user/assistant/system of session s1: rewind (b1*, b2* both under a1),
    # compact_boundary (parentUuid null, logicalParentUuid b2a2), isCompactSummary cs.
    table = read(LOG / "dag_compact_after_rewind.jsonl")
    assert {k: (v["rows"], v["messages"]) for k, v in threads(table).items()} == {
        ("s1", None): (12, 12)}
    rows = {r["message_id"]: r for r in table.to_pylist()}
    assert rows["b2u"]["previous_message_id"] == '["a1"]'  # the rewind branch point
    boundary = rows["cb"]
    assert (boundary["role"], boundary["provider_subtype"]) == ("system", "compact_boundary")
    assert boundary["previous_message_id"] == "[]"
    assert boundary["logical_parent_uuid"] == "b2a2"
    assert json.loads(boundary["compact_metadata"]) == {"trigger": "auto", "preTokens": 150000}
    assert rows["cs"]["is_compact_summary"] is True
    assert [r["message_index"] for r in table.to_pylist()] == list(range(12))
    assert rows["a1"]["model"] == "claude-sonnet-4-20250514" and rows["u1"]["model"] is None


def test_dag_compact_preserved_keeps_file_order() -> None:
    # The preserved tail b2a2 is written again after cs, out of timestamp order (10:21).
    rows = {r["message_id"]: r for r in read(
        LOG / "dag_compact_after_rewind_preserved.jsonl").to_pylist()}
    assert len(rows) == 12 and {r["session_id"] for r in rows.values()} == {"s2"}
    assert rows["b2a2"]["message_index"] == 9
    assert rows["b2a2"]["previous_message_id"] == '["cs"]'
    assert rows["b2a2"]["conversation_started_at"] == rows["u1"]["message_created_at"]


def test_minimal_showcase_session_with_two_agent_subagents() -> None:
    # Main file: 11 entries, 14 content blocks; sc-a4 calls Agent twice (showcol1, showcol2);
    # subagents/agent-showcol1.jsonl (2 lines) and agent-showcol2.jsonl (4 lines) + metas.
    sid = "55550000-0000-4000-8000-000000000001"
    table = read(LOG / "minimal_showcase" / f"{sid}.jsonl", LOG / "minimal_showcase" / sid)
    got = threads(table)
    assert {k: (v["rows"], v["messages"]) for k, v in got.items()} == {
        (sid, None): (14, 11), (sid, "showcol1"): (2, 2), (sid, "showcol2"): (4, 4)}
    assert got[(sid, "showcol1")]["claude"] == {
        "spawned_by_tool_use_id": "toolu_sc_showcol1", "agent_type": "general-purpose",
        "description": "Survey the web module"}
    assert got[(sid, "showcol2")]["claude"]["spawned_by_tool_use_id"] == "toolu_sc_showcol2"
    assert got[(sid, "showcol1")]["sidechain"] == {True}
    assert got[(sid, None)]["sidechain"] == {False} and got[(sid, None)]["claude"] == {}
    calls = {r["tool_call_id"]: r for r in table.to_pylist() if r["part_type"] == "tool_call"}
    assert calls["toolu_sc_showcol1"]["tool_name"] == "Agent"
    assert calls["toolu_sc_showcol1"]["message_id"] == "sc-a4"


def test_minimal_showcase_links_without_meta_sidecars(tmp_path: Path) -> None:
    # Without metas the links come from toolUseResult.agentId / the "agentId:" footers.
    sid = "55550000-0000-4000-8000-000000000001"
    shutil.copy(LOG / "minimal_showcase" / f"{sid}.jsonl", tmp_path)
    shutil.copytree(LOG / "minimal_showcase" / sid, tmp_path / sid)
    for meta in tmp_path.rglob("*.meta.json"):
        meta.unlink()
    got = threads(read(tmp_path))
    assert got[(sid, "showcol1")]["claude"] == {
        "spawned_by_tool_use_id": "toolu_sc_showcol1", "agent_type": "general-purpose",
        "description": "Survey the web module"}  # type/description from the Agent call
    assert got[(sid, "showcol2")]["claude"]["spawned_by_tool_use_id"] == "toolu_sc_showcol2"


@pytest.mark.parametrize(("name", "rows", "messages", "parts"), [
    # 7 lines: teammate messages, one assistant reply each side; one text block per line.
    ("minimal_showcase/55550000-0000-4000-8000-000000000002.jsonl", 7, 7, {"text": 7}),
    # 8 lines; fm-a1 and fm-a2 each hold text + tool_use.
    ("minimal_showcase/55550000-0000-4000-8000-000000000003.jsonl", 10, 8,
     {"text": 6, "tool_call": 2, "tool_result": 2}),
    # 5 lines, one queue-operation (tolerated, no row).
    ("session_id_steering_order.jsonl", 4, 4, {"text": 4}),
])
def test_single_session_files(name: str, rows: int, messages: int,
                              parts: dict[str, int]) -> None:
    table = read(LOG / name)
    (thread,) = threads(table).values()
    assert (thread["rows"], thread["messages"]) == (rows, messages)
    assert Counter(table["part_type"].to_pylist()) == parts


def test_sidechain_entries_written_inline_in_the_main_file() -> None:
    # v2.0.46: lines 3-5 are isSidechain; 3 and 4 (one split message msg_017zj..., no
    # agentId) sit inside the Task call's window; line 5 names agentId e1c84ba5, and the
    # main-loop result (line 2) names the same agent for toolu_01JA2...
    sid = "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358"
    got = threads(read(LOG / "sidechain_integrated.jsonl"))
    assert {k: (v["rows"], v["messages"]) for k, v in got.items()} == {
        (sid, None): (3, 3), (sid, "e1c84ba5"): (3, 2)}
    assert got[(sid, "e1c84ba5")]["claude"]["spawned_by_tool_use_id"] == (
        "toolu_01JA2mLseQCAW3MdwPE4qWEk")
    assert got[(sid, "e1c84ba5")]["sidechain"] == {True}


def test_workflow_subagent_under_its_run_folder() -> None:
    # sessionId "<uuid>#agent-agsp0001"; no toolUseId in the meta; the Workflow call
    # toolu_wfsp01 returned runId wf_sp01, which names the run folder. journal.jsonl is not
    # a transcript.
    sid = "22220000-0000-4000-8000-000000000002"
    result = read_transcripts([LOG / "workflow_scriptpath"])
    assert result.skipped == []
    assert not any("journal" in f["path"] for f in result.fingerprints)
    got = threads(result.table)
    assert {k: (v["rows"], v["messages"]) for k, v in got.items()} == {
        (sid, None): (7, 5), (sid, "agsp0001"): (2, 2)}
    assert got[(sid, "agsp0001")]["claude"] == {
        "spawned_by_tool_use_id": "toolu_wfsp01", "agent_type": "workflow-subagent",
        "workflow_run_id": "wf_sp01"}


def test_claude_code_transcripts_samples() -> None:
    # sample_session.jsonl: a summary line + 7 entries (msg-003 has text + Write).
    got = threads(read(CCT / "sample_session.jsonl"))
    assert {k: (v["rows"], v["messages"]) for k, v in got.items()} == {
        ("test-session-id", None): (8, 7)}
    # sample_session.json: {"loglines": [33 entries]}, no sessionId/uuid: the session is
    # named after the file and message ids are derived deterministically.
    table = read(CCT / "sample_session.json")
    assert {k: (v["rows"], v["messages"]) for k, v in threads(table).items()} == {
        ("sample_session", None): (39, 33)}
    assert Counter(table["part_type"].to_pylist()) == {
        "text": 14, "tool_call": 12, "tool_result": 12, "thinking": 1}
    assert read(CCT / "sample_session.json")["message_id"].equals(table["message_id"])


# ---- pitfalls, on small files built here ------------------------------------------------

S1 = "11111111-0000-4000-8000-000000000001"
S2 = "22222222-0000-4000-8000-000000000002"
S3 = "33333333-0000-4000-8000-000000000003"


def _session(sid: str, prefix: str, n: int, start: int = 0,
             parent: str | None = None) -> list[dict[str, Any]]:
    entries = []
    for i in range(start, start + n):
        ts = f"2026-03-01T10:{i:02d}:00.000Z"
        uid = f"{prefix}-{i}"
        entries.append(user(uid, sid, ts, f"q{i}", parent) if i % 2 == 0
                       else assistant(uid, sid, ts, [text(f"a{i}")], parent))
        parent = uid
    return entries


def test_split_assistant_lines_are_one_message(tmp_path: Path) -> None:
    entries = [
        user("u1", S1, "2026-03-01T10:00:00Z", "go"),
        assistant("a1", S1, "2026-03-01T10:00:01Z", [{"type": "thinking", "thinking": "hm",
                                                     "signature": "sig"}], "u1", "msg_X"),
        assistant("a2", S1, "2026-03-01T10:00:02Z", [text("doing")], "a1", "msg_X"),
        assistant("a3", S1, "2026-03-01T10:00:03Z", [tool_use("t1", "Bash", command="ls")],
                  "a2", "msg_X"),
        user("u2", S1, "2026-03-01T10:00:04Z", [tool_result("t1", "ok")], "a3"),
    ]
    table = read(write_jsonl(tmp_path / f"{S1}.jsonl", entries))
    rows = table.to_pylist()
    assert [(r["message_id"], r["part_index"], r["part_type"]) for r in rows] == [
        ("u1", 0, "text"), ("a1", 0, "thinking"), ("a1", 1, "text"), ("a1", 2, "tool_call"),
        ("u2", 0, "tool_result")]
    assert [r["message_index"] for r in rows] == [0, 1, 1, 1, 2]
    assert [r["part_id"] for r in rows][1:4] == ["a1#0", "a1#1", "a1#2"]
    assert rows[1]["thinking_signature"] == "sig"
    assert rows[4]["previous_message_id"] == '["a1"]'  # parent a3 is part of message a1
    assert (rows[4]["tool_result_for"], rows[4]["tool_name"]) == ("t1", "Bash")
    assert rows[4]["status"] == '{"tool_status":"success"}'


def test_resumed_session_counts_each_message_once(tmp_path: Path) -> None:
    original = _session(S1, "m", 4)
    # --resume: the new file replays m-0..m-3 (same uuid, same timestamps) under S2, then
    # continues; a second resume S3 replays everything of S2.
    replay = [dict(e, sessionId=S2) for e in original] + _session(S2, "n", 2, 4, "m-3")
    replay2 = [dict(e, sessionId=S3) for e in replay] + _session(S3, "o", 2, 6, "n-5")
    write_jsonl(tmp_path / f"{S1}.jsonl", original)
    write_jsonl(tmp_path / f"{S2}.jsonl", replay)
    write_jsonl(tmp_path / f"{S3}.jsonl", replay2)
    got = threads(read(tmp_path))
    assert {k: v["messages"] for k, v in got.items()} == {
        (S1, None): 4, (S2, None): 2, (S3, None): 2}
    assert got[(S1, None)]["claude"] == {}
    assert got[(S2, None)]["claude"] == {"resumed_from": S1}
    assert got[(S3, None)]["claude"] == {"resumed_from": S2}


def test_reused_ids_in_unrelated_sessions_are_kept_apart(tmp_path: Path) -> None:
    # Same uuids, different timestamps: not a replay, both sessions keep their messages.
    write_jsonl(tmp_path / "a.jsonl", _session(S1, "x", 2))
    later = [dict(e, sessionId=S2, timestamp=e["timestamp"].replace("03-01", "04-01"))
             for e in _session(S1, "x", 2)]
    write_jsonl(tmp_path / "b.jsonl", later)
    table = read(tmp_path)
    got = threads(table)
    assert {k: v["messages"] for k, v in got.items()} == {(S1, None): 2, (S2, None): 2}
    assert sorted(table["message_id"].to_pylist()) == sorted(
        ["x-0", "x-1", f"{S2}:x-0", f"{S2}:x-1"])
    both = read(LOG / "dag_compact_after_rewind.jsonl",
                LOG / "dag_compact_after_rewind_preserved.jsonl")
    # The two fixtures share all 12 uuids and timestamps but s2 adds nothing: a copy, not a
    # resume; each file's session keeps its 12 messages.
    assert {k: v["messages"] for k, v in threads(both).items()} == {
        ("s1", None): 12, ("s2", None): 12}


def _subagent_session(root: Path, meta: bool, layout: str) -> None:
    main = [
        user("p1", S1, "2026-03-01T10:00:00Z", "audit"),
        assistant("p2", S1, "2026-03-01T10:00:01Z", [tool_use(
            "toolu_A", "Task", subagent_type="Explore", description="look")], "p1"),
        user("p3", S1, "2026-03-01T10:00:09Z", [tool_result("toolu_A", [text("done")])], "p2",
             toolUseResult={"status": "completed", "agentId": "aaa111"}),
    ]
    sub = [
        dict(user("s1", S1, "2026-03-01T10:00:02Z", "look", None), isSidechain=True,
             agentId="aaa111"),
        dict(assistant("s2", S1, "2026-03-01T10:00:03Z", [tool_use("toolu_B", "Agent",
             description="deeper", subagent_type="general-purpose")], "s1"),
             isSidechain=True, agentId="aaa111"),
        dict(user("s3", S1, "2026-03-01T10:00:08Z", [tool_result("toolu_B", [
            text("found"), text("agentId: bbb222 (use SendMessage with to: 'bbb222')")])],
            "s2"), isSidechain=True, agentId="aaa111"),
    ]
    nested = [dict(user("n1", S1, "2026-03-01T10:00:04Z", "deeper"), isSidechain=True,
                   agentId="bbb222"),
              dict(assistant("n2", S1, "2026-03-01T10:00:05Z", [text("ok")], "n1"),
                   isSidechain=True, agentId="bbb222")]
    write_jsonl(root / f"{S1}.jsonl", main)
    folder = root / S1 / "subagents" if layout == "subagents" else root
    write_jsonl(folder / "agent-aaa111.jsonl", sub)
    write_jsonl(folder / "agent-bbb222.jsonl", nested)
    # A compaction run: Claude's own summariser, not a spawned subagent.
    write_jsonl(folder / "agent-acompact-1f2e.jsonl", [dict(
        user("c1", S1, "2026-03-01T10:00:06Z", "summarise"), isSidechain=True,
        agentId="acompact-1f2e")])
    if meta:
        (folder / "agent-aaa111.meta.json").write_text(json.dumps(
            {"agentType": "Explore", "description": "look", "toolUseId": "toolu_A"}))


@pytest.mark.parametrize("meta", [True, False])
@pytest.mark.parametrize("layout", ["subagents", "beside"])
def test_subagents_link_to_their_spawning_call(tmp_path: Path, meta: bool, layout: str) -> None:
    _subagent_session(tmp_path, meta, layout)
    got = threads(read(tmp_path))
    # Subagent lines repeat the parent's sessionId: one session, three threads, and the
    # compaction run shown as what it is (no spawning call, not an orphan).
    assert set(got) == {(S1, None), (S1, "aaa111"), (S1, "bbb222"), (S1, "acompact-1f2e")}
    assert got[(S1, "acompact-1f2e")]["claude"] == {"agent_type": "compaction",
                                                   "agent_kind": "compaction"}
    assert got[(S1, "aaa111")]["claude"]["spawned_by_tool_use_id"] == "toolu_A"
    assert got[(S1, "aaa111")]["claude"]["agent_type"] == "Explore"
    # Nested spawn: the Agent call and its footer-naming result live in aaa111's file.
    assert got[(S1, "bbb222")]["claude"] == {"spawned_by_tool_use_id": "toolu_B",
                                             "agent_type": "general-purpose",
                                             "description": "deeper"}
    assert got[(S1, "aaa111")]["sidechain"] == {True}
    assert got[(S1, "bbb222")]["rows"] == 2


def test_broken_lines_are_skipped_and_reported(tmp_path: Path) -> None:
    path = tmp_path / f"{S1}.jsonl"
    lines = [
        json.dumps(user("u1", S1, "2026-03-01T10:00:00Z", "hello")),
        "{not json",
        json.dumps({"type": "user", "uuid": "u2", "sessionId": S1,
                    "timestamp": "2026-03-01T10:00:01Z"}),               # no message
        json.dumps({"type": "ai-title", "title": "x", "sessionId": S1}),  # unknown: tolerated
        json.dumps(user("u3", S1, "not a time", "late")),
        json.dumps([1, 2]),
        json.dumps(assistant("a4", S1, "2026-03-01T10:00:05Z", [text("bye")], "u1")),
    ]
    path.write_text("\n".join(lines) + "\n")
    result = read_transcripts([path])
    assert result.table.num_rows == 2
    assert [(s.line, s.reason) for s in result.skipped] == [
        (2, "not valid JSON"), (3, "user entry without a 'message' object"),
        (5, "timestamp missing or not ISO 8601"), (6, "line is not a JSON object")]
    assert all(s.path == str(path) for s in result.skipped)
    with pytest.raises(SourceError) as err:
        read_transcripts([path], strict=True)
    assert f"{path}:2" in str(err.value)
    assert "hello" not in str(err.value)  # never message content in errors


def test_timestamps_dates_and_thread_start(tmp_path: Path) -> None:
    entries = [user("u1", S1, "2026-03-01T23:59:59.123456+00:00", "late night"),
               assistant("a1", S1, "2026-03-02T01:00:00.5Z", [text("morning")], "u1")]
    rows = read(write_jsonl(tmp_path / "s.jsonl", entries)).to_pylist()
    assert [r["date"] for r in rows] == ["2026-03-01", "2026-03-02"]
    assert rows[0]["message_created_at"].microsecond == 123456
    assert {r["conversation_started_at"] for r in rows} == {rows[0]["message_created_at"]}
    assert rows[0]["cwd"] == "/work/app" and rows[0]["client_version"] == "2.1.0"
