"""Codex rollouts as real versions write them: legacy headers, patch working folders,
token counts and usage records, spawned and forked threads, rollbacks, messages
between agents, unknown line and item types.

Cases read fixtures under ``tests/fixtures/shaped/`` (see its README) or write small
rollouts in ``tmp_path`` with the builders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphkit.sources.touched import touched
from graphkit.sources.transcripts.codex_links import _asks_for_history
from tests.helpers.cli import graphkit
from tests.helpers.paths import SHAPED
from tests.helpers.transcripts import (
    THREAD_TOKENS,
    codex_line,
    codex_message,
    codex_meta,
    message_rows,
    skipped_lines,
    write_jsonl,
)
from tests.helpers.transcripts import graph_of as _graph
from tests.helpers.transcripts import node_rows as _rows

CODEX_THREAD = "019b2c3d-4e5f-7a6b-8c9d-0e1f2a3b4c01"


@pytest.mark.parametrize("meta", [{"forked_from_id": {"id": "x"}},
                                  {"parent_thread_id": ["x"]},
                                  {"source": {"subagent": {"thread_spawn": {
                                      "parent_thread_id": {"id": "x"}, "depth": 1}}}}],
                         ids=["forked-from-object", "parent-list", "spawn-parent-object"])
def test_a_codex_rollout_naming_its_origin_with_no_text_builds(
        tmp_path: Path, meta: dict[str, object]) -> None:
    # Was: TypeError "unhashable type" tracebacks from `build` and `rows`: the ids a
    # rollout's session_meta gives for its fork origin and parent thread were used as
    # dictionary keys whatever their type. Only text is an id now.
    stamp = "2026-02-10T09:00:00.100Z"
    lines = [{"timestamp": stamp, "type": "session_meta",
              "payload": {"id": CODEX_THREAD, "timestamp": stamp, "cwd": "/w", **meta}},
             {"timestamp": stamp, "type": "response_item",
              "payload": {"type": "message", "role": "user",
                          "content": [{"type": "input_text", "text": "hi"}]}}]
    day = tmp_path / "sessions" / "2026" / "02" / "10"
    day.mkdir(parents=True)
    (day / f"rollout-2026-02-10T09-00-00-{CODEX_THREAD}.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines))
    proc = graphkit("build", tmp_path / "sessions", "--snapshot", tmp_path / "snap", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["nodes"]["Thread"] == 1
    rows = graphkit("rows", tmp_path / "sessions", "--out", tmp_path / "rows.parquet")
    assert rows.returncode == 0, rows.stderr


# -- Codex: where a patch's files are -----------------------------------------------------
def test_codex_patch_paths_are_under_the_calls_workdir() -> None:
    """Codex resolves a patch's relative paths against the shell call's ``workdir``
    (relative to the turn's cwd when relative) or a ``cd DIR &&`` before ``apply_patch``;
    graphkit put them all under the cwd: files that do not exist, the real ones missed."""
    graph = _graph(SHAPED / "codex-patch-workdir")
    assert _rows(graph, "File", ["file_path", "reads", "writes"]) == [
        ("/home/dev/proj/core/src/parse.rs", 0, 1),     # workdir, absolute
        ("/home/dev/proj/docs/notes/parser.md", 0, 1),  # workdir "docs", relative
        ("/home/dev/proj/old.txt", 0, 1),               # apply_patch tool: the cwd
        ("/home/dev/proj/web/src/app.ts", 0, 1),        # bash -lc "cd web && apply_patch"
    ]


def test_codex_token_counts_are_turn_deltas_once_each() -> None:
    # info null (rate limits only) and a repeated identical total add nothing; the
    # thread's usage is the last total, input less its cached part.
    graph = _graph(SHAPED / "codex-patch-workdir")
    assert _rows(graph, "Thread", ["messages", "input_tokens", "output_tokens",
                                   "cache_read_input_tokens", "model"]) == [
        (12, 1500, 100, 1500, "gpt-5-codex")]


def test_legacy_rollout_with_state_lines_and_a_workdir() -> None:
    # 2025-05/06 rollouts: a bare {id, timestamp, instructions, git} header, bare items,
    # {"record_type": "state"} lines between them, no cwd anywhere but the call's workdir.
    graph = _graph(SHAPED / "codex-legacy-state")
    thread = "5f2e7c1a-1111-4222-8333-444455556601"
    assert _rows(graph, "Thread", ["thread_id", "session_id", "messages"]) == [
        (thread, thread, 5)]
    assert _rows(graph, "File", ["file_path", "writes"]) == [("/home/dev/lib/tests/test_tok.py", 1)]


@pytest.mark.parametrize(("args", "want"), [
    ({"command": ["bash", "-lc", "echo cd x; apply_patch <<'EOF'\n*** Begin Patch\n"
                  "*** Update File: a.py\n*** End Patch\nEOF"]}, "/w/a.py"),
    ({"command": ["bash", "-lc", "set -e; cd 'my dir' && apply_patch <<'EOF'\n"
                  "*** Begin Patch\n*** Update File: a.py\n*** End Patch\nEOF"]}, "/w/my dir/a.py"),
    ({"command": ["apply_patch", "*** Begin Patch\n*** Update File: /etc/a.conf\n"
                  "*** End Patch"], "workdir": "/w/sub"}, "/etc/a.conf"),
    ({"command": ["bash", "-lc", "cd /srv/x && apply_patch <<'EOF'\n*** Begin Patch\n"
                  "*** Update File: b.py\n*** End Patch\nEOF"], "workdir": "/w/y"}, "/srv/x/b.py"),
])
def test_a_patch_folder_is_only_a_cd_that_runs_it(args: dict[str, Any], want: str) -> None:
    # "echo cd x;" names no folder; an absolute path in the patch stays as it is.
    assert touched("shell", json.dumps(args), "/w") == [("write", want)]


def test_legacy_rollout_takes_its_cwd_from_the_environment_context() -> None:
    """A rollout of mid 2025 whose header names no cwd, the environment_context message
    Codex sent the model does: without it the thread had no Workspace and its patch's
    path stayed relative (``app/products.py``)."""
    graph = _graph(SHAPED / "codex-legacy-context")
    assert _rows(graph, "Workspace", ["cwd"]) == [("/home/dev/src/shop",)]
    assert _rows(graph, "File", ["file_path", "writes"]) == [
        ("/home/dev/src/shop/app/products.py", 1)]


def test_codex_token_count_with_only_the_last_usage_counts_it(tmp_path: Path) -> None:
    # token_count events whose info holds last_token_usage and no total (other
    # readers' tests carry them): each is its response's usage; they gave none.
    from tests.helpers.transcripts import codex_line, codex_message, codex_meta, write_jsonl

    thread = "019a7c00-3333-7444-8555-666677778803"
    def last(ts: str, i: int, c: int, o: int) -> dict[str, Any]:
        return codex_line(ts, "event_msg", {"type": "token_count", "info": {
            "last_token_usage": {"input_tokens": i, "cached_input_tokens": c,
                                 "output_tokens": o, "reasoning_output_tokens": 0,
                                 "total_tokens": i + o}}})
    write_jsonl(tmp_path / "sessions" / "2026" / "01" / "02" /
                f"rollout-2026-01-02T10-00-00-{thread}.jsonl", [
        codex_meta("2026-01-02T10:00:00Z", thread),
        codex_message("2026-01-02T10:00:01Z", "user", "count the tokens"),
        codex_message("2026-01-02T10:00:02Z", "assistant", "one"),
        last("2026-01-02T10:00:03Z", 400, 100, 20),
        codex_message("2026-01-02T10:00:04Z", "assistant", "two"),
        last("2026-01-02T10:00:05Z", 500, 300, 30)])
    graph = _graph(tmp_path / "sessions")
    assert _rows(graph, "Thread", ["input_tokens", "output_tokens",
                                   "cache_read_input_tokens"]) == [(500, 50, 400)]


# -- A4: Codex patches after other cd forms --------------------------------------------------
_PATCH = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.py\n*** End Patch\nEOF"


@pytest.mark.parametrize(("script", "want"), [
    ("pushd web && " + _PATCH, "/w/web/a.py"),
    ("pushd web >/dev/null && " + _PATCH + "\npopd", "/w/web/a.py"),
    ("(cd web && " + _PATCH + ")", "/w/web/a.py"),
    ("( cd web; " + _PATCH + " )", "/w/web/a.py"),
    ("cd web; " + _PATCH, "/w/web/a.py"),
    ("cd web\n" + _PATCH, "/w/web/a.py"),
    ("set -e\ncd web || exit 1\n" + _PATCH, "/w/web/a.py"),
    ("cd web && git status --short && " + _PATCH, "/w/web/a.py"),
    ("cd web && cd src && " + _PATCH, "/w/web/src/a.py"),          # was /w/src/a.py
    ("cd -- 'my web' 2>/dev/null && " + _PATCH, "/w/my web/a.py"),
    ("pushd web && pushd src && popd && " + _PATCH, "/w/web/a.py"),
    ("(cd web && make); " + _PATCH, "/w/a.py"),                    # the subshell's cd ends
    ("cd web | cat; " + _PATCH, "/w/a.py"),                        # a pipeline's too
    ("echo cd web; " + _PATCH, "/w/a.py"),                         # no cd at all
    ("cat > n.txt <<'X'\ncd web\nX\n" + _PATCH, "/w/a.py"),        # a here-doc's text
    ("cat <<EOF > n.txt\ncd web\nEOF\ncd src && " + _PATCH, "/w/src/a.py"),
    ("cd -P web && " + _PATCH, "/w/web/a.py"),
    ("cd ~/web && " + _PATCH, "/w/a.py"),                          # home unknown (was /w/~/web)
])
def test_a_patch_follows_the_scripts_cds(script: str, want: str) -> None:
    """graphkit once followed a ``cd DIR &&`` or ``cd DIR;`` right before ``apply_patch`` only;
    Codex runs the whole script, so a patch after ``pushd``, inside ``( … )``, after a cd
    on its own line or two cds in a row lands where the shell is then."""
    assert touched("shell", json.dumps({"command": ["bash", "-lc", script]}), "/w") == [
        ("write", want)]
    assert touched("shell_command", json.dumps({"command": script, "workdir": "/w"}),
                   "/elsewhere") == [("write", want)]
    # The whole command as one string, the script quoted inside it.
    assert touched("shell", json.dumps({"command": "bash -lc '" + script.replace("'", '"')}),
                   "/w") == [("write", want)]


def test_a_local_shell_patch_is_under_its_working_directory() -> None:
    """A ``local_shell_call``'s exec action (``{"type": "exec", "command": [...],
    "working_directory": ...}``, codex-rs ``LocalShellExecAction``) names its folder
    ``working_directory``, not ``workdir``: its patch's files were put under the cwd."""
    action = {"type": "exec", "command": ["apply_patch", "*** Begin Patch\n"
                                          "*** Update File: src/lib.rs\n*** End Patch"],
              "working_directory": "/w/crates/core", "timeout_ms": None, "env": {}}
    assert touched("local_shell", json.dumps(action), "/w") == [
        ("write", "/w/crates/core/src/lib.rs")]


