"""Row files: Parquet, Arrow IPC/Feather and JSON Lines, alone or in (hive) folders.

Read through ``pyarrow.dataset``, only the columns asked for. A read failure becomes a
:class:`SourceError` naming the file (and for JSON Lines the line).
"""

from __future__ import annotations

import codecs
import errno
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.json as pajson

from graphkit.core.errors import SourceError, first_line
from graphkit.core.files import open_regular, walk_folders
from graphkit.core.text import is_text, storable_json
from graphkit.sources.json_places import column_error

FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "ipc",
    ".feather": "ipc",
    ".ipc": "ipc",
    ".jsonl": "json",
    ".ndjson": "json",
}

# What to do about a row file Arrow cannot read.
_UNREADABLE = ("check that the file is complete and in a supported format (Parquet, "
               "Arrow IPC/Feather, JSON Lines)")
# What to do about a file or folder the user running graphkit may not read.
UNREADABLE_HINT = ("make it readable by the user running graphkit (chmod a+rX), or "
                   "leave it out of the sources")
# One source piece: the label rows point back to, and its rows.
Piece = tuple[str, pa.Table]
# What a reader applies to each file's table once it is read (computed columns).
Finish = Callable[[pa.Table], pa.Table]
# pyarrow reads JSON Lines a block at a time and a line must fit in one; long lines are
# normal (a pasted log in content_text). A longer line gets a block of its own size.
JSON_BLOCK = 16 << 20
# pyarrow's JSON reader crashes the process on lines nested thousands deep, and Python's
# json (the contract's JSON paths) stops near 1,000: refuse deeper lines before either.
MAX_JSON_DEPTH = 500


def file_format(path: Path) -> str:
    """The pyarrow dataset format of a row file, from its suffix."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise SourceError("unsupported file type", path=str(path),
                          hint="give .parquet, .arrow/.feather/.ipc, .jsonl/.ndjson, "
                               "a transcript, or a folder of them")
    return fmt


def fingerprint(path: Path, digest: bool = False) -> dict[str, Any]:
    """Size and mtime of an input file, for the snapshot manifest; with ``digest``, its
    SHA-256 too (``--hash-inputs``: reading every byte again, content columns
    included, costs about as much CPU as a build's whole read of the columns it uses,
    and nothing in graphkit needs the digest)."""
    st = path.stat()
    out: dict[str, Any] = {"path": str(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    if digest:
        with path.open("rb") as f:
            out["sha256"] = hashlib.file_digest(f, "sha256").hexdigest()
    return out


def unreadable_folder(exc: OSError) -> None:
    """``os.walk``'s error handler: a folder that cannot be listed fails the read (its
    rows would otherwise be missing without a word)."""
    raise SourceError(f"cannot read this folder: {exc.strerror or exc}", path=exc.filename,
                      hint="make it readable, or name the folders to read") from None


def _usable(path: Path, name: str) -> None:
    """Refuse a file that cannot be read as named: a link to nothing, a name that is not
    UTF-8 (the Arrow readers need UTF-8 paths)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise SourceError(f"file name {os.fsencode(name)!r} is not valid UTF-8",
                          path=os.fsencode(path.parent).decode("utf-8", "replace"),
                          hint="rename the file") from None
    try:
        dangling = path.is_symlink() and not path.exists()
    except OSError as exc:  # a folder that can be listed but not entered (mode 644)
        raise SourceError(f"cannot read this folder's files: {exc.strerror or exc}",
                          path=str(path.parent), hint=UNREADABLE_HINT) from None
    if dangling:
        raise SourceError("a symbolic link that leads to no file (dangling or looping)",
                          path=str(path), hint="remove the link or point it at a file")


def row_files(root: Path, own: list[Path] | None = None) -> dict[str, list[Path]]:
    """The row files below ``root`` by format, sorted; hidden and ``_`` names skipped,
    and graphkit's own outputs (:func:`graphkit_output`), which go to ``own``."""
    by_format: dict[str, list[Path]] = {}
    for dirpath, dirnames, filenames in walk_folders(root, onerror=unreadable_folder):
        if graphkit_output_folder(dirpath, dirnames, filenames):
            dirnames[:] = []
            if own is not None:
                own.append(Path(dirpath))
            continue
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        for name in sorted(filenames):
            fmt = FORMATS.get(Path(name).suffix.lower())
            if fmt and not name.startswith((".", "_")):
                if name.endswith(_OWN_FILES) and _graphkit_lines(Path(dirpath) / name):
                    if own is not None:
                        own.append(Path(dirpath) / name)
                    continue
                _usable(Path(dirpath) / name, name)
                by_format.setdefault(fmt, []).append(Path(dirpath) / name)
    return by_format


