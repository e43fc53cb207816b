"""The view tests' snapshots and pages: the bundled sample and a session whose transcript
strings are markup, built once per module, and ``graphkit view`` of one session. The fixtures
``samples`` and ``nasty`` are offered to every test by tests/conftest.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graphkit.builds.run import build, records_table
from graphkit.snapshot import write_snapshot
from tests.helpers.cli import graphkit
from tests.helpers.rows import row, spawned

DEEP = "8299ed6e-811c-4fa7-b124-c205cd625a7f"  # the sample session with depth-4 subagents
DEEPEST = "818d8962058765a6"
# Transcript strings that would run script if they reached the page as markup.
# Each sets a marker on the page the test then looks for.
IMG = """<img src=x onerror="document.documentElement.setAttribute('data-pwned','img')">"""
SCRIPT = ("</script><script>document.documentElement.setAttribute('data-pwned','script')"
          "</script>")
SVG = """<svg/onload="document.documentElement.setAttribute('data-pwned','svg')">"""
NASTY_AGENT = "ag<b>2</b>&amp;"
SESSION = "5e55-<i>x</i>"
CONTENT = "SECRET-CONTENT " + SCRIPT + " \u2028 line & <b>bold</b>"


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory, sample_rows: Path) -> Path:
    snap = tmp_path_factory.mktemp("view") / "graph"
    assert graphkit("build", sample_rows, "--snapshot", snap).returncode == 0
    return snap


def nasty_rows() -> list[dict[str, Any]]:
    """A Claude session whose transcript strings are markup: a subagent whose
    type and description are HTML, a nested one whose id and model are."""
    return [
        row(SESSION, message_id="m1", role="user", content_text=CONTENT),
        row(SESSION, message_id="m2", part_type="tool_call", tool_name="Task",
            tool_call_id="toolu_1", model="claude-sonnet-4-5", content_text="spawning"),
        row(SESSION, agent_id="ag-1", is_sidechain=True, message_id="a1",
            attributes=spawned("toolu_1", agent_type=IMG, description=SCRIPT),
            part_type="tool_call", tool_name="Agent", tool_call_id="toolu_2",
            model=SVG, content_text=IMG),
        row(SESSION, agent_id=NASTY_AGENT, is_sidechain=True, message_id="b1",
            attributes=spawned("toolu_2", agent_type="Explore"), model="claude-haiku-4-5",
            content_text=CONTENT),
    ]


@pytest.fixture(scope="module")
def nasty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A message-granularity snapshot with content, of :func:`nasty_rows`."""
    result = build(records_table(nasty_rows()), granularity="message", include_content=True)
    snap = tmp_path_factory.mktemp("nasty") / "graph"
    write_snapshot(result.graph, snap, include_content=True)
    return snap


def view(snap: Path, session: str, out: Path, *extra: str) -> Path:
    r = graphkit("view", session, "--snapshot", snap, "--out", out, *extra)
    assert r.returncode == 0, r.output
    return out