# -- B: Codex subagents of current versions ---------------------------------------------------
@pytest.mark.slow
def test_codex_spawned_agent_asked_what_its_parent_was_asked() -> None:
    """A parent passes its user's words on to a spawned explorer unchanged (the child's
    first message is the parent's first message). Spawned rollouts without ordinals
    (``thread_spawn`` with ``agent_path``, ``agent_type``; no ``session_id``) have a copied
    history found by content; the child's own spawn call (no text) matched the parent's
    and was dropped with the usage it carried: the child had 2 messages, 900 input / 80
    output tokens, instead of 5,000 / 170. Calls are now matched by call id too.

    The repeated prompt itself was then still taken for a one-message copy (3 messages):
    now the parent's ``spawn_agent`` call, which asks for no ``fork_context``,
    says the child started empty, so all 4 are its own
    (``test_a_child_spawned_without_history_keeps_repeated_words``)."""
    graph = _graph(SHAPED / "codex-spawn-tree")
    root, child, grandchild = ("019c4a10-2b3c-7d4e-8f50-61728394a501",
                               "019c4a10-4c5d-7e6f-8071-8293a4b5c602",
                               "019c4a10-6e7f-7081-9293-a4b5c6d7e803")
    assert _rows(graph, "Thread", ["thread_id", "session_id", "messages", "input_tokens",
                                   "cache_read_input_tokens", "output_tokens"]) == [
        (root, root, 4, 6000, 5000, 220),
        (child, root, 4, 5000, 4000, 170),
        (grandchild, root, 2, 2000, 1000, 60)]
    threads = graph.nodes["Thread"].table
    key = dict(zip(threads.column("thread_id").to_pylist(),
                   threads.column("id").to_pylist(), strict=True))
    parents = {(e["source"], e["target"])
               for e in graph.edges["PARENT_THREAD"].table.to_pylist()}
    assert parents == {(key[child], key[root]), (key[grandchild], key[child])}


