"""Write a snapshot type by type, bucket by bucket, without holding a whole table.

The files are the snapshot's usual single Parquet files, byte for byte what
:func:`graphkit.snapshot.write_snapshot` writes for the same table: rows are
re-cut into row groups of the snapshot's fixed size (``ROW_GROUP_ROWS``)
whatever the buckets, so neither the partition count nor the bucket count
shows in the bytes, and at most one row group of a table is held at a time.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from graphkit.core.names import is_name
from graphkit.snapshot.format import COMPRESSION, ROW_GROUP_ROWS, SnapshotError
from graphkit.snapshot.write import commit_snapshot, manifest_for, start_snapshot, table_entry

ROW_GROUP = ROW_GROUP_ROWS


class TableWriter:
    """Append sorted pieces of one table; row groups as one write_table call makes."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        self.path = path
        self.schema = schema
        self.rows = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._writer = pq.ParquetWriter(str(path), schema, compression=COMPRESSION)

    def add(self, table: pa.Table) -> None:
        """Append ``table``'s rows (already in the file's order)."""
        if table.num_rows == 0:
            return
        self._pending.append(table)
        self._pending_rows += table.num_rows
        self.rows += table.num_rows
        if self._pending_rows >= ROW_GROUP:
            whole = pa.concat_tables(self._pending)
            full = (whole.num_rows // ROW_GROUP) * ROW_GROUP
            for off in range(0, full, ROW_GROUP):
                self._write(whole.slice(off, ROW_GROUP))
            rest = whole.slice(full)
            self._pending = [rest] if rest.num_rows else []
            self._pending_rows = rest.num_rows

    def _write(self, table: pa.Table) -> None:
        # The bytes do not depend on how the columns are chunked.
        self._writer.write_table(table, row_group_size=ROW_GROUP)

    def close(self) -> None:
        """Write what is left (an empty table writes what write_table writes for one)."""
        if self._pending_rows or self.rows == 0:
            last = (pa.concat_tables(self._pending) if self._pending
                    else self.schema.empty_table())
            self._write(last)
        self._writer.close()


class SnapshotFolder:
    """A snapshot being written into a hidden sibling folder and swapped in at
    the end, through the snapshot layer's own writer steps (the same target
    checks, checksums, manifest and safe swap as :func:`write_snapshot`)."""

    def __init__(self, directory: Path) -> None:
        self.directory, self.tmp = start_snapshot(directory)
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[str, dict[str, Any]] = {}

    def writer(self, kind: str, type_: str, schema: pa.Schema) -> TableWriter:
        """A writer for ``nodes/<Type>.parquet`` or ``edges/<TYPE>.parquet``."""
        if not is_name(type_):  # it becomes a file name
            raise SnapshotError(f"refusing to write a table named {type_!r}",
                                path=str(self.directory))
        folder = "nodes" if kind == "node" else "edges"
        return TableWriter(self.tmp / folder / f"{type_}.parquet", schema)

    def finish(self, graph_meta: dict[str, Any], *, inputs: list[dict[str, Any]],
               summary: dict[str, Any], include_content: bool) -> dict[str, Any]:
        """Seal every table (checksums), write the manifest and swap the folder in."""
        nodes = {t: {**table_entry(self.tmp, e["file"], e["count"]),
                     **{k: v for k, v in e.items() if k not in ("file", "count")}}
                 for t, e in self.nodes.items()}
        edges = {t: {**table_entry(self.tmp, e["file"], e["count"]),
                     **{k: v for k, v in e.items() if k not in ("file", "count")}}
                 for t, e in self.edges.items()}
        manifest = manifest_for(
            contract=graph_meta["contract"], contract_version=graph_meta["version"],
            granularity=graph_meta["granularity"], lineage=graph_meta["lineage"],
            include_content=include_content, nodes=nodes, edges=edges)
        manifest.update(inputs=inputs, summary=summary)
        try:
            commit_snapshot(self.tmp, self.directory, manifest)
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)  # gone already unless it failed
        return manifest

    def abandon(self) -> None:
        """Remove the temporary folder (the build failed)."""
        shutil.rmtree(self.tmp, ignore_errors=True)
