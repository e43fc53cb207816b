"""The partitioned local build writes the in-memory build's snapshot, byte for byte,
whatever the number of partitions."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphkit.builds.partitioned import PartitionError, build_local
from graphkit.builds.partitioned.inputs import partition_of
from graphkit.contract.loader import load_contract
from graphkit.core.errors import ContractError, GraphkitError
from tests.helpers.cli import graphkit
from tests.helpers.rows import (
    T0,
    identity_cases,
    row,
    write_parquet,
)
from tests.helpers.same_build import (
    assert_same_snapshot,
    continuation_rows,
    generated_rows,
    reference,
    same_summary,
)

PARTITIONS = (1, 3, 7)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated_rows(tmp_path_factory.mktemp("gen") / "rows")


@pytest.mark.slow
@pytest.mark.parametrize("granularity", ["thread", "message"])
def test_generated_rows_any_partition_count(generated: Path, tmp_path: Path,
                                            granularity: str) -> None:
    summary = reference([generated], tmp_path / "ref", granularity=granularity)
    assert summary["nodes"]["Workspace"] > 1 and summary["duplicate_rows"] > 0
    for n in PARTITIONS:
        r = build_local([generated], tmp_path / f"p{n}", partitions=n,
                        granularity=granularity, fingerprints=False)
        assert r.summary["engine"]["partitions"] == n
        assert same_summary(r.summary, summary), n
        assert_same_snapshot(tmp_path / "ref", tmp_path / f"p{n}")


@pytest.mark.slow
def test_hypaware_cache_fixture(fixtures: Path, tmp_path: Path) -> None:
    cache = fixtures / "hypaware-cache" / "cache"
    summary = reference([cache], tmp_path / "ref")
    for n in PARTITIONS:
        r = build_local([cache], tmp_path / f"p{n}", partitions=n, fingerprints=False)
        assert same_summary(r.summary, summary)
        assert_same_snapshot(tmp_path / "ref", tmp_path / f"p{n}")


def _crossing(snapshot: Path, etype: str, n: int) -> int:
    """How many ``etype`` edges (Session to Session) of a snapshot join two sessions
    of different partitions at ``n`` partitions."""
    sessions = pq.read_table(snapshot / "nodes" / "Session.parquet", columns=["id", "session_id"])
    edges = pq.read_table(snapshot / "edges" / f"{etype}.parquet")
    ids = dict(zip(sessions.column("id").to_pylist(), sessions.column("session_id").to_pylist(),
                   strict=True))
    src = pa.array([ids[i] for i in edges.column("source").to_pylist()])
    dst = pa.array([ids[i] for i in edges.column("target").to_pylist()])
    return int((partition_of(src, n) != partition_of(dst, n)).sum())


@pytest.mark.slow
def test_transcripts_and_rows_together_with_content(fixtures: Path, sample_rows: Path,
                                                   tmp_path: Path) -> None:
    sources = [fixtures / "hypaware-cache" / "home" / ".claude" / "projects", sample_rows]
    summary = reference(sources, tmp_path / "ref", include_content=True,
                        cache_dir=tmp_path / "cache")
    # The sample's two continuations (a resume and a fork) tie sessions that fall in
    # different partitions: the merge finds their ends among all partitions' nodes.
    assert summary["edges"]["CONTINUES"] == 2
    assert _crossing(tmp_path / "ref", "CONTINUES", 3) == 2
    for n in (1, 2, 3, None):
        out = tmp_path / f"p{n or 'auto'}"
        r = build_local(sources, out, partitions=n, include_content=True,
                        cache_dir=tmp_path / "cache", fingerprints=False)
        assert r.summary["engine"]["partitions"] == (n or 1)
        assert same_summary(r.summary, summary), n
        assert_same_snapshot(tmp_path / "ref", out)


@pytest.fixture(scope="module")
def continuations(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows, _pairs = continuation_rows()
    return write_parquet(rows, tmp_path_factory.mktemp("cont") / "rows.parquet")


@pytest.mark.slow
@pytest.mark.parametrize("granularity", ["thread", "message"])
def test_continuations_across_partitions(continuations: Path, tmp_path: Path,
                                         granularity: str) -> None:
    # Sessions continuing sessions that fall in other partitions, Codex child threads
    # whose parent is another session's, and what the in-memory build drops: every
    # partition count gives its edges, its drop counts and its bytes.
    summary = reference([continuations], tmp_path / "ref", granularity=granularity)
    _rows, pairs = continuation_rows()
    assert summary["edges"]["CONTINUES"] == len(set(pairs)) > 50
    assert summary["dropped_edges"]["CONTINUES"]["missing_target"] > 0
    assert summary["dropped_edges"]["CONTINUES"]["self_loop"] > 0
    assert summary["dropped_edges"]["PARENT_THREAD"]["missing_target"] > 0
    for n in (2, 3, 7):
        assert _crossing(tmp_path / "ref", "CONTINUES", n) > len(pairs) // 3
    for n in (1, 2, 3, 7, None):
        out = tmp_path / f"p{n or 'auto'}"
        r = build_local([continuations], out, partitions=n, granularity=granularity,
                        fingerprints=False)
        assert same_summary(r.summary, summary), n
        assert_same_snapshot(tmp_path / "ref", out)


@pytest.mark.slow
def test_an_end_only_other_partitions_hold_is_found_and_counted(tmp_path: Path) -> None:
    # A contract whose Tool nodes come from tool calls only, with edges from a Tool
    # to each session naming it and from a Tool to itself: a partition whose rows
    # name a tool only in results holds neither end; the merge finds the tool among
    # other partitions' nodes (or counts missing_source, or a self_loop, as the
    # in-memory build does).
    text = load_contract().path.read_text().replace(
        """    key: [tool_name]
    where: {not_null: [tool_name]}""", """    key: [tool_name]
    where: {not_null: [tool_name], equals: {part_type: tool_call}}""")
    text += """
  - type: NAMED_IN
    from: {type: Tool, key: [tool_name]}
    to: {type: Session, key: [session_id]}
    properties:
      first_named: {first: part_type}

  - type: SAME_TOOL
    from: {type: Tool, key: [tool_name]}
    to: {type: Tool, key: [tool_name]}
