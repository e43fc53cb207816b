"""Eighth hostile round (tests/HOSTILE.md, "# Eighth round"): the leftovers of round seven
and what the round's driver found. Each test failed before its fix unless it says it
pins what held."""

from __future__ import annotations

import decimal
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.paths import REPO
from tests.helpers.rows import (
    identity_cases,
    identity_cases_renamed,
    json_lines,
    rows_with_a_lone_surrogate,
    table,
)

# --- 1. an escaped lone surrogate in JSON Lines ---------------------------------------


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


def test_rows_of_json_lines_whose_attributes_are_objects_writes_their_json_text(
        tmp_path: Path) -> None:
    # Found by the round's driver: `graphkit rows` refused a JSON Lines file whose
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


# --- 2. named time zones in --since/--until -------------------------------------------


def _session_ids(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert proc.returncode == 0, proc.stderr
    return [line.split("\t")[0] for line in proc.stdout.splitlines()[1:]]


def test_since_and_until_take_iana_zone_names(tmp_path: Path) -> None:
    # Was: "--since '2026-11-20T18:00 Europe/Berlin' is not a time" (only offsets).
    snap = tmp_path / "snap"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", snap).returncode == 0
    by_offset = _session_ids(graphkit("sessions", "--snapshot", snap, "--since",
                                      "2026-11-20T17:00+01:00", "--until", "2026-11-21"))
    assert by_offset == ["2e44158b-ae97-4a94-90ed-a82f8f6d0558",
                         "2ac34446-e883-41d4-9de0-099784b5a818",
                         "b40de56d-1cd8-4fc1-a309-66194791c2e9",
                         "c2ae35d2-43d8-4a97-b8b0-79e17711b757",
                         "75fdf37c-5d5e-41ad-a201-aafd93ea6a94"]
    for since, until in (("2026-11-20T17:00 Europe/Berlin", "2026-11-21 UTC"),
                         ("2026-11-20T11:00[America/New_York]", "2026-11-21[Etc/UTC]"),
                         ("2026-11-20T11:00-05:00[America/New_York]", "2026-11-21 utc")):
        got = _session_ids(graphkit("sessions", "--snapshot", snap, "--since", since,
                                    "--until", until))
        assert got == by_offset, (since, until)
    # A bare day in a zone is that day there: the 21st in Tokyo is 15:00 UTC on the
    # 20th to 15:00 UTC on the 21st.
    tokyo = _session_ids(graphkit("sessions", "--snapshot", snap,
                                  "--since", "2026-11-21 Asia/Tokyo",
                                  "--until", "2026-11-21 Asia/Tokyo"))
    assert tokyo == by_offset[:4]
    built = graphkit("build", REPO / "samples" / "rows", "--snapshot", tmp_path / "cut",
                     "--since", "2026-11-23 Pacific/Kiritimati", "--json")
    same = graphkit("build", REPO / "samples" / "rows", "--snapshot", tmp_path / "cut2",
                    "--since", "2026-11-22T10:00Z", "--json")  # Kiritimati is UTC+14
    assert built.returncode == 0 and json.loads(built.stdout)["nodes"]["Session"] == 5
    assert json.loads(built.stdout)["nodes"] == json.loads(same.stdout)["nodes"]


@pytest.mark.parametrize(("when", "words"), [
    ("2026-11-20 Europe/Berln", ["unknown time zone 'Europe/Berln'", "did you mean Europe/Berlin"]),
    ("2026-11-20T10:00[Mars/Olympus]", ["unknown time zone 'Mars/Olympus'", "IANA"]),
    ("2026-10-25T02:30 Europe/Berlin", ["happens twice", "+02:00 or", "+01:00"]),
    ("2026-03-29T02:30 Europe/Berlin", ["does not exist in Europe/Berlin"]),
    ("2026-11-20T10:00+01:00[America/New_York]", ["not America/New_York's", "-05:00"]),
    ("yesterday Europe/Berlin", ["is not a time", "before the zone"]),
    ("2026-11-20 ../../etc/passwd", ["is not a time"]),
    ("0001-01-01T05:00 Asia/Tokyo", ["outside the years 1 to 9999"]),
])
def test_a_zone_name_that_cannot_be_used_is_one_line(tmp_path: Path, when: str,
                                                     words: list[str]) -> None:
    snap = tmp_path / "snap"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", snap).returncode == 0
    for option in ("--since", "--until"):
        one_line_error(graphkit("sessions", "--snapshot", snap, option, when),
                       option, *words)


def test_without_a_zone_database_the_error_says_to_install_tzdata(tmp_path: Path) -> None:
    # A machine with no system zone database and no tzdata package (pyproject now
    # depends on it): one line saying so, not "unknown time zone" alone.
    stub = tmp_path / "stub" / "tzdata"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'stub'}:{REPO}", "PYTHONTZPATH": ""}
    proc = subprocess.run([sys.executable, "-m", "graphkit", "sessions", "--snapshot",
                           tmp_path, "--since", "2026-11-20 Europe/Berlin"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    one_line_error(proc, "no time zone database", "pip install tzdata")


# --- 3. an unknown field in a price table ---------------------------------------------


def test_an_unknown_field_in_a_price_table_is_one_line_naming_its_place(
        tmp_path: Path) -> None:
    # Was: ignored without a word (a misspelt "inptu" left the model's input price at
    # its default, 0). Now refused as a contract's unknown key is, naming FILE:LINE:COL
    # and the known fields.
    snap = tmp_path / "snap"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", snap).returncode == 0
    prices = tmp_path / "prices.json"
    prices.write_text('{"models": {\n  "claude-sonnet-4-5": {"input": 3},\n'
                      '  "claude-haiku-4-5": {"input": 1,\n      "inptu": 3}}}\n')
    for extra in ([], ["--by", "model"], ["--json"]):
        one_line_error(graphkit("usage", "--snapshot", snap, "--prices", prices, *extra),
                       f"{prices}:4:7: model 'claude-haiku-4-5' has an unknown field "
                       "'inptu'", "input, output, cache_creation, cache_read")
    prices.write_text('{"models": {"claude-sonnet-4-5": {"input": 3}}, "modles": {}}')
    one_line_error(graphkit("usage", "--snapshot", snap, "--prices", prices),
                   f"{prices}:1:49: the price table has an unknown field 'modles'",
                   "as_of, source, unit, models")
    # The shipped table, and one of every known field, still load.
    prices.write_text(json.dumps({"as_of": "x", "source": "y", "unit": "z", "models": {
        "claude-sonnet-4-5": {"input": 3, "output": 15, "cache_creation": 3.75,
                              "cache_read": 0.3}}}))
    assert graphkit("usage", "--snapshot", snap, "--prices", prices).returncode == 0
    assert graphkit("usage", "--snapshot", snap).returncode == 0


# --- 4. a Parquet file of no columns and no rows --------------------------------------


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


# --- 5. NFC/NFD twins -----------------------------------------------------------------

NFD_SESSION = "sess-cafe\u0301"      # "sess-café" as macOS writes a file name
NFC_SESSION = "sess-caf\u00e9"
NFD_AGENT = "agent-A\u030a"          # "agent-Å"


def test_an_id_given_in_the_other_unicode_form_says_did_you_mean(tmp_path: Path) -> None:
    # Was: "no session has the id 'sess-café'" with nothing to tell it from the stored
    # 'sess-café' (NFD): both print the same. Ids stay distinct (compared as written;
    # twins may both exist), and a miss names the other form, escaped.
    rows = identity_cases_renamed(NFD_SESSION, NFD_AGENT)
    src = tmp_path / "rows.jsonl"
    src.write_text(json_lines(rows))
    snap = tmp_path / "snap"
    assert graphkit("build", src, "--snapshot", snap).returncode == 0
    escaped = json.dumps(NFD_SESSION)
    for args in (["tree", NFC_SESSION], ["lineage", NFC_SESSION], ["usage", NFC_SESSION],
                 ["view", NFC_SESSION, "--out", tmp_path / "v.html"]):
        one_line_error(graphkit(*args, "--snapshot", snap), f"did you mean {escaped}?",
                       "NFD form", "$'sess-cafe\\u0301'")
    one_line_error(graphkit("lineage", "agent-\u00c5", "--snapshot", snap),
                   f"did you mean {json.dumps(NFD_AGENT)}?")
    # Given as stored, each is found; an id of no form at all keeps the old hint.
    assert graphkit("tree", NFD_SESSION, "--snapshot", snap).returncode == 0
    assert graphkit("lineage", NFD_AGENT, "--snapshot", snap).returncode == 0
    one_line_error(graphkit("tree", "sess-tea", "--snapshot", snap), "graphkit sessions")
    # Twins both stored: each id answers for itself, never for its twin.
    twin = dict(rows[0], session_id=NFC_SESSION, message_id="twin", part_id="twin:0")
    src.write_text(json_lines([*rows, twin]))
    assert graphkit("build", src, "--snapshot", snap).returncode == 0
    for sid in (NFC_SESSION, NFD_SESSION):
        got = graphkit("tree", sid, "--snapshot", snap, "--json")
        assert got.returncode == 0, got.stderr
        session = json.loads(got.stdout.splitlines()[0])
        assert session["id"] == sid, session


# --- 6. a disk that fills up ----------------------------------------------------------

# Run inside a private mount namespace (unshare -m, as root): a tmpfs of SIZE at DISK,
# then each graphkit command; prints, as JSON, each command's exit code and stderr and
# what DISK holds after it. The tmpfs vanishes with the namespace.
_FULL_DISK = r'''
import json, os, subprocess, sys
size, disk, commands = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
os.makedirs(disk, exist_ok=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", disk], check=True)
out = []
for args in commands:
    p = subprocess.run([sys.executable, "-m", "graphkit", *args], capture_output=True,
                       text=True, errors="replace", timeout=300)
    files = sorted(os.path.relpath(os.path.join(r, f), disk)
                   for r, _, fs in os.walk(disk) for f in fs)
    out.append({"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr,
                "files": files})
print(json.dumps(out))
'''


def _on_a_full_disk(tmp_path: Path, size: str, *commands: list[object]) -> list[dict[str, Any]]:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a real full disk needs root and unshare (a tmpfs in a mount namespace)")
    script = tmp_path / "full_disk_runner.py"
    script.write_text(_FULL_DISK)
    disk = tmp_path / "disk"
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, script, size,
         disk, json.dumps([[str(a) for a in c] for c in commands])],
        env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
        timeout=600, check=False)
    if proc.returncode != 0 and "mount" in proc.stderr:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()[-200:]}")
    assert proc.returncode == 0, proc.stderr
    results: list[dict[str, Any]] = json.loads(proc.stdout)
    return results


