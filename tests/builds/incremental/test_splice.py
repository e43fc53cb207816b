"""The spliced transcript build (:mod:`graphkit.builds.incremental.splice`): link groups
read, linked and projected apart, unchanged groups' partial graphs kept. Whatever it keeps,
the result equals a build of all rows at once (``GRAPHKIT_SPLICE=0``): tables, summary,
skipped lines, manifest inputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import graphkit.builds.incremental.splice as splice
from graphkit.builds.snapshot import build_snapshot
from graphkit.snapshot import read_snapshot
from tests.helpers.cli import graphkit
from tests.helpers.paths import SHAPED
from tests.helpers.transcripts import assistant, fixtures, text, user, write_jsonl

TRANSCRIPTS = fixtures() / "transcripts"
PROJECT = "-home-dev-app"


def _tables(snap: Path) -> dict[str, Any]:
    g = read_snapshot(snap)
    return {**{f"n:{t}": n.table for t, n in g.nodes.items()},
            **{f"e:{t}": e.table for t, e in g.edges.items()}}


def _build(src: Path, snap: Path, cache: Path, **options: Any) -> dict[str, Any]:
    return build_snapshot([src], snap, cache_dir=cache, **options)[1]


def _whole(src: Path, out: Path, monkeypatch: Any, **options: Any) -> dict[str, Any]:
    with monkeypatch.context() as mp:
        mp.setenv("GRAPHKIT_SPLICE", "0")
        return _build(src, out / "snap", out / "cache", **options)


_PLACES = ("snapshot", "skipped_lines_file", "rejects_file", "index", "transcripts")


def _assert_same(snap: Path, mine: dict[str, Any], whole: Path, theirs: dict[str, Any]) -> None:
    a, b = _tables(snap), _tables(whole / "snap")
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].equals(b[name]), name
    assert {k: v for k, v in mine.items() if k not in _PLACES} == \
        {k: v for k, v in theirs.items() if k not in _PLACES}
    ma = json.loads((snap / "manifest.json").read_text())
    mb = json.loads((whole / "snap" / "manifest.json").read_text())
    assert ma["inputs"] == mb["inputs"]
    skipped = [snap.with_name(snap.name + ".skipped.jsonl"),
               whole / "snap.skipped.jsonl"]
    assert [p.read_text() if p.exists() else None for p in skipped[:1]] == \
        [p.read_text() if p.exists() else None for p in skipped[1:]]


def _state(cache: Path) -> dict[str, Any]:
    from graphkit.builds.incremental.merged import zstd_unpack

    return json.loads(zstd_unpack((cache / "graph" / "graph-state.json.zst").read_bytes()))


def _groups(cache: Path) -> dict[str, int]:
    """Each transcript file's link group, as the kept state says."""
    import base64

    import numpy as np

    state = _state(cache)
    paths = state["walk"].split("\0")
    at = np.frombuffer(base64.b64decode(state["files"]), "<i4").tolist()
    groups = np.frombuffer(base64.b64decode(state["groups"]), "<i2").tolist()
    return {paths[i]: b for i, b in zip(at, groups, strict=True)}


def _session(root: Path, sid: str, uuids: list[str], at: str) -> Path:
    entries = []
    for i, u in enumerate(uuids):
        parent = uuids[i - 1] if i else None
        if i % 2:
            entries.append(assistant(u, sid, f"2026-03-0{at}T10:00:0{i}Z", [text(f"a {u}")],
                                     parent))
        else:
            entries.append(user(u, sid, f"2026-03-0{at}T10:00:0{i}Z", f"q {u}", parent))
    return write_jsonl(root / PROJECT / f"{sid}.jsonl", entries)


def _two_groups(root: Path) -> tuple[str, str]:
    """Two unrelated sessions whose files land in different link groups."""
    sids = [f"{n:08x}-0000-4000-8000-000000000000" for n in range(1, 200)]
    first = sids[0]
    other = next(s for s in sids[1:]
                 if splice.bucket_of_key("s:" + s) != splice.bucket_of_key("s:" + first))
    _session(root, first, ["a-1", "a-2", "a-3", "a-4"], "1")
    _session(root, other, ["b-1", "b-2", "b-3", "b-4"], "2")
    return first, other


