r"""A lone UTF-16 surrogate escaped in a transcript (JavaScript writes ``"\ud83d"`` when it
cuts a string inside an emoji) is read as U+FFFD, in ids, keys, text and agent sidecars;
a whole pair stays the character it names. Before, such a line crashed the build."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from graphkit.builds.run import build
from tests.helpers.cli import graphkit
from tests.helpers.transcripts import (
    assistant,
    codex_message,
    codex_meta,
    text,
    tool_use,
    user,
    write_jsonl,
)

HALF = "\ud83d"  # the first half of 😀's pair, alone


def _write(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # json.dumps escapes the lone surrogate as \ud83d, as Claude Code and Codex write it
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _claude(root: Path) -> Path:
    sid = f"s{HALF}1"
    base = {"sessionId": sid, "cwd": "/w", "isSidechain": False}
    _write(root / "proj" / "s1.jsonl", [
        {**base, "type": "user", "uuid": "u1", "parentUuid": None,
         "timestamp": "2026-01-02T10:00:00.000Z",
         "message": {"role": "user", "content": f"cut {HALF} here, whole \ud83d\ude00"}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "timestamp": "2026-01-02T10:00:01.000Z",
         "message": {"id": "m1", "role": "assistant", "model": "claude-x",
                     "content": [{"type": "tool_use", "id": "t1", "name": "Task",
                                  "input": {f"k{HALF}": "v", "prompt": "go"}}]}},
    ])
    agent = {"sessionId": sid, "cwd": "/w", "isSidechain": True, "agentId": "ag1"}
    _write(root / "proj" / "s1" / "subagents" / "agent-ag1.jsonl", [
        {**agent, "type": "user", "uuid": "u2", "parentUuid": None,
         "timestamp": "2026-01-02T10:00:02.000Z",
         "message": {"role": "user", "content": "go"}},
    ])
    meta = root / "proj" / "s1" / "subagents" / "agent-ag1.meta.json"
    meta.write_text(json.dumps({"agentType": f"explore{HALF}", "description": "d"}))
    return root


def _codex(root: Path) -> Path:
    _write(root / "2026" / "01" / "02" / "rollout-2026-01-02T10-00-00-x.jsonl", [
        {"timestamp": "2026-01-02T10:00:00.000Z", "type": "session_meta",
         "payload": {"id": f"c{HALF}1", "timestamp": "2026-01-02T10:00:00.000Z", "cwd": "/w",
                     "originator": "codex_cli_rs", "cli_version": "0.1"}},
        {"timestamp": "2026-01-02T10:00:01.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": f"hi {HALF}"}]}},
    ])
    return root


def _values(result: object, label: str, column: str) -> list[str]:
    nodes = result.graph.nodes[label]  # type: ignore[attr-defined]
    return nodes.table.column(column).to_pylist()


def test_claude_lines_with_a_lone_surrogate_are_kept_with_u_fffd(tmp_path: Path) -> None:
    result = build([_claude(tmp_path / "claude")])
    assert _values(result, "Session", "session_id") == ["s\ufffd1"]
    threads = result.graph.nodes["Thread"].table.to_pylist()
    assert len(threads) == 2  # the main thread and the subagent, linked under one session
    agents = result.graph.nodes["Agent"].table.to_pylist()
    assert [a.get("agent_type") for a in agents] == ["explore\ufffd"]


def test_a_codex_thread_id_with_a_lone_surrogate_is_kept_with_u_fffd(tmp_path: Path) -> None:
    result = build([_codex(tmp_path / "codex")])
    assert _values(result, "Session", "session_id") == ["c\ufffd1"]


def test_content_keeps_a_whole_pair_and_replaces_only_the_half(tmp_path: Path) -> None:
    result = build([_claude(tmp_path / "claude")], include_content=True,
                   granularity="message")
    texts = [t for t in _values(result, "Message", "text") if t]
    assert any("cut \ufffd here, whole \U0001f600" in t for t in texts), texts


def test_a_replayed_line_with_a_lone_surrogate_is_the_same_line(tmp_path: Path) -> None:
    # A uuid written twice is compared with its first copy, read again from the file;
    # both copies must read alike, or the replay is reported as a conflict.
    line = {"sessionId": "s1", "cwd": "/w", "isSidechain": False, "type": "user",
            "uuid": "u1", "parentUuid": None, "timestamp": "2026-01-02T10:00:00.000Z",
            "message": {"role": "user", "content": f"cut {HALF}"}}
    _write(tmp_path / "proj" / "s1.jsonl", [line, line])
    result = build([tmp_path])
    assert result.sources.skipped == []
    assert _values(result, "Thread", "messages") == [1]


def test_surrogates_written_as_raw_bytes_are_kept_with_u_fffd(tmp_path: Path) -> None:
    """A surrogate written as UTF-8 bytes (ED A0 BD, not valid UTF-8) or an unpaired half
    in a UTF-16 sidecar: json.loads passes both through ("surrogatepass"); they crashed
    the read in Arrow. Now U+FFFD, as escaped halves are."""
    from graphkit.sources.transcripts import read_transcripts

    line = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1",
            "timestamp": "2026-01-02T10:00:00.000Z", "cwd": "/w", "isSidechain": False,
            "message": {"role": "user", "content": "cut RAW here"}}
    session = tmp_path / "proj" / "s1.jsonl"
    session.parent.mkdir(parents=True)
    session.write_bytes(json.dumps(line).replace("RAW", "\\u00e9").encode()
                        .replace(b"\\u00e9", b"\xed\xa0\xbd") + b"\n")
    agent = tmp_path / "proj" / "s1" / "subagents" / "agent-ag1.jsonl"
    agent.parent.mkdir(parents=True)
    agent.write_text(json.dumps({**line, "uuid": "u2", "isSidechain": True,
                                 "agentId": "ag1"}) + "\n", encoding="utf-8")
    agent.with_name("agent-ag1.meta.json").write_bytes(
        json.dumps({"agentType": f"x{HALF}"}, ensure_ascii=False)
        .encode("utf-16", "surrogatepass"))
    rows = read_transcripts([tmp_path / "proj"])
    texts = rows.table.column("content_text").to_pylist()
    assert "cut \ufffd here" in texts
    assert not rows.skipped


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


@pytest.mark.slow
@pytest.mark.parametrize("splice", ["1", "0"])
def test_lone_surrogates_in_transcripts_are_counted_and_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, splice: str) -> None:
    # Was: replaced by U+FFFD without a word (row files say how many and
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
    # Was: the sidecar's description was made U+FFFD without a word (only the transcripts'
    # lines were counted). Now it is a line of the lone-surrogate finding, named
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