def _one_line(result: dict[str, Any], *words: str) -> str:
    assert result["rc"] == 2, result
    lines = result["stderr"].splitlines()
    assert len(lines) == 1 and "Traceback" not in result["stderr"], lines
    for word in words:
        assert word in lines[0], lines[0]
    return str(lines[0])


def test_a_full_disk_is_one_line_naming_the_path_and_the_old_snapshot_stays(
        tmp_path: Path) -> None:
    # A real ENOSPC (a 300 KiB tmpfs), not only RLIMIT_FSIZE's EFBIG. Was: a full build
    # cache and a full neo4j-csv/neo4j-parquet export said "stdout: cannot write: …" (the
    # writers' errors named no file, and the CLI's last resort took them for stdout);
    # the snapshot's own error named its folder twice and said nothing of what to do.
    disk = tmp_path / "disk"
    small = tmp_path / "small"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", small).returncode == 0
    big = tmp_path / "big.jsonl"
    line = '{"session_id": "s%d", "message_id": "m%d", "agent_id": "a%d"}\n'
    big.write_text("".join(line % (i, i, i) for i in range(30_000)))
    transcripts = REPO / "tests" / "fixtures" / "transcripts" / "claude-code-log"
    first, over, sessions, cache, export_csv, export_pq, rows = _on_a_full_disk(
        tmp_path, "300k",
        ["build", REPO / "samples" / "rows", "--snapshot", disk / "snap"],
        ["build", big, "--snapshot", disk / "snap"],
        ["sessions", "--snapshot", disk / "snap"],
        ["build", transcripts, "--snapshot", tmp_path / "t-snap", "--cache-dir",
         disk / "cache"],
        ["export", small, "--format", "neo4j-csv", disk / "csv"],
        ["export", small, "--format", "neo4j-parquet", disk / "pq"],
        ["rows", big, "--out", disk / "rows.parquet"])
    assert first["rc"] == 0, first
    _one_line(over, f"{disk / 'snap'}: cannot write the snapshot: No space left on device;",
              "free some space", "an earlier snapshot there is kept")
    assert over["files"] == first["files"]  # the old snapshot, nothing half-written beside
    assert sessions["rc"] == 0 and "8299ed6e" in sessions["stdout"], sessions  # readable
    _one_line(cache, f"{disk / 'cache'}", "No space left on device")
    assert "stdout" not in cache["stderr"]
    for result, name in ((export_csv, "csv"), (export_pq, "pq")):
        _one_line(result, f"{disk / name}: cannot write", "No space left on device")
        assert not [f for f in result["files"] if f.startswith((name, f".{name}"))], result
    _one_line(rows, f"{disk / 'rows.parquet'}: cannot write: No space left on device")


