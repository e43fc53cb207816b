"""Incremental builds of transcripts: whatever the cache held, the snapshot equals a cold
build of the same inputs; nothing changed means nothing parsed and the snapshot kept."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import graphkit.builds.uptodate as reuse
import graphkit.sources.transcripts.index as index
from graphkit.builds.snapshot import build_snapshot
from graphkit.snapshot import read_snapshot
from tests.helpers.cli import graphkit
from tests.helpers.transcripts import assistant, fixtures, resume_session_b, text

TRANSCRIPTS = fixtures() / "transcripts"
SESSION = "claude-code-log/session_id_steering_order.jsonl"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "transcripts"
    shutil.copytree(TRANSCRIPTS, root)
    return root


def _build(src: Path, snap: Path, cache: Path | None, **options: Any) -> dict[str, Any]:
    _, summary = build_snapshot([src], snap, cache_dir=cache, **options)
    return summary


def _tables(snap: Path) -> dict[str, Any]:
    g = read_snapshot(snap)
    return {**{f"n:{t}": n.table for t, n in g.nodes.items()},
            **{f"e:{t}": e.table for t, e in g.edges.items()}}


def _assert_equals_cold(src: Path, snap: Path, tmp_path: Path) -> None:
    """The snapshot equals a build of the same inputs with an empty cache elsewhere, and
    one of all rows at once (no link groups: ``GRAPHKIT_SPLICE=0``)."""
    cold = tmp_path / f"cold-{len(list(tmp_path.glob('cold-*')))}"
    _build(src, cold / "snap", cold / "cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRAPHKIT_SPLICE", "0")
        _build(src, cold / "whole", cold / "whole-cache")
    mine = _tables(snap)
    for other in ("snap", "whole"):
        theirs = _tables(cold / other)
        assert mine.keys() == theirs.keys()
        for name, table in theirs.items():
            assert mine[name].equals(table), (other, name)


def _files(summary: dict[str, Any]) -> dict[str, int]:
    """Files parsed and reused (the summary also counts link groups projected and kept)."""
    return {k: summary["transcripts"][k] for k in ("files_parsed", "files_reused")}


def _reread(summary: dict[str, Any], total: int, changed: int) -> None:
    """A rebuild after a change: the link groups holding a changed file were projected
    again (their files parsed again, at least the ``changed`` ones), the others kept."""
    tr = summary["transcripts"]
    assert tr["files_parsed"] + tr["files_reused"] == total
    assert tr["files_parsed"] >= changed
    assert tr["groups_projected"] >= 1 and tr["groups_reused"] >= 1


def _append_line(path: Path) -> None:
    with path.open("a") as fh:
        fh.write(json.dumps(assistant("a-appended", "00000000-0295-4000-8000-000000000001",
                                      "2026-07-11T07:00:09Z", [text("one more")], "a2")) + "\n")


@pytest.mark.slow
def test_nothing_changed_keeps_the_snapshot_and_parses_nothing(work: Path,
                                                                tmp_path: Path) -> None:
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    first = _build(work, snap, cache)
    assert first["transcripts"]["files_parsed"] > 0
    assert first["transcripts"]["files_reused"] == 0
    manifest = (snap / "manifest.json").read_bytes()
    again = _build(work, snap, cache)
    assert again["snapshot_reused"] is True
    assert again["transcripts"] == {"files_parsed": 0,
                                    "files_reused": first["transcripts"]["files_parsed"]}
    assert (snap / "manifest.json").read_bytes() == manifest  # not even rewritten
    assert {k: v for k, v in again.items() if k not in ("transcripts", "snapshot_reused")} \
        == {k: v for k, v in first.items() if k != "transcripts"}


@pytest.mark.slow
def test_append_delete_and_same_size_replacement_equal_a_cold_build(work: Path,
                                                                    tmp_path: Path) -> None:
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    files = _build(work, snap, cache)["transcripts"]["files_parsed"]

    _append_line(work / SESSION)
    after = _build(work, snap, cache)
    _reread(after, files, 1)
    assert "snapshot_reused" not in after
    _assert_equals_cold(work, snap, tmp_path)

    (work / "claude-code-transcripts" / "sample_session.jsonl").unlink()
    after = _build(work, snap, cache)
    _reread(after, files - 1, 0)
    _assert_equals_cold(work, snap, tmp_path)

    # Same size, same mtime, other bytes: only the inode tells (a file replaced by rename).
    target = work / SESSION
    old = target.stat()
    lines = target.read_text().splitlines(keepends=True)
    swapped = "".join([*lines[:-1], lines[-1].replace("one more", "one MORE")])
    assert len(swapped.encode()) == old.st_size and swapped != target.read_text()
    fresh = target.with_name("replacement.tmp")
    fresh.write_text(swapped)
    os.utime(fresh, ns=(old.st_atime_ns, old.st_mtime_ns))
    os.replace(fresh, target)
    assert (target.stat().st_size, target.stat().st_mtime_ns) == (old.st_size, old.st_mtime_ns)
    after = _build(work, snap, cache)
    _reread(after, files - 1, 1)
    _assert_equals_cold(work, snap, tmp_path)


@pytest.mark.slow
def test_a_new_parser_version_or_contract_rebuilds_everything(work: Path, tmp_path: Path,
                                                              monkeypatch: Any) -> None:
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    files = _build(work, snap, cache)["transcripts"]["files_parsed"]
    monkeypatch.setattr(index, "PARSER_VERSION", index.PARSER_VERSION + 1)
    monkeypatch.setattr(reuse, "PARSER_VERSION", index.PARSER_VERSION)
    after = _build(work, snap, cache)
    assert _files(after) == {"files_parsed": files, "files_reused": 0}
    _assert_equals_cold(work, snap, tmp_path)

    # Another contract: every link group is projected again (no rows are kept: its files
    # are parsed again).
    from graphkit.contract.loader import find_contract

    changed = tmp_path / "contract.yaml"
    changed.write_text(find_contract("ai-gateway-graph").read_text().replace(
        "version: ", "version: 1", 1))
    other = _build(work, snap, cache, contract=str(changed))
    assert "snapshot_reused" not in other
    assert _files(other) == {"files_parsed": files, "files_reused": 0}
    assert other["transcripts"]["groups_reused"] == 0
    back = _build(work, snap, cache)  # the stored partials are the other contract's
    assert back["transcripts"]["groups_reused"] == 0
    _assert_equals_cold(work, snap, tmp_path)
    assert "snapshot_reused" not in _build(work, snap, cache, granularity="message")


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["garbage", "foreign", "truncated", "rows-gone"])
def test_a_damaged_or_foreign_cache_is_rebuilt_never_a_traceback(work: Path, tmp_path: Path,
                                                                 damage: str) -> None:
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    files = _build(work, snap, cache)["transcripts"]["files_parsed"]
    _append_line(work / SESSION)  # so the snapshot cannot simply be kept
    for path in sorted(p for p in cache.rglob("*") if p.is_file()):  # link groups' too
        if damage == "garbage":
            path.write_bytes(b"\x00not what graphkit wrote\xff" * 3)
        elif damage == "foreign":
            path.write_bytes(b'{"parser": %d, "rows": "../../etc/passwd", "entries": {"x": 1}}'
                             % index.PARSER_VERSION)
        elif damage == "truncated":
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        elif path.name.startswith("transcripts-rows-"):
            path.unlink()
    after = _build(work, snap, cache)
    assert after["transcripts"]["files_parsed"] + after["transcripts"]["files_reused"] == files
    _assert_equals_cold(work, snap, tmp_path)
    assert _build(work, snap, cache)["snapshot_reused"] is True  # and the cache works again


@pytest.mark.slow
def test_cli_says_how_many_files_were_parsed_and_reused(work: Path, tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    run = graphkit("build", work, "--snapshot", snap)
    assert run.returncode == 0
    assert "files parsed, 0 reused" in run.output
    run = graphkit("build", work, "--snapshot", snap, "--json")
    summary = json.loads(run.output)
    assert summary["transcripts"]["files_parsed"] == 0 and summary["snapshot_reused"] is True
    assert (tmp_path / ".snap.cache").is_dir()  # beside the snapshot, not in the transcripts


def test_two_process_parsing_gives_the_same_rows(work: Path, monkeypatch: Any) -> None:
    import graphkit.sources.transcripts.pool as pool
    from graphkit.sources.transcripts import read_transcripts

    monkeypatch.setenv("GRAPHKIT_PARSE_WORKERS", "1")
    alone = read_transcripts([work])
    monkeypatch.setenv("GRAPHKIT_PARSE_WORKERS", "2")
    monkeypatch.setattr(pool, "MIN_BYTES", 0)
    monkeypatch.setattr(pool, "_RUN_BYTES", 4096)  # several runs per process
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    seen: list[int] = []
    split = pool.parse_in_workers

    def counting(paths: Any, sizes: Any) -> Any:
        seen.append(len(paths))
        return split(paths, sizes)

    monkeypatch.setattr("graphkit.sources.transcripts.read.parse_in_workers", counting)
    both = read_transcripts([work])
    assert seen and seen[0] > 2  # the two-process path ran
    assert both.table.equals(alone.table)
    assert both.skipped == alone.skipped
    assert both.fingerprints == alone.fingerprints
    assert (both.findings, both.agents, both.files_read) == (
        alone.findings, alone.agents, alone.files_read)


def test_a_failing_child_parser_falls_back_to_this_process(work: Path,
                                                           monkeypatch: Any) -> None:
    import graphkit.sources.transcripts.pool as pool
    from graphkit.core.workers import can_fork
    from graphkit.sources.transcripts import read_transcripts

    if not can_fork():
        pytest.skip("worker processes are forked on Linux only")
    alone = read_transcripts([work])
    monkeypatch.setenv("GRAPHKIT_PARSE_WORKERS", "3")
    monkeypatch.setattr(pool, "MIN_BYTES", 0)
    monkeypatch.setattr(pool, "_RUN_BYTES", 4096)
    me, parse_run = os.getpid(), pool._parse_run

    def failing(paths: Any) -> Any:  # every worker but this process fails at once
        if os.getpid() != me:
            raise RuntimeError("worker")
        return parse_run(paths)

    monkeypatch.setattr(pool, "_parse_run", failing)
    assert read_transcripts([work]).table.equals(alone.table)


@pytest.mark.slow
def test_a_changed_sidecar_is_read_again(work: Path, tmp_path: Path) -> None:
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    _build(work, snap, cache)
    side = next(work.rglob("agent-showcol1.meta.json"))
    meta = json.loads(side.read_text())
    meta["agentType"] = "Changed-Type"
    side.write_text(json.dumps(meta))
    after = _build(work, snap, cache)
    _reread(after, after["transcripts"]["files_parsed"] + after["transcripts"]["files_reused"],
            0)  # no transcript changed, only a sidecar: its group is projected again
    assert "snapshot_reused" not in after
    _assert_equals_cold(work, snap, tmp_path)
    agents = read_snapshot(snap).nodes["Agent"].table.to_pylist()
    assert any("Changed-Type" in json.dumps(a) for a in agents)


def test_appends_write_small_segments_and_compact(work: Path, tmp_path: Path,
                                                  monkeypatch: Any) -> None:
    import gzip

    from graphkit.sources.transcripts import read_transcripts

    cache = tmp_path / "cache"
    read_transcripts([work], cache_dir=cache)

    def segments() -> list[dict[str, Any]]:
        doc = json.loads(gzip.decompress((cache / index.INDEX_NAME).read_bytes()))
        return list(doc["segments"])

    assert len(segments()) == 1
    whole = segments()[0]["num_rows"]
    monkeypatch.setattr(index, "_MAX_SEGMENTS", 3)
    monkeypatch.setattr(index, "_MAX_HELD", 100.0)  # only the segment count compacts here
    for n in range(4):
        with (work / SESSION).open("a") as fh:
            fh.write(json.dumps(assistant(f"a-more-{n}", "00000000-0295-4000-8000-000000000001",
                                          f"2026-07-11T07:01:0{n}Z", [text("more")], "a2"))
                     + "\n")
        again = read_transcripts([work], cache_dir=cache)
        assert again.files_read == 1
        assert again.table.equals(read_transcripts([work]).table)
        names = {p.name for p in cache.glob("transcripts-*")}
        assert names == {index.INDEX_NAME} | {x for g in segments()
                                              for x in (g["rows"], g["entries"])}
        if n < 2:  # one small segment more: the appended-to file's rows only
            assert len(segments()) == n + 2
            assert segments()[-1]["num_rows"] < whole / 4
    assert len(segments()) == 2  # compacted into one at the third segment, then one more
    assert segments()[0]["num_rows"] >= whole


HOME = fixtures() / "hypaware-cache" / "home" / ".claude" / "projects" / "-home-dev-src-billing-svc"
CODEX = "claude-code-log/codex/sessions/2026/01/03"
CHILD = f"{CODEX}/rollout-2026-01-03T04-05-10-33333333-3333-4333-8333-333333333333.jsonl"


@pytest.mark.slow
@pytest.mark.parametrize("change", ["subagent", "codex-child", "new-session", "deleted-agent",
                                    "resumed"])
def test_linked_files_changed_equal_a_cold_build(tmp_path: Path, change: str) -> None:
    """A change to one file can change rows of files linked to it (a subagent's spawning
    call, a Codex parent, a resumed session): the rebuild still equals a cold build."""
    from tests.helpers.transcripts import codex_message, user, write_jsonl

    work = tmp_path / "transcripts"
    shutil.copytree(TRANSCRIPTS, work)
    billing = work / "home" / "-home-dev-src-billing-svc"
    shutil.copytree(HOME, billing)
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    files = _build(work, snap, cache)["transcripts"]["files_parsed"]
    sid = "9e4f0a36-5b7c-4d8e-9f10-2a3b4c5d6e03"
    parsed, total = 1, files
    if change == "subagent":
        nested = billing / sid / "subagents" / "agent-c2ee44ff55aa66bb.jsonl"
        with nested.open("a") as fh:
            fh.write(json.dumps(dict(assistant("e2-extra", sid, "2026-11-22T08:30:10.500Z",
                                               [text("also pyyaml")]), isSidechain=True,
                                     agentId="c2ee44ff55aa66bb")) + "\n")
    elif change == "codex-child":
        with (work / CHILD).open("a") as fh:
            fh.write(json.dumps(codex_message("2026-01-03T04:06:00.000Z", "assistant",
                                              "one more finding")) + "\n")
    elif change == "new-session":
        write_jsonl(billing / "dddddddd-0000-4000-8000-00000000000d.jsonl",
                    [user("d1", "dddddddd-0000-4000-8000-00000000000d",
                          "2026-11-23T09:00:00Z", "a new session")])
        total += 1
    elif change == "deleted-agent":
        agent = next(billing.rglob("agent-*.jsonl"))
        agent.unlink()
        agent.with_name(agent.stem + ".meta.json").unlink(missing_ok=True)
        parsed, total = 0, files - 1
    else:  # a resume of session B: replays B's messages, then continues
        resume_session_b(billing)
        total += 1
    after = _build(work, snap, cache)
    _reread(after, total, parsed)
    _assert_equals_cold(work, snap, tmp_path)
    assert _build(work, snap, cache)["snapshot_reused"] is True
