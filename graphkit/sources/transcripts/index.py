"""The incremental transcript index (``cache_dir``).

Two files: ``transcripts-cache.json.gz`` maps each input file to its size, mtime, inode,
sha256, kind, facts, skipped lines and the range of its pre-rows in ``transcripts-rows-<token>
.arrow``, ONE compressed Arrow IPC file holding the pre-rows of every file (a Parquet file
per transcript cost more in per-file overhead than the rows themselves, on disk and in
time). A file whose size, mtime and inode are unchanged is not even opened; a file whose
bytes hash the same is not parsed again. Cross-file linking always runs over all files, so
the result equals a full read. Nothing is ever written into the transcript folders
(:func:`check_cache_dir`). A damaged, foreign or outdated cache is ignored and rewritten.
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
from graphkit.sources.transcripts.buffer import PRE_SCHEMA, FileParse
from graphkit.sources.transcripts.version import PARSER_VERSION

INDEX_NAME = "transcripts-cache.json.gz"
_LEGACY_INDEX = "transcripts-index.json"  # PARSER_VERSION <= 5: a Parquet file per transcript
FILE_COLUMN = "_file"
_PLAIN = frozenset({"content_text", "tool_args"})  # mostly distinct: dictionaries cost more
CACHE_SCHEMA = PRE_SCHEMA.append(pa.field(FILE_COLUMN, pa.int32()))


def stat_key(stat: os.stat_result) -> list[int]:
    """What says a file is unchanged without reading it: size, mtime (ns) and inode (a file
    replaced by another of the same size and mtime has a new inode)."""
    return [stat.st_size, stat.st_mtime_ns, stat.st_ino]


class TranscriptIndex:
    """The incremental index: ``cache_dir/transcripts-cache.json.gz`` plus one Arrow file."""

    def __init__(self, cache_dir: Path) -> None:
        self.dir = cache_dir
        self.entries: dict[str, dict[str, Any]] = {}
        self.rows: pa.Table | None = None
        self.rows_name: str | None = None
        self.new_entries: dict[str, dict[str, Any]] = {}
        try:
            doc = json.loads(gzip.decompress((cache_dir / INDEX_NAME).read_bytes()))
            if doc.get("parser") == PARSER_VERSION and isinstance(doc.get("entries"), dict):
                self.rows_name = str(doc["rows"])
                self.entries = doc["entries"]
        except (OSError, ValueError, AttributeError, KeyError, TypeError, EOFError,
                zlib.error):
            self.entries = {}  # no index yet, or an unreadable one: rebuild it

    def _rows(self) -> pa.Table | None:
        """The previous build's pre-rows, read on first use (None if unusable)."""
        if self.rows is None and self.entries and self.rows_name:
            try:
                if "/" in self.rows_name or self.rows_name.startswith("."):
                    raise ValueError(self.rows_name)
                with pa.OSFile(str(self.dir / self.rows_name)) as fh:
                    table = pa.ipc.open_file(fh).read_all()
                if table.schema.names != CACHE_SCHEMA.names:
                    raise ValueError("schema")
                table = table.cast(CACHE_SCHEMA)  # text was written dictionary-encoded
                if not table.schema.equals(CACHE_SCHEMA):
                    raise ValueError("schema")
                self.rows = table
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
        if entry is None or rows is None:
            return None
        try:
            start, count = int(entry["start"]), int(entry["count"])
            if start < 0 or count < 0 or start + count > rows.num_rows:
                return None
            skipped = [(int(n), str(r)) for n, r in entry.get("skipped", [])]
            bad = [(int(n), str(r)) for n, r in entry.get("bad", [])]
            parse = FileParse(str(entry["kind"]), [], dict(entry.get("facts", {})), skipped)
        except (KeyError, TypeError, ValueError):
            return None
        return parse, bad, start, count

    def remember(self, key: str, stat: list[int], sha256: str, parse: FileParse) -> None:
        """Record a file read this time (its rows are located in :meth:`save`)."""
        self.new_entries[key] = {
            "stat": stat, "sha256": sha256, "kind": parse.kind, "facts": parse.facts,
            "skipped": [list(s) for s in parse.skipped],
        }

    def save(self, tables: Sequence[pa.Table], order: dict[str, list[str]],
             bad: dict[str, list[tuple[int, str]]]) -> None:
        """Write all files' pre-rows and the index. ``tables``: the combined pre-rows of each
        kind (with ``_file``, files in order); ``order``: the files of each kind in order."""
        entries: dict[str, dict[str, Any]] = {}
        offset = 0
        parts = []
        for table, (_kind, paths) in zip(tables, order.items(), strict=True):
            files = table.column(FILE_COLUMN).to_numpy() if table.num_rows else np.array([])
            starts = np.searchsorted(files, np.arange(len(paths) + 1), side="left")
            for i, key in enumerate(paths):
                entry = self.new_entries[key]
                entry["start"] = offset + int(starts[i])
                entry["count"] = int(starts[i + 1] - starts[i])
                entry["bad"] = [list(b) for b in bad.get(key, [])]
                entries[key] = entry
            offset += table.num_rows
            parts.append(table.cast(CACHE_SCHEMA) if table.schema != CACHE_SCHEMA else table)
        name = f"transcripts-rows-{secrets.token_hex(8)}.arrow"
        rows = _encoded(pa.concat_tables(parts) if parts else CACHE_SCHEMA.empty_table())
        options = pa.ipc.IpcWriteOptions(compression="zstd")

        def write(fh: Any) -> None:
            with pa.ipc.new_file(fh, rows.schema, options=options) as w:
                w.write_table(rows, max_chunksize=max(1, rows.num_rows))

        atomic_write(self.dir / name, write)
        doc = {"parser": PARSER_VERSION, "rows": name, "entries": entries}
        payload = gzip.compress(json.dumps(doc, sort_keys=True).encode("utf-8"), 6, mtime=0)
        atomic_write(self.dir / INDEX_NAME, lambda fh: fh.write(payload))
        self._remove_stale(keep=name)

    def _remove_stale(self, keep: str) -> None:
        """Older rows files, and the per-file Parquet cache of graphkit before version 6."""
        for old in self.dir.glob("transcripts-rows-*.arrow"):
            if old.name != keep:
                old.unlink(missing_ok=True)
        legacy = self.dir / "rows"
        if (self.dir / _LEGACY_INDEX).is_file():
            for old in legacy.glob("*-*.parquet"):
                old.unlink(missing_ok=True)
            (self.dir / _LEGACY_INDEX).unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # not empty: not only ours
                legacy.rmdir()


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
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, target)
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
