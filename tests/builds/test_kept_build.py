"""The one "nothing changed" decision, run before the build's imports: the command line
prints what the library's kept rebuild returns, and anything that shapes the output
(contract, graphkit or parser version, options, the list of sources) still forces a build."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import graphkit.builds.uptodate as reuse
from graphkit.builds.result import skipped_lines_summary
from graphkit.builds.snapshot import build_snapshot
from tests.helpers.cli import graphkit
from tests.helpers.paths import REPO, SAMPLE_ROWS
from tests.helpers.transcripts import fixtures

TRANSCRIPTS = fixtures() / "transcripts"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "transcripts"
    shutil.copytree(TRANSCRIPTS / "claude-code-log", root)
    return root


def _cli(*args: str) -> dict[str, Any]:
    run = graphkit("build", *args, "--json")
    assert run.returncode == 0, run.output
    return json.loads(run.output.splitlines()[-1])


def _kept(summary: dict[str, Any]) -> bool:
    return summary.get("snapshot_reused") is True


@pytest.mark.slow
def test_the_command_and_the_library_keep_the_snapshot_alike(work: Path, tmp_path: Path) -> None:
    # One decision (graphkit.builds.uptodate.UpToDate) for both: the command line's kept
    # rebuild prints what the library's kept rebuild returns.
    snap = tmp_path / "snap"
    first = _cli(str(work), "--snapshot", str(snap))
    assert not _kept(first)
    quick = _cli(str(work), "--snapshot", str(snap))
    assert _kept(quick)
    result, lib = build_snapshot([work], snap)  # the library call keeps it too
    assert quick == json.loads(json.dumps(
        {**lib, "skipped_lines": skipped_lines_summary(result.sources.skipped)}))
    assert result.skipped == result.sources.skipped and result.notes == []
    assert result.graph.node_counts() == first["nodes"]  # read from the kept snapshot
    assert quick["transcripts"] == {"files_parsed": 0, "files_reused":
                                    first["transcripts"]["files_parsed"]}
    text = graphkit("build", work, "--snapshot", snap).output
    assert "files parsed" in text and "nothing changed" in text
    assert "snapshot kept" in text and "snapshot written" not in text


def test_a_kept_row_file_snapshot_says_kept_not_written(tmp_path: Path) -> None:
    rows, snap = SAMPLE_ROWS, tmp_path / "snap"
    first = graphkit("build", rows, "--snapshot", snap).output
    again = graphkit("build", rows, "--snapshot", snap).output
    assert f"snapshot written to {snap}" in first and "snapshot kept" not in first
    assert f"snapshot kept (its inputs, contract and options are unchanged): {snap}" in again
    assert "snapshot written" not in again


@pytest.mark.slow
def test_a_changed_contract_file_is_built(work: Path, tmp_path: Path) -> None:
    from graphkit.contract.loader import find_contract

    snap, contract = tmp_path / "snap", tmp_path / "contract.yaml"
    shutil.copy(find_contract("ai-gateway-graph"), contract)
    args = [str(work), "--snapshot", str(snap), "--contract", str(contract)]
    _cli(*args)
    assert _kept(_cli(*args))
    contract.write_text(contract.read_text() + "\n# a comment changes the bytes\n")
    assert not _kept(_cli(*args))
    assert _kept(_cli(*args))
    # Another contract by name: built, not kept.
    assert not _kept(_cli(str(work), "--snapshot", str(snap)))


def test_the_contract_candidates_follow_find_contract(tmp_path: Path,
                                                      monkeypatch: Any) -> None:
    from graphkit.contract.loader import find_contract
    from graphkit.contract.search import contract_candidates

    def first_file(name: str) -> Path:
        return next(p for p in contract_candidates(name) if p.is_file())

    assert first_file("ai-gateway-graph").resolve() == find_contract("ai-gateway-graph").resolve()
    other = tmp_path / "c.yaml"
    other.write_text("contract: x\n")
    assert first_file(str(other)) == find_contract(str(other))
    # A file named like the shipped contract in the working folder wins: so it counts.
    monkeypatch.chdir(tmp_path)
    before = reuse.contract_state("ai-gateway-graph")
    (tmp_path / "ai-gateway-graph").write_text("contract: x\n")
    assert find_contract("ai-gateway-graph") == Path("ai-gateway-graph")
    assert reuse.contract_state("ai-gateway-graph") != before


@pytest.mark.slow
@pytest.mark.parametrize("change", ["granularity", "include-content", "since", "rejects",
                                    "sources", "graphkit", "parser"])
def test_what_shapes_the_output_forces_a_build(work: Path, tmp_path: Path, change: str,
                                               monkeypatch: Any) -> None:
    snap = tmp_path / "snap"
    base = [str(work), "--snapshot", str(snap)]
    _cli(*base)
    assert _kept(_cli(*base))
    extra: list[str] = []
    if change == "granularity":
        extra = ["--granularity", "message"]
    elif change == "include-content":
        extra = ["--include-content"]
    elif change == "since":
        extra = ["--since", "2020-01-01"]
    elif change == "rejects":
        extra = ["--rejects", str(tmp_path / "r.jsonl")]
    elif change == "sources":
        more = tmp_path / "extra" / "more.jsonl"
        more.parent.mkdir()
        shutil.copy(TRANSCRIPTS / "claude-code-transcripts" / "sample_session.jsonl", more)
        extra = [str(more)]
    elif change == "graphkit":
        monkeypatch.setattr(reuse, "__version__", reuse.__version__ + ".post1")
    else:
        monkeypatch.setattr(reuse, "PARSER_VERSION", reuse.PARSER_VERSION + 1)
    assert not _kept(_cli(*base, *extra))
    assert _kept(_cli(*base, *extra))  # and that build is kept in turn


@pytest.mark.slow
def test_a_snapshot_changed_or_removed_since_is_built(work: Path, tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    base = [str(work), "--snapshot", str(snap)]
    _cli(*base)
    manifest = snap / "manifest.json"
    manifest.write_bytes(manifest.read_bytes() + b" ")
    assert not _kept(_cli(*base))
    shutil.rmtree(snap)
    assert not _kept(_cli(*base))
    assert (snap / "manifest.json").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("given", ["a folder", "no SOURCE"])
def test_a_kept_rebuild_imports_nothing_heavy(work: Path, tmp_path: Path, given: str) -> None:
    snap = tmp_path / "snap"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = [str(work)]
    if given == "no SOURCE":  # the user's own folders: ~/.claude/projects
        home = tmp_path / "home"
        shutil.copytree(work, home / ".claude" / "projects")
        env = {**env, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
               "CODEX_HOME": str(home / ".codex")}
        args = []
    probe = ("import json, sys\nsys.argv = ['graphkit', 'build', *sys.argv[2:], '--snapshot', "
             "sys.argv[1], '--json']\nfrom graphkit.cli import main\ntry:\n    main()\n"
             "except SystemExit:\n    pass\nheavy = ['pyarrow', 'pydantic', 'yaml', 'rich', "
             "'networkx', 'numpy', 'graphkit.contract.model', 'graphkit.builds.run']\n"
             "print(json.dumps([m for m in heavy if m in sys.modules]), file=sys.stderr)\n")
    runs = [subprocess.run([sys.executable, "-c", probe, str(snap), *args], capture_output=True,
                           text=True, cwd=REPO, timeout=300, env=env) for _ in range(2)]
    for done in runs:
        assert done.returncode == 0, done.stderr
    assert not _kept(json.loads(runs[0].stdout)) and _kept(json.loads(runs[1].stdout))
    assert json.loads(runs[1].stderr.strip().splitlines()[-1]) == []


def test_source_tails_list_the_names_below_a_root_once_per_walk(tmp_path: Path) -> None:
    """One line per file below ``root`` (the root cut off but for its separator), each
    ending in a newline; asked again of the same walk, the same text without a new pass."""
    for rel in ("a/x.jsonl", "a/data/y.parquet", "b/z.pq", "ab/w.json"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    walk = reuse.input_state([tmp_path / "a", tmp_path / "ab", tmp_path / "b"])
    root = str(tmp_path / "a") + os.sep
    text = reuse.source_tails(root, walk)
    assert text == f"{os.sep}data{os.sep}y.parquet\n{os.sep}x.jsonl\n"  # not ab/w.json
    assert reuse.source_tails(root, walk) is text
    other = str(tmp_path / "b") + os.sep
    assert reuse.source_tails(other, walk) == f"{os.sep}z.pq\n"
    again = reuse.input_state([tmp_path / "a"])  # another walk: answered afresh
    (tmp_path / "a" / "new.jsonl").write_text("{}")
    assert reuse.source_tails(root, again) == text
    assert reuse.source_tails(root, reuse.input_state([tmp_path / "a"])).endswith(
        f"{os.sep}new.jsonl\n{os.sep}x.jsonl\n")


def test_input_state_is_sorted_by_path(tmp_path: Path) -> None:
    names = [f"{i:03d}-{'x' * (i % 7)}.jsonl" for i in range(60)]
    for n in reversed(names):
        (tmp_path / "s" / n[:2]).mkdir(parents=True, exist_ok=True)
        (tmp_path / "s" / n[:2] / n).write_text(n)
    walk = reuse.input_state([tmp_path / "s"])
    assert walk == sorted(walk) and len(walk) == len(names)


def _walk_by_path(root: Path) -> list[list[Any]]:
    """The walk as it was before incremental pass 9: ``os.walk``'s way, stat by path."""
    out = []
    for folder, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            try:
                out.append([path, *reuse.stat_of(os.stat(path))])
            except OSError:
                out.append([path, -1, -1, -1, -1])
    return sorted(out, key=lambda row: row[0])


@pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32",
                    reason="symbolic links")
def test_the_walk_by_folder_descriptor_stats_what_a_walk_by_path_does(tmp_path: Path) -> None:
    # Incremental pass 9: each folder is listed through its descriptor and its entries
    # stat'ed relative to it; the paths and stats are those of a stat of each full path:
    # files at every depth, a linked folder (stat'ed as the folder it names, not walked),
    # a linked file, a dangling link, a name that is not UTF-8, a folder with no files.
    root = tmp_path / "s"
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "empty").mkdir()
    (root / "top.jsonl").write_text("1")
    (root / "a" / "x.jsonl").write_text("22")
    (root / "a" / "b" / "c" / "deep.meta.json").write_text("333")
    os.symlink(root / "a", root / "linked-folder")
    os.symlink(root / "top.jsonl", root / "a" / "linked.jsonl")
    os.symlink(tmp_path / "nowhere", root / "a" / "dangling.jsonl")
    odd = os.fsdecode(b"odd-\xff.jsonl")
    with contextlib.suppress(OSError, UnicodeError):  # a file system refusing the name
        (root / "a" / odd).write_text("4")
    walk = reuse.input_state([root])
    assert walk == _walk_by_path(root)
    assert [row[1] for row in walk if row[0].endswith("dangling.jsonl")] == [-1]
    # The source given as a file, and as a linked folder, walk as before too.
    assert reuse.input_state([root / "top.jsonl"]) == [
        [str(root / "top.jsonl"), *reuse.stat_of(os.stat(root / "top.jsonl"))]]
    assert reuse.input_state([root / "linked-folder"]) == _walk_by_path(root / "a")


