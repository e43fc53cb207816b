"""read_transcripts as a whole: walking, detection, the HypAware home, the incremental
index, and files that are no plain transcript (a name not in UTF-8, a type name that is
no text)."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from graphkit.core.errors import SourceError
from graphkit.sources.iceberg import read_iceberg
from graphkit.sources.transcripts import (
    default_transcript_roots,
    read_transcripts,
    transcript_kind,
)
from graphkit.sources.transcripts.index import INDEX_NAME
from tests.helpers.cli import graphkit
from tests.helpers.paths import CACHE, REPO, not_utf8
from tests.helpers.transcripts import (
    assert_well_formed,
    assistant,
    codex_line,
    codex_meta,
    fixtures,
    resume_session_b,
    skipped_lines,
    text,
    user,
    write_jsonl,
)

TRANSCRIPTS = fixtures() / "transcripts"
HOME = fixtures() / "hypaware-cache" / "home"


def test_every_fixture_transcript_reads_without_crashing() -> None:
    result = read_transcripts([TRANSCRIPTS])
    assert_well_formed(result.table)
    skipped = {(Path(s.path).name, s.line): s.reason for s in result.skipped}
    # Non-Claude exports are counted with a reason; the malformed Codex line too, and
    # (since then) the rollout line of a type no Codex reader knows: read as nothing,
    # as before, but counted and said rather than dropped unsaid.
    future = ("rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl", 14)
    assert set(skipped) == {
        ("sample_antigravity_export.json", 1), ("sample_kiro_export.json", 1),
        ("sample_windsurf_export.json", 1),
        ("rollout-66666666-6666-4666-8666-666666666666.jsonl", 3), future}
    assert skipped[future] == "rollout line type 'future_synthetic_record' is not read"
    assert skipped[("sample_windsurf_export.json", 1)].startswith("a Windsurf export")
    assert "not a Claude Code or Codex transcript" in skipped[("sample_kiro_export.json", 1)]
    # 13 Claude + 7 Codex transcript files were parsed; sidecars and the journal were not.
    assert result.files_read == 20
    sessions = Counter(zip(result.table["provider"].to_pylist(),
                           result.table["session_id"].to_pylist(), strict=True))
    assert {s for p, s in sessions if p == "anthropic"} == {
        "s1", "s2", "55550000-0000-4000-8000-000000000001",
        "55550000-0000-4000-8000-000000000002", "55550000-0000-4000-8000-000000000003",
        "00000000-0295-4000-8000-000000000001", "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358",
        "22220000-0000-4000-8000-000000000002", "sample_session", "test-session-id"}
    assert {s for p, s in sessions if p == "openai"} == {
        "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222",
        "44444444-4444-4444-8444-444444444444", "55555555-5555-4555-8555-555555555555",
        "66666666-6666-4666-8666-666666666666", "test-session"}
    agents = {a for a in result.table["agent_id"].to_pylist() if a}
    assert agents == {"showcol1", "showcol2", "e1c84ba5", "agsp0001"}


def _shape(table: pa.Table) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Per thread: rows, messages, spawned_by, part types (what both paths must agree on)."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in table.to_pylist():
        key = (r["provider"], r["session_id"], r["conversation_id"], r["agent_id"],
               r["parent_thread_id"], r["is_sidechain"])
        t = out.setdefault(key, {"rows": 0, "messages": set(), "spawned_by": set(),
                                 "parts": Counter(), "dates": set(), "models": set()})
        t["rows"] += 1
        t["messages"].add(r["message_id"])
        attrs = json.loads(r["attributes"]) if r["attributes"] else {}
        t["spawned_by"].add(attrs.get("claude", {}).get("spawned_by_tool_use_id"))
        t["parts"][r["part_type"]] += 1
        t["dates"].add(r["date"])
        t["models"].add(r["model"])
    for t in out.values():
        t["messages"] = len(t["messages"])
    return out


def test_hypaware_home_gives_what_the_hypaware_cache_holds() -> None:
    mine = read_transcripts([HOME / ".claude" / "projects", HOME / ".codex" / "sessions"])
    assert mine.skipped == [] and mine.files_read == 9
    cached = read_iceberg(CACHE)
    assert mine.table.num_rows == cached.num_rows == 39
    assert _shape(mine.table) == _shape(cached)
    # Claude ids are the native uuids on both paths, so part ids, order and thread starts
    # agree row for row.
    def claude_rows(t: pa.Table) -> set[tuple[Any, ...]]:
        return {(r["part_id"], r["message_index"], r["conversation_started_at"],
                 r["message_created_at"], r["tool_call_id"], r["tool_result_for"])
                for r in t.to_pylist() if r["provider"] == "anthropic"}
    assert claude_rows(mine.table) == claude_rows(cached)


def test_subagent_lines_never_make_sessions_of_their_own() -> None:
    table = read_transcripts([HOME / ".claude"]).table
    assert set(table["session_id"].to_pylist()) == {
        "5b0e7a52-1c7d-4c55-9a43-0f4a0c2d7a01", "7c2d9e14-3a6b-4f1e-8d20-5e6f7a8b9c02",
        "9e4f0a36-5b7c-4d8e-9f10-2a3b4c5d6e03"}


def test_transcript_kind_and_default_roots(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    assert transcript_kind(HOME / ".claude" / "projects") == "claude"
    assert transcript_kind(HOME / ".codex") == "codex"
    assert transcript_kind(TRANSCRIPTS / "claude-code-log" / "sidechain_integrated.jsonl") == (
        "claude")
    assert transcript_kind(TRANSCRIPTS / "claude-code-transcripts" / "sample_session.json") == (
        "claude")
    assert transcript_kind(TRANSCRIPTS / "claude-code-transcripts" /
                           "sample_kiro_export.json") is None
    assert transcript_kind(CACHE) is None
    assert transcript_kind(tmp_path / "missing") is None
    (tmp_path / ".claude" / "projects").mkdir(parents=True)
    (tmp_path / ".codex" / "archived_sessions").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    assert default_transcript_roots() == [tmp_path / ".claude" / "projects",
                                          tmp_path / ".codex" / "archived_sessions"]


def test_since_keeps_rows_from_that_moment() -> None:
    since = dt.datetime(2026, 11, 22, 8, 30, 10, tzinfo=dt.UTC)
    table = read_transcripts([HOME], since=since).table
    assert table.num_rows and min(table["message_created_at"].to_pylist()) >= since
    naive = read_transcripts([HOME], since=since.replace(tzinfo=None)).table
    assert naive.equals(table)


def test_missing_path_and_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such file"):
        read_transcripts([tmp_path / "nope"])
    write_jsonl(tmp_path / "ok.jsonl", [user("u1", "s", "2026-01-01T00:00:00Z", "hi")])
    (tmp_path / "gone.jsonl").symlink_to(tmp_path / "deleted-target.jsonl")
    result = read_transcripts([tmp_path])
    assert result.table.num_rows == 1
    assert [(Path(s.path).name, s.line) for s in result.skipped] == [("gone.jsonl", 0)]
    assert result.skipped[0].reason.startswith("cannot read file")


# ---- the incremental index ---------------------------------------------------------------

def _tree_state(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A writable copy of all fixture transcripts plus the HypAware home."""
    root = tmp_path / "transcripts"
    shutil.copytree(TRANSCRIPTS, root)
    shutil.copytree(HOME, root / "home")
    return root