def test_codex_thread_spawn_keeps_agent_type_and_path() -> None:
    # Codex accepts "agent_type" for agent_role (a serde alias); graphkit read only
    # agent_role, so the spawned agent's role was lost from the rows' attributes.
    from graphkit.sources.full_schema import read_message_rows

    rows = read_message_rows([SHAPED / "codex-spawn-tree"]).table
    got = {(a["codex"].get("agent_role"), a["codex"].get("agent_path"))
           for a in map(json.loads, rows.column("attributes").to_pylist())}
    assert got == {(None, None), ("explorer", "/root/explorer"),
                   ("explorer", "/root/explorer/explorer")}


def test_a_forks_own_tool_call_is_no_copy_of_its_sources(tmp_path: Path) -> None:
    """A fork (``forked_from_id``, no ordinals, no turn_context: older writers) whose copy
    of the source is its first message, then its own patch call: the copy was found by
    role and text, and every tool call has no text, so the fork's own call "matched" the
    source's call and was dropped as copied, with the file it wrote. Calls are now told
    apart by their call id (a copy keeps the source's)."""
    from tests.helpers.transcripts import codex_line, codex_message, codex_meta, write_jsonl

    source, fork = "019b1111-0000-7000-8000-00000000000a", "019b1111-0000-7000-8000-00000000000b"
    patch = "*** Begin Patch\n*** Add File: {}\n+x\n*** End Patch"

    def call(ts: str, call_id: str, path: str) -> dict[str, Any]:
        return codex_line(ts, "response_item", {"type": "custom_tool_call",
                                                "name": "apply_patch", "call_id": call_id,
                                                "input": patch.format(path)})

    def output(ts: str, call_id: str) -> dict[str, Any]:
        return codex_line(ts, "response_item", {"type": "custom_tool_call_output",
                                                "call_id": call_id, "output": "Done!"})

    day = tmp_path / "sessions" / "2026" / "01" / "03"
    write_jsonl(day / f"rollout-2026-01-03T09-00-00-{source}.jsonl", [
        codex_meta("2026-01-03T09:00:00Z", source),
        codex_message("2026-01-03T09:00:01Z", "user", "add the notes file"),
        call("2026-01-03T09:00:02Z", "call_a", "notes.md"),
        output("2026-01-03T09:00:03Z", "call_a")])
    write_jsonl(day / f"rollout-2026-01-03T09-10-00-{fork}.jsonl", [
        codex_meta("2026-01-03T09:10:00Z", fork, forked_from_id=source),
        codex_message("2026-01-03T09:10:00Z", "user", "add the notes file"),   # the copy
        call("2026-01-03T09:10:05Z", "call_b", "todo.md"),
        output("2026-01-03T09:10:06Z", "call_b")])
    graph = _graph(tmp_path / "sessions")
    assert _rows(graph, "File", ["file_path", "writes"]) == [("/w/notes.md", 1), ("/w/todo.md", 1)]
    assert _rows(graph, "Thread", ["thread_id", "messages"]) == [(source, 3), (fork, 2)]


