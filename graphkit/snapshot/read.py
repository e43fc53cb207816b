"""Reading a snapshot back, checked: the manifest's shape and format, every
file's size on open, each table's sha256 and row count as it is read. A
reader holds the folder open by descriptor, so a writer swapping a new
snapshot in cannot mix its files with ours (see :mod:`.write`)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from graphkit._version import __version__
from graphkit.core.files import open_regular
from graphkit.core.graph import EdgeTable, GraphTables, LineageVocabulary, NodeTable
from graphkit.core.ids import NODE_ID_RECIPE
from graphkit.core.names import is_name
from graphkit.snapshot.format import (
    FORMAT_VERSION,
    MANIFEST,
    MARKER,
    MAX_MANIFEST_BYTES,
    OLDEST_FORMAT,
    SnapshotError,
)
from graphkit.snapshot.swap import locked, recover

# Reads retried when a writer replaced the snapshot under them (each retry
# reads the new one); the last try holds a shared lock that keeps swaps out.
_ATTEMPTS = 8
T = TypeVar("T")



class _Opened:
    """A snapshot folder held open by descriptor: a writer swapping a new
    snapshot in while we read cannot mix its files with ours."""

    def __init__(self, directory: Path, *, may_recover: bool = True) -> None:
        self.path = directory
        try:
            self.fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except FileNotFoundError:
            if not may_recover:
                raise _not_a_snapshot(directory) from None
            with locked(directory.parent):
                recover(directory)
            try:
                self.fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            except OSError:
                raise _not_a_snapshot(directory) from None
        except OSError as exc:
            raise SnapshotError(f"cannot open the snapshot: {exc.strerror}",
                                path=str(directory), hint=_access_hint(exc)) from None

    def close(self) -> None:
        os.close(self.fd)

    def replaced(self) -> bool:
        """Whether the path now names another folder than the one we hold."""
        try:
            st = os.stat(self.path)
        except OSError:
            return True
        held = os.fstat(self.fd)
        return (st.st_dev, st.st_ino) != (held.st_dev, held.st_ino)

    def _open(self, rel: str) -> int:
        """A regular file of the snapshot, opened for reading. Not blocking: a FIFO put
        in a manifest's or a table's place waited for a writer forever (round eight);
        it, and any other file that is no regular file, is refused as unreadable."""
        return open_regular(rel, dir_fd=self.fd)

    def read(self, rel: str, limit: int | None = None) -> bytes:
        fd = self._open(rel)
        with os.fdopen(fd, "rb") as f:
            return f.read() if limit is None else f.read(limit + 1)

    def read_buffer(self, rel: str) -> pa.Buffer:
        """The whole file in one Arrow buffer: hashed, then decoded, never copied."""
        fd = self._open(rel)
        try:
            size = os.fstat(fd).st_size
            buf = pa.allocate_buffer(size)
            view = memoryview(buf).cast("B")
            done = 0
            while done < size:
                n = os.readv(fd, [view[done:]])
                if n == 0:
                    break  # shrank while we read: the size check below says so
                done += n
            return buf if done == size else buf.slice(0, done)
        finally:
            os.close(fd)

    def size(self, rel: str) -> int:
        return os.stat(rel, dir_fd=self.fd).st_size


def _not_a_snapshot(directory: Path) -> SnapshotError:
    return SnapshotError("not a graphkit snapshot (no manifest.json)", path=str(directory),
                         hint="build one with `graphkit build SOURCE --snapshot DIR`")


def _reading(directory: Path, read: Callable[[_Opened, dict[str, Any]], T], *,
             shared: bool = False) -> T:
    """``read(snap, manifest)`` on the snapshot at ``directory``. If a writer
    swapped a new snapshot in meanwhile, the new one is read; after a few such
    tries the last one holds a shared lock on the parent, which keeps writers'
    swaps out, so a reader always gets through however busy the writers are.
    ``shared``: ``read`` only looks at the manifest, which may then be the one parsed
    from the same bytes before (see :func:`_load_manifest`)."""
    for attempt in range(_ATTEMPTS):
        last = attempt == _ATTEMPTS - 1
        with locked(directory.parent, shared=True) if last else nullcontext():
            snap = _Opened(directory, may_recover=not last)  # recovering needs the lock we hold
            try:
                return read(snap, _manifest(snap, shared=True) if shared
                            else _load_manifest(snap))
            except SnapshotError:
                if last or not snap.replaced():
                    raise
            finally:
                snap.close()
    raise AssertionError("unreachable: the last attempt returns or raises")


# The last manifest parsed for a reader that only looks (its bytes, the parse): a query
# reads several tables, each checked against the manifest read again, and parsing a
# manifest of 2.6 MB (a history of 1,500 sessions) was 50 ms a table.
_PARSED: list[tuple[bytes, dict[str, Any]]] = []


def _load_manifest(snap: _Opened) -> dict[str, Any]:
    """The snapshot's manifest, read, parsed and checked."""
    return _manifest(snap, shared=False)


