"""Every command through click's test runner, including the bad-input paths."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.helpers.cli import Ran, graphkit
from tests.helpers.rows import CLAUDE, CODEX_CHILD, CODEX_ROOT, identity_cases, table, write_parquet


@pytest.fixture()
def built(tmp_path: Path) -> Path:
    src = write_parquet(identity_cases(), tmp_path / "rows.parquet")
    snap = tmp_path / "snap"
    r = graphkit("build", src, "--snapshot", snap)
    assert r.returncode == 0, r.output
    return snap


def test_build_summary_and_rejects(tmp_path: Path, built: Path) -> None:
    src = tmp_path / "rows.parquet"
    r = graphkit("build", src, "--snapshot", built, "--json")
    summary = json.loads(r.output)
    assert summary["rows_read"] == 8
    assert summary["rows_rejected"] == 1
    assert summary["duplicate_rows"] == 1
    assert summary["nodes"]["Thread"] == 5
    assert summary["edges"]["PARENT_THREAD"] == 3
    rejects = built.with_name("snap.rejects.jsonl")
    assert summary["rejects_file"] == str(rejects)
    (rec,) = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert rec["row"] == 8 and rec["column"] == "session_id" and rec["source"] == str(src)
    assert rec["values"]["message_id"] == "orphan"
    text = graphkit("build", src, "--snapshot", built).output
    assert "rejected 1" in text and "PARENT_THREAD" in text and "rejected rows written" in text


def test_build_custom_rejects_path_and_message_granularity(tmp_path: Path, built: Path) -> None:
    out = tmp_path / "bad-rows.jsonl"
    r = graphkit("build", tmp_path / "rows.parquet", "--snapshot", tmp_path / "m",
               "--granularity", "message", "--rejects", out, "--json")
    assert r.returncode == 0
    assert json.loads(r.output)["nodes"]["Message"] == 6
    assert out.exists()


def json_lines(r: Ran) -> list[dict[str, Any]]:
    """--json output: every line one object naming its record kind first."""
    assert r.returncode == 0, r.output
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert all(next(iter(x)) == "record" for x in lines)
    return lines


def csv_rows(r: Ran) -> list[dict[str, str]]:
    assert r.returncode == 0, r.output
    return list(csv.DictReader(io.StringIO(r.stdout)))


@pytest.mark.slow
def test_sessions(built: Path) -> None:
    got = json_lines(graphkit("sessions", "--snapshot", built, "--json"))
    assert {s["record"] for s in got} == {"session"}
    by_id = {s["session_id"]: s for s in got}
    assert {k: by_id[CLAUDE][k] for k in ("threads", "agents", "messages")} == {
        "threads": 3, "agents": 2, "messages": 4}
    assert by_id[CODEX_ROOT]["threads"] == 2
    assert CLAUDE in graphkit("sessions", "--snapshot", built).output
    # CSV: the JSON's fields (the token total for the counts per kind), one row per
    # session; --limit keeps the most recent.
    rows = csv_rows(graphkit("sessions", "--snapshot", built, "--csv"))
    assert [r["session_id"] for r in rows] == [s["session_id"] for s in got]
    for s, r in zip(got, rows, strict=True):
        for k, v in r.items():
            want = s[k]
            assert v == ("" if want is None else json.dumps(want) if isinstance(want, list)
                         else str(want)), k
    last = json_lines(graphkit("sessions", "--snapshot", built, "--json", "--limit", "1"))
    assert last == got[-1:]
    # Piped (as here) without --json/--csv: TSV with a header line.
    tsv = graphkit("sessions", "--snapshot", built).stdout.splitlines()
    assert tsv[0].split("\t")[0] == "session_id" and len(tsv) == len(got) + 1


def test_json_and_csv_together_are_refused(built: Path) -> None:
    for cmd in (["sessions"], ["lineage", "agentA"], ["tree", CLAUDE]):
        r = graphkit(*cmd, "--snapshot", built, "--json", "--csv")
        assert r.returncode == 2 and "not both" in r.output


def test_lineage_json_one_object_per_line(built: Path) -> None:
    r = graphkit("lineage", "agentB", CODEX_CHILD, CLAUDE, "--snapshot", built, "--json")
    lines = json_lines(r)
    assert [x["record"] for x in lines] == ["lineage"] * 3
    assert [x["id"] for x in lines] == ["agentB", CODEX_CHILD, CLAUDE]
    assert lines[0]["ancestors"][-1] == {"type": "Session", "id": CLAUDE}
    assert lines[1]["ancestors"] == [{"type": "Thread", "id": CODEX_ROOT},
                                     {"type": "Session", "id": CODEX_ROOT}]
    assert lines[2]["descendants"] == [{"type": "Thread", "id": "agentA"},
                                       {"type": "Thread", "id": "agentB"}]
    assert "ancestors:" in graphkit("lineage", "agentA", "--snapshot", built).output
    # CSV in long form: one row per ancestor/descendant, numbered from the nearest.
    rows = csv_rows(graphkit("lineage", "agentB", CODEX_CHILD, CLAUDE, "--snapshot", built,
                           "--csv"))
    for line in lines:
        for relation in ("ancestor", "descendant"):
            mine = [r for r in rows if r["id"] == line["id"] and r["relation"] == relation]
            assert [{"type": r["type"], "id": r["node"]} for r in mine] == line[relation + "s"]
            assert [int(r["step"]) for r in mine] == list(range(1, len(mine) + 1))


def test_lineage_unknown_id_exits_nonzero_without_traceback(built: Path) -> None:
    r = graphkit("lineage", "ghost", "--snapshot", built)
    assert r.returncode == 2
    assert "no thread, agent or session has the id 'ghost'" in r.output
    assert "Traceback" not in r.output


def test_tree(built: Path) -> None:
    r = graphkit("tree", CLAUDE, "--snapshot", built)
    assert r.returncode == 0
    out = r.output
    assert out.index("agentA") < out.index("agentB")
    assert "Explore" in out
    nodes = json_lines(graphkit("tree", CLAUDE, "--snapshot", built, "--json"))
    assert [(n["type"], n["id"], n["depth"], n["parent_id"]) for n in nodes] == [
        ("Session", CLAUDE, 0, None), ("Thread", CLAUDE, 1, CLAUDE),
        ("Thread", "agentA", 2, CLAUDE), ("Thread", "agentB", 3, "agentA")]
    assert nodes[2]["agent_type"] == "Explore" and nodes[2]["kind"] == "subagent"
    assert nodes[1]["parent_type"] == "Session" and nodes[2]["parent_type"] == "Thread"
    # The plain (piped) drawing lists the same nodes in the same order.
    plain = graphkit("tree", CLAUDE, "--snapshot", built).stdout.splitlines()
    assert [line.lstrip("│├└─ ").split(" ")[0] for line in plain[1:]] == [
        n["id"] for n in nodes[1:]]
    rows = csv_rows(graphkit("tree", CLAUDE, "--snapshot", built, "--csv"))
    assert [(r["id"], int(r["depth"]), r["parent_id"]) for r in rows] == [
        (n["id"], n["depth"], n["parent_id"] or "") for n in nodes]


def test_check_finds_identity_problems(tmp_path: Path) -> None:
    rows = identity_cases()
    rows.append(dict(rows[2], session_id="other-session", message_id="x", part_id="x:0"))
    rows.append(dict(rows[0], session_id="s9", conversation_id="t9", parent_thread_id="ghost",
                     message_id="y", part_id="y:0"))
    rows.append(dict(rows[0], schema_version=5, message_id="z", part_id="z:0"))
    src = write_parquet(rows, tmp_path / "rows.parquet")
    r = graphkit("check", src, "--json")
    assert r.returncode == 1
    found = {f["check"]: f for f in json.loads(r.output)}
    assert found["null-session"]["count"] == 1
    assert found["null-session"]["examples"] == [{"file": str(src), "row": 8}]
    assert found["agent-in-two-sessions"]["examples"][0]["agent_id"] == "agentA"
    assert found["missing-parent"]["examples"] == [{"parent_thread_id": "ghost"}]
    assert found["pre-split-schema"]["count"] == 1


def test_check_finds_cycles(tmp_path: Path) -> None:
    from tests.helpers.rows import row

    src = write_parquet([row("s", conversation_id="a", parent_thread_id="b", message_id="1"),
                         row("s", conversation_id="b", parent_thread_id="a", message_id="2")],
                        tmp_path / "c.parquet")
    r = graphkit("check", src, "--json")
    assert r.returncode == 1
    (cycle,) = [f for f in json.loads(r.output) if f["check"] == "cycle"]
    assert sorted(cycle["examples"][0]["threads"]) == ["a", "b"]


def test_check_clean(sample_rows: Path) -> None:
    r = graphkit("check", sample_rows)
    assert r.returncode == 0 and r.output.startswith("ok:")


def test_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.parquet"
    pq.write_table(table(identity_cases()).drop_columns(["session_id"]), bad)
    for args in (["build", str(bad), "--snapshot", str(tmp_path / "s")],
                 ["build", str(tmp_path / "missing"), "--snapshot", str(tmp_path / "s")],
                 ["sessions", "--snapshot", str(tmp_path)],
                 ["build", str(bad), "--snapshot", str(tmp_path / "s"), "--contract", "nope"],
                 ["build", str(bad), "--snapshot", str(tmp_path / "s"), "--since", "someday"]):
        r = graphkit(*args)
        assert r.returncode == 2, (args, r.output)
        assert "Traceback" not in r.output
        assert len(r.output.strip().splitlines()) == 1, r.output
    r = graphkit("build", bad, "--snapshot", tmp_path / "s")
    assert str(bad) in r.output and "session_id" in r.output


def test_build_since_filters_rows(tmp_path: Path) -> None:
    src = write_parquet(identity_cases(), tmp_path / "rows.parquet")
    r = graphkit("build", src, "--snapshot", tmp_path / "s", "--since", "2026-11-20T09:00:05",
               "--json")
    assert json.loads(r.output)["rows_read"] == 3


@pytest.mark.slow
def test_hash_inputs_puts_sha256_in_the_manifest(tmp_path: Path, built: Path) -> None:
    import hashlib

    src = tmp_path / "rows.parquet"
    plain = json.loads((built / "manifest.json").read_text())["inputs"]
    assert [f["path"] for f in plain] == [str(src)] and "sha256" not in plain[0]
    r = graphkit("build", src, "--snapshot", tmp_path / "hashed", "--hash-inputs")
    assert r.returncode == 0, r.output
    hashed = json.loads((tmp_path / "hashed" / "manifest.json").read_text())["inputs"]
    assert hashed[0]["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    r = graphkit("build", src, "--snapshot", tmp_path / "p", "--partitions", "2", "--hash-inputs")
    assert r.returncode == 2 and "--hash-inputs works with the default engine only" in r.output
