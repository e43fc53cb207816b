"""Rows left out at conversion (a value of the wrong type: ``"role": 1.5``) are skipped
lines like any other: a read through the cache, warm or cold, and a rebuild report exactly
what a cold read reports (file, line, reason, order), whichever way each file came."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import graphkit.sources.transcripts.read as read_module
from graphkit.sources.transcripts import read_transcripts
from graphkit.sources.transcripts.links import Combiner
from tests.helpers.cli import graphkit
from tests.helpers.transcripts import assistant, fixtures, text

CLAUDE = "claude-code-log/session_id_steering_order.jsonl"
CODEX = "claude-code-log/codex/archived_sessions/rollout-55555555-5555-4555-8555-555555555555.jsonl"
OTHER = "claude-code-log/dag_compact_after_rewind.jsonl"  # appended to: no wrong values


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The fixtures with a Claude line whose role is a float and a Codex model that is one
    (the Codex file comes first in file order, the Claude one first in the kinds' order)."""
    root = tmp_path / "transcripts"
    shutil.copytree(fixtures() / "transcripts", root)
    lines = (root / CLAUDE).read_text().splitlines()
    first = json.loads(lines[0])
    first["message"]["role"] = 1.5
    lines[0] = json.dumps(first)
    (root / CLAUDE).write_text("\n".join(lines) + "\n")
    lines = (root / CODEX).read_text().splitlines()
    lines.insert(1, json.dumps({"timestamp": "2024-01-01T00:00:00.500Z",
                                "type": "turn_context", "payload": {"model": 1.5}}))
    (root / CODEX).write_text("\n".join(lines) + "\n")
    return root


def _skipped(rows: Any) -> list[tuple[str, int, str]]:
    return [(s.path, s.line, s.reason) for s in rows.skipped]


def _append_line(path: Path) -> None:
    with path.open("a") as fh:
        fh.write(json.dumps(assistant("a-appended", "00000000-0295-4000-8000-000000000001",
                                      "2026-07-11T07:00:09Z", [text("one more")], "a2")) + "\n")


def test_the_inputs_have_rows_left_out_in_both_kinds(work: Path) -> None:
    left_out = [(Path(p).name, n) for p, n, r in _skipped(read_transcripts([work]))
                if r.endswith("line left out")]
    assert left_out == [(Path(CLAUDE).name, 1), (Path(CODEX).name, 3)]


def test_a_warm_read_reports_the_lines_a_cold_read_does(work: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cold = _skipped(read_transcripts([work]))
    first = read_transcripts([work], cache_dir=cache)
    assert first.files_reused == 0 and _skipped(first) == cold
    for _ in range(2):  # the second warm read: from what the first warm one saved
        warm = read_transcripts([work], cache_dir=cache)
        assert warm.files_read == 0 and warm.files_reused > 0
        assert _skipped(warm) == cold

    _append_line(work / OTHER)  # one file parsed again, the two with left-out rows reused
    cold = _skipped(read_transcripts([work]))
    warm = read_transcripts([work], cache_dir=cache)
    assert warm.files_read == 1
    assert _skipped(warm) == cold

    (work / CLAUDE).touch()  # bytes the same: taken from the cache by its digest
    warm = read_transcripts([work], cache_dir=cache)
    assert warm.files_read == 0
    assert _skipped(warm) == cold


def test_the_order_does_not_depend_on_when_rows_are_converted(work: Path,
                                                              monkeypatch: Any) -> None:
    whole = _skipped(read_transcripts([work]))
    # Every file's rows converted as it is added (as a large read does batch by batch).
    monkeypatch.setattr(read_module, "Combiner", functools.partial(Combiner, batch_rows=1))
    assert _skipped(read_transcripts([work])) == whole


def _cli_build(src: Path, snap: Path) -> list[dict[str, Any]]:
    run = graphkit("build", src, "--snapshot", snap, "--json", "-q")
    assert run.returncode == 0, run.output
    lines: list[dict[str, Any]] = json.loads(run.output)["skipped_lines"]
    return lines


@pytest.mark.slow
@pytest.mark.parametrize("splice", ["1", "0"])  # link groups kept, or one read through the cache
def test_cli_rebuilds_report_the_skipped_lines_of_a_cold_build(work: Path, tmp_path: Path,
                                                               monkeypatch: Any,
                                                               splice: str) -> None:
    monkeypatch.setenv("GRAPHKIT_SPLICE", splice)
    snap = tmp_path / "snap"
    first = _cli_build(work, snap)
    assert [(Path(s["file"]).name, s["line"]) for s in first
            if s["reason"].endswith("line left out")] == [(Path(CLAUDE).name, 1),
                                                          (Path(CODEX).name, 3)]
    assert _cli_build(work, snap) == first  # nothing changed: the snapshot kept

    _append_line(work / OTHER)
    cold = _cli_build(work, tmp_path / "cold" / "snap")
    assert _cli_build(work, snap) == cold
    assert _cli_build(work, snap) == cold
