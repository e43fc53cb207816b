"""Where in a JSON Lines file Arrow's JSON reader met what it refuses about a column.

Arrow says "Column(/message_index) changed from number to string in row 40" or
"Column(/session_id) was specified twice in row 2": its row counts from 0, skips blank
lines, and (read through a dataset) may count from the start of a block, so it is no
line a user can go to; and the hint that went with it ("check that the file is complete
and in a supported format") sent them the wrong way. The line is found again here by
reading the file with Python's json — only once Arrow has refused it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from graphkit.core.errors import SourceError

_COLUMN = re.compile(r"Column\((/[^)]*)\) (?:changed from (\w+) to (\w+)|was specified twice)")

# Arrow's names of JSON's kinds, as a user writes them.
_SAID = {"number": "a number", "string": "text", "boolean": "true/false",
         "object": "an object", "array": "a list", "null": "null"}


def column_error(path: Path, exc: BaseException) -> SourceError | None:
    """The error naming the line and column of ``exc``, if it is Arrow's refusal of a
    column whose JSON type changes between lines or of a key written twice in one
    object, and the line is found; None otherwise."""
    found = _COLUMN.search(str(exc))
    if found is None:
        return None
    keys = found.group(1).split("/")[1:]
    column = ".".join(keys)
    if found.group(2) is None:
        line = _first_line(path, lambda raw: _repeats(raw, keys[-1]))
        if line is None:
            return None
        return SourceError(f"key {keys[-1]!r} is written twice in one object on this line",
                           path=str(path), line=line, column=column,
                           hint="keep one of them: JSON readers differ in which one "
                                "they take")
    first: tuple[str, int] | None = None  # the first kind met, and its line
    try:
        with path.open("rb") as f:
            for number, raw in enumerate(f, 1):
                kind = _kind(raw, keys) if raw.strip() else None
                if kind in (None, "null"):
                    continue
                if first is None:
                    first = (kind, number)
                elif _as_read(kind, keys) != _as_read(first[0], keys):
                    return SourceError(
                        f"column {column!r} holds {_SAID[kind]} on this line, "
                        f"{_SAID[first[0]]} on line {first[1]} before it",
                        path=str(path), line=number, column=column,
                        hint=f"write every value of '{column}' as one JSON type (a number "
                             "as 7, not \"7\"; true, not \"true\"), or fix or remove the line")
    except OSError:
        return None
    return None


def _as_read(kind: str, keys: list[str]) -> str:
    """The kind as Arrow last read it: a top-level object or list is given to it as its
    JSON text (``row_files._nested_as_text``)."""
    return "string" if len(keys) == 1 and kind in ("object", "array") else kind


def _first_line(path: Path, test: Any) -> int | None:
    """The number of the first line of ``path`` for which ``test(raw)`` holds."""
    try:
        with path.open("rb") as f:
            for number, raw in enumerate(f, 1):
                if raw.strip() and test(raw):
                    return number
    except OSError:
        return None
    return None


def _kind(raw: bytes, keys: list[str]) -> str | None:
    """Arrow's name of the JSON kind at ``keys`` in a line (None: the line is no object,
    or lacks the key)."""
    try:
        value: Any = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _repeats(raw: bytes, key: str) -> bool:
    """Whether an object of the line names ``key`` twice."""
    seen = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal seen
        names = [k for k, _ in items]
        seen = seen or names.count(key) > 1
        return dict(items)

    try:
        json.loads(raw, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return False
    return seen
