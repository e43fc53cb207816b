"""HypAware's four capture paths of one Claude Code session, alone and beside the session's
transcripts (``tests/fixtures/hypaware-capture-paths``, whose ``truth.json`` says the tree).

The acceptance table of issue 30: proxy and backfill rows give the 4-subagent, depth-2 tree;
OTEL rows name no instance and no spawn link, which is said, never merged unsaid; OTEL rows
backfilled later give the tree with each message once; the transcripts beside any of them
give the transcripts' tree with the rows' usage in it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from graphkit.builds.run import build, check
from graphkit.cli.app import cli
from graphkit.sources.captures import OTEL_CHECK, OTEL_KIND
from tests.helpers.transcripts import fixtures

HERE = fixtures() / "hypaware-capture-paths"
ROWS = HERE / "rows"
PROJECTS = HERE / "home" / ".claude" / "projects"
TRUTH = json.loads((HERE / "truth.json").read_text())
SESSION = next(iter(TRUTH["sessions"]))
PATHS = ("proxy", "otel", "backfill", "otel-then-backfill")
# Each subagent's messages, as the transcripts and the proxy/backfill rows name them.
MESSAGES = {"a1f0c0ffee0000001": {"A-u1", "A-a1", "A-u2", "A-a2"},
            "a2f0c0ffee0000002": {"B-u1", "B-a1", "B-u2", "B-a2"},
            "a3f0c0ffee0000003": {"G-u1", "G-a1", "G-u2", "G-a2"},
            "a4f0c0ffee0000004": {"N-u1", "N-a1", "N-u2", "N-a2"}}


def _graph(*sources: Path, granularity: str = "thread") -> Any:
    return build(list(sources), fingerprints=False, granularity=granularity).graph


def _threads(graph: Any) -> dict[str, dict[str, Any]]:
    t = graph.nodes["Thread"].table
    return {r["thread_id"]: r for r in t.to_pylist()}


def _parents(graph: Any) -> dict[str, str]:
    t = graph.nodes["Thread"].table
    name = dict(zip(t.column("id").to_pylist(), t.column("thread_id").to_pylist(),
                    strict=True))
    e = graph.edges["PARENT_THREAD"].table
    pairs = [(name[s], name[d]) for s, d in zip(e.column("source").to_pylist(),
                                                 e.column("target").to_pylist(), strict=True)]
    assert len(pairs) == len(dict(pairs)), f"a thread with two parents: {pairs}"
    return dict(pairs)


def _message_ids(graph: Any) -> dict[str, set[str]]:
    t = graph.nodes["Message"].table
    key = "message_id" if "message_id" in t.column_names else "id"
    out: dict[str, set[str]] = {}
    for thread, mid in zip(t.column("thread_id").to_pylist(), t.column(key).to_pylist(),
                           strict=True):
        out.setdefault(thread, set()).add(mid)
    return out


def _tokens(graph: Any) -> dict[str, tuple[Any, Any]]:
    return {k: (v["input_tokens"], v["output_tokens"]) for k, v in _threads(graph).items()}


# -- the acceptance table --------------------------------------------------------------
@pytest.mark.parametrize("path", ["proxy", "backfill", "otel-then-backfill"])
def test_rows_that_name_instances_give_the_true_tree(path: str) -> None:
    graph = _graph(ROWS / f"{path}.parquet")
    threads = _threads(graph)
    assert len(threads) == TRUTH["sessions"][SESSION]["threads"]
    assert _parents(graph) == TRUTH["parents"]
    assert {k: v["kind"] for k, v in threads.items()} == {
        SESSION: "main", **dict.fromkeys(TRUTH["parents"], "subagent")}
    # each message once: the main thread's nine lines, four per subagent, no OTEL copy
    assert {k: v["messages"] for k, v in threads.items()} == {
        SESSION: 9, **dict.fromkeys(TRUTH["parents"], 4)}
    messages = _message_ids(_graph(ROWS / f"{path}.parquet", granularity="message"))
    for agent, mids in MESSAGES.items():
        assert messages[agent] == mids, agent


def test_otel_then_backfill_places_each_otel_answer_in_its_own_run() -> None:
    """The final answers (A-a2, B-a2, N-a2 of three Explore runs, G-a2 of the
    general-purpose one) exist only as OTEL rows, under the type's name: each goes to the
    one run waiting for an answer when it came, with its usage."""
    result = build([ROWS / "otel-then-backfill.parquet"], fingerprints=False)
    graph = result.graph
    # 39 rows read: 25 used, 14 OTEL copies merged into their backfill twins
    assert {k: result.summary()[k] for k in ("rows_read", "rows_used", "duplicate_rows")} \
        == {"rows_read": 39, "rows_used": 25, "duplicate_rows": 14}
    # the proxy rows carry the same usage, each response once
    assert _tokens(graph) == _tokens(_graph(ROWS / "proxy.parquet"))
    assert set(_tokens(graph).values()) == {(200, 40)}


def test_otel_rows_alone_are_never_merged_unsaid() -> None:
    result = build([ROWS / "otel.parquet"], fingerprints=False)
    threads = _threads(result.graph)
    # no instance id and no spawn link in the rows: the type's thread, marked, no parent
    assert {k: (v["kind"], v["messages"]) for k, v in threads.items()} == {
        SESSION: ("main", 9), "Explore": (OTEL_KIND, 9), "general-purpose": (OTEL_KIND, 3)}
    assert _parents(result.graph) == {}
    agents = {r["agent_id"]: r["agent_type"]
              for r in result.graph.nodes["Agent"].table.to_pylist()}
    assert agents == {"Explore": "Explore", "general-purpose": "general-purpose"}
    summary = result.summary()["otel_capture"]
    assert summary["sessions"] == 1 and summary["unlinked_sessions"] == 1
    assert summary["unlinked_rows"] == 12 and "hyp backfill claude" in summary["what_to_do"]
    found = [f for f in result.sources.findings if f["check"] == OTEL_CHECK]
    assert len(found) == 1 and found[0]["count"] == 1
    assert {e["agent_type"]: e["rows"] for e in found[0]["examples"]} == {
        "Explore": 9, "general-purpose": 3}


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS)
def test_transcripts_beside_the_rows_give_one_session(path: str) -> None:
    alone = _graph(PROJECTS)
    both = _graph(PROJECTS, ROWS / f"{path}.parquet")
    assert _parents(both) == _parents(alone) == TRUTH["parents"]
    assert {k: v["messages"] for k, v in _threads(both).items()} == {
        k: v["messages"] for k, v in _threads(alone).items()}
    agents = {r["agent_id"]: r["agent_type"] for r in both.nodes["Agent"].table.to_pylist()}
    assert agents == TRUTH["types"]
    # the rows' data merged in: their usage (the transcripts hold none), their repo_root
    tokens = _tokens(both)
    if path == "backfill":
        assert set(tokens.values()) == {(None, None)}
    else:
        assert set(tokens.values()) == {(200, 40)}
    assert both.nodes["Workspace"].table.column("repo_root").to_pylist() == ["/home/dev/repo"]
    assert alone.nodes["Workspace"].table.column("repo_root").to_pylist() == [None]
    messages = _message_ids(_graph(PROJECTS, ROWS / f"{path}.parquet", granularity="message"))
    assert messages == _message_ids(_graph(PROJECTS, granularity="message"))


def test_the_order_of_the_sources_changes_nothing() -> None:
    one = _graph(ROWS / "otel.parquet", ROWS / "backfill.parquet", PROJECTS)
    other = _graph(PROJECTS, ROWS / "backfill.parquet", ROWS / "otel.parquet")
    assert _threads(one) == _threads(other)
    assert _parents(one) == TRUTH["parents"]


@pytest.mark.slow
def test_otel_and_backfill_rows_in_two_files_are_one_session() -> None:
    """A user whose backfill went to another file than the live capture: the copies meet
    across files, and an OTEL copy of a backfilled message counts once."""
    graph = _graph(ROWS / "otel.parquet", ROWS / "backfill.parquet")
    assert _parents(graph) == TRUTH["parents"]
    assert {k: v["messages"] for k, v in _threads(graph).items()} == {
        SESSION: 9, **dict.fromkeys(TRUTH["parents"], 4)}
    assert set(_tokens(graph).values()) == {(200, 40)}


# -- saying it: check, lineage, tree ------------------------------------------------------
@pytest.mark.slow
def test_check_names_otel_capture(tmp_path: Path) -> None:
    n, findings = check([ROWS / "otel.parquet"])
    assert n == 21
    assert [f.check for f in findings if f.check == OTEL_CHECK] == [OTEL_CHECK]
    r = CliRunner().invoke(cli, ["check", str(ROWS / "otel.parquet"), "--json"])
    assert r.exit_code == 1, r.output
    got = [f for f in json.loads(r.stdout) if f["check"] == OTEL_CHECK]
    assert got and "no spawn link" in got[0]["message"] and "projects" in got[0]["message"]
    # nothing to say once the copies met
    _, findings = check([ROWS / "otel.parquet", PROJECTS])
    assert OTEL_CHECK not in {f.check for f in findings}


def test_lineage_and_tree_say_what_an_otel_thread_is(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    runner = CliRunner()
    r = runner.invoke(cli, ["build", str(ROWS / "otel.parquet"), "--snapshot", str(snap)])
    assert r.exit_code == 0, r.output
    assert "OTEL capture: 12 subagent row(s) in 1 session(s)" in r.stdout
    r = runner.invoke(cli, ["build", str(ROWS / "otel.parquet"), "--snapshot",
                            str(tmp_path / "again"), "--json", "-q"])
    assert json.loads(r.stdout)["otel_capture"]["unlinked_sessions"] == 1
    r = runner.invoke(cli, ["lineage", "Explore", "--snapshot", str(snap), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["ancestors"] == [{"type": "Session", "id": SESSION}]
    assert "no spawn link" in r.stderr and "1 session(s)" in r.stderr
    r = runner.invoke(cli, ["tree", SESSION, "--snapshot", str(snap)])
    assert "Explore (otel-agent-type, Explore, 9 messages)" in r.stdout
    assert r.stderr.count("note: thread") == 2
    r = runner.invoke(cli, ["lineage", "a1f0c0ffee0000001", "--snapshot", str(snap)])
    assert r.exit_code != 0  # OTEL rows name no instance: there is none to find


# -- other shapes: held-out and hostile ---------------------------------------------------
def _rewritten(tmp_path: Path, name: str, change: Any) -> Path:
    table = pq.read_table(ROWS / "otel.parquet")
    rows = [change(r) for r in table.to_pylist()]
    out = tmp_path / name
    pq.write_table(pa.Table.from_pylist([r for r in rows if r is not None],
                                        schema=table.schema), out)
    return out


def test_otel_rows_told_by_query_source_alone(tmp_path: Path) -> None:
    """Rows whose gateway label is gone (a writer that keeps no ``gateway.source``) are
    told by ``attributes.claude.query_source``, which only the OTEL path stamps: the
    subagent rows that carry one make their type's thread an OTEL one."""
    def strip(r: dict[str, Any]) -> dict[str, Any]:
        a = json.loads(r["attributes"])
        a.pop("gateway", None)
        return {**r, "attributes": json.dumps(a)}

    graph = _graph(_rewritten(tmp_path, "otel.parquet", strip))
    kinds = {k: v["kind"] for k, v in _threads(graph).items()}
    assert kinds["Explore"] == kinds["general-purpose"] == OTEL_KIND


