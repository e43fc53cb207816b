"""Progress of long work, as structured calls a renderer may show or ignore.

The library reports through a :class:`Progress`: one-line :meth:`~Progress.note`\\ s
("projecting 1,000,000 rows") and counted :meth:`~Progress.start`\\ ed tasks (files
read of a known total, the source being read now, rows or bytes along the way). It
never draws anything: the command line renders it with rich on a terminal
(:mod:`graphkit.cli.render`), and a library caller gets the silent base class.

Older callers pass a plain ``Callable[[str], None]``; :func:`as_progress` accepts it,
and a :class:`Progress` is itself callable as one (``progress("message")`` is a note),
so both kinds go wherever either is expected.

>>> seen = []
>>> p = as_progress(seen.append)
>>> p.note("reading rows")
>>> with p.start("transcripts", total=2, unit="files") as task:
...     task.set_source("a.jsonl")
...     task.advance(1, rows=10)
>>> seen
['reading rows', 'transcripts (2 files)']
>>> as_progress(None).start("anything").advance(5)  # silent
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TypeAlias


class Task:
    """A handle on one counted piece of work. This base records nothing; a renderer's
    subclass shows it. Calls are cheap enough for once per file or batch."""

    def advance(self, n: int = 1, **counts: int) -> None:
        """``n`` more units done; ``counts`` adds to side tallies (``rows=``, ``bytes=``)
        a renderer may show as rates."""

    def set_source(self, label: str) -> None:
        """What is being read or written now (a file, a label, a table)."""

    def set_total(self, total: int | None) -> None:
        """The total, once it is known (None: unknown)."""

    def done(self) -> None:
        """The work is finished (also on leaving a ``with`` block)."""

    def __enter__(self) -> Task:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.done()


class Progress:
    """Where long work reports. This base reports nowhere: the library's default."""

    def note(self, message: str) -> None:
        """A one-line remark on what happens now (replaces the previous note)."""

    def start(self, name: str, total: int | None = None, unit: str = "") -> Task:
        """Begin a counted task of ``total`` ``unit``\\ s (None: not known yet)."""
        return Task()

    def __call__(self, message: str) -> None:
        # The old string-callback shape, so a Progress goes where one is expected.
        self.note(message)


class _Callback(Progress):
    """A plain ``Callable[[str], None]`` seen as a :class:`Progress`: notes and the start
    of each task reach it; per-file calls do not (they would flood a line callback)."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say

    def note(self, message: str) -> None:
        self._say(message)

    def start(self, name: str, total: int | None = None, unit: str = "") -> Task:
        self._say(f"{name} ({total} {unit})".replace(" )", ")") if total is not None else name)
        return Task()


NO_PROGRESS = Progress()

# What library functions accept: a Progress, an old string callback, or None (silent).
ProgressLike: TypeAlias = Progress | Callable[[str], None] | None


def as_progress(progress: ProgressLike) -> Progress:
    """``progress`` as a :class:`Progress` (None: silent; a callable: notes only)."""
    if progress is None:
        return NO_PROGRESS
    if isinstance(progress, Progress):
        return progress
    return _Callback(progress)
