"""Codex rollouts → rows: every Codex fixture file, then forks, legacy and root-finding pitfalls.

Expectations were derived by reading the fixture files (see the comment on each test).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa

from graphkit.sources.transcripts import read_transcripts
from tests.helpers.transcripts import (
    assert_well_formed,
    codex_line,
    codex_message,
    codex_meta,
    fixtures,
    write_jsonl,
)

CODEX = fixtures() / "transcripts" / "claude-code-log" / "codex"
HOME = fixtures() / "hypaware-cache" / "home"
T1 = "11111111-1111-4111-8111-111111111111"
T2 = "22222222-2222-4222-8222-222222222222"
T3 = "33333333-3333-4333-8333-333333333333"


def read(*paths: Path) -> pa.Table:
    table = read_transcripts(list(paths)).table
    assert_well_formed(table)
    assert set(table["provider"].to_pylist()) <= {"openai"}
    return table


def threads(table: pa.Table) -> dict[str, dict[str, Any]]:
    """conversation_id → session, parent, rows, roles, part types, codex attributes."""
    out: dict[str, dict[str, Any]] = {}
    for r in table.to_pylist():
        t = out.setdefault(r["conversation_id"], {
            "session": set(), "parent": set(), "rows": 0, "parts": [], "attrs": set()})
        t["session"].add(r["session_id"])
        t["parent"].add(r["parent_thread_id"])
        t["rows"] += 1
        t["parts"].append((r["role"], r["part_type"]))
        doc = {k: v for k, v in json.loads(r["attributes"] or "{}").items() if k != "usage"}
        t["attrs"].add(json.dumps(doc, sort_keys=True))  # usage is per row
        assert r["agent_id"] is None
        assert r["is_sidechain"] is (r["parent_thread_id"] is not None)
    for t in out.values():
        (t["session"],), (t["parent"],), (attrs,) = t["session"], t["parent"], t["attrs"]
        t["codex"] = json.loads(attrs)["codex"]
    return out


def test_dated_rollout_with_most_record_kinds() -> None:
    # 14 lines: response items give user message, reasoning, exec_command call/output,
    # apply_patch custom call/output, MCP call/output, assistant message (9); the event_msg
    # user/agent messages duplicate response items; the future record type is ignored.
    table = read(CODEX / "sessions" / "2026" / "01" / "02")
    (thread,) = threads(table).values()
    assert thread["session"] == T1 and thread["parent"] is None
    assert thread["parts"] == [
        ("user", "text"), ("assistant", "reasoning"), ("assistant", "tool_call"),
        ("tool", "tool_result"), ("assistant", "tool_call"), ("tool", "tool_result"),
        ("assistant", "tool_call"), ("tool", "tool_result"), ("assistant", "text")]
    rows = table.to_pylist()
    assert rows[1]["content_text"] == "I will inspect the synthetic directory."
    assert all("SYNTHETIC_ENCRYPTED" not in (r["content_text"] or "") for r in rows)
    assert json.loads(rows[2]["tool_args"]) == {"cmd": "find . -maxdepth 1 -type f"}
    assert (rows[3]["tool_result_for"], rows[3]["tool_name"]) == ("call-structured-001",
                                                                  "exec_command")
    assert json.loads(rows[4]["tool_args"]).startswith("*** Begin Patch")
    assert rows[5]["content_text"] == "Done!"
    assert rows[6]["tool_name"] == "mcp__synthetic__lookup"
    assert {r["model"] for r in rows} == {"synthetic-model"}  # from turn_context
    assert thread["codex"]["model_provider"] == "synthetic"
    assert [r["message_index"] for r in rows] == list(range(9))


def test_spawned_child_thread_and_its_parent() -> None:
    # 2222 spawns 3333 (spawn_agent call-spawn-001). 3333's meta names parent 2222,
    # forked_from_id and spawn_call_id; its lines 2-3 are the parent's prompt and spawn call
    # copied in (not the child's); its own content is lines 4-5. Neither meta has session_id,
    # so the session is the root reached through the parent: 2222.
    got = threads(read(CODEX / "sessions" / "2026" / "01" / "03"))
    assert got[T2]["session"] == T2 and got[T2]["parent"] is None
    assert got[T2]["parts"] == [("user", "text"), ("assistant", "tool_call"),
                                ("tool", "tool_result")]
    assert got[T3]["session"] == T2 and got[T3]["parent"] == T2
    assert got[T3]["parts"] == [("user", "text"), ("assistant", "text")]
    assert got[T3]["codex"]["forked_from_id"] == "fork-item-001"
    assert got[T3]["codex"]["spawn_call_id"] == "call-spawn-001"
    # The child alone still names its session through the parent id it records.
    alone = threads(read(CODEX / "sessions" / "2026" / "01" / "03" /
                         f"rollout-2026-01-03T04-05-10-{T3}.jsonl"))
    assert alone[T3]["session"] == T2


def test_legacy_archived_and_malformed_rollouts() -> None:
    # 4444: bare {id, timestamp} header then bare items without timestamps.
    legacy = read(CODEX / "sessions" / "rollout-44444444-4444-4444-8444-444444444444.jsonl")
    assert legacy["role"].to_pylist() == ["user", "assistant"]
    assert {str(t) for t in legacy["message_created_at"].to_pylist()} == {
        "2026-01-04 05:06:07+00:00"}
    # 5555 (archived_sessions/): minimal meta + one user_message event.
    archived = threads(read(CODEX / "archived_sessions"))
    assert archived["55555555-5555-4555-8555-555555555555"]["parts"] == [("user", "text")]
    # 6666: line 3 is not JSON -> skipped and reported, the rest is read.
    result = read_transcripts([CODEX / "malformed"])
    assert result.table.num_rows == 1
    assert [(Path(s.path).name, s.line, s.reason) for s in result.skipped] == [
        ("rollout-66666666-6666-4666-8666-666666666666.jsonl", 3, "not valid JSON")]


def test_sample_codex_session() -> None:
    # 3 lines: session_meta (id test-session), user and assistant response items.
    got = threads(read(fixtures() / "transcripts" / "claude-code-transcripts" /
                       "sample_codex_session.jsonl"))
    assert got["test-session"]["parts"] == [("user", "text"), ("assistant", "text")]


def test_hypaware_home_codex_matches_the_cache_readme() -> None:
    # README: root 7 rows, child 4 rows (parent = root, is_sidechain), session = root.
    root, child = "019a7b10-2c3d-7e4f-8a9b-0c1d2e3f4a01", "019a7b10-5f6e-7d8c-9b0a-1f2e3d4c5b02"
    table = read(HOME / ".codex")
    got = threads(table)
    assert (got[root]["rows"], got[child]["rows"]) == (7, 4)
    assert got[root]["session"] == got[child]["session"] == root
    assert got[child]["parent"] == root
    assert Counter(table["part_type"].to_pylist()) == {
        "text": 4, "reasoning": 1, "tool_call": 3, "tool_result": 3}
    rows = table.to_pylist()
    assert {r["model"] for r in rows if r["conversation_id"] == child} == {"gpt-5-codex-mini"}
    assert {r["message_id"] for r in rows if r["conversation_id"] == child} >= {
        "msg_child_u1", "fc_child_01", "msg_child_a1"}
    first = rows[0]
    assert (first["git_branch"], first["head_sha"][:8], first["git_remote"]) == (
        "main", "3f9c2a7d", "git@github.com:acme/webapp.git")
    assert str(first["conversation_started_at"]) == "2026-11-23 16:00:00+00:00"  # meta time


# ---- pitfalls ----------------------------------------------------------------------------

def test_fork_with_two_session_meta_lines(tmp_path: Path) -> None:
    parent, child = "aaaa0000-0000-4000-8000-000000000001", "bbbb0000-0000-4000-8000-000000000002"
    lines = [
        codex_meta("2026-05-01T10:05:00Z", child, forked_from_id=parent),
        codex_meta("2026-05-01T10:00:00Z", parent),  # the parent's meta, copied
        codex_message("2026-05-01T10:00:01Z", "user", "parent question"),
        codex_message("2026-05-01T10:00:02Z", "assistant", "parent answer"),
        codex_message("2026-05-01T10:05:01Z", "user", "child question"),
        codex_message("2026-05-01T10:05:02Z", "assistant", "child answer"),
    ]
    table = read(write_jsonl(tmp_path / f"rollout-2026-05-01T10-05-00-{child}.jsonl", lines))
    assert table["content_text"].to_pylist() == ["child question", "child answer"]
    assert set(table["conversation_id"].to_pylist()) == {child}
    assert json.loads(table["attributes"][0].as_py())["codex"]["forked_from_id"] == parent


def test_root_is_found_through_several_parents(tmp_path: Path) -> None:
    a, b, c = (f"{x * 8}-0000-4000-8000-000000000000" for x in "abc")
    day = tmp_path / "sessions" / "2026" / "05" / "02"
    write_jsonl(day / f"rollout-a-{a}.jsonl", [codex_meta("2026-05-02T00:00:00Z", a),
                                                 codex_message("2026-05-02T00:00:01Z", "user",
                                                               "hi")])
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": a, "depth": 1,
                                           "agent_nickname": "Ada", "agent_role": "worker"}}}
    write_jsonl(day / f"rollout-b-{b}.jsonl", [codex_meta("2026-05-02T00:01:00Z", b,
                                                          source=spawn),
                                                 codex_message("2026-05-02T00:01:01Z", "user",
                                                               "task b")])
    write_jsonl(tmp_path / "sessions" / f"rollout-c-{c}.jsonl", [  # flat, not dated
        codex_meta("2026-05-02T00:02:00Z", c, parent_thread_id=b),
        codex_message("2026-05-02T00:02:01Z", "user", "task c", item_id="msg_c1")])
    got = threads(read(tmp_path / "sessions"))
    assert {t: (v["session"], v["parent"]) for t, v in got.items()} == {
        a: (a, None), b: (a, a), c: (a, b)}
    assert got[b]["codex"]["agent_nickname"] == "Ada"
    assert got[b]["codex"]["agent_role"] == "worker" and got[b]["codex"]["depth"] == 1


def test_event_messages_are_not_counted_twice(tmp_path: Path) -> None:
    t = "cccc0000-0000-4000-8000-000000000003"
    both = [codex_meta("2026-05-03T00:00:00Z", t),
            codex_line("2026-05-03T00:00:01Z", "event_msg", {"type": "user_message",
                                                             "message": "hello"}),
            codex_message("2026-05-03T00:00:01Z", "user", "hello"),
            codex_line("2026-05-03T00:00:02Z", "event_msg", {"type": "agent_message",
                                                             "message": "hi"}),
            codex_message("2026-05-03T00:00:02Z", "assistant", "hi"),
            codex_line("2026-05-03T00:00:03Z", "compacted", {"message": "summary so far"})]
    table = read(write_jsonl(tmp_path / f"rollout-{t}.jsonl", both))
    assert table["content_text"].to_pylist() == ["hello", "hi", "summary so far"]
    assert table["is_compact_summary"].to_pylist() == [None, None, True]
