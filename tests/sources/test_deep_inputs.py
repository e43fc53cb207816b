"""Deep inputs end in the right answer, not a RecursionError traceback (issue 31): a
transcript or row folder 1,500 levels deep (Python 3.11's os.walk recursed once per
level), and JSON nested 10,000 deep in `attributes` (Python's parser stops near 1,000:
the values a contract reads are near the top, so the deep part is cut off)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from graphkit.cli import cli
from graphkit.snapshot import read_snapshot
from tests.helpers.rows import row, write_parquet

SHOWCASE = (Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
            / "claude-code-log" / "minimal_showcase")
LEVELS = 1500


def invoke(*args: object) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def deep_folder(top: Path, files: dict[str, bytes]) -> None:
    """``files`` written ``LEVELS`` folders below ``top`` (made by descriptor: the
    whole path is longer than many tools take)."""
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    try:
        for _ in range(LEVELS):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        for name, data in files.items():
            out = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
            os.write(out, data)
            os.close(out)
    finally:
        os.close(fd)


def remove_deep(top: Path) -> None:
    """Delete a tree ``deep_folder`` made, bottom-up without recursion (Python 3.11's
    shutil.rmtree recurses too, and so would pytest's clean-up of old temp folders)."""
    if not top.exists():
        return
    chain = [os.open(top, os.O_RDONLY)]
    while "d" in os.listdir(chain[-1]):
        chain.append(os.open("d", os.O_RDONLY, dir_fd=chain[-1]))
    while chain:
        fd = chain.pop()
        for name in os.listdir(fd):
            if name != "d":
                os.unlink(name, dir_fd=fd)
        os.close(fd)
        if chain:
            os.rmdir("d", dir_fd=chain[-1])
    top.rmdir()


@pytest.fixture
def deep_dirs(tmp_path: Path) -> Iterator[list[Path]]:
    made: list[Path] = []
    yield made
    for top in made:
        remove_deep(top)


@pytest.fixture
def deep_transcripts(tmp_path: Path, deep_dirs: list[Path]) -> Path:
    top = tmp_path / "deep"
    deep_dirs.append(top)  # first: a tree left half-made is deleted too
    deep_folder(top, {p.name: p.read_bytes() for p in SHOWCASE.glob("*.jsonl")})
    return top


@pytest.mark.parametrize("extra", [[], pytest.param(["--partitions", "2"],
                                                    marks=pytest.mark.slow)])
def test_a_transcript_folder_1500_deep_builds(tmp_path: Path, deep_transcripts: Path,
                                             extra: list[str]) -> None:
    r = invoke("build", deep_transcripts, "--snapshot", tmp_path / "snap", *extra)
    assert r.exit_code == 0, r.output
    sessions = read_snapshot(tmp_path / "snap").nodes["Session"].table
    assert sessions.num_rows == 3
    again = invoke("build", deep_transcripts, "--snapshot", tmp_path / "snap", *extra)
    assert again.exit_code == 0, again.output


@pytest.mark.slow
def test_rows_and_check_of_a_deep_folder(tmp_path: Path, deep_transcripts: Path) -> None:
    r = invoke("rows", deep_transcripts, "--out", tmp_path / "r.parquet")
    assert r.exit_code == 0, r.output
    assert invoke("check", deep_transcripts).exit_code in (0, 1)


@pytest.mark.slow
def test_a_row_folder_1500_deep_builds(tmp_path: Path, deep_dirs: list[Path]) -> None:
    src = write_parquet([row("s1", message_id="m1")], tmp_path / "r.parquet")
    deep_dirs.append(tmp_path / "rows")
    deep_folder(tmp_path / "rows", {"r.parquet": src.read_bytes()})
    r = invoke("build", tmp_path / "rows", "--snapshot", tmp_path / "snap")
    assert r.exit_code == 0, r.output


@pytest.mark.slow
def test_a_deep_folder_in_the_snapshots_place_is_refused(tmp_path: Path,
                                                        deep_dirs: list[Path]) -> None:
    deep_dirs.append(tmp_path / "target")
    deep_folder(tmp_path / "target", {"mine.txt": b"x"})
    src = write_parquet([row("s1", message_id="m1")], tmp_path / "r.parquet")
    r = invoke("build", src, "--snapshot", tmp_path / "target")
    assert r.exit_code == 2 and "did not write" in r.output and "Traceback" not in r.output


@pytest.mark.slow
def test_json_nested_10000_deep_in_attributes(tmp_path: Path) -> None:
    deep_object = '{"a": ' * 10_000 + "1" + "}" * 10_000
    deep_array = "[" * 10_000 + "]" * 10_000
    rows = [
        row("s1", message_id="m1", part_type="tool_call", tool_name="Task",
            tool_call_id="toolu_1"),
        row("s1", message_id="m2", agent_id="ag1", attributes=json.dumps(
            {"claude": {"spawned_by_tool_use_id": "toolu_1", "agent_type": "Explore"}})[:-1]
            + f', "x": {deep_object}}}'),
        row("s1", message_id="m3", attributes='{"usage": {"input_tokens": 7, '
            f'"output_tokens": 2}}, "y": {deep_array}}}'),
    ]
    src = write_parquet(rows, tmp_path / "rows.parquet")
    for extra in ([], ["--partitions", "2"]):
        snap = tmp_path / f"snap{len(extra)}"
        r = invoke("build", src, "--snapshot", snap, *extra)
        assert r.exit_code == 0, r.output
        graph = read_snapshot(snap)
        agent = graph.nodes["Agent"].table.to_pylist()
        assert [(a["agent_id"], a["agent_type"]) for a in agent] == [("ag1", "Explore")]
        assert graph.edges["PARENT_THREAD"].table.num_rows == 1
        assert graph.nodes["Session"].table.column("input_tokens").to_pylist() == [7]
    assert invoke("check", src).exit_code == 0
