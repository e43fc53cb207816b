"""Further hostile inputs through the real command line (issue 13, second round; the
table is tests/HOSTILE.md). Each ends in exit 0 and a correct graph, or exit 2 and one
line naming the file: no traceback, nothing lost, no secret written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.rows import identity_cases, table, with_touched_files


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


@pytest.mark.parametrize("name", ["new\nline.jsonl", "\x1b[2J\x1b[31mred.jsonl"])
def test_a_file_name_with_control_characters_stays_one_escaped_line(tmp_path: Path,
                                                                    name: str) -> None:
    # Was: the newline broke the error in two; an ESC reached the terminal as is.
    src = tmp_path / name
    src.write_text("not json\n")
    line = one_line_error(graphkit("build", src, "--snapshot", tmp_path / "snap"))
    assert "\x1b" not in line
    assert name.encode("unicode_escape").decode() in line


def test_a_good_file_with_a_newline_in_its_name_builds(tmp_path: Path) -> None:
    src = tmp_path / "new\nline.jsonl"
    rows = identity_cases()
    src.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    proc = graphkit("build", src, "--snapshot", tmp_path / "snap", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["rows_read"] == len(rows) and summary["rows_rejected"] == 1


def test_build_json_lists_the_skipped_lines_and_notes_go_to_stderr(tmp_path: Path) -> None:
    # The JSON summary carried only a count; notes and findings were never printed.
    from graphkit.builds.run import SKIPPED_IN_SUMMARY
    from tests.helpers.transcripts import user, write_jsonl

    sid = "11111111-1111-4111-8111-111111111111"
    path = write_jsonl(tmp_path / "projects" / "-w" / f"{sid}.jsonl",
                       [user("u0", sid, "2026-01-01T00:00:00Z", "hello")])
    bad = SKIPPED_IN_SUMMARY + 50
    with path.open("a") as f:
        f.write("not json\n" * bad)
    proc = graphkit("build", tmp_path / "projects", "--snapshot", tmp_path / "snap", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["lines_skipped"] == bad
    listed = summary["skipped_lines"]
    assert len(listed) == SKIPPED_IN_SUMMARY
    assert listed[0] == {"file": str(path), "line": 2, "reason": "not valid JSON"}
    assert [s["line"] for s in listed] == list(range(2, SKIPPED_IN_SUMMARY + 2))
    assert f"{bad} line(s) skipped" in proc.stderr and "note:" in proc.stderr


def test_a_snapshot_every_reader_would_refuse_is_never_written(tmp_path: Path) -> None:
    # Was: `snapshot --neo4j --no-contract` wrote node tables without a key, which
    # every reader then refused as a malformed manifest.
    from graphkit.builds.run import build
    from graphkit.core.graph import NodeTable
    from graphkit.snapshot import write_snapshot
    from graphkit.snapshot.format import SnapshotError

    graph = build(table(identity_cases()), fingerprints=False).graph
    graph.nodes["Tool"] = NodeTable("Tool", (), graph.nodes["Tool"].table)
    with pytest.raises(SnapshotError, match="Tool without a key"):
        write_snapshot(graph, tmp_path / "snap")
    assert not (tmp_path / "snap").exists()


# Fifth round: 5,000 digits was a ValueError traceback (Python's int-string limit).
@pytest.mark.parametrize("when", ["99999999999 days ago", "1000000 weeks ago",
                                  "1" * 5000 + " days ago"])
def test_a_time_window_before_year_1_is_one_line(tmp_path: Path, when: str) -> None:
    # Was: OverflowError traceback from timedelta / datetime arithmetic.
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r, default=str) + "\n" for r in identity_cases()))
    for option in ("--since", "--until"):
        proc = graphkit("build", src, option, when, "--snapshot", tmp_path / "snap")
        one_line_error(proc, option, "before year 1")


def test_infinite_token_counts_are_no_number(tmp_path: Path) -> None:
    # Was: Infinity / 1e400 in attributes.usage built a snapshot whose `usage` crashed
    # (OverflowError: cannot convert float infinity to integer).
    rows = [dict(r) for r in identity_cases() if r["session_id"]]
    rows[1]["attributes"] = '{"usage": {"input_tokens": Infinity, "output_tokens": 1e400}}'
    rows[3]["attributes"] = '{"usage": {"input_tokens": 12, "output_tokens": NaN}}'
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    assert graphkit("build", src, "--snapshot", tmp_path / "snap").returncode == 0
    proc = graphkit("usage", "--snapshot", tmp_path / "snap", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["record"] for line in proc.stdout.splitlines()]
    assert "inf" not in proc.stdout.lower() and "nan" not in proc.stdout.lower()
    assert '"own": {"input_tokens": 12, "output_tokens": 0' in proc.stdout


def test_a_token_count_that_is_no_number_rejects_its_row(tmp_path: Path) -> None:
    # Was: exit 2 for the whole build, naming the column but no file or row.
    rows = [dict(r) for r in identity_cases() if r["session_id"]]
    rows[2]["attributes"] = '{"usage": {"input_tokens": "lots", "output_tokens": 1}}'
    pq.write_table(table(rows), tmp_path / "rows.parquet")
    proc = graphkit("build", tmp_path / "rows.parquet", "--snapshot", tmp_path / "snap",
                    "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows_rejected"] == 1
    rejects = [json.loads(line) for line in
               (tmp_path / "snap.rejects.jsonl").read_text().splitlines()]
    assert [(r["source"], r["row"], r["column"]) for r in rejects] == [
        (str(tmp_path / "rows.parquet"), 3, "usage_input")]
    assert "usage.input_tokens" in rejects[0]["reason"]


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000,
                                  '{"models": {"m": {"input": 1e400}}}',
                                  '{"models": {"m": {"input": -1}}}',
                                  '{"models": {"m": {"input": true}}}'])
def test_a_hostile_price_table_is_one_line(tmp_path: Path, text: str) -> None:
    # Was: RecursionError traceback (deep nesting); infinite, negative and true prices
    # were taken as prices.
    from graphkit.core.errors import GraphkitError
    from graphkit.queries.prices import load_prices

    path = tmp_path / "prices.json"
    path.write_text(text)
    with pytest.raises(GraphkitError) as info:
        load_prices(path)
    assert str(path) in str(info.value)


def test_numbers_past_a_floats_range_keep_the_rest_of_their_document(tmp_path: Path) -> None:
    # Fifth round. Was: a number of more than 4,300 digits in `attributes` made
    # json.loads refuse the whole document, so the subagent lost its parent without a
    # word; 1,000 digits in touched_files (the Arrow way) summed to an infinite count
    # and `graphkit files` failed with an OverflowError traceback.
    rows = [dict(r) for r in identity_cases() if r["session_id"]]
    huge = "1" + "0" * 5000
    rows[2]["attributes"] = rows[2]["attributes"][:-1] + f', "usage": {{"input_tokens": {huge}}}}}'
    rows[3]["touched_files"] = '[{"path": "/a", "reads": 1' + "0" * 999 + ', "writes": 2}]'
    src = tmp_path / "rows.parquet"
    pq.write_table(with_touched_files(rows), src)
    assert graphkit("build", src, "--snapshot", tmp_path / "snap").returncode == 0
    lineage = graphkit("lineage", "agentA", "--snapshot", tmp_path / "snap", "--json")
    assert lineage.returncode == 0, lineage.stderr
    assert json.loads(lineage.stdout)["ancestors"][0]["type"] == "Thread"
    files = graphkit("files", "--snapshot", tmp_path / "snap", "--json")
    assert files.returncode == 0, files.stderr
    found = [json.loads(line) for line in files.stdout.splitlines()]
    assert [(f["path"], f["reads"], f["writes"]) for f in found] == [("/a", 0, 2)]
    usage = graphkit("usage", "--snapshot", tmp_path / "snap", "--json")
    assert usage.returncode == 0 and "inf" not in usage.stdout.lower(), usage.stderr


def test_an_unnested_value_that_is_no_number_rejects_its_row_naming_file_and_row(
        tmp_path: Path) -> None:
    # Fifth round. Was: exit 2 for the whole build: "`sum` of column 'file_reads' met
    # 'x', which is no number", naming neither file nor row.
    rows = [dict(r) for r in identity_cases() if r["session_id"]]
    rows[0]["touched_files"] = '[{"path": "/b", "reads": 1, "writes": 0}]'
    rows[2]["touched_files"] = json.dumps([{"path": "/a", "reads": "x", "writes": 0}])
    src = tmp_path / "rows.parquet"
    pq.write_table(with_touched_files(rows), src)
    proc = graphkit("build", src, "--snapshot", tmp_path / "snap", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows_rejected"] == 1
    rejects = [json.loads(line) for line in
               (tmp_path / "snap.rejects.jsonl").read_text().splitlines()]
    assert [(r["source"], r["row"], r["column"]) for r in rejects] == [
        (str(src), 3, "touched_files")]
    assert "touched_files → [].reads" in rejects[0]["reason"]
    files = graphkit("files", "--snapshot", tmp_path / "snap", "--json")
    assert [f["path"] for f in map(json.loads, files.stdout.splitlines())] == ["/b"]


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "key-twice"])
def test_a_price_table_that_is_no_regular_file_or_names_a_key_twice_is_one_line(
        tmp_path: Path, kind: str) -> None:
    # Fifth round. Was: `usage --prices FIFO` waited for a writer forever, a link to
    # /dev/zero was read until memory ran out, and a second "models" object silently
    # replaced the first.
    from graphkit.core.errors import GraphkitError
    from graphkit.queries.prices import load_prices

    path = tmp_path / "prices.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.write_text('{"models": {"m": {"input": 1}}, "models": {}}')
    proc = graphkit("usage", "--snapshot", tmp_path / "none", "--prices", path)
    one_line_error(proc, str(path))
    with pytest.raises(GraphkitError, match=r"not a regular file|given twice"):
        load_prices(path)