@pytest.mark.parametrize("stamps", ["original", "fork-time", "increasing"])
def test_a_replay_stamped_at_increasing_times_is_counted_once(tmp_path: Path,
                                                             stamps: str) -> None:
    """A spawned child's rollout replays its parent's history (turn_context, messages,
    token_count totals) before its own turn; public readers report the copy stamped with
    the original times (codeburn #1383) or at the child's creation (ccusage #950). Each
    way the parent's usage counts once, in the parent; the child's is its own delta."""
    from tests.helpers.transcripts import codex_line, codex_message, codex_meta, write_jsonl

    parent, child = "019b2222-0000-7000-8000-000000000001", "019b2222-0000-7000-8000-000000000002"

    def total(ts: str, i: int, o: int) -> dict[str, Any]:
        use = {"input_tokens": i, "cached_input_tokens": 0, "output_tokens": o,
               "reasoning_output_tokens": 0, "total_tokens": i + o}
        return codex_line(ts, "event_msg", {"type": "token_count", "info": {
            "total_token_usage": use, "last_token_usage": use}})

    def turn(ts: str) -> dict[str, Any]:
        return codex_line(ts, "turn_context", {"model": "gpt-5", "cwd": "/w"})

    day = tmp_path / "sessions" / "2026" / "01" / "04"
    write_jsonl(day / f"rollout-2026-01-04T10-00-00-{parent}.jsonl", [
        codex_meta("2026-01-04T10:00:00Z", parent), turn("2026-01-04T10:00:00Z"),
        codex_message("2026-01-04T10:00:01Z", "user", "plan the refactor"),
        codex_message("2026-01-04T10:00:02Z", "assistant", "spawning a helper"),
        total("2026-01-04T10:00:03Z", 1000, 100)])
    at = {"original": ["10:00:00", "10:00:01", "10:00:02", "10:00:03"],
          "fork-time": ["10:00:05"] * 4,
          "increasing": ["10:00:05.001", "10:00:05.002", "10:00:05.003", "10:00:05.004"]}[stamps]
    copy = [f"2026-01-04T{t}Z" for t in at]
    write_jsonl(day / f"rollout-2026-01-04T10-00-05-{child}.jsonl", [
        codex_meta("2026-01-04T10:00:05Z", child, source={"subagent": {"thread_spawn": {
            "parent_thread_id": parent, "depth": 1}}}),
        turn(copy[0]), codex_message(copy[1], "user", "plan the refactor"),
        codex_message(copy[2], "assistant", "spawning a helper"), total(copy[3], 1000, 100),
        turn("2026-01-04T10:00:05.100Z"),
        codex_message("2026-01-04T10:00:05.200Z", "user", "list the callers"),
        codex_message("2026-01-04T10:00:09Z", "assistant", "three callers"),
        total("2026-01-04T10:00:09.100Z", 1500, 150)])
    graph = _graph(tmp_path / "sessions")
    assert _rows(graph, "Thread", ["thread_id", "messages", "input_tokens",
                                   "output_tokens"]) == [(parent, 2, 1000, 100),
                                                         (child, 2, 500, 50)]


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


ROLLED = "019e0000-1111-7222-8333-444455556612"
LEAD = "019e0000-2222-7333-8444-555566667713"
WORKER = "019e0000-3333-7444-8555-666677778814"


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
    assert _rows(graph, "Thread", THREAD_TOKENS) == [(ROLLED, 9, 2900, 1240, 8900, 16000)]


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
    assert _rows(graph, "Thread", THREAD_TOKENS) == [(thread, 4, 160, 12, None, 240)]
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
    assert _rows(_graph(tmp_path), "Thread", THREAD_TOKENS) == [(thread, 2, 60, 5, None, 40)]
