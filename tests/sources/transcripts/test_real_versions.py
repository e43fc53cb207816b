"""Transcripts as real Claude Code and Codex versions write them (issue 9, items 3-5).

Each case reads a small fixture under ``tests/fixtures/shaped/`` written in the
real format (see ``tests/fixtures/shaped/README.md``), or builds one in ``tmp_path``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from graphkit.core.errors import SourceError
from graphkit.sources.transcripts import default_transcript_roots, read_transcripts
from tests.helpers.paths import SHAPED
from tests.helpers.transcripts import assert_well_formed, fixtures, user, write_jsonl


def read(*paths: Path, **kw: Any) -> pa.Table:
    table = read_transcripts(list(paths), **kw).table
    assert_well_formed(table)
    return table


def threads(table: pa.Table) -> dict[tuple[str, str | None], dict[str, Any]]:
    """(session, agent or Codex thread) → rows, attributes of the thread."""
    out: dict[tuple[str, str | None], dict[str, Any]] = {}
    for r in table.to_pylist():
        key = (r["session_id"], r["agent_id"] or r["conversation_id"])
        t = out.setdefault(key, {"rows": 0, "messages": set(), "attrs": r["attributes"],
                                 "parent": r["parent_thread_id"]})
        t["rows"] += 1
        t["messages"].add(r["message_id"])
    for t in out.values():
        t["messages"] = len(t["messages"])
        attrs = json.loads(t["attrs"]) if t["attrs"] else {}
        t["claude"] = attrs.get("claude", {})
        t["codex"] = attrs.get("codex", {})
    return out


# -- default sources ------------------------------------------------------------------------
def test_default_roots_honour_claude_config_dir_and_codex_home(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, claude, codex = tmp_path / "home", tmp_path / "cc", tmp_path / "cx"
    for folder in (home / ".claude" / "projects", claude / "projects", codex / "sessions",
                   codex / "archived_sessions"):
        folder.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("CODEX_HOME", str(codex))
    assert default_transcript_roots() == [claude / "projects", codex / "sessions",
                                          codex / "archived_sessions"]
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.delenv("CODEX_HOME")
    assert default_transcript_roots() == [home / ".claude" / "projects"]


# -- Claude Code ----------------------------------------------------------------------------
def test_subagent_file_with_agent_session_id_belongs_to_its_folder_session() -> None:
    # Its lines say sessionId "agent-5e0c9a1f"; the folder says the session.
    table = read(SHAPED / "claude-agent-session-id")
    got = threads(table)
    session = "7d1c2a40-1111-4e2a-9c55-3b1f00000001"
    assert set(got) == {(session, None), (session, "5e0c9a1f")}
    assert got[(session, "5e0c9a1f")]["claude"]["spawned_by_tool_use_id"] == "toolu_01Explore1"
    assert got[(session, "5e0c9a1f")]["messages"] == 4


def test_synthetic_sidechain_ids_are_scoped_by_session(tmp_path: Path) -> None:
    # Two sessions, each with an inline sidechain line that has no uuid and no spawning
    # call: their made-up agent ids must differ.
    for sid in ("s-one", "s-two"):
        side = user("", sid, "2026-01-01T00:00:01Z", "inspect", isSidechain=True)
        del side["uuid"]
        write_jsonl(tmp_path / "p" / f"{sid}.jsonl", [
            user(f"{sid}-u", sid, "2026-01-01T00:00:00Z", "hello"), side])
    got = threads(read(tmp_path))
    agents = {agent: session for session, agent in got if agent is not None}
    assert len(agents) == 2 and set(agents.values()) == {"s-one", "s-two"}


# -- Codex ----------------------------------------------------------------------------------
def test_rollout_with_only_session_meta_is_a_counted_skip() -> None:
    result = read_transcripts([SHAPED / "codex-meta-only"])
    assert result.table.num_rows == 0
    [skip] = result.skipped
    assert skip.path.endswith("5c6d7e8f9a01.jsonl") and skip.line == 0
    assert "no messages" in skip.reason


# -- accounting -----------------------------------------------------------------------------
def test_strict_message_for_a_whole_file_names_the_file(tmp_path: Path) -> None:
    shutil.copytree(SHAPED / "codex-meta-only", tmp_path / "c")
    with pytest.raises(SourceError) as info:
        read_transcripts([tmp_path / "c"], strict=True)
    message = str(info.value)
    assert "line" not in message.split(": ", 1)[1]  # no "fix or remove that line"
    assert "file" in message


def test_skipped_lines_are_all_listed(tmp_path: Path) -> None:
    lines = [user("u0", "s", "2026-01-01T00:00:00Z", "hi")]
    path = write_jsonl(tmp_path / "p" / "s.jsonl", lines)
    with path.open("a") as f:
        for _ in range(40):
            f.write("{not json\n")
    result = read_transcripts([tmp_path])
    assert [s.line for s in result.skipped] == list(range(2, 42))



def test_parallel_inline_sidechains_link_to_their_own_calls() -> None:
    # Two Task calls in one assistant message, both open while both inline chains run:
    # timing cannot tell them apart, the chains' first prompts can.
    got = threads(read(SHAPED / "claude-parallel-sidechains"))
    session = "3b9e61f0-2222-4c1d-8e7f-6a5b00000002"
    spawned = {t["claude"].get("spawned_by_tool_use_id"): t["messages"]
               for (s, agent), t in got.items() if agent is not None}
    assert spawned == {"toolu_01Audit": 4, "toolu_01Todos": 4}
    assert got[(session, None)]["messages"] == 5  # the two calls share one message.id


def test_warmup_agent_is_classified_and_counted_not_an_orphan() -> None:
    result = read_transcripts([SHAPED / "claude-warmup"])
    got = threads(result.table)
    warmup = got[("c0ffee00-3333-4a5b-9c8d-000000000003", "9a8b7c6d")]["claude"]
    assert warmup == {"agent_type": "warmup", "agent_kind": "warmup"}
    assert result.agents == {"warmup": 1}
    assert result.findings == []


def test_compaction_run_is_a_thread_of_its_session_classified_and_counted() -> None:
    result = read_transcripts([SHAPED / "claude-compaction"])
    got = threads(result.table)
    session = "acce55ed-4444-4b6c-8d9e-000000000004"
    compaction = got[(session, "acompact-5d4c3b2a1f0e9d8c")]
    assert compaction["claude"] == {"agent_type": "compaction", "agent_kind": "compaction"}
    assert compaction["messages"] == 2
    assert got[(session, None)]["messages"] == 5
    assert result.agents == {"compaction": 1} and result.findings == []


def test_subagent_whose_session_file_is_missing_is_reported() -> None:
    result = read_transcripts([SHAPED / "claude-missing-session"])
    assert result.table.num_rows == 2  # its rows are kept
    [finding] = result.findings
    assert finding["check"] == "missing-session" and finding["count"] == 1
    assert finding["examples"] == [{"session_id": "0ddba11e-5555-4c7d-8e9f-000000000005",
                                    "agent_id": "b1e2f3a4c5d6e7f8"}]


def test_subagent_with_no_spawning_call_is_an_orphan_reported(tmp_path: Path) -> None:
    shutil.copytree(SHAPED / "claude-agent-session-id", tmp_path / "p")
    main = next((tmp_path / "p").rglob("7d1c2a40-1111-4e2a-9c55-3b1f00000001.jsonl"))
    # Keep the session's first prompt only: nothing names the subagent any more.
    main.write_text(main.read_text().splitlines()[0] + "\n")
    result = read_transcripts([tmp_path / "p"])
    got = threads(result.table)
    assert got[("7d1c2a40-1111-4e2a-9c55-3b1f00000001", "5e0c9a1f")]["claude"] == {
        "agent_kind": "orphan"}
    assert [f["check"] for f in result.findings] == ["orphan-subagent"]
    assert result.agents == {"orphan": 1}


def test_check_reports_a_subagent_whose_session_file_is_missing() -> None:
    from graphkit.builds.run import check

    _, findings = check(SHAPED / "claude-missing-session")
    [missing] = [f for f in findings if f.check == "missing-session"]
    assert missing.examples[0]["agent_id"] == "b1e2f3a4c5d6e7f8"


def test_check_and_build_agree_about_malformed_lines() -> None:
    from graphkit.builds.run import build, check

    malformed = fixtures() / "transcripts" / "claude-code-log" / "codex" / "malformed"
    built = build(malformed, fingerprints=False)
    _, findings = check(malformed)
    [skipped] = [f for f in findings if f.check == "skipped-lines"]
    assert skipped.count == built.summary()["lines_skipped"] == 1
    assert skipped.examples[0]["line"] == built.sources.skipped[0]["line"] == 3


CODEX_PARENT = "019b2c3d-4e5f-7a6b-8c9d-0e1f2a3b4c01"


def _codex_texts(table: pa.Table, thread: str) -> list[str]:
    rows = [r for r in table.to_pylist() if r["conversation_id"] == thread]
    return [r["content_text"] for r in sorted(rows, key=lambda r: r["message_index"])]


def test_forked_child_keeps_only_its_own_history_by_ordinal() -> None:
    # The child's copy of its parent's history is stamped at fork time (no timestamp
    # tells it apart); subagent_history_start_ordinal and the records' ordinals do.
    table = read(SHAPED / "codex-fork-ordinal")
    child = "019b2c3d-5f60-7b7c-9dae-1f2a3b4c5d02"
    assert _codex_texts(table, child) == [
        "Profile GET /search and report the slowest call.",
        "search/db.py issues one query per result row (N+1)."]
    got = threads(table)
    assert got[(CODEX_PARENT, child)]["parent"] == CODEX_PARENT
    assert got[(CODEX_PARENT, CODEX_PARENT)]["messages"] == 5


def test_forked_thread_without_ordinals_drops_the_replayed_prefix() -> None:
    table = read(SHAPED / "codex-fork-replay")
    fork = "019b3d4e-6071-7c8d-9eaf-203b4c5d6e03"
    assert _codex_texts(table, fork) == ["Instead, add a cache in front of /search.",
                                         "Added an LRU cache keyed by query."]


def test_review_subagent_is_a_child_of_the_thread_that_ran_the_review() -> None:
    result = read_transcripts([SHAPED / "codex-review"])
    assert_well_formed(result.table)
    got = threads(result.table)
    parent = "019a5e6f-7081-7293-a4b5-c6d7e8f90a11"
    review = got[(parent, "019a5e6f-8192-73a4-b5c6-d7e8f90a1b22")]  # under the parent's session
    assert review["parent"] == parent
    assert review["codex"]["subagent"] == "review"
    # A review whose parent rollout is missing: an orphan, marked a subagent, reported.
    orphan_id = "019a5f70-92a3-74b5-c6d7-e8f90a1b2c33"
    orphan = got[(orphan_id, orphan_id)]
    assert orphan["parent"] is None and orphan["codex"]["agent_kind"] == "orphan"
    rows = [r for r in result.table.to_pylist() if r["conversation_id"] == orphan_id]
    assert {(r["is_sidechain"], r["user_type"]) for r in rows} == {(True, "subagent")}
    [finding] = result.findings
    assert finding["check"] == "orphan-subagent" and finding["examples"] == [
        {"thread_id": orphan_id, "source": "subagent", "subagent": "review"}]
    assert result.agents == {"orphan": 1, "subagent": 1}


def test_header_less_transcript_gives_one_answer_at_every_folder_level() -> None:
    # Claude Code 2.x files often open with many file-history-snapshot lines: whichever
    # level is named (the file, its folder, a parent folder), the rows are the same, and
    # never rows without a session.
    from graphkit.sources.full_schema import read_message_rows

    root = SHAPED / "claude-headerless"
    file = next(root.rglob("*.jsonl"))
    tables = [read_message_rows([p], include_content=True).table
              for p in (file, file.parent, root)]
    assert tables[0].num_rows == 2 and tables[0]["session_id"].null_count == 0
    assert all(t.equals(tables[0]) for t in tables[1:])


def test_header_less_codex_rollout_builds_at_every_folder_level(tmp_path: Path) -> None:
    # A rollout whose session_meta line was lost: the thread comes from the file name.
    from graphkit.builds.run import build

    parent = SHAPED / "codex-fork-ordinal" / "sessions" / "2026" / "02" / "10"
    source = next(parent.glob("rollout-*4c01.jsonl"))
    folder = tmp_path / "sessions" / "2026" / "02" / "10"
    folder.mkdir(parents=True)
    lines = source.read_text().splitlines()[1:]  # without its session_meta
    (folder / source.name).write_text("\n".join(lines) + "\n")
    counts = [build(p, fingerprints=False).graph.node_counts()
              for p in (folder / source.name, folder, tmp_path / "sessions", tmp_path)]
    assert counts[0]["Session"] == counts[0]["Thread"] == 1
    assert all(c == counts[0] for c in counts[1:])


def test_duplicate_uuid_with_conflicting_content_is_counted() -> None:
    result = read_transcripts([SHAPED / "claude-duplicate-uuid"])
    assert result.table.num_rows == 4  # each uuid once, the first copy kept
    [conflict] = result.skipped      # the identical repeat (line 3) is no problem
    assert conflict.line == 5
    assert "d-003" in conflict.reason and "line 4" in conflict.reason


def test_warmup_and_compaction_threads_show_their_kind_in_the_graph(tmp_path: Path) -> None:
    """The default contract takes the reader's agent_kind as the Thread's kind
    (what `tree` and the view show); their tokens still count in the session's
    total but not as its main loop's own."""
    from graphkit.builds.run import build

    graph = build([SHAPED / "claude-warmup", SHAPED / "claude-compaction"],
                  fingerprints=False).graph
    kinds = dict(zip(graph.nodes["Thread"].table.column("thread_id").to_pylist(),
                     graph.nodes["Thread"].table.column("kind").to_pylist(), strict=True))
    assert kinds["9a8b7c6d"] == "warmup"
    assert kinds["acompact-5d4c3b2a1f0e9d8c"] == "compaction"
    assert kinds["acce55ed-4444-4b6c-8d9e-000000000004"] == "main"
