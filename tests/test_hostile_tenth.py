"""Tenth hostile round (tests/HOSTILE.md, "# Tenth round"): the leftover of round nine
and what the round's driver found. Each test failed before its fix unless it says it
pins what held."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sources.builders import assistant, tool_use, user, write_jsonl
from tests.test_hostile_inputs import graphkit

# --- 1. a subagent's sidecar's lone surrogate is counted and named ----------------------

SESSION = "11111111-0000-4000-8000-000000000001"


def _session_with_a_sidecar(root: Path, sidecar: str) -> Path:
    """A Claude project: a session that spawns one subagent, whose ``.meta.json`` sidecar
    is ``sidecar``; returns the sidecar's path."""
    project = root / "projects" / "-w"
    write_jsonl(project / f"{SESSION}.jsonl", [
        user("u1", SESSION, "2026-11-20T10:00:00Z", "hello"),
        assistant("a1", SESSION, "2026-11-20T10:00:01Z",
                  [tool_use("toolu_1", "Task", description="x", prompt="p")], "u1"),
    ])
    line = user("s1", SESSION, "2026-11-20T10:00:02Z", "sub")
    line.update(isSidechain=True, agentId="abc123")
    agents = project / SESSION / "subagents"
    write_jsonl(agents / "agent-abc123.jsonl", [line])
    meta = agents / "agent-abc123.meta.json"
    meta.write_text(sidecar)
    return meta


def _lone_notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "lone surrogate" in line]


@pytest.mark.parametrize("splice", ["1", "0"])
def test_a_sidecars_lone_surrogate_is_counted_and_named_by_its_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, splice: str) -> None:
    # Was: the sidecar's description was made U+FFFD without a word (round nine counted
    # the transcripts' lines only). Now it is a line of the lone-surrogate finding, named
    # FILE:LINE, in build (cold and after an append, whose sidecar comes from the index),
    # check and rows.
    monkeypatch.setenv("GRAPHKIT_SPLICE", splice)
    meta = _session_with_a_sidecar(tmp_path, '{"agentType": "Explore",\n'
                                             ' "description": "pair \\ud83d\\ude00 ok",\n'
                                             ' "toolUseId": "toolu_1", "x": "\\\\ud800",\n'
                                             ' "y": "cut \\ud83d here"}')
    projects = meta.parents[3]
    named = "1 transcript line(s) held an escaped lone surrogate"
    snap = tmp_path / "snap"
    proc = graphkit("build", projects, "--snapshot", snap)
    assert proc.returncode == 0, proc.stderr
    notes = _lone_notes(proc.stderr)
    assert len(notes) == 1 and named in notes[0] and notes[0].endswith(f"{meta}:4"), notes

    with (meta.parents[2] / f"{SESSION}.jsonl").open("a") as f:
        f.write(json.dumps(user("u9", SESSION, "2026-11-20T10:00:09Z", "more", "a1")) + "\n")
    again = graphkit("build", projects, "--snapshot", snap)
    assert again.returncode == 0, again.stderr
    assert _lone_notes(again.stderr) == notes

    check = graphkit("check", projects, "--json")
    found = [f for f in json.loads(check.stdout) if f["check"] == "lone-surrogate"]
    assert [(f["count"], f["examples"]) for f in found] == [
        (1, [{"file": str(meta), "line": 4}])]
    rows = graphkit("rows", projects, "--out", tmp_path / "r.parquet")
    assert rows.returncode == 0 and _lone_notes(rows.stderr) == notes, rows.stderr


def test_a_whole_sidecar_says_nothing(tmp_path: Path) -> None:
    """Pins what held: a whole pair and an escaped backslash before ``ud800`` are no
    repair."""
    meta = _session_with_a_sidecar(
        tmp_path, '{"description": "pair \\ud83d\\ude00", "x": "\\\\ud800"}')
    proc = graphkit("build", meta.parents[3], "--snapshot", tmp_path / "snap")
    assert proc.returncode == 0, proc.stderr
    assert _lone_notes(proc.stderr) == []
