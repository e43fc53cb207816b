"""Format variants real versions write that no earlier fixture had (round 11, formats11).

Transcript cases read fixtures under ``tests/fixtures/shaped/`` (see its README) or write
small rollouts in ``tmp_path`` with the builders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphkit.sources.transcripts.codex_links import _asks_for_history
from tests.helpers.paths import SHAPED
from tests.helpers.transcripts import graph_of as _graph
from tests.helpers.transcripts import message_rows
from tests.helpers.transcripts import node_rows as _rows

PARENT = "019d7a00-1111-7222-8333-444455556601"
FRESH = "019d7a00-2222-7333-8444-555566667702"
FORKED = "019d7a00-3333-7444-8555-666677778803"


def _total(ts: str, i: int, o: int) -> dict[str, Any]:
    """A Codex ``token_count`` event whose running total and last turn are both ``i``/``o``."""
    from tests.helpers.transcripts import codex_line

    use = {"input_tokens": i, "cached_input_tokens": 0, "output_tokens": o,
           "reasoning_output_tokens": 0, "total_tokens": i + o}
    return codex_line(ts, "event_msg", {"type": "token_count", "info": {
        "total_token_usage": use, "last_token_usage": use}})



# -- Codex: a spawned child that copied nothing ---------------------------------------------
def test_a_child_spawned_without_history_keeps_repeated_words() -> None:
    """The parent's user asks for a rename; the model passes those words on unchanged
    to a worker (``spawn_agent`` with no ``fork_context``: codex-rs starts the child
    empty, the call's message its first input). The child's first message repeated the
    parent's latest one, so it was taken for a one-message copy of the parent's history
    and dropped (3 messages). The call says no history was copied: all 4 are the child's.
    A second worker spawned with ``fork_context: true`` still has its copied history
    (the parent's session_meta, messages and token_count, stamped at fork time) dropped,
    and the parent's usage counts once."""
    graph = _graph(SHAPED / "codex-spawn-fresh")
    assert _rows(graph, "Thread", ["thread_id", "messages", "input_tokens",
                                   "cache_read_input_tokens", "output_tokens"]) == [
        (PARENT, 8, 3000, 4000, 230),
        (FRESH, 4, 2000, 1000, 90),
        (FORKED, 2, 500, 1500, 60)]
    rows = message_rows(SHAPED / "codex-spawn-fresh")
    first = min((r for r in rows if r["conversation_id"] == FRESH),
                key=lambda r: r["message_created_at"])
    assert (first["role"], first["content_text"]) == (
        "user", "Now rename --fast to --quick in docs/ too.")


@pytest.mark.parametrize(("args", "asks"), [
    ({"message": "go"}, False),                                  # v1, fork_context default
    ({"message": "go", "fork_context": False}, False),
    ({"message": "go", "fork_context": True}, True),
    ({"items": [{"type": "text", "text": "go"}], "agent_type": "explorer"}, False),
    ({"message": "go", "task_name": "docs"}, True),              # MultiAgentV2: "all"
    ({"message": "go", "task_name": "docs", "fork_turns": " None "}, False),
    ({"message": "go", "task_name": "docs", "fork_turns": "2"}, True),
])
def test_spawn_arguments_say_whether_history_was_copied(args: dict[str, Any],
                                                        asks: bool) -> None:
    assert _asks_for_history(json.dumps(args)) is asks


@pytest.mark.parametrize("args", [None, "", "not json", "[1, 2]", '{"message": "x"'])
def test_unreadable_spawn_arguments_keep_the_content_match(args: str | None) -> None:
    assert _asks_for_history(args) is True


@pytest.mark.parametrize("linked_by", ["output-text", "event-only", "activity-event"])
def test_the_spawning_call_is_found_by_its_output_or_its_event(tmp_path: Path,
                                                               linked_by: str) -> None:
    """Early ``spawn_agent`` outputs were text (``agent_id: <id>``); MultiAgentV2's name a
    ``task_name``, not the thread, and only the ``collab_agent_spawn_end`` event says which
    thread the call made; newer writers say it by a ``sub_agent_activity`` event whose
    ``event_id`` is the call's id (``kind: "started"``; inspect_swe's rollout models). Each
    way a call that asked for no history keeps the child's repeated first message."""
    from tests.helpers.transcripts import codex_line, codex_message, codex_meta, write_jsonl

    parent, child = ("019c0000-0000-7000-8000-0000000000a1",
                     "019c0000-0000-7000-8000-0000000000a2")
    ask = "count the TODOs under src/"
    if linked_by == "output-text":
        args: dict[str, Any] = {"message": ask}
        output = f"agent_id: {child}"
        events: list[dict[str, Any]] = []
    else:
        args = {"message": ask, "task_name": "todo_counter", "fork_turns": "none"}
        output = json.dumps({"task_name": "/root/todo_counter", "nickname": "Ada"})
        event = ({"type": "collab_agent_spawn_end", "call_id": "call_1",
                  "sender_thread_id": parent, "new_thread_id": child, "prompt": ask,
                  "status": "running"} if linked_by == "event-only" else
                 {"type": "sub_agent_activity", "event_id": "call_1", "kind": "started",
                  "agent_thread_id": child, "agent_path": "/root/todo_counter"})
        events = [codex_line("2026-01-05T10:00:03.500Z", "event_msg", event)]
    day = tmp_path / "sessions" / "2026" / "01" / "05"
    write_jsonl(day / f"rollout-2026-01-05T10-00-00-{parent}.jsonl", [
        codex_meta("2026-01-05T10:00:00Z", parent),
        codex_message("2026-01-05T10:00:01Z", "user", ask),
        codex_line("2026-01-05T10:00:03Z", "response_item", {
            "type": "function_call", "name": "spawn_agent", "call_id": "call_1",
            "arguments": json.dumps(args)}),
        *events,
        codex_line("2026-01-05T10:00:04Z", "response_item", {
            "type": "function_call_output", "call_id": "call_1", "output": output}),
        codex_message("2026-01-05T10:00:30Z", "assistant", "12 TODOs.")])
    write_jsonl(day / f"rollout-2026-01-05T10-00-03-{child}.jsonl", [
        codex_meta("2026-01-05T10:00:03.600Z", child, source={"subagent": {"thread_spawn": {
            "parent_thread_id": parent, "depth": 1}}}),
        codex_message("2026-01-05T10:00:03.700Z", "user", ask),
        codex_message("2026-01-05T10:00:20Z", "assistant", "12 TODOs in 5 files.")])
    graph = _graph(tmp_path / "sessions")
    assert _rows(graph, "Thread", ["thread_id", "messages"]) == [(parent, 4), (child, 2)]


# -- Codex: tool search and image generation items -------------------------------------------
def test_tool_search_and_image_generation_items_are_calls() -> None:
    """Newer Codex writes ``tool_search_call`` (``arguments`` an object, ``execution``)
    and its ``tool_search_output`` (the ``tools`` found), and ``image_generation_call``
    (``revised_prompt``, the image base64 in ``result``): graphkit read none of them, so
    the search and the image the model made were missing (4 messages, not 7). Now each is
    a call (tool ``tool_search`` / ``image_generation``) or a call's output; the image's
    bytes are not kept."""
    graph = _graph(SHAPED / "codex-tool-search")
    assert _rows(graph, "Thread", ["messages", "input_tokens", "output_tokens"]) == [
        (7, 3000, 300)]
    assert _rows(graph, "Tool", ["tool_name"]) == [
        ("calendar_create_event",), ("image_generation",), ("tool_search",)]
    rows = message_rows(SHAPED / "codex-tool-search")
    got = {(r["part_type"], r["tool_name"], r["tool_call_id"]): r for r in rows
           if r["tool_name"] in ("tool_search", "image_generation")}
    assert set(got) == {("tool_call", "tool_search", "ts_1"),
                        ("tool_result", "tool_search", "ts_1"),
                        ("tool_call", "image_generation", "ig_0a1b2c")}
    assert json.loads(got[("tool_call", "tool_search", "ts_1")]["tool_args"]) == {
        "query": "calendar create event", "limit": 2}
    found = json.loads(got[("tool_result", "tool_search", "ts_1")]["content_text"])
    assert [t["name"] for t in found] == ["calendar_create_event"]
    image = got[("tool_call", "image_generation", "ig_0a1b2c")]
    assert json.loads(image["tool_args"]) == {
        "revised_prompt": "A flat banner reading 'v2.0' on a teal background"}
    assert not any("iVBORw0KGgo" in json.dumps(r, default=str) for r in rows)


def test_a_v2_subagent_rollout_with_its_parents_meta_and_no_replay(tmp_path: Path) -> None:
    """Codex 0.142-0.145 subagent rollouts (PokeTokenBar #132/#137): the child's
    ``session_meta`` (top-level ``parent_thread_id`` and ``forked_from_id``,
    ``thread_source: "subagent"``, ``multi_agent_version: "v2"``, ``history_mode``), then
    the parent's ``session_meta`` (its own earlier time), then only the child's own turns,
    no copied token_count. The child hangs under its parent, keeps every message of its
    own and counts only its own usage; the parent's meta is no message."""
    from tests.helpers.transcripts import codex_line, codex_message, codex_meta, write_jsonl

    parent, child = ("019f0000-0000-7000-8000-0000000000b1",
                     "019f0000-0000-7000-8000-0000000000b2")

    day = tmp_path / "sessions" / "2026" / "07" / "20"
    parent_meta = codex_meta("2026-07-20T08:00:00Z", parent, cli_version="0.145.0",
                             source="cli", multi_agent_version="v2")
    write_jsonl(day / f"rollout-2026-07-20T08-00-00-{parent}.jsonl", [
        parent_meta,
        codex_message("2026-07-20T08:00:01Z", "user", "audit the error handling"),
        codex_message("2026-07-20T08:00:09Z", "assistant", "a subagent will check io.rs"),
        _total("2026-07-20T08:00:09.100Z", 1000, 50),
        codex_message("2026-07-20T08:01:00Z", "assistant", "io.rs swallows two errors"),
        _total("2026-07-20T08:01:00.100Z", 2500, 90)])
    write_jsonl(day / f"rollout-2026-07-20T08-00-10-{child}.jsonl", [
        codex_meta("2026-07-20T08:00:10Z", child, cli_version="0.145.0",
                   parent_thread_id=parent, forked_from_id=parent, thread_source="subagent",
                   multi_agent_version="v2", history_mode="legacy",
                   source={"subagent": {"thread_spawn": {"parent_thread_id": parent,
                                                         "depth": 1}}}),
        parent_meta,
        codex_line("2026-07-20T08:00:10.100Z", "event_msg", {"type": "task_started",
                                                            "turn_id": "t-1"}),
        codex_message("2026-07-20T08:00:10.200Z", "user", "check io.rs for swallowed errors"),
        codex_message("2026-07-20T08:00:50Z", "assistant", "two: read_all and flush"),
        _total("2026-07-20T08:00:50.100Z", 800, 40)])
    graph = _graph(tmp_path / "sessions")
    assert _rows(graph, "Thread", ["thread_id", "session_id", "messages", "input_tokens",
                                   "output_tokens"]) == [
        (parent, parent, 3, 2500, 90), (child, parent, 2, 800, 40)]
    threads = graph.nodes["Thread"].table
    key = dict(zip(threads.column("thread_id").to_pylist(),
                   threads.column("id").to_pylist(), strict=True))
    assert {(e["source"], e["target"]) for e in graph.edges["PARENT_THREAD"].table.to_pylist()
            } == {(key[child], key[parent])}


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


# -- Codex: an early shell output's exit code -------------------------------------------------
def test_an_early_shell_output_with_a_nonzero_exit_code_is_an_error(tmp_path: Path) -> None:
    """Codex 0.2x-0.3x wrote a shell call's output as JSON text ``{"output": ...,
    "metadata": {"exit_code": N, "duration_seconds": ...}}`` and marked the call failed
    when N != 0 (codex-rs ``format_exec_output``, ``success: Some(exit_code == 0)``), but
    the flag is not written: the exit code is the only trace. graphkit marked every such
    output a success; now a nonzero exit code is an error. The text stays as written."""
    from tests.helpers.transcripts import codex_line, codex_message, codex_meta, write_jsonl

    thread = "0198a000-0000-7000-8000-0000000000c1"

    def shell(ts: str, call: str, command: str, output: str, code: int) -> list[Any]:
        return [codex_line(ts + "0Z", "response_item", {
                    "type": "function_call", "name": "shell", "call_id": call,
                    "arguments": json.dumps({"command": ["bash", "-lc", command]})}),
                codex_line(ts + "5Z", "response_item", {
                    "type": "function_call_output", "call_id": call,
                    "output": json.dumps({"output": output, "metadata": {
                        "exit_code": code, "duration_seconds": 0.2}})})]

    day = tmp_path / "sessions" / "2025" / "08" / "20"
    write_jsonl(day / f"rollout-2025-08-20T10-00-00-{thread}.jsonl", [
        codex_meta("2025-08-20T10:00:00Z", thread, cli_version="0.23.0"),
        codex_message("2025-08-20T10:00:01Z", "user", "run the tests"),
        *shell("2025-08-20T10:00:0", "call_1", "pytest -q", "2 failed, 8 passed", 1),
        *shell("2025-08-20T10:00:1", "call_2", "git status --short", " M a.py", 0),
        codex_message("2025-08-20T10:00:30Z", "assistant", "two tests fail")])
    rows = message_rows(tmp_path / "sessions")
    got = [(r["tool_call_id"], r["is_error"], r["status"]) for r in rows
           if r["part_type"] == "tool_result"]
    assert got == [("call_1", True, '{"tool_status":"error"}'),
                   ("call_2", None, '{"tool_status":"success"}')]
    texts = [json.loads(r["content_text"])["output"] for r in rows
             if r["part_type"] == "tool_result"]
    assert texts == ["2 failed, 8 passed", " M a.py"]


# -- Codex: a namespaced (MCP) tool call ------------------------------------------------------
@pytest.mark.parametrize(("namespace", "want"), [
    ("mcp__weather__", "mcp__weather__get_forecast"),
    ("mcp__weather", "mcp__weather__get_forecast"),
    (None, "get_forecast"),
    ("", "get_forecast"),
])
def test_a_namespaced_call_is_named_as_the_model_called_it(tmp_path: Path,
                                                           namespace: str | None,
                                                           want: str) -> None:
    """Newer Codex writes an MCP tool call as ``{"namespace": "mcp__weather__", "name":
    "get_forecast"}`` (proxies and readers of the Responses stream flatten it to
    ``mcp__weather__get_forecast``; some write the namespace without the trailing
    ``__``). graphkit kept only ``name``: every server's ``search`` or ``get`` was one
    Tool. The call and its output are named by namespace and name."""
    from tests.helpers.transcripts import codex_line, codex_message, codex_meta, write_jsonl

    thread = "019e0000-0000-7000-8000-0000000000d1"
    call: dict[str, Any] = {"type": "function_call", "call_id": "call_mcp1",
                            "name": "get_forecast", "arguments": '{"city": "Bern"}'}
    if namespace is not None:
        call["namespace"] = namespace
    day = tmp_path / "sessions" / "2026" / "08" / "01"
    write_jsonl(day / f"rollout-2026-08-01T09-00-00-{thread}.jsonl", [
        codex_meta("2026-08-01T09:00:00Z", thread),
        codex_message("2026-08-01T09:00:01Z", "user", "weather in Bern?"),
        codex_line("2026-08-01T09:00:02Z", "response_item", call),
        codex_line("2026-08-01T09:00:03Z", "response_item", {
            "type": "function_call_output", "call_id": "call_mcp1", "output": "sunny"}),
        codex_message("2026-08-01T09:00:04Z", "assistant", "Sunny.")])
    rows = message_rows(tmp_path / "sessions")
    assert [(r["part_type"], r["tool_name"]) for r in rows if r["tool_call_id"]] == [
        ("tool_call", want), ("tool_result", want)]


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


def test_an_output_object_with_content_items_keeps_their_text(tmp_path: Path) -> None:
    """A call output written as an object whose ``content`` is a list of content items
    (``{"content": [{"type": "input_text", ...}, {"type": "input_image", ...}],
    "success": false}``, the FunctionCallOutputBody wrapper inspect_swe's rollout reader
    meets) was kept as the whole object's JSON, image data included; now its text items,
    as for a bare list, and ``success: false`` still makes it an error."""
    from tests.helpers.transcripts import codex_line, codex_message, codex_meta, write_jsonl

    thread = "019e0000-0000-7000-8000-0000000000e1"
    image = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg"
    day = tmp_path / "sessions" / "2026" / "08" / "02"
    write_jsonl(day / f"rollout-2026-08-02T09-00-00-{thread}.jsonl", [
        codex_meta("2026-08-02T09:00:00Z", thread),
        codex_message("2026-08-02T09:00:01Z", "user", "screenshot the page"),
        codex_line("2026-08-02T09:00:02Z", "response_item", {
            "type": "function_call", "name": "view_image", "call_id": "call_v1",
            "arguments": '{"path": "shot.png"}'}),
        codex_line("2026-08-02T09:00:03Z", "response_item", {
            "type": "function_call_output", "call_id": "call_v1", "output": {
                "content": [{"type": "input_text", "text": "shot.png is 0 bytes"},
                            {"type": "input_image", "image_url": image}],
                "success": False}}),
        codex_message("2026-08-02T09:00:04Z", "assistant", "The screenshot is empty.")])
    rows = message_rows(tmp_path / "sessions")
    got = [(r["content_text"], r["is_error"]) for r in rows if r["part_type"] == "tool_result"]
    assert got == [("shot.png is 0 bytes", True)]


def test_a_fork_copy_without_the_parents_calls_and_reasoning_is_found(tmp_path: Path) -> None:
    """A ``spawn_agent`` call with ``fork_context: true`` copies the parent's history
    into the child, but codex-rs (``agent/control/spawn.rs``, ``keep_forked_rollout_item``)
    keeps only user/developer messages and final answers: the parent's reasoning, tool
    calls and outputs are left out. The copy was matched against the parent in step, so
    it ended at the first item left out and the rest of it (a final answer, the second
    prompt) counted as the child's own. Items a fork leaves out are now stepped over."""
    from tests.helpers.transcripts import codex_line, codex_message, codex_meta, write_jsonl

    parent, child = ("019e0000-0000-7000-8000-0000000000f1",
                     "019e0000-0000-7000-8000-0000000000f2")

    def item(ts: str, **payload: Any) -> dict[str, Any]:
        return codex_line(ts, "response_item", payload)

    def final(ts: str, text: str) -> dict[str, Any]:
        line = codex_message(ts, "assistant", text)
        line["payload"]["phase"] = "final_answer"
        return line

    day = tmp_path / "sessions" / "2026" / "09" / "01"
    parent_meta = codex_meta("2026-09-01T09:00:00Z", parent)
    write_jsonl(day / f"rollout-2026-09-01T09-00-00-{parent}.jsonl", [
        parent_meta,
        codex_message("2026-09-01T09:00:01Z", "user", "add a --quick flag"),
        item("2026-09-01T09:00:02Z", type="reasoning", summary=[
            {"type": "summary_text", "text": "find the arg parser"}]),
        item("2026-09-01T09:00:03Z", type="function_call", name="shell", call_id="call_p1",
             arguments='{"command": ["rg", "--fast"]}'),
        item("2026-09-01T09:00:04Z", type="function_call_output", call_id="call_p1",
             output="src/args.rs"),
        final("2026-09-01T09:00:20Z", "Added --quick."),
        _total("2026-09-01T09:00:20.1Z", 1000, 100),
        codex_message("2026-09-01T09:01:00Z", "user", "rename it everywhere"),
        item("2026-09-01T09:01:01Z", type="reasoning", summary=[
            {"type": "summary_text", "text": "hand the docs to a worker"}]),
        item("2026-09-01T09:01:02Z", type="function_call", name="spawn_agent",
             call_id="call_p2", arguments=json.dumps(
                 {"message": "update the docs", "fork_context": True})),
        item("2026-09-01T09:01:03Z", type="function_call_output", call_id="call_p2",
             output=json.dumps({"agent_id": child, "nickname": "Kepler"})),
        codex_message("2026-09-01T09:02:00Z", "assistant", "The worker updated the docs."),
        _total("2026-09-01T09:02:00.1Z", 2600, 180)])
    fork = "2026-09-01T09:01:02.500Z"
    write_jsonl(day / f"rollout-2026-09-01T09-01-02-{child}.jsonl", [
        codex_meta(fork, child, forked_from_id=parent, source={"subagent": {
            "thread_spawn": {"parent_thread_id": parent, "depth": 1}}}),
        {**parent_meta, "timestamp": fork},
        codex_message(fork, "user", "add a --quick flag"),
        final(fork, "Added --quick."),
        _total(fork, 1000, 100),
        codex_message(fork, "user", "rename it everywhere"),
        codex_message("2026-09-01T09:01:02.600Z", "user", "update the docs"),
        codex_message("2026-09-01T09:01:40Z", "assistant", "docs/usage.md updated."),
        _total("2026-09-01T09:01:40.1Z", 1700, 140)])
    graph = _graph(tmp_path / "sessions")
    assert _rows(graph, "Thread", ["thread_id", "messages", "input_tokens",
                                   "output_tokens"]) == [
        (parent, 10, 2600, 180), (child, 2, 700, 40)]


def test_a_fork_copy_with_totals_but_no_answers_sets_only_the_baseline(
        tmp_path: Path) -> None:
    """A fork copies the parent's ``token_count`` events but, of its assistant messages,
    only final answers (codex-rs ``keep_forked_rollout_item``: a message without
    ``phase: "final_answer"`` is left out). A copy of a parent whose answers carry no
    phase holds totals and no answer: the totals were held back and given to the child's
    first own answer, so the parent's usage counted twice (child 1,700 input instead of
    700). A total with no answer of the file before it only sets the baseline now: every
    response writes an assistant-role item (reasoning, call or message) before its
    token_count."""
    from tests.helpers.transcripts import codex_line, codex_message, codex_meta, write_jsonl

    parent, child = ("019e0000-0000-7000-8000-0000000000f3",
                     "019e0000-0000-7000-8000-0000000000f4")

    day = tmp_path / "sessions" / "2026" / "09" / "02"
    parent_meta = codex_meta("2026-09-02T09:00:00Z", parent)
    write_jsonl(day / f"rollout-2026-09-02T09-00-00-{parent}.jsonl", [
        parent_meta,
        codex_message("2026-09-02T09:00:01Z", "user", "add a --quick flag"),
        codex_message("2026-09-02T09:00:20Z", "assistant", "Added --quick."),
        _total("2026-09-02T09:00:20.1Z", 1000, 100),
        codex_line("2026-09-02T09:01:02Z", "response_item", {
            "type": "function_call", "name": "spawn_agent", "call_id": "call_f1",
            "arguments": json.dumps({"message": "update the docs", "fork_context": True})}),
        codex_line("2026-09-02T09:01:03Z", "response_item", {
            "type": "function_call_output", "call_id": "call_f1",
            "output": json.dumps({"agent_id": child})}),
        codex_message("2026-09-02T09:02:00Z", "assistant", "Docs updated by a worker."),
        _total("2026-09-02T09:02:00.1Z", 2600, 180)])
    fork = "2026-09-02T09:01:02.500Z"
    write_jsonl(day / f"rollout-2026-09-02T09-01-02-{child}.jsonl", [
        codex_meta(fork, child, forked_from_id=parent, source={"subagent": {
            "thread_spawn": {"parent_thread_id": parent, "depth": 1}}}),
        {**parent_meta, "timestamp": fork},
        codex_message(fork, "user", "add a --quick flag"),
        _total(fork, 1000, 100),
        codex_message("2026-09-02T09:01:02.600Z", "user", "update the docs"),
        codex_message("2026-09-02T09:01:40Z", "assistant", "docs/usage.md updated."),
        _total("2026-09-02T09:01:40.1Z", 1700, 140)])
    graph = _graph(tmp_path / "sessions")
    assert _rows(graph, "Thread", ["thread_id", "messages", "input_tokens",
                                   "output_tokens"]) == [
        (parent, 5, 2600, 180), (child, 2, 700, 40)]


def test_claude_one_hour_cache_writes_stay_in_the_rows_usage() -> None:
    """Claude Code's usage splits its cache writes by TTL, ``cache_creation:
    {ephemeral_1h_input_tokens, ephemeral_5m_input_tokens}`` (1-hour writes cost 2x
    input, 5-minute ones 1.25x: codeburn #276, ccusage #899, agentsview #1452); graphkit
    kept only the sum, so no cost could be priced from its rows. The 1-hour part rides
    along in ``attributes.usage`` as ``cache_creation_1h_input_tokens`` (once per
    response, as the sum); the graph's columns are unchanged."""
    rows = message_rows(SHAPED / "claude-server-tools")
    usages = [json.loads(r["attributes"])["usage"] for r in rows
              if r["attributes"] and "usage" in json.loads(r["attributes"])]
    assert usages == [{"input_tokens": 900, "output_tokens": 110,
                       "cache_creation_input_tokens": 1200, "cache_read_input_tokens": 8000,
                       "cache_creation_1h_input_tokens": 1200}]
