"""Read a HypAware ``ai_gateway_messages`` cache (Iceberg tables) or a Parquet export of it.

The scan is planned from the table metadata, never by globbing ``data/``: compaction and
rewrites leave files there that the current snapshot no longer references. The path goes
``metadata/version-hint.text`` → ``vN.metadata.json`` → current snapshot → manifest list
(Avro) → manifests (Avro) → live data files.

Avro is read with pyiceberg's own manifest reader (``read_manifest_list`` and
``ManifestFile.fetch_manifest_entry``, the ``iceberg`` extra). pyiceberg's table layer is not
used: 0.12 refuses the ``variant`` type of HypAware's JSON columns, while the manifest
reader never looks at the table schema.

Metadata records absolute locations of the writer's machine (``file:///home/dev/...``); a
location that does not exist here is resolved relative to the table folder, by stripping
the table's recorded ``location``. Variant columns are decoded to JSON text
(:mod:`graphkit.sources.variant`) so rows match ``MESSAGES_SCHEMA``. Columns are matched by
name (HypAware never renames columns; Iceberg field-id mapping is not implemented).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from graphkit.core.errors import SourceError, first_line
from graphkit.core.files import walk_folders
from graphkit.core.schema import JSON_COLUMNS, MESSAGES_SCHEMA
from graphkit.sources.row_files import repair_utf8
from graphkit.sources.variant import VariantError, decode_variant_struct, is_variant_struct

_MAX_DEPTH = 6  # cache/ → datasets/<name>/source=<x>/table is 4 levels down


def _is_table_dir(path: Path) -> bool:
    meta = path / "metadata"
    if not meta.is_dir():
        return False
    # metadata/ beside data/ is a table even when its metadata is gone: reading it then
    # fails naming the folder, where skipping it would lose its rows without a word.
    return (meta / "version-hint.text").is_file() or (path / "data").is_dir() or any(
        n.endswith(".metadata.json") for n in os.listdir(meta))


def _table_dirs(path: Path) -> list[Path]:
    """Return the Iceberg table folders at or below ``path`` (sorted), never inside one."""
    if path.is_file():
        if path.name.endswith(".metadata.json") and path.parent.name == "metadata":
            return [path.parent.parent]
        return []
    if path.name in ("metadata", "data") and _is_table_dir(path.parent):
        return [path.parent]  # data/ may hold files compaction left behind: plan from metadata
    found = []
    base_depth = len(path.parts)
    for dirpath, dirnames, _ in walk_folders(path):
        here = Path(dirpath)
        # No metadata/ below: not a table, and no stat needed to say so (a transcript
        # history has thousands of folders, and every build asks).
        if "metadata" in dirnames and _is_table_dir(here):
            found.append(here)
            dirnames[:] = []
            continue
        if len(here.parts) - base_depth >= _MAX_DEPTH:
            dirnames[:] = []
        dirnames.sort()
    return sorted(found)


def _parquet_exports(path: Path) -> list[Path]:
    """Return Parquet files at ``path`` whose schema holds a variant column (HypAware export)."""
    if path.is_file():
        files = [path] if path.suffix in (".parquet", ".pq") else []
    elif path.is_dir():
        # As rglob("*") would list them (folders too, symlinked folders not entered), but
        # without a Path per file of a large folder of other files.
        files = sorted(Path(d, n) for d, dirs, names in walk_folders(path)
                       for n in (*dirs, *names)
                       if n.endswith((".parquet", ".pq")) and Path(n).suffix in (".parquet", ".pq"))
    else:
        files = []
    if not files:
        return []
    try:
        schema = pq.read_schema(files[0])
    except (OSError, pa.ArrowException):
        return []
    if any(is_variant_struct(f.type) for f in schema):
        return files
    return []


def is_iceberg_source(path: Path) -> bool:
    """Return True for a HypAware cache (Iceberg tables) or a Parquet export with variant columns.

    Accepts the ``cache/`` folder or any folder below it down to one table folder, the
    table's ``metadata`` folder or a ``vN.metadata.json`` file. Plain Parquet files answer
    True only when they hold variant columns, which need this reader to become JSON text.
    """
    path = Path(path).expanduser()
    return bool(_table_dirs(path)) or bool(_parquet_exports(path))


def _local(uri: str) -> str:
    if uri.startswith("file://"):
        return uri[len("file://"):]
    if uri.startswith("file:"):
        return uri[len("file:"):]
    return uri


def _mapper(table_dir: Path, location: str | None, metadata_file: Path) -> Any:
    """Return a function mapping a recorded location to a readable local path."""
    base = location.rstrip("/") if location else None

    def resolve(uri: str) -> str:
        local = _local(uri)
        if os.path.exists(local):
            return local
        if base and uri.startswith(base + "/"):
            candidate = table_dir / uri[len(base) + 1:]
        else:
            # No shared prefix: fall back to the part from the table's own data/ or metadata/.
            marks = [uri.rfind("/data/"), uri.rfind("/metadata/")]
            at = max(marks)
            candidate = table_dir / uri[at + 1:] if at >= 0 else Path(local)
        if candidate.exists():
            return str(candidate)
        raise SourceError(f"file {uri!r} named by the table metadata is missing",
                          path=str(metadata_file),
                          hint=f"copy the whole table folder; looked for it at {candidate}")

    return resolve


def _current_metadata(table_dir: Path) -> Path:
    meta = table_dir / "metadata"
    hint = meta / "version-hint.text"
    if hint.is_file():
        text = hint.read_text(encoding="utf-8").strip()
        for name in (f"v{text}.metadata.json", text, f"{text}.metadata.json"):
            # The hint names a file in metadata/; anything else (a path, a name too long
            # for the file system) is no hint, and the newest version is read instead.
            try:
                if name and "/" not in name and (meta / name).is_file():
                    return meta / name
            except OSError:
                continue
    candidates = [n for n in os.listdir(meta) if n.endswith(".metadata.json")]

    def version(name: str) -> int:
        digits = name.lstrip("v").split("-", 1)[0].split(".", 1)[0]
        return int(digits) if digits.isdigit() else -1

    if not candidates:
        raise SourceError("no table metadata (*.metadata.json) found", path=str(meta),
                          hint="point at a HypAware cache folder or an Iceberg table folder")
    return meta / max(candidates, key=version)


def _data_files(table_dir: Path) -> list[str]:
    """Return the live data files of the table's current snapshot, as local paths."""
    metadata_file = _current_metadata(table_dir)
    try:
        metadata = json.loads(metadata_file.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise SourceError(f"cannot read table metadata: {first_line(exc)}",
                          path=str(metadata_file),
                          hint="the cache may be mid-write; retry, or recreate the cache") from None
    if not isinstance(metadata, dict) or not isinstance(metadata.get("snapshots", []), list):
        raise SourceError("table metadata is not an Iceberg metadata object",
                          path=str(metadata_file), hint="the table metadata is damaged")
    snap_id = metadata.get("current-snapshot-id")
    if snap_id in (None, -1):
        return []  # a table created but never written to
    snapshot = next((s for s in metadata.get("snapshots", [])
                     if isinstance(s, dict) and s.get("snapshot-id") == snap_id), None)
    if snapshot is None:
        raise SourceError(f"current snapshot {snap_id} is not listed in 'snapshots'",
                          path=str(metadata_file), hint="the table metadata is damaged")
    resolve = _mapper(table_dir, metadata.get("location"), metadata_file)
    try:
        import pyiceberg.manifest  # noqa: F401  (what _live_files reads with)
        from pyiceberg.io.pyarrow import PyArrowFileIO
    except ImportError as exc:
        raise SourceError("reading Iceberg manifests needs pyiceberg", path=str(table_dir),
                          hint="pyiceberg is a graphkit dependency: reinstall graphkit "
                               "(pip install graphkit)") from exc

    class _MappedIO(PyArrowFileIO):
        def new_input(self, location: str) -> Any:
            return super().new_input(resolve(location))

    try:
        return _live_files(_MappedIO(), snapshot, snap_id, resolve, metadata_file)
    except (EOFError, ValueError, OSError, IndexError, KeyError, AttributeError) as exc:
        # A truncated or damaged Avro manifest: pyiceberg's decoder fails in many ways.
        raise SourceError(f"cannot read the table's manifests: {first_line(exc)}",
                          path=str(metadata_file),
                          hint="the cache may be mid-write or damaged; retry, or recreate "
                               "the cache") from None


def _live_files(io: Any, snapshot: dict[str, Any], snap_id: Any, resolve: Any,
                metadata_file: Path) -> list[str]:
    """The live data files the manifests of ``snapshot`` list, as local paths."""
    from pyiceberg.manifest import (
        DataFileContent,
        FileFormat,
        ManifestContent,
        ManifestFile,
        read_manifest_list,
    )

    if "manifest-list" in snapshot:
        manifests: list[Any] = list(read_manifest_list(io.new_input(snapshot["manifest-list"])))
    else:  # format v1 may list manifests inline
        manifests = [ManifestFile.from_args(manifest_path=p, manifest_length=0,
                                            partition_spec_id=0, content=ManifestContent.DATA,
                                            sequence_number=0, min_sequence_number=0,
                                            added_snapshot_id=snap_id)
                     for p in snapshot.get("manifests", [])]
    files = []
    for manifest in manifests:
        for entry in manifest.fetch_manifest_entry(io, discard_deleted=True):
            data_file = entry.data_file
            if (manifest.content != ManifestContent.DATA
                    or data_file.content != DataFileContent.DATA):
                raise SourceError("the table has delete files, which graphkit cannot apply",
                                  path=str(metadata_file),
                                  hint="compact the cache (rewrite without deletes) first")
            if data_file.file_format != FileFormat.PARQUET:
                raise SourceError(f"data file format {data_file.file_format} is not Parquet",
                                  path=str(metadata_file), hint="only Parquet data is read")
            files.append(resolve(data_file.file_path))
    return files


def _conform(table: pa.Table, source: str, columns: Sequence[str] | None) -> pa.Table:
    """Decode variant columns and give schema columns the schema's types and order."""
    wanted = list(columns) if columns is not None else None
    arrays: list[Any] = []
    fields: list[pa.Field] = []
    n = table.num_rows
    names = wanted if wanted is not None else list(MESSAGES_SCHEMA.names) + [
        c for c in table.column_names if c not in MESSAGES_SCHEMA.names]
    for name in names:
        target = (MESSAGES_SCHEMA.field(name) if name in MESSAGES_SCHEMA.names else None)
        if name not in table.column_names:
            if target is None:
                raise SourceError("no such column in the Parquet data", path=source,
                                  column=name, hint="ask only for columns the rows have")
            if not target.nullable:
                raise SourceError("required column is missing", path=source, column=name,
                                  hint="this is not an ai_gateway_messages table, or is "
                                       "older than schema 6")
            arrays.append(pa.nulls(n, target.type))
            fields.append(target)
            continue
        column = table[name]
        if is_variant_struct(column.type):
            try:
                column = pa.array(decode_variant_struct(column), pa.string())
            except VariantError as exc:
                raise SourceError(f"cannot decode variant value: {exc}", path=source,
                                  column=name, hint="the file may be damaged") from exc
        if target is not None:
            if name in JSON_COLUMNS and not pa.types.is_string(column.type):
                raise SourceError(f"JSON column has type {column.type}", path=source,
                                  column=name, hint="expected a variant or a string column")
            if not target.nullable and column.null_count:
                raise SourceError("required column holds nulls", path=source, column=name,
                                  hint="the rows do not follow ai_gateway_messages")
            column = _cast(column, target, source)
            fields.append(target)
        else:
            fields.append(pa.field(name, column.type))
        arrays.append(column)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _family(t: pa.DataType) -> str:
    """What kind of value a type holds, as far as a file may differ from the table's
    schema: widths, units, zones and encodings change, kinds never do."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    checks = (("int", pa.types.is_integer), ("float", pa.types.is_floating),
              ("text", lambda x: pa.types.is_string(x) or pa.types.is_large_string(x)),
              ("time", pa.types.is_timestamp), ("date", pa.types.is_date),
              ("bool", pa.types.is_boolean))
    return next((name for name, is_kind in checks if is_kind(t)), str(t))


def _cast(column: pa.ChunkedArray | pa.Array, target: pa.Field,
          source: str) -> pa.ChunkedArray | pa.Array:
    """``column`` as the table schema's type. A data file whose column holds another kind
    of value (numbers for text, text for times: its schema drifted from the table's) is
    one error naming the file and column: cast anyway, session ids 0, 1, 2… were made up
    from a row count, and text where times belong was an Arrow traceback."""
    found = column.type
    if _family(found) != _family(target.type) and not pa.types.is_null(found):
        raise SourceError(f"column has type {found}, the table's schema says {target.type}",
                          path=source, column=target.name,
                          hint="the file does not follow the table's schema; rewrite it "
                               "with the table's types")
    try:
        return column.cast(target.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SourceError(f"column cannot be read as {target.type} "
                          f"({str(exc).splitlines()[0][:120]})", path=source,
                          column=target.name, hint="the file may be damaged") from None


def _read_parquet(file: str, columns: Sequence[str] | None,
                  repaired: list[dict[str, Any]] | None) -> pa.Table:
    try:
        present = set(pq.read_schema(file).names)
        read = [c for c in columns if c in present] if columns is not None else None
        table = pq.read_table(file, columns=read)
    except (OSError, pa.ArrowException) as exc:
        raise SourceError(f"cannot read Parquet data: {exc}", path=file,
                          hint="the file may be damaged or still being written") from exc
    # Parquet does not check UTF-8: text that is not is repaired, as for row files.
    return repair_utf8(_conform(table, file, columns), file, repaired)


def read_iceberg(path: Path, columns: Sequence[str] | None = None,
                 repaired: list[dict[str, Any]] | None = None) -> pa.Table:
    """Return the rows of every table at or below ``path`` (current snapshots only).

    ``columns`` limits the read (only those columns, in the given order); without it, all
    ``MESSAGES_SCHEMA`` columns come first in schema order, then extras such as
    ``_hyp_ingest_seq``. JSON columns come back as JSON text; Variant null becomes null.
    Text that is not valid UTF-8 is repaired, each repair noted in ``repaired``.
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise SourceError("no such file or folder", path=str(path),
                          hint="point at a HypAware cache folder or an Iceberg table folder")
    tables = _table_dirs(path)
    files = [f for t in tables for f in _data_files(t)] if tables else [
        str(p) for p in _parquet_exports(path)]
    if not tables and not files:
        raise SourceError("no Iceberg table or Parquet export with variant columns found",
                          path=str(path),
                          hint="point at HypAware's cache/ folder or one table folder")
    parts = [_read_parquet(f, columns, repaired) for f in files]
    if not parts:
        return _conform(MESSAGES_SCHEMA.empty_table(), str(path), columns)
    return pa.concat_tables(parts, promote_options="default")