@pytest.mark.slow
def test_json_lines_rows_with_object_attributes(tmp_path: Path) -> None:
    """JSON Lines rows whose attributes are objects (read as structs), beside the
    transcripts: reconciled as the Parquet rows are."""
    table = pq.read_table(ROWS / "otel.parquet")
    out = tmp_path / "otel.jsonl"
    with out.open("w") as f:
        for r in table.to_pylist():
            r["attributes"] = json.loads(r["attributes"])
            f.write(json.dumps(r, default=str) + "\n")
    alone = _graph(out)
    assert {v["kind"] for v in _threads(alone).values()} == {"main", OTEL_KIND}
    both = _graph(out, PROJECTS)
    assert _parents(both) == TRUTH["parents"]
    assert set(_tokens(both).values()) == {(200, 40)}


@pytest.mark.parametrize("attributes", ["not json", "[1, 2]", "", None, '{"gateway": 7}'])
def test_unreadable_attributes_are_rows_like_any_other(tmp_path: Path,
                                                       attributes: str | None) -> None:
    """A row whose attributes are no JSON object is no OTEL row: kept, no traceback."""
    def damage(r: dict[str, Any]) -> dict[str, Any]:
        return {**r, "attributes": attributes} if r["message_id"] == "A-a2" else r

    result = build([_rewritten(tmp_path, "damaged.parquet", damage), PROJECTS],
                   fingerprints=False)
    assert _parents(result.graph) == TRUTH["parents"]
    summary = result.summary()
    # every row read is used or a copy merged into its twin
    assert summary["rows_rejected"] == 0
    assert summary["rows_used"] + summary["duplicate_rows"] == summary["rows_read"]


