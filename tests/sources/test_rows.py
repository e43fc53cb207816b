"""Row sources through pyarrow: Parquet, hive folders, Feather, JSON Lines; and row files
a build cannot use as they are (empty, unreadable, a FIFO, a time out of range, a BOM, a
lone surrogate, graphkit's own outputs given as rows): each is read as zero rows, kept
with a note, or refused in one line naming the file, line or row and the column."""

from __future__ import annotations

import decimal
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

from graphkit.builds.run import build
from graphkit.contract.loader import load_contract
from graphkit.core.errors import SourceError
from graphkit.projection.conform import conform_sources, conform_table, read_spec
from graphkit.sources.read import read_sources
from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.paths import SAMPLE_ROWS
from tests.helpers.rows import (
    identity_cases,
    json_lines,
    rows_with_a_lone_surrogate,
    table,
    write_parquet,
)
from tests.helpers.transcripts import (
    write_jsonl,
)


def test_parquet_file_feather_and_jsonl_give_the_same_graph(tmp_path: Path) -> None:
    rows = identity_cases()[:-1]
    write_parquet(rows, tmp_path / "a.parquet")
    feather.write_feather(table(rows), tmp_path / "a.feather")
    with (tmp_path / "a.jsonl").open("w") as f:
        for r in rows:
            f.write(json.dumps(r, default=str) + "\n")
    graphs = [build([tmp_path / name]).graph for name in ("a.parquet", "a.feather", "a.jsonl")]
    for g in graphs[1:]:
        for t in graphs[0].nodes:
            assert g.nodes[t].table.select(["id"]).equals(graphs[0].nodes[t].table.select(["id"]))
        for t in graphs[0].edges:
            assert g.edges[t].table.select(["source", "target"]).equals(
                graphs[0].edges[t].table.select(["source", "target"]))


def test_jsonl_with_nested_attributes_objects(tmp_path: Path) -> None:
    rows = identity_cases()[:-1]
    with (tmp_path / "rows.jsonl").open("w") as f:
        for r in rows:
            r = dict(r)
            if r.get("attributes"):
                r["attributes"] = json.loads(r["attributes"])  # an object, not text
            f.write(json.dumps(r, default=str) + "\n")
    g = build([tmp_path / "rows.jsonl"]).graph
    assert g.edge_counts()["PARENT_THREAD"] == 3


def test_hive_partitioned_folder_and_many_sources(tmp_path: Path, sample_rows: Path) -> None:
    rows = identity_cases()[:-1]
    write_parquet(rows[:3], tmp_path / "extra" / "date=2026-11-20" / "p.parquet")
    write_parquet(rows[3:], tmp_path / "more.parquet")
    result = build([sample_rows, tmp_path / "extra", tmp_path / "more.parquet"])
    assert result.projection.rows_read == pq.ParquetDataset(sample_rows).read().num_rows + len(rows)


def test_reads_only_the_columns_the_contract_needs(tmp_path: Path) -> None:
    path = write_parquet(identity_cases()[:2], tmp_path / "r.parquet")
    c = load_contract()
    read = read_sources([path], read_spec(c), fingerprints=False)
    # The sources layer reads no content column at all ...
    assert all("content_text" not in t.column_names for _, t in read.pieces)
    got = conform_sources(c, read)
    # ... and the contract layer makes it typed nulls.
    assert got.column("content_text").null_count == got.num_rows
    assert "raw_frame" not in got.column_names
    assert set(got.column_names) <= set(load_contract().spec.input) | {"__file", "__row"}


def test_missing_required_column_names_file_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    pq.write_table(table(identity_cases()).drop_columns(["session_id"]), path)
    with pytest.raises(SourceError) as info:
        build([path])
    msg = str(info.value)
    assert str(path) in msg and "'session_id'" in msg and "ai-gateway-graph.yaml:" in msg


def test_wrong_type_names_file_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    t = table(identity_cases())
    t = t.set_column(t.schema.get_field_index("message_id"), "message_id",
                     pa.array(range(t.num_rows), pa.int64()))
    pq.write_table(t, path)
    with pytest.raises(SourceError) as info:
        build([path])
    assert "'message_id' has type int64" in str(info.value)
    assert str(path) in str(info.value)


def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(SourceError, match="cannot read rows") as info:
        build([path])
    assert str(path) in str(info.value)


