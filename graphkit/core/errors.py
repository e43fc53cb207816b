"""Errors a user can cause, each able to say where and what to do.

The CLI turns every :class:`GraphkitError` into a one-line message and exit
code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import re


class GraphkitError(Exception):
    """A user-facing error that names the input, the place and the fix."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        row: int | None = None,
        column: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.row = row
        self.column = column
        self.hint = hint
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = self.path
            if self.line is not None:
                where += f":{self.line}"
            if self.row is not None:
                where += f" row {self.row}"
            where += ": "
        text = where + self.message
        if self.column:
            text += f" (column {self.column!r})"
        if self.hint:
            text += f"; {self.hint}"
        return text


class ContractError(GraphkitError):
    """The contract file is malformed or does not fit the input."""


class SourceError(GraphkitError):
    """A source cannot be read or lacks what the contract needs."""


class StoreError(GraphkitError):
    """A store refused a load or a connection failed."""


class WrittenMeanwhile(StoreError):
    """A node a load creates exists already: another process wrote it meanwhile (two
    loads into one empty database at once)."""


class QueryError(GraphkitError):
    """A lineage/tree query names an unknown or ambiguous id."""


# C0 controls, DEL and C1 controls: a file name or id holding them would break a one-line
# message in two, or (ESC) drive the user's terminal. Also the line and paragraph
# separators (U+2028/9: `str.splitlines()` and many readers break lines there) and the
# bidirectional overrides, embeddings, isolates and marks (U+202E in an id reversed
# the rest of its line on screen: one id shown as another, "Trojan Source").
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with control characters written as escapes, so it prints as one line
    and cannot drive a terminal.

    >>> printable("a\\nb.jsonl\\x1b[2J")
    'a\\\\nb.jsonl\\\\x1b[2J'
    >>> printable("id\\u202eliame")
    'id\\\\u202eliame'
    """
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def excerpt(value: str, limit: int = 24, *, quote: bool = True) -> str:
    """``value`` quoted for a message about it, its control characters escaped
    (:func:`printable`) and cut to ``limit`` characters: a record's unknown ``type`` is
    text from the file, which may be a pasted key or a screenful of escape sequences, and
    a skipped-lines file and stderr never echo it whole when it is long (every record
    type Claude Code and Codex write is shorter than the default: ``file-history-snapshot``).

    >>> excerpt("progress"), excerpt("d-003", quote=False)
    ("'progress'", 'd-003')
    >>> excerpt("\x1b]0;owned\x07" + "A" * 50, 12)
    "'\\\\x1b]0;owned\\\\x07AA…' (60 characters)"
    """
    q = "'" if quote else ""
    if len(value) <= limit:
        return f"{q}{printable(value)}{q}"
    return f"{q}{printable(value[:limit])}…{q} ({len(value)} characters)"


def first_line(exc: BaseException, max_chars: int | None = None) -> str:
    """The first line of an exception's text (its type name if it has none),
    cut to ``max_chars``: what a one-line user message quotes of a library error.

    >>> first_line(ValueError("bad value\\n  at column 3"))
    'bad value'
    >>> first_line(KeyError())
    'KeyError'
    """
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line if max_chars is None else line[:max_chars]