def test_the_walk_digest_tells_every_stat_apart() -> None:
    # Incremental pass 7: the build record keeps a digest of the walk, not the walk. Any
    # stat or path that differs gives another digest; an inode number with its top bit
    # set (beyond int64) is digested too, not an OverflowError.
    walk = [["/t/a.jsonl", 10, 1_796_000_000_000_000_000, 7, 1_796_000_000_000_000_001],
            ["/t/b.jsonl", -1, -1, -1, -1]]
    seen = {reuse.inputs_digest(walk)}
    for i, j, value in [(0, 1, 11), (0, 2, 1_796_000_000_000_000_002), (0, 3, 8),
                        (0, 4, 2), (1, 1, 0), (0, 3, 2**63), (0, 3, 2**64 - 2)]:
        changed = [list(row) for row in walk]
        changed[i][j] = value
        seen.add(reuse.inputs_digest(changed))
    seen.add(reuse.inputs_digest([["/t/a.jsonl\n", *walk[0][1:]], walk[1]]))
    seen.add(reuse.inputs_digest(walk[:1]))
    assert len(seen) == 10
    assert reuse.stat_bytes([2**63]) == reuse.stat_bytes([-(2**63)])
    assert reuse.inputs_digest(walk) == reuse.inputs_digest([list(r) for r in walk])