# What graphkit writes that a row folder may hold: a snapshot built into its own source
# folder (``build rows --snapshot rows/graph``), its rejects and skipped-lines files, a
# neo4j-csv/-parquet export. The next build read them back as rows: the snapshot's
# tables rejected row by row, the rejects file refused the build ("required column
# 'session_id' is missing"), and a build that reads its own outputs never settles.
_OWN_FILES = (".rejects.jsonl", ".skipped.jsonl")
_EXPORT_MARKER = "graphkit-export.json"


def graphkit_output_folder(dirpath: str | Path, dirnames: Sequence[str],
                           filenames: Sequence[str]) -> bool:
    """Whether a folder (its listing) is a graphkit snapshot or folder export."""
    return _EXPORT_MARKER in filenames or (
        "manifest.json" in filenames and "nodes" in dirnames and "edges" in dirnames)


def _graphkit_lines(path: Path) -> bool:
    """Whether ``path``'s first line is one graphkit writes in a rejects or skipped-lines
    file (``reason`` and ``source``/``row`` or ``path``/``line``)."""
    try:
        with path.open("rb") as f:
            first = json.loads(f.readline(1 << 20) or b"null")
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(first, dict) and "reason" in first and (
        {"source", "row"} <= first.keys() or {"path", "line"} <= first.keys())


def graphkit_output(path: Path) -> str | None:
    """What graphkit output ``path`` is, if it is one (a snapshot, a table in one, a
    folder export, a rejects or skipped-lines file), to refuse it as a source."""
    try:
        if path.is_dir():
            listing = list(os.scandir(path))
            names = [e.name for e in listing if not e.is_dir()]
            dirs = [e.name for e in listing if e.is_dir()]
            if _EXPORT_MARKER in names:
                return "a graphkit export"
            return "a graphkit snapshot" if graphkit_output_folder(path, dirs, names) else None
        if path.name.endswith(_OWN_FILES) and _graphkit_lines(path):
            return "a file of lines graphkit left out (rejects or skipped lines)"
        top = path.parent.parent
        if path.parent.name in ("nodes", "edges") and (top / "manifest.json").is_file() \
                and (top / "nodes").is_dir() and (top / "edges").is_dir():
            return "a table of a graphkit snapshot"
    except OSError:
        return None
    return None


class TypesDisagree(SourceError):
    """The files of one dataset hold a column in types no promotion unifies."""


def open_dataset(paths: list[Path], fmt: str, root: Path | None,
                 dictionary_columns: Sequence[str] = (),
                 block_size: int = JSON_BLOCK) -> ds.Dataset:
    """One dataset over ``paths`` (hive partitions below ``root``), with one schema for all."""
    kwargs: dict[str, Any] = {"format": fmt}
    if fmt == "json":
        kwargs["format"] = ds.JsonFileFormat(
            read_options=pajson.ReadOptions(block_size=block_size))
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
            if fmt == "json" and (_SURROGATE in str(exc) or _CHANGED in str(exc)):
                # Read again line by line (_read_group): each lone surrogate repaired,
                # or nested values that change type as their JSON text (a change in the
                # first block of a folder's second file was refused with Arrow's words).
                raise
            raise read_error(Path(frag.path), fmt, exc) from None
    try:
        unified = pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise TypesDisagree(f"files disagree on column types: {first_line(exc)}",
                          path=str(root or paths[0]),
                          hint="give the files separately to see which one differs") from None
    return ds.dataset([str(p) for p in paths], schema=unified, **kwargs)


