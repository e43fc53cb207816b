"""Drift as a number: every build counts the record types it did not know (type → count,
first ``file:line``) in its summary and ``--json``, and ``graphkit check`` names them."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from graphkit.builds.run import build, check
from graphkit.cli.app import cli
from graphkit.sources.transcripts.drift import CHECK
from tests.helpers.transcripts import assistant, codex_line, codex_meta, text, user, write_jsonl

SESSION = "d71f0000-0000-4000-8000-000000000001"


def _tree(tmp_path: Path) -> Path:
    """A Claude session with two lines of one new type and one of another, and a Codex
    rollout with a new line type and a new item type."""
    root = tmp_path / "src"
    write_jsonl(root / "claude" / "-w" / f"{SESSION}.jsonl", [
        user("u1", SESSION, "2026-12-01T10:00:00Z", "hi"),
        {"type": "future-probe", "sessionId": SESSION, "n": 1},
        assistant("a1", SESSION, "2026-12-01T10:00:01Z", [text("hello")], parent="u1"),
        {"type": "future-probe", "sessionId": SESSION, "n": 2},
        {"type": "other-probe", "sessionId": SESSION}])
    thread = "019f0000-0000-7000-8000-000000000001"
    write_jsonl(root / "codex" / f"rollout-2026-12-01T10-00-00-{thread}.jsonl", [
        codex_meta("2026-12-01T10:00:00Z", thread),
        codex_line("2026-12-01T10:00:01Z", "response_item", {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "go"}]}),
        codex_line("2026-12-01T10:00:02Z", "future_line", {"x": 1}),
        codex_line("2026-12-01T10:00:03Z", "response_item", {"type": "future_item"})])
    return root


def test_the_summary_counts_unknown_types_with_their_first_place(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    summary = build([root / "claude", root / "codex"], fingerprints=False).summary()
    claude = str(root / "claude" / "-w" / f"{SESSION}.jsonl")
    got = summary["unknown_records"]
    assert got["claude:future-probe"] == {"count": 2, "first": f"{claude}:2"}
    assert got["claude:other-probe"] == {"count": 1, "first": f"{claude}:5"}
    assert {k: v["count"] for k, v in got.items()} == {
        "claude:future-probe": 2, "claude:other-probe": 1, "codex:future_line": 1,
        "codex:response_item:future_item": 1}
    assert got["codex:future_line"]["first"].endswith(".jsonl:3")


def test_a_build_of_known_types_reports_none(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "-w" / f"{SESSION}.jsonl", [
        user("u1", SESSION, "2026-12-01T10:00:00Z", "hi"),
        {"type": "summary", "summary": "t", "leafUuid": "u1"}])
    assert "unknown_records" not in build([tmp_path], fingerprints=False).summary()


def test_build_json_and_check_name_them(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    runner = CliRunner()
    snap = tmp_path / "snap"
    r = runner.invoke(cli, ["build", str(root / "claude"), "--snapshot", str(snap), "--json",
                            "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["unknown_records"]["claude:future-probe"]["count"] == 2
    r = runner.invoke(cli, ["build", str(root / "claude"), "--snapshot", str(snap)])
    assert "unknown record types: 2 (claude:future-probe ×2" in r.stdout
    # a rebuild that keeps the snapshot says it too
    r = runner.invoke(cli, ["build", str(root / "claude"), "--snapshot", str(snap), "--json",
                            "-q"])
    assert json.loads(r.stdout)["unknown_records"]["claude:other-probe"]["count"] == 1
    _, findings = check([root / "claude", root / "codex"])
    found = [f for f in findings if f.check == CHECK]
    assert len(found) == 1 and found[0].count == 4
    assert "claude:future-probe (2, first at" in found[0].message
    r = runner.invoke(cli, ["check", str(root / "codex"), "--json"])
    assert CHECK in {f["check"] for f in json.loads(r.stdout)}


def test_a_type_name_with_quotes_is_counted_as_written(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "-w" / f"{SESSION}.jsonl", [
        user("u1", SESSION, "2026-12-01T10:00:00Z", "hi"),
        {"type": "it's \"new\"", "sessionId": SESSION}])
    got = build([tmp_path], fingerprints=False).summary()["unknown_records"]
    assert list(got) == ["claude:it's \"new\""]