def test_otel_rows_of_two_sessions_are_counted_apart(tmp_path: Path) -> None:
    def other(r: dict[str, Any]) -> dict[str, Any]:
        return {**r, "session_id": "second-session", "message_id": r["message_id"] + "-2",
                "part_id": r["part_id"] + "-2"}

    second = _rewritten(tmp_path, "second.parquet", other)
    result = build([ROWS / "otel.parquet", second], fingerprints=False)
    assert result.summary()["otel_capture"]["unlinked_sessions"] == 2
    # the transcripts link their own session; the other stays said
    result = build([ROWS / "otel.parquet", second, PROJECTS], fingerprints=False)
    capture = result.summary()["otel_capture"]
    assert (capture["sessions"], capture["unlinked_sessions"]) == (2, 1)
    assert _parents(result.graph) == TRUTH["parents"]


def test_rows_without_the_identity_columns_are_left_as_read(tmp_path: Path) -> None:
    """A file lacking ``tool_call_id`` (another writer's export) cannot be reconciled:
    it is read as before, no traceback."""
    table = pq.read_table(ROWS / "otel.parquet").drop_columns(["tool_call_id"])
    out = tmp_path / "narrow.parquet"
    pq.write_table(table, out)
    graph = _graph(out)
    assert {v["kind"] for v in _threads(graph).values()} == {"main", "subagent"}


