"""Format variants real versions write that no earlier fixture had (round 12, formats12).

Transcript cases read fixtures under ``tests/fixtures/shaped/`` (see its README) or write
small files in ``tmp_path`` with the builders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.paths import SHAPED
from tests.helpers.transcripts import (
    codex_line,
    codex_message,
    codex_meta,
    message_rows,
    skipped_lines,
    write_jsonl,
)
from tests.helpers.transcripts import graph_of as _graph
from tests.helpers.transcripts import node_rows as _rows

FLAT_SESSION = "f1a70000-7777-4e8f-9a0b-000000000007"
ROLLED = "019e0000-1111-7222-8333-444455556612"
LEAD = "019e0000-2222-7333-8444-555566667713"
WORKER = "019e0000-3333-7444-8555-666677778814"
TOKENS = ["thread_id", "messages", "input_tokens", "output_tokens",
          "cache_creation_input_tokens", "cache_read_input_tokens"]




# -- Claude: the "flat" subagent lines of siropkin/budi#275 ----------------------------------
def test_claude_subagent_lines_of_the_flat_shape_are_read() -> None:
    """A subagent file whose lines carry role/model/usage/content at the top (no envelope
    ``type``; one the API's own ``"type": "message"`` object, one without a timestamp) was
    three skipped lines and one line dropped unsaid: the subagent's thread, its Read call,
    the file it read and its usage were missing. Each is the entry it stands for."""
    graph = _graph(SHAPED / "claude-flat-subagent")
    assert _rows(graph, "Thread", [*TOKENS, "kind"]) == [
        ("a5f1c0de", 4, 8, 65, 1500, 1500, "subagent"),
        (FLAT_SESSION, 4, 8, 140, 1800, 24000, "main")]
    assert _rows(graph, "Agent", ["agent_id", "agent_type"]) == [
        ("a5f1c0de", "general-purpose")]
    assert _rows(graph, "File", ["file_path", "reads"]) == [
        ("/home/dev/app/CHANGELOG.md", 1)]
    assert skipped_lines(SHAPED / "claude-flat-subagent") == []
    rows = [r for r in message_rows(SHAPED / "claude-flat-subagent") if r["agent_id"]]
    # the line without a time takes the one before it, and hangs under its parent line
    untimed = next(r for r in rows if r["provider_uuid"] == "s-3")
    before = next(r for r in rows if r["provider_uuid"] == "s-2")
    assert untimed["message_created_at"] == before["message_created_at"]
    assert json.loads(untimed["previous_message_id"]) == [before["message_id"]]
    assert {r["request_id"] for r in rows if r["role"] == "assistant"} == {"req_s2", "req_s4"}


def test_a_flat_line_before_any_time_takes_the_files_first_time(tmp_path: Path) -> None:
    session = "f1a70000-0000-4000-8000-0000000000aa"
    folder = tmp_path / "-w" / session / "subagents"
    write_jsonl(folder / "agent-b0b.jsonl", [
        {"role": "user", "content": "go", "uuid": "x1", "sessionId": session},
        {"role": "assistant", "model": "claude-haiku-4-5", "id": "msg_x2", "uuid": "x2",
         "parentUuid": "x1", "timestamp": "2026-11-30T09:00:09Z",
         "usage": {"input_tokens": 7, "output_tokens": 3}}])   # usage, no content
    rows = message_rows(tmp_path)
    assert [(r["role"], r["part_type"]) for r in rows] == [("user", "text"),
                                                           ("assistant", "text")]
    assert rows[0]["message_created_at"] == rows[1]["message_created_at"]
    assert json.loads(rows[1]["attributes"])["usage"] == {
        "input_tokens": 7, "output_tokens": 3, "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0}


@pytest.mark.parametrize("line", [
    {"role": "system", "content": "x"},                  # no user/assistant role
    {"role": "assistant", "message": {"content": []}},   # an envelope without its type
    {"role": "user"},                                    # nothing it says
])
def test_other_typeless_lines_stay_skipped(tmp_path: Path, line: dict[str, Any]) -> None:
    write_jsonl(tmp_path / "-w" / "s.jsonl", [
        {"type": "user", "uuid": "u", "sessionId": "s", "timestamp": "2026-11-30T09:00:00Z",
         "message": {"role": "user", "content": "hi"}}, line])
    assert skipped_lines(tmp_path) == [("s.jsonl", 2, "entry 'type' is not text")]


# -- unknown entry types are counted and said ------------------------------------------------
def test_an_unknown_claude_entry_type_is_a_skipped_line(tmp_path: Path) -> None:
    """Claude Code's bookkeeping entries (titles, tags, snapshots, modes, context-collapse
    records, ...) are read as nothing, quietly; an entry of a type no version is known
    to write was dropped unsaid, and is now a skipped line naming its type."""
    quiet = ["summary", "custom-title", "ai-title", "last-prompt", "tag", "agent-name",
             "pr-link", "file-history-snapshot", "attribution-snapshot", "mode",
             "worktree-state", "marble-origami-commit", "progress", "queue-operation"]
    write_jsonl(tmp_path / "-w" / "s.jsonl", [
        *({"type": t, "sessionId": "s"} for t in quiet),
        {"type": "user", "uuid": "u", "sessionId": "s", "timestamp": "2026-11-30T09:00:00Z",
         "message": {"role": "user", "content": "hi"}},
        {"type": "teleport-marker", "sessionId": "s", "timestamp": "2026-11-30T09:00:01Z"}])
    assert skipped_lines(tmp_path) == [
        ("s.jsonl", len(quiet) + 2, "entry type 'teleport-marker' is not read")]


def test_unknown_codex_line_and_item_types_are_skipped_lines(tmp_path: Path) -> None:
    """Codex's own non-message records (``world_state``, ``ghost_snapshot``, encrypted
    ``compaction`` items, ``inter_agent_communication_metadata``, ...) are read as
    nothing; a line or response item of any other type was dropped unsaid."""
    thread = "019e0000-4444-7555-8666-777788889915"
    write_jsonl(tmp_path / "sessions" / f"rollout-2026-11-30T12-00-00-{thread}.jsonl", [
        codex_meta("2026-11-30T12:00:00Z", thread),
        codex_line("2026-11-30T12:00:00.1Z", "world_state", {"agents_md": {}}),
        codex_message("2026-11-30T12:00:01Z", "user", "hi"),
        codex_line("2026-11-30T12:00:02Z", "response_item", {"type": "ghost_snapshot",
                                                             "ghost_commit": {}}),
        codex_line("2026-11-30T12:00:03Z", "response_item", {"type": "compaction",
                                                             "encrypted_content": "e30="}),
        codex_line("2026-11-30T12:00:04Z", "response_item", {"type": "shell_wait",
                                                             "call_id": "c"}),
        codex_line("2026-11-30T12:00:05Z", "session_goal", {"goal": "x"}),
        codex_line("2026-11-30T12:00:06Z", "inter_agent_communication_metadata",
                   {"trigger_turn": True}),
        codex_message("2026-11-30T12:00:07Z", "assistant", "hello")])
    name = f"rollout-2026-11-30T12-00-00-{thread}.jsonl"
    assert skipped_lines(tmp_path) == [
        (name, 6, "response_item of type 'shell_wait' is not read"),
        (name, 7, "rollout line type 'session_goal' is not read")]
    assert [r["role"] for r in message_rows(tmp_path)] == ["user", "assistant"]


# -- Codex usage: cache writes --------------------------------------------------------------
def test_codex_cache_writes_are_cache_creation_not_input() -> None:
    """Newer ``token_count`` totals carry ``cache_write_input_tokens`` inside
    ``input_tokens`` (as cached input is): they were counted as fresh input (11,800 in,
    no cache writes). Now input less both (2,900) and 8,900 written to the cache — every
    turn's, the undone one's too (see the rollback test)."""
    graph = _graph(SHAPED / "codex-rollback")
    assert _rows(graph, "Thread", TOKENS) == [(ROLLED, 9, 2900, 1240, 8900, 16000)]


def test_codex_usage_without_cache_writes_keeps_its_three_counts(tmp_path: Path) -> None:
    """A turn that wrote nothing to the cache keeps the usage it always had (no zero
    cache_creation_input_tokens is added: rows of older rollouts stay byte-identical);
    a write count larger than input less cache reads is counted beside the input."""
    thread = "019e0000-5555-7666-8777-88889999aa16"

    def total(ts: str, i: int, c: int, w: int | None, o: int) -> dict[str, Any]:
        use = {"input_tokens": i, "cached_input_tokens": c, "output_tokens": o}
        if w is not None:
            use["cache_write_input_tokens"] = w
        return codex_line(ts, "event_msg", {"type": "token_count",
                                            "info": {"total_token_usage": use}})

    write_jsonl(tmp_path / f"rollout-2026-11-30T12-00-00-{thread}.jsonl", [
        codex_meta("2026-11-30T12:00:00Z", thread),
        codex_message("2026-11-30T12:00:01Z", "user", "a"),
        codex_message("2026-11-30T12:00:02Z", "assistant", "b"),
        total("2026-11-30T12:00:02.1Z", 100, 40, None, 5),
        codex_message("2026-11-30T12:00:03Z", "user", "c"),
        codex_message("2026-11-30T12:00:04Z", "assistant", "d"),
        total("2026-11-30T12:00:04.1Z", 300, 80, 0, 9),
        codex_message("2026-11-30T12:00:05Z", "user", "e"),
        codex_message("2026-11-30T12:00:06Z", "assistant", "f"),
        total("2026-11-30T12:00:06.1Z", 400, 120, 500, 12)])
    usages = [json.loads(r["attributes"]).get("usage") for r in message_rows(tmp_path)
              if r["role"] == "assistant"]
    assert usages == [
        {"input_tokens": 60, "output_tokens": 5, "cache_read_input_tokens": 40},
        {"input_tokens": 160, "output_tokens": 4, "cache_read_input_tokens": 40},
        {"input_tokens": 60, "output_tokens": 3, "cache_read_input_tokens": 40,
         "cache_creation_input_tokens": 500}]


# -- Codex: thread_rolled_back ---------------------------------------------------------------
def test_a_rolled_back_turn_stays_with_its_usage_and_the_thread_goes_on_before_it() -> None:
    """``thread_rolled_back`` (``num_turns: 1``) undid "make it the default"; its lines stay
    in the rollout. Chosen: its rows, tool calls and tokens stay (the model ran, the money
    was spent, the files were changed: a rollback does not revert them), and the thread
    goes on from the message before the undone turn, as after a Claude rewind: the next
    prompt's previous message is the first turn's answer, not the undone answer. The
    thread says how many turns were undone (``attributes.codex.rolled_back_turns``)."""
    rows = message_rows(SHAPED / "codex-rollback")
    by_text = {r["content_text"]: r for r in rows}
    first_answer = by_text["Added --dry-run; it prints each step."]
    undone = by_text["Done: --dry-run is now the default."]
    after = by_text["Also add a --verbose flag"]
    assert json.loads(after["previous_message_id"]) == [first_answer["message_id"]]
    assert json.loads(by_text["Also make it the default"]["previous_message_id"]) == [
        first_answer["message_id"]]
    assert json.loads(undone["attributes"])["usage"] == {
        "input_tokens": 1100, "output_tokens": 420, "cache_read_input_tokens": 8000,
        "cache_creation_input_tokens": 400}
    assert {json.loads(r["attributes"])["codex"]["rolled_back_turns"] for r in rows} == {1}
    assert skipped_lines(SHAPED / "codex-rollback") == []


def test_a_rollback_counts_only_real_user_turns(tmp_path: Path) -> None:
    """The context messages Codex writes itself (environment context, AGENTS.md) start no
    turn; rolling back more turns than there are goes back to the first."""
    thread = "019e0000-6666-7777-8888-9999aaaabb17"
    undo = {"type": "thread_rolled_back", "num_turns": 5}
    write_jsonl(tmp_path / f"rollout-2026-11-30T12-00-00-{thread}.jsonl", [
        codex_meta("2026-11-30T12:00:00Z", thread),
        codex_message("2026-11-30T12:00:01Z", "user", "# AGENTS.md instructions\nbe brief"),
        codex_message("2026-11-30T12:00:02Z", "user", "one"),
        codex_message("2026-11-30T12:00:03Z", "assistant", "1"),
        codex_message("2026-11-30T12:00:04Z", "user", "<environment_context>x"),
        codex_message("2026-11-30T12:00:05Z", "user", "two"),
        codex_message("2026-11-30T12:00:06Z", "assistant", "2"),
        codex_line("2026-11-30T12:00:07Z", "event_msg", undo),
        codex_message("2026-11-30T12:00:08Z", "user", "three")])
    rows = {r["content_text"]: r for r in message_rows(tmp_path)}
    agents_md = rows["# AGENTS.md instructions\nbe brief"]["message_id"]
    assert json.loads(rows["three"]["previous_message_id"]) == [agents_md]
    assert json.loads(rows["three"]["attributes"])["codex"]["rolled_back_turns"] == 2


# -- Codex: messages between agents (MultiAgentV2) -------------------------------------------
def test_messages_between_codex_agents_are_the_recipients_user_messages() -> None:
    """A worker's task recorded as an assistant message whose text is the JSON of an
    ``InterAgentCommunication`` (was: an assistant message of JSON), the parent's
    follow-up as an ``agent_message`` item and the worker's report as an
    ``inter_agent_communication`` line (both were dropped unsaid): each is a user-role
    message of its recipient's thread, its text the words sent."""
    rows = message_rows(SHAPED / "codex-inter-agent")
    said = [(r["conversation_id"], r["role"], r["provider_type"], r["content_text"])
            for r in rows if r["provider_type"] in ("inter_agent_communication",
                                                    "agent_message")]
    assert said == [
        (LEAD, "user", "inter_agent_communication", "14 TODOs, 9 of them in src/net/."),
        (WORKER, "user", "inter_agent_communication", "Count the TODO comments under src/."),
        (WORKER, "user", "agent_message", "Split the count by folder.")]
    graph = _graph(SHAPED / "codex-inter-agent")
    assert _rows(graph, "Thread", ["thread_id", "messages"]) == [(LEAD, 5), (WORKER, 5)]
    assert skipped_lines(SHAPED / "codex-inter-agent") == [(
        f"rollout-2026-11-30T11-00-03-{WORKER}.jsonl", 8,
        "response_item of type 'thread_goal_update' is not read")]