def read_dataset(dataset: ds.Dataset, wanted: set[str],
                 repaired: list[dict[str, Any]] | None = None,
                 finish: Finish | None = None) -> list[Piece]:
    """Each file of ``dataset`` as a piece, holding the ``wanted`` columns it has; text that
    is not valid UTF-8 is repaired, each repair noted in ``repaired``.

    ``finish`` is applied to each file's table (after the repair) on two threads beside
    the reading: the work is Arrow's, which releases the GIL, so a file's computed
    columns (``touched_files``) are made while the next file decodes, not all after;
    and the files still waiting when the reading ends are finished two at a time (one
    worker left ~0.25 s of one-core work after the last read of 1M rows)."""
    pool = (ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1))
            if finish is not None else None)
    pieces: list[tuple[str, Callable[[], pa.Table]]] = []
    # Each file's repairs are noted apart and joined in file order at the end, so
    # the notes read as one thread reading the files in turn would write them.
    notes: list[list[dict[str, Any]]] = []
    try:
        for frag in dataset.get_fragments():
            label = frag.path
            try:
                schema = frag.physical_schema
                names = set(schema.names) | set(dataset.schema.names)
                cols = [c for c in dataset.schema.names if c in wanted and c in names]
                table = frag.to_table(schema=dataset.schema, columns=cols)
            except (pa.ArrowInvalid, OSError, pa.ArrowNotImplementedError) as exc:
                if "straddl" in str(exc):
                    raise  # a line longer than the block: read again with a bigger one
                raise SourceError(f"cannot read rows: {first_line(exc)}", path=label,
                                  hint=_UNREADABLE) from None
            if not schema.names and not table.num_rows:
                # A file of no columns and no rows (a table of nothing, as an empty JSON
                # Lines file reads): zero rows, given no computed column, which would
                # make it a table lacking every required one (a zero-row file of other
                # columns still lacks them).
                pieces.append((label, _ready(pa.table({}))))
            elif pool is None or finish is None:
                pieces.append((label, _ready(repair_utf8(table, label, repaired))))
            else:
                notes.append([])
                pieces.append((label, pool.submit(_finished, table, label,
                                                  notes[-1] if repaired is not None else None,
                                                  finish).result))
        done = [(label, get()) for label, get in pieces]
    finally:
        if pool is not None:
            pool.shutdown(wait=True)  # as the reading thread alone would, all are done
    if repaired is not None:
        for noted in notes:
            repaired.extend(noted)
    return done


# Arrow's JSON reader refuses a nested value whose type differs between lines.
_CHANGED = ") changed from "
# ... and a whole file for one escaped lone surrogate ("\\ud800"): "The surrogate pair in
# string is invalid."
_SURROGATE = "surrogate"


def _finish_piece(label: str, table: pa.Table, repaired: list[dict[str, Any]] | None,
                  finish: Finish | None) -> Piece:
    table = repair_utf8(table, label, repaired)
    return label, (finish(table) if finish is not None else table)


# The hive folder columns of a group of files: their schema, and each file's values.
Hive = tuple[pa.Schema, dict[str, dict[str, Any]]]


def _hive_keys(files: list[Path], root: Path | None) -> Hive | None:
    """The hive folder columns of ``files`` below ``root`` as Arrow's own discovery makes
    them for the dataset read (names and values URL-decoded, ``year=2026`` an int32,
    ``__HIVE_DEFAULT_PARTITION__`` null), without reading the files: ``fragments=0``."""
    if root is None:
        return None
    import pyarrow.fs as pafs

    options = ds.FileSystemFactoryOptions(partition_base_dir=str(root))
    options.partitioning_factory = ds.HivePartitioning.discover()
    factory = ds.FileSystemDatasetFactory(pafs.LocalFileSystem(), [str(f) for f in files],
                                          ds.JsonFileFormat(), options)
    schema = factory.inspect(fragments=0)
    dataset = factory.finish(schema)
    return schema, {frag.path: ds.get_partition_keys(frag.partition_expression)
                    for frag in dataset.get_fragments()}


def _nested_as_text(path: Path, hive: Hive | None, wanted: set[str] | None,
                    repaired: list[dict[str, Any]] | None = None) -> pa.Table:
    """A JSON Lines file whose nested values change type between lines (an object's
    ``attributes.claude.tool_use_result`` is text in one row, an object in the next, as
    Claude's ``toolUseResult`` is): each top-level object or array is read as its JSON
    text, which is how the contract's ``json`` columns take them anyway.

    Arrow's reader has no option for this; the file is read line by line here, so only
    files it refuses pay for it. ``hive``: the folder columns of :func:`_hive_keys`."""
    out = bytearray()
    row = 0
    try:
        with path.open("rb") as f:
            for number, raw in enumerate(f, 1):
                if not raw.strip():
                    continue
                row += 1
                obj = json.loads(raw)
                if not isinstance(obj, dict):
                    raise ValueError("not an object")
                if b"\\u" in raw and _lone_surrogate(obj):
                    obj = _repaired_row(obj, str(path), row, number, repaired)
                for key, value in obj.items():
                    if isinstance(value, (dict, list)):
                        obj[key] = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
                out += json.dumps(obj).encode()  # escaped: Arrow reads the same text back
                out += b"\n"
        table = pajson.read_json(pa.BufferReader(bytes(out)), read_options=pajson.ReadOptions(
            block_size=max(JSON_BLOCK, len(out) + 1)))
    except (ValueError, RecursionError, pa.ArrowInvalid, OSError) as exc:
        raise read_error(path, "json", exc) from None
    return _hive_and_wanted(table, path, hive, wanted)


