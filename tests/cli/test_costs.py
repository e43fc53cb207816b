"""Cost in every output (issue 33, item 4): ``usage`` prices each thread's own tokens and
its subagent tree in --json, --csv and piped TSV, and each session (null with a note
where a model has no price); on a terminal one table, a row per session or per --by
group and a total row; ``sessions`` lists workspace, models, tokens and cost. And the
CLI's --json is the library's records for the same question, line for line."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import graphkit
from graphkit.builds.run import build
from graphkit.cli import cli
from graphkit.snapshot import write_snapshot
from tests.helpers.paths import FIXTURES, REPO

CACHE = FIXTURES / "hypaware-cache" / "cache"
CLAUDE = "5b0e7a52-1c7d-4c55-9a43-0f4a0c2d7a01"  # Sonnet main loop, Haiku and Sonnet subagents
CODEX = "019a7b10-2c3d-7e4f-8a9b-0c1d2e3f4a01"  # a child thread on gpt-5-codex-mini: no price
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def snap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("costs") / "snap"
    write_snapshot(build(CACHE).graph, d)
    return d


def _out(*args: object) -> str:
    r = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout


def _json(*args: object) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _out(*args, "--json").splitlines()]


@pytest.mark.slow
def test_json_prices_each_thread_its_subtree_and_the_session(snap: Path) -> None:
    prices = graphkit.load_prices()
    by_id = {r["session_id"]: r for r in _json("usage", "--snapshot", snap)}
    claude = by_id[CLAUDE]
    for t in claude["threads"]:
        assert t["own_cost_usd"] is not None and t["cost_note"] is None
    # The session is its threads' own costs; the main loop's subtree is the session.
    own = sum(t["own_cost_usd"] for t in claude["threads"])
    assert claude["cost_usd"] == pytest.approx(own, abs=1e-6)
    main = claude["threads"][0]
    assert main["depth"] == 0 and main["subtree_cost_usd"] == claude["cost_usd"]
    # A subagent's own cost is its tokens at its model's prices.
    sub = next(t for t in claude["threads"] if t["id"] == "a2e9d8c7b6a5f4e3")  # on Haiku
    rates = prices.price("claude-haiku-4-5")
    assert rates is not None
    want = sum(n * r for n, r in zip(sub["own"].values(), rates, strict=True)) / 1e6
    assert sub["own_cost_usd"] == pytest.approx(want)
    # No price for the Codex child's model: unknown, never zero, and said why.
    codex = by_id[CODEX]
    assert codex["cost_usd"] is None and codex["unpriced_models"] == ["gpt-5-codex-mini"]
    assert codex["cost_note"] == "no price for gpt-5-codex-mini"
    root, child = codex["threads"]
    assert root["own_cost_usd"] > 0 and root["subtree_cost_usd"] is None
    assert root["cost_note"] == "no price for gpt-5-codex-mini"
    assert child["own_cost_usd"] is None and child["parent"] == root["id"]


@pytest.mark.slow
def test_csv_and_tsv_carry_the_costs_json_has(snap: Path) -> None:
    records = _json("usage", "--snapshot", snap)
    want = [(r["session_id"], t["id"], t["own_cost_usd"], t["subtree_cost_usd"],
             r["cost_usd"], t["cost_note"]) for r in records for t in r["threads"]]

    def cells(v: str) -> Any:
        return None if v == "" else v

    rows = list(csv.DictReader(io.StringIO(_out("usage", "--snapshot", snap, "--csv"))))
    tsv = _out("usage", "--snapshot", snap).splitlines()  # piped: TSV
    tsv_rows = [dict(zip(tsv[0].split("\t"), line.split("\t"), strict=True))
                for line in tsv[1:]]
    for got in (rows, tsv_rows):
        assert [(r["session_id"], r["thread"], *(cells(r[c]) for c in (
            "own_cost_usd", "subtree_cost_usd", "session_cost_usd", "cost_note")))
                for r in got] == [(s, t, *(None if v is None else str(v) for v in rest))
                                  for s, t, *rest in want]


@pytest.mark.parametrize("by", ["session", "day", "model", "agent-type"])
def test_groups_add_up_to_the_sessions(snap: Path, by: str) -> None:
    usage = _json("usage", "--snapshot", snap)
    groups = _json("usage", "--snapshot", snap, "--by", by)
    assert {g["record"] for g in groups} == {"usage_group"} and {g["by"] for g in groups} == {by}
    for field in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                  "cache_read_input_tokens"):
        assert sum(g[field] for g in groups) == sum(u["total"][field] for u in usage)
    priced = [g["cost_usd"] for g in groups if g["cost_usd"] is not None]
    assert all(g["cost_note"] for g in groups if g["cost_usd"] is None)
    if by == "session":
        assert [g["key"] for g in groups] == [u["session_id"] for u in usage]
        assert [g["cost_usd"] for g in groups] == [u["cost_usd"] for u in usage]
    if by == "day":  # the fixture's sessions start on four days
        assert [g["key"] for g in groups] == ["2026-11-20", "2026-11-21", "2026-11-22",
                                              "2026-11-23"]
    assert priced


def _terminal(args: list[str]) -> str:
    """What a whole ``graphkit`` process draws on a (pseudo) terminal."""
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "graphkit", *args], env=env,
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    captured = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        captured += chunk
    proc.communicate()
    os.close(master)
    assert proc.returncode == 0
    return ANSI.sub("", captured.decode("utf-8", "replace")).replace("\r", "")


def _body(table: str) -> list[list[str]]:
    """A rich table's rows, cells stripped (the ones between │ marks)."""
    return [[c.strip() for c in line.split("│")[1:-1]] for line in table.splitlines()
            if line.startswith("│")]