def test_rebuild_reads_only_changed_files_and_equals_a_full_read(work: Path,
                                                                 tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    before = _tree_state(work)
    first = read_transcripts([work], cache_dir=cache)
    assert (cache / INDEX_NAME).is_file()
    assert first.files_read == 29 and first.files_reused == 0
    assert _tree_state(work) == before  # nothing written into the transcript folders

    again = read_transcripts([work], cache_dir=cache)
    assert (again.files_read, again.files_reused) == (0, 29)
    assert again.table.equals(first.table)
    assert again.skipped == first.skipped
    assert again.fingerprints == first.fingerprints

    # Change one session, touch another without changing it, add one, delete one.
    session = work / "claude-code-log" / "session_id_steering_order.jsonl"
    with session.open("a") as fh:
        fh.write(json.dumps(assistant("a3", "00000000-0295-4000-8000-000000000001",
                                      "2026-07-11T07:00:05Z", [text("more")], "a2")) + "\n")
    touched = work / "claude-code-log" / "dag_compact_after_rewind.jsonl"
    os.utime(touched, ns=(touched.stat().st_atime_ns, touched.stat().st_mtime_ns + 10**9))
    write_jsonl(work / "new.jsonl", [user("z1", "zz", "2026-02-02T00:00:00Z", "new")])
    (work / "claude-code-transcripts" / "sample_session.jsonl").unlink()

    rebuilt = read_transcripts([work], cache_dir=cache)
    assert (rebuilt.files_read, rebuilt.files_reused) == (2, 27)
    full = read_transcripts([work])
    assert rebuilt.table.equals(full.table)
    assert rebuilt.skipped == full.skipped
    # The files the index names are all there is: older segments' files are removed.
    index = json.loads(gzip.decompress((cache / INDEX_NAME).read_bytes()))
    named = {n for g in index["segments"] for n in (g["rows"], g["entries"])}
    assert {p.name for p in cache.glob("transcripts-*")} == named | {INDEX_NAME}
    assert len(index["segments"]) <= 2
    assert not (cache / "rows").exists()


def test_cross_file_links_hold_when_only_some_files_are_reread(work: Path,
                                                               tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    home = work / "home" / ".claude" / "projects" / "-home-dev-src-billing-svc"
    sid = "9e4f0a36-5b7c-4d8e-9f10-2a3b4c5d6e03"
    for meta in home.rglob("*.meta.json"):
        meta.unlink()  # links must now come from the parents' tool results (other files)
    read_transcripts([work], cache_dir=cache)
    nested = home / sid / "subagents" / "agent-c2ee44ff55aa66bb.jsonl"
    with nested.open("a") as fh:
        fh.write(json.dumps(dict(assistant("e2-extra", sid, "2026-11-22T08:30:10.500Z",
                                           [text("also pyyaml")]), isSidechain=True,
                                 agentId="c2ee44ff55aa66bb")) + "\n")
    # A resume of session B arrives: replays B's four messages, then continues.
    resume_session_b(home)

    rebuilt = read_transcripts([work], cache_dir=cache)
    assert rebuilt.files_read == 2
    assert rebuilt.table.equals(read_transcripts([work]).table)
    rows = [r for r in rebuilt.table.to_pylist() if r["provider"] == "anthropic"]
    links = {r["agent_id"]: json.loads(r["attributes"])["claude"]["spawned_by_tool_use_id"]
             for r in rows if r["session_id"] == sid and r["agent_id"]}
    assert links == {"c1aa11bb22cc33dd": "toolu_03SpawnC1", "c2ee44ff55aa66bb": "toolu_03SpawnC2"}
    resumed_rows = [r for r in rows if r["session_id"].startswith("bbbbbbbb")]
    assert [r["message_id"] for r in resumed_rows] == ["c0000002-new"]
    assert json.loads(resumed_rows[0]["attributes"]) == {
        "claude": {"resumed_from": "7c2d9e14-3a6b-4f1e-8d20-5e6f7a8b9c02"}}


def test_a_damaged_index_is_rebuilt_and_the_cache_stays_outside(work: Path,
                                                                tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / INDEX_NAME).write_text("{half a file")
    result = read_transcripts([work], cache_dir=cache)
    assert result.files_read == 29
    with pytest.raises(SourceError, match="inside a transcript folder"):
        read_transcripts([work], cache_dir=work / "claude-code-log" / ".graphkit")
    assert not (work / "claude-code-log" / ".graphkit").exists()


@pytest.mark.slow
def test_a_transcript_named_in_bytes_that_are_not_utf8_is_read_with_the_others(
        tmp_path: Path) -> None:
    # Was: a UnicodeEncodeError traceback (then, with the CLI's last resort, "s:bad…:
    # this name is not valid UTF-8") for the whole build: the file's name guessed its
    # session's group, hashed as strict UTF-8. Now it is read with the rest; its
    # skipped line names it (JSON escapes the byte as \udcff).
    fixture = REPO / "tests" / "fixtures" / "transcripts" / "claude-code-log"
    cold = graphkit("build", fixture, "--snapshot", tmp_path / "as-is", "--json")
    assert cold.returncode == 0, cold.stderr
    folder = tmp_path / "projects"
    shutil.copytree(fixture, folder)
    one = folder / "dag_compact_after_rewind_preserved.jsonl"
    with one.open("a") as f:
        f.write("not json\n")
    renamed = not_utf8(folder, "bad") + ".jsonl"
    os.rename(one, renamed)
    proc = graphkit("build", folder, "--snapshot", tmp_path / "snap", "--json")
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["rows_read"] == json.loads(cold.stdout)["rows_read"]
    assert renamed in [s["file"] for s in got["skipped_lines"]], got["skipped_lines"]


def test_type_names_that_are_no_text_are_skipped_lines_not_errors(tmp_path: Path) -> None:
    """A damaged line may carry a list or an object where a type name belongs: a skipped
    line saying so, never an unhashable-type error out of a set look-up."""
    write_jsonl(tmp_path / "-w" / "s.jsonl", [{"type": ["user"], "sessionId": "s"},
                                              {"type": {"a": 1}, "role": "user"}])
    thread = "019e0000-aaaa-7bbb-8ccc-ddddeeeeff21"
    write_jsonl(tmp_path / f"rollout-2026-11-30T12-00-00-{thread}.jsonl", [
        codex_meta("2026-11-30T12:00:00Z", thread),
        codex_line("2026-11-30T12:00:01Z", "response_item", {"type": ["message"]}),
        {"timestamp": "2026-11-30T12:00:02Z", "type": ["event_msg"], "payload": {}}])
    name = f"rollout-2026-11-30T12-00-00-{thread}.jsonl"
    assert sorted(skipped_lines(tmp_path)) == [
        (name, 2, "response_item whose type is not text is not read"),
        (name, 3, "rollout line type 'list' is not read"),
        ("s.jsonl", 1, "entry 'type' is not text"),
        ("s.jsonl", 2, "entry 'type' is not text")]
