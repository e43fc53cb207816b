"""CSV that a spreadsheet opens runs no formula (issue 31): every --csv answer and the
`edges` CSV export put a single quote before text that starts with =, +, -, @, a tab or
a carriage return, as OWASP's CSV-injection guidance says; numbers stay numbers."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from graphkit.cli import cli
from tests.helpers.rows import row, spawned, write_parquet

SESSION = "=HYPERLINK(\"http://evil.example\",\"click\")"
FORMULAS = ("=", "+", "-", "@", "\t", "\r")


def invoke(*args: object) -> Result:
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r


def hostile_rows(tmp_path: Path, name: str = "rows.parquet", extra: int = 0) -> Path:
    rows = [
        row(SESSION, role="user", cwd="-2+3 /work", message_id="m1", model="@SUM(A1:A9)"),
        row(SESSION, message_id="m2", part_type="tool_call", tool_name="+cmd|' /C calc'!A0",
            tool_call_id="toolu_X", tool_args=json.dumps({"file_path": "=1+1.txt"}),
            attributes=json.dumps({"usage": {"input_tokens": 5, "output_tokens": 7}})),
        row(SESSION, agent_id="\tagent", attributes=spawned("toolu_X", agent_type="=2*3"),
            message_id="m3", model="@SUM(A1:A9)"),
        row(SESSION, message_id="m4", part_type="tool_call", tool_name="Write",
            tool_call_id="toolu_W", cwd="/work", tool_args=json.dumps(
                {"file_path": "/work/=1+1.txt", "content": "x"})),
        *[row(SESSION, message_id=f"x{i}") for i in range(extra)],
    ]
    return write_parquet(rows, tmp_path / name)


@pytest.fixture
def snap(tmp_path: Path) -> Path:
    out = tmp_path / "snap"
    invoke("build", hostile_rows(tmp_path), "--snapshot", out)
    return out


def cells(text: str) -> list[str]:
    return [c for r in csv.reader(io.StringIO(text)) for c in r]


def safe(text: str) -> None:
    got = cells(text)
    assert got, text
    risky = [c for c in got if c.startswith(FORMULAS)]
    assert not risky, risky
    return None


def test_the_rows_do_start_like_formulas(snap: Path) -> None:
    out = invoke("sessions", "--snapshot", snap, "--json").output
    assert json.loads(out)["session_id"] == SESSION  # else the tests below show nothing


@pytest.mark.parametrize("command", [
    ["sessions"], ["tree", SESSION], ["lineage", "\tagent"], ["usage", SESSION],
    ["usage", SESSION, "--by", "model"], ["usage", SESSION, "--by", "agent-type"],
    ["files"],
])
def test_every_csv_answer_is_formula_safe(snap: Path, command: list[str]) -> None:
    text = invoke(*command, "--snapshot", snap, "--csv").output
    safe(text)
    assert any(c.startswith("'") for c in cells(text)), text


def test_diff_csv_is_formula_safe(tmp_path: Path, snap: Path) -> None:
    other = tmp_path / "other"
    invoke("build", hostile_rows(tmp_path, "more.parquet", extra=2), "--snapshot", other)
    safe(invoke("diff", snap, other, "--csv").output)


def test_the_edges_csv_is_formula_safe_and_keeps_numbers(tmp_path: Path, snap: Path) -> None:
    out = tmp_path / "edges.csv"
    invoke("export", snap, "--format", "edges", out)
    text = out.read_text()
    safe(text)
    assert f"'{SESSION}".replace('"', '""') in text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert any(r.get("calls") == "1" for r in rows)  # a number is written as a number