# The real transcripts, and the shapes of each record kind that links files (a job's
# state.json, a continued-in record, a fork's context ref: once missed by the link keys).
@pytest.mark.slow
@pytest.mark.parametrize("sources", [TRANSCRIPTS, SHAPED], ids=["real", "shaped"])
def test_a_cold_spliced_build_equals_a_build_of_all_rows(tmp_path: Path, monkeypatch: Any,
                                                         sources: Path) -> None:
    work = tmp_path / "t"
    shutil.copytree(sources, work)
    mine = _build(work, tmp_path / "snap", tmp_path / "cache")
    theirs = _whole(work, tmp_path / "whole", monkeypatch)
    _assert_same(tmp_path / "snap", mine, tmp_path / "whole", theirs)
    tr = mine["transcripts"]
    assert tr["groups_reused"] == 0 and tr["groups_projected"] > 1
    assert tr["sessions_projected"] == mine["nodes"]["Session"]


@pytest.mark.slow
def test_an_append_reprojects_one_group_and_keeps_the_others(tmp_path: Path,
                                                             monkeypatch: Any) -> None:
    work = tmp_path / "t"
    first, _other = _two_groups(work)
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    cold = _build(work, snap, cache)["transcripts"]
    path = work / PROJECT / f"{first}.jsonl"
    with path.open("a") as fh:
        fh.write(json.dumps(assistant("a-5", first, "2026-03-01T10:00:09Z", [text("more")],
                                      "a-4")) + "\n")
    mine = _build(work, snap, cache)
    tr = mine["transcripts"]
    assert (tr["groups_projected"], tr["groups_reused"]) == (1, cold["groups_projected"] - 1)
    assert (tr["sessions_projected"], tr["sessions_reused"]) == (1, 1)
    assert (tr["files_parsed"], tr["files_reused"]) == (1, 1)
    whole = _whole(work, tmp_path / "whole", monkeypatch)
    _assert_same(snap, mine, tmp_path / "whole", whole)


@pytest.mark.slow
def test_an_append_that_joins_two_groups_merges_them(tmp_path: Path, monkeypatch: Any) -> None:
    """Session A's new line replays a message of session B (same uuid and time, as a
    resume does): the two now link, so they must be linked together."""
    work = tmp_path / "t"
    first, other = _two_groups(work)
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    _build(work, snap, cache)
    before = _groups(cache)
    a, b = (str((work / PROJECT / f"{s}.jsonl").resolve()) for s in (first, other))
    assert before[a] != before[b]
    replay = json.loads((work / PROJECT / f"{other}.jsonl").read_text().splitlines()[1])
    with (work / PROJECT / f"{first}.jsonl").open("a") as fh:
        fh.write(json.dumps(dict(replay, sessionId=first)) + "\n")
        fh.write(json.dumps(user("a-9", first, "2026-03-03T10:00:00Z", "and then", "b-2"))
                 + "\n")
    mine = _build(work, snap, cache)
    after = _groups(cache)
    assert after[a] == after[b]  # one link group now
    whole = _whole(work, tmp_path / "whole", monkeypatch)
    _assert_same(snap, mine, tmp_path / "whole", whole)
    assert mine["edges"]["CONTINUES"] == whole["edges"]["CONTINUES"]


@pytest.mark.slow
def test_a_new_contract_option_projects_every_group_again(tmp_path: Path,
                                                          monkeypatch: Any) -> None:
    work = tmp_path / "t"
    shutil.copytree(TRANSCRIPTS, work)
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    cold = _build(work, snap, cache)["transcripts"]
    mine = _build(work, snap, cache, granularity="message")
    tr = mine["transcripts"]
    assert tr["groups_reused"] == 0 and tr["groups_projected"] == cold["groups_projected"]
    assert tr["files_parsed"] == cold["files_parsed"]  # no rows kept: parsed again
    whole = _whole(work, tmp_path / "whole", monkeypatch, granularity="message")
    _assert_same(snap, mine, tmp_path / "whole", whole)


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["part-garbage", "part-gone", "state-garbage", "keys-gone",
                                    "merged-garbage", "merged-zeroed", "merged-gone"])