def _hive_and_wanted(table: pa.Table, path: Path, hive: Hive | None,
                     wanted: set[str] | None) -> pa.Table:
    """A file's table read outside a dataset: with the hive folder columns the dataset
    would give it (:func:`_hive_keys`), and only the ``wanted`` columns kept."""
    if hive is not None:
        schema, keys = hive
        values = keys.get(str(path), {})
        for field in schema:
            if field.name not in table.column_names:
                table = table.append_column(field, pa.array(
                    [values.get(field.name)] * table.num_rows, field.type))
    if wanted is not None:
        table = table.select([c for c in table.column_names if c in wanted])
    return table


def _repaired_row(obj: dict[str, Any], label: str, row: int, line: int,
                  repaired: list[dict[str, Any]] | None) -> dict[str, Any]:
    """``obj`` with every lone surrogate in its keys and text made U+FFFD, each top-level
    column that held one noted in ``repaired`` (file, row, line, column)."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if _lone_surrogate({key: value}):
            if repaired is not None:
                repaired.append({"file": label, "row": row, "line": line,
                                 "column": storable_json(key), "surrogate": True})
            key, value = storable_json(key), storable_json(value)
        out[key] = value
    return out


def _surrogates_repaired(path: Path, hive: Hive | None, wanted: set[str] | None,
                         repaired: list[dict[str, Any]] | None) -> pa.Table:
    """A JSON Lines file Arrow refused for an escaped lone surrogate (``"\\ud800"``,
    half of a UTF-16 pair: JavaScript writes one when it cuts a string inside an emoji),
    read with each such value made U+FFFD and noted — the row kept, as transcripts keep
    their line. Only the lines holding one are rewritten; the others reach Arrow as they
    are, so only files Arrow refuses pay for this."""
    out = bytearray()
    row = longest = 0
    try:
        with path.open("rb") as f:
            for number, raw in enumerate(f, 1):
                if raw.strip():
                    row += 1
                    if b"\\u" in raw:
                        doc = json.loads(raw)
                        if isinstance(doc, dict) and _lone_surrogate(doc):
                            fixed = _repaired_row(doc, str(path), row, number, repaired)
                            raw = json.dumps(fixed, ensure_ascii=False).encode() + b"\n"
                longest = max(longest, len(raw))
                out += raw
        table = pajson.read_json(pa.BufferReader(bytes(out)), read_options=pajson.ReadOptions(
            block_size=max(JSON_BLOCK, longest + 1024)))
    except pa.ArrowInvalid as exc:
        if _CHANGED not in str(exc):
            raise read_error(path, "json", exc) from None
        return _nested_as_text(path, hive, wanted)  # the repairs are noted already
    except (ValueError, RecursionError, OSError) as exc:
        raise read_error(path, "json", exc) from None
    return _hive_and_wanted(table, path, hive, wanted)


def _ready(table: pa.Table) -> Callable[[], pa.Table]:
    return lambda: table


def _finished(table: pa.Table, label: str, repaired: list[dict[str, Any]] | None,
              finish: Finish) -> pa.Table:
    return finish(repair_utf8(table, label, repaired))


def read_row_files(path: Path, wanted: set[str], dictionary_columns: Sequence[str] = (),
                   repaired: list[dict[str, Any]] | None = None,
                   finish: Finish | None = None) -> list[Piece]:
    """The ``wanted`` columns of a row file, or of every row file in a folder, one piece
    per file; text columns named in ``dictionary_columns`` stay dictionary-encoded.
    ``finish``: applied to each piece's table as it is read (:func:`read_dataset`)."""
    if path.is_file():
        out = _read_group([path], file_format(path), None, wanted, dictionary_columns,
                          repaired, finish)
        return out or [no_rows(path)]
    groups = row_files(path)
    if not groups:
        raise SourceError("no row files, transcripts or Iceberg table found here",
                          path=str(path),
                          hint="point at Parquet/Feather/JSON Lines files, a Claude Code "
                               "projects folder, a Codex sessions folder or a HypAware cache")
    out = []
    for fmt, files in sorted(groups.items()):
        out.extend(_read_group(files, fmt, path, wanted, dictionary_columns, repaired,
                               finish))
    return out or [no_rows(path)]


def no_rows(path: Path) -> Piece:
    """The piece of a source whose JSON Lines files are all empty or blank: no rows and,
    JSON having no schema, no columns. It is read as zero rows, as a zero-row Parquet
    file is (the build's summary then says "rows read 0", and a note names the source);
    beside a file of rows such files are simply read as the none they hold."""
    return str(path), pa.table({})


