"""Seventh hostile round (tests/HOSTILE.md, "# Seventh round"): the leftovers of round six
(zero-row sources, files the user may not read or write) and what the round's driver
found. Each test failed before its fix unless it says it pins what held."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.paths import REPO
from tests.helpers.rows import (
    identity_cases,
    identity_cases_renamed,
    json_lines,
    rows_with_a_lone_surrogate,
    table,
    write_parquet,
)
from tests.helpers.unprivileged import graphkit_as_nobody, world_dir

SESSION = "8299ed6e-811c-4fa7-b124-c205cd625a7f"


# --- zero rows -------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n \n\t\r\n"])
def test_a_json_lines_source_of_no_rows_builds_an_empty_graph_as_parquet_does(
        tmp_path: Path, text: str) -> None:
    # Was: exit 2 "no rows: the file is empty…" while a zero-row Parquet file built an
    # empty graph. Both are now zero rows read, said in the summary and a note.
    empty = tmp_path / "empty.jsonl"
    empty.write_text(text)
    zero = tmp_path / "zero.parquet"
    pq.write_table(table(identity_cases()).slice(0, 0), zero)
    for src in (empty, zero):
        proc = graphkit("build", src, "--snapshot", tmp_path / "snap", "--json")
        assert proc.returncode == 0, proc.stderr
        summary = json.loads(proc.stdout)
        assert summary["rows_read"] == 0 and set(summary["nodes"].values()) == {0}
        assert f"{src}: no rows read" in proc.stderr, proc.stderr
        plain = graphkit("build", src, "--snapshot", tmp_path / f"plain-{src.suffix[1:]}")
        assert "rows read 0" in plain.stdout and "no rows read" in plain.stderr
        check = graphkit("check", src)
        assert check.returncode == 0 and "0 rows" in check.stdout, check.stderr
        rows = graphkit("rows", src, "--out", tmp_path / "o.parquet")
        assert rows.returncode == 0 and "wrote 0 rows" in rows.stderr, rows.stderr
        assert pq.read_table(tmp_path / "o.parquet").num_rows == 0
    sessions = graphkit("sessions", "--snapshot", tmp_path / "snap", "--json")
    assert sessions.returncode == 0 and sessions.stdout == ""


# --- files and folders the user may not read or write ----------------------------------


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
        line = _refused(graphkit_as_nobody(command, src, *extra, cwd=world),
                        f"{bad}: cannot read this file: Permission denied", "chmod a+rX")
        assert "format" not in line
        bad.chmod(0o644)
    assert not (world / "snap").exists()


def test_a_folder_of_rows_that_cannot_be_entered_is_one_line(world: Path) -> None:
    # Was: a PermissionError traceback (a folder of mode 644: its names can be listed,
    # its files not reached); a folder of mode 000 was refused already.
    flat, hive = world / "flat", world / "hive"
    write_parquet(identity_cases(), flat / "a.parquet")
    write_parquet(identity_cases(), hive / "date=2026-11-20" / "a.parquet")
    _open_to_all(world)
    for source, target, mode in ((flat, flat, 0o644), (hive, hive / "date=2026-11-20", 0)):
        target.chmod(mode)
        _refused(graphkit_as_nobody("build", source, "--snapshot", world / "snap", cwd=world),
                 str(target), "Permission denied")
        target.chmod(0o755)


def test_unreadable_transcripts_are_counted_or_refused_never_lost(world: Path) -> None:
    # Pins what held: an unreadable transcript in ~/.claude/projects is a skipped file,
    # counted; an unreadable project folder stops the build naming it (its sessions
    # would be missing without a word); a transcript named alone is one line.
    projects = world / ".claude" / "projects"
    shutil.copytree(REPO / "tests" / "fixtures" / "shaped", projects)
    _open_to_all(world)
    good = graphkit_as_nobody("build", projects, "--snapshot", world / "good", "--json",
                              cwd=world)
    assert good.returncode == 0, good.stderr
    session = next(projects.rglob("claude-compaction/*/*.jsonl"))
    session.chmod(0)
    proc = graphkit_as_nobody("build", projects, "--snapshot", world / "snap", "--json",
                              cwd=world)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["lines_skipped"] == json.loads(good.stdout)["lines_skipped"] + 1
    skipped = [s for s in summary["skipped_lines"] if s["file"] == str(session)]
    assert skipped and "Permission denied" in skipped[0]["reason"], summary["skipped_lines"]
    _refused(graphkit_as_nobody("build", session, "--snapshot", world / "one", cwd=world),
             str(session), "Permission denied")
    session.chmod(0o644)
    project = session.parent
    project.chmod(0)
    _refused(graphkit_as_nobody("build", projects, "--snapshot", world / "snap", cwd=world),
             str(project), "cannot read this folder")
    # No SOURCE: ~/.claude/projects is read, a note says so, then the one-line refusal.
    proc = graphkit_as_nobody("build", "--snapshot", world / "snap", cwd=world)
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
            line = _refused(graphkit_as_nobody(*args, cwd=world), "Permission denied",
                            "chmod -R a+rX")
            assert "rebuild" not in line
        path.chmod(0o755 if path.is_dir() else 0o644)


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
        line = _refused(graphkit_as_nobody(*args, cwd=world), str(named), "Permission denied")
        assert "free some space" not in line, line
    assert not (world / "own").exists()
    assert sorted((p.name, p.stat().st_mtime_ns) for p in world_snapshot.rglob("*")) == before


def test_the_unprivileged_runner_really_drops_root(world: Path) -> None:
    # The tests above mean nothing if the command still runs as root.
    secret = world / "secret.parquet"
    write_parquet(identity_cases(), secret)
    secret.chmod(0o600)
    proc = graphkit_as_nobody("build", secret, "--snapshot", world / "snap", cwd=world)
    assert proc.returncode == 2 and "Permission denied" in proc.stderr, proc.stderr
    secret.chmod(0o644)
    assert graphkit_as_nobody("build", secret, "--snapshot", world / "snap",
                              cwd=world).returncode == 0


# --- what the round's driver found ---------------------------------------------------

BIDI_SESSION = "sess\u202eevil\u202c-c1a0"
LINE_SEP_AGENT = "agent\u2028A\u2066x\u2069"


@pytest.fixture(scope="module")
def bidi_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rows whose session id holds a right-to-left override and whose agent id holds
    a line separator and a bidi isolate."""
    tmp = tmp_path_factory.mktemp("bidi")
    rows = identity_cases_renamed(BIDI_SESSION, LINE_SEP_AGENT)
    src = tmp / "rows.jsonl"
    src.write_text(json_lines(rows))
    assert graphkit("build", src, "--snapshot", tmp / "snap").returncode == 0
    return tmp / "snap"