# --- what the round's driver found ----------------------------------------------------


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
    # JSON text (this round's own JSON-object fix at first) — where `build` refuses
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


def _not_utf8(path: Path, name: str) -> str:
    """``path / name`` where ``name`` ends in the byte 0xFF (no UTF-8), as a str the way
    Python holds such names (a lone surrogate)."""
    return os.fsdecode(os.fsencode(path) + b"/" + name.encode() + b"\xff")


def test_a_path_named_in_bytes_that_are_not_utf8_is_one_line(tmp_path: Path) -> None:
    # (In a process of its own: what its stderr takes of such a name is under test too.)
    # Was: UnicodeEncodeError tracebacks (Arrow's file system takes only UTF-8 paths)
    # from `build --snapshot`, a neo4j-parquet export and a build of a transcript folder
    # so named; the snapshot and export half-made their temporary folders first.
    snap = tmp_path / "snap"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", snap).returncode == 0
    bad_snap = _not_utf8(tmp_path, "s")
    one_line_error(graphkit("build", REPO / "samples" / "rows", "--snapshot", bad_snap,
                            process=True),
                   "the snapshot path is not valid UTF-8", "s\ufffd")
    bad_out = _not_utf8(tmp_path, "np")
    one_line_error(graphkit("export", snap, "--format", "neo4j-parquet", bad_out,
                            process=True),
                   "the export path is not valid UTF-8")
    folder = _not_utf8(tmp_path, "tx")
    shutil.copytree(REPO / "tests" / "fixtures" / "transcripts" / "claude-code-log", folder)
    one_line_error(graphkit("build", folder, "--snapshot", tmp_path / "t", process=True),
                   "tx\ufffd: this name is not valid UTF-8")
    assert sorted(os.listdir(tmp_path)) == sorted(["snap", ".snap.cache",
                                                   os.path.basename(folder)])
    # Where Python writes the file itself, such a name is written as given.
    out = _not_utf8(tmp_path, "g.graphml")
    assert graphkit("export", snap, "--format", "graphml", out, process=True).returncode == 0