@pytest.mark.slow
def test_on_a_terminal_usage_is_one_table_a_row_per_session_and_a_total(snap: Path) -> None:
    usage = _json("usage", "--snapshot", snap)
    rows = _body(_terminal(["usage", "--snapshot", str(snap)]))
    assert [r[0] for r in rows] == [u["session_id"] for u in usage] + ["total"]
    totals = [int(r[5].replace(",", "")) for r in rows]
    assert totals[:-1] == [sum(u["total"].values()) for u in usage]
    assert totals[-1] == sum(totals[:-1])
    costs = {r[0]: r[6] for r in rows}
    claude = next(u["cost_usd"] for u in usage if u["session_id"] == CLAUDE)
    assert costs[CLAUDE] == f"${claude:,.4f}"
    assert costs[CODEX].endswith("+ unpriced") and costs["total"].endswith("+ unpriced")
    by_model = _body(_terminal(["usage", "--snapshot", str(snap), "--by", "model"]))
    assert by_model[-1][0] == "total" and "gpt-5-codex-mini" in [r[0] for r in by_model]
    # --by thread: the subagent trees, one table, each session's row above its threads.
    threads = _body(_terminal(["usage", "--snapshot", str(snap), "--by", "thread"]))
    assert threads[0][0] == f"session {CLAUDE}" and threads[-1][0] == "total"


def test_sessions_lists_workspace_models_tokens_and_cost_as_usage_adds_them(
        snap: Path) -> None:
    listed = {s["session_id"]: s for s in _json("sessions", "--snapshot", snap)}
    usage = {u["session_id"]: u for u in _json("usage", "--snapshot", snap)}
    assert set(listed) == set(usage)
    for sid, s in listed.items():
        assert s["tokens"] == usage[sid]["total"]
        assert s["total_tokens"] == sum(usage[sid]["total"].values())
        assert s["cost_usd"] == usage[sid]["cost_usd"]
        assert s["cost_note"] == usage[sid]["cost_note"]
    assert listed[CLAUDE]["workspaces"] == ["/home/dev/src/webapp"]
    assert listed[CLAUDE]["models"] == ["claude-sonnet-4-5", "claude-haiku-4-5"]
    assert listed[CODEX]["unpriced_models"] == ["gpt-5-codex-mini"]
    # Piped: one time shape for every session, the cost as a number (empty: unknown).
    tsv = _out("sessions", "--snapshot", snap).splitlines()
    head = tsv[0].split("\t")
    assert head == ["session_id", "workspace", "threads", "agents", "messages", "models",
                    "tokens", "cost_usd", "first_seen", "last_seen"]
    for line in tsv[1:]:
        cells = dict(zip(head, line.split("\t"), strict=True))
        assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", cells[c])
                   for c in ("first_seen", "last_seen"))
        want = listed[cells["session_id"]]["cost_usd"]
        assert cells["cost_usd"] == ("" if want is None else str(want))


def test_the_cli_json_is_the_librarys_records(snap: Path) -> None:
    # What another front end (a server for agents) returns for the same question.
    with graphkit.open_store(snap) as store:
        asked = {
            ("sessions",): graphkit.session_records(graphkit.sessions(store)),
            ("usage", "--by", "model"): graphkit.usage_records(
                graphkit.usage(store, by="model")),
            ("usage", CLAUDE): graphkit.usage_records(graphkit.usage(store, [CLAUDE])),
            ("tree", CLAUDE): graphkit.tree_records(graphkit.tree(store, CLAUDE)),
            ("lineage", CLAUDE): graphkit.lineage_records(
                graphkit.lineage_many(store, [CLAUDE])),
            ("files", CLAUDE): graphkit.file_records(graphkit.files(store, [CLAUDE])),
        }
    for args, records in asked.items():
        assert _json(*args, "--snapshot", snap) == json.loads(json.dumps(records)), args