def _read_group(files: list[Path], fmt: str, root: Path | None, wanted: set[str],
                dictionary_columns: Sequence[str],
                repaired: list[dict[str, Any]] | None,
                finish: Finish | None = None) -> list[Piece]:
    for f in files:
        _openable(f)
    if fmt == "json":
        files = [f for f in files if check_json_depth(f)]
        if not files:
            return []  # only empty files: no rows, nothing lost
    block = JSON_BLOCK
    if fmt == "parquet":
        dictionary_columns = stored_with_dictionary(files[0], dictionary_columns)
    for attempt in (1, 2):
        try:
            return read_dataset(open_dataset(files, fmt, root, dictionary_columns, block),
                                wanted, repaired, finish)
        except TypesDisagree:
            if fmt != "json":
                # One schema for all cannot hold them (a time in another unit or zone,
                # written by another tool or version; a column of another kind): each
                # file is read alone and made the contract's types as its own piece,
                # which takes a unit or zone as it does for a file given alone, and
                # names the file and contract line of a type it cannot take (the folder
                # was refused, naming no file, while each file built when given alone).
                return [piece for f in files for piece in read_dataset(
                    open_dataset([f], fmt, root, dictionary_columns, block), wanted,
                    repaired, finish)]
            # JSON files each consistent, but one holds a nested value as an object and
            # another as text: the same case as below, across files instead of lines.
            return _line_by_line(_nested_as_text, files, root, wanted, repaired, finish)
        except (pa.ArrowInvalid, OSError, pa.ArrowTypeError) as exc:
            # ArrowTypeError: a hive folder key (session_id=x/) that is also a column of
            # the files, in another type.
            if fmt == "json" and attempt == 1 and "straddl" in str(exc):
                block = max(block, _longest_line(files) + 1024)
                continue
            read = _line_reader(exc) if fmt == "json" else None
            if read is not None:
                return _line_by_line(read, files, root, wanted, repaired, finish)
            raise read_error(_culprit(files, fmt, exc) or root or files[0], fmt, exc) from None
    raise AssertionError("unreachable")  # pragma: no cover


# Reads a JSON Lines file line by line: (path, hive columns, wanted, repairs noted).
LineReader = Callable[[Path, Hive | None, set[str] | None, list[dict[str, Any]] | None],
                      pa.Table]


def _line_reader(exc: BaseException) -> LineReader | None:
    """What reads a JSON Lines file Arrow refused with ``exc`` line by line, if anything:
    nested values changing type, or an escaped lone surrogate."""
    if _CHANGED in str(exc):
        return _nested_as_text
    if _SURROGATE in str(exc):
        return _surrogates_repaired
    return None


def _line_by_line(read: LineReader, files: list[Path], root: Path | None, wanted: set[str],
                  repaired: list[dict[str, Any]] | None, finish: Finish | None) -> list[Piece]:
    """Each of ``files`` read by ``read`` (a JSON Lines file Arrow's dataset refused),
    with the hive folder columns the dataset would have given it."""
    hive = _hive_keys(files, root)
    return [_finish_piece(str(f), read(f, hive, wanted, repaired), repaired, finish)
            for f in files]


def _openable(path: Path) -> None:
    """Refuse a file that cannot be opened (permission denied) in words of its own:
    Arrow's ("Error creating dataset… Is this a 'parquet' file?") blamed its format."""
    try:
        # Only a regular file: a FIFO named like a row file in a folder waited for a
        # writer forever (Arrow opens it blocking).
        os.close(open_regular(path))
    except OSError as exc:
        hint = UNREADABLE_HINT if exc.errno != errno.EINVAL else (
            "leave it out of the sources: only regular files are read as rows")
        raise SourceError(f"cannot read this file: {exc.strerror or exc}", path=str(path),
                          hint=hint) from None


def stored_with_dictionary(path: Path, columns: Sequence[str]) -> list[str]:
    """Those of ``columns`` that the Parquet file ``path`` stores with a dictionary
    (judged by its first row group), and those it lacks.

    A writer leaves a dictionary out where values hardly repeat (ids, one per row);
    reading such a column dictionary-encoded would hash every value twice (building
    each row group's dictionary, then unifying 20 of them) for a dictionary as long
    as the column, so it is read as plain text and encoded once, where the
    projection needs it. An unreadable footer is left to the read to report."""
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
    except (pa.ArrowInvalid, OSError):
        return list(columns)
    if meta.num_row_groups == 0:
        return list(columns)
    group = meta.row_group(0)
    plain = set()
    for i in range(group.num_columns):
        chunk = group.column(i)
        if not any("DICTIONARY" in e for e in chunk.encodings):
            plain.add(chunk.path_in_schema)
    return [c for c in columns if c not in plain]


# Lines are read in pieces of this size: a file with no newline in its first gigabyte
# was read whole (one line) by each of the checks below before Arrow was even asked.
_PIECE = 1 << 20
# A line up to this long is kept whole while it is read, for the exact depth measure;
# a longer one with that many brackets is measured again from the disk, piece by piece.
_KEPT_LINE = 64 << 20
_BLANK = b" \t\r\f\v"


