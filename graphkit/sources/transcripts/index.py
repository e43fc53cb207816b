"""The incremental transcript index (``cache_dir``).

``transcripts-cache.json.gz`` names the cache's segments. Each segment is one compressed
Arrow IPC file of pre-rows (``transcripts-rows-<token>.arrow``; a Parquet file per
transcript cost more in per-file overhead than the rows themselves, on disk and in time)
and one gzip'd JSON file of entries (``transcripts-entries-<token>.json.gz``) mapping input
files to their size, mtime, inode, sha256, kind, facts, skipped lines and the segment and
range of their pre-rows; a later segment's entry replaces an earlier one's. A build that
parsed a few files writes one small segment of those files (rewriting every file's rows
and facts cost more than the parse); the segments are written again as one when too many
of their rows are no file's any more. A file whose size, mtime and inode are unchanged
is not even opened; a file whose bytes hash the same is not parsed again. Cross-file
linking always runs over all files, so the result equals a full read. Nothing is ever
written into the transcript folders (:func:`check_cache_dir`). A damaged, foreign or
outdated cache is ignored and rewritten.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import secrets
import tempfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from graphkit.core.errors import SourceError
from graphkit.core.files import clean_leftovers, writer_prefix
from graphkit.sources.transcripts.buffer import PRE_SCHEMA, FileParse
from graphkit.sources.transcripts.version import PARSER_VERSION

INDEX_NAME = "transcripts-cache.json.gz"
_LEGACY_INDEX = "transcripts-index.json"  # PARSER_VERSION <= 5: a Parquet file per transcript
FILE_COLUMN = "_file"
_FORMAT = 2  # 2: segments (one Arrow rows file and one entries file each)
_ENTRIES = "transcripts-entries-"
# An append writes a new segment of the files read again; all segments are rewritten
# as one when there would be more than this many, or when they would hold more than
# this many times the rows the files still use (appended-to and deleted files' old rows).
_MAX_SEGMENTS = 16
_MAX_HELD = 1.25
_PLAIN = frozenset({"content_text", "tool_args"})  # mostly distinct: dictionaries cost more
CACHE_SCHEMA = PRE_SCHEMA.append(pa.field(FILE_COLUMN, pa.int32()))


def stat_key(stat: os.stat_result) -> list[int]:
    """What says a file is unchanged without reading it: size, mtime (ns), inode (a file
    replaced by another of the same size and mtime has a new inode) and ctime (ns: one
    rewritten in place with its size and mtime put back keeps its inode, not its ctime)."""
    return [stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns]


class TranscriptIndex:
    """The incremental index: ``cache_dir/transcripts-cache.json.gz`` naming its segments,
    each one Arrow file of pre-rows and one gzip'd JSON file of entries (see the module doc).
    """

    def __init__(self, cache_dir: Path) -> None:
        self.dir = cache_dir
        self.entries: dict[str, dict[str, Any]] = {}
        self.rows: pa.Table | None = None
        self.new_entries: dict[str, dict[str, Any]] = {}
        self.segments: list[dict[str, Any]] = []  # {"rows", "entries", "num_rows"}
        self._offsets: list[int] = []  # where each segment's rows start in :attr:`rows`
        self._loaded: dict[str, tuple[int, int, int]] = {}  # key -> (segment, start, count)
        self._stored: dict[str, dict[str, Any]] = {}  # entries as on disk
        try:
            doc = json.loads(gzip.decompress((cache_dir / INDEX_NAME).read_bytes()))
            if doc.get("parser") != PARSER_VERSION or doc.get("format") != _FORMAT:
                return
            segments: list[dict[str, Any]] = [
                {"rows": _own_name(g["rows"]), "entries": _own_name(g["entries"]),
                 "num_rows": int(g["num_rows"])} for g in doc["segments"]]
            entries: dict[str, dict[str, Any]] = {}
            for i, seg in enumerate(segments):  # later segments hold newer entries
                part = json.loads(gzip.decompress((cache_dir / seg["entries"]).read_bytes()))
                for key, entry in part.items():
                    if not isinstance(entry, dict) or int(entry["seg"]) > i:
                        raise ValueError(key)
                    entries[key] = entry
            self.segments, self.entries, self._stored = segments, entries, dict(entries)
        except (OSError, ValueError, AttributeError, KeyError, TypeError, EOFError,
                zlib.error):
            self.entries = {}  # no index yet, or an unreadable one: rebuild it

    def _rows(self) -> pa.Table | None:
        """The previous builds' pre-rows, all segments, read on first use (None if
        unusable)."""
        if self.rows is None and self.entries and self.segments:
            try:
                tables, offsets, at = [], [], 0
                for seg in self.segments:
                    with pa.OSFile(str(self.dir / seg["rows"])) as fh:
                        table = pa.ipc.open_file(fh).read_all()
                    if table.schema.names != CACHE_SCHEMA.names:
                        raise ValueError("schema")
                    table = table.cast(CACHE_SCHEMA)  # text was written dictionary-encoded
                    if not table.schema.equals(CACHE_SCHEMA) or \
                            table.num_rows != seg["num_rows"]:
                        raise ValueError("schema")
                    tables.append(table)
                    offsets.append(at)
                    at += table.num_rows
                self.rows, self._offsets = pa.concat_tables(tables), offsets
            except (OSError, ValueError, pa.ArrowException):
                self.entries = {}  # the rows are gone or damaged: parse everything again
        return self.rows

    def entry(self, key: str) -> dict[str, Any] | None:
        entry = self.entries.get(key)
        return entry if isinstance(entry, dict) else None

    def load(self, key: str) -> tuple[FileParse, list[tuple[int, str]], int, int] | None:
        """A file's cached parse (facts and skipped lines; its rows stay in :attr:`rows`),
        the lines left out at conversion, and where its rows are in :attr:`rows`."""
        entry = self.entry(key)
        rows = self._rows() if entry is not None else None
        if entry is None or rows is None or not self.entries:
            return None
        try:
            seg, start, count = int(entry["seg"]), int(entry["start"]), int(entry["count"])
            if not 0 <= seg < len(self.segments) or start < 0 or count < 0 \
                    or start + count > self.segments[seg]["num_rows"]:
                return None
            skipped = [(int(n), str(r)) for n, r in entry.get("skipped", [])]
            bad = [(int(n), str(r)) for n, r in entry.get("bad", [])]
            parse = FileParse(str(entry["kind"]), [], dict(entry.get("facts", {})), skipped)
        except (KeyError, TypeError, ValueError):
            return None
        self._loaded[key] = (seg, start, count)
        return parse, bad, self._offsets[seg] + start, count

    def remember(self, key: str, stat: list[int], sha256: str, parse: FileParse) -> None:
        """Record a file read this time (its rows are located in :meth:`save`)."""
        self.new_entries[key] = {
            "stat": stat, "sha256": sha256, "kind": parse.kind, "facts": parse.facts,
            "skipped": [list(s) for s in parse.skipped],
        }

    def save(self, tables: Sequence[pa.Table], order: dict[str, list[str]],
             bad: dict[str, list[tuple[int, str]]]) -> None:
        """Write the pre-rows of the files not taken from the cache as a new segment (all
        files' rows as one, when old segments hold too many rows no file uses any more),
        and the index. ``tables``: the combined pre-rows of each kind (with ``_file``, files
        in order); ``order``: the files of each kind in order."""
        located, fresh = self._locate(tables, order, bad)
        live = sum(e["count"] for e in located.values())
        held = sum(g["num_rows"] for g in self.segments) + sum(n for _t, _s, n in fresh)
        if (not self._loaded or len(self.segments) >= _MAX_SEGMENTS
                or held > live * _MAX_HELD):
            self._write_all(tables, order, located)
            return
        n = len(self.segments)
        parts, at, written = [], 0, {}
        for t, start, count in fresh:
            parts.append(tables[t].slice(start, count))
        for key, entry in located.items():
            if entry.get("seg") is None:  # rows in the new segment, in the order of fresh
                entry["seg"], entry["start"] = n, at
                at += entry["count"]
            if entry != self._stored.get(key):
                written[key] = entry
        if written:  # else the cache holds this build as it is
            self._write_segment(parts, written, self.segments)

    def _locate(self, tables: Sequence[pa.Table], order: dict[str, list[str]],
                bad: dict[str, list[tuple[int, str]]]
                ) -> tuple[dict[str, dict[str, Any]], list[tuple[int, int, int]]]:
        """Every file's entry, those whose rows came from the cache pointing where they
        are; and the (table, start, count) of the rows of the others."""
        located: dict[str, dict[str, Any]] = {}
        fresh: list[tuple[int, int, int]] = []
        for t, (table, (_kind, paths)) in enumerate(zip(tables, order.items(), strict=True)):
            files = table.column(FILE_COLUMN).to_numpy() if table.num_rows else np.array([])
            starts = np.searchsorted(files, np.arange(len(paths) + 1), side="left")
            for i, key in enumerate(paths):
                entry = self.new_entries[key]
                count = int(starts[i + 1] - starts[i])
                entry["count"] = count
                entry["bad"] = [list(b) for b in bad.get(key, [])]
                where = self._loaded.get(key)
                if where is not None and where[2] == count:
                    entry["seg"], entry["start"] = where[0], where[1]
                else:
                    entry["seg"] = None
                    fresh.append((t, int(starts[i]), count))
                located[key] = entry
        return located, fresh

    def _write_all(self, tables: Sequence[pa.Table], order: dict[str, list[str]],
                   located: dict[str, dict[str, Any]]) -> None:
        offset = 0
        for table, (_kind, paths) in zip(tables, order.items(), strict=True):
            files = table.column(FILE_COLUMN).to_numpy() if table.num_rows else np.array([])
            starts = np.searchsorted(files, np.arange(len(paths) + 1), side="left")
            for i, key in enumerate(paths):
                located[key]["seg"], located[key]["start"] = 0, offset + int(starts[i])
            offset += table.num_rows
        self._write_segment(list(tables), located, [])

    def _write_segment(self, parts: list[pa.Table], entries: dict[str, dict[str, Any]],
                       before: list[dict[str, Any]]) -> None:
        """Write one segment after ``before`` (the segments kept), then the index naming
        them all; files no segment names any more are removed."""
        parts = [p.cast(CACHE_SCHEMA) if p.schema != CACHE_SCHEMA else p for p in parts]
        token = secrets.token_hex(8)
        rows_name, entries_name = f"transcripts-rows-{token}.arrow", f"{_ENTRIES}{token}.json.gz"
        rows = _encoded(pa.concat_tables(parts) if parts else CACHE_SCHEMA.empty_table())
        options = pa.ipc.IpcWriteOptions(compression="zstd")

        def write(fh: Any) -> None:
            with pa.ipc.new_file(fh, rows.schema, options=options) as w:
                w.write_table(rows, max_chunksize=max(1, rows.num_rows))

        atomic_write(self.dir / rows_name, write)
        _write_json(self.dir / entries_name, entries)
        segments = [*before, {"rows": rows_name, "entries": entries_name,
                              "num_rows": rows.num_rows}]
        _write_json(self.dir / INDEX_NAME, {"parser": PARSER_VERSION, "format": _FORMAT,
                                            "segments": segments})
        self._remove_stale(keep={n for g in segments for n in (g["rows"], g["entries"])})

    def _remove_stale(self, keep: set[str]) -> None:
        """Segments no longer named, and the per-file Parquet cache of graphkit before
        version 6."""
        for pattern in ("transcripts-rows-*.arrow", f"{_ENTRIES}*.json.gz"):
            for old in self.dir.glob(pattern):
                if old.name not in keep:
                    old.unlink(missing_ok=True)
        legacy = self.dir / "rows"
        if (self.dir / _LEGACY_INDEX).is_file():
            for old in legacy.glob("*-*.parquet"):
                old.unlink(missing_ok=True)
            (self.dir / _LEGACY_INDEX).unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # not empty: not only ours
                legacy.rmdir()


def _own_name(name: Any) -> str:
    """A file name the index wrote: no folder part, no dot file (a foreign index must not
    point graphkit at other files)."""
    name = str(name)
    if "/" in name or "\\" in name or name.startswith(".") or not name.startswith("transcripts-"):
        raise ValueError(name)
    return name


def _write_json(target: Path, doc: Any) -> None:
    payload = gzip.compress(json.dumps(doc, sort_keys=True).encode("utf-8"), 6, mtime=0)
    atomic_write(target, lambda fh: fh.write(payload))


def _encoded(rows: pa.Table) -> pa.Table:
    """Text columns other than content dictionary-encoded, one chunk: ids, paths and
    versions repeat row after row, and zstd alone left the cache at ~20% of the
    transcripts' bytes (dictionary-encoded: ~16%)."""
    rows = rows.combine_chunks()
    columns = [c.combine_chunks().dictionary_encode()
               if pa.types.is_string(c.type) and name not in _PLAIN else c
               for name, c in zip(rows.column_names, rows.columns, strict=True)]
    return pa.Table.from_arrays(columns, names=rows.column_names)


def atomic_write(target: Path, write: Any) -> None:
    """Write via a temp file in the same folder and ``os.replace``: readers never see half."""
    target.parent.mkdir(parents=True, exist_ok=True)
    # Named for this process: a killed build's half-written cache file is deleted by the
    # next write of that file (it was left for ever, up to the size of the rows cache).
    clean_leftovers(target)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=writer_prefix(target), suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename is None:  # a write's error names no file: name the cache's
            raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from None
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_cache_dir(cache_dir: Path, paths: Sequence[Path]) -> None:
    cache = cache_dir.expanduser().resolve()
    for given in paths:
        root = Path(given).expanduser().resolve()
        folder = root if root.is_dir() else root.parent
        if cache == folder or folder in cache.parents:
            raise SourceError("the cache folder is inside a transcript folder",
                              path=str(cache_dir),
                              hint=f"choose a cache folder outside {folder}; graphkit never "
                                   "writes into transcript folders")
