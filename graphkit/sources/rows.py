"""Read message rows from any number of sources into one contract-shaped table.

Row files are read through ``pyarrow.dataset`` (only the columns the contract
needs); transcripts and Iceberg caches go through their own readers and come
back as rows of the same schema. Each row keeps the file and the 1-based row
number it came from, so a reject or an error can point at it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from graphkit.contract.loader import LoadedContract
from graphkit.contract.validate import TEXT_DICT, combine_dictionaries, conform
from graphkit.core.errors import SourceError

# Provenance columns added to every row; the projection drops them.
FILE_COL = "__file"
ROW_COL = "__row"

_FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "ipc",
    ".feather": "ipc",
    ".ipc": "ipc",
    ".jsonl": "json",
    ".ndjson": "json",
}

Progress = Callable[[str], None]


def file_format(path: Path) -> str:
    """The pyarrow dataset format of a row file, from its suffix."""
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise SourceError("unsupported file type", path=str(path),
                          hint="give .parquet, .arrow/.feather/.ipc, .jsonl/.ndjson, "
                               "a transcript, or a folder of them")
    return fmt


@dataclass
class SourceRows:
    """Rows read from all sources, plus what the reading found along the way."""

    table: pa.Table
    fingerprints: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def fingerprint(path: Path) -> dict[str, Any]:
    """Size, mtime and SHA-256 of an input file, for the snapshot manifest."""
    st = path.stat()
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return {"path": str(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "sha256": h.hexdigest()}


def _row_files(root: Path) -> dict[str, list[Path]]:
    by_format: dict[str, list[Path]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        for name in sorted(filenames):
            fmt = _FORMATS.get(Path(name).suffix.lower())
            if fmt and not name.startswith((".", "_")):
                by_format.setdefault(fmt, []).append(Path(dirpath) / name)
    return by_format


def _text_columns(contract: LoadedContract) -> list[str]:
    """Input columns to read dictionary-encoded: the non-content text ones.

    Ids and names repeat across rows and Parquet stores them dictionary-encoded,
    so reading the dictionary and int32 indices skips building a string per row
    (and the projection's own encoding of them). Content is mostly distinct, so
    it stays plain.
    """
    from graphkit.core.schema import CONTENT_COLUMNS

    return sorted(n for n, c in contract.spec.input.items()
                  if c.type in ("string", "json") and n not in CONTENT_COLUMNS)


def _dataset(paths: list[Path], fmt: str, root: Path | None,
             dictionary_columns: Sequence[str] = ()) -> ds.Dataset:
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
            raise _read_error(Path(frag.path), fmt, exc) from None
    try:
        unified = pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise SourceError(f"files disagree on column types: {_first_line(exc)}",
                          path=str(root or paths[0]),
                          hint="give the files separately to see which one differs") from None
    return ds.dataset([str(p) for p in paths], schema=unified, **kwargs)


def _wanted(contract: LoadedContract, include_content: bool) -> set[str]:
    from graphkit.core.schema import CONTENT_COLUMNS

    cols = set(contract.spec.input)
    # Content is the bulk of the bytes; leave it on disk unless asked for.
    return cols if include_content else cols - set(CONTENT_COLUMNS)


def _read_dataset(dataset: ds.Dataset, contract: LoadedContract,
                  include_content: bool = False) -> list[tuple[str, pa.Table]]:
    wanted = _wanted(contract, include_content)
    out = []
    for frag in dataset.get_fragments():
        label = frag.path
        try:
            schema = frag.physical_schema
            names = set(schema.names) | set(dataset.schema.names)
            cols = [c for c in dataset.schema.names if c in wanted and c in names]
            table = frag.to_table(schema=dataset.schema, columns=cols)
        except (pa.ArrowInvalid, OSError, pa.ArrowNotImplementedError) as exc:
            raise SourceError(f"cannot read rows: {_first_line(exc)}", path=label,
                              hint="check that the file is complete and in a supported "
                                   "format (Parquet, Arrow IPC/Feather, JSON Lines)") from None
        out.append((label, table))
    return out


def _rows_from_row_files(path: Path, contract: LoadedContract,
                         include_content: bool = False) -> list[tuple[str, pa.Table]]:
    if path.is_file():
        fmt = file_format(path)
        try:
            return _read_dataset(_dataset([path], fmt, None, _text_columns(contract)),
                                 contract, include_content)
        except pa.ArrowInvalid as exc:
            raise _read_error(path, fmt, exc) from None
    groups = _row_files(path)
    if not groups:
        raise SourceError("no row files, transcripts or Iceberg table found here",
                          path=str(path),
                          hint="point at Parquet/Feather/JSON Lines files, a Claude Code "
                               "projects folder, a Codex sessions folder or a HypAware cache")
    out = []
    for fmt, files in sorted(groups.items()):
        try:
            out.extend(_read_dataset(_dataset(files, fmt, path, _text_columns(contract)),
                                     contract, include_content))
        except pa.ArrowInvalid as exc:
            bad = next((f for f in files if _bad_json_line(f)), None) if fmt == "json" else None
            raise _read_error(bad or path, fmt, exc) from None
    return out


def _bad_json_line(path: Path) -> int | None:
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


def _read_error(path: Path, fmt: str, exc: BaseException) -> SourceError:
    """A read failure, pointing at the line for JSON Lines (Arrow says only "row N")."""
    line = _bad_json_line(path) if fmt == "json" and path.is_file() else None
    if line is not None:
        return SourceError("not a JSON object on this line", path=str(path), line=line,
                           hint="fix or remove the line; each line of a JSON Lines file "
                                "is one row")
    return SourceError(f"cannot read rows: {_first_line(exc)}", path=str(path))

def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def arange(start: int, stop: int) -> pa.Array:
    """``start, start + 1, ..., stop - 1`` as an int64 array, without a Python list."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy comes with pyarrow in practice
        return pa.array(range(start, stop), pa.int64())
    return pa.array(np.arange(start, stop, dtype=np.int64))


def _tag(table: pa.Table, label: str) -> pa.Table:
    n = table.num_rows
    files = pa.DictionaryArray.from_arrays(pa.repeat(pa.scalar(0, pa.int32()), n),
                                           pa.array([label]))
    rows = arange(1, n + 1)
    return table.append_column(FILE_COL, files).append_column(ROW_COL, rows)


def _unify_json(tables: list[pa.Table], contract: LoadedContract) -> list[pa.Table]:
    """Make JSON columns one type across tables: text, unless all are structs."""
    from graphkit.contract.expr import as_text

    json_cols = [n for n, c in contract.spec.input.items() if c.type == "json"]
    out = tables
    for name in json_cols:
        types = {t.schema.field(name).type for t in out}
        if len(types) <= 1 or not any(pa.types.is_struct(t) for t in types):
            continue
        fixed = []
        for t in out:
            col = t.column(name)
            if not (pa.types.is_string(col.type) or pa.types.is_dictionary(col.type)):
                arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
                t = t.set_column(t.schema.get_field_index(name), name,
                                 as_text(arr) if not pa.types.is_null(arr.type)
                                 else pa.nulls(len(arr), pa.string()))
            fixed.append(t)
        out = fixed
    return out


def _unify_text(tables: list[pa.Table]) -> list[pa.Table]:
    """Where one source has a text column dictionary-encoded (Parquet) and another
    plain (JSON Lines, transcripts, a column it lacks), encode the plain ones so
    the tables concatenate; the projection would encode them anyway."""
    if len(tables) < 2:
        return tables
    out = list(tables)
    for name in out[0].column_names:
        types = {t.schema.field(name).type for t in out}
        if TEXT_DICT not in types or len(types) == 1:
            continue
        for i, t in enumerate(out):
            col = t.column(name)
            if col.type != TEXT_DICT:
                out[i] = t.set_column(t.schema.get_field_index(name), name,
                                      col.cast(TEXT_DICT))
    return out


def read_sources(
    paths: Sequence[Path],
    contract: LoadedContract,
    *,
    strict: bool = False,
    since: datetime | None = None,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    fingerprints: bool = True,
    include_content: bool = False,
) -> SourceRows:
    """Read every source into one table of the contract's input columns.

    Adds ``__file`` and ``__row`` (1-based) provenance columns.
    """
    result = SourceRows(table=pa.table({}))
    pieces = gather_sources(
        paths, result,
        read_rows=lambda path: _rows_from_row_files(path, contract, include_content),
        iceberg_columns=sorted(_wanted(contract, include_content)),
        strict=strict, since=since, cache_dir=cache_dir, progress=progress,
        fingerprints=fingerprints)
    tables = []
    for label, table in pieces:
        conformed = conform(contract, table, label)
        tables.append(_tag(conformed, label))
    if not tables:
        raise SourceError("no sources given", hint="name at least one file or folder")
    tables = _unify_text(_unify_json(tables, contract))
    combined = combine_dictionaries(pa.concat_tables(tables, promote_options="permissive"))
    result.table = since_filter(combined, since)
    return result


def since_filter(table: pa.Table, since: datetime | None) -> pa.Table:
    """Rows of ``table`` at or after ``since`` (all rows if ``since`` is None)."""
    if since is None or "message_created_at" not in table.column_names:
        return table
    bound = pa.scalar(since, pa.timestamp("us", tz="UTC"))
    return table.filter(
        pc.fill_null(pc.greater_equal(table.column("message_created_at"), bound), False))


def gather_sources(
    paths: Sequence[Path],
    result: SourceRows,
    *,
    read_rows: Callable[[Path], list[tuple[str, pa.Table]]],
    iceberg_columns: Sequence[str] | None,
    strict: bool = False,
    since: datetime | None = None,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    fingerprints: bool = False,
) -> list[tuple[str, pa.Table]]:
    """Read each source by its kind into ``(label, table)`` pieces.

    Row files go through ``read_rows``; Iceberg caches are read with
    ``iceberg_columns``; all transcripts are read together (their cross-file
    links need it), their skipped lines, fingerprints and a note landing in
    ``result``.
    """
    say = progress or (lambda _msg: None)
    pieces: list[tuple[str, pa.Table]] = []
    transcript_paths: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise SourceError("no such file or folder", path=str(path),
                              hint="check the path")
        kind = _kind(path)
        say(f"reading {path} ({kind})")
        if kind == "iceberg":
            from graphkit.sources.iceberg import read_iceberg

            pieces.append((str(path), read_iceberg(path, columns=iceberg_columns)))
        elif kind in ("claude", "codex"):
            transcript_paths.append(path)
        else:
            pieces.extend(read_rows(path))
        if fingerprints and kind == "rows":
            files = [path] if path.is_file() else [
                f for fs in _row_files(path).values() for f in fs]
            result.fingerprints.extend(fingerprint(f) for f in files)
    if transcript_paths:
        from graphkit.sources.transcripts import read_transcripts

        tr = read_transcripts(transcript_paths, strict=strict, since=since, cache_dir=cache_dir)
        result.skipped.extend(
            {"path": s.path, "line": s.line, "reason": s.reason} for s in tr.skipped)
        result.fingerprints.extend(tr.fingerprints)
        result.notes.append(
            f"transcripts: {tr.files_read} file(s) parsed, {tr.files_reused} reused from the "
            f"index, {len(tr.skipped)} line(s) skipped")
        pieces.append((",".join(str(p) for p in transcript_paths), tr.table))
    return pieces


def _kind(path: Path) -> str:
    """``iceberg``, ``claude``, ``codex`` or ``rows``."""
    # Imported here: plain row files never need the transcript/Iceberg readers.
    from graphkit.sources.iceberg import is_iceberg_source
    from graphkit.sources.transcripts import transcript_kind

    if is_iceberg_source(path):
        return "iceberg"
    kind = transcript_kind(path)
    return kind or "rows"


def write_rejects(path: Path, rejects: pa.Table, *, include_content: bool = False) -> int:
    """Write rejected rows as JSON Lines (one object per row with its reason).

    Returns the number of rows written. Content columns are left out unless
    ``include_content`` is set.
    """
    from graphkit.core.schema import CONTENT_COLUMNS

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    keep = [c for c in rejects.column_names
            if include_content or c not in CONTENT_COLUMNS]
    with tmp.open("w", encoding="utf-8") as f:
        for rec in rejects.select(keep).to_pylist():
            out = {
                "source": rec.pop(FILE_COL, None),
                "row": rec.pop(ROW_COL, None),
                "reason": rec.pop("__reason", None),
                "column": rec.pop("__column", None),
                "values": rec,
            }
            f.write(json.dumps(out, default=str, sort_keys=False) + "\n")
    os.replace(tmp, path)
    return rejects.num_rows
