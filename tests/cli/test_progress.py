"""Progress of long work (graphkit.core.progress, rendered by graphkit.cli.bars) and the
terminal tables: what the library reports, what a terminal shows, and silence when
quiet or piped. Terminals here are rich consoles forced to act as one, or a real
pseudo-terminal around a whole ``graphkit`` process."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from graphkit.builds.run import build, check, write_rows
from graphkit.cli import bars
from graphkit.cli.render import progress, table_lines
from graphkit.core.progress import as_progress
from graphkit.sources.transcripts.files import transcript_files
from tests.helpers.cli import on_a_terminal
from tests.helpers.recording import RecordingProgress

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
READING = "reading transcripts"


def _transcripts(fixtures: Path) -> tuple[Path, list[Path]]:
    root = fixtures / "transcripts"
    return root, transcript_files([root])


@pytest.mark.slow
def test_transcript_reading_counts_every_file_and_names_the_one_being_read(
        fixtures: Path, tmp_path: Path) -> None:
    root, files = _transcripts(fixtures)
    rec = RecordingProgress()
    build([root], progress=rec, cache_dir=tmp_path / "cache")
    assert rec.total(READING) == len(files) > 10
    assert rec.advanced(READING) == len(files)
    events = rec.of(READING)
    # Each file is named before its step is counted: the label on screen is the file
    # being read, not the last source given on the command line. (Each once; the
    # transcripts are read link group by link group, so not in path order.)
    sources = [e[2] for e in events if e[0] == "source"]
    assert sorted(sources) == sorted(str(f) for f in files)
    order = [e[0] for e in events]
    assert order[0] == "start" and order[-1] == "done"
    assert all(a == "source" and b == "advance" for a, b in zip(order[1:-1:2], order[2:-1:2],
                                                                 strict=True))
    rows = sum(e[3].get("rows", 0) for e in events if e[0] == "advance")
    assert rows > 0
    assert not [m for kind, m, *_ in rec.events if kind == "note" and "(claude)" in m]


@pytest.mark.slow
def test_a_second_build_reuses_files_and_still_counts_them(fixtures: Path,
                                                          tmp_path: Path) -> None:
    root, files = _transcripts(fixtures)
    build([root], cache_dir=tmp_path / "cache")
    rec = RecordingProgress()
    build([root], progress=rec, cache_dir=tmp_path / "cache")
    assert rec.advanced(READING) == rec.total(READING) == len(files)


@pytest.mark.slow
def test_an_old_string_callback_still_hears_the_steps(fixtures: Path, tmp_path: Path) -> None:
    root, files = _transcripts(fixtures)
    said: list[str] = []
    result = build([root], progress=said.append, cache_dir=tmp_path / "cache")
    assert f"{READING} ({len(files)} files)" in said
    assert any(m.startswith(f"projecting {result.projection.rows_read} rows") for m in said)
    assert as_progress(None).start("x", 3).advance() is None  # the silent default


def test_check_and_rows_report_their_reading(fixtures: Path, tmp_path: Path) -> None:
    root, files = _transcripts(fixtures)
    rec = RecordingProgress()
    n_rows, _ = check([root], progress=rec)
    assert rec.advanced(READING) == len(files)
    assert ("note", f"checking {n_rows} rows") in rec.events
    rec = RecordingProgress()
    out = tmp_path / "rows.parquet"
    result = write_rows([root], out, progress=rec)
    assert rec.advanced(READING) == len(files)
    assert ("note", f"writing {result.rows} rows to {out}") in rec.events


def test_export_counts_the_rows_it_writes(sample_rows: Path, tmp_path: Path) -> None:
    from graphkit.export import export_graph

    graph = build(sample_rows).graph
    rec = RecordingProgress()
    export_graph(graph, "neo4j-csv", str(tmp_path / "csv"), progress=rec)
    total = sum(graph.node_counts().values()) + sum(graph.edge_counts().values())
    assert rec.advanced("writing neo4j-csv") == total
    notes = [e[1] for e in rec.events if e[0] == "note"]
    assert any(n.startswith("writing nodes/Session.csv") for n in notes)


def _every_flush_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hand every update to rich and draw it at once (a real terminal redraws on
    rich's own clock, which a quick test would mostly miss)."""
    flush = bars.RichTaskHandle._flush

    def drawn(self: bars.RichTaskHandle, now: float | None = None) -> None:
        flush(self, now)
        self._bars.refresh()

    monkeypatch.setattr(bars, "FLUSH_SECONDS", 0.0)
    monkeypatch.setattr(bars.RichTaskHandle, "_flush", drawn)


