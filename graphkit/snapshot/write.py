"""Graph snapshots: a folder of Parquet tables plus ``manifest.json``.

::

    SNAPSHOT/                  0700, files 0600, whatever the umask
      manifest.json            marker, format, graphkit/contract/id-recipe versions,
                               counts, inputs; per table: file, rows, bytes, sha256
      nodes/<Type>.parquet     id, key columns, properties
      edges/<TYPE>.parquet     source, target, properties

What a snapshot promises (each held by a test in ``tests/snapshot/``):

* **Whole or refused.** Writes go to a hidden temporary sibling that is
  swapped into place: on Linux with one atomic ``renameat2(RENAME_EXCHANGE)``
  (there is never a moment without a snapshot at the path); elsewhere old →
  trash name, new → path, and a kill between the two is undone by the next
  read or write. A reader checks every table's size on open and the sha256
  and row count of each table it reads; a changed, truncated or missing file
  is refused with one line naming it.
* **Only graphkit's own folders are replaced**: an existing folder must hold
  a graphkit manifest *and* nothing but the files it lists (or be empty).
* **Concurrent writers** to one path take turns at the swap (``flock`` on the
  parent folder); the last one wins, each result is whole. A reader whose
  tries keep being swapped from under it reads at last under a shared lock on
  that folder, which holds the writers at the swap until it is done.

The safety parts are in :mod:`.swap`, reading back in :mod:`.read`.
* **Left-overs of killed writers** (hidden ``.NAME.graphkit-tmp-…`` folders)
  are removed by the next write to the same path: at once if the writer's
  process is gone, after an hour if it ran on another host.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from itertools import chain
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from graphkit._version import __version__
from graphkit.core.files import snapshot_around, utf8_path
from graphkit.core.graph import GraphTables
from graphkit.core.ids import NODE_ID_RECIPE
from graphkit.core.names import is_name
from graphkit.snapshot.format import (
    COMPRESSION,
    FORMAT_VERSION,
    MANIFEST,
    MARKER,
    ROW_GROUP_ROWS,
    SnapshotError,
)
from graphkit.snapshot.swap import (
    DIR_MODE,
    FILE_MODE,
    check_replaceable,
    clean_leftovers,
    fsync_dir,
    locked,
    make_dir,
    os_error,
    recover,
    swap_into_place,
    tidy,
    write_file,
)

# graph.meta key: tables equal to a file of the previous snapshot, ``{"nodes/T.parquet":
# [path, sha256]}`` (the spliced transcript build names the types it did not merge again).
# Such a file is hard-linked, and kept only if its bytes still have that digest.
SAME_FILES = "same_files"

__all__ = ["check_snapshot_target", "commit_snapshot", "manifest_for", "start_snapshot",
           "table_entry", "write_snapshot"]



def write_snapshot(
    graph: GraphTables,
    directory: Path,
    *,
    inputs: Iterable[dict[str, Any]] = (),
    summary: dict[str, Any] | None = None,
    include_content: bool = False,
    early: EarlyTables | None = None,
) -> dict[str, Any]:
    """Write ``graph`` to ``directory`` atomically and return the manifest.

    Properties the contract computes from message content are left out unless
    ``include_content`` is set. Refuses (:class:`SnapshotError`, nothing
    touched) a target that is a file, lies under a file, cannot be written, or
    is a folder graphkit did not write. ``early``: tables of ``graph`` already being
    written into the snapshot's folder (:class:`EarlyTables`), made for
    ``directory`` with the same ``include_content``.
    """
    for name in [*graph.nodes, *graph.edges]:
        if not is_name(name):  # it becomes a file name
            raise SnapshotError(f"refusing to write a table named {name!r}",
                                path=str(directory))
    # What every reader requires of a manifest: refused here, not written unreadable.
    for name, nt in graph.nodes.items():
        if not nt.key:
            raise SnapshotError(f"refusing to write node type {name} without a key",
                                path=str(directory), hint="give the node type a key")
    for name, et in graph.edges.items():
        if not (is_name(et.source_type) and is_name(et.target_type)):
            raise SnapshotError(f"refusing to write edge type {name}: its ends "
                                f"{et.source_type!r} -> {et.target_type!r} are not node "
                                "types", path=str(directory))
    if early is not None:
        directory, tmp = early.directory, early.tmp
    else:
        directory, tmp = start_snapshot(directory)
    try:
        try:
            manifest = _write_tables(graph, tmp, include_content, early)
        except OSError as exc:  # a full disk, mid-write: the old snapshot stays
            raise os_error(exc, directory) from None
        manifest.update(inputs=list(inputs), summary=summary or {})
        commit_snapshot(tmp, directory, manifest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already unless something failed
    return manifest


def start_snapshot(directory: Path | str) -> tuple[Path, Path]:
    """Check ``directory`` (see :func:`check_snapshot_target`) and make the hidden
    sibling folder a snapshot is written into; returns both. Table files go to
    ``nodes/`` and ``edges/`` in it, each sealed with :func:`table_entry`, then
    :func:`commit_snapshot` swaps it into place. Writers that stream tables
    (:mod:`graphkit.builds.partitioned`) use these three; :func:`write_snapshot` does too."""
    path = check_snapshot_target(directory, probe=False)  # make_dir below is the probe
    try:
        tmp = make_dir(path, "tmp")
        for sub in ("nodes", "edges"):
            (tmp / sub).mkdir()
            os.chmod(tmp / sub, DIR_MODE)  # mkdir's mode is cut by the umask
    except OSError as exc:
        raise os_error(exc, path) from None
    return path, tmp


def manifest_bytes(manifest: dict[str, Any]) -> bytes:
    """The manifest as ``json.dumps(manifest, indent=2)`` writes it, plus a newline.

    Indenting sends ``json`` to its pure-Python encoder: with one input record per
    transcript (10k files) that was ~0.15 CPU-s of a 1.8 CPU-s incremental build. The C
    encoder writes the compact text and msgspec's C formatter indents it; the bytes are
    the same (tested)."""
    inputs = manifest.get("inputs")
    if isinstance(inputs, list) and len(inputs) > 256 and _plain(manifest):
        # Thousands of input records: msgspec writes the compact text too (~4× json's
        # speed). Only where its text is json's token for token: no float (their digits
        # differ, 1e16 vs 1e+16), keys all text, every string printable ASCII without
        # escapes (json escapes non-ASCII and DEL, msgspec does not). Whitespace differs,
        # and the indenting below rewrites it.
        import msgspec

        try:
            compact_bytes = msgspec.json.encode(manifest)
        except (msgspec.EncodeError, TypeError, ValueError, OverflowError):
            compact_bytes = b"\\"  # json's way below
        if compact_bytes.isascii() and b"\\" not in compact_bytes \
                and b"\x7f" not in compact_bytes:
            return msgspec.json.format(compact_bytes, indent=2) + b"\n"
    compact = json.dumps(manifest)
    if len(compact) < 1 << 16:
        # A manifest of a few tables and row files: indenting in Python costs less
        # than importing msgspec (~0.02 CPU-s).
        return json.dumps(manifest, indent=2).encode() + b"\n"
    import msgspec  # a core dependency; imported here, not by every reader of write.py

    try:
        text = msgspec.json.format(compact, indent=2)
    except msgspec.DecodeError:  # NaN or Infinity, which json writes and msgspec refuses
        text = json.dumps(manifest, indent=2)
    return text.encode() + b"\n"


def _plain(value: Any) -> bool:
    """Whether ``value`` holds only dicts with text keys, lists, text, ints (exactly:
    no subclasses, whose text json and msgspec may spell apart), booleans and None."""
    todo = [value]
    while todo:
        item = todo.pop()
        if type(item) is dict:
            if not all(type(k) is str for k in item):
                return False
            values: Iterable[Any] = item.values()
        elif type(item) is list:
            if len(item) > 64 and _flat_records(item):
                continue  # thousands of input records, looked at by C loops (~5× faster)
            values = item
        else:
            return False
        for v in values:
            kind = type(v)
            if kind is dict or kind is list:
                todo.append(v)
            elif kind is not str and kind is not int and kind is not bool and v is not None:
                return False
    return True


_SCALARS = frozenset({str, int, bool, type(None)})


def _flat_records(items: list[Any]) -> bool:
    """Whether ``items`` are all dicts with text keys and only plain scalars (text, exact
    ints, booleans, None) as values: what :func:`_plain` asks of each, in C loops."""
    return set(map(type, items)) == {dict} and \
        set(map(type, chain.from_iterable(items))) <= {str} and \
        set(map(type, chain.from_iterable(map(dict.values, items)))) <= _SCALARS


def commit_snapshot(tmp: Path, directory: Path, manifest: dict[str, Any]) -> None:
    """Write ``manifest`` into ``tmp`` and swap ``tmp`` into place at ``directory``
    (replacing an older graphkit snapshot there, never anything else)."""
    try:
        write_file(tmp / MANIFEST, manifest_bytes(manifest))
        fsync_dir(tmp)
        with locked(directory.parent):
            recover(directory)
            clean_leftovers(directory)
            old = swap_into_place(tmp, directory)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except OSError as exc:
        raise os_error(exc, directory) from None


def manifest_for(*, contract: str, contract_version: int, granularity: str,
                 lineage: dict[str, Any] | None, include_content: bool,
                 nodes: dict[str, Any], edges: dict[str, Any]) -> dict[str, Any]:
    """A manifest's fixed part for tables already written (``nodes``/``edges``:
    type -> :func:`table_entry` plus key/index or end types)."""
    return {
        "kind": MARKER,
        "format": FORMAT_VERSION,
        "graphkit_version": __version__,
        "contract": {"name": contract, "version": contract_version},
        "id_recipe": NODE_ID_RECIPE,
        "granularity": granularity,
        "include_content": include_content,
        "lineage": lineage,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "counts": {"nodes": {t: n["count"] for t, n in sorted(nodes.items())},
                   "edges": {t: e["count"] for t, e in sorted(edges.items())}},
        "nodes": dict(sorted(nodes.items())),
        "edges": dict(sorted(edges.items())),
    }


def check_snapshot_target(directory: Path | str, *, probe: bool = True) -> Path:
    """``directory`` as a path a snapshot may be written to, or a one-line
    :class:`SnapshotError` naming what is in the way. Cheap: call it before a
    long build. A symlink to a folder stands for that folder. ``probe`` False: the
    caller makes its write folder beside it next (that is the probe)."""
    path = Path(directory)
    utf8_path(path, "snapshot")
    if path.is_symlink():
        if not path.is_dir():
            raise SnapshotError("is a symlink to something that is not a folder",
                                path=str(path), hint="give a folder path for the snapshot")
        path = path.resolve()
    tidy(path)  # first, whatever this build then decides
    around = snapshot_around(path.parent)
    if around is not None:  # a new folder there: that snapshot could not be replaced
        raise SnapshotError(f"refusing to write a snapshot inside the snapshot {around}",
                            path=str(path), hint="give --snapshot a path outside it")
    if path.exists():
        if not path.is_dir():
            raise SnapshotError("exists and is not a folder", path=str(path),
                                hint="give a new or graphkit snapshot folder for --snapshot")
        check_replaceable(path)
    else:
        for up in path.parents:
            if up.exists() or up.is_symlink():
                if not up.is_dir():
                    raise SnapshotError(f"cannot write a snapshot under {up}: it is a file",
                                        path=str(path))
                break
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Try it: permission bits do not tell (root, read-only mounts, /sys). Named as a
        # writer's temp folder, so one left by a writer killed right here is cleaned by
        # the next write like any other left-over of a dead writer.
        if probe:
            os.rmdir(make_dir(path, "tmp"))
    except OSError as exc:
        raise os_error(exc, path) from None
    return path


def table_to_write(graph: GraphTables, kind: str, name: str, table: pa.Table,
                   include_content: bool) -> pa.Table:
    """What goes into the file of the ``kind`` (``nodes``/``edges``) table ``name`` of
    ``graph``: node properties computed from message content left out unless
    ``include_content``."""
    if kind != "nodes" or include_content:
        return table
    content = graph.meta.get("content_properties", {})
    return table.drop_columns([c for c in content.get(name, []) if c in table.column_names])


def _write_tables(graph: GraphTables, tmp: Path, include_content: bool,
                  early: EarlyTables | None = None) -> dict[str, Any]:
    """Write every table into ``tmp`` (taking those ``early`` wrote); the manifest
    without inputs and summary."""
    made = [("nodes", t, nt.table) for t, nt in sorted(graph.nodes.items())]
    made += [("edges", t, et.table) for t, et in sorted(graph.edges.items())]
    jobs = [(table_to_write(graph, kind, name, table, include_content), f"{kind}/{name}.parquet")
            for kind, name, table in made]
    done: dict[int, dict[str, Any]] = {}
    if early is not None:
        done = {i: got for i, (_, name, table) in enumerate(made)
                if (got := early.take(jobs[i][1], table)) is not None}
        early.finish()
    # Parquet encoding runs in Arrow without the GIL: two files at a time,
    # largest first, so the biggest table does not start last.
    same = graph.meta.get(SAME_FILES) or {}
    linked = {i: got for i, (t, rel) in enumerate(jobs) if i not in done and rel in same
              and (got := _linked(tmp, rel, same[rel], t.num_rows)) is not None}
    if linked:
        # A linked file's bytes are on disk already (fsynced when first written); what is
        # new is its name, which its folder's fsync makes durable: two fsyncs, not one a
        # table (each a journal commit: ~3 ms of wall apiece on this machine's disk).
        for sub in {jobs[i][1].split("/", 1)[0] for i in linked}:
            fsync_dir(tmp / sub)
    done.update(linked)
    order = sorted((i for i in range(len(jobs)) if i not in done),
                   key=lambda i: -jobs[i][0].nbytes)
    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        done.update(zip(order, pool.map(lambda i: write_table(jobs[i][0], tmp, jobs[i][1]),
                                        order), strict=True))
    written = [done[i] for i in range(len(jobs))]
    nodes_meta: dict[str, Any] = {}
    for (ntype, nt), meta in zip(sorted(graph.nodes.items()), written, strict=False):
        nodes_meta[ntype] = {**meta, "key": list(nt.key),
                             "index": graph.meta.get("indexes", {}).get(ntype, [])}
    edges_meta: dict[str, Any] = {}
    for (etype, et), meta in zip(sorted(graph.edges.items()), written[len(graph.nodes):],
                                 strict=True):
        edges_meta[etype] = {**meta, "source_type": et.source_type,
                             "target_type": et.target_type}
    return manifest_for(
        contract=graph.contract_name, contract_version=graph.contract_version,
        granularity=graph.granularity, include_content=include_content,
        lineage=graph.lineage.to_json() if graph.lineage else None,
        nodes=nodes_meta, edges=edges_meta)


def write_table(table: pa.Table, tmp: Path, rel: str) -> dict[str, Any]:
    """Write ``table`` as the Parquet file ``tmp/rel``, sealed (:func:`table_entry`)."""
    pq.write_table(table, tmp / rel, row_group_size=ROW_GROUP_ROWS,
                   compression=COMPRESSION)
    return table_entry(tmp, rel, table.num_rows)


def _linked(tmp: Path, rel: str, same: list[str], rows: int) -> dict[str, Any] | None:
    """A table the previous snapshot holds as it is: its file hard-linked, not encoded
    again; None (nothing left behind) when it cannot be or its bytes are not the ones
    written then."""
    try:
        os.link(same[0], tmp / rel)
        entry = table_entry(tmp, rel, rows, sync=False)  # the caller fsyncs the folder
    except OSError:
        (tmp / rel).unlink(missing_ok=True)
        return None
    if entry["sha256"] != same[1]:
        (tmp / rel).unlink()
        return None
    return entry


def table_entry(tmp: Path, rel: str, rows: int, *, sync: bool = True) -> dict[str, Any]:
    """Seal a table file written at ``tmp/rel`` (mode, fsync unless ``sync`` is False:
    a hard link to a file synced before) and return its manifest entry: file, row
    count, bytes and SHA-256."""
    path = tmp / rel
    # Hash what is on disk (in the page cache now): that is what a reader checks.
    with path.open("rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
        os.fchmod(f.fileno(), FILE_MODE)
        if sync:  # the old snapshot is deleted after the swap: this must be on disk
            os.fsync(f.fileno())
        size = os.fstat(f.fileno()).st_size
    return {"file": rel, "count": rows, "bytes": size, "sha256": digest}


# Snapshot tables written while the build still runs.
#
# A build's projection finishes its node and edge types one by one (the node types
# first, the edge types as their ends are done: :func:`graphkit.projection.project.project`).
# An :class:`EarlyTables` writer is handed each table as it is finished and encodes it
# right away, on threads of its own (Parquet encoding runs in Arrow without the GIL),
# so the file of the Thread nodes is written while the edge rules still run instead of
# after the whole projection. :func:`graphkit.snapshot.write.write_snapshot` then takes
# each file already written for the very table object the graph holds, writes the rest
# and commits as always: the bytes, the manifest and the swap are the same as without
# it (the writer goes into the same hidden folder ``write_snapshot`` would make).


class EarlyTables:
    """Tables of one snapshot being written before the graph is whole (see the module).

    ``add`` is called by the projection (from any thread); ``take`` by the snapshot
    writer; ``abandon`` removes everything when the build fails."""

    def __init__(self, directory: Path | str, include_content: bool) -> None:
        self.directory, self.tmp = start_snapshot(directory)
        self.include_content = include_content
        self._pool = ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1))
        # rel path -> (the graph's table object, the write of its file)
        self._jobs: dict[str, tuple[pa.Table, Future[dict[str, Any]]]] = {}

    def add(self, graph: GraphTables, kind: str, name: str, table: pa.Table) -> None:
        """Start writing the ``kind`` (``nodes``/``edges``) table ``name`` of ``graph``,
        as :func:`graphkit.snapshot.write.write_snapshot` would write it."""
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