def test_a_damaged_stored_graph_is_rebuilt_with_a_note(tmp_path: Path, monkeypatch: Any,
                                                       damage: str) -> None:
    work = tmp_path / "t"
    first, _other = _two_groups(work)
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    _build(work, snap, cache)
    store = cache / "graph"
    if damage.startswith("part"):
        for part in store.glob("part-*.arrow"):
            if damage == "part-garbage":
                part.write_bytes(b"\x00not a partial graph" * 5)
            else:
                part.unlink()
    elif damage == "state-garbage":
        (store / "graph-state.json.zst").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00garbage")
    elif damage.startswith("merged"):
        # Once the session is in the hot group, an append keeps most merged tables.
        with (work / PROJECT / f"{first}.jsonl").open("a") as fh:
            fh.write(json.dumps(user("a-5", first, "2026-03-01T10:00:07Z", "hot", "a-4")) + "\n")
        _build(work, snap, cache)
        merged = store / "graph-merged.arrow"
        data = merged.read_bytes()
        head = 8 + int.from_bytes(data[:8], "little")
        if damage == "merged-gone":
            merged.unlink()
        else:  # garbage, or the account kept and every table's bytes zeroed
            merged.write_bytes(b"\x00not merged tables" * 5 if damage == "merged-garbage"
                               else data[:head] + bytes(len(data) - head))
    else:
        (store / "graph-keys.arrow").unlink()
    with (work / PROJECT / f"{first}.jsonl").open("a") as fh:
        fh.write(json.dumps(user("a-7", first, "2026-03-01T10:00:08Z", "again",
                                 "a-5" if damage.startswith("merged") else "a-4")) + "\n")
    notes: list[str] = []
    result, mine = build_snapshot([work], snap, cache_dir=cache, progress=notes.append)
    if damage == "part-garbage":
        assert any("unreadable" in n for n in result.sources.notes)
    if damage in ("merged-garbage", "merged-zeroed"):
        assert any("stored merged graph unreadable" in n for n in result.sources.notes)
    whole = _whole(work, tmp_path / "whole", monkeypatch)
    _assert_same(snap, mine, tmp_path / "whole", whole)
    assert _build(work, snap, cache)["snapshot_reused"] is True


def test_row_files_or_since_build_all_rows_at_once(tmp_path: Path) -> None:
    """Only transcripts alone go by link groups; with --since the whole build runs."""
    import datetime as dt

    work = tmp_path / "t"
    _two_groups(work)
    summary = _build(work, tmp_path / "snap", tmp_path / "cache",
                     since=dt.datetime(2026, 3, 2))
    assert "groups_projected" not in summary["transcripts"]
    assert not (tmp_path / "cache" / "graph").exists()


def test_the_files_from_the_no_op_walk_are_the_files_a_walk_lists(tmp_path: Path) -> None:
    """The spliced build takes its file list and stats from the no-op check's walk; it
    must list what :func:`transcript_files` lists, in the same order."""
    from graphkit.builds.uptodate import input_state
    from graphkit.sources.transcripts.files import transcript_files

    work = tmp_path / "t"
    shutil.copytree(TRANSCRIPTS, work)
    _two_groups(work)
    write_jsonl(work / "x" / "subagents" / "journal.jsonl", [{"type": "note"}])
    write_jsonl(work / "x" / "subagents" / "agent-1.jsonl", [{"type": "note"}])
    (work / "x" / "subagents" / "agent-1.meta.json").write_text("{}")
    # "subagents" in a name that is not the folder's: its files are listed
    write_jsonl(work / "my-subagents-x" / "notes.jsonl", [{"type": "note"}])
    write_jsonl(work / "x" / "subagents" / "deeper" / "s.jsonl", [{"type": "note"}])
    roots = [work, work / PROJECT, work / "x" / "subagents"]
    files, stats = splice.listed_files(roots, input_state(roots))
    assert files == [str(p) for p in transcript_files(roots)]
    assert all(stats[f] is not None for f in files)
    assert splice.listed_files(roots, None)[0] == files


