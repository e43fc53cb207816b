"""Text from a transcript that a skipped line's reason names (an unknown record type, a
repeated uuid) is escaped and cut in the skipped-lines file and on stderr, never echoed
whole (issue 31): it may be a pasted key or escape sequences for the user's terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphkit.cli import cli

KEY = "sk-live-0123456789abcdefghijklmnopqrstuvwxyz"
ESCAPES = "\x1b]0;owned\x07\x1b[2J"


def build(folder: Path, tmp_path: Path) -> tuple[str, str]:
    """The build's stderr+stdout and its skipped-lines file."""
    r = CliRunner().invoke(cli, ["build", str(folder), "--snapshot", str(tmp_path / "snap")])
    assert r.exit_code == 0, r.output
    return r.output, (tmp_path / "snap.skipped.jsonl").read_text()


def clean(text: str) -> None:
    assert KEY not in text
    assert "\x1b" not in text and "\x07" not in text


def claude_line(**kw: object) -> str:
    base = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1",
            "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "content": "hi"}}
    return json.dumps({**base, **kw}) + "\n"


@pytest.mark.parametrize("value", [KEY, ESCAPES + KEY, ESCAPES + "A" * 5000])
def test_an_unknown_claude_type_is_escaped_and_cut(tmp_path: Path, value: str) -> None:
    folder = tmp_path / "claude"
    folder.mkdir()
    (folder / "s1.jsonl").write_text(claude_line() + claude_line(type=value, uuid="u2"))
    out, skipped = build(folder, tmp_path)
    clean(out)
    clean(skipped)
    reason = json.loads(skipped.splitlines()[0])["reason"]
    assert reason.startswith("entry type '") and f"({len(value)} characters)" in reason


def test_a_repeated_uuid_is_escaped_and_cut(tmp_path: Path) -> None:
    folder = tmp_path / "claude"
    folder.mkdir()
    uuid = ESCAPES + KEY
    (folder / "s1.jsonl").write_text(
        claude_line(uuid=uuid) + claude_line(uuid=uuid, message={"role": "user",
                                                                  "content": "other"}))
    out, skipped = build(folder, tmp_path)
    clean(out)
    clean(skipped)
    assert "written again" in skipped


@pytest.mark.parametrize("where", ["line", "item"])
def test_unknown_codex_types_are_escaped_and_cut(tmp_path: Path, where: str) -> None:
    folder = tmp_path / "codex"
    folder.mkdir()
    meta = {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta",
            "payload": {"id": "t1", "timestamp": "2026-01-01T00:00:00Z"}}
    odd = ({"timestamp": "2026-01-01T00:00:01Z", "type": ESCAPES + KEY, "payload": {}}
           if where == "line" else
           {"timestamp": "2026-01-01T00:00:01Z", "type": "response_item",
            "payload": {"type": ESCAPES + KEY}})
    said = {"timestamp": "2026-01-01T00:00:02Z", "type": "response_item",
            "payload": {"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": "hi"}]}}
    (folder / "rollout-2026-01-01T00-00-00-t1.jsonl").write_text(
        "".join(json.dumps(o) + "\n" for o in (meta, odd, said)))
    out, skipped = build(folder, tmp_path)
    clean(out)
    clean(skipped)
    assert "characters)" in skipped
