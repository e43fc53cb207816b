"""The incremental transcript index (``cache_dir``).

One JSON file maps each input file to its size, mtime, sha256, its facts and a Parquet
file of the pre-rows it produced. A file whose size and mtime are unchanged is not even
opened; a file whose bytes hash the same is not parsed again. Cross-file linking always
runs over all files, so the result equals a full read. Nothing is ever written into the
transcript folders (:func:`check_cache_dir`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from graphkit.core.errors import SourceError
from graphkit.sources.transcripts.buffer import PRE_SCHEMA, FileParse

# Bump when parsing changes what a file yields: older cache entries are then ignored.
PARSER_VERSION = 5  # 4: usage and continuation facts; 5: deep JSON lines are skipped lines
INDEX_NAME = "transcripts-index.json"


class TranscriptIndex:
    """The incremental index: ``cache_dir/transcripts-index.json`` plus one Parquet per file."""

    def __init__(self, cache_dir: Path) -> None:
        self.dir = cache_dir
        self.rows_dir = cache_dir / "rows"
        self.entries: dict[str, dict[str, Any]] = {}
        try:
            doc = json.loads((cache_dir / INDEX_NAME).read_text(encoding="utf-8"))
            if doc.get("parser") == PARSER_VERSION and isinstance(doc.get("entries"), dict):
                self.entries = doc["entries"]
        except (OSError, ValueError, AttributeError):
            self.entries = {}  # no index yet, or an unreadable one: rebuild it

    def load(self, key: str) -> FileParse | None:
        entry = self.entries.get(key)
        if entry is None:
            return None
        try:
            # Single-threaded: these files are small, and thread start-up dominates.
            table = pq.ParquetFile(self.rows_dir / entry["rows"]).read(use_threads=False)
        except (OSError, KeyError, pa.ArrowException):
            return None
        if not table.schema.equals(PRE_SCHEMA):
            return None
        skipped = [(int(n), str(r)) for n, r in entry.get("skipped", [])]
        return FileParse(entry["kind"], [], entry.get("facts", {}), skipped, table=table)

    def store(self, key: str, fingerprint: dict[str, Any], parse: FileParse) -> None:
        self.rows_dir.mkdir(parents=True, exist_ok=True)
        name = (hashlib.sha256(key.encode()).hexdigest()[:16] + "-"
                + fingerprint["sha256"][:16] + ".parquet")
        atomic_write(self.rows_dir / name,
                      lambda fh: pq.write_table(parse.to_table(), fh, write_statistics=False))
        old = self.entries.get(key, {}).get("rows")
        if old and old != name:
            (self.rows_dir / old).unlink(missing_ok=True)
        self.entries[key] = {
            "size": fingerprint["size"], "mtime_ns": fingerprint["mtime_ns"],
            "sha256": fingerprint["sha256"], "kind": parse.kind, "rows": name,
            "facts": parse.facts, "skipped": [list(s) for s in parse.skipped],
        }

    def touch(self, key: str, fingerprint: dict[str, Any]) -> None:
        self.entries[key].update(size=fingerprint["size"], mtime_ns=fingerprint["mtime_ns"])

    def save(self) -> None:
        for key in [k for k in self.entries if not os.path.exists(k)]:
            rows = self.entries.pop(key).get("rows")
            if rows:
                (self.rows_dir / rows).unlink(missing_ok=True)
        doc = {"parser": PARSER_VERSION, "entries": self.entries}
        payload = json.dumps(doc, sort_keys=True).encode("utf-8")
        atomic_write(self.dir / INDEX_NAME, lambda fh: fh.write(payload))


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