def test_the_cli_says_how_many_sessions_and_groups_were_projected(tmp_path: Path) -> None:
    work = tmp_path / "t"
    first, _other = _two_groups(work)
    snap = tmp_path / "snap"
    run = graphkit("build", work, "--snapshot", snap)
    assert "2 sessions in 2 link groups projected, 0 in 0 kept" in run.output
    with (work / PROJECT / f"{first}.jsonl").open("a") as fh:
        fh.write(json.dumps(user("a-8", first, "2026-03-01T10:00:09Z", "more", "a-4")) + "\n")
    run = graphkit("build", work, "--snapshot", snap, "--json")
    tr = json.loads(run.output.splitlines()[-1])["transcripts"]  # after the notes
    assert (tr["sessions_projected"], tr["groups_projected"]) == (1, 1)
    assert (tr["sessions_reused"], tr["groups_reused"]) == (1, 1)


@pytest.mark.slow
def test_a_contract_that_cannot_be_merged_from_parts_builds_whole(tmp_path: Path,
                                                                   monkeypatch: Any) -> None:
    """A distinct count over rows of several sessions (here: a Model's sessions) cannot be
    merged from link groups: the build goes whole, no error, and remembers it."""
    from graphkit.contract.loader import find_contract

    work = tmp_path / "t"
    _two_groups(work)
    contract = tmp_path / "contract.yaml"
    contract.write_text(find_contract("ai-gateway-graph").read_text().replace(
        "      provider: {first: provider}\n\n  - type: Tool",
        "      provider: {first: provider}\n      sessions: {count_distinct: session_id}\n\n"
        "  - type: Tool", 1))
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    mine = _build(work, snap, cache, contract=str(contract))
    assert "groups_projected" not in mine["transcripts"]
    assert (cache / "graph" / "graph-unusable").is_file()
    whole = _whole(work, tmp_path / "whole", monkeypatch, contract=str(contract))
    _assert_same(snap, mine, tmp_path / "whole", whole)
    assert read_snapshot(snap).nodes["Model"].table.column("sessions").to_pylist() == [2]


@pytest.mark.slow
def test_changed_sessions_move_to_the_hot_group_and_cool_off(tmp_path: Path,
                                                             monkeypatch: Any) -> None:
    """A session written to moves to the hot group, so the next append re-reads it alone;
    once the hot group outgrows an average group, its unchanged sessions go back home."""
    work = tmp_path / "t"
    sids = [f"{n:08x}-0000-4000-8000-000000000000" for n in range(1, 400)]
    home = splice.bucket_of_key("s:" + sids[0])
    s1, s2 = [s for s in sids if splice.bucket_of_key("s:" + s) == home][:2]
    s3 = next(s for s in sids if splice.bucket_of_key("s:" + s) != home)
    for n, sid in enumerate((s1, s2, s3), 1):
        _session(work, sid, [f"{n}-1", f"{n}-2", f"{n}-3", f"{n}-4"], str(n))
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    _build(work, snap, cache)

    def append(sid: str, n: int, parent: str) -> dict[str, Any]:
        with (work / PROJECT / f"{sid}.jsonl").open("a") as fh:
            fh.write(json.dumps(user(f"x-{n}", sid, f"2026-03-05T10:00:0{n}Z", "more", parent))
                     + "\n")
        return _build(work, snap, cache)["transcripts"]

    def group(sid: str) -> int:
        return _groups(cache)[str((work / PROJECT / f"{sid}.jsonl").resolve())]

    first = append(s1, 1, "1-4")  # s1 leaves its group (s2 stays): both projected
    assert (first["groups_projected"], first["sessions_projected"]) == (2, 2)
    assert group(s1) == splice.HOT and group(s2) == home
    again = append(s1, 2, "x-1")  # now s1 alone is read again
    assert (again["groups_projected"], again["sessions_projected"]) == (1, 1)
    other = append(s3, 3, "3-4")  # the hot group is over its share: s1 goes home
    assert group(s3) == splice.HOT and group(s1) == home
    assert other["groups_reused"] == 0
    mine = _build(work, snap, cache)
    assert mine["snapshot_reused"] is True
    whole = _whole(work, tmp_path / "whole", monkeypatch)
    assert _tables(snap).keys() == _tables(tmp_path / "whole" / "snap").keys()
    for name, table in _tables(tmp_path / "whole" / "snap").items():
        assert _tables(snap)[name].equals(table), name
    assert whole["nodes"] == mine["nodes"]