def test_an_assistant_message_that_only_looks_like_a_communication_stays(
        tmp_path: Path) -> None:
    thread = "019e0000-7777-7888-8999-aaaabbbbcc18"
    text = json.dumps({"recipient": "ops", "content": "a JSON answer the model wrote"})
    write_jsonl(tmp_path / f"rollout-2026-11-30T12-00-00-{thread}.jsonl", [
        codex_meta("2026-11-30T12:00:00Z", thread),
        codex_message("2026-11-30T12:00:01Z", "user", "give me JSON"),
        codex_message("2026-11-30T12:00:02Z", "assistant", text)])
    assert [(r["role"], r["content_text"]) for r in message_rows(tmp_path)] == [
        ("user", "give me JSON"), ("assistant", text)]


# -- Claude: the API's MCP connector blocks ------------------------------------------------
def test_an_mcp_connector_call_is_a_tool_call_named_as_claude_code_names_mcp_tools(
        tmp_path: Path) -> None:
    """``mcp_tool_use`` (``name`` and ``server_name`` apart; Anthropic's MCP connector, as
    the Agent SDK and API-backed sessions write it) was a part of its own type, no tool
    call: no Tool node, its result unnamed. Now the call of ``mcp__<server>__<tool>``, the
    name Claude Code gives the tools of MCP servers it runs itself, so both are one Tool;
    its ``mcp_tool_result`` keeps its text and error flag."""
    from tests.helpers.transcripts import assistant, user

    write_jsonl(tmp_path / "-w" / "s.jsonl", [
        user("u1", "s", "2026-11-30T09:00:00Z", "who am I on the hub?"),
        assistant("a1", "s", "2026-11-30T09:00:02Z", [
            {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "whoami",
             "server_name": "hub", "input": {}},
            {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "is_error": True,
             "content": [{"type": "text", "text": "token expired"}]},
            {"type": "tool_use", "id": "toolu_2", "name": "mcp__hub__whoami", "input": {}}],
            parent="u1")])
    parts = [(r["part_type"], r["tool_name"], r["content_text"], r["is_error"])
             for r in message_rows(tmp_path) if r["role"] == "assistant"]
    assert parts == [("tool_call", "mcp__hub__whoami", None, None),
                     ("tool_result", "mcp__hub__whoami", "token expired", True),
                     ("tool_call", "mcp__hub__whoami", None, None)]
    assert _rows(_graph(tmp_path), "Tool", ["tool_name"]) == [("mcp__hub__whoami",)]


