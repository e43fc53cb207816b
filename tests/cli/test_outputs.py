"""What the CLI writes besides snapshots — rejects files, rows, views and exports to
pipes, stdout closed, full or left by its reader — and how it refuses to harm a user's
files or leak row payloads (issue 13)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.helpers.cli import built_samples, graphkit, one_line_error, spawn
from tests.helpers.paths import REPO
from tests.helpers.rows import identity_cases, row, write_parquet

SECRET = "sk-live-THIS-IS-A-SECRET"



def _rows_with_secret(tmp_path: Path) -> Path:
    leaky = row(None, message_id="leaky", attributes=json.dumps({"tool": {"api_key": SECRET}}),
                content_text=f"my key is {SECRET}")
    rows = [*identity_cases(), leaky]
    return write_parquet(rows, tmp_path / "rows.parquet")


def test_rejects_name_the_row_but_leak_no_payload(tmp_path: Path) -> None:
    src = _rows_with_secret(tmp_path)
    r = graphkit("build", src, "--snapshot", tmp_path / "snap", "--json")
    assert r.returncode == 0, r.output
    text = (tmp_path / "snap.rejects.jsonl").read_text()
    assert SECRET not in text
    recs = [json.loads(line) for line in text.splitlines()]
    leaky = next(r for r in recs if r["values"].get("message_id") == "leaky")
    assert leaky["source"] == str(src) and leaky["row"] == 9 and leaky["reason"]
    assert "attributes" not in leaky["values"]


def test_rejects_keep_the_payload_only_when_asked(tmp_path: Path) -> None:
    src = _rows_with_secret(tmp_path)
    graphkit("build", src, "--snapshot", tmp_path / "snap", "--include-content")
    assert SECRET in (tmp_path / "snap.rejects.jsonl").read_text()


def test_rejects_never_overwrite_a_file_graphkit_did_not_write(tmp_path: Path) -> None:
    src = write_parquet(identity_cases(), tmp_path / "rows.parquet")
    mine = tmp_path / "notes.jsonl"
    mine.write_text('{"my": "own data"}\n')
    r = graphkit("build", src, "--snapshot", tmp_path / "snap", "--rejects", mine)
    assert r.returncode == 2 and "did not write" in r.output and str(mine) in r.output
    assert mine.read_text() == '{"my": "own data"}\n'
    assert "Traceback" not in r.output


def test_a_clean_build_keeps_a_users_file_at_the_default_rejects_path(tmp_path: Path) -> None:
    src = write_parquet([r for r in identity_cases() if r["session_id"]], tmp_path / "ok.parquet")
    users = tmp_path / "snap.rejects.jsonl"
    users.write_text("my own notes\n")
    r = graphkit("build", src, "--snapshot", tmp_path / "snap")
    assert r.returncode == 0, r.output
    assert users.read_text() == "my own notes\n"


def test_a_clean_build_removes_its_own_stale_rejects(tmp_path: Path) -> None:
    bad = write_parquet(identity_cases(), tmp_path / "bad.parquet")
    assert graphkit("build", bad, "--snapshot", tmp_path / "snap").returncode == 0
    assert (tmp_path / "snap.rejects.jsonl").exists()
    good = write_parquet([r for r in identity_cases() if r["session_id"]],
                         tmp_path / "good.parquet")
    assert graphkit("build", good, "--snapshot", tmp_path / "snap").returncode == 0
    assert not (tmp_path / "snap.rejects.jsonl").exists()


def test_rejects_at_a_folder_is_one_line_and_leaves_no_temp_file(tmp_path: Path) -> None:
    src = write_parquet(identity_cases(), tmp_path / "rows.parquet")
    folder = tmp_path / "rejects"
    folder.mkdir()
    r = graphkit("build", src, "--snapshot", tmp_path / "snap", "--rejects", folder)
    assert r.returncode == 2 and "folder" in r.output and "Traceback" not in r.output
    assert list(folder.iterdir()) == []
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.slow
def test_rows_to_stdout_with_a_dash(tmp_path: Path) -> None:
    src = write_parquet(identity_cases(), tmp_path / "rows.parquet")
    proc = subprocess.run([sys.executable, "-m", "graphkit", "rows", str(src), "--out", "-"],
                          capture_output=True, check=True, cwd=tmp_path)
    (tmp_path / "got.parquet").write_bytes(proc.stdout)
    assert pq.read_table(tmp_path / "got.parquet").num_rows == 8
    assert b"wrote 8 rows to stdout" in proc.stderr


def test_rows_write_through_a_special_file_and_never_replace_it(tmp_path: Path) -> None:
    src = write_parquet(identity_cases(), tmp_path / "rows.parquet")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    try:
        r = graphkit("rows", src, "--out", fifo)
        data, _ = reader.communicate(timeout=60)
    finally:
        reader.kill()  # never left waiting on a pipe nobody opens
    assert r.returncode == 0, r.output
    assert fifo.is_fifo()  # still the pipe, not a Parquet file renamed over it
    (tmp_path / "got.parquet").write_bytes(data)
    assert pq.read_table(tmp_path / "got.parquet").num_rows == 8


def test_rows_say_which_content_columns_they_leave_out(tmp_path: Path) -> None:
    src = write_parquet([row("s", message_id="m", content_text=SECRET)], tmp_path / "r.parquet")
    r = graphkit("rows", src, "--out", tmp_path / "out.parquet")
    assert r.returncode == 0 and "content columns left out" in r.output
    out = pq.read_table(tmp_path / "out.parquet")
    assert SECRET not in str(out.to_pylist())


def test_rows_out_at_a_folder_is_one_line(tmp_path: Path) -> None:
    src = write_parquet([row("s", message_id="m")], tmp_path / "r.parquet")
    r = graphkit("rows", src, "--out", tmp_path)
    assert r.returncode == 2 and "folder" in r.output and "Traceback" not in r.output


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


def test_an_empty_rejects_path_is_one_line(tmp_path: Path) -> None:
    # Was: ValueError traceback (`--rejects ""`: Path(".") has no file name).
    for given in ("", "."):
        proc = graphkit("build", REPO / "samples" / "rows", "--snapshot", tmp_path / "snap",
                        "--rejects", given)
        one_line_error(proc, "the rejects path is a folder")
    assert not (tmp_path / "snap").exists()


SESSION = "8299ed6e-811c-4fa7-b124-c205cd625a7f"


@pytest.fixture(scope="module")
def snap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_samples(tmp_path_factory, "hostile-out")


@pytest.mark.parametrize("command", ["view", "export-edges", "export-graphml"])
def test_view_and_export_write_through_a_pipe_and_never_replace_it(
        snap: Path, tmp_path: Path, command: str) -> None:
    # Was: a temporary file renamed over the output: `--out /dev/full` run as root
    # replaced the /dev/full device with a regular file (rows had the fix; these not).
    fifo = tmp_path / ("out.csv" if command == "export-edges" else "out")
    os.mkfifo(fifo)
    args: list[object] = {
        "view": ["view", SESSION, "--snapshot", snap, "--out", fifo],
        "export-edges": ["export", snap, "--format", "edges", fifo],
        "export-graphml": ["export", snap, "--format", "graphml", fifo],
    }[command]
    # The reader drains the FIFO into a file: into a pipe nobody reads until the command
    # ends, a graph bigger than the pipe's buffer would block both.
    drained = tmp_path / "drained"
    with drained.open("wb") as sink:
        reader = subprocess.Popen(["cat", str(fifo)], stdout=sink)
        try:
            proc = graphkit(*args)
            reader.wait(timeout=120)
        finally:
            reader.kill()
    assert proc.returncode == 0, proc.stderr
    assert fifo.is_fifo() and drained.stat().st_size > 1000


@pytest.mark.slow
@pytest.mark.parametrize("args", [["sessions"], ["tree", SESSION], ["lineage", SESSION, "--json"],
                                  ["export", "{snap}", "--format", "edges", "-"]])
def test_a_full_stdout_is_one_line(snap: Path, args: list[str]) -> None:
    # Was: an OSError traceback from click.echo.
    args = [str(snap) if a == "{snap}" else a for a in args]
    if args[0] != "export":
        args += ["--snapshot", str(snap)]
    with open("/dev/full", "w") as full:
        proc = graphkit(*args, process=True, stdout=full, stderr=subprocess.PIPE)
    one_line_error(proc, "cannot write", "No space left")


@pytest.mark.slow
@pytest.mark.parametrize("args", [["sessions"], ["tree", SESSION], ["usage"]])
def test_a_closed_stdout_is_no_traceback(snap: Path, args: list[str]) -> None:
    # Was: AttributeError 'NoneType' object has no attribute 'isatty'.
    proc = graphkit(*args, "--snapshot", snap, process=True, stderr=subprocess.PIPE,
                    preexec_fn=lambda: os.close(1))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("args", [["sessions", "--json"], ["rows", "{rows}", "--out", "-"],
                                  ["export", "{snap}", "--format", "edges", "-"]])
def test_a_reader_that_stops_reading_ends_the_command_quietly(snap: Path,
                                                              args: list[str]) -> None:
    # `graphkit … | head -0`: was exit 1 silently (click), or exit 2 "Broken pipe" (rows).
    args = [str(snap) if a == "{snap}" else str(REPO / "samples" / "rows") if a == "{rows}"
            else a for a in args]
    if args[0] == "sessions":
        args += ["--snapshot", str(snap)]
    proc = spawn(*args, text=False)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before graphkit writes a byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 0, err
    assert err == ""