def _streams(merged: Path) -> dict[tuple[str, str], bytes]:
    """Each table's stored stream in ``graph-merged.arrow`` (see engine/splice_merged.py)."""
    from graphkit.builds.incremental.merged import split_account

    info, body = split_account(merged.read_bytes(), merged.name)
    return {(k, t): body[at:at + n].to_pybytes() for k, t, at, n in info["tables"]}


@pytest.mark.slow
def test_an_append_merges_only_the_types_it_changed(tmp_path: Path, monkeypatch: Any) -> None:
    """A user line changes a session's Session and Thread rows, not its tools or files:
    those types' merged tables are the stored ones (their streams copied unchanged), the
    others merged again, and the snapshot equals a build of all rows at once."""
    work = tmp_path / "t"
    shutil.copytree(TRANSCRIPTS, work)
    first, _other = _two_groups(work)
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    merged = cache / "graph" / "graph-merged.arrow"
    _build(work, snap, cache)
    with (work / PROJECT / f"{first}.jsonl").open("a") as fh:  # to the hot group
        fh.write(json.dumps(user("a-5", first, "2026-03-01T10:00:09Z", "one", "a-4")) + "\n")
    _build(work, snap, cache)
    before = _streams(merged)
    with (work / PROJECT / f"{first}.jsonl").open("a") as fh:  # the hot group alone
        fh.write(json.dumps(user("a-6", first, "2026-03-01T10:00:10Z", "two", "a-5")) + "\n")
    mine = _build(work, snap, cache)
    assert mine["transcripts"]["groups_projected"] == 1
    after = _streams(merged)
    assert before.keys() == after.keys()
    same = {t for t in before if before[t] == after[t]}
    assert ("node", "Tool") in same and ("edge", "CALLED_TOOL") in same
    assert ("node", "Thread") not in same and ("node", "Session") not in same
    whole = _whole(work, tmp_path / "whole", monkeypatch)
    _assert_same(snap, mine, tmp_path / "whole", whole)


@pytest.mark.slow
def test_rows_one_group_holds_alone_are_replaced_not_merged(tmp_path: Path,
                                                            monkeypatch: Any) -> None:
    """A changed type whose keys in the hot group no other group holds (a session's
    Session and Thread rows) is last time's table with those rows replaced
    (engine/splice_merged.splice_type); a key other groups hold too (the Workspace both
    sessions share) is merged from every partial. Both equal a build of all rows."""
    from graphkit.builds.incremental import merged as splice_merged

    work = tmp_path / "t"
    first, _other = _two_groups(work)
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    _build(work, snap, cache)
    calls: list[tuple[str, bool]] = []
    real = splice_merged.splice_type

    def spy(kind: str, prev: Any, shared: Any, pairs: Any) -> Any:
        got = real(kind, prev, shared, pairs)
        calls.append((kind, got is not None))
        return got

    monkeypatch.setattr("graphkit.builds.incremental.parts.splice_type", spy)
    parent = "a-4"
    for n in range(5, 8):
        with (work / PROJECT / f"{first}.jsonl").open("a") as fh:
            fh.write(json.dumps(assistant(f"a-{n}", first, f"2026-03-01T10:00:1{n}Z",
                                          [text(f"more {n}")], parent)) + "\n")
        parent = f"a-{n}"
        mine = _build(work, snap, cache)
        whole = _whole(work, tmp_path / f"whole{n}", monkeypatch)
        _assert_same(snap, mine, tmp_path / f"whole{n}", whole)
    assert ("node", True) in calls  # Session/Thread rows replaced
    assert ("node", False) in calls  # the shared Workspace merged


