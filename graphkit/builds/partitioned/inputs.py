"""Read sources piece by piece (one row file at a time) with graphkit's own readers.

Each piece comes back conformed to the contract and tagged with its file and
row, exactly as the in-memory build reads it, plus the
row's input position (``__gk_ord``), counted across pieces in the order the
unpartitioned build reads them. Only one piece is in memory at a time; an
Iceberg cache or a set of transcripts is one piece (their readers need the
whole of it).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphkit.builds.options import BuildOptions
from graphkit.builds.partitioned.plan import ORD
from graphkit.contract.loader import LoadedContract
from graphkit.core.errors import SourceError
from graphkit.core.files import walk_folders
from graphkit.core.schema import FILE_COL, ROW_COL, json_as_text
from graphkit.projection.conform import conform, conform_sources, read_spec
from graphkit.sources.read import (
    Progress,
    SourceRows,
    computed_columns,
    read_sources,
    since_filter,
    source_kind,
)
from graphkit.sources.row_files import fingerprint, row_files

# Rough bytes per row of non-Parquet inputs, to size partitions before reading.
_BYTES_PER_ROW = 400
# Rows per partition when the partition count is not given.
ROWS_PER_PARTITION = 100_000
# Rows per batch read from a Parquet file.
BATCH_ROWS = 65_536
# Arrow types of the rows the partitions receive, by contract input kind.
_TYPES = {"string": pa.string(), "json": pa.string(), "int": pa.int64(),
          "float": pa.float64(), "bool": pa.bool_(), "timestamp": pa.timestamp("us", tz="UTC")}


def rows_schema(contract: LoadedContract) -> pa.Schema:
    """The schema of the rows the partitions receive (what the local shuffle stores)."""
    fields = [pa.field(n, _TYPES[c.type]) for n, c in contract.spec.input.items()]
    return pa.schema([*fields, pa.field(FILE_COL, pa.string()), pa.field(ROW_COL, pa.int64()),
                      pa.field(ORD, pa.int64())])


@dataclass
class ReadAccount:
    """What reading found besides rows: fingerprints, skipped lines, notes."""

    fingerprints: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rows: int = 0
    # Row files in the order the in-memory build lists them in the manifest (each
    # folder as its walk finds them), which is not the order they are read in
    # (format by format): see :meth:`listed_order`.
    listed: list[str] = field(default_factory=list)

    def add(self, r: SourceRows) -> None:
        """Take over what one read found."""
        self.fingerprints.extend(r.fingerprints)
        self.skipped.extend(r.skipped)
        self.notes.extend(r.notes)

    def listed_order(self) -> list[dict[str, Any]]:
        """The fingerprints in the in-memory build's manifest order: row files as
        :func:`graphkit.sources.row_files.row_file_fingerprints` lists them, then the
        transcripts' own, as they came."""
        rank = {p: i for i, p in enumerate(self.listed)}
        return sorted(self.fingerprints, key=lambda f: rank.get(f["path"], len(rank)))


def _files(root: Path, listed: list[str] | None = None) -> list[Path]:
    """The row files of a folder in the order the in-memory build reads them (the
    order it lists them in, into ``listed``). Each is read alone, so files whose
    types do not unify need no check here: the in-memory build reads such a folder
    file by file too, and refuses a file of a type the contract cannot take by name."""
    groups = row_files(root)
    if listed is not None:
        listed.extend(str(f) for fs in groups.values() for f in fs)
    return [f for _fmt, fs in sorted(groups.items()) for f in fs]


def plan_sources(paths: Sequence[Path],
                 listed: list[str] | None = None) -> list[tuple[str, list[Path]]]:
    """``(kind, paths)`` pieces in read order: row files one by one, an Iceberg
    source whole, all transcripts together at the end (as the build reads them).
    ``listed`` receives the row files in the in-memory build's manifest order."""
    pieces: list[tuple[str, list[Path]]] = []
    transcripts: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise SourceError("no such file or folder", path=str(path), hint="check the path")
        kind = source_kind(path)
        if kind in ("claude", "codex"):
            transcripts.append(path)
        elif kind == "rows" and path.is_dir():
            files = _files(path, listed)
            if not files:
                raise SourceError("no row files, transcripts or Iceberg table found here",
                                  path=str(path),
                                  hint="point at Parquet/Feather/JSON Lines files, a Claude "
                                       "Code projects folder, a Codex sessions folder or a "
                                       "HypAware cache")
            pieces.extend(("rows", [f]) for f in files)
        else:
            if kind == "rows" and listed is not None:
                listed.append(str(path))
            pieces.append((kind, [path]))
    if transcripts:
        pieces.append(("transcripts", transcripts))
    if not pieces:
        raise SourceError("no sources given", hint="name at least one file or folder")
    return pieces


def estimate_rows(pieces: list[tuple[str, list[Path]]]) -> int:
    """Rows the sources hold, from Parquet footers (exact) or file sizes (rough)."""
    total = 0
    for _, paths in pieces:
        for p in paths:
            # walk_folders, not rglob: no recursion however deep the folders go.
            files = [p] if p.is_file() else [Path(d, n) for d, _, names in walk_folders(p)
                                             for n in names if Path(d, n).is_file()]
            for f in files:
                if f.suffix.lower() in (".parquet", ".pq"):
                    try:
                        total += pq.ParquetFile(f).metadata.num_rows
                        continue
                    except (OSError, pa.ArrowInvalid):
                        pass
                total += f.stat().st_size // _BYTES_PER_ROW
    return total