def test_missing_path_and_unknown_suffix(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such file"):
        build([tmp_path / "nope.parquet"])
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(SourceError, match="unsupported file type"):
        build([tmp_path / "x.csv"])


def test_folder_of_files_with_different_columns(tmp_path: Path) -> None:
    # The first file (sorted) lacks agent_id and attributes: the others' subagent
    # threads must not vanish with them.
    t = table(identity_cases()[:-1])
    folder = tmp_path / "mixed"
    folder.mkdir()
    pq.write_table(t.slice(4, 2).drop_columns(["agent_id", "attributes"]), folder / "a.parquet")
    pq.write_table(t.slice(0, 4), folder / "b.parquet")
    g = build([folder]).graph
    assert g.node_counts()["Thread"] == 5
    assert g.node_counts()["Agent"] == 2
    assert g.edge_counts()["PARENT_THREAD"] == 3


def test_bad_json_line_is_named_by_file_and_line(tmp_path: Path) -> None:
    good = json.dumps({"session_id": "s", "message_id": "m"})
    (tmp_path / "one.jsonl").write_text(good + "\n" + "{broken\n")
    with pytest.raises(SourceError) as info:
        build([tmp_path / "one.jsonl"])
    assert (info.value.path, info.value.line) == (str(tmp_path / "one.jsonl"), 2)
    folder = tmp_path / "many"
    folder.mkdir()
    (folder / "a.jsonl").write_text(good + "\n")
    (folder / "b.jsonl").write_text(good + "\n\n" + "[1, 2]\n")
    with pytest.raises(SourceError) as info:
        build([folder])
    assert (info.value.path, info.value.line) == (str(folder / "b.jsonl"), 3)


@pytest.mark.slow
def test_id_columns_stored_without_a_dictionary_give_the_same_graph(tmp_path: Path) -> None:
    # A writer leaves ids (one per row) without a Parquet dictionary; those are read as
    # plain text, the others dictionary-encoded. Files stored either way, alone or
    # together, build the graph that the same rows give from memory.
    from graphkit.sources.row_files import stored_with_dictionary

    rows = table(identity_cases())
    ids = ["message_id", "part_id", "tool_call_id"]
    plain_ids = tmp_path / "plain" / "a.parquet"
    plain_ids.parent.mkdir()
    pq.write_table(rows, plain_ids, row_group_size=3,
                   use_dictionary=[c for c in rows.column_names if c not in ids])
    coded = tmp_path / "coded" / "a.parquet"
    coded.parent.mkdir()
    pq.write_table(rows, coded, row_group_size=3)
    assert set(stored_with_dictionary(plain_ids, ["session_id", *ids])) == {"session_id"}
    assert stored_with_dictionary(coded, ["session_id", *ids]) == ["session_id", *ids]
    want = build(rows).graph
    for source in (plain_ids, coded, [plain_ids, coded]):
        got = build(source).graph
        for name, nodes in want.nodes.items():
            assert got.nodes[name].table.equals(nodes.table), (source, name)
        for name, edges in want.edges.items():
            assert got.edges[name].table.equals(edges.table), (source, name)


def test_pieces_conformed_on_threads_equal_one_after_another(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # conform_sources conforms the pieces two at a time: the joined table is what
    # conforming them in turn gives, and of two bad pieces the first one's error is raised.
    import threading

    import graphkit.projection.conform as validate
    from graphkit.sources.read import SourceRows

    rows = identity_cases()[:-1]
    pieces = []
    for p in range(4):
        path = write_parquet([dict(r, session_id=f"{r['session_id']}-{p}") for r in rows],
                             tmp_path / f"p{p}.parquet")
        pieces.extend(read_sources([path], read_spec(load_contract()),
                                   fingerprints=False).pieces)
    c = load_contract()
    one_by_one = [conform_table(c, t, label) for label, t in pieces]
    threads: set[int] = set()
    conformed = validate.conform

    def conform(*args: object) -> pa.Table:
        threads.add(threading.get_ident())
        return conformed(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(validate, "conform", conform)
    got = conform_sources(c, SourceRows(pieces=list(pieces)))
    assert got.equals(validate.combine_dictionaries(pa.concat_tables(one_by_one)))
    assert threading.get_ident() not in threads
    bad = [pieces[0], (pieces[1][0], pieces[1][1].drop_columns(["session_id"])),
           (pieces[2][0], pieces[2][1].drop_columns(["session_id"])), pieces[3]]
    with pytest.raises(SourceError) as info:
        conform_sources(c, SourceRows(pieces=bad))
    assert pieces[1][0] in str(info.value) and pieces[2][0] not in str(info.value)


def _with_times(tmp_path: Path, micros: list[int]) -> Path:
    rows = identity_cases()
    t = table(rows)
    times = pa.array(micros + [0] * (len(rows) - len(micros)), pa.int64()).cast(
        pa.timestamp("us", tz="UTC"))
    t = t.set_column(t.schema.get_field_index("message_created_at"), "message_created_at",
                     times)
    path = tmp_path / "rows.parquet"
    pq.write_table(t, path)
    return path


YEAR_0 = -62_167_219_200_000_000       # 0000-01-01: Arrow holds it, Python's datetime not
YEAR_10000 = 253_402_300_800_000_000   # 10000-01-01


@pytest.mark.parametrize("micros", [YEAR_0, YEAR_10000])
def test_a_time_outside_years_1_to_9999_is_refused_naming_its_row(tmp_path: Path,
                                                                  micros: int) -> None:
    # Was: accepted into the snapshot, then rejects, sessions, tree, usage, view and
    # export all crashed with OverflowError reading it back.
    src = _with_times(tmp_path, [0, 0, micros])
    proc = graphkit("build", src, "--snapshot", tmp_path / "snap")
    one_line_error(proc, str(src), "row 3", "message_created_at", "out of range")
    assert not (tmp_path / "snap").exists()


def test_year_0_in_json_lines_is_refused_too(tmp_path: Path) -> None:
    rows = [dict(r) for r in identity_cases()]
    rows[0]["message_created_at"] = "0000-01-01T00:00:00Z"
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    one_line_error(graphkit("build", src, "--snapshot", tmp_path / "snap"), str(src), "row 1")


def test_the_last_microsecond_of_year_9999_builds_and_reads_back(tmp_path: Path) -> None:
    src = _with_times(tmp_path, [253_402_300_799_999_999] * len(identity_cases()))
    assert graphkit("build", src, "--snapshot", tmp_path / "snap").returncode == 0
    proc = graphkit("sessions", "--snapshot", tmp_path / "snap", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "9999-12-31T23:59:59.999999" in proc.stdout


def test_an_empty_json_lines_file_beside_rows_is_read_as_none(tmp_path: Path) -> None:
    # Was: exit 2 for the whole folder, "ge: cannot read rows: Error creating dataset.
    # Could not read schema from '…/empty.jsonl'… Empty JSON stream": one empty (or
    # blank-lines-only) file stopped the rows of every other file.
    folder = tmp_path / "rows"
    folder.mkdir()
    rows = identity_cases()
    (folder / "a.jsonl").write_text(json_lines(rows))
    (folder / "b-empty.jsonl").write_text("")
    (folder / "c-blank.jsonl").write_text("  \n\t\r\n\n")
    for cmd in (["build", folder, "--snapshot", tmp_path / "snap", "--json"],
                ["rows", folder, "--out", tmp_path / "rows.parquet"]):
        proc = graphkit(*cmd)
        assert proc.returncode == 0, proc.stderr
    assert json.loads(graphkit("build", folder, "--snapshot", tmp_path / "snap",
                               "--json").stdout)["rows_read"] == len(rows)
    assert pq.read_table(tmp_path / "rows.parquet").num_rows == len(rows)


@pytest.mark.parametrize("command", ["build", "rows", "check"])
def test_a_source_of_only_empty_files_says_so(tmp_path: Path, command: str) -> None:
    # Was: Arrow's "Empty JSON stream" with nothing to do for a file; "no sources given;
    # name at least one file or folder" once empty files were read as none. graphkit now
    # reads such a source as zero rows, as a zero-row Parquet file is; a note says so.
    (tmp_path / "empty.jsonl").write_text("\n \n")
    extra = {"build": ["--snapshot", tmp_path / "snap"],
             "rows": ["--out", tmp_path / "o.parquet"], "check": []}[command]
    proc = graphkit(command, tmp_path / "empty.jsonl", *extra)
    assert proc.returncode == 0, proc.stderr
    said = {"build": (f"{tmp_path / 'empty.jsonl'}: no rows read", proc.stderr),
            "rows": ("wrote 0 rows", proc.stderr), "check": ("ok: 0 rows", proc.stdout)}
    assert said[command][0] in said[command][1], proc


def test_a_bad_parquet_file_in_a_folder_is_named_and_a_bom_on_a_later_line_too(
        tmp_path: Path) -> None:
    # Was: a 0-byte Parquet file in a folder was reported as the folder (the file only
    # inside Arrow's words); a BOM starting line 2 (files joined with `cat`) was "JSON
    # parse error: Invalid value. in row 1" naming no line.
    folder = tmp_path / "rows"
    folder.mkdir()
    pq.write_table(table(identity_cases()), folder / "a.parquet")
    (folder / "b.parquet").write_bytes(b"")
    proc = graphkit("build", folder, "--snapshot", tmp_path / "snap")
    one_line_error(proc, f"{folder / 'b.parquet'}: cannot read rows", "supported format")
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"".join(b"\xef\xbb\xbf" + line.encode() + b"\n" for line in
                             json_lines(identity_cases()).splitlines()))
    proc = graphkit("build", bom, "--snapshot", tmp_path / "snap")
    one_line_error(proc, f"{bom}:2: a byte-order mark (BOM) starts this line")


@pytest.mark.slow
@pytest.mark.parametrize("text", ["", "\n \n\t\r\n"])
def test_a_json_lines_source_of_no_rows_builds_an_empty_graph_as_parquet_does(
        tmp_path: Path, text: str) -> None:
    # Was: exit 2 "no rows: the file is empty…" while a zero-row Parquet file built an
    # empty graph. Both are now zero rows read, said in the summary and a note.
    empty = tmp_path / "empty.jsonl"
    empty.write_text(text)
    zero = tmp_path / "zero.parquet"
    pq.write_table(table(identity_cases()).slice(0, 0), zero)
    for src in (empty, zero):
        proc = graphkit("build", src, "--snapshot", tmp_path / "snap", "--json")
        assert proc.returncode == 0, proc.stderr
        summary = json.loads(proc.stdout)
        assert summary["rows_read"] == 0 and set(summary["nodes"].values()) == {0}
        assert f"{src}: no rows read" in proc.stderr, proc.stderr
        plain = graphkit("build", src, "--snapshot", tmp_path / f"plain-{src.suffix[1:]}")
        assert "rows read 0" in plain.stdout and "no rows read" in plain.stderr
        check = graphkit("check", src)
        assert check.returncode == 0 and "0 rows" in check.stdout, check.stderr
        rows = graphkit("rows", src, "--out", tmp_path / "o.parquet")
        assert rows.returncode == 0 and "wrote 0 rows" in rows.stderr, rows.stderr
        assert pq.read_table(tmp_path / "o.parquet").num_rows == 0
    sessions = graphkit("sessions", "--snapshot", tmp_path / "snap", "--json")
    assert sessions.returncode == 0 and sessions.stdout == ""


@pytest.mark.slow
def test_an_escaped_lone_surrogate_in_json_lines_names_its_line(tmp_path: Path) -> None:
    # Was: "cannot read rows: Error creating dataset… The surrogate pair in string is
    # invalid. in row 0", naming no line, with the hint to check the file's format
    # (Python's json takes "\ud800", so the line finder passed it). The line was then
    # named and the build stopped; now the row is kept with U+FFFD and the line named in
    # a note (test_an_escaped_lone_surrogate_in_json_lines_keeps_its_row_with_u_fffd_and_says_so),
    # as transcripts keep such a line.
    folder = tmp_path / "rows"
    bad = rows_with_a_lone_surrogate(folder)
    for src in (bad, folder):
        proc = graphkit("build", src, "--snapshot", tmp_path / "snap")
        assert proc.returncode == 0 and f"{bad}:4 (column 'session_id')" in proc.stderr
    # A surrogate pair, escaped, is one character and builds.
    bad.write_text(bad.read_text().replace("\\udfff", "\\ud83d\\ude00"))
    assert graphkit("build", bad, "--snapshot", tmp_path / "snap").returncode == 0


@pytest.mark.slow
def test_an_escaped_lone_surrogate_in_json_lines_keeps_its_row_with_u_fffd_and_says_so(
        tmp_path: Path) -> None:
    # Was: exit 2 "FILE:4: an escaped lone surrogate … is no Unicode text" for the whole
    # build (Arrow refuses the file), where a transcript line holding one is kept with
    # U+FFFD. Now the row is kept the same way, counted and named (file:line, column).
    folder = tmp_path / "rows"
    bad = rows_with_a_lone_surrogate(folder)
    # A file Arrow refuses for a type changing between lines too, with one in a key.
    (folder / "c.jsonl").write_text(json_lines([
        {"session_id": "s-\ud800", "message_id": "m1", "attributes": {"k\udc00": 1}},
        {"session_id": "s-2", "message_id": "m2", "attributes": {"k": "text"}}]))
    note = f"{bad}:4 (column 'session_id')"
    for src, n_rows in ((bad, 8), (folder, 18)):
        snap = tmp_path / f"snap-{src.name}"
        proc = graphkit("build", src, "--snapshot", snap, "--json")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["rows_read"] == n_rows
        assert "escaped lone surrogate" in proc.stderr and note in proc.stderr, proc.stderr
        sessions = graphkit("sessions", "--snapshot", snap, "--json")
        ids = {json.loads(line)["session_id"] for line in sessions.stdout.splitlines()}
        # In the folder, a.jsonl's copy of that message comes first (dedupe by key).
        kept = "s-\ufffd" if src == folder else "\ufffdc1a0de00-0000-4000-8000-000000000001"
        assert kept in ids, ids
    check = graphkit("check", bad)
    assert "lone-surrogate: 1 text value(s)" in check.stdout, check.stdout
    assert "line=4, column=session_id" in check.stdout, check.stdout
    out = tmp_path / "rows.parquet"
    rows_proc = graphkit("rows", folder, "--out", out)
    assert rows_proc.returncode == 0 and note in rows_proc.stderr, rows_proc.stderr
    assert pq.read_table(out).num_rows == 18


@pytest.mark.slow
def test_a_table_of_no_columns_and_no_rows_is_zero_rows_as_an_empty_json_lines_file(
        tmp_path: Path) -> None:
    # Was: "required column 'session_id' is missing" (build, check) while `rows` and an
    # empty JSON Lines file read zero rows: the computed touched_files column made the
    # table of nothing a table of one column.
    import pyarrow.feather as feather

    empty = pa.table({})
    pq.write_table(empty, tmp_path / "none.parquet")
    feather.write_feather(empty, tmp_path / "none.feather")
    for src in (tmp_path / "none.parquet", tmp_path / "none.feather"):
        proc = graphkit("build", src, "--snapshot", tmp_path / "snap", "--json")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["rows_read"] == 0
        assert f"{src}: no rows read" in proc.stderr, proc.stderr
        check = graphkit("check", src)
        assert check.returncode == 0 and "ok: 0 rows" in check.stdout, check.stderr
    # Beside rows it adds none; a zero-row file of other columns still lacks them.
    folder = tmp_path / "rows"
    folder.mkdir()
    pq.write_table(empty, folder / "none.parquet")
    pq.write_table(pa.Table.from_pylist(identity_cases()), folder / "rows.parquet")
    proc = graphkit("build", folder, "--snapshot", tmp_path / "snap2", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["rows_read"] == 8, proc.stderr
    pq.write_table(pa.table({"x": pa.array([], pa.int64())}), tmp_path / "other.parquet")
    one_line_error(graphkit("build", tmp_path / "other.parquet", "--snapshot",
                            tmp_path / "snap3"), "required column 'session_id' is missing")


@pytest.mark.parametrize(("column", "array"), [
    ("session_id", lambda n: pa.array([{"a": "s"}] * n)),
    ("cwd", lambda n: pa.array([1] * n, pa.int64())),
    ("is_sidechain", lambda n: pa.array([1] * n, pa.int8())),
    ("message_index", lambda n: pa.array([float(i) for i in range(n)])),
    ("message_index", lambda n: pa.array([decimal.Decimal(i) for i in range(n)],
                                         pa.decimal128(10, 0))),
])
def test_rows_refuses_a_column_of_another_kind_as_build_does(
        tmp_path: Path, column: str, array: Callable[[int], pa.Array]) -> None:
    # Was: `graphkit rows` cast whatever Arrow casts without a word — int cwd written as
    # "1", int8 as booleans, floats and decimals as ints, a struct session id as its
    # JSON text (the JSON-object fix at first) — where `build` refuses
    # each with one line. A column may differ in width, unit, zone or encoding only.
    base = table(identity_cases())
    arr = array(base.num_rows)
    src = tmp_path / "rows.parquet"
    pq.write_table(base.set_column(base.schema.get_field_index(column),
                                   pa.field(column, arr.type), arr), src)
    one_line_error(graphkit("build", src, "--snapshot", tmp_path / "snap"), column)
    one_line_error(graphkit("rows", src, "--out", tmp_path / "o.parquet"), str(src),
                   f"column {column!r} has type {arr.type}", "convert the column")
    assert not (tmp_path / "o.parquet").exists()


@pytest.mark.slow
def test_a_snapshot_built_into_its_source_folder_is_not_read_back_as_rows(
        tmp_path: Path) -> None:
    # Was: the next build read the snapshot's tables and its rejects file as row files:
    # exit 2 "graph.rejects.jsonl: required column 'session_id' is missing" (or the
    # tables' rows rejected one by one). Now they are left out, with a note.
    src = tmp_path / "src"
    shutil.copytree(SAMPLE_ROWS, src)
    write_jsonl(src / "bad.jsonl", [{"session_id": None, "message_id": "m-lost"}])
    first = graphkit("build", src, "--snapshot", src / "graph", "--json")
    assert first.returncode == 0, first.stderr
    assert (src / "graph.rejects.jsonl").is_file()
    assert graphkit("export", src / "graph", "--format", "neo4j-csv",
                    src / "csv").returncode == 0
    (src / "bad.jsonl").touch()  # something changed: built again, not kept
    again = graphkit("build", src, "--snapshot", src / "graph", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["rows_read"] == json.loads(first.stdout)["rows_read"]
    assert json.loads(again.stdout)["rows_rejected"] == 1
    assert "3 graphkit output(s) below it not read as rows" in again.stderr


@pytest.mark.slow
@pytest.mark.parametrize("given", ["graph", "graph/nodes/Session.parquet",
                                   "graph.rejects.jsonl", "csv"])
@pytest.mark.parametrize("command", ["build", "rows", "check"])
def test_a_snapshot_export_or_rejects_file_given_as_a_source_is_one_line(
        tmp_path: Path, given: str, command: str) -> None:
    # Was: `rows` wrote a snapshot's tables as 368 rows of nulls, exit 0; `build` and
    # `check` said "required column 'message_id' is missing". Now one line saying what
    # the path is.
    write_jsonl(tmp_path / "rows" / "bad.jsonl", [{"session_id": None, "message_id": "m"}])

    shutil.copytree(SAMPLE_ROWS, tmp_path / "rows" / "s")
    assert graphkit("build", tmp_path / "rows", "--snapshot", tmp_path / "graph").returncode == 0
    assert graphkit("export", tmp_path / "graph", "--format", "neo4j-csv",
                    tmp_path / "csv").returncode == 0
    extra = {"build": ["--snapshot", tmp_path / "s2"], "rows": ["--out", tmp_path / "r.pq"],
             "check": []}[command]
    proc = graphkit(command, tmp_path / given, *extra)
    one_line_error(proc, "not message rows", "give the sources it was built from")
    assert not (tmp_path / "s2").exists() and not (tmp_path / "r.pq").exists()


def test_a_fifo_among_row_files_is_refused_not_waited_on(tmp_path: Path) -> None:
    # Was: the build waited for a writer forever (Arrow opens a file blocking).
    import shutil

    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(SAMPLE_ROWS / "date=2026-11-20" / "part-0.parquet", src / "part-0.parquet")
    for name in ("pipe.parquet", "pipe.jsonl"):
        os.mkfifo(src / name)
        one_line_error(graphkit("build", src, "--snapshot", tmp_path / "snap"),
                       f"{src / name}: cannot read this file: not a regular file",
                       "only regular files are read")
        (src / name).unlink()


def test_a_hive_folder_key_that_is_also_a_column_is_one_error(tmp_path: Path) -> None:
    # Was: ArrowTypeError traceback ("Unable to merge: Field session_id has incompatible
    # types") for rows/session_id=zzz/r.parquet holding its own session_id column.
    import pyarrow.parquet as pq

    from tests.helpers.rows import identity_cases, table

    folder = tmp_path / "rows" / "session_id=zzz"
    folder.mkdir(parents=True)
    pq.write_table(table(identity_cases()), folder / "r.parquet")
    with pytest.raises(SourceError) as info:
        build(tmp_path / "rows", fingerprints=False)
    assert str(tmp_path / "rows") in str(info.value) and "session_id" in str(info.value)
