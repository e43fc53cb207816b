"""Files and folders the user may not read or write, run as another user (uid 65534):
each is one line naming the path and saying to fix its permissions; nothing is lost
and an old snapshot stays."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.paths import REPO
from tests.helpers.rows import (
    identity_cases,
    json_lines,
    write_parquet,
)
from tests.helpers.unprivileged import world_dir

SESSION = "8299ed6e-811c-4fa7-b124-c205cd625a7f"


@pytest.fixture
def world() -> Iterator[Path]:
    """A folder uid 65534 can use (pytest's tmp_path lies under a 0700 folder)."""
    path = world_dir()
    yield path
    for root, dirs, _files in os.walk(path):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
    shutil.rmtree(path, ignore_errors=True)


def _open_to_all(path: Path) -> None:
    for root, dirs, files in os.walk(path):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)


def _refused(proc: subprocess.CompletedProcess[str], *names: str) -> str:
    line = one_line_error(proc, *names)
    assert "Usage:" not in line
    return line


@pytest.mark.slow
@pytest.mark.parametrize("command", ["build", "rows", "check"])
def test_an_unreadable_row_file_is_one_line_saying_what_to_do(world: Path,
                                                              command: str) -> None:
    # Was: click's three-line usage message ("Invalid value for '[SOURCES]...': Path …
    # is not readable", no fix); inside a folder, Parquet's "Error creating dataset…
    # Is this a 'parquet' file?" with the hint to check the file's format.
    write_parquet(identity_cases(), world / "rows.parquet")
    (world / "rows.jsonl").write_text(json_lines(identity_cases()))
    folder = world / "folder"
    folder.mkdir()
    write_parquet(identity_cases(), folder / "a.parquet")
    write_parquet(identity_cases(), folder / "b.parquet")
    _open_to_all(world)
    extra = {"build": ["--snapshot", world / "snap"], "rows": ["--out", world / "o.parquet"],
             "check": []}[command]
    for bad, src in ((world / "rows.parquet", world / "rows.parquet"),
                     (world / "rows.jsonl", world / "rows.jsonl"),
                     (folder / "b.parquet", folder)):
        bad.chmod(0)
        line = _refused(graphkit(command, src, *extra, cwd=world, as_nobody=True),
                        f"{bad}: cannot read this file: Permission denied", "chmod a+rX")
        assert "format" not in line
        bad.chmod(0o644)
    assert not (world / "snap").exists()


@pytest.mark.slow
def test_a_folder_of_rows_that_cannot_be_entered_is_one_line(world: Path) -> None:
    # Was: a PermissionError traceback (a folder of mode 644: its names can be listed,
    # its files not reached); a folder of mode 000 was refused already.
    flat, hive = world / "flat", world / "hive"
    write_parquet(identity_cases(), flat / "a.parquet")
    write_parquet(identity_cases(), hive / "date=2026-11-20" / "a.parquet")
    _open_to_all(world)
    for source, target, mode in ((flat, flat, 0o644), (hive, hive / "date=2026-11-20", 0)):
        target.chmod(mode)
        _refused(graphkit("build", source, "--snapshot", world / "snap", cwd=world, as_nobody=True),
                 str(target), "Permission denied")
        target.chmod(0o755)