@pytest.mark.slow
def test_merged_tables_of_other_partials_are_not_used(tmp_path: Path, monkeypatch: Any) -> None:
    """The stored merged tables name the partials they were merged from: another cache's
    (here: of other transcripts) are not taken, whatever their types."""
    work, elsewhere = tmp_path / "t", tmp_path / "u"
    first, _other = _two_groups(work)
    shutil.copytree(TRANSCRIPTS, elsewhere)
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    _build(work, snap, cache)
    _build(elsewhere, tmp_path / "snap2", tmp_path / "cache2")
    shutil.copy(tmp_path / "cache2" / "graph" / "graph-merged.arrow",
                cache / "graph" / "graph-merged.arrow")
    with (work / PROJECT / f"{first}.jsonl").open("a") as fh:
        fh.write(json.dumps(user("a-7", first, "2026-03-01T10:00:08Z", "again", "a-4")) + "\n")
    result, mine = build_snapshot([work], snap, cache_dir=cache)
    assert not any("merged" in n for n in result.sources.notes)
    whole = _whole(work, tmp_path / "whole", monkeypatch)
    _assert_same(snap, mine, tmp_path / "whole", whole)


@pytest.mark.slow
def test_unchanged_tables_are_linked_from_the_previous_snapshot(tmp_path: Path,
                                                                monkeypatch: Any) -> None:
    """A type taken from the stored merged tables keeps the previous snapshot's file (a
    hard link: the same inode), checked against its digest: a file changed since is
    written again. Either way the snapshot reads back whole and equals a build of all rows."""
    work = tmp_path / "t"
    shutil.copytree(TRANSCRIPTS, work)
    first, _other = _two_groups(work)
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    _build(work, snap, cache)
    parent = "a-4"
    for n in range(5, 8):  # into the hot group, then twice the hot group alone
        with (work / PROJECT / f"{first}.jsonl").open("a") as fh:
            fh.write(json.dumps(user(f"a-{n}", first, f"2026-03-01T10:00:1{n}Z", "more",
                                     parent)) + "\n")
        parent = f"a-{n}"
        inodes = {p.name: p.stat().st_ino for p in (snap / "nodes").glob("*.parquet")}
        if n == 7:  # changed behind graphkit's back: not linked
            tool = snap / "nodes" / "Tool.parquet"
            tool.write_bytes(bytes(tool.stat().st_size))
        mine = _build(work, snap, cache)
    after = {p.name: p.stat().st_ino for p in (snap / "nodes").glob("*.parquet")}
    assert after["Model.parquet"] == inodes["Model.parquet"]  # linked
    assert after["Thread.parquet"] != inodes["Thread.parquet"]  # merged again: written
    assert after["Tool.parquet"] != inodes["Tool.parquet"]  # its digest failed: written
    whole = _whole(work, tmp_path / "whole", monkeypatch)
    _assert_same(snap, mine, tmp_path / "whole", whole)  # read_snapshot checks digests


@pytest.mark.slow
def test_appends_at_message_granularity_equal_a_build_of_all_rows(tmp_path: Path,
                                                                   monkeypatch: Any) -> None:
    """Message nodes and NEXT edges of the hot session: replaced or merged, the same."""
    work = tmp_path / "t"
    shutil.copytree(TRANSCRIPTS, work)
    first, _other = _two_groups(work)
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    _build(work, snap, cache, granularity="message")
    parent = "a-4"
    for n in range(5, 8):
        with (work / PROJECT / f"{first}.jsonl").open("a") as fh:
            fh.write(json.dumps(user(f"a-{n}", first, f"2026-03-01T10:00:2{n}Z", "m",
                                     parent)) + "\n")
        parent = f"a-{n}"
        mine = _build(work, snap, cache, granularity="message")
    assert mine["transcripts"]["groups_projected"] == 1
    whole = _whole(work, tmp_path / "whole", monkeypatch, granularity="message")
    _assert_same(snap, mine, tmp_path / "whole", whole)


