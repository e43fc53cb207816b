"""Paths a user may give: names with control characters or newlines, names in bytes that
are not UTF-8, names as long as the file system takes and longer, a link to itself.
Each works, or is one line naming the path and what to do; nothing half-written stays."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.paths import REPO, SAMPLE_ROWS, not_utf8
from tests.helpers.rows import (
    identity_cases,
)


@pytest.mark.parametrize("name", ["new\nline.jsonl", "\x1b[2J\x1b[31mred.jsonl"])
def test_a_file_name_with_control_characters_stays_one_escaped_line(tmp_path: Path,
                                                                    name: str) -> None:
    # Was: the newline broke the error in two; an ESC reached the terminal as is.
    src = tmp_path / name
    src.write_text("not json\n")
    line = one_line_error(graphkit("build", src, "--snapshot", tmp_path / "snap"))
    assert "\x1b" not in line
    assert name.encode("unicode_escape").decode() in line


def test_a_good_file_with_a_newline_in_its_name_builds(tmp_path: Path) -> None:
    src = tmp_path / "new\nline.jsonl"
    rows = identity_cases()
    src.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    proc = graphkit("build", src, "--snapshot", tmp_path / "snap", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["rows_read"] == len(rows) and summary["rows_rejected"] == 1


def test_an_error_naming_a_path_with_a_newline_stays_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Was: GRAPHKIT_HOME="\n": "the snapshot index (\n/index.json) has no build…" on two
    # lines (UserErrors raised by the CLI itself were not escaped as GraphkitErrors are).
    monkeypatch.setenv("GRAPHKIT_HOME", "\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    proc = graphkit("sessions")
    one_line_error(proc, "\\n/index.json")


@pytest.mark.slow
def test_a_path_named_in_bytes_that_are_not_utf8_is_one_line(tmp_path: Path) -> None:
    # (In a process of its own: what its stderr takes of such a name is under test too.)
    # Was: UnicodeEncodeError tracebacks (Arrow's file system takes only UTF-8 paths)
    # from `build --snapshot`, a neo4j-parquet export and a build of a transcript folder
    # so named; the snapshot and export half-made their temporary folders first.
    snap = tmp_path / "snap"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", snap).returncode == 0
    bad_snap = not_utf8(tmp_path, "s")
    one_line_error(graphkit("build", REPO / "samples" / "rows", "--snapshot", bad_snap,
                            process=True),
                   "the snapshot path is not valid UTF-8", "s\ufffd")
    bad_out = not_utf8(tmp_path, "np")
    one_line_error(graphkit("export", snap, "--format", "neo4j-parquet", bad_out,
                            process=True),
                   "the export path is not valid UTF-8")
    folder = not_utf8(tmp_path, "tx")
    shutil.copytree(REPO / "tests" / "fixtures" / "transcripts" / "claude-code-log", folder)
    one_line_error(graphkit("build", folder, "--snapshot", tmp_path / "t", process=True),
                   "tx\ufffd: this name is not valid UTF-8")
    assert sorted(os.listdir(tmp_path)) == sorted(["snap", ".snap.cache",
                                                   os.path.basename(folder)])
    # Where Python writes the file itself, such a name is written as given.
    out = not_utf8(tmp_path, "g.graphml")
    assert graphkit("export", snap, "--format", "graphml", out, process=True).returncode == 0


LONG = "n" * 250  # a legal name (255 bytes at most), too long for "." + NAME + ".xxx.tmp…"


@pytest.mark.slow
def test_a_name_of_250_bytes_is_written_by_every_writer(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # Was: "cannot write: File name too long; free some space…" from every writer (the
    # temporary sibling ".NAME.<random>.tmp" passed 255 bytes), for a name the file
    # system takes. Temporary names now cut a long name and add a digest of it.
    monkeypatch.chdir(tmp_path)
    snap = tmp_path / LONG
    built = graphkit("build", SAMPLE_ROWS, "--snapshot", snap, "--rejects", "r.jsonl",
                     "--cache-dir", "cache")
    assert built.returncode == 0, built.stderr
    assert (snap / "manifest.json").is_file()
    sid = graphkit("sessions", "--snapshot", snap, "--json").stdout.splitlines()[0]
    session = json.loads(sid)["session_id"]
    for args in (["rows", SAMPLE_ROWS, "--out", tmp_path / "o" / LONG],
                 ["view", session, "--snapshot", snap, "--out", tmp_path / "v" / LONG],
                 ["export", snap, "--format", "graphml", tmp_path / "g" / LONG],
                 ["export", snap, "--format", "neo4j-csv", tmp_path / "c" / LONG]):
        proc = graphkit(*args)
        assert proc.returncode == 0, (args[0], proc.stderr)
        out = Path(args[-1])
        assert out.exists() and [p.name for p in out.parent.iterdir()] == [LONG]


def test_a_snapshot_name_too_long_for_its_rejects_file_is_refused_before_the_build(
        tmp_path: Path) -> None:
    # Was: the build ran, then "cannot write the snapshot: File name too long (NAME's
    # temporary folder)"; with that fixed, the rejects file NAME.rejects.jsonl (264
    # bytes) would fail only the day a row is first rejected. Now refused up front.
    proc = graphkit("build", SAMPLE_ROWS, "--snapshot", tmp_path / LONG)
    line = one_line_error(proc, f"{LONG}.rejects.jsonl", "264 bytes", "--rejects")
    assert "choose a shorter --snapshot name" in line
    assert list(tmp_path.iterdir()) == []
    given = graphkit("build", SAMPLE_ROWS, "--snapshot", tmp_path / "s", "--rejects",
                     tmp_path / LONG)
    one_line_error(given, f"{LONG[:-10]}", "skipped-lines file")


@pytest.mark.parametrize("where", ["source", "snapshot", "contract", "out", "rejects",
                                   "prices", "middle"])
def test_a_path_past_what_the_file_system_takes_is_one_line(tmp_path: Path,
                                                              where: str) -> None:
    # Was: OSError "[Errno 36] File name too long" tracebacks (Python 3.11's
    # Path.exists() and is_dir() raise it) from build, rows and the option checks.
    too = str(tmp_path / ("x" * 300))
    args = {"source": ["build", too, "--snapshot", tmp_path / "s"],
            "snapshot": ["build", SAMPLE_ROWS, "--snapshot", too],
            "contract": ["build", SAMPLE_ROWS, "--snapshot", tmp_path / "s", "--contract",
                         too + ".yaml"],
            "out": ["rows", SAMPLE_ROWS, "--out", too],
            "rejects": ["build", SAMPLE_ROWS, "--snapshot", tmp_path / "s", "--rejects", too],
            "prices": ["usage", "--snapshot", tmp_path / "s", "--prices", too],  # held
            "middle": ["build", SAMPLE_ROWS, "--snapshot", too + "/snap"]}[where]
    proc = graphkit(*args)
    one_line_error(proc, "too long")
    assert not (tmp_path / "s").exists()


def test_temporary_folders_of_a_long_snapshot_name_are_known_as_its_own(tmp_path: Path) -> None:
    """The left-over cleaning and the watch find a long name's temporary siblings."""
    from graphkit.core.files import own_outputs
    from graphkit.snapshot.swap import leftovers, make_dir

    snap = tmp_path / LONG
    tmp = make_dir(snap, "tmp")
    assert len(tmp.name.encode()) <= 255
    assert [p for p, kind, _ in leftovers(snap)] == [tmp] and tmp.name.startswith(".n")
    assert own_outputs([snap])(str(tmp / "nodes" / "x.parquet"))
    assert not own_outputs([tmp_path / "other"])(str(tmp / "x"))


@pytest.mark.parametrize("command", ["build", "check", "rows"])
def test_a_source_that_is_a_link_to_itself_is_one_line(tmp_path: Path, command: str) -> None:
    # Was (build): "RuntimeError: Symlink loop from '…/loop'" traceback (Python 3.11's
    # Path.resolve(), in the build's input check); check and rows said "no such file".
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    out = {"build": ["--snapshot", tmp_path / "snap"],
           "rows": ["--out", tmp_path / "r.parquet"], "check": []}[command]
    proc = graphkit(command, loop, *out)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and str(loop) in proc.stderr
