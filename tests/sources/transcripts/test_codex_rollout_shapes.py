"""Codex 0.14x–0.17x rollouts: compressed rollouts, paginated forks, usage with no message
or before the first answer, review runs linked by time, user turns written only as
``item_completed`` events (fixtures under ``tests/fixtures/shaped/``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphkit.builds.run import build
from graphkit.sources.transcripts import read_transcripts
from tests.helpers.paths import SHAPED
from tests.helpers.transcripts import codex_line, codex_meta, write_jsonl


def _threads(*sources: Path) -> dict[str, dict[str, Any]]:
    graph = build(list(sources), fingerprints=False).graph
    return {r["thread_id"]: r for r in graph.nodes["Thread"].table.to_pylist()}


def _tokens(t: dict[str, Any]) -> tuple[Any, ...]:
    return (t["messages"], t["input_tokens"], t["output_tokens"], t["cache_read_input_tokens"])


def test_a_compressed_rollout_is_read_and_a_plain_copy_beside_it_wins() -> None:
    threads = _threads(SHAPED / "codex-zstd-rollout")
    assert _tokens(threads["019f2000-0000-7000-8000-000000000001"]) == (2, 500, 30, 0)
    # the .zst copy holds an older, shorter rollout: the plain one is read, alone
    assert _tokens(threads["019f2000-0000-7000-8000-000000000002"]) == (2, 600, 40, 0)
    files = read_transcripts([SHAPED / "codex-zstd-rollout"]).fingerprints
    names = sorted(Path(f["path"]).name for f in files)
    assert [n.endswith("0001.jsonl.zst") for n in names] == [True, False]
    assert names[1].endswith("0002.jsonl")


def test_a_compressed_rollout_given_alone_and_a_broken_one(tmp_path: Path) -> None:
    z = next((SHAPED / "codex-zstd-rollout").rglob("*0001.jsonl.zst"))
    assert read_transcripts([z]).table.num_rows == 2
    bad = tmp_path / "rollout-2026-09-11T08-00-00-019f2000-0000-7000-8000-00000000000f.jsonl.zst"
    bad.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 40)  # a zstd header, then nothing
    result = read_transcripts([tmp_path])
    assert result.table.num_rows == 0 and len(result.skipped) == 1
    bad.write_bytes(b"plain text, no zstd at all")
    result = read_transcripts([tmp_path])
    assert [(s.line, s.reason[:40]) for s in result.skipped] == [
        (0, "cannot read file: not zstd data that can")]


def test_a_paginated_fork_keeps_its_own_messages_and_usage() -> None:
    """``history_base.end_ordinal_exclusive`` is an ordinal of the source: the fork's
    rollout holds only its own records (none was taken for a copy), and its first total,
    which counts the source's response too, gives way to its own last usage."""
    threads = _threads(SHAPED / "codex-paginated-fork")
    assert _tokens(threads["019f3000-0000-7000-8000-000000000002"]) == (2, 400, 70, 0)
    assert _tokens(threads["019f3000-0000-7000-8000-000000000001"]) == (2, 1000, 50, 0)


def test_a_spawned_child_with_usage_and_no_messages_stays() -> None:
    threads = _threads(SHAPED / "codex-usage-only")
    kid = threads["019f4000-0000-7000-8000-000000000002"]
    assert (kid["session_id"], kid["kind"]) == ("019f4000-0000-7000-8000-000000000001",
                                                "child-thread")
    assert _tokens(kid) == (1, 300, 12, 0)
    # the parent's count came before its answer: the answer's, not lost
    assert _tokens(threads["019f4000-0000-7000-8000-000000000001"]) == (2, 600, 45, 200)


def test_usage_before_the_first_answer_of_a_fork_stays_a_baseline(tmp_path: Path) -> None:
    src, fork = "019f7000-0000-7000-8000-000000000001", "019f7000-0000-7000-8000-000000000002"
    total = {"info": {"total_token_usage": {"input_tokens": 900, "cached_input_tokens": 0,
                                            "output_tokens": 9}}, "type": "token_count"}
    write_jsonl(tmp_path / f"rollout-2026-09-16T10-00-00-{fork}.jsonl", [
        codex_meta("2026-09-16T10:00:00Z", fork, forked_from_id=src),
        codex_line("2026-09-16T10:00:01Z", "event_msg", total),
        codex_line("2026-09-16T10:00:02Z", "response_item", {
            "type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "own"}]})])
    threads = _threads(tmp_path)
    assert threads[fork]["input_tokens"] is None


def test_a_review_run_is_linked_by_time_or_said_unlinked() -> None:
    result = read_transcripts([SHAPED / "codex-review-by-time"])
    rows = {r["conversation_id"]: r for r in result.table.to_pylist()}
    # its parent entered review mode 40 ms after the run's first line, same cwd
    assert rows["019f5000-0000-7000-8000-000000000002"]["session_id"] == \
        "019f5000-0000-7000-8000-000000000001"
    # two threads of its cwd entered review mode within 100 ms: no guess, said
    orphan = rows["019f5000-0000-7000-8000-000000000005"]
    assert orphan["parent_thread_id"] is None
    assert json.loads(orphan["attributes"])["codex"]["agent_kind"] == "orphan"
    found = [f for f in result.findings if f["check"] == "orphan-subagent"]
    assert [e["thread_id"] for e in found[0]["examples"]] == [
        "019f5000-0000-7000-8000-000000000005"]


def test_user_turns_written_only_as_item_completed_are_read() -> None:
    table = read_transcripts([SHAPED / "codex-item-completed"]).table
    said = [(r["role"], r["content_text"]) for r in table.to_pylist()]
    assert ("user", "Bump the version.") in said and ("user", "And tag it.") in said
    # the answers come from their response items, once each
    assert [t for r, t in said if r == "assistant"] == ["Bumped to 1.4.0.", "Tagged v1.4.0."]


@pytest.mark.parametrize("item", [None, "x", {"type": "UserMessage"},
                                  {"type": "UserMessage", "content": "text"},
                                  {"type": "UserMessage", "content": [{"text": 5}]},
                                  {"type": "FutureItem", "content": []}])
def test_hostile_item_completed_events(tmp_path: Path, item: Any) -> None:
    thread = "019f8000-0000-7000-8000-000000000001"
    write_jsonl(tmp_path / f"rollout-2026-09-16T10-00-00-{thread}.jsonl", [
        codex_meta("2026-09-16T10:00:00Z", thread),
        codex_line("2026-09-16T10:00:01Z", "event_msg", {"type": "item_completed",
                                                         "item": item})])
    result = read_transcripts([tmp_path])
    assert result.table.num_rows == 0
    build([tmp_path], fingerprints=False)
