"""Format variants real versions write that no earlier fixture had (round 9).

Transcript cases read fixtures under ``tests/fixtures/shaped/`` (see its README);
row-file cases rewrite the HypAware cache fixture's rows in ``tmp_path`` with the
physical types other writers use (Polars/DuckDB views, binary text, text times).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from graphkit.core.graph import GraphTables as Graph
from graphkit.sources.touched import touched
from tests.helpers.paths import CACHE, SHAPED
from tests.helpers.transcripts import graph_of as _graph
from tests.helpers.transcripts import node_rows as _rows


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


# -- row files: physical types of other writers --------------------------------------------
@pytest.fixture(scope="module")
def cache_rows(tmp_path_factory: pytest.TempPathFactory) -> pa.Table:
    from graphkit.sources.full_schema import read_message_rows

    # As HypAware writes them: no touched_files column (graphkit computes it from tool_args).
    return read_message_rows([CACHE], include_content=True).table.drop_columns(["touched_files"])


def _counts(graph: Graph) -> dict[str, Any]:
    threads = graph.nodes["Thread"].table
    return {"nodes": graph.node_counts(),
            "tokens": sum(v or 0 for v in threads.column("output_tokens").to_pylist()),
            "first": min(threads.column("first_seen").to_pylist())}


def _write(table: pa.Table, folder: Path) -> Path:
    folder.mkdir()
    pq.write_table(table, folder / "rows.parquet")
    return folder


def _recast(table: pa.Table, pick: Any, to: Any) -> pa.Table:
    for i, f in enumerate(table.schema):
        if pick(f):
            table = table.set_column(i, f.name, to(table.column(i)))
    return table


def test_view_columns_build_as_their_plain_types(cache_rows: pa.Table, tmp_path: Path) -> None:
    # Polars and DuckDB write string_view; Arrow's take has no kernel for it (a traceback).
    want = _counts(_graph(_write(cache_rows, tmp_path / "plain")))
    views = _recast(cache_rows, lambda f: f.type == pa.string(),
                    lambda c: c.cast(pa.string_view()))
    assert _counts(_graph(_write(views, tmp_path / "views"))) == want
    assert want["nodes"]["Session"] == 4 and want["tokens"] > 0


def test_text_stored_as_binary_builds_as_text(cache_rows: pa.Table, tmp_path: Path) -> None:
    # Parquet text some writers store without the UTF-8 annotation: ids and JSON columns.
    want = _counts(_graph(_write(cache_rows, tmp_path / "plain")))
    binary = _recast(cache_rows, lambda f: f.name in ("session_id", "agent_id", "attributes",
                                                     "tool_args"),
                     lambda c: c.cast(pa.binary()))
    assert _counts(_graph(_write(binary, tmp_path / "binary"))) == want


@pytest.mark.parametrize("shape", ["space-naive", "space-short-offset", "nanoseconds",
                                   "mixed"])
def test_times_as_text_of_other_writers(cache_rows: pa.Table, tmp_path: Path,
                                        shape: str) -> None:
    """DuckDB writes ``2026-11-20 09:00:00+00``, Spark a naive ``2026-11-20 09:00:00``
    (UTC, as naive times are), Go nine fraction digits: all refused before ("expected a
    zone offset", "Failed to parse string")."""
    want = _counts(_graph(_write(cache_rows, tmp_path / "plain")))
    times = [t.strftime("%Y-%m-%d %H:%M:%S") for t in
             cache_rows.column("message_created_at").to_pylist()]
    text = {"space-naive": times,
            "space-short-offset": [t + "+00" for t in times],
            "nanoseconds": [t.replace(" ", "T") + ".000000000Z" for t in times],
            "mixed": [t if i % 2 else t.replace(" ", "T") + "+00:00"
                      for i, t in enumerate(times)]}[shape]
    table = cache_rows.set_column(cache_rows.schema.get_field_index("message_created_at"),
                                  "message_created_at", pa.array(text))
    assert _counts(_graph(_write(table, tmp_path / shape))) == want


def test_text_times_keep_their_offsets_and_refuse_what_is_no_time(tmp_path: Path) -> None:
    from graphkit.core.times import text_times

    got = text_times(pa.array(["2026-11-20T09:00:00+0200", "2026-11-20 09:00:00.5",
                               "2026-11-20T09:00:00.123456789Z", None]))
    assert [t.isoformat() if t else None for t in got.to_pylist()] == [
        "2026-11-20T07:00:00+00:00", "2026-11-20T09:00:00.500000+00:00",
        "2026-11-20T09:00:00.123456+00:00", None]
    with pytest.raises(pa.ArrowInvalid):
        text_times(pa.array(["2026-11-20 09:00:00", "yesterday"]))
    assert pc.all(pc.is_valid(text_times(pa.array(["2026-11-20"])))).as_py()


def _jsonl(rows: list[dict[str, Any]], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    return path


def test_json_rows_whose_nested_values_change_type_build(cache_rows: pa.Table,
                                                          tmp_path: Path) -> None:
    """JSON Lines rows with ``attributes`` written as objects (DuckDB's JSON type, a
    ``to_json`` of the table), where Claude's ``toolUseResult`` is text in one row and an
    object in another: Arrow's reader refused the whole file ("changed from string to
    object"). Such a file's nested values are now read as their JSON text."""
    want = _counts(_graph(_write(cache_rows, tmp_path / "plain")))
    rows = cache_rows.to_pylist()
    flipped = 0
    for r in rows:
        r["attributes"] = json.loads(r["attributes"]) if r["attributes"] else None
        claude = (r["attributes"] or {}).get("claude") or {}
        if "tool_use_result" in claude and flipped == 0:
            claude["tool_use_result"] = "Error: the tool was interrupted"
            flipped += 1
    assert flipped == 1
    source = tmp_path / "rows"
    _jsonl(rows[:20], source / "date=2026-11-20" / "a.jsonl")
    _jsonl(rows[20:], source / "date=2026-11-21" / "b.jsonl")
    assert _counts(_graph(source)) == want
    from graphkit.sources.full_schema import read_message_rows

    assert read_message_rows([source / "date=2026-11-20" / "a.jsonl"]).table.num_rows == 20


def test_claude_synthetic_model_is_no_model() -> None:
    """Claude Code writes ``"model": "<synthetic>"`` on messages it made itself (an API
    error, "No response requested."): graphkit made a Model node of it, used by the
    session, and a thread whose first answer was such an error took it as its model."""
    graph = _graph(SHAPED / "claude-synthetic-model")
    assert _rows(graph, "Model", ["model"]) == [("claude-sonnet-4-5-20250929",)]
    assert _rows(graph, "Thread", ["model", "messages", "input_tokens", "output_tokens"]) == [
        ("claude-sonnet-4-5-20250929", 6, 12, 40)]
    assert graph.edges["USED_MODEL"].table.num_rows == 1


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


def test_nested_type_changes_keep_the_hive_columns_arrow_makes(tmp_path: Path) -> None:
    """A JSON Lines folder read line by line (its nested values change type) took its
    hive folder columns as raw text: ``team=a%2Fb`` stayed ``a%2Fb``, ``year=2026`` was
    text and ``__HIVE_DEFAULT_PARTITION__`` a value, where Arrow's read of a folder with
    no type change gives ``a/b``, an int32 and a null."""
    from graphkit.sources.row_files import read_row_files

    def pieces(root: Path, nested: list[Any]) -> list[tuple[Any, ...]]:
        folders = ["team=a%2Fb c/year=2026", "team=ops/year=__HIVE_DEFAULT_PARTITION__"]
        for folder, value in zip(folders, nested, strict=True):
            _jsonl([{"session_id": "s", "attributes": {"x": value}}], root / folder / "p.jsonl")
        out = []
        for _, table in read_row_files(root, {"session_id", "team", "year"}):
            out.append((table.schema.field("team").type, table.schema.field("year").type,
                        table.column("team").to_pylist(), table.column("year").to_pylist()))
        return sorted(out, key=repr)

    plain = pieces(tmp_path / "plain", [{"a": 1}, {"a": 2}])
    changing = pieces(tmp_path / "changing", [{"a": 1}, "text"])
    assert plain == [(pa.string(), pa.int32(), ["a/b c"], [2026]),
                     (pa.string(), pa.int32(), ["ops"], [None])]
    assert changing == plain


def test_json_files_whose_nested_values_differ_between_files_build(cache_rows: pa.Table,
                                                                   tmp_path: Path) -> None:
    """Each JSON Lines file consistent, but one holds Claude's ``toolUseResult`` as text and
    the next as an object: "files disagree on column types" refused the whole folder.
    Read as the nested-types-per-line case is; Parquet files that disagree are read one
    by one."""
    from graphkit.core.errors import SourceError

    want = _counts(_graph(_write(cache_rows, tmp_path / "plain")))
    rows = cache_rows.to_pylist()
    for r in rows:
        r["attributes"] = json.loads(r["attributes"]) if r["attributes"] else None
    first = next(i for i, r in enumerate(rows)
                 if "tool_use_result" in ((r["attributes"] or {}).get("claude") or {}))
    rows[first]["attributes"]["claude"]["tool_use_result"] = "Error: interrupted"
    source = tmp_path / "rows"
    _jsonl([rows[first]], source / "a.jsonl")
    _jsonl(rows[:first] + rows[first + 1:], source / "b.jsonl")
    assert _counts(_graph(source)) == want

    parquet = tmp_path / "parquet"
    parquet.mkdir()
    pq.write_table(pa.table({"session_id": ["s"], "attributes": [{"x": 1}]}), parquet / "a.parquet")
    pq.write_table(pa.table({"session_id": ["s"], "attributes": ["x"]}), parquet / "b.parquet")
    # Parquet files that disagree were refused as a folder ("files disagree on column
    # types"); since round ten (tests/test_hostile_tenth.py) each is read alone and
    # made the contract's types, so what is wrong is said of the file that holds it.
    with pytest.raises(SourceError, match=r"a\.parquet: required column 'message_id'"):
        _graph(parquet)
