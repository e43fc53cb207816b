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
  parent folder); the last one wins, each result is whole.
* **Left-overs of killed writers** (hidden ``.NAME.graphkit-tmp-…`` folders)
  are removed by the next write to the same path: at once if the writer's
  process is gone, after an hour if it ran on another host.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import graphkit
from graphkit.core.errors import GraphkitError
from graphkit.core.graph import EdgeTable, GraphTables, LineageVocabulary, NodeTable
from graphkit.core.ids import NODE_ID_RECIPE
from graphkit.core.names import is_name

MANIFEST = "manifest.json"
# 2: a `kind` marker and per-table bytes + sha256. Format 1 (no checksums) is
# still read; anything newer is refused with its number.
FORMAT_VERSION = 2
# Rows per Parquet row group of a snapshot table. Fixed (not Parquet's 1 Mi
# default) so a writer that streams a table (graphkit.engine) holds at most
# this many rows of it and still writes the same bytes as a whole-table write.
ROW_GROUP_ROWS = 128 * 1024
OLDEST_FORMAT = 1
MARKER = "graphkit-snapshot"
# A hidden left-over of a writer on another host (whose pid cannot be asked)
# counts as abandoned after this long; a write takes seconds.
STALE_SECONDS = 3600.0
MAX_MANIFEST_BYTES = 64 << 20
# Reads retried when a writer replaced the snapshot under them (each retry
# reads the new one; only a writer replacing it faster than a read gives up).
_ATTEMPTS = 20
_DIR_MODE = 0o700
_FILE_MODE = 0o600
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


class SnapshotError(GraphkitError):
    """A snapshot folder is missing, incomplete or from an incompatible graphkit."""


# --- writing --------------------------------------------------------------------


