"""Claude Code transcripts as real versions write them: streamed usage, synthetic
models, server tools, queued prompts, compacted and flat subagents, unknown entry types.

Cases read fixtures under ``tests/fixtures/shaped/`` (see its README) or write small
files in ``tmp_path`` with the builders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.paths import SHAPED
from tests.helpers.transcripts import (
    THREAD_TOKENS,
    message_rows,
    skipped_lines,
    write_jsonl,
)
from tests.helpers.transcripts import graph_of as _graph
from tests.helpers.transcripts import node_rows as _rows


# -- Claude: streamed lines of one response -----------------------------------------------
def test_claude_streamed_lines_count_usage_once_per_response() -> None:
    """One response written a block a line (thinking, two parallel tool_use lines with the
    tool results between them), each line with the response's usage (``cache_creation``
    object, ``server_tool_use``, ``service_tier`` beside the counts) and growing output:
    counted once, with the last line's numbers. summary, file-history-snapshot,
    queue-operation and bookkeeping ``system`` lines (turn_duration, api_error) give no
    rows; an ``isMeta`` user line and an informational system line are messages."""
    graph = _graph(SHAPED / "claude-streamed-usage")
    assert _rows(graph, "Thread", ["messages", "rows", "input_tokens", "output_tokens",
                                   "cache_creation_input_tokens",
                                   "cache_read_input_tokens"]) == [
        (7, 9, 20, 87, 2000, 10000)]
    assert _rows(graph, "File", ["file_path", "reads"]) == [
        ("/home/dev/app/a.py", 1), ("/home/dev/app/b.py", 1)]


def test_claude_synthetic_model_is_no_model() -> None:
    """Claude Code writes ``"model": "<synthetic>"`` on messages it made itself (an API
    error, "No response requested."): graphkit made a Model node of it, used by the
    session, and a thread whose first answer was such an error took it as its model."""
    graph = _graph(SHAPED / "claude-synthetic-model")
    assert _rows(graph, "Model", ["model"]) == [("claude-sonnet-4-5-20250929",)]
    assert _rows(graph, "Thread", ["model", "messages", "input_tokens", "output_tokens"]) == [
        ("claude-sonnet-4-5-20250929", 6, 12, 40)]
    assert graph.edges["USED_MODEL"].table.num_rows == 1


# -- B: Claude -------------------------------------------------------------------------------
def test_claude_subagent_compacted_mid_run_stays_one_thread() -> None:
    """A Claude 2.1 subagent (``subagents/agent-<id>.jsonl``, spawned by the ``Agent``
    tool) compacted mid-run: a ``compact_boundary`` with ``parentUuid: null`` and
    ``logicalParentUuid``, then an ``isCompactSummary`` prompt. The run stays one thread
    under the main loop, its usage counted once; the main file's ``toolUseResult``
    (``totalTokens``) adds nothing."""
    graph = _graph(SHAPED / "claude-subagent-compaction")
    assert _rows(graph, "Thread", ["thread_id", "messages", "input_tokens",
                                   "output_tokens"]) == [
        ("5e55a0b1-0000-4000-8000-000000000001", 4, 30, 12),
        ("a1b2c3d4e5f6a7b8", 5, 300, 30)]
    assert graph.edges["PARENT_THREAD"].table.num_rows == 1
    assert _rows(graph, "Agent", ["agent_id", "agent_type"]) == [("a1b2c3d4e5f6a7b8", "Explore")]


# -- Claude: server tools' results ----------------------------------------------------------
def test_claude_server_tool_results_keep_what_they_found_and_their_errors() -> None:
    """A response that searched the web itself (``server_tool_use`` ``web_search``, the
    API's ``web_search_tool_result``) holds a list of ``web_search_result`` objects (title,
    url, encrypted page text) or an error object (``web_search_tool_result_error``,
    ``error_code``) with no ``is_error`` flag. graphkit read only text blocks there: the
    found pages were an empty text and the failed search a success with no text. Now the
    result's text is each page's title and url, and an error object is an error."""
    rows = message_rows(SHAPED / "claude-server-tools")
    results = [(r["tool_call_id"], r["content_text"], r["is_error"], r["status"])
               for r in rows if r["part_type"] == "tool_result"]
    assert results == [
        ("srvtoolu_01", "Releases - facebook/zstd https://github.com/facebook/zstd/releases\n"
                        "zstd changelog https://example.org/zstd/CHANGELOG", None,
         '{"tool_status":"success"}'),
        ("srvtoolu_02", "max_uses_exceeded", True, '{"tool_status":"error"}')]
    graph = _graph(SHAPED / "claude-server-tools")
    # One response, its usage once (the last line's output count).
    assert _rows(graph, "Thread", ["messages", "input_tokens", "output_tokens",
                                   "cache_creation_input_tokens"]) == [(2, 900, 110, 1200)]
    assert _rows(graph, "Tool", ["tool_name", "calls"]) == [("web_search", 4)]


# -- Claude: prompts queued while a turn runs -------------------------------------------------
def test_claude_queued_prompts_are_user_messages() -> None:
    """A prompt typed while a tool call runs is handed to the model mid-turn; Claude Code
    2.1.x writes it as ``{"type": "attachment", "attachment": {"type": "queued_command",
    "commandMode": "prompt", "prompt": ...}}`` (with or without uuid and session fields)
    and never as a ``user`` line (kenn-io/agentsview #401/#406). graphkit skipped every
    attachment line, so the user's words were lost (4 messages, not 6). Now a queued
    prompt is a user message (provider_type ``attachment``, subtype and attachment_type
    ``queued_command``); other attachments (hook output) and an empty prompt are not,
    nor is the ``queue-operation`` bookkeeping line (the same words again)."""
    graph = _graph(SHAPED / "claude-queued-command")
    assert _rows(graph, "Thread", ["messages", "rows", "output_tokens"]) == [(6, 6, 200)]
    rows = message_rows(SHAPED / "claude-queued-command")
    queued = [(r["role"], r["provider_type"], r["provider_subtype"], r["attachment_type"],
               r["session_id"], r["provider_uuid"], r["content_text"])
              for r in rows if r["attachment_type"] is not None]
    session = "9a4e1b7c-2d3f-4a5b-8c6d-7e8f9a0b1c2d"
    assert queued == [
        ("user", "attachment", "queued_command", "queued_command", session, "q-att1",
         "When you implement this use playwright and red/green TDD"),
        ("user", "attachment", "queued_command", "queued_command", session, None,
         "let's use PDF.js's own renderer")]


def test_claude_one_hour_cache_writes_stay_in_the_rows_usage() -> None:
    """Claude Code's usage splits its cache writes by TTL, ``cache_creation:
    {ephemeral_1h_input_tokens, ephemeral_5m_input_tokens}`` (1-hour writes cost 2x
    input, 5-minute ones 1.25x: codeburn #276, ccusage #899, agentsview #1452); graphkit
    kept only the sum, so no cost could be priced from its rows. The 1-hour part rides
    along in ``attributes.usage`` as ``cache_creation_1h_input_tokens`` (once per
    response, as the sum), beside the response's own web searches
    (``server_tool_use.web_search_requests``); both are sparse properties of the graph
    (issue 30, tests/queries/test_claude_billing.py)."""
    rows = message_rows(SHAPED / "claude-server-tools")
    usages = [json.loads(r["attributes"])["usage"] for r in rows
              if r["attributes"] and "usage" in json.loads(r["attributes"])]
    assert usages == [{"input_tokens": 900, "output_tokens": 110,
                       "cache_creation_input_tokens": 1200, "cache_read_input_tokens": 8000,
                       "cache_creation_1h_input_tokens": 1200, "web_search_requests": 2}]


FLAT_SESSION = "f1a70000-7777-4e8f-9a0b-000000000007"


# -- Claude: the "flat" subagent lines of siropkin/budi#275 ----------------------------------
def test_claude_subagent_lines_of_the_flat_shape_are_read() -> None:
    """A subagent file whose lines carry role/model/usage/content at the top (no envelope
    ``type``; one the API's own ``"type": "message"`` object, one without a timestamp) was
    three skipped lines and one line dropped unsaid: the subagent's thread, its Read call,
    the file it read and its usage were missing. Each is the entry it stands for."""
    graph = _graph(SHAPED / "claude-flat-subagent")
    assert _rows(graph, "Thread", [*THREAD_TOKENS, "kind"]) == [
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
