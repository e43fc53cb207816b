"""Row files as other writers store them: physical types (views, binary text, epoch
integers, maps, structs), times in other units and zones, JSON Lines whose nested
values change type, and a folder whose files disagree; each builds the graph its plain
form builds, or is refused naming the file, line or row and the column.

Row-file cases rewrite the HypAware cache fixture's rows (``tests/fixtures/hypaware-cache``)
or the bundled sample rows in ``tmp_path``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from graphkit.core.errors import SourceError
from graphkit.core.graph import GraphTables as Graph
from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.paths import CACHE, SAMPLE_ROWS
from tests.helpers.rows import (
    json_lines,
)
from tests.helpers.transcripts import graph_of as _graph
from tests.helpers.transcripts import node_rows as _rows


def test_rows_of_json_lines_whose_attributes_are_objects_writes_their_json_text(
        tmp_path: Path) -> None:
    # Found by a driver of the command line: `graphkit rows` refused a JSON Lines file whose
    # `attributes` is an object ("cannot be read as string: Unsupported cast from
    # struct<…> to utf8"), a file `graphkit build` reads (JSON Lines infer objects as
    # structs). Now the object's JSON text is written, as the build reads it.
    src = tmp_path / "obj.jsonl"
    src.write_text(json_lines([{"session_id": "s", "message_id": "m",
                                 "attributes": {"b": [1, 2], "a": {"c": "x"}}}]))
    out = tmp_path / "o.parquet"
    proc = graphkit("rows", src, "--out", out)
    assert proc.returncode == 0, proc.stderr
    (text,) = pq.read_table(out).column("attributes").to_pylist()
    assert json.loads(text) == {"a": {"c": "x"}, "b": [1, 2]}


def test_touched_files_written_as_a_json_array_builds_as_its_text_does(
        tmp_path: Path) -> None:
    # Was: exit 2 "column 'touched_files' has type list<item: struct<…>>, but the
    # contract expects json" for a JSON Lines file writing the array as an array, where
    # the same array as JSON text builds. A JSON column now takes a list as its text.
    rows: list[dict[str, Any]] = []
    for i, touched in enumerate([[{"path": "/p", "reads": 1}, {"path": "/q", "writes": 2}],
                                 [{"path": "/p", "reads": 3}], None, []]):
        rows.append({"session_id": "s", "message_id": f"m{i}", "touched_files": touched,
                     "message_created_at": f"2026-11-20T10:00:0{i}Z"})
    as_array = tmp_path / "array.jsonl"
    as_array.write_text(json_lines(rows))
    as_text = tmp_path / "text.jsonl"
    as_text.write_text(json_lines([
        {**r, "touched_files": None if r["touched_files"] is None
         else json.dumps(r["touched_files"])} for r in rows]))
    answers = []
    for src in (as_array, as_text):
        snap = tmp_path / f"snap-{src.stem}"
        proc = graphkit("build", src, "--snapshot", snap)
        assert proc.returncode == 0, proc.stderr
        files = graphkit("files", "--snapshot", snap)
        assert files.returncode == 0, files.stderr
        answers.append(files.stdout)
    assert answers[0] == answers[1]
    assert "/p\t4\t0" in answers[0] and "/q\t0\t2" in answers[0], answers[0]


SAMPLE = SAMPLE_ROWS / "date=2026-11-20" \
    / "part-0.parquet"


def _with(table: pa.Table, column: str, values: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(column),
                            pa.field(column, values.type), values)


def _folder(root: Path, *tables: pa.Table) -> Path:
    root.mkdir(parents=True)
    for i, t in enumerate(tables):
        pq.write_table(t, root / f"part-{i}.parquet")
    return root


def _tables(snap: Path) -> dict[str, pa.Table]:
    return {f"{p.parent.name}/{p.name}": pq.read_table(p)
            for p in sorted(snap.glob("*/*.parquet"))}


@pytest.mark.slow
def test_a_folder_whose_files_write_times_in_other_units_and_zones_builds(
        tmp_path: Path) -> None:
    # Was: exit 2 "files disagree on column types: … Cannot merge timestamps with
    # differing timezones; give the files separately", naming the folder, while each file
    # built alone (a writer's new version, or another tool, writing ns in Asia/Tokyo or
    # naive seconds). Now each file is made the contract's types on its own: the same
    # graph as the files written alike.
    rows = pq.read_table(SAMPLE)
    half = rows.num_rows // 2
    first, second = rows.slice(0, half), rows.slice(half)
    drifted = _with(second, "message_created_at",
                    second["message_created_at"].cast(pa.timestamp("ns", "Asia/Tokyo")))
    drifted = _with(drifted, "conversation_started_at",
                    drifted["conversation_started_at"].cast(pa.timestamp("s")))
    alike = _folder(tmp_path / "alike", first, second)
    mixed = _folder(tmp_path / "mixed", first, drifted)
    for src in (alike, mixed):
        proc = graphkit("build", src, "--snapshot", tmp_path / f"{src.name}.snap")
        assert proc.returncode == 0, proc.stderr
    want, got = _tables(tmp_path / "alike.snap"), _tables(tmp_path / "mixed.snap")
    assert want.keys() == got.keys() and all(want[k].equals(got[k]) for k in want)
    assert graphkit("check", mixed).returncode == 0


@pytest.mark.parametrize("command", ["build", "check"])
def test_a_folder_file_of_another_kind_is_named_with_its_contract_line(
        tmp_path: Path, command: str) -> None:
    # Was: "SRC: files disagree on column types: Unable to merge: Field cwd has
    # incompatible types: dictionary<…> vs list<element: string>; give the files
    # separately to see which one differs" — the folder, not the file.
    rows = pq.read_table(SAMPLE)
    bad = _with(rows.slice(30), "cwd", pa.array([[v] for v in rows.slice(30)["cwd"]
                                                 .to_pylist()]))
    src = _folder(tmp_path / "src", rows.slice(0, 30), bad)
    args = ["--snapshot", tmp_path / "snap"] if command == "build" else []
    line = one_line_error(graphkit(command, src, *args), f"{src / 'part-1.parquet'}:",
                          "column 'cwd' has type list<element: string>",
                          "ai-gateway-graph.yaml:")
    assert "disagree" not in line


# --- 3. JSON Lines: Arrow's refusals of a column, named by line --------------------------

def _json_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _sample_lines() -> list[dict[str, object]]:
    return [{k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in r.items()}
            for r in pq.read_table(SAMPLE).to_pylist()]


@pytest.mark.parametrize("command", ["build", "rows", "check"])
def test_a_json_lines_column_that_changes_type_is_named_by_its_line(
        tmp_path: Path, command: str) -> None:
    # Was: "cannot read rows: JSON parse error: Column(/message_index) changed from number
    # to string in row 20; check that the file is complete and in a supported format":
    # Arrow's row counts from 0 and skips blank lines (here line 61), and the hint was
    # wrong. Now the line, the column, both kinds and what to write.
    rows = _sample_lines()
    rows[20]["message_index"] = "7"
    path = _json_lines(tmp_path / "src" / "r.jsonl", [json.dumps(r) for r in rows])
    path.write_text(path.read_text().replace("\n", "\n\n\n"))  # blank lines between rows
    out = {"build": ["--snapshot", tmp_path / "snap"],
           "rows": ["--out", tmp_path / "r.parquet"], "check": []}[command]
    line = one_line_error(graphkit(command, path.parent, *out), f"{path}:61:",
                          "column 'message_index' holds text on this line, a number on "
                          "line 1", "as one JSON type")
    assert "supported format" not in line


@pytest.mark.parametrize("nested", [False, True])
def test_a_key_twice_in_one_json_lines_object_is_named_by_its_line(
        tmp_path: Path, nested: bool) -> None:
    # Was: "SRC: cannot read rows: Error creating dataset. Could not read schema from
    # '…/r.jsonl'. Is this a 'json' file?: … Column(/session_id) was specified twice in
    # row 2; check that the file is complete …": the folder, no line, the wrong fix.
    rows = _sample_lines()
    rows[2] = {**rows[2], "attributes": None}  # the sample's own may be an object already
    lines = [json.dumps(r) for r in rows]
    if nested:
        assert '"attributes": null' in lines[2]
        lines[2] = lines[2].replace('"attributes": null', '"attributes": {"a": 1, "a": 2}')
    else:
        lines[2] = lines[2][:-1] + ', "session_id": "other"}'
    path = _json_lines(tmp_path / "src" / "r.jsonl", lines)
    key = "'a'" if nested else "'session_id'"
    one_line_error(graphkit("build", path.parent, "--snapshot", tmp_path / "snap"),
                   f"{path}:3:", f"key {key} is written twice in one object on this line")


@pytest.mark.slow
def test_nested_values_changing_type_in_a_folders_second_file_build(tmp_path: Path) -> None:
    # Was: exit 2 "…/b.jsonl: cannot read rows: … Column(/attributes/claude/tool_use_result)
    # changed from string to object in row 1": such a file is now read line by line,
    # but not when the change sits in the first block of a folder's later file (met
    # while the folder's schemas were unified).
    rows = _sample_lines()
    later = [dict(r) for r in rows[30:]]
    later[0]["attributes"] = {"claude": {"tool_use_result": "text"}}
    later[1]["attributes"] = {"claude": {"tool_use_result": {"a": 1}}}
    src = tmp_path / "src"
    _json_lines(src / "a.jsonl", [json.dumps(r) for r in rows[:30]])
    _json_lines(src / "b.jsonl", [json.dumps(r) for r in later])
    proc = graphkit("build", src, "--snapshot", tmp_path / "snap", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows_read"] == len(rows)


@pytest.mark.parametrize("command", ["build", "rows", "check"])
def test_a_time_that_is_no_time_is_named_by_its_row(tmp_path: Path, command: str) -> None:
    # Was: "FILE: column 'message_created_at' cannot be read as timestamp: Failed to
    # parse string: '2026-W47-5' …": the file and the value, no row.
    rows = _sample_lines()
    rows[40]["message_created_at"] = "2026-W47-5"
    path = _json_lines(tmp_path / "src" / "r.jsonl", [json.dumps(r) for r in rows])
    out = {"build": ["--snapshot", tmp_path / "snap"],
           "rows": ["--out", tmp_path / "r.parquet"], "check": []}[command]
    one_line_error(graphkit(command, path.parent, *out), f"{path} row 41:",
                   "column 'message_created_at' cannot be read as timestamp", "2026-W47-5")


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
    # types"); since, each is read alone and
    # made the contract's types, so what is wrong is said of the file that holds it.
    with pytest.raises(SourceError, match=r"a\.parquet: required column 'message_id'"):
        _graph(parquet)


def _totals(graph: Graph) -> dict[str, Any]:
    threads = graph.nodes["Thread"].table
    return {"nodes": graph.node_counts(),
            "edges": {k: v.table.num_rows for k, v in sorted(graph.edges.items())},
            "tokens": sum(v or 0 for v in threads.column("output_tokens").to_pylist()),
            "input": sum(v or 0 for v in threads.column("input_tokens").to_pylist()),
            "first": min(threads.column("first_seen").to_pylist()),
            "last": max(threads.column("last_seen").to_pylist())}


def _set(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, values)


# -- A1: "<synthetic>" in a row file's model ------------------------------------------------
def test_row_files_synthetic_model_is_no_model(cache_rows: pa.Table, tmp_path: Path) -> None:
    """HypAware's rows of a Claude session keep the ``"<synthetic>"`` Claude Code writes on
    the messages it made itself (an API error, "No response requested."); transcripts
    read it as no model first, row files made a Model node of it."""
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
    want = _totals(_graph(_write(cache_rows, tmp_path / "plain")))
    maps = pa.array([_as_map(t) for t in cache_rows.column("attributes").to_pylist()],
                    pa.map_(pa.string(), pa.string()))
    table = _set(cache_rows, "attributes", maps)
    got = _totals(_graph(_write(table, tmp_path / "map")))
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
@pytest.mark.slow
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
    want = _totals(_graph(_write(cache_rows, tmp_path / "plain")))
    ints = pa.array([m * scale // 10**6 for m in micros], pa.int64())
    assert _totals(_graph(_write(_set(cache_rows, "message_created_at", ints),
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


@pytest.mark.slow
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