def _line_pieces(f: Any) -> Iterator[tuple[int, int, bytes, bool]]:
    """(line number, the line's offset, a piece of it, whether the line ends with it)
    for the file ``f``, read ``_PIECE`` bytes at a time (never a whole line)."""
    number, offset, at = 1, 0, 0
    while chunk := f.read(_PIECE):
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if start < len(chunk):
                    yield number, offset, chunk[start:], False
                break
            yield number, offset, chunk[start:end], True
            number, offset = number + 1, at + end + 1
            start = end + 1
        at += len(chunk)
    yield number, offset, b"", True  # the last line (empty if the file ends with \n)


def check_json_depth(path: Path) -> bool:
    """Refuse a JSON Lines file holding a line nested deeper than ``MAX_JSON_DEPTH``, or a
    line that is not a JSON object by its first or last byte (``[``, text, zero bytes, a
    line cut short); whether
    the file holds a line that is not blank (one that is empty or only blank lines holds
    no row: Arrow refused it, "Empty JSON stream", stopping the build). Read in pieces,
    so a line of any length costs ``_PIECE`` bytes of memory, not its length."""
    text = False
    try:
        with path.open("rb") as f:
            kept: list[bytes] | None = []
            brackets = size = 0
            first: int | None = None  # the line's first byte that is not blank
            last = 0  # and its last
            for number, offset, piece, ends in _line_pieces(f):
                if offset == 0 and size == 0:
                    _utf8_only(path, piece)
                if first is None:
                    lead = piece[3:] if number == 1 and offset == 0 and size == 0 and \
                        piece.startswith(codecs.BOM_UTF8) else piece
                    stripped = lead.lstrip(_BLANK)
                    if stripped:
                        first = stripped[0]
                        text = True
                        if first != 0x7B:  # "{"
                            raise _not_an_object(path, number, piece)
                tail = piece.rstrip(_BLANK)
                if tail:
                    last = tail[-1]
                # Only a line with that many brackets can nest that deep: a C-speed count
                # spares the exact measure on all the others.
                brackets += piece.count(b"[") + piece.count(b"{")
                size += len(piece)
                if kept is not None:
                    kept.append(piece)
                    if size > _KEPT_LINE:
                        kept = None
                if not ends:
                    continue
                if first is not None and last != 0x7D:  # "}": cut short, or no object
                    raise _not_an_object(path, number, b"")
                if brackets > MAX_JSON_DEPTH and _depth_of(f, kept, offset, size) > \
                        MAX_JSON_DEPTH:
                    raise SourceError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels",
                                      path=str(path), line=number,
                                      hint="fix or remove the line")
                kept, brackets, size, first = [], 0, 0, None
    except OSError as exc:
        raise SourceError(f"cannot read this file: {exc.strerror or exc}", path=str(path),
                          hint=UNREADABLE_HINT) from None
    return text


def _utf8_only(path: Path, start: bytes) -> None:
    """Refuse, naming its encoding, a JSON Lines file of UTF-16 or UTF-32 text (by its
    byte-order mark, or the zero bytes of text that starts with "{"): Arrow reads UTF-8,
    and such a file was refused as "not a JSON object" on line 1 or 2."""
    encoding = json.detect_encoding(start[:4]) if len(start) >= 2 else "utf-8"
    if encoding.startswith("utf-8"):
        return
    name = encoding.upper().replace("-BE", " big-endian").replace("-LE", " little-endian")
    raise SourceError(f"this file is {name} text; JSON Lines rows are read as UTF-8",
                      path=str(path), hint=f"convert it: iconv -f {encoding.upper()} -t "
                                           f"UTF-8 FILE > FILE.utf8.jsonl")


def _not_an_object(path: Path, number: int, piece: bytes) -> SourceError:
    if number > 1 and piece.startswith(codecs.BOM_UTF8):
        return SourceError("a byte-order mark (BOM) starts this line; only a file's first "
                           "line may have one", path=str(path), line=number,
                           hint="remove the marks (files joined with `cat` keep each one's): "
                                "sed -i 's/^\\xEF\\xBB\\xBF//' FILE")
    return SourceError("not a JSON object on this line", path=str(path), line=number,
                       hint="fix or remove the line; each line of a JSON Lines file is one row")


def _depth_of(f: Any, kept: list[bytes] | None, offset: int, size: int) -> int:
    """The nesting depth of the line at ``offset`` (``size`` bytes): from ``kept`` (its
    pieces) when it was short enough to keep, else read again from ``f`` in pieces."""
    scan = _DepthScan()
    if kept is not None:
        scan.feed(b"".join(kept))
        return scan.deepest
    back = f.tell()
    f.seek(offset)
    left = size
    while left > 0 and (piece := f.read(min(_PIECE, left))):
        scan.feed(piece)
        left -= len(piece)
    f.seek(back)
    return scan.deepest