"""
    contract = tmp_path / "c.yaml"
    contract.write_text(text)
    rows = []
    for s in range(16):
        sid = f"sess-{s:02d}"
        # Sessions 0-3 call tool-0..3; the others only name one in a result, and
        # sessions 12-15 a tool no one calls.
        name = f"tool-{s % 4}" if s < 12 else "ghost"
        rows.append(row(sid, message_id=f"{sid}-a", part_type="tool_result", tool_name=name))
        if s < 4:
            rows.append(row(sid, message_id=f"{sid}-b", part_type="tool_call", tool_name=name,
                            tool_call_id=f"c{s}"))
    src = write_parquet(rows, tmp_path / "rows" / "part-0.parquet")
    summary = reference([src.parent], tmp_path / "ref", contract=str(contract))
    assert summary["edges"]["NAMED_IN"] > 0 and summary["edges"]["SAME_TOOL"] == 0
    assert summary["dropped_edges"]["NAMED_IN"]["missing_source"] > 0
    assert summary["dropped_edges"]["SAME_TOOL"]["self_loop"] > 0
    for n in (1, 3, 7):
        r = build_local([src.parent], tmp_path / f"p{n}", partitions=n, contract=str(contract),
                        fingerprints=False)
        assert same_summary(r.summary, summary), n
        assert_same_snapshot(tmp_path / "ref", tmp_path / f"p{n}")


def _shared_rows() -> list[dict[str, object]]:
    """Sessions sharing a workspace, a model and a tool, whose first/last values
    sit in different sessions and around nulls, with ties in time."""
    rows = []
    for s in range(12):
        sid = f"sess-{s:02d}"
        at = T0 + timedelta(seconds=(11 - s) * 3)  # later sessions come first in time
        rows.append(row(sid, message_id=f"m{s}a", message_created_at=at,
                        cwd="/w/shared", repo_root=None if s % 3 else "/w/shared",
                        git_branch=None if s % 4 == 1 else f"b{s}",
                        model="m-1", provider=None if s in (11, 10) else f"p{s}",
                        part_type="tool_call", tool_name="Read", tool_call_id=f"c{s}"))
        # A tie: same time as the row above, an earlier part id.
        rows.append(row(sid, message_id=f"m{s}b", part_id=f"m{s}_0", message_created_at=at,
                        cwd="/w/shared", git_branch=f"t{s}", model="m-1", provider=f"q{s}"))
    rows.append(row("sess-late", message_id="late", message_created_at=None,
                    cwd="/w/shared", git_branch="no-time"))
    return rows


@pytest.mark.slow
def test_shared_nodes_merge_first_last_min_max_count(tmp_path: Path) -> None:
    src = write_parquet(_shared_rows(), tmp_path / "rows" / "part-0.parquet")
    reference([src.parent], tmp_path / "ref")
    sessions = pa.array([f"sess-{s:02d}" for s in range(12)])
    for n in PARTITIONS[1:]:
        assert len(set(partition_of(sessions, n))) > 1  # the sessions really are split
    for n in PARTITIONS:
        build_local([src.parent], tmp_path / f"p{n}", partitions=n, fingerprints=False)
        assert_same_snapshot(tmp_path / "ref", tmp_path / f"p{n}")


@pytest.mark.slow
def test_rejects_and_duplicates_match(tmp_path: Path) -> None:
    rows = [*identity_cases(), row(None, message_id="orphan-2"), row("s-x", message_id=None)]
    src = write_parquet(rows, tmp_path / "in" / "rows.parquet")
    ref = graphkit("build", src, "--snapshot", tmp_path / "ref", "--json")
    got = graphkit("build", src, "--snapshot", tmp_path / "p3", "--partitions", "3", "--json")
    assert ref.returncode == 0 and got.returncode == 0, got.output
    a, b = json.loads(ref.output), json.loads(got.output)
    assert b["engine"]["name"] == "local" and b["engine"]["partitions"] == 3
    assert a["rows_rejected"] == b["rows_rejected"] == 3
    assert a["duplicate_rows"] == b["duplicate_rows"] == 1
    assert (tmp_path / "p3.rejects.jsonl").read_text() == \
        (tmp_path / "ref.rejects.jsonl").read_text()
    assert_same_snapshot(tmp_path / "ref", tmp_path / "p3")


def test_distinct_count_over_two_sessions_is_refused_at_any_partition_count(
        tmp_path: Path) -> None:
    # One thread id under two sessions: its `messages` count_distinct cannot be
    # merged from partial counts, so the partitioned build refuses it — with
    # one partition too, so the answer never depends on the count.
    rows = [row("s-1", conversation_id="thread-x", message_id="a"),
            row("s-2", conversation_id="thread-x", message_id="b")]
    src = write_parquet(rows, tmp_path / "rows.parquet")
    refused = r"thread-x.*distinct values \(messages\).*session_id"
    for n in (1, 2):
        with pytest.raises(PartitionError, match=refused):
            build_local([src], tmp_path / f"p{n}", partitions=n, fingerprints=False)
        assert not (tmp_path / f"p{n}").exists()


def test_partition_key_and_order_are_checked(tmp_path: Path, sample_rows: Path) -> None:
    with pytest.raises(ContractError, match="partition key 'nope'"):
        build_local([sample_rows], tmp_path / "x", partition_key="nope")
    text = (load_contract().path).read_text().replace(
        "order_by: [message_created_at, part_id]", "order_by: [thread_id]")
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(PartitionError, match="order_by column 'thread_id' is derived"):
        build_local([sample_rows], tmp_path / "x", contract=str(tmp_path / "c.yaml"))
    # A join across sessions would miss the rows other partitions hold.
    text = load_contract().path.read_text().replace("same: [session_id]", "same: []")
    (tmp_path / "j.yaml").write_text(text)
    with pytest.raises(PartitionError, match="PARENT_THREAD joins spawned_by to tool_call_id "
                                             "across session_ids") as err:
        build_local([sample_rows], tmp_path / "x", contract=str(tmp_path / "j.yaml"))
    assert err.value.line is not None  # the join's first line
    assert text.splitlines()[err.value.line - 1].strip() == "column: spawned_by"


def test_auto_partitions_and_cli_option_errors(sample_rows: Path, tmp_path: Path) -> None:
    ok = graphkit("build", sample_rows, "--snapshot", tmp_path / "a", "--partitions", "auto",
                  "--json")
    assert ok.returncode == 0, ok.output
    assert json.loads(ok.output)["engine"]["partitions"] == 1
    for args, message in [(["--partitions", "0"], "not a positive number"),
                          (["--spark-master", "local[2]"], "needs --engine spark"),
                          (["--partitions", "2", "--store", "neo4j"], "graphkit load")]:
        bad = graphkit("build", sample_rows, "--snapshot", tmp_path / "b", *args)
        assert bad.returncode == 2, (args, bad.output)
        assert message in bad.output and "Traceback" not in bad.output


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