def _manifest(snap: _Opened, *, shared: bool) -> dict[str, Any]:
    where = str(snap.path / MANIFEST)
    try:
        data = snap.read(MANIFEST, MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        raise _not_a_snapshot(snap.path) from None
    except OSError as exc:
        raise SnapshotError(f"unreadable manifest: {exc.strerror}", path=where,
                            hint=_access_hint(exc)) from None
    if len(data) > MAX_MANIFEST_BYTES:
        raise SnapshotError("manifest larger than 64 MiB: not one graphkit wrote", path=where)
    if shared and _PARSED and _PARSED[0][0] == data:
        manifest = _PARSED[0][1]  # the same bytes: the same manifest, checked again below
    else:
        try:
            manifest = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, RecursionError, ValueError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise SnapshotError(f"malformed manifest ({reason})", path=where,
                                hint="rebuild the snapshot") from None
        if shared:
            _PARSED[:] = [(data, manifest)]
    _check_manifest(manifest, where)
    _check_files(snap, manifest)
    return manifest


def _check_manifest(m: Any, where: str) -> None:
    """The manifest's shape, one line naming the first thing wrong."""
    def bad(what: str) -> SnapshotError:
        return SnapshotError(f"malformed manifest: {what}", path=where,
                             hint="rebuild the snapshot")

    if not isinstance(m, dict):
        raise bad("not a JSON object")
    fmt = m.get("format")
    if not isinstance(fmt, int) or isinstance(fmt, bool):
        raise bad("no format number")
    if fmt > FORMAT_VERSION:
        raise SnapshotError(
            f"snapshot format {fmt} was written by a newer graphkit "
            f"({m.get('graphkit_version', 'unknown version')})", path=where,
            hint=f"this graphkit {__version__} reads formats {OLDEST_FORMAT} to "
                 f"{FORMAT_VERSION}; upgrade graphkit or rebuild the snapshot")
    if fmt < OLDEST_FORMAT:
        raise SnapshotError(f"snapshot format {fmt} is not supported", path=where,
                            hint=f"this graphkit reads formats {OLDEST_FORMAT} to "
                                 f"{FORMAT_VERSION}")
    if fmt >= 2 and m.get("kind") != MARKER:
        raise bad(f"no {MARKER!r} marker")
    contract = m.get("contract")
    if not (isinstance(contract, dict) and isinstance(contract.get("name"), str)
            and _is_int(contract.get("version")) and _is_int(m.get("id_recipe"))):
        raise bad("contract name/version or id_recipe missing")
    for part in ("nodes", "edges"):
        tables = m.get(part)
        if not isinstance(tables, dict):
            raise bad(f"no {part!r} object")
        for name, entry in tables.items():
            _check_entry(part, name, entry, fmt, bad)
    _check_lineage(m.get("lineage"), bad)
    for name, entry in m["edges"].items():
        for end in ("source_type", "target_type"):
            if entry[end] not in m["nodes"]:
                # Every reader looks the ends up among the nodes (an entry removed by hand).
                raise bad(f"edges.{name}.{end} {entry[end]!r} is no node table of the snapshot")


def _check_lineage(lineage: Any, bad: Any) -> None:
    """A recorded lineage vocabulary names types and columns as text (an int among the
    aliases was a TypeError traceback from every command reading the snapshot)."""
    if not isinstance(lineage, dict):
        return  # none recorded (null, or a snapshot from before it was): no lineage
    for field, value in lineage.items():
        if field not in LineageVocabulary.__dataclass_fields__:
            continue  # not read (a later graphkit's field)
        if field == "thread_aliases":
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise bad("lineage.thread_aliases is not a list of names")
        elif not (isinstance(value, str)
                  or (value is None and field in ("agent", "has_agent", "continues"))):
            raise bad(f"lineage.{field} is not a name")


def _check_entry(part: str, name: str, entry: Any, fmt: int, bad: Any) -> None:
    what = f"{part}.{name}"
    if not is_name(name) or not isinstance(entry, dict):
        raise bad(f"{what!r} is not a table entry")
    # The file is exactly where graphkit puts it: a manifest cannot point a
    # reader at ../../anything.
    if entry.get("file") != f"{part}/{name}.parquet":
        raise bad(f"{what}.file is not {part}/{name}.parquet")
    if not _is_int(entry.get("count")):
        raise bad(f"{what}.count missing")
    if fmt >= 2:
        if not _is_int(entry.get("bytes")):
            raise bad(f"{what}.bytes missing")
        digest = entry.get("sha256")
        if not (isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest)):
            raise bad(f"{what}.sha256 missing")
    if part == "nodes":
        key = entry.get("key")
        if not (isinstance(key, list) and key and all(isinstance(k, str) for k in key)):
            raise bad(f"{what}.key missing")
    elif not (is_name(entry.get("source_type")) and is_name(entry.get("target_type"))):
        raise bad(f"{what}.source_type/target_type missing")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _check_files(snap: _Opened, m: dict[str, Any]) -> None:
    """Every listed file is there, at its recorded size (cheap: one stat each)."""
    for part in ("nodes", "edges"):
        for entry in m[part].values():
            rel = entry["file"]
            try:
                size = snap.size(rel)
            except FileNotFoundError:
                raise _damaged(snap.path, rel, "is missing") from None
            except OSError as exc:
                raise _damaged(snap.path, rel, f"cannot be read ({exc.strerror})",
                               _access_hint(exc)) from None
            if "bytes" in entry and size != entry["bytes"]:
                raise _damaged(snap.path, rel, f"has {size} bytes, the manifest says "
                                               f"{entry['bytes']} (truncated or changed)")


