"""Sixth hostile round (tests/HOSTILE.md, "# Sixth round"): the leftovers of round five
and the inputs that round found through the real CLI. Each test failed before its fix."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphkit.contract.loader import load_contract
from graphkit.core.errors import ContractError, GraphkitError
from graphkit.projection.conform import conform_table
from graphkit.projection.project import project
from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.contracts import FILES_CONTRACT
from tests.helpers.paths import REPO
from tests.helpers.rows import (
    CLAUDE,
    identity_cases,
    identity_cases_renamed,
    json_lines,
    read_rejects,
    table,
    usage_rows,
)


@pytest.mark.parametrize("count", [2**63 - 1, 2**64 - 1, 2**53, -(2**60), 1e300])
def test_a_token_count_no_count_can_be_rejects_its_row(tmp_path: Path,
                                                       count: int | float) -> None:
    # Was: two rows of 2**62 + 1 (or any count near int64's limit) summed to a negative
    # total without a word (Arrow's hash_sum wraps); 2**64 - 1 (a -1 written unsigned)
    # summed as 1.8e19 tokens.
    src = usage_rows(tmp_path, {0: {"input_tokens": count, "output_tokens": 1},
                                 1: {"input_tokens": count, "output_tokens": 2},
                                 2: {"input_tokens": 5, "output_tokens": 3}})
    snap = tmp_path / "snap"
    proc = graphkit("build", src, "--snapshot", snap, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows_rejected"] == 2
    rejects = read_rejects(snap)
    assert [(r["source"], r["row"], r["column"]) for r in rejects] == [
        (str(src), 1, "usage_input"), (str(src), 2, "usage_input")]
    assert "usage.input_tokens" in str(rejects[0]["reason"])
    assert "2^53" in str(rejects[0]["reason"])
    usage = graphkit("usage", "--snapshot", snap, "--json")
    assert usage.returncode == 0, usage.stderr
    totals = [json.loads(line)["total"] for line in usage.stdout.splitlines()
              if json.loads(line)["record"] == "usage"]
    assert all(0 <= t["input_tokens"] <= 5 for t in totals), totals


def test_the_largest_count_is_summed(tmp_path: Path) -> None:
    src = usage_rows(tmp_path, {0: {"input_tokens": 2**53 - 1}})
    proc = graphkit("build", src, "--snapshot", tmp_path / "snap", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["rows_rejected"] == 0, proc.stderr


def test_a_sum_that_would_wrap_int64_in_one_group_is_one_error(tmp_path: Path) -> None:
    # Each count is allowed (below 2^53), but 1,100 of them in one session pass 2^63:
    # Arrow's sum wrapped to a negative total without a word.
    (tmp_path / "c.yaml").write_text(FILES_CONTRACT)
    c = load_contract(str(tmp_path / "c.yaml"))
    rows = pa.table({"session_id": ["s"] * 1100, "n": [str(2**53 - 1)] * 1100,
                     "touched": pa.nulls(1100, pa.string())})
    with pytest.raises(GraphkitError, match="passes int64's range") as info:
        project(c, conform_table(c, rows, "t"))
    assert "'n'" in str(info.value)
    # The same counts over many sessions fit: each total is in range.
    spread = rows.set_column(0, "session_id", pa.array([f"s{i}" for i in range(1100)]))
    graph = project(c, conform_table(c, spread, "t")).graph
    assert set(graph.nodes["Session"].table.column("total").to_pylist()) == {2**53 - 1}


@pytest.mark.parametrize("key", ["session_id", "p"])
def test_a_sum_of_an_id_column_is_a_contract_error(tmp_path: Path, key: str) -> None:
    # Was: the contract loaded, and every row of the data was rejected as holding
    # "text that is no number": the contract's mistake reported as the data's.
    text = FILES_CONTRACT.replace("writes: {sum: w}, rows", f"writes: {{sum: {key}}}, rows")
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(ContractError) as info:
        load_contract(str(tmp_path / "c.yaml"))
    msg = str(info.value)
    assert msg.startswith(f"{tmp_path / 'c.yaml'}:21: edges[0].properties.writes sums "
                          f"column {key!r}"), msg
    assert "holds no counts" in msg


def test_a_sum_of_a_time_is_a_contract_error_through_the_cli(tmp_path: Path) -> None:
    text = FILES_CONTRACT.replace("n: {type: string}", "n: {type: timestamp}")
    (tmp_path / "c.yaml").write_text(text)
    proc = graphkit("build", tmp_path / "missing.parquet", "--contract", tmp_path / "c.yaml",
                    "--snapshot", tmp_path / "snap")
    one_line_error(proc, str(tmp_path / "c.yaml") + ":11", "'n'", "a time")


@pytest.mark.parametrize("value", ["-3", "1.5", "-0.5", "1e300"])
def test_a_negative_or_fractional_count_in_touched_files_rejects_its_row(
        tmp_path: Path, value: str) -> None:
    # Was: summed as given (`files` then showed -3 reads, or 1.5 writes as 1).
    from tests.helpers.rows import with_touched_files

    rows = [dict(r) for r in identity_cases() if r["session_id"]]
    rows[0]["touched_files"] = '[{"path": "/b", "reads": 1, "writes": 0}]'
    rows[2]["touched_files"] = '[{"path": "/a", "reads": 1, "writes": ' + value + "}]"
    src = tmp_path / "rows.parquet"
    pq.write_table(with_touched_files(rows), src)
    snap = tmp_path / "snap"
    proc = graphkit("build", src, "--snapshot", snap, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows_rejected"] == 1
    (reject,) = read_rejects(snap)
    assert (reject["source"], reject["row"], reject["column"]) == (str(src), 3,
                                                                   "touched_files")
    assert "touched_files → [].writes" in str(reject["reason"])
    files = graphkit("files", "--snapshot", snap, "--json")
    assert [json.loads(line)["path"] for line in files.stdout.splitlines()] == ["/b"]


def test_whole_counts_in_touched_files_are_summed(tmp_path: Path) -> None:
    # 2.0 and 0 are whole counts; only what is negative or has a fraction goes.
    doc = '[{"path": "/a", "writes": 2.0}, {"path": "/b", "writes": 0, "reads": 3}]'
    (tmp_path / "c.yaml").write_text(FILES_CONTRACT)
    c = load_contract(str(tmp_path / "c.yaml"))
    rows = pa.table({"session_id": ["s"], "n": ["1"], "touched": [doc]})
    graph = project(c, conform_table(c, rows, "t")).graph
    assert {r["p"]: r["writes"] for r in graph.nodes["F"].table.to_pylist()} == {
        "/a": 2, "/b": 0}


def test_a_price_that_makes_an_infinite_cost_is_one_line(tmp_path: Path) -> None:
    # Was: untested; a price of 1e308 times 1,000 tokens printed "$inf" on the table
    # and `Infinity` (no JSON) with --json. (Without --by, piped output has no cost.)
    src = usage_rows(tmp_path, {1: {"input_tokens": 1000, "output_tokens": 10}})
    assert graphkit("build", src, "--snapshot", tmp_path / "snap").returncode == 0
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": {"claude-sonnet-4-5": {"input": 1e308}}}))
    for fmt in (["--by", "model"], ["--by", "model", "--json"], ["--by", "agent-type", "--csv"]):
        proc = graphkit("usage", CLAUDE, "--snapshot", tmp_path / "snap",
                        "--prices", prices, *fmt)
        one_line_error(proc, str(prices), "claude-sonnet-4-5", "past what a number can hold")
    # A large price whose cost stays finite is priced.
    prices.write_text(json.dumps({"models": {"claude-sonnet-4-5": {"input": 1e300}}}))
    proc = graphkit("usage", CLAUDE, "--snapshot", tmp_path / "snap", "--prices",
                    prices, "--json", "--by", "model")
    assert proc.returncode == 0, proc.stderr
    assert "Infinity" not in proc.stdout and "1e+297" in proc.stdout


def test_costs_each_finite_whose_sum_is_not_are_one_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The session's and a subagent tree's totals add finite costs: their sum may not be.
    from graphkit.cli import usage as usage_cli
    from graphkit.queries.prices import Cost, PriceTable
    from graphkit.queries.usage import SessionUsage, ThreadUsage, Tokens

    table = PriceTable({"m": (1.5e308, 0.0, 0.0, 0.0)}, path="prices.json")
    one = Cost(usd=sys.float_info.max)
    assert table.cost("m", Tokens(1, 0, 0, 0)) == 1.5e302
    with pytest.raises(GraphkitError, match=r"prices\.json: the cost of model 'm' is past"):
        one.add(table, "m", Tokens(1, 0, 0, 0))
    # A subagent tree of two threads costing 1.5e308 each (a price table cannot reach
    # that per thread; the sum's guard is what is tested): each finite, the sum not.
    monkeypatch.setattr(usage_cli, "_thread_cost", lambda t, table: Cost(usd=1.5e308))
    threads = [ThreadUsage(t, t, p, "thread", None, d, Tokens())
               for t, p, d in (("a", None, 0), ("b", "a", 1))]
    alone = usage_cli._subtree_costs(SessionUsage("s", Tokens(), Tokens(), threads[1:]), table)
    assert [c.usd for c in alone] == [1.5e308]
    with pytest.raises(GraphkitError, match="the cost of a subagent tree is past"):
        usage_cli._subtree_costs(SessionUsage("s", Tokens(), Tokens(), threads), table)


@pytest.mark.parametrize("value", ["x", "2.5", "\x1b[2J"])
def test_junk_in_graphkit_parse_workers_is_one_line(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   value: str) -> None:
    # Was: ValueError traceback (int() of the variable) on every transcript build.
    monkeypatch.setenv("GRAPHKIT_PARSE_WORKERS", value)
    monkeypatch.setenv("GRAPHKIT_HOME", str(tmp_path / "home"))
    proc = graphkit("build", REPO / "tests" / "fixtures" / "shaped", "--snapshot",
                    tmp_path / "snap")
    line = one_line_error(proc, "GRAPHKIT_PARSE_WORKERS", "no whole number")
    assert "\x1b" not in line


EVIL_SESSION = CLAUDE + "\x1b[31mEVIL\x1b[0m\nX"
EVIL_AGENT = "agentA\x1b]0;pwned\x07\x1b[2J[link=https://evil.example]x[/link]"


@pytest.fixture(scope="module")
def evil_snapshot(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Rows whose ids, model and cwd hold terminal escapes, a newline and rich markup."""
    tmp = tmp_path_factory.mktemp("evil")
    rows = []
    for r in identity_cases_renamed(EVIL_SESSION, EVIL_AGENT):
        if r.get("model"):
            r["model"] = r["model"] + "\x1b[31mEVIL"
        if r.get("attributes"):
            attrs = json.loads(r["attributes"])
            attrs["usage"] = {"input_tokens": 3}
            attrs.setdefault("claude", {})["agent_type"] = "Ex\x1b]0;t\x07plore"
            r["attributes"] = json.dumps(attrs)
        rows.append(r)
    src = tmp / "rows.parquet"
    pq.write_table(table(rows), src)
    proc = graphkit("build", src, "--snapshot", tmp / "snap")
    assert proc.returncode == 0, proc.stderr
    return src, tmp / "snap"


