"""Snapshot tables written while the build still runs.

A build's projection finishes its node and edge types one by one (the node types
first, the edge types as their ends are done: :func:`graphkit.contract.project.project`).
An :class:`EarlyTables` writer is handed each table as it is finished and encodes it
right away, on threads of its own (Parquet encoding runs in Arrow without the GIL),
so the file of the Thread nodes is written while the edge rules still run instead of
after the whole projection. :func:`graphkit.snapshot.io.write_snapshot` then takes
each file already written for the very table object the graph holds, writes the rest
and commits as always: the bytes, the manifest and the swap are the same as without
it (the writer goes into the same hidden folder ``write_snapshot`` would make).
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa

from graphkit.core.graph import GraphTables
from graphkit.core.names import is_name


class EarlyTables:
    """Tables of one snapshot being written before the graph is whole (see the module).

    ``add`` is called by the projection (from any thread); ``take`` by the snapshot
    writer; ``abandon`` removes everything when the build fails."""

    def __init__(self, directory: Path | str, include_content: bool) -> None:
        from graphkit.snapshot.io import start_snapshot

        self.directory, self.tmp = start_snapshot(directory)
        self.include_content = include_content
        self._pool = ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1))
        # rel path -> (the graph's table object, the write of its file)
        self._jobs: dict[str, tuple[pa.Table, Future[dict[str, Any]]]] = {}

    def add(self, graph: GraphTables, kind: str, name: str, table: pa.Table) -> None:
        """Start writing the ``kind`` (``nodes``/``edges``) table ``name`` of ``graph``,
        as :func:`graphkit.snapshot.io.write_snapshot` would write it."""
        from graphkit.snapshot.io import table_to_write, write_table

        if not is_name(name):  # it becomes a file name: write_snapshot refuses it
            return
        rel = f"{kind}/{name}.parquet"
        out = table_to_write(graph, kind, name, table, self.include_content)
        self._jobs[rel] = (table, self._pool.submit(write_table, out, self.tmp, rel))

    def take(self, rel: str, table: pa.Table) -> dict[str, Any] | None:
        """The manifest entry of ``rel`` if it was written from ``table`` itself
        (the same object), else None (and the file, if any, is removed: the caller
        writes it again from the table it holds)."""
        job = self._jobs.pop(rel, None)
        if job is None:
            return None
        source, done = job
        entry = done.result()
        if source is table:
            return entry
        (self.tmp / rel).unlink(missing_ok=True)
        return None

    def finish(self) -> None:
        """Wait for every write; remove the files no table was taken for."""
        self._pool.shutdown(wait=True)
        for rel, (_, done) in self._jobs.items():
            done.exception()  # written or failed, nothing runs on after this
            (self.tmp / rel).unlink(missing_ok=True)
        self._jobs.clear()

    def abandon(self) -> None:
        """The build failed: stop, and remove the folder and all written so far."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(self.tmp, ignore_errors=True)
