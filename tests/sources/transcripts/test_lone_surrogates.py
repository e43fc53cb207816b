r"""A lone UTF-16 surrogate escaped in a transcript (JavaScript writes ``"\ud83d"`` when it
cuts a string inside an emoji) is read as U+FFFD, in ids, keys, text and agent sidecars;
a whole pair stays the character it names. Before, such a line crashed the build."""

from __future__ import annotations

import json
from pathlib import Path

from graphkit.builds.run import build

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