class _DepthScan:
    """How deep brackets nest in a JSON text fed in pieces, brackets inside strings not
    counted.

    >>> scan = _DepthScan()
    >>> scan.feed(b'{"a": [1, {"b": "]]')
    >>> scan.feed(b']"}]}')
    >>> scan.deepest
    3
    """

    def __init__(self) -> None:
        self.depth = self.deepest = 0
        self.in_string = self.escaped = False

    def feed(self, piece: bytes) -> None:
        depth, deepest = self.depth, self.deepest
        in_string, escaped = self.in_string, self.escaped
        for byte in piece:
            if in_string:
                if escaped:
                    escaped = False
                elif byte == 0x5C:      # backslash
                    escaped = True
                elif byte == 0x22:      # closing quote
                    in_string = False
            elif byte == 0x22:
                in_string = True
            elif byte in (0x5B, 0x7B):  # [ {
                depth += 1
                deepest = max(deepest, depth)
            elif byte in (0x5D, 0x7D):  # ] }
                depth -= 1
        self.depth, self.deepest = depth, deepest
        self.in_string, self.escaped = in_string, escaped


def _longest_line(files: list[Path]) -> int:
    """The length in bytes of the longest line in ``files`` (read in pieces)."""
    longest = 0
    for path in files:
        with path.open("rb") as f:
            size = 0
            for _number, _offset, piece, ends in _line_pieces(f):
                size += len(piece) + (1 if ends else 0)
                if ends:
                    longest = max(longest, size)
                    size = 0
    return longest


def repair_utf8(table: pa.Table, label: str,
                repaired: list[dict[str, Any]] | None = None) -> pa.Table:
    """``table`` with text that is not valid UTF-8 repaired (invalid bytes → U+FFFD).

    Parquet does not check UTF-8, and such text would pass into a snapshot that then
    cannot be read back. Each repaired value is noted in ``repaired`` (file, row, column).
    View columns (``string_view``, ``binary_view``: Polars and DuckDB write them) come
    back in their plain types first: most Arrow kernels (``take``) have none for views.
    """
    table = plain_views(table)
    for i, f in enumerate(table.schema):
        kind = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            continue
        column = table.column(i)
        try:
            column.validate(full=True)
            continue
        except pa.ArrowInvalid:
            pass
        chunks, offset = [], 0
        for chunk in column.chunks:
            chunks.append(_repair_chunk(chunk, label, f.name, offset, repaired))
            offset += len(chunk)
        table = table.set_column(i, f, pa.chunked_array(chunks, f.type))
    return table


def _plain(t: pa.DataType) -> pa.DataType:
    """``t`` with every view type (also inside a dictionary) as its plain type."""
    if pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_dictionary(t):
        value = _plain(t.value_type)
        return t if value == t.value_type else pa.dictionary(t.index_type, value)
    return t


def plain_views(table: pa.Table) -> pa.Table:
    """``table`` with its ``string_view``/``binary_view`` columns cast to ``string``/
    ``binary`` (the same values; a table without views is returned as it is)."""
    for i, f in enumerate(table.schema):
        plain = _plain(f.type)
        if plain != f.type:
            table = table.set_column(i, f.with_type(plain), table.column(i).cast(plain))
    return table


def _repair_chunk(chunk: pa.Array, label: str, name: str, offset: int,
                  repaired: list[dict[str, Any]] | None) -> pa.Array:
    if pa.types.is_dictionary(chunk.type):
        dictionary = _repair_values(chunk.dictionary, None)
        if repaired is not None:  # name the rows whose value was repaired
            bad = {j for j, v in enumerate(chunk.dictionary.cast(pa.binary()).to_pylist())
                   if v is not None and not _valid(v)}
            repaired.extend({"file": label, "row": offset + r + 1, "column": name}
                            for r, j in enumerate(chunk.indices.to_pylist()) if j in bad)
        return pa.DictionaryArray.from_arrays(chunk.indices, dictionary)
    rows: list[int] = []
    fixed = _repair_values(chunk, rows)
    if repaired is not None:
        repaired.extend({"file": label, "row": offset + r + 1, "column": name} for r in rows)
    return fixed


