"""Format variants, second round (formats10): what round 9 left, and transcripts of
current Claude Code and Codex versions no earlier fixture had.

Row-file cases rewrite the HypAware cache fixture's rows in ``tmp_path`` as other
writers store them (Spark/DuckDB maps, epoch integers, Claude's ``<synthetic>``
model); transcript cases read ``tests/fixtures/shaped/`` (its README, SOURCES.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphkit.core.errors import SourceError
from graphkit.core.graph import GraphTables as Graph
from graphkit.sources.touched import touched
from tests.helpers.paths import CACHE, SHAPED
from tests.helpers.transcripts import graph_of as _graph
from tests.helpers.transcripts import node_rows as _rows


@pytest.fixture(scope="module")
def cache_rows() -> pa.Table:
    from graphkit.sources.full_schema import read_message_rows

    return read_message_rows([CACHE], include_content=True).table.drop_columns(["touched_files"])


def _counts(graph: Graph) -> dict[str, Any]:
    threads = graph.nodes["Thread"].table
    return {"nodes": graph.node_counts(),
            "edges": {k: v.table.num_rows for k, v in sorted(graph.edges.items())},
            "tokens": sum(v or 0 for v in threads.column("output_tokens").to_pylist()),
            "input": sum(v or 0 for v in threads.column("input_tokens").to_pylist()),
            "first": min(threads.column("first_seen").to_pylist()),
            "last": max(threads.column("last_seen").to_pylist())}


def _write(table: pa.Table, folder: Path) -> Path:
    folder.mkdir()
    pq.write_table(table, folder / "rows.parquet")
    return folder


def _set(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, values)


# -- A1: "<synthetic>" in a row file's model ------------------------------------------------
def test_row_files_synthetic_model_is_no_model(cache_rows: pa.Table, tmp_path: Path) -> None:
    """HypAware's rows of a Claude session keep the ``"<synthetic>"`` Claude Code writes on
    the messages it made itself (an API error, "No response requested."); transcripts
    read it as no model since round 9, row files made a Model node of it."""
    want = _rows(_graph(_write(cache_rows, tmp_path / "plain")), "Model", ["model"])
    models = cache_rows.column("model").to_pylist()
    first = models.index("claude-sonnet-4-5")
    synthetic = [("<synthetic>" if i in (first, len(models) - 1) or (m is None and i % 2) else m)
                 for i, m in enumerate(models)]
    assert synthetic.count("<synthetic>") >= 3
    graph = _graph(_write(_set(cache_rows, "model", pa.array(synthetic)), tmp_path / "syn"))
    assert _rows(graph, "Model", ["model"]) == want
    assert "<synthetic>" not in graph.nodes["Thread"].table.column("model").to_pylist()


# -- A2: attributes as map<string, string> --------------------------------------------------
def _as_map(text: str | None) -> list[tuple[str, str]] | None:
    """A JSON object as Spark's ``from_json(attributes, 'map<string,string>')`` holds it:
    nested objects as their JSON text, scalars as their text."""
    if text is None:
        return None
    doc = json.loads(text)
    return [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in doc.items()]


def test_attributes_as_a_map_read_like_json(cache_rows: pa.Table, tmp_path: Path) -> None:
    """Spark and DuckDB write a JSON-ish column as ``map<string,string>``: refused before
    ("has type map<string, string>, but the contract … expects json")."""
    want = _counts(_graph(_write(cache_rows, tmp_path / "plain")))
    maps = pa.array([_as_map(t) for t in cache_rows.column("attributes").to_pylist()],
                    pa.map_(pa.string(), pa.string()))
    table = _set(cache_rows, "attributes", maps)
    got = _counts(_graph(_write(table, tmp_path / "map")))
    assert got == want and want["tokens"] > 0 and want["nodes"]["Agent"] > 0


def test_graphkit_rows_writes_a_map_as_json_text(cache_rows: pa.Table, tmp_path: Path) -> None:
    from graphkit.sources.full_schema import read_message_rows

    maps = pa.array([_as_map(t) for t in cache_rows.column("attributes").to_pylist()],
                    pa.map_(pa.string(), pa.string()))
    src = _write(_set(cache_rows, "attributes", maps), tmp_path / "map")
    got = read_message_rows([src]).table.column("attributes").to_pylist()
    want = cache_rows.column("attributes").to_pylist()
    assert [json.loads(g) if g else None for g in got] == [
        json.loads(w) if w else None for w in want]


# -- A3: message_created_at as integers since 1970 ------------------------------------------
@pytest.mark.parametrize(("unit", "scale"), [("s", 1), ("ms", 10**3), ("us", 10**6),
                                            ("ns", 10**9)])
def test_epoch_integer_times_read_by_their_magnitude(cache_rows: pa.Table, tmp_path: Path,
                                                     unit: str, scale: int) -> None:
    """pandas' ``to_json`` writes ms, Spark's ``unix_timestamp`` s, Go's ``UnixNano`` ns.
    Years 2000-2100 in s, ms, us and ns are four ranges a thousand apart that do not
    overlap (9.5e8-4.1e9, 9.5e11-4.1e12, …), so a column whose every value falls in one
    range names its unit; refused before ("has type int64, but … expects timestamp")."""
    micros = cache_rows.column("message_created_at").cast(pa.int64()).to_pylist()
    # The fixture's times have no fraction below a second, so s loses nothing.
    assert all(m % 10**6 == 0 for m in micros)
    want = _counts(_graph(_write(cache_rows, tmp_path / "plain")))
    ints = pa.array([m * scale // 10**6 for m in micros], pa.int64())
    assert _counts(_graph(_write(_set(cache_rows, "message_created_at", ints),
                                 tmp_path / unit))) == want


@pytest.mark.parametrize(("values", "why"), [
    ([1_764_000_000, 1_764_000_000_000], "in more than one unit"),   # s and ms mixed
    ([86_400, 172_800], "years 2000 to 2100"),                       # 1970: a count, no date
    ([5_000_000_000_000_000_000, 1], "years 2000 to 2100"),
])
def test_epoch_integers_of_no_one_unit_are_refused(cache_rows: pa.Table, tmp_path: Path,
                                                   values: list[int], why: str) -> None:
    """Guessing would put the graph's times decades off without a word: a column whose
    values fall in no range, or in two, is one error naming file, column and the fix."""
    n = cache_rows.num_rows
    ints = pa.array([values[i % len(values)] for i in range(n)], pa.int64())
    src = _write(_set(cache_rows, "message_created_at", ints), tmp_path / "bad")
    with pytest.raises(SourceError) as err:
        _graph(src)
    text = str(err.value)
    assert "message_created_at" in text and why in text and "rows.parquet" in text


def test_float_epoch_seconds_keep_their_fraction(cache_rows: pa.Table, tmp_path: Path) -> None:
    # Python's time.time() written as is: seconds with a fraction (refused before,
    # "has type double"); the fraction is kept to the microsecond.
    micros = cache_rows.column("message_created_at").cast(pa.int64()).to_pylist()
    shifted = [m + 123_457 for m in micros]
    floats = pa.array([m / 10**6 for m in shifted], pa.float64())
    graph = _graph(_write(_set(cache_rows, "message_created_at", floats), tmp_path / "f"))
    first = min(graph.nodes["Thread"].table.column("first_seen").cast(pa.int64()).to_pylist())
    assert first == min(shifted)
    nan = pa.array([float("nan")] * cache_rows.num_rows)
    with pytest.raises(SourceError, match="NaN"):
        _graph(_write(_set(cache_rows, "message_created_at", nan), tmp_path / "nan"))


def test_graphkit_rows_reads_epoch_integers(cache_rows: pa.Table, tmp_path: Path) -> None:
    from graphkit.sources.full_schema import read_message_rows

    millis = pa.array([m // 1000 for m in
                       cache_rows.column("message_created_at").cast(pa.int64()).to_pylist()])
    src = _write(_set(cache_rows, "message_created_at", millis), tmp_path / "ms")
    got = read_message_rows([src]).table.column("message_created_at")
    assert got.to_pylist() == cache_rows.column("message_created_at").to_pylist()


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
    """Round 9 followed a ``cd DIR &&`` or ``cd DIR;`` right before ``apply_patch`` only;
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
def test_codex_spawned_agent_asked_what_its_parent_was_asked() -> None:
    """A parent passes its user's words on to a spawned explorer unchanged (the child's
    first message is the parent's first message). Spawned rollouts without ordinals
    (``thread_spawn`` with ``agent_path``, ``agent_type``; no ``session_id``) have a copied
    history found by content; the child's own spawn call (no text) matched the parent's
    and was dropped with the usage it carried: the child had 2 messages, 900 input / 80
    output tokens, instead of 5,000 / 170. Calls are now matched by call id too.

    The repeated prompt itself was then still taken for a one-message copy (3 messages):
    since formats11 the parent's ``spawn_agent`` call, which asks for no ``fork_context``,
    says the child started empty, so all 4 are its own
    (``test_format_variants3.test_a_child_spawned_without_history_keeps_repeated_words``)."""
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