@pytest.mark.slow
def test_unreadable_transcripts_are_counted_or_refused_never_lost(world: Path) -> None:
    # Pins what held: an unreadable transcript in ~/.claude/projects is a skipped file,
    # counted; an unreadable project folder stops the build naming it (its sessions
    # would be missing without a word); a transcript named alone is one line.
    projects = world / ".claude" / "projects"
    shutil.copytree(REPO / "tests" / "fixtures" / "shaped", projects)
    _open_to_all(world)
    good = graphkit("build", projects, "--snapshot", world / "good", "--json",
                              cwd=world, as_nobody=True)
    assert good.returncode == 0, good.stderr
    session = next(projects.rglob("claude-compaction/*/*.jsonl"))
    session.chmod(0)
    proc = graphkit("build", projects, "--snapshot", world / "snap", "--json",
                              cwd=world, as_nobody=True)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["lines_skipped"] == json.loads(good.stdout)["lines_skipped"] + 1
    skipped = [s for s in summary["skipped_lines"] if s["file"] == str(session)]
    assert skipped and "Permission denied" in skipped[0]["reason"], summary["skipped_lines"]
    _refused(graphkit("build", session, "--snapshot", world / "one", cwd=world, as_nobody=True),
             str(session), "Permission denied")
    session.chmod(0o644)
    project = session.parent
    project.chmod(0)
    _refused(graphkit("build", projects, "--snapshot", world / "snap", cwd=world, as_nobody=True),
             str(project), "cannot read this folder")
    # No SOURCE: ~/.claude/projects is read, a note says so, then the one-line refusal.
    proc = graphkit("build", "--snapshot", world / "snap", cwd=world, as_nobody=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith(f"Error: {project}: cannot read this")
    project.chmod(0o755)


@pytest.fixture
def world_snapshot(world: Path) -> Path:
    """The sample rows built (by root) in ``world``, open to every user."""
    snap = world / "snap"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", snap).returncode == 0
    _open_to_all(world)
    return snap


def _reads(snap: Path, world: Path) -> list[list[object]]:
    return [["sessions", "--snapshot", snap], ["tree", SESSION, "--snapshot", snap],
            ["usage", "--snapshot", snap], ["files", "--snapshot", snap],
            ["view", SESSION, "--snapshot", snap, "--out", world / "v.html"],
            ["export", snap, "--format", "graphml", world / "g.graphml"],
            ["diff", snap, snap]]


@pytest.mark.slow
def test_an_unreadable_snapshot_says_to_fix_its_permissions(world: Path,
                                                            world_snapshot: Path) -> None:
    # Was: a table of mode 000 read "snapshot file cannot be read (Permission denied);
    # the snapshot was changed after graphkit wrote it; rebuild it" — a rebuild the
    # user could not even write; the folder or manifest said no fix at all.
    snap = world_snapshot
    table_file = snap / "nodes" / "Thread.parquet"
    for path, mode in ((snap, 0), (snap, 0o644), (snap / "manifest.json", 0),
                       (table_file, 0)):
        path.chmod(mode)
        for args in _reads(snap, world):
            line = _refused(graphkit(*args, cwd=world, as_nobody=True), "Permission denied",
                            "chmod -R a+rX")
            assert "rebuild" not in line
        path.chmod(0o755 if path.is_dir() else 0o644)


@pytest.mark.slow
def test_unwritable_outputs_are_one_line_and_the_old_snapshot_stays(
        world: Path, world_snapshot: Path) -> None:
    # Held but for the hint ("free some space" for a folder not the user's to write).
    closed = world / "closed"
    closed.mkdir()
    closed.chmod(0o555)
    src = world / "rows.parquet"
    write_parquet(identity_cases(), src)  # its orphan row is a reject
    src.chmod(0o644)
    before = sorted((p.name, p.stat().st_mtime_ns) for p in world_snapshot.rglob("*"))
    cases: list[tuple[list[object], Path]] = [
        (["build", src, "--snapshot", closed / "snap"], closed / "snap"),
        (["build", src, "--snapshot", world / "own", "--rejects", closed / "r.jsonl"],
         closed / "r.jsonl"),
        (["build", src, "--snapshot", world / "own", "--cache-dir", closed / "cache"],
         closed / "cache"),
        # Root's snapshot in a folder anyone may write: its cache is what is refused.
        (["build", src, "--snapshot", world_snapshot], world / ".snap.cache"),
        (["rows", src, "--out", closed / "o.parquet"], closed / "o.parquet"),
        (["view", SESSION, "--snapshot", world_snapshot, "--out", closed / "v.html"],
         closed / "v.html"),
        (["export", world_snapshot, "--format", "cypher", closed / "g.cypher"],
         closed / "g.cypher"),
        (["export", world_snapshot, "--format", "neo4j-csv", closed / "csv"], closed / "csv"),
    ]
    for args, named in cases:
        line = _refused(graphkit(*args, cwd=world, as_nobody=True), str(named), "Permission denied")
        assert "free some space" not in line, line
    assert not (world / "own").exists()
    assert sorted((p.name, p.stat().st_mtime_ns) for p in world_snapshot.rglob("*")) == before


@pytest.mark.slow
def test_the_unprivileged_runner_really_drops_root(world: Path) -> None:
    # The tests above mean nothing if the command still runs as root.
    secret = world / "secret.parquet"
    write_parquet(identity_cases(), secret)
    secret.chmod(0o600)
    proc = graphkit("build", secret, "--snapshot", world / "snap", cwd=world, as_nobody=True)
    assert proc.returncode == 2 and "Permission denied" in proc.stderr, proc.stderr
    secret.chmod(0o644)
    assert graphkit("build", secret, "--snapshot", world / "snap",
                              cwd=world, as_nobody=True).returncode == 0


def test_a_permission_error_no_reader_words_is_still_one_line() -> None:
    # The CLI's last resort for a file or folder the user may not use, met where no
    # reader or writer says so itself: one line naming it, not a traceback.
    from click.testing import CliRunner

    from graphkit.cli.app import _Group

    group = _Group()

    @group.command()
    def boom() -> None:
        raise PermissionError(13, "Permission denied", "/srv/graph\nx/nodes")

    result = CliRunner().invoke(group, ["boom"])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    (line,) = result.output.splitlines()
    assert line.startswith("Error: /srv/graph\\nx/nodes: Permission denied; check the "
                           "permissions"), line