def _no_escapes(text: str) -> None:
    for seq in ("\x1b]", "\x1b[2J", "\x1b[31mEVIL", "\x07"):
        assert seq not in text, (seq, text)
    assert "evil.example" not in text or "[link=" in text  # shown, never made a link


@pytest.mark.parametrize("terminal", [False, True])
def test_ids_holding_terminal_escapes_are_shown_never_obeyed(
        evil_snapshot: tuple[Path, Path], terminal: bool) -> None:
    # Was: piped, `tree`, `lineage`, `usage`, `files`, `check` wrote an id's OSC
    # sequences (set the window title, ring the bell) and `\x1b[2J` raw; on a terminal
    # click kept every escape, and rich took `[link=…]` in an agent id as markup; an
    # id's newline split `tree` and `lineage` lines in two.
    from tests.cli.test_progress import _graphkit

    src, snap = evil_snapshot
    good = snap.parent / "good"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", good).returncode == 0
    for args in (["sessions"], ["tree", EVIL_SESSION], ["lineage", EVIL_SESSION, EVIL_AGENT],
                 ["usage", EVIL_SESSION], ["usage", EVIL_SESSION, "--by", "model"],
                 ["usage", EVIL_SESSION, "--by", "agent-type"], ["files"]):
        out, err, code = _graphkit([*args, "--snapshot", str(snap)], stderr_tty=False,
                                   stdout_tty=terminal)
        assert code == 0, (args, err)
        _no_escapes(out)
        if args[0] in ("tree", "lineage"):
            assert "EVIL\\x1b[0m\\nX" in out, out
    out, err, code = _graphkit(["diff", str(good), str(snap)], stderr_tty=False,
                               stdout_tty=terminal)
    assert code == 0, err
    _no_escapes(out)
    out, err, code = _graphkit(["check", str(src)], stderr_tty=False, stdout_tty=terminal)
    _no_escapes(out)


