"""Ninth hostile round (tests/HOSTILE.md, "# Ninth round"): the leftovers of round eight
and what the round's driver found. Each test failed before its fix unless it says it
pins what held."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.sources.builders import (
    assistant,
    codex_message,
    codex_meta,
    text,
    user,
    write_jsonl,
)
from tests.test_hostile_inputs import graphkit

# --- 1. transcripts' lone surrogates are counted and named -----------------------------

SESSION = "11111111-0000-4000-8000-000000000001"
THREAD = "22222222-2222-4222-8222-222222222222"


def _transcripts_with_lone_surrogates(root: Path) -> tuple[Path, Path]:
    """A Claude project (lines 2 and 4 hold half a pair; line 3 a whole pair) and a
    Codex rollout (line 2 holds one): three lines changed in all."""
    claude = write_jsonl(root / "projects" / "-w" / f"{SESSION}.jsonl", [
        user("u1", SESSION, "2026-11-20T10:00:00Z", "hello"),
        assistant("a1", SESSION, "2026-11-20T10:00:01Z", [text("cut \ud83d here")], "u1"),
        user("u2", SESSION, "2026-11-20T10:00:02Z", "pair \U0001f600 ok", "a1"),
        user("u3", SESSION, "2026-11-20T10:00:03Z", "again \udc00", "u2"),
    ])
    codex = write_jsonl(root / "codex" / f"rollout-2026-11-20T10-00-00-{THREAD}.jsonl", [
        codex_meta("2026-11-20T10:00:00Z", THREAD),
        codex_message("2026-11-20T10:00:01Z", "user", "x\ud800y"),
    ])
    return claude, codex


def _lone_note(stderr: str) -> str:
    found = [line for line in stderr.splitlines() if "lone surrogate" in line]
    assert len(found) == 1, stderr
    return found[0]


@pytest.mark.parametrize("splice", ["1", "0"])
def test_lone_surrogates_in_transcripts_are_counted_and_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, splice: str) -> None:
    # Was: replaced by U+FFFD without a word (round eight's row files say how many and
    # where). Now counted per line, with the first file:line, in build (spliced and
    # whole, cold and over kept state), check and rows.
    monkeypatch.setenv("GRAPHKIT_SPLICE", splice)
    claude, codex = _transcripts_with_lone_surrogates(tmp_path)
    first = f"the first at {codex}:2"
    snap = tmp_path / "snap"
    proc = graphkit("build", claude.parent.parent, codex.parent, "--snapshot", snap)
    assert proc.returncode == 0, proc.stderr
    note = _lone_note(proc.stderr)
    assert "3 transcript line(s) held an escaped lone surrogate" in note and first in note

    # One more line: the file is parsed again (or its group kept), the others reused.
    with claude.open("a") as f:
        f.write(json.dumps(user("u4", SESSION, "2026-11-20T10:00:04Z", "more", "u3")) + "\n")
    again = graphkit("build", claude.parent.parent, codex.parent, "--snapshot", snap)
    assert again.returncode == 0, again.stderr
    assert _lone_note(again.stderr) == note

    check = graphkit("check", claude.parent.parent, codex.parent, "--json")
    found = [f for f in json.loads(check.stdout) if f["check"] == "lone-surrogate"]
    assert [(f["count"], f["examples"]) for f in found] == [(3, [
        {"file": str(codex), "line": 2}, {"file": str(claude), "line": 2},
        {"file": str(claude), "line": 4}])]

    rows = graphkit("rows", claude.parent.parent, codex.parent, "--out", tmp_path / "r.parquet")
    assert rows.returncode == 0, rows.stderr
    assert first in _lone_note(rows.stderr)


def test_a_loglines_document_names_the_logline_of_its_lone_surrogate(tmp_path: Path) -> None:
    from graphkit.sources.transcripts.claude import parse_claude

    doc = tmp_path / f"{SESSION}.json"
    doc.write_text(json.dumps({"loglines": [
        user("u1", SESSION, "2026-11-20T10:00:00Z", "fine \U0001f600"),
        user("u2", SESSION, "2026-11-20T10:00:01Z", "half \ud800", "u1")]}))
    parse = parse_claude(doc, doc.read_bytes())
    assert parse.facts["lone_surrogate_lines"] == [2]
    assert parse.num_rows == 2


def test_a_transcript_without_lone_surrogates_keeps_its_facts_as_they_were(
        tmp_path: Path) -> None:
    """Pins what held: other files' facts (and so the index) gain no key."""
    from graphkit.sources.transcripts.claude import parse_claude

    claude, _ = _transcripts_with_lone_surrogates(tmp_path)
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(b"\n".join(ln for ln in claude.read_bytes().splitlines()
                                 if b"\\ud" not in ln) + b"\n")
    assert "lone_surrogate_lines" not in parse_claude(plain, plain.read_bytes()).facts
    assert os.path.getsize(plain) > 0
