"""Row files: Parquet, Arrow IPC/Feather and JSON Lines, alone or in (hive) folders.

Read through ``pyarrow.dataset``, only the columns asked for. A read failure becomes a
:class:`SourceError` naming the file (and for JSON Lines the line).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from graphkit.core.errors import SourceError, first_line

FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "ipc",
    ".feather": "ipc",
    ".ipc": "ipc",
    ".jsonl": "json",
    ".ndjson": "json",
}

# One source piece: the label rows point back to, and its rows.
Piece = tuple[str, pa.Table]


def file_format(path: Path) -> str:
    """The pyarrow dataset format of a row file, from its suffix."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise SourceError("unsupported file type", path=str(path),
                          hint="give .parquet, .arrow/.feather/.ipc, .jsonl/.ndjson, "
                               "a transcript, or a folder of them")
    return fmt


def fingerprint(path: Path) -> dict[str, Any]:
    """Size, mtime and SHA-256 of an input file, for the snapshot manifest."""
    st = path.stat()
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return {"path": str(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "sha256": h.hexdigest()}


def row_files(root: Path) -> dict[str, list[Path]]:
    """The row files below ``root`` by format, sorted; hidden and ``_`` names skipped."""
    by_format: dict[str, list[Path]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        for name in sorted(filenames):
            fmt = FORMATS.get(Path(name).suffix.lower())
            if fmt and not name.startswith((".", "_")):
                by_format.setdefault(fmt, []).append(Path(dirpath) / name)
    return by_format


def open_dataset(paths: list[Path], fmt: str, root: Path | None,
                 dictionary_columns: Sequence[str] = ()) -> ds.Dataset:
    """One dataset over ``paths`` (hive partitions below ``root``), with one schema for all."""
    kwargs: dict[str, Any] = {"format": fmt}
    if fmt == "parquet" and dictionary_columns:
        kwargs["format"] = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(
            dictionary_columns=list(dictionary_columns)))
    if root is not None:
        # Hive folders (date=2026-11-20/) become columns, as HypAware exports them.
        kwargs["partitioning"] = "hive"
        kwargs["partition_base_dir"] = str(root)
    dataset = ds.dataset([str(p) for p in paths], **kwargs)
    if len(paths) < 2:
        return dataset
    # pyarrow takes a dataset's schema from its first file; a column that file
    # lacks would silently vanish from every other file. Unify all of them.
    schemas = [dataset.schema]
    for frag in dataset.get_fragments():
        try:
            schemas.append(frag.physical_schema)
        except (pa.ArrowInvalid, OSError) as exc:
            raise read_error(Path(frag.path), fmt, exc) from None
    try:
        unified = pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise SourceError(f"files disagree on column types: {first_line(exc)}",
                          path=str(root or paths[0]),
                          hint="give the files separately to see which one differs") from None
    return ds.dataset([str(p) for p in paths], schema=unified, **kwargs)


def read_dataset(dataset: ds.Dataset, wanted: set[str]) -> list[Piece]:
    """Each file of ``dataset`` as a piece, holding the ``wanted`` columns it has."""
    out = []
    for frag in dataset.get_fragments():
        label = frag.path
        try:
            schema = frag.physical_schema
            names = set(schema.names) | set(dataset.schema.names)
            cols = [c for c in dataset.schema.names if c in wanted and c in names]
            table = frag.to_table(schema=dataset.schema, columns=cols)
        except (pa.ArrowInvalid, OSError, pa.ArrowNotImplementedError) as exc:
            raise SourceError(f"cannot read rows: {first_line(exc)}", path=label,
                              hint="check that the file is complete and in a supported "
                                   "format (Parquet, Arrow IPC/Feather, JSON Lines)") from None
        out.append((label, table))
    return out


def read_row_files(path: Path, wanted: set[str],
                   dictionary_columns: Sequence[str] = ()) -> list[Piece]:
    """The ``wanted`` columns of a row file, or of every row file in a folder, one piece
    per file; text columns named in ``dictionary_columns`` stay dictionary-encoded."""
    if path.is_file():
        fmt = file_format(path)
        try:
            return read_dataset(open_dataset([path], fmt, None, dictionary_columns), wanted)
        except pa.ArrowInvalid as exc:
            raise read_error(path, fmt, exc) from None
    groups = row_files(path)
    if not groups:
        raise SourceError("no row files, transcripts or Iceberg table found here",
                          path=str(path),
                          hint="point at Parquet/Feather/JSON Lines files, a Claude Code "
                               "projects folder, a Codex sessions folder or a HypAware cache")
    out = []
    for fmt, files in sorted(groups.items()):
        try:
            out.extend(read_dataset(open_dataset(files, fmt, path, dictionary_columns), wanted))
        except pa.ArrowInvalid as exc:
            bad = next((f for f in files if bad_json_line(f)), None) if fmt == "json" else None
            raise read_error(bad or path, fmt, exc) from None
    return out


def read_whole_files(path: Path) -> list[Piece]:
    """Every column of a row file, or of each row file in a folder, one piece per file."""
    files = [path] if path.is_file() else [f for fs in row_files(path).values() for f in fs]
    out = []
    for f in files:
        fmt = file_format(f)
        try:
            out.append((str(f), ds.dataset(str(f), format=fmt).to_table()))
        except (pa.ArrowInvalid, OSError) as exc:
            raise read_error(f, fmt, exc) from None
    if not out:
        raise SourceError("no rows found", path=str(path))
    return out


def bad_json_line(path: Path) -> int | None:
    """The 1-based number of the first line of ``path`` that is not a JSON object."""
    try:
        with path.open("rb") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    if not isinstance(json.loads(line), dict):
                        return n
                except ValueError:
                    return n
    except OSError:
        return None
    return None


def read_error(path: Path, fmt: str, exc: BaseException) -> SourceError:
    """A read failure, pointing at the line for JSON Lines (Arrow says only "row N")."""
    line = bad_json_line(path) if fmt == "json" and path.is_file() else None
    if line is not None:
        return SourceError("not a JSON object on this line", path=str(path), line=line,
                           hint="fix or remove the line; each line of a JSON Lines file "
                                "is one row")
    return SourceError(f"cannot read rows: {first_line(exc)}", path=str(path))
