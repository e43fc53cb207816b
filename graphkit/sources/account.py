"""Files that account for what a build did not use: rejected rows and skipped lines.

Both are JSON Lines, one object per unusable row or line, pointing back at the input
(file and row, or file and line) with the reason, so nothing is dropped silently.

- ``<target>.rejects.jsonl`` (:func:`write_rejects`): rows the contract refused.
- ``<target>.skipped.jsonl`` (:func:`write_skipped_lines`): transcript lines (or whole
  files, ``line`` 0) that gave no rows. :func:`skipped_lines_path` names it beside the
  rejects file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa

from graphkit.core.schema import CONTENT_COLUMNS, FILE_COL, ROW_COL

REJECTS_SUFFIX = ".rejects.jsonl"
SKIPPED_SUFFIX = ".skipped.jsonl"


def skipped_lines_path(rejects_file: Path) -> Path:
    """Where skipped lines go for a given rejects file: beside it, ``.skipped.jsonl``.

    >>> skipped_lines_path(Path("out/graph.rejects.jsonl")).as_posix()
    'out/graph.skipped.jsonl'
    >>> skipped_lines_path(Path("my-rejects.txt")).as_posix()
    'my-rejects.txt.skipped.jsonl'
    """
    name = rejects_file.name
    stem = name[: -len(REJECTS_SUFFIX)] if name.endswith(REJECTS_SUFFIX) else name
    return rejects_file.with_name(stem + SKIPPED_SUFFIX)


def _write_lines(path: Path, records: Iterable[dict[str, Any]]) -> None:
    """Write JSON Lines through a temp file and a rename: never a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, default=str, sort_keys=False) + "\n")
    os.replace(tmp, path)


def write_rejects(path: Path, rejects: pa.Table, *, include_content: bool = False) -> int:
    """Write rejected rows as JSON Lines (one object per row with its reason).

    Returns the number of rows written. Content columns are left out unless
    ``include_content`` is set.
    """
    keep = [c for c in rejects.column_names
            if include_content or c not in CONTENT_COLUMNS]

    def records() -> Iterable[dict[str, Any]]:
        for rec in rejects.select(keep).to_pylist():
            yield {
                "source": rec.pop(FILE_COL, None),
                "row": rec.pop(ROW_COL, None),
                "reason": rec.pop("__reason", None),
                "column": rec.pop("__column", None),
                "values": rec,
            }

    _write_lines(path, records())
    return rejects.num_rows


def write_skipped_lines(path: Path, skipped: list[dict[str, Any]]) -> int:
    """Write every skipped line as JSON Lines ``{"path", "line", "reason"}``; line 0 is a
    whole file. Returns the number written."""
    _write_lines(path, ({"path": s["path"], "line": s["line"], "reason": s["reason"]}
                        for s in skipped))
    return len(skipped)