# -- Codex usage: token_usage_record lines ---------------------------------------------------
def _usage_record(ts: str, thread: str, response: str, i: int, c: int,
                  o: int) -> dict[str, Any]:
    return {"timestamp": ts, "type": "token_usage_record", "payload": {
        "thread_id": thread, "turn_id": "turn-1", "response_id": response,
        "usage": {"input_tokens": i, "cached_input_tokens": c, "cache_write_input_tokens": 0,
                  "output_tokens": o, "reasoning_output_tokens": 0, "total_tokens": i + o}}}


def test_codex_usage_records_count_when_no_token_count_says_it(tmp_path: Path) -> None:
    """Newer rollouts write a ``token_usage_record`` line per model response (its own
    usage, not a running total; keyed by ``response_id``). A rollout with no
    ``token_count`` usage had none (and its records were dropped unsaid); now each
    response counts once, a record repeated for the same response is not counted again,
    and a record naming another thread is not this thread's."""
    thread = "019e0000-8888-7999-8aaa-bbbbccccdd19"
    write_jsonl(tmp_path / f"rollout-2026-11-30T12-00-00-{thread}.jsonl", [
        codex_meta("2026-11-30T12:00:00Z", thread),
        codex_message("2026-11-30T12:00:01Z", "user", "a"),
        codex_message("2026-11-30T12:00:02Z", "assistant", "b"),
        _usage_record("2026-11-30T12:00:02.1Z", thread, "resp_1", 100, 40, 5),
        _usage_record("2026-11-30T12:00:02.2Z", thread, "resp_1", 100, 40, 5),
        _usage_record("2026-11-30T12:00:02.3Z", "019e0000-0000-7000-8000-000000000000",
                      "resp_x", 999, 0, 9),
        codex_message("2026-11-30T12:00:03Z", "user", "c"),
        codex_message("2026-11-30T12:00:04Z", "assistant", "d"),
        _usage_record("2026-11-30T12:00:04.1Z", thread, "resp_2", 300, 200, 7)])
    graph = _graph(tmp_path)
    assert _rows(graph, "Thread", TOKENS) == [(thread, 4, 160, 12, None, 240)]
    assert skipped_lines(tmp_path) == []