def _damaged(directory: Path, rel: str, what: str, hint: str | None = None) -> SnapshotError:
    return SnapshotError(f"snapshot file {what}", path=str(directory / rel),
                         hint=hint or "the snapshot was changed after graphkit wrote it; "
                                      "rebuild it")


def _access_hint(exc: OSError) -> str | None:
    """What to do about a snapshot file the user may not read: its permissions, not
    its bytes, are at fault (a snapshot copied from another user keeps its modes)."""
    if isinstance(exc, PermissionError):
        return ("make the snapshot readable by the user running graphkit "
                "(chmod -R a+rX on its folder), or read it as its owner")
    return None


def _read_verified(snap: _Opened, entry: dict[str, Any],
                   columns: Iterable[str] | None = None) -> pa.Table:
    """One table, after checking its bytes against the manifest's sha256 (a
    single read: the bytes hashed are the bytes decoded)."""
    rel = entry["file"]
    try:
        data = snap.read_buffer(rel)
    except OSError as exc:
        raise _damaged(snap.path, rel, "is missing" if isinstance(exc, FileNotFoundError)
                       else f"cannot be read ({exc.strerror})", _access_hint(exc)) from None
    if "sha256" in entry:
        if data.size != entry["bytes"]:
            raise _damaged(snap.path, rel, f"has {data.size} bytes, the manifest says "
                                           f"{entry['bytes']} (truncated or changed)")
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise _damaged(snap.path, rel, "was changed (its sha256 differs from the manifest)")
    try:
        wanted = None
        if columns is not None:
            names = set(pq.read_schema(pa.BufferReader(data)).names)
            wanted = [c for c in columns if c in names]
        table = pq.read_table(pa.BufferReader(data), columns=wanted)
    except (pa.ArrowException, OSError, ValueError) as exc:
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise _damaged(snap.path, rel, f"is not readable Parquet ({reason})") from None
    if table.num_rows != entry["count"]:
        raise _damaged(snap.path, rel, f"has {table.num_rows} rows, the manifest says "
                                       f"{entry['count']}")
    _check_columns(snap.path, rel, entry, data, table)
    return table


def _check_columns(directory: Path, rel: str, entry: dict[str, Any], data: pa.Buffer,
                   table: pa.Table) -> None:
    """The columns every reader relies on: a node table's ``id`` and key columns, an
    edge table's ``source`` and ``target``; ids are text and never null. A table of
    another shape (written by hand, its sha256 put in the manifest) is one line here,
    not a KeyError or an Arrow kernel error in whichever command reads it."""
    schema = pq.read_schema(pa.BufferReader(data))
    ids = ["id"] if "key" in entry else ["source", "target"]
    for name in [*ids, *entry.get("key", [])]:
        if name not in schema.names:
            raise _damaged(directory, rel, f"has no column {name!r}")
    for name in ids:
        t = schema.field(name).type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            raise _damaged(directory, rel, f"holds {t} in column {name!r}, not text")
        if name in table.column_names and table.column(name).null_count:
            raise _damaged(directory, rel, f"has a null in column {name!r}")