def test_hypaware_cache_beside_its_own_transcripts(tmp_path: Path) -> None:
    """The cache HypAware's backfill wrote from ``home/`` (another fixture), built with
    those transcripts: the transcripts' graph, each message once."""
    cache = fixtures() / "hypaware-cache"
    home = cache / "home" / ".claude" / "projects"
    alone = _graph(home)
    both = _graph(cache / "cache", home)
    claude = {k: v for k, v in _threads(both).items() if v["conversation_id"] is None}
    assert {k: v["messages"] for k, v in claude.items()} == {
        k: v["messages"] for k, v in _threads(alone).items()}
    assert _parents(alone).items() <= _parents(both).items()


def test_a_copy_of_the_fixture_elsewhere_reads_the_same(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(HERE / "home", home)
    graph = _graph(home / ".claude" / "projects", ROWS / "otel.parquet")
    assert _parents(graph) == TRUTH["parents"]


def test_rows_written_by_graphkit_rows_hold_one_copy(tmp_path: Path) -> None:
    """``graphkit rows`` of the OTEL rows and the transcripts writes the session once,
    as a build reads it: a build of those rows gives the same tree."""
    out = tmp_path / "rows.parquet"
    r = CliRunner().invoke(cli, ["rows", str(ROWS / "otel.parquet"), str(PROJECTS),
                                 "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert pq.read_metadata(out).num_rows == 25  # the transcripts' rows, nothing twice
    assert _parents(_graph(out)) == TRUTH["parents"]