def test_codex_usage_records_beside_token_counts_are_not_counted_twice(
        tmp_path: Path) -> None:
    thread = "019e0000-9999-7aaa-8bbb-ccccddddee20"
    use = {"input_tokens": 100, "cached_input_tokens": 40, "output_tokens": 5}
    write_jsonl(tmp_path / f"rollout-2026-11-30T12-00-00-{thread}.jsonl", [
        codex_meta("2026-11-30T12:00:00Z", thread),
        codex_message("2026-11-30T12:00:01Z", "user", "a"),
        codex_message("2026-11-30T12:00:02Z", "assistant", "b"),
        _usage_record("2026-11-30T12:00:02.1Z", thread, "resp_1", 100, 40, 5),
        codex_line("2026-11-30T12:00:02.2Z", "event_msg", {
            "type": "token_count", "info": {"total_token_usage": use,
                                            "last_token_usage": use}})])
    assert _rows(_graph(tmp_path), "Thread", TOKENS) == [(thread, 2, 60, 5, None, 40)]


def test_type_names_that_are_no_text_are_skipped_lines_not_errors(tmp_path: Path) -> None:
    """A damaged line may carry a list or an object where a type name belongs: a skipped
    line saying so, never an unhashable-type error out of a set look-up."""
    write_jsonl(tmp_path / "-w" / "s.jsonl", [{"type": ["user"], "sessionId": "s"},
                                              {"type": {"a": 1}, "role": "user"}])
    thread = "019e0000-aaaa-7bbb-8ccc-ddddeeeeff21"
    write_jsonl(tmp_path / f"rollout-2026-11-30T12-00-00-{thread}.jsonl", [
        codex_meta("2026-11-30T12:00:00Z", thread),
        codex_line("2026-11-30T12:00:01Z", "response_item", {"type": ["message"]}),
        {"timestamp": "2026-11-30T12:00:02Z", "type": ["event_msg"], "payload": {}}])
    name = f"rollout-2026-11-30T12-00-00-{thread}.jsonl"
    assert sorted(skipped_lines(tmp_path)) == [
        (name, 2, "response_item whose type is not text is not read"),
        (name, 3, "rollout line type 'list' is not read"),
        ("s.jsonl", 1, "entry 'type' is not text"),
        ("s.jsonl", 2, "entry 'type' is not text")]


def test_untimed_flat_lines_in_a_file_with_no_time_are_skipped_once_each(
        tmp_path: Path) -> None:
    """No line of the file has a time: each flat line is a skipped line (no time to give
    it), and the file is searched for one only once (not once per line)."""
    write_jsonl(tmp_path / "-w" / "s" / "subagents" / "agent-c0c.jsonl",
                [{"role": "user", "content": f"step {i}", "uuid": f"u{i}", "sessionId": "s"}
                 for i in range(3)])
    assert [(line, why) for _name, line, why in skipped_lines(tmp_path)] == [
        (1, "timestamp missing or not ISO 8601"), (2, "timestamp missing or not ISO 8601"),
        (3, "timestamp missing or not ISO 8601")]
