"""``graphkit export --otlp-endpoint`` into a real OTLP receiver (Arize Phoenix, run by
tests/e2e/phoenix_server.py on a loopback port): the spans read back through
Phoenix's own REST API are the graph's history: one trace per session, one
invoke_agent span per thread, each subagent's span under its parent's, token sums
equal to ``usage --json`` (tests/export/otlp_checks.py)."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphkit.cli import cli
from tests.e2e.phoenix_server import phoenix, spans
from tests.export.otlp_checks import Span, check_against_graph, spans_of_otlp_json
from tests.helpers.paths import REPO

pytestmark = pytest.mark.slow

SOURCES = [REPO / "samples" / "rows", REPO / "tests/fixtures/transcripts/claude-code-log",
           REPO / "tests/fixtures/shaped"]


def _micros(iso: str) -> int:
    when = datetime.fromisoformat(iso)
    return int(when.timestamp()) * 1_000_000 + when.microsecond


def _span(row: dict) -> Span:  # type: ignore[type-arg]
    return Span(row["context"]["trace_id"], row["context"]["span_id"], row["parent_id"],
                row["name"], _micros(row["start_time"]), _micros(row["end_time"]),
                row["attributes"])


def test_a_push_reads_back_from_phoenix_as_the_graph(tmp_path: Path) -> None:
    snapshot = tmp_path / "graph"
    runner = CliRunner()
    res = runner.invoke(cli, ["-q", "build", *map(str, SOURCES), "--granularity", "message",
                              "--snapshot", str(snapshot)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["export", str(snapshot), "--format", "otlp-json",
                              str(tmp_path / "t.json")])
    assert res.exit_code == 0, res.output
    written = spans_of_otlp_json(json.loads((tmp_path / "t.json").read_text()))
    (tmp_path / "phoenix").mkdir()
    with phoenix(tmp_path / "phoenix") as base:
        res = runner.invoke(cli, ["export", str(snapshot), "--otlp-endpoint", base])
        assert res.exit_code == 0, res.output
        deadline = time.monotonic() + 120
        while len(stored := spans(base)) < len(written) and time.monotonic() < deadline:
            time.sleep(1)  # Phoenix writes what it received in the background
    got = [_span(r) for r in stored]
    assert len(got) == len(written)
    # The receiver holds the ids graphkit derived: the file's and the push's are the same.
    assert sorted((s.trace, s.span, s.parent) for s in got) == \
        sorted((s.trace, s.span, s.parent) for s in written)
    checked = check_against_graph(got, snapshot)
    assert checked["sessions"] == 50 and checked["threads"] == 118
    assert checked["subagents"] >= 60 and checked["tokens"] > 0