def test_an_empty_rejects_path_is_one_line(tmp_path: Path) -> None:
    # Was: ValueError traceback (`--rejects ""`: Path(".") has no file name).
    for given in ("", "."):
        proc = graphkit("build", REPO / "samples" / "rows", "--snapshot", tmp_path / "snap",
                        "--rejects", given)
        one_line_error(proc, "the rejects path is a folder")
    assert not (tmp_path / "snap").exists()


def test_an_error_naming_a_path_with_a_newline_stays_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Was: GRAPHKIT_HOME="\n": "the snapshot index (\n/index.json) has no build…" on two
    # lines (UserErrors raised by the CLI itself were not escaped as GraphkitErrors are).
    monkeypatch.setenv("GRAPHKIT_HOME", "\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    proc = graphkit("sessions")
    one_line_error(proc, "\\n/index.json")


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
    # name at least one file or folder" once empty files were read as none. Round seven
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


def test_a_folder_export_under_a_file_is_one_line(tmp_path: Path) -> None:
    # Was: FileExistsError traceback (neo4j-csv, neo4j-parquet: mkdir of the parent).
    snap = tmp_path / "snap"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", snap).returncode == 0
    (tmp_path / "file").write_text("x")
    for fmt in ("neo4j-csv", "neo4j-parquet"):
        proc = graphkit("export", snap, "--format", fmt, tmp_path / "file" / "out")
        one_line_error(proc, str(tmp_path / "file" / "out"), "cannot write")


def test_a_shared_nodes_total_that_would_wrap_across_partitions_is_one_error(
        tmp_path: Path) -> None:
    # Each partition's File total fits int64; merged (engine/merge.py), they wrapped to
    # a negative count without a word. The in-memory build refuses the same rows.
    from graphkit.builds.partitioned import build_local
    from graphkit.builds.partitioned.inputs import partition_of
    from tests.helpers.rows import row, with_touched_files

    doc = json.dumps([{"path": "/a", "reads": 2**53 - 1}])
    rows = [dict(row(f"s{s:02d}", message_id=f"m{s}-{i}"), touched_files=doc)
            for s in range(12) for i in range(100)]  # 1,200 reads of 2^53 - 1 of /a
    assert len(set(partition_of(pa.array([f"s{s:02d}" for s in range(12)]), 3))) > 1
    src = tmp_path / "rows" / "part-0.parquet"
    src.parent.mkdir()
    pq.write_table(with_touched_files(rows), src)
    for n in (1, 3):
        with pytest.raises(GraphkitError, match="passes int64's range"):
            build_local([src.parent], tmp_path / f"p{n}", partitions=n, fingerprints=False)


def test_no_counts_reads_integers_of_every_width() -> None:
    # A uint64 count of 2^64 - 1 compared with an int64 bound was an ArrowInvalid.
    from graphkit.projection.groups import LARGEST_COUNT, no_counts

    big = no_counts(pa.array([2**64 - 1, 5], pa.uint64()), whole=True)
    assert {k: m.to_pylist() for k, m in big.items()} == {"large": [True, False]}
    edge = no_counts(pa.array([LARGEST_COUNT, LARGEST_COUNT + 1, -3], pa.int64()), whole=False)
    assert {k: m.to_pylist() for k, m in edge.items()} == {"large": [False, True, False]}
    assert no_counts(pa.array([1, 2], pa.int8()), whole=True) == {}