def test_bidi_controls_and_line_separators_in_ids_are_shown_escaped(
        bidi_snapshot: Path, tmp_path: Path) -> None:
    # Was: U+202E reached the terminal raw in tree, lineage, usage, files and view's
    # "wrote" line (the rest of the line shown reversed: one id passing for another),
    # and U+2028 split lines for every reader that splits as Python does; view's line
    # also carried ESC raw (round six escaped the other commands only).
    snap = bidi_snapshot
    for args in (["sessions"], ["tree", BIDI_SESSION], ["lineage", BIDI_SESSION],
                 ["lineage", LINE_SEP_AGENT], ["usage", BIDI_SESSION], ["files"],
                 ["view", BIDI_SESSION, "--out", tmp_path / "v.html"]):
        proc = graphkit(*args, "--snapshot", snap)
        assert proc.returncode == 0, (args, proc.stderr)
        for raw in ("\u202e", "\u2028", "\u2066"):
            assert raw not in proc.stdout and raw not in proc.stderr, (args, proc.stdout)
        if args[0] in ("tree", "view"):
            assert "sess\\u202eevil\\u202c-c1a0" in proc.stdout, proc.stdout
    # Data is exact where it is data: --json escapes as JSON does, --csv keeps the id.
    exact = graphkit("lineage", LINE_SEP_AGENT, "--snapshot", snap, "--json")
    assert json.loads(exact.stdout)["id"] == LINE_SEP_AGENT
    missing = graphkit("tree", "x\u202ey", "--snapshot", snap)
    one_line_error(missing, "x\\u202ey")


def test_an_escaped_lone_surrogate_in_json_lines_names_its_line(tmp_path: Path) -> None:
    # Was: "cannot read rows: Error creating dataset… The surrogate pair in string is
    # invalid. in row 0", naming no line, with the hint to check the file's format
    # (Python's json takes "\ud800", so the line finder passed it). Round seven named
    # the line and stopped; round eight keeps the row with U+FFFD and names the line in
    # a note (test_hostile_eighth.py), as transcripts keep such a line.
    folder = tmp_path / "rows"
    bad = rows_with_a_lone_surrogate(folder)
    for src in (bad, folder):
        proc = graphkit("build", src, "--snapshot", tmp_path / "snap")
        assert proc.returncode == 0 and f"{bad}:4 (column 'session_id')" in proc.stderr
    # A surrogate pair, escaped, is one character and builds.
    bad.write_text(bad.read_text().replace("\\udfff", "\\ud83d\\ude00"))
    assert graphkit("build", bad, "--snapshot", tmp_path / "snap").returncode == 0


def test_a_price_of_400_digits_is_one_line_and_a_bom_is_read_as_nothing(
        tmp_path: Path) -> None:
    # Was: OverflowError traceback (math.isfinite of an int past a float's range); a
    # table starting with a byte-order mark was "not JSON (Unexpected UTF-8 BOM…)",
    # where a contract with one loads.
    snap = tmp_path / "snap"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", snap).returncode == 0
    prices = tmp_path / "prices.json"
    prices.write_text('{"models": {"claude-sonnet-4-5": {"input": ' + "9" * 400 + "}}}")
    for extra in ([], ["--by", "model"], ["--json"]):
        one_line_error(graphkit("usage", "--snapshot", snap, "--prices", prices, *extra),
                       str(prices), "needs numbers")
    prices.write_text("\ufeff" + json.dumps({"models": {"claude-sonnet-4-5": {"input": 3}}}))
    proc = graphkit("usage", "--snapshot", snap, "--prices", prices, "--json")
    assert proc.returncode == 0, proc.stderr


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