def check_ends(directory: Path, edge_type: str, edges: pa.Table, column: str,
               node_type: str, ids: pa.Array | pa.ChunkedArray) -> None:
    """That every ``column`` (``source`` or ``target``) value of ``edges`` is among
    ``ids``, the node ids of ``node_type``: graphkit writes no edge without its two
    nodes, so one naming no node means the snapshot was changed by hand, and every
    reader would fail on it in a way of its own (a KeyError, a node without a type)."""
    import pyarrow.compute as pc

    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks() if ids.num_chunks != 1 else ids.chunk(0)
    if pa.types.is_dictionary(ids.type):
        ids = ids.dictionary_decode()
    values = edges.column(column)
    missing = pc.invert(pc.is_in(values, value_set=ids))
    if pc.any(missing).as_py():
        first = values.filter(missing)[0].as_py()
        raise _damaged(Path(directory), f"edges/{edge_type}.parquet",
                       f"names a {node_type} node {first!r} in its {column} column that "
                       f"nodes/{node_type}.parquet lacks")


def manifest_lineage(manifest: dict[str, Any]) -> LineageVocabulary | None:
    """The lineage vocabulary a manifest records (snapshots written before it was
    recorded get the default contract's, if they are of that contract)."""
    if "lineage" not in manifest:
        name = manifest.get("contract", {}).get("name")
        return LineageVocabulary() if name == "ai-gateway-graph" else None
    data = manifest["lineage"]
    return LineageVocabulary.from_json(data) if isinstance(data, dict) else None


def read_manifest(directory: Path) -> dict[str, Any]:
    """The checked manifest of the snapshot in ``directory``.

    Checks the manifest's shape and format version, and that every file it
    lists is there at its recorded size; one-line :class:`SnapshotError`
    otherwise.
    """
    return _reading(Path(directory), lambda _snap, manifest: manifest)


def read_table(directory: Path, entry: dict[str, Any],
               columns: Iterable[str] | None = None) -> pa.Table:
    """One table of a snapshot, checked against its manifest ``entry`` (from
    :func:`read_manifest`): size, sha256, row count. ``columns`` the file does
    not have are left out (the caller fills them in).

    If the snapshot was replaced since its manifest was read, says so.
    """
    directory = Path(directory)
    part = "nodes" if str(entry.get("file", "")).startswith("nodes/") else "edges"
    name = str(entry.get("file", "")).split("/")[-1].removesuffix(".parquet")

    def read(snap: _Opened, manifest: dict[str, Any]) -> pa.Table:
        current = manifest[part].get(name)
        if current is None or current.get("sha256") != entry.get("sha256"):
            raise SnapshotError("the snapshot was replaced while it was being read",
                                path=str(directory), hint="run the command again")
        return _read_verified(snap, current, columns)

    # Shared: only the entry of this table is looked at, and never changed.
    return _reading(directory, read, shared=True)


def read_snapshot(
    directory: Path,
    *,
    node_types: Iterable[str] | None = None,
    edge_types: Iterable[str] | None = None,
) -> GraphTables:
    """Read a snapshot (or only some of its node and edge types) into tables,
    each checked against the manifest (see :func:`read_table`)."""
    return _reading(Path(directory),
                    lambda snap, m: _tables(snap, m, node_types, edge_types))


def _tables(snap: _Opened, m: dict[str, Any], node_types: Iterable[str] | None,
            edge_types: Iterable[str] | None) -> GraphTables:
    if m["id_recipe"] != NODE_ID_RECIPE:
        raise SnapshotError(
            f"snapshot ids use recipe {m['id_recipe']}, this graphkit uses {NODE_ID_RECIPE}",
            path=str(snap.path), hint="rebuild the snapshot from its sources")
    graph = GraphTables(m["contract"]["name"], int(m["contract"]["version"]),
                        int(m["id_recipe"]), str(m.get("granularity", "thread")),
                        lineage=manifest_lineage(m))
    graph.meta["indexes"] = {t: n.get("index", []) for t, n in m["nodes"].items()}
    # An export of it is then written private, as the snapshot is.
    graph.meta["include_content"] = bool(m.get("include_content"))
    wanted_n = set(node_types) if node_types is not None else set(m["nodes"])
    wanted_e = set(edge_types) if edge_types is not None else set(m["edges"])
    for ntype, info in m["nodes"].items():
        if ntype in wanted_n:
            graph.nodes[ntype] = NodeTable(ntype, tuple(info["key"]), _read_verified(snap, info))
    for etype, info in m["edges"].items():
        if etype in wanted_e:
            edges = _read_verified(snap, info)
            graph.edges[etype] = EdgeTable(etype, info["source_type"], info["target_type"],
                                           edges)
            for column, end in (("source", info["source_type"]), ("target", info["target_type"])):
                if end in graph.nodes:
                    check_ends(snap.path, etype, edges, column, end,
                               graph.nodes[end].table.column("id"))
    return graph
