"""Files that account for what a build did not use, one JSON object per line.

- ``SNAPSHOT.rejects.jsonl`` (:func:`write_rejects`): rows the contract refused,
  each with its source, row and reason.
- ``SNAPSHOT.skipped.jsonl`` (:func:`write_skipped_lines`): transcript lines (or
  whole files, ``line`` 0) that gave no rows, each with its file, line and reason.

Without ``include_content`` a reject names its row — source file, row or
line, the row's ids — and the reason, never its payload: ``attributes`` and
tool arguments can hold API keys, and a rejects file is easy to share.

graphkit only replaces or deletes a rejects file it wrote itself (recognised
by its first line), so ``--rejects`` can never clobber a user's own file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from graphkit.core.errors import GraphkitError
from graphkit.core.files import check_name_fits, check_output, output_file
from graphkit.core.schema import CONTENT_COLUMNS, FILE_COL, ROW_COL

# Columns a reject keeps without --include-content: what names the row.
IDENTITY_COLUMNS = ("session_id", "conversation_id", "agent_id", "parent_thread_id",
                    "message_id", "part_id", "message_created_at", "schema_version")
# Every line graphkit writes has "reason" and one of these pairs; the first line
# proves authorship.
_KEYS = (("source", "row"), ("path", "line"))


def is_rejects_file(path: Path) -> bool:
    """Whether ``path`` is empty or a rejects file graphkit wrote."""
    try:
        with path.open("rb") as f:
            first = f.readline(1 << 20)
    except OSError:
        return False
    if not first.strip():
        return True
    try:
        obj = json.loads(first)
    except ValueError:
        return False
    return isinstance(obj, dict) and "reason" in obj and any(
        all(k in obj for k in pair) for pair in _KEYS)


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


def check_rejects_folder(path: Path, sources: Sequence[Path | str] = ()) -> None:
    """Refuse a rejects path that is a folder (``""``, ``.`` and ``/`` too: no file
    name), or one no output may take (:func:`check_output`: a source, a transcript, a
    file in a snapshot). The build checks before it starts (an empty ``--rejects`` was a
    ValueError traceback); a user's file there is refused only when rejects are written
    (a clean build leaves it be)."""
    if path.is_dir() or not path.name:
        raise GraphkitError("the rejects path is a folder", path=str(path),
                            hint="give --rejects a file name, e.g. out/graph.rejects.jsonl")
    check_output(path, sources=sources, what="rejects file")
    check_output(skipped_lines_path(path), sources=sources, what="skipped-lines file")


def check_side_names(rejects_file: Path, cache_dir: Path | None) -> None:
    """Refuse, before the build, a rejects, skipped-lines or cache name longer than the
    file system takes: named after the snapshot by default, they failed only when first
    written (a 250-byte snapshot name builds, but ``NAME.rejects.jsonl`` cannot be)."""
    if not rejects_file.name:
        return  # no file name at all: check_rejects_folder says so
    hint = ("choose a shorter --snapshot name (its rejects, skipped-lines and cache files "
            "are named after it), or give --rejects FILE and --cache-dir DIR")
    check_name_fits(rejects_file, "rejects file", hint)
    check_name_fits(skipped_lines_path(rejects_file), "skipped-lines file", hint)
    if cache_dir is not None:
        check_name_fits(Path(cache_dir), "build cache folder", hint)


def check_rejects_target(path: Path) -> None:
    """:func:`check_rejects_folder`, and refuse a file graphkit did not write."""
    check_rejects_folder(path)
    if path.exists() and not is_rejects_file(path):
        raise GraphkitError("refusing to overwrite a file graphkit did not write",
                            path=str(path),
                            hint="move it away or give --rejects another path")


def write_rejects(path: Path, rejects: pa.Table, *, include_content: bool = False) -> int:
    """Write rejected rows as JSON Lines (one object per row with its reason),
    atomically; returns the number of rows written.

    Without ``include_content`` only the row's identity columns are kept.
    """
    path = Path(path)
    check_rejects_target(path)
    if include_content:
        keep = list(rejects.column_names)
    else:
        keep = [c for c in rejects.column_names
                if c in IDENTITY_COLUMNS or c in (FILE_COL, ROW_COL, "__reason", "__column")]
    keep = [c for c in keep if include_content or c not in CONTENT_COLUMNS]
    _write_lines(path, (_line(rec) for rec in rejects.select(keep).to_pylist()))
    return rejects.num_rows


def write_skipped_lines(path: Path, skipped: list[dict[str, Any]]) -> int:
    """Write every skipped line as ``{"path", "line", "reason"}`` (line 0: a whole
    file), atomically; returns the number written."""
    path = Path(path)
    check_rejects_target(path)
    _write_lines(path, ({"path": s["path"], "line": s["line"], "reason": s["reason"]}
                        for s in skipped))
    return len(skipped)


def _write_lines(path: Path, records: Iterable[dict[str, Any]]) -> None:
    """JSON Lines through a temporary file and a rename: never half a file."""
    with output_file(path) as f:
        for rec in records:
            f.write((json.dumps(rec, default=str) + "\n").encode("utf-8"))


def _line(rec: dict[str, Any]) -> dict[str, Any]:
    return {
        "source": rec.pop(FILE_COL, None),
        "row": rec.pop(ROW_COL, None),
        "reason": rec.pop("__reason", None),
        "column": rec.pop("__column", None),
        "values": rec,
    }


def remove_stale(path: Path) -> bool:
    """Delete a rejects or skipped-lines file an earlier build wrote (so it does
    not claim what this build did not have); a file graphkit did not write is
    left alone. Returns whether a file was removed."""
    if path.is_file() and is_rejects_file(path):
        path.unlink()
        return True
    return False
