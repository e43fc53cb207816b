"""The progress display on a terminal escapes the folder and file names it shows (issue
31): an escape sequence in a name set the terminal's title or cleared the screen, and a
name rich took for markup ("[/bold]") broke the display."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

from rich.console import Console

from graphkit.builds.run import build
from graphkit.cli.bars import RichProgress

EVIL = "evil\x1b]0;PWNED\x07\x1b[2J[/bold][link=http://x]name\u202e"
SHOWCASE = (Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
            / "claude-code-log" / "minimal_showcase")


def terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=400, color_system=None), out


def shown_safely(text: str) -> None:
    assert "\x1b]0;PWNED" not in text and "\x1b[2J" not in text and "\x07" not in text
    assert "\u202e" not in text
    assert "\\x1b]0;PWNED" in text  # the name is there, escaped


def test_notes_steps_and_sources_are_escaped() -> None:
    console, out = terminal()
    with RichProgress(console) as bars:
        bars.note(f"reading {EVIL}")
        bars.bars.refresh()
        task = bars.start(f"step {EVIL}", total=2, unit="files")
        task.set_source(f"/data/{EVIL}/s.jsonl")
        task.advance(1)
        bars.bars.refresh()
        task.done()
    shown_safely(out.getvalue())


def test_a_build_of_an_evil_folder_shows_its_name_escaped(tmp_path: Path) -> None:
    folder = tmp_path / EVIL
    shutil.copytree(SHOWCASE, folder)
    console, out = terminal()

    class Slow(RichProgress):  # every update drawn, as a slow build's would be
        def note(self, message: str) -> None:
            super().note(message)
            self.bars.refresh()

    with Slow(console) as bars:
        build([folder], progress=bars)
        bars.bars.refresh()
    shown_safely(out.getvalue())
