"""The one up-to-date decision: a rebuild asks it once, from the command line and the
library alike, and a kept rebuild returns a result whose graph is the snapshot's."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from graphkit.builds.options import BuildOptions
from graphkit.builds.result import SnapshotResult
from graphkit.builds.snapshot import build_snapshot
from graphkit.builds.uptodate import UpToDate
from graphkit.cli.app import cli
from tests.helpers.paths import FIXTURES


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each answer of :meth:`UpToDate.kept` (True: kept)."""
    answers: list[bool] = []
    real = UpToDate.kept

    def kept(self: UpToDate) -> Any:
        got = real(self)
        answers.append(got is not None)
        return got

    monkeypatch.setattr(UpToDate, "kept", kept)
    return answers


@pytest.mark.slow
def test_a_command_line_rebuild_asks_once(tmp_path: Path, asked: list[bool]) -> None:
    src = tmp_path / "t"
    shutil.copytree(FIXTURES / "transcripts" / "claude-code-log", src)
    args = ["build", str(src), "--snapshot", str(tmp_path / "snap"), "--json"]
    for _ in range(2):
        assert CliRunner().invoke(cli, args).exit_code == 0
    assert asked == [False, True]
    (src / "new.jsonl").write_text("")
    assert CliRunner().invoke(cli, args).exit_code == 0
    assert asked == [False, True, False]


def test_a_library_rebuild_asks_once_and_reads_the_graph_when_asked(
        tmp_path: Path, asked: list[bool], sample_rows: Path) -> None:
    snap = tmp_path / "snap"
    built, _ = build_snapshot(sample_rows, snap)
    kept, summary = build_snapshot(sample_rows, snap, BuildOptions())
    assert asked == [False, True] and summary["snapshot_reused"] is True
    assert isinstance(kept, SnapshotResult) and kept.summary() == summary
    assert kept.graph.node_counts() == built.graph.node_counts()
    assert kept.contract.name == built.contract.name
    # Neither a store elsewhere nor rows in memory is ever kept: no decision is made.
    assert not UpToDate.applies(*_outputs(snap, BuildOptions(store="networkx")))
    assert not UpToDate.applies(*_outputs(snap, BuildOptions(partitions=2)))


def _outputs(snap: Path, options: BuildOptions) -> Any:
    from graphkit.builds.outputs import BuildOutputs

    return BuildOutputs.of(snap, options), options