def auto_partitions(rows: int) -> int:
    """Enough partitions that each holds about :data:`ROWS_PER_PARTITION` rows."""
    return max(1, math.ceil(rows / ROWS_PER_PARTITION))


def read_pieces(pieces: list[tuple[str, list[Path]]], contract: LoadedContract,
                account: ReadAccount, options: BuildOptions,
                progress: Progress | None = None) -> Iterator[pa.Table]:
    """Each piece's rows, conformed, tagged and numbered by input position (the reading
    ``options``: ``strict``, ``since``/``until``, ``cache_dir``, ``fingerprints``,
    ``include_content``).

    A Parquet row file comes in batches of :data:`BATCH_ROWS` rows (its rows as
    the build reads them, a batch at a time); any other piece whole.
    """
    o = options
    offset = 0
    for kind, paths in pieces:
        if kind == "rows" and paths[0].suffix.lower() in (".parquet", ".pq"):
            if progress:
                progress(f"reading {paths[0]}")
            if o.fingerprints:
                account.fingerprints.append(fingerprint(paths[0]))
            tables: Iterator[pa.Table] = parquet_batches(paths[0], contract, o.include_content)
        else:
            got = read_sources(paths, read_spec(contract, o.include_content), strict=o.strict,
                               since=o.since, cache_dir=o.cache_dir, progress=progress,
                               fingerprints=o.fingerprints)
            account.add(got)
            tables = iter([conform_sources(contract, got, since=o.since, until=o.until)])
        for table in tables:
            n = table.num_rows
            table = table.append_column(ORD, pa.array(np.arange(offset, offset + n,
                                                                dtype=np.int64)))
            offset += n
            table = since_filter(table, o.since, o.until)
            account.rows += table.num_rows
            yield spill_form(table)


def parquet_batches(path: Path, contract: LoadedContract,
                    include_content: bool) -> Iterator[pa.Table]:
    """A Parquet row file's rows in batches, read as ``read_sources`` reads the
    file: the contract's columns (text dictionary-encoded), conformed, tagged
    with the file and the 1-based row."""
    label = str(path)
    try:
        schema = pq.read_schema(str(path))
        spec = read_spec(contract, include_content)
        # Only flat columns read dictionary-encoded (a JSON column stored as a struct
        # or map has no dictionary of its own: pyarrow refuses its name).
        flat = {f.name for f in schema if not pa.types.is_nested(f.type)}
        f = pq.ParquetFile(str(path), read_dictionary=[c for c in spec.dictionary_columns()
                                                       if c in flat])
        wanted = spec.wanted()
        cols = [c for c in f.schema_arrow.names if c in wanted]
        first = 1
        for batch in f.iter_batches(batch_size=BATCH_ROWS, columns=cols):
            # Columns the sources compute (touched_files) as read_sources does.
            raw = computed_columns(pa.Table.from_batches([batch]), spec)
            table = conform(contract, raw, label)
            n = table.num_rows
            files = pa.DictionaryArray.from_arrays(pa.repeat(pa.scalar(0, pa.int32()), n),
                                                   pa.array([label]))
            table = table.append_column(FILE_COL, files).append_column(
                ROW_COL, pa.array(np.arange(first, first + n, dtype=np.int64)))
            first += n
            yield table
    except (pa.ArrowInvalid, OSError, pa.ArrowNotImplementedError) as exc:
        text = str(exc).strip()
        raise SourceError(f"cannot read rows: {text.splitlines()[0] if text else exc!r}",
                          path=label,
                          hint="check that the file is complete and in a supported "
                               "format (Parquet, Arrow IPC/Feather, JSON Lines)") from None


def plain(table: pa.Table) -> pa.Table:
    """``table`` with text in plain string columns and JSON structs as text."""
    cols = []
    for f, col in zip(table.schema, table.columns, strict=True):
        if pa.types.is_dictionary(f.type):
            col = col.cast(f.type.value_type)
        elif pa.types.is_struct(f.type) or pa.types.is_list(f.type):
            col = json_as_text(col.combine_chunks())
        cols.append(col)
    return pa.Table.from_arrays(cols, names=table.column_names)


def spill_form(table: pa.Table) -> pa.Table:
    """``table`` in the one schema every piece is shuffled in: text as plain
    strings (a partition gets rows of many pieces, each with its own
    dictionaries), JSON structs as text."""
    return plain(table)


def partition_of(col: pa.ChunkedArray | pa.Array, partitions: int) -> np.ndarray:
    """The partition of each row: CRC-32 of its key text modulo ``partitions``
    (the same on every machine and run); null keys go to partition 0."""
    if partitions == 1:
        return np.zeros(len(col), dtype=np.int64)
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if not pa.types.is_dictionary(arr.type):
        arr = arr.cast(pa.string()).dictionary_encode()
    hashes = np.array([zlib.crc32(v.encode()) % partitions if v is not None else 0
                       for v in arr.dictionary.cast(pa.string()).to_pylist()], dtype=np.int64)
    idx = pc.fill_null(arr.indices, 0).to_numpy(zero_copy_only=False)
    out = hashes[idx] if len(hashes) else np.zeros(len(arr), dtype=np.int64)
    if arr.null_count:
        out[~pc.is_valid(arr).to_numpy(zero_copy_only=False)] = 0
    return out