@pytest.mark.parametrize("part", ["manifest.json", "nodes/Session.parquet"])
def test_a_fifo_in_a_snapshot_is_refused_not_waited_on(tmp_path: Path, part: str) -> None:
    # Was: `sessions` (every reader) waited forever for a writer on a FIFO put in the
    # manifest's place, as did `build --snapshot` over that folder; a FIFO table too.
    snap = tmp_path / "snap"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", snap).returncode == 0
    (snap / part).unlink()
    os.mkfifo(snap / part)
    one_line_error(graphkit("sessions", "--snapshot", snap), f"{snap / part}")
    one_line_error(graphkit("tree", "8299ed6e-811c-4fa7-b124-c205cd625a7f", "--snapshot",
                            snap), f"{snap / part}")
    if part == "manifest.json":
        one_line_error(graphkit("build", REPO / "samples" / "rows", "--snapshot", snap),
                       "refusing to replace a folder graphkit did not write")


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


def test_a_transcript_named_in_bytes_that_are_not_utf8_is_read_with_the_others(
        tmp_path: Path) -> None:
    # Was: a UnicodeEncodeError traceback (then, with this round's last resort, "s:bad…:
    # this name is not valid UTF-8") for the whole build: the file's name guessed its
    # session's group, hashed as strict UTF-8. Now it is read with the rest; its
    # skipped line names it (JSON escapes the byte as \udcff).
    fixture = REPO / "tests" / "fixtures" / "transcripts" / "claude-code-log"
    cold = graphkit("build", fixture, "--snapshot", tmp_path / "as-is", "--json")
    assert cold.returncode == 0, cold.stderr
    folder = tmp_path / "projects"
    shutil.copytree(fixture, folder)
    one = folder / "dag_compact_after_rewind_preserved.jsonl"
    with one.open("a") as f:
        f.write("not json\n")
    renamed = _not_utf8(folder, "bad") + ".jsonl"
    os.rename(one, renamed)
    proc = graphkit("build", folder, "--snapshot", tmp_path / "snap", "--json")
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["rows_read"] == json.loads(cold.stdout)["rows_read"]
    assert renamed in [s["file"] for s in got["skipped_lines"]], got["skipped_lines"]


@pytest.mark.parametrize(("data", "words"), [
    (lambda text: text.encode() + "# caf\xe9\n".encode("latin-1"),
     [":{last}: contract is not UTF-8 text (byte 0xE9 at column 6)", "save it as UTF-8"]),
    (lambda text: text.encode("utf-16"), [":1: contract is not UTF-8 text", "it is UTF-16"]),
    (lambda text: text.encode()[:100] + b"\x00" + text.encode()[100:],
     [":{nul}: not valid YAML: the character U+0000 is not allowed"]),
])
def test_a_contract_of_bytes_yaml_refuses_is_named_by_line(
        tmp_path: Path, data: Callable[[str], bytes], words: list[str]) -> None:
    # Was: "contract is not UTF-8 text (byte 12782)" — a byte offset, no line; and a NUL
    # "unacceptable character #x0000: … \n in "<unicode string>", position 100", no line.
    text = (REPO / "contracts" / "ai-gateway-graph.yaml").read_text()
    contract = tmp_path / "c.yaml"
    contract.write_bytes(data(text))
    last = text.count("\n") + 1
    nul = text[:100].count("\n") + 1
    proc = graphkit("check", REPO / "samples" / "rows", "--contract", contract)
    one_line_error(proc, *[f"{contract}" + w.format(last=last, nul=nul) if w.startswith(":")
                           else w for w in words])