@pytest.mark.slow
def test_a_terminal_shows_files_done_of_total_and_the_file_being_read(
        fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _every_flush_drawn(monkeypatch)
    root, files = _transcripts(fixtures)
    screen = io.StringIO()
    console = Console(force_terminal=True, file=screen, width=300)
    with progress(console=console) as shown:
        build([root], progress=shown, cache_dir=tmp_path / "cache")
    out = ANSI.sub("", screen.getvalue())
    n = len(files)
    assert f"1/{n} files" in out and f"{n // 2}/{n} files" in out and f"{n}/{n} files" in out
    assert "rows/s" in out and "MB/s" in out
    # The file being read shows under its bar while it is read (link group by link
    # group, so not necessarily the k-th in path order).
    shown_files = {str(f) for f in files}
    for k in (0, n // 2, n - 1):
        found = re.search(rf"{k}/{n} files[^\r]*\n\s+(\S+)", out)
        assert found and found.group(1) in shown_files, k
    assert "projecting" in out


def test_the_source_line_keeps_the_end_of_a_long_path() -> None:
    long = "/data/" + "x" * 200 + "/session-1234.jsonl"
    cut = bars.short_source(long, 40)
    assert len(cut) == 40 and cut.startswith("…") and cut.endswith("session-1234.jsonl")


def test_progress_is_off_when_not_wanted() -> None:
    from graphkit.core.progress import NO_PROGRESS

    with progress(False, console=Console(file=io.StringIO(), force_terminal=True)) as shown:
        assert shown is NO_PROGRESS
    with progress() as shown:  # pytest's stderr is no terminal
        assert shown is NO_PROGRESS



def _build_args(fixtures: Path, tmp_path: Path, name: str) -> list[str]:
    return ["build", str(fixtures / "transcripts"), "--snapshot", str(tmp_path / name)]


@pytest.mark.slow
def test_a_terminal_sees_progress_and_quiet_or_a_pipe_sees_none(fixtures: Path,
                                                                tmp_path: Path) -> None:
    _, shown, code = on_a_terminal(_build_args(fixtures, tmp_path, "a"), stderr_tty=True)
    assert code == 0 and READING in shown and "files" in shown
    for args in (["-q", *_build_args(fixtures, tmp_path, "b")],
                 [*_build_args(fixtures, tmp_path, "c"), "--quiet"]):
        out, err, code = on_a_terminal(args, stderr_tty=True)
        assert code == 0 and "snapshot written" in out
        assert err == "", args
    out, err, code = on_a_terminal(_build_args(fixtures, tmp_path, "d"), stderr_tty=False)
    # Piped: no progress, only the reading's notes (warnings stay on stderr; -q drops them).
    assert code == 0 and "snapshot written" in out
    assert READING not in err and "\x1b" not in err
    assert err and all(line.startswith("note: ") for line in err.splitlines())
    _, err, code = on_a_terminal(["check", str(fixtures / "transcripts"), "-q"], stderr_tty=True)
    assert READING not in err and "\x1b" not in err


@pytest.mark.slow
def test_the_sessions_table_on_a_terminal_lists_what_json_lists(sample_rows: Path,
                                                                 tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    assert on_a_terminal(["build", str(sample_rows), "--snapshot", str(snap)],
                     stderr_tty=False)[2] == 0
    out, _, code = on_a_terminal(["sessions", "--snapshot", str(snap)], stderr_tty=False,
                             stdout_tty=True)
    js, _, _ = on_a_terminal(["sessions", "--snapshot", str(snap), "--json"], stderr_tty=False)
    assert code == 0
    sessions = [json.loads(line) for line in js.splitlines()]
    lines = ANSI.sub("", out).replace("\r", "").splitlines()
    assert lines[0].split() == ["session_id", "workspace", "threads", "agents", "messages",
                                "models", "tokens", "cost", "first_seen", "last_seen"]
    assert "\x1b[1m" in out  # a bold header on a terminal
    body = lines[2:]
    assert [ln.split()[0] for ln in body] == [s["session_id"] for s in sessions]
    assert [ln.split()[1] for ln in body] == [s["workspaces"][0] for s in sessions]
    assert [int(ln.split()[4]) for ln in body] == [s["messages"] for s in sessions]
    # Times in one shape, whatever fraction or offset the store gave.
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", t)
               for ln in body for t in ln.split()[-2:])
    ends = {len(ln.rstrip()) for ln in body}  # aligned: every row ends where the last does
    assert len(ends) == 1


def test_table_lines_align_wide_text_and_keep_control_characters_out() -> None:
    rows: list[list[Any]] = [["日本語", 1, None], ["a\tb\nc", 22, "x"]]
    lines = table_lines(["name", "n", "note"], rows, right={"n"})
    assert lines[2] == "日本語   1"
    assert lines[3] == "a b c   22  x"
    assert lines[1].split() == ["──────", "──", "────"]


def test_a_repeated_step_keeps_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    _every_flush_drawn(monkeypatch)
    screen = io.StringIO()
    with progress(console=Console(force_terminal=True, file=screen, width=120)) as shown:
        assert isinstance(shown, bars.RichProgress)
        for part in range(3):
            with shown.start("reading transcripts", total=2, unit="files") as task:
                task.set_source(f"part-{part}.jsonl")
                task.advance(2)
        assert len(shown.bars.tasks) == 1