@pytest.mark.parametrize("damage", ["truncated", "short", "long", "garbage", "empty", "huge"])
def test_a_damaged_zstd_frame_is_a_value_error(damage: str) -> None:
    """The accounts and the state are zstd frames behind their length; damage of any kind
    is a ValueError (the callers rebuild), never another exception or a wrong text."""
    from graphkit.builds.incremental.merged import zstd_pack, zstd_unpack

    raw = json.dumps({"files": [f"/t/{i}.jsonl" for i in range(300)]}).encode()
    packed = zstd_pack(raw)
    assert zstd_unpack(packed) == raw
    bad = {"truncated": packed[:len(packed) // 2],
           "short": (len(raw) - 1).to_bytes(8, "little") + packed[8:],
           "long": (len(raw) + 1).to_bytes(8, "little") + packed[8:],
           "garbage": packed[:8] + b"\x00not zstd" * 20,
           "empty": b"",
           "huge": (1 << 40).to_bytes(8, "little") + packed[8:]}[damage]
    with pytest.raises(ValueError):
        zstd_unpack(bad)


@pytest.mark.slow
def test_an_older_state_file_is_dropped_and_everything_projected(tmp_path: Path,
                                                                 monkeypatch: Any) -> None:
    """A cache of the previous format (a gzip'd state) is not read: the groups are
    projected again, the old state file removed, and the result is a whole build's."""
    import gzip

    work = tmp_path / "t"
    shutil.copytree(TRANSCRIPTS, work)
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    cold = _build(work, snap, cache)["transcripts"]
    store = cache / "graph"
    old = store / "graph-state.json.gz"
    old.write_bytes(gzip.compress(json.dumps({**_state(cache), "format": 6}).encode()))
    (store / "graph-state.json.zst").unlink()
    (work / "added.jsonl").write_bytes((TRANSCRIPTS / "claude-code-log").glob(
        "**/*.jsonl").__next__().read_bytes())
    mine = _build(work, snap, cache)
    assert mine["transcripts"]["groups_reused"] == 0
    assert mine["transcripts"]["groups_projected"] >= cold["groups_projected"]
    assert not old.exists() and (store / "graph-state.json.zst").is_file()
    _assert_same(snap, mine, tmp_path / "whole", _whole(work, tmp_path / "whole", monkeypatch))


def test_bases_put_claude_rows_first_then_codex_each_in_file_order() -> None:
    """The merge's global row positions: the numpy sort gives what a sort of (codex,
    rank, group, index) tuples gave, for random groups and file orders."""
    import random

    import numpy as np

    from graphkit.builds.incremental.parts import _bases

    def reference(files: list[str], parts: dict[int, dict[str, Any]]) -> dict[int, list[int]]:
        rank = {p: i for i, p in enumerate(files)}
        order = sorted((bool(c), rank[p], b, i, int(n)) for b, part in parts.items()
                       for i, (p, n, c) in enumerate(zip(part["files"], part["file_rows"],
                                                         part["codex"], strict=True)))
        out = {b: [0] * len(part["files"]) for b, part in parts.items()}
        at = 0
        for _c, _r, b, i, n in order:
            out[b][i] = at
            at += n
        return out

    rnd = random.Random(5)
    for trial in range(30):
        files = [f"/t/{i:04d}.jsonl" for i in range(rnd.randint(0, 60))]
        shuffled = files[:]
        rnd.shuffle(shuffled)
        parts: dict[int, dict[str, Any]] = {}
        for p in shuffled:
            part = parts.setdefault(rnd.choice([16, 3, 0, 7, 11]),
                                    {"files": [], "file_rows": [], "codex": []})
            part["files"].append(p)
            part["file_rows"].append(rnd.randint(0, 9))
            part["codex"].append(rnd.random() < 0.3)
        if trial % 5 == 0:
            parts[9] = {"files": [], "file_rows": [], "codex": []}
        got = _bases(files, parts)
        assert {b: np.asarray(v).tolist() for b, v in got.items()} == reference(files, parts)
