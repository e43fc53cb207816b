"""Write a snapshot type by type, bucket by bucket, without holding a whole table.

The files are the snapshot's usual single Parquet files, byte for byte what
:func:`graphkit.snapshot.write_snapshot` writes for the same table: rows are
re-cut into row groups of the snapshot's fixed size (``ROW_GROUP_ROWS``)
whatever the buckets, so neither the partition count nor the bucket count
shows in the bytes, and at most one row group of a table is held at a time.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import graphkit
from graphkit.core.ids import NODE_ID_RECIPE
from graphkit.snapshot.io import FORMAT_VERSION, MANIFEST, ROW_GROUP_ROWS, SnapshotError

ROW_GROUP = ROW_GROUP_ROWS


class TableWriter:
    """Append sorted pieces of one table; row groups as one write_table call makes."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        self.path = path
        self.schema = schema
        self.rows = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._writer = pq.ParquetWriter(str(path), schema)

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
    """A snapshot being written into a temporary sibling folder, swapped in at the end."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.directory.name}.",
                                         dir=self.directory.parent))
        (self.tmp / "nodes").mkdir()
        (self.tmp / "edges").mkdir()
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[str, dict[str, Any]] = {}

    def writer(self, kind: str, type_: str, schema: pa.Schema) -> TableWriter:
        """A writer for ``nodes/<Type>.parquet`` or ``edges/<TYPE>.parquet``."""
        folder = "nodes" if kind == "node" else "edges"
        return TableWriter(self.tmp / folder / f"{type_}.parquet", schema)

    def finish(self, graph_meta: dict[str, Any], *, inputs: list[dict[str, Any]],
               summary: dict[str, Any], include_content: bool) -> dict[str, Any]:
        """Write the manifest (as write_snapshot does) and swap the folder into place."""
        manifest = {
            "format": FORMAT_VERSION,
            "graphkit_version": graphkit.__version__,
            "contract": {"name": graph_meta["contract"], "version": graph_meta["version"]},
            "id_recipe": NODE_ID_RECIPE,
            "granularity": graph_meta["granularity"],
            "lineage": graph_meta["lineage"],
            "include_content": include_content,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "counts": {"nodes": {t: n["count"] for t, n in sorted(self.nodes.items())},
                       "edges": {t: e["count"] for t, e in sorted(self.edges.items())}},
            "nodes": dict(sorted(self.nodes.items())),
            "edges": dict(sorted(self.edges.items())),
            "inputs": inputs,
            "summary": summary,
        }
        (self.tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n",
                                         encoding="utf-8")
        _swap(self.tmp, self.directory)
        return manifest

    def abandon(self) -> None:
        """Remove the temporary folder (the build failed)."""
        shutil.rmtree(self.tmp, ignore_errors=True)


def _swap(tmp: Path, directory: Path) -> None:
    """Rename ``tmp`` to ``directory``, replacing an older snapshot there (never
    a folder that is not one)."""
    if directory.exists():
        if not (directory / MANIFEST).is_file() and any(directory.iterdir()):
            raise SnapshotError("refusing to replace a folder that is not a graphkit snapshot",
                                path=str(directory), hint="choose an empty or new folder")
        old = Path(tempfile.mkdtemp(prefix=f".{directory.name}.old.", dir=directory.parent))
        os.rmdir(old)
        os.rename(directory, old)
        os.rename(tmp, directory)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, directory)
