"""`graphkit check` exit codes (issue 31): 0 when no identity problem is found, even
with warnings (transcript lines no reader knows, as a newer Claude Code's record types
are; text made valid), which are printed with their count; 1 for identity problems;
2 when the sources cannot be read."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from graphkit.cli import cli
from tests.helpers.rows import row, write_parquet


def check(*args: object) -> Result:
    return CliRunner().invoke(cli, ["check", *map(str, args)])


def transcript(folder: Path, *extra: dict[str, object]) -> Path:
    folder.mkdir()
    base = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1",
            "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "content": "hi"}}
    lines = [base, *({**base, "uuid": f"x{i}", **e} for i, e in enumerate(extra))]
    (folder / "s1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return folder


def test_a_future_record_type_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    src = transcript(tmp_path / "claude", {"type": "some-future-record"},
                     {"type": "another-one"})
    r = check(src)
    assert r.exit_code == 0, r.output
    assert r.output.startswith("ok: 1 rows")
    assert "warning: skipped-lines: 2 transcript line(s)" in r.output
    as_json = check(src, "--json")
    assert as_json.exit_code == 0
    (found,) = json.loads(as_json.output)
    assert (found["check"], found["count"], found["severity"]) == ("skipped-lines", 2,
                                                                   "warning")


def test_identity_problems_still_exit_1(tmp_path: Path) -> None:
    src = write_parquet([row(None, message_id="m1"), row("s1", message_id="m2")],
                        tmp_path / "rows.parquet")
    r = check(src, "--json")
    assert r.exit_code == 1
    (found,) = json.loads(r.output)
    assert (found["check"], found["severity"]) == ("null-session", "problem")


def test_an_identity_problem_beside_a_warning_exits_1(tmp_path: Path) -> None:
    src = transcript(tmp_path / "claude", {"type": "some-future-record"},
                     {"type": "assistant", "isSidechain": True, "agentId": "lost",
                      "message": {"role": "assistant", "content": "orphan"}})
    r = check(src)
    assert r.exit_code == 1, r.output
    assert "warning: skipped-lines" in r.output and "orphan-subagent" in r.output


def test_unreadable_sources_exit_2(tmp_path: Path) -> None:
    r = check(tmp_path / "missing")
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1