def _valid(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _repair_values(arr: pa.Array, bad_rows: list[int] | None) -> pa.Array:
    values = arr.cast(pa.binary() if pa.types.is_string(arr.type) else pa.large_binary())
    out = []
    for r, v in enumerate(values.to_pylist()):
        if v is not None and not _valid(v):
            if bad_rows is not None:
                bad_rows.append(r)
            out.append(v.decode("utf-8", "replace"))
        else:
            out.append(None if v is None else v.decode("utf-8"))
    return pa.array(out, arr.type)


def read_whole_files(path: Path, repaired: list[dict[str, Any]] | None = None) -> list[Piece]:
    """Every column of a row file, or of each row file in a folder, one piece per file."""
    files = [path] if path.is_file() else [f for fs in row_files(path).values() for f in fs]
    out = []
    for f in files:
        fmt = file_format(f)
        if fmt == "json" and not check_json_depth(f):
            continue  # empty or only blank lines: no rows
        _openable(f)
        try:
            try:
                table = open_dataset([f], fmt, None).to_table()
            except pa.ArrowInvalid as exc:
                read = _line_reader(exc) if fmt == "json" else None
                if read is not None:
                    table = read(f, None, None, repaired)
                elif fmt != "json" or "straddl" not in str(exc):
                    raise
                else:  # a line longer than the default block
                    block = _longest_line([f]) + 1024
                    table = open_dataset([f], fmt, None, block_size=block).to_table()
            out.append((str(f), repair_utf8(table, str(f), repaired)))
        except (pa.ArrowInvalid, OSError) as exc:
            raise read_error(f, fmt, exc) from None
    return out or [no_rows(path)]


def _culprit(files: list[Path], fmt: str, exc: BaseException) -> Path | None:
    """The file of a group that failed to read: the first with a line that is no JSON
    object, or that Arrow cannot open alone (a 0-byte Parquet file in a folder was
    reported as the folder, its name only inside Arrow's words); else the file Arrow's
    words name (a key twice in one object of a folder's JSON Lines file)."""
    if fmt == "json":
        bad = next((f for f in files if bad_json_line(f)), None)
        said = str(exc)
        return bad or next((f for f in files if f"'{f}'" in said), None)
    for f in files:
        try:
            ds.dataset(str(f), format=fmt).schema  # noqa: B018 (opening is the check)
        except (pa.ArrowInvalid, OSError, pa.ArrowNotImplementedError):
            return f
    return None


def bad_json_line(path: Path) -> int | None:
    """The 1-based number of the first line of ``path`` that is not a JSON object
    (a byte-order mark starting a line after the first makes it one: Arrow reads only
    the file's own; so does an escaped lone surrogate, which Arrow refuses)."""
    found = _first_bad_line(path)
    return None if found is None else found[0]


def _first_bad_line(path: Path) -> tuple[int, str] | None:
    """:func:`bad_json_line`'s line, and what is wrong with it: ``json`` (no JSON
    object), ``bom`` (a byte-order mark starts it) or ``surrogate``."""
    try:
        with path.open("rb") as f:
            for n, line in enumerate(f, 1):
                bom = line.startswith(codecs.BOM_UTF8)
                if n > 1 and bom:
                    return n, "bom"
                if not line.strip():
                    continue
                try:
                    doc = json.loads(line)
                except (ValueError, RecursionError):
                    return n, "bom" if bom else "json"
                if not isinstance(doc, dict):
                    return n, "bom" if bom else "json"
                if b"\\u" in line and _lone_surrogate(doc):
                    return n, "surrogate"
    except OSError:
        return None
    return None


def _lone_surrogate(doc: object) -> bool:
    """Whether a parsed JSON document holds half of a surrogate pair (``"\\ud800"``):
    Python's json takes one, Arrow's reader refuses the whole file."""
    return not is_text(json.dumps(doc, ensure_ascii=False))


def read_error(path: Path, fmt: str, exc: BaseException) -> SourceError:
    """A read failure, pointing at the line for JSON Lines (Arrow says only "row N")."""
    found = _first_bad_line(path) if fmt == "json" and path.is_file() else None
    line = None if found is None else found[0]
    if found is not None and found[1] == "bom":
        return SourceError("a byte-order mark (BOM) starts this line; only a file's first "
                           "line may have one", path=str(path), line=line,
                           hint="remove the marks (files joined with `cat` keep each one's): "
                                "sed -i 's/^\\xEF\\xBB\\xBF//' FILE")
    if found is not None and found[1] == "surrogate":
        return SourceError("an escaped lone surrogate (\\ud800-\\udfff without its pair) "
                           "on this line is no Unicode text", path=str(path), line=line,
                           hint="write the character it stood for, or \\ufffd, in its place")
    if line is not None:
        return SourceError("not a JSON object on this line", path=str(path), line=line,
                           hint="fix or remove the line; each line of a JSON Lines file "
                                "is one row")
    placed = column_error(path, exc) if fmt == "json" and path.is_file() else None
    if placed is not None:
        return placed
    return SourceError(f"cannot read rows: {first_line(exc)}", path=str(path),
                       hint=_UNREADABLE)