def write_snapshot(
    graph: GraphTables,
    directory: Path,
    *,
    inputs: Iterable[dict[str, Any]] = (),
    summary: dict[str, Any] | None = None,
    include_content: bool = False,
) -> dict[str, Any]:
    """Write ``graph`` to ``directory`` atomically and return the manifest.

    Properties the contract computes from message content are left out unless
    ``include_content`` is set. Refuses (:class:`SnapshotError`, nothing
    touched) a target that is a file, lies under a file, cannot be written, or
    is a folder graphkit did not write.
    """
    for name in [*graph.nodes, *graph.edges]:
        if not is_name(name):  # it becomes a file name
            raise SnapshotError(f"refusing to write a table named {name!r}",
                                path=str(directory))
    directory, tmp = start_snapshot(directory)
    try:
        manifest = _write_tables(graph, tmp, include_content)
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
    (:mod:`graphkit.engine`) use these three; :func:`write_snapshot` does too."""
    path = check_snapshot_target(directory)
    try:
        tmp = _make_dir(path, "tmp")
        for sub in ("nodes", "edges"):
            (tmp / sub).mkdir()
            os.chmod(tmp / sub, _DIR_MODE)  # mkdir's mode is cut by the umask
    except OSError as exc:
        raise _os_error(exc, path) from None
    return path, tmp


def commit_snapshot(tmp: Path, directory: Path, manifest: dict[str, Any]) -> None:
    """Write ``manifest`` into ``tmp`` and swap ``tmp`` into place at ``directory``
    (replacing an older graphkit snapshot there, never anything else)."""
    try:
        _write_file(tmp / MANIFEST,
                    (json.dumps(manifest, indent=2, sort_keys=False) + "\n").encode())
        _fsync_dir(tmp)
        with _locked(directory.parent):
            _recover(directory)
            _clean_leftovers(directory)
            old = _swap_into_place(tmp, directory)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except OSError as exc:
        raise _os_error(exc, directory) from None


def manifest_for(*, contract: str, contract_version: int, granularity: str,
                 lineage: dict[str, Any] | None, include_content: bool,
                 nodes: dict[str, Any], edges: dict[str, Any]) -> dict[str, Any]:
    """A manifest's fixed part for tables already written (``nodes``/``edges``:
    type -> :func:`table_entry` plus key/index or end types)."""
    return {
        "kind": MARKER,
        "format": FORMAT_VERSION,
        "graphkit_version": graphkit.__version__,
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


def check_snapshot_target(directory: Path | str) -> Path:
    """``directory`` as a path a snapshot may be written to, or a one-line
    :class:`SnapshotError` naming what is in the way. Cheap: call it before a
    long build. A symlink to a folder stands for that folder."""
    path = Path(directory)
    if path.is_symlink():
        if not path.is_dir():
            raise SnapshotError("is a symlink to something that is not a folder",
                                path=str(path), hint="give a folder path for the snapshot")
        path = path.resolve()
    if path.exists():
        if not path.is_dir():
            raise SnapshotError("exists and is not a folder", path=str(path),
                                hint="give a new or graphkit snapshot folder for --snapshot")
        _check_replaceable(path)
    else:
        for up in path.parents:
            if up.exists() or up.is_symlink():
                if not up.is_dir():
                    raise SnapshotError(f"cannot write a snapshot under {up}: it is a file",
                                        path=str(path))
                break
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Try it: permission bits do not tell (root, read-only mounts, /sys).
        os.rmdir(tempfile.mkdtemp(prefix=f".{path.name}.graphkit-probe-", dir=path.parent))
    except OSError as exc:
        raise _os_error(exc, path) from None
    return path


def _write_tables(graph: GraphTables, tmp: Path, include_content: bool) -> dict[str, Any]:
    """Write every table into ``tmp``; the manifest without inputs and summary."""
    content = graph.meta.get("content_properties", {})
    jobs: list[tuple[pa.Table, str]] = []
    for ntype, nt in sorted(graph.nodes.items()):
        drop = [] if include_content else [c for c in content.get(ntype, [])
                                           if c in nt.table.column_names]
        jobs.append((nt.table.drop_columns(drop), f"nodes/{ntype}.parquet"))
    jobs += [(et.table, f"edges/{etype}.parquet") for etype, et in sorted(graph.edges.items())]
    # Parquet encoding runs in Arrow without the GIL: two files at a time,
    # largest first, so the biggest table does not start last.
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i][0].nbytes)
    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        done = dict(zip(order, pool.map(lambda i: _write_table(jobs[i][0], tmp, jobs[i][1]),
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


def _write_table(table: pa.Table, tmp: Path, rel: str) -> dict[str, Any]:
    pq.write_table(table, tmp / rel, row_group_size=ROW_GROUP_ROWS)
    return table_entry(tmp, rel, table.num_rows)


def table_entry(tmp: Path, rel: str, rows: int) -> dict[str, Any]:
    """Seal a table file written at ``tmp/rel`` (mode, fsync) and return its
    manifest entry: file, row count, bytes and SHA-256."""
    path = tmp / rel
    # Hash what is on disk (in the page cache now): that is what a reader checks.
    with path.open("rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
        os.fchmod(f.fileno(), _FILE_MODE)
        os.fsync(f.fileno())  # the old snapshot is deleted after the swap: this must be on disk
        size = os.fstat(f.fileno()).st_size
    return {"file": rel, "count": rows, "bytes": size, "sha256": digest}


def _write_file(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _FILE_MODE)
    try:
        os.write(fd, data)
        os.fchmod(fd, _FILE_MODE)
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    with suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _make_dir(directory: Path, kind: str) -> Path:
    """A hidden sibling named so a later writer can tell whose it was and when."""
    prefix = f".{directory.name}.graphkit-{kind}-{_HOST}-{os.getpid()}-"
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=directory.parent))
    os.chmod(tmp, _DIR_MODE)  # mkdtemp says 0700 but the umask can take bits away
    return tmp


def _swap_into_place(tmp: Path, directory: Path) -> Path | None:
    """Put ``tmp`` at ``directory``; return where the old snapshot went (to delete)."""
    if not directory.exists():
        os.rename(tmp, directory)
        return None
    _check_replaceable(directory)
    if _exchange(tmp, directory):
        return tmp  # now holds the old snapshot, under a name with our pid
    # No atomic exchange here: old → trash, new → path. A kill between the two
    # leaves only the trash, which _recover() renames back.
    trash = _make_dir(directory, "old")
    os.rmdir(trash)
    os.rename(directory, trash)
    os.rename(tmp, directory)
    return trash


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux ``renameat2``); False where unsupported."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError, ImportError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV):
        return False  # a file system without RENAME_EXCHANGE
    raise OSError(code, os.strerror(code), str(b))


@contextmanager
def _locked(parent: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the parent folder: one swap at a time."""
    try:
        import fcntl
    except ImportError:  # not POSIX: swaps are not serialised
        yield
        return
    try:
        fd = os.open(parent, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _check_replaceable(directory: Path) -> None:
    """Refuse unless ``directory`` is empty or provably a snapshot graphkit wrote:
    its manifest carries graphkit's marker and the folder holds only the files
    that manifest lists."""
    try:
        entries = sorted(_walk(directory))
    except OSError as exc:
        raise _os_error(exc, directory) from None
    if not entries:
        return
    refuse = "refusing to replace a folder graphkit did not write"
    hint = "choose a new or empty folder, or a graphkit snapshot folder"
    try:
        raw = json.loads(_read_limited(directory / MANIFEST))
    except (OSError, ValueError):
        raise SnapshotError(f"{refuse} (no graphkit manifest.json)", path=str(directory),
                            hint=hint) from None
    if not _looks_like_ours(raw):
        raise SnapshotError(f"{refuse} (its manifest.json is not graphkit's)",
                            path=str(directory), hint=hint)
    own = {MANIFEST, "nodes", "edges"}
    for part in ("nodes", "edges"):
        own |= {str(e.get("file")) for e in raw[part].values() if isinstance(e, dict)}
    foreign = [e for e in entries if e not in own]
    if foreign:
        raise SnapshotError(f"{refuse} (it holds {foreign[0]!r}, which is not graphkit's)",
                            path=str(directory), hint=hint)


def _walk(directory: Path) -> Iterator[str]:
    """Relative paths of everything in ``directory``; symlinks are never followed."""
    for entry in os.scandir(directory):
        yield entry.name
        if entry.is_dir(follow_symlinks=False):
            yield from (f"{entry.name}/{n}" for n in _walk(Path(entry.path)))


def _looks_like_ours(raw: Any) -> bool:
    if not isinstance(raw, dict) or not isinstance(raw.get("format"), int):
        return False
    if not all(isinstance(raw.get(k), dict) for k in ("nodes", "edges")):
        return False
    if raw.get("kind") == MARKER:
        return True
    # Format 1 had no marker: its fixed set of top-level keys stands in for one.
    return raw["format"] == 1 and {"graphkit_version", "id_recipe", "contract"} <= set(raw)


# --- left-overs of killed writers ------------------------------------------------

def _leftovers(directory: Path) -> Iterator[tuple[Path, str, bool]]:
    """Hidden siblings of ``directory`` a graphkit writer made: (path, kind, abandoned)."""
    prefix = f".{directory.name}."
    mine = re.compile(re.escape(prefix) + r"graphkit-(tmp|old)-([0-9a-f]{8})-(\d+)-\w+")
    try:
        siblings = list(os.scandir(directory.parent))
    except OSError:
        return
    for entry in siblings:
        if not entry.name.startswith(prefix) or not entry.is_dir(follow_symlinks=False):
            continue
        m = mine.fullmatch(entry.name)
        if m:
            kind, host, pid = m.group(1), m.group(2), int(m.group(3))
            gone = not _alive(pid) if host == _HOST else _older_than(entry, STALE_SECONDS)
            yield Path(entry.path), kind, gone
        # Older graphkits named their temp folders like mkdtemp does (.NAME.x1y2z3w4),
        # which a user's own hidden copy could match: those are never touched.


def _clean_leftovers(directory: Path) -> None:
    for path, _kind, gone in _leftovers(directory):
        if gone:
            shutil.rmtree(path, ignore_errors=True)


def _recover(directory: Path) -> bool:
    """If a writer died between its two renames, put the old snapshot back."""
    if directory.exists() or directory.is_symlink():
        return False
    trash = [p for p, kind, gone in _leftovers(directory)
             if kind == "old" and gone and (p / MANIFEST).is_file()]
    for p in sorted(trash, key=lambda q: q.stat().st_mtime, reverse=True):
        try:
            os.rename(p, directory)
            return True
        except OSError:
            continue
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    with suppress(OSError):  # a zombie has exited: its folder is abandoned
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True


def _older_than(entry: os.DirEntry[str], seconds: float) -> bool:
    try:
        return time.time() - entry.stat(follow_symlinks=False).st_mtime > seconds
    except OSError:
        return False


def _os_error(exc: OSError, directory: Path) -> SnapshotError:
    where = exc.filename or directory
    reason = exc.strerror or type(exc).__name__
    if isinstance(exc, NotADirectoryError):
        reason = "a part of the path is a file"
    return SnapshotError(f"cannot write the snapshot: {reason} ({where})", path=str(directory))


# --- reading --------------------------------------------------------------------


class _Opened:
    """A snapshot folder held open by descriptor: a writer swapping a new
    snapshot in while we read cannot mix its files with ours."""

    def __init__(self, directory: Path) -> None:
        self.path = directory
        try:
            self.fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except FileNotFoundError:
            with _locked(directory.parent):
                _recover(directory)
            try:
                self.fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            except OSError:
                raise _not_a_snapshot(directory) from None
        except OSError as exc:
            raise SnapshotError(f"cannot open the snapshot: {exc.strerror}",
                                path=str(directory)) from None

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

    def read(self, rel: str, limit: int | None = None) -> bytes:
        fd = os.open(rel, os.O_RDONLY, dir_fd=self.fd)
        with os.fdopen(fd, "rb") as f:
            return f.read() if limit is None else f.read(limit + 1)

    def read_buffer(self, rel: str) -> pa.Buffer:
        """The whole file in one Arrow buffer: hashed, then decoded, never copied."""
        fd = os.open(rel, os.O_RDONLY, dir_fd=self.fd)
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


@contextmanager
def _open(directory: Path) -> Iterator[tuple[_Opened, dict[str, Any]]]:
    """The opened folder and its checked manifest, retried if a writer replaced
    the snapshot while we read."""
    for attempt in range(_ATTEMPTS):
        snap = _Opened(directory)
        try:
            try:
                manifest = _load_manifest(snap)
            except SnapshotError:
                if attempt < _ATTEMPTS - 1 and snap.replaced():
                    continue
                raise
            yield snap, manifest
            return
        finally:
            snap.close()


def _load_manifest(snap: _Opened) -> dict[str, Any]:
    where = str(snap.path / MANIFEST)
    try:
        data = snap.read(MANIFEST, MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        raise _not_a_snapshot(snap.path) from None
    except OSError as exc:
        raise SnapshotError(f"unreadable manifest: {exc.strerror}", path=where) from None
    if len(data) > MAX_MANIFEST_BYTES:
        raise SnapshotError("manifest larger than 64 MiB: not one graphkit wrote", path=where)
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, RecursionError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SnapshotError(f"malformed manifest ({reason})", path=where,
                            hint="rebuild the snapshot") from None
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
            hint=f"this graphkit {graphkit.__version__} reads formats {OLDEST_FORMAT} to "
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
                raise _damaged(snap.path, rel, f"cannot be read ({exc.strerror})") from None
            if "bytes" in entry and size != entry["bytes"]:
                raise _damaged(snap.path, rel, f"has {size} bytes, the manifest says "
                                               f"{entry['bytes']} (truncated or changed)")


def _damaged(directory: Path, rel: str, what: str) -> SnapshotError:
    return SnapshotError(f"snapshot file {what}", path=str(directory / rel),
                         hint="the snapshot was changed after graphkit wrote it; rebuild it")


def _read_verified(snap: _Opened, entry: dict[str, Any],
                   columns: Iterable[str] | None = None) -> pa.Table:
    """One table, after checking its bytes against the manifest's sha256 (a
    single read: the bytes hashed are the bytes decoded)."""
    rel = entry["file"]
    try:
        data = snap.read_buffer(rel)
    except OSError as exc:
        raise _damaged(snap.path, rel, "is missing" if isinstance(exc, FileNotFoundError)
                       else f"cannot be read ({exc.strerror})") from None
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
    return table


def _read_limited(path: Path) -> bytes:
    with path.open("rb") as f:
        data = f.read(MAX_MANIFEST_BYTES + 1)
    if len(data) > MAX_MANIFEST_BYTES:
        raise ValueError("manifest too large")
    return data


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
    with _open(Path(directory)) as (_snap, manifest):
        return manifest


def read_table(directory: Path, entry: dict[str, Any],
               columns: Iterable[str] | None = None) -> pa.Table:
    """One table of a snapshot, checked against its manifest ``entry`` (from
    :func:`read_manifest`): size, sha256, row count. ``columns`` the file does
    not have are left out (the caller fills them in).

    If the snapshot was replaced since its manifest was read, says so.
    """
    directory = Path(directory)
    with _open(directory) as (snap, manifest):
        part = "nodes" if str(entry.get("file", "")).startswith("nodes/") else "edges"
        name = str(entry.get("file", "")).split("/")[-1].removesuffix(".parquet")
        current = manifest[part].get(name)
        if current is None or current.get("sha256") != entry.get("sha256"):
            raise SnapshotError("the snapshot was replaced while it was being read",
                                path=str(directory), hint="run the command again")
        return _read_verified(snap, current, columns)


def read_snapshot(
    directory: Path,
    *,
    node_types: Iterable[str] | None = None,
    edge_types: Iterable[str] | None = None,
) -> GraphTables:
    """Read a snapshot (or only some of its node and edge types) into tables,
    each checked against the manifest (see :func:`read_table`)."""
    directory = Path(directory)
    for attempt in range(_ATTEMPTS):
        with _open(directory) as (snap, m):
            try:
                return _tables(snap, m, node_types, edge_types)
            except SnapshotError:
                if attempt < _ATTEMPTS - 1 and snap.replaced():
                    continue  # a writer swapped a new snapshot in: read that one
                raise
    raise SnapshotError("the snapshot kept changing while it was read", path=str(directory),
                        hint="run the command again")


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
    wanted_n = set(node_types) if node_types is not None else set(m["nodes"])
    wanted_e = set(edge_types) if edge_types is not None else set(m["edges"])
    for ntype, info in m["nodes"].items():
        if ntype in wanted_n:
            graph.nodes[ntype] = NodeTable(ntype, tuple(info["key"]), _read_verified(snap, info))
    for etype, info in m["edges"].items():
        if etype in wanted_e:
            graph.edges[etype] = EdgeTable(etype, info["source_type"], info["target_type"],
                                           _read_verified(snap, info))
    return graph
