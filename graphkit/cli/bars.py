"""The rich rendering of :class:`graphkit.core.progress.Progress` on a terminal.

A note is one line with a spinner; each started task is a line of its own: a bar,
``done/total unit``, the rates of its side tallies (rows/s, MB/s) and the time left,
with the source being read now on the line below it. Updates from the work are
buffered and handed to rich at most every :data:`FLUSH_SECONDS`, so a per-file call
costs a clock read; rich redraws on its own thread a few times a second. The display
is transient: it is gone when the command prints its result.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from types import TracebackType
from typing import Any

from rich.console import Console, RenderableType
from rich.progress import (
    BarColumn,
    ProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichBars
from rich.progress import Task as RichTask
from rich.spinner import Spinner
from rich.table import Column
from rich.text import Text

from graphkit.core.errors import printable
from graphkit.core.progress import Progress, Task

FLUSH_SECONDS = 0.1
SOURCE_WIDTH = 100


def human(n: float) -> str:
    """``n`` in three significant figures with k/M/G.

    >>> human(950), human(45_100), human(2_500_000)
    ('950', '45.1k', '2.5M')
    """
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= size:
            return f"{n / size:.3g}{suffix}"
    return f"{n:.3g}" if n != int(n) else str(int(n))


def short_source(label: str, width: int = SOURCE_WIDTH) -> str:
    """``label`` with the home folder as ``~``, cut at the front (a file's name is the
    telling end of its path).

    >>> short_source("/a/very/long/folder/session.jsonl", 20)
    '…older/session.jsonl'
    """
    home = os.path.expanduser("~")
    if home != "/" and label.startswith(home + os.sep):
        label = "~" + label[len(home):]
    return label if len(label) <= width else "…" + label[-(width - 1):]


class _Counts(ProgressColumn):
    """``done/total unit`` and the rate of each side tally."""

    def render(self, task: RichTask) -> Text:
        unit = task.fields.get("unit", "")
        done = f"{int(task.completed):,}"
        parts = [f"{done}/{int(task.total):,} {unit}" if task.total is not None
                 else f"{done} {unit}"]
        elapsed = task.elapsed or 0.0
        for name, value in task.fields.get("counts", {}).items():
            if elapsed > 0:
                parts.append(f"{human(value / 1e6 / elapsed)} MB/s" if name == "bytes"
                             else f"{human(value / elapsed)} {name}/s")
        return Text(" · ".join(parts).strip())


class _Bars(RichBars):
    """rich's bars with the current note above them on a line of its own (as a task row
    it would widen the name column of every bar)."""

    def __init__(self, *columns: ProgressColumn, **kwargs: Any) -> None:
        self.spinner: Spinner | None = None  # set first: rich renders in __init__
        super().__init__(*columns, **kwargs)

    def get_renderables(self) -> Iterable[RenderableType]:
        if self.spinner is not None:
            yield self.spinner
        if self.tasks:
            yield self.make_tasks_table(self.tasks)
        # Each running task's source on a line of its own, cut to the terminal's width
        # from the front: on the bar's line it would wrap or lose the file's name.
        for task in self.tasks:
            source = task.fields.get("source")
            if source and not task.finished and task.stop_time is None:
                # Escaped: a folder or file name is text from the disk, and an escape
                # sequence in it set the terminal's title or cleared the screen.
                yield Text("  " + short_source(printable(source),
                                               max(12, self.console.width - 3)),
                           style="dim", no_wrap=True, overflow="crop")


class RichTaskHandle(Task):
    """A task line; updates buffered, flushed to rich at most every FLUSH_SECONDS."""

    def __init__(self, bars: RichBars, task_id: Any) -> None:
        self._bars, self._id = bars, task_id
        self._lock = threading.Lock()  # a parallel load may advance from several threads
        self._pending = 0
        self._counts: dict[str, int] = {}
        self._source: str | None = None
        self._last = 0.0

    def advance(self, n: int = 1, **counts: int) -> None:
        with self._lock:
            self._pending += n
            for k, v in counts.items():
                self._counts[k] = self._counts.get(k, 0) + v
            self._maybe_flush()

    def set_source(self, label: str) -> None:
        with self._lock:
            self._source = label
            self._maybe_flush()

    def set_total(self, total: int | None) -> None:
        with self._lock:
            self._flush()
            self._bars.update(self._id, total=total)

    def done(self) -> None:
        with self._lock:
            self._flush()
            task = self._bars.tasks[self._bars.task_ids.index(self._id)]
            # Finished: full bar, elapsed time, rates over the work's own time.
            self._bars.update(self._id, total=task.completed if task.total is None
                              else task.total, source="")
            self._bars.stop_task(self._id)

    def _maybe_flush(self) -> None:
        now = time.monotonic()
        if now - self._last >= FLUSH_SECONDS:
            self._flush(now)

    def _flush(self, now: float | None = None) -> None:
        self._last = time.monotonic() if now is None else now
        fields: dict[str, Any] = {"counts": dict(self._counts)}
        if self._source is not None:
            fields["source"] = self._source
        self._bars.update(self._id, advance=self._pending, **fields)
        self._pending = 0


class RichProgress(Progress):
    """Notes and task bars on ``console`` (stderr by default) while in a ``with``."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True, highlight=False)
        self.bars = _Bars(
            # Not markup: a step's name may hold a file name ("[/x]" broke rich's parser).
            TextColumn("  {task.description}", markup=False),
            BarColumn(bar_width=24),
            _Counts(table_column=Column(no_wrap=True)),
            TimeRemainingColumn(elapsed_when_finished=True),
            console=self.console, transient=True, refresh_per_second=8)

    def __enter__(self) -> RichProgress:
        self.bars.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.bars.stop()

    def note(self, message: str) -> None:
        # A Text, not a str (which rich reads as markup), with control characters
        # escaped: a note names the folders and files being read.
        text = Text(printable(message))
        if self.bars.spinner is None:
            self.bars.spinner = Spinner("dots", text=text)
        else:
            self.bars.spinner.update(text=text)

    def start(self, name: str, total: int | None = None, unit: str = "") -> Task:
        name = printable(name)
        if self.bars.spinner is not None:  # the last note is over when a task begins
            self.bars.spinner.update(text=Text(name))
        for old in list(self.bars.tasks):  # a repeated step (per partition) keeps one line
            if old.description == name and old.stop_time is not None:
                self.bars.remove_task(old.id)
        task_id = self.bars.add_task(name, total=total, unit=unit, counts={})
        return RichTaskHandle(self.bars, task_id)
