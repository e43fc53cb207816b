"""What the CLI writes besides snapshots — rejects files and rows — and how it
refuses to harm a user's files or leak row payloads (issue 13)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
from click.testing import CliRunner, Result

from graphkit.cli import cli
from tests.helpers.rows import identity_cases, row, write_parquet

SECRET = "sk-live-THIS-IS-A-SECRET"


def invoke(*args: object) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def _rows_with_secret(tmp_path: Path) -> Path:
    leaky = row(None, message_id="leaky", attributes=json.dumps({"tool": {"api_key": SECRET}}),
                content_text=f"my key is {SECRET}")
    rows = [*identity_cases(), leaky]
    return write_parquet(rows, tmp_path / "rows.parquet")


def test_rejects_name_the_row_but_leak_no_payload(tmp_path: Path) -> None:
    src = _rows_with_secret(tmp_path)
    r = invoke("build", src, "--snapshot", tmp_path / "snap", "--json")
    assert r.exit_code == 0, r.output
    text = (tmp_path / "snap.rejects.jsonl").read_text()
    assert SECRET not in text
    recs = [json.loads(line) for line in text.splitlines()]
    leaky = next(r for r in recs if r["values"].get("message_id") == "leaky")
    assert leaky["source"] == str(src) and leaky["row"] == 9 and leaky["reason"]
    assert "attributes" not in leaky["values"]


def test_rejects_keep_the_payload_only_when_asked(tmp_path: Path) -> None:
    src = _rows_with_secret(tmp_path)
    invoke("build", src, "--snapshot", tmp_path / "snap", "--include-content")
    assert SECRET in (tmp_path / "snap.rejects.jsonl").read_text()


def test_rejects_never_overwrite_a_file_graphkit_did_not_write(tmp_path: Path) -> None:
    src = write_parquet(identity_cases(), tmp_path / "rows.parquet")
    mine = tmp_path / "notes.jsonl"
    mine.write_text('{"my": "own data"}\n')
    r = invoke("build", src, "--snapshot", tmp_path / "snap", "--rejects", mine)
    assert r.exit_code == 2 and "did not write" in r.output and str(mine) in r.output
    assert mine.read_text() == '{"my": "own data"}\n'
    assert "Traceback" not in r.output


def test_a_clean_build_keeps_a_users_file_at_the_default_rejects_path(tmp_path: Path) -> None:
    src = write_parquet([r for r in identity_cases() if r["session_id"]], tmp_path / "ok.parquet")
    users = tmp_path / "snap.rejects.jsonl"
    users.write_text("my own notes\n")
    r = invoke("build", src, "--snapshot", tmp_path / "snap")
    assert r.exit_code == 0, r.output
    assert users.read_text() == "my own notes\n"


def test_a_clean_build_removes_its_own_stale_rejects(tmp_path: Path) -> None:
    bad = write_parquet(identity_cases(), tmp_path / "bad.parquet")
    assert invoke("build", bad, "--snapshot", tmp_path / "snap").exit_code == 0
    assert (tmp_path / "snap.rejects.jsonl").exists()
    good = write_parquet([r for r in identity_cases() if r["session_id"]],
                         tmp_path / "good.parquet")
    assert invoke("build", good, "--snapshot", tmp_path / "snap").exit_code == 0
    assert not (tmp_path / "snap.rejects.jsonl").exists()


def test_rejects_at_a_folder_is_one_line_and_leaves_no_temp_file(tmp_path: Path) -> None:
    src = write_parquet(identity_cases(), tmp_path / "rows.parquet")
    folder = tmp_path / "rejects"
    folder.mkdir()
    r = invoke("build", src, "--snapshot", tmp_path / "snap", "--rejects", folder)
    assert r.exit_code == 2 and "folder" in r.output and "Traceback" not in r.output
    assert list(folder.iterdir()) == []
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


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
        r = invoke("rows", src, "--out", fifo)
        data, _ = reader.communicate(timeout=60)
    finally:
        reader.kill()  # never left waiting on a pipe nobody opens
    assert r.exit_code == 0, r.output
    assert fifo.is_fifo()  # still the pipe, not a Parquet file renamed over it
    (tmp_path / "got.parquet").write_bytes(data)
    assert pq.read_table(tmp_path / "got.parquet").num_rows == 8


def test_rows_say_which_content_columns_they_leave_out(tmp_path: Path) -> None:
    src = write_parquet([row("s", message_id="m", content_text=SECRET)], tmp_path / "r.parquet")
    r = invoke("rows", src, "--out", tmp_path / "out.parquet")
    assert r.exit_code == 0 and "content columns left out" in r.output
    out = pq.read_table(tmp_path / "out.parquet")
    assert SECRET not in str(out.to_pylist())


def test_rows_out_at_a_folder_is_one_line(tmp_path: Path) -> None:
    src = write_parquet([row("s", message_id="m")], tmp_path / "r.parquet")
    r = invoke("rows", src, "--out", tmp_path)
    assert r.exit_code == 2 and "folder" in r.output and "Traceback" not in r.output
