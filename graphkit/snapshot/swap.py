"""Putting a finished snapshot folder in place, safely: the atomic swap, the
lock writers take turns at, the refusal to replace folders graphkit did not
write, and the clean-up of what killed writers left (see :mod:`.write`)."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from graphkit.core.errors import first_line
from graphkit.core.files import (
    HOST,
    STALE_SECONDS,
    alive,
    clean_leftovers,
    leftovers,
    older_than,
    open_regular,
    walk_folders,
    writer_prefix,
)
from graphkit.snapshot.format import MANIFEST, MARKER, MAX_MANIFEST_BYTES, SnapshotError

# Re-exported: the writers and tests know them here; they live in core.files, which
# every output's writer shares.
__all__ = ["HOST", "STALE_SECONDS", "alive", "clean_leftovers", "leftovers", "older_than"]

DIR_MODE = 0o700
FILE_MODE = 0o600


def write_file(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        os.write(fd, data)
        os.fchmod(fd, FILE_MODE)
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    with suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def make_dir(directory: Path, kind: str) -> Path:
    """A hidden sibling named so a later writer can tell whose it was and when."""
    tmp = Path(tempfile.mkdtemp(prefix=writer_prefix(directory, kind), dir=directory.parent))
    os.chmod(tmp, DIR_MODE)  # mkdtemp says 0700 but the umask can take bits away
    return tmp


def swap_into_place(tmp: Path, directory: Path) -> Path | None:
    """Put ``tmp`` at ``directory``; return where the old snapshot went (to delete)."""
    if not directory.exists():
        os.rename(tmp, directory)
        return None
    check_replaceable(directory)
    if exchange(tmp, directory):
        return tmp  # now holds the old snapshot, under a name with our pid
    # No atomic exchange here: old → trash, new → path. A kill between the two
    # leaves only the trash, which recover() renames back.
    trash = make_dir(directory, "old")
    os.rmdir(trash)
    os.rename(directory, trash)
    os.rename(tmp, directory)
    return trash


def exchange(a: Path, b: Path) -> bool:
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
def locked(parent: Path, *, shared: bool = False) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the parent folder: one swap at a time.
    ``shared``: hold it with other readers, keeping swaps out meanwhile."""
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
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def check_replaceable(directory: Path) -> None:
    """Refuse unless ``directory`` is empty or provably a snapshot graphkit wrote:
    its manifest carries graphkit's marker and the folder holds only the files
    that manifest lists."""
    try:
        entries = sorted(walk(directory))
    except OSError as exc:
        raise os_error(exc, directory) from None
    if not entries:
        return
    refuse = "refusing to replace a folder graphkit did not write"
    hint = "choose a new or empty folder, or a graphkit snapshot folder"
    try:
        raw = _head_of(directory / MANIFEST)
    except (OSError, ValueError):
        raise SnapshotError(f"{refuse} (no graphkit manifest.json)", path=str(directory),
                            hint=hint) from None
    if not looks_like_ours(raw):
        raise SnapshotError(f"{refuse} (its manifest.json is not graphkit's)",
                            path=str(directory), hint=hint)
    own = {MANIFEST, "nodes", "edges"}
    for part in ("nodes", "edges"):
        own |= {str(e.get("file")) for e in raw[part].values() if isinstance(e, dict)}
    foreign = [e for e in entries if e not in own]
    if foreign:
        raise SnapshotError(f"{refuse} (it holds {foreign[0]!r}, which is not graphkit's)",
                            path=str(directory), hint=hint)


# The manifest keys :func:`check_replaceable` looks at.
_HEAD = ("kind", "format", "nodes", "edges", "graphkit_version", "id_recipe", "contract")


_LAST_HEAD: list[Any] = []  # [the manifest's path and stat, its head]


def _head_of(path: Path) -> Any:
    """:func:`manifest_head` of the file at ``path``, parsed again only when its stat
    (device, inode, size, mtime, ctime) differs from the last one's: a build checks its
    target three times (before the build, before writing, at the swap), and the old
    manifest of a transcript build is 2.5 MB."""
    st = os.stat(path)
    key = [str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    if _LAST_HEAD and _LAST_HEAD[0] == key:
        return _LAST_HEAD[1]
    raw = manifest_head(read_limited(path))
    _LAST_HEAD[:] = [key, raw]
    return raw


def manifest_head(data: bytes) -> Any:
    """The manifest's top-level keys that tell whose it is (``_HEAD``), the others present
    but not parsed: the inputs list of a transcript build (one record per file, 2 MB for
    9k files) cost ~40 ms to ``json.loads``, and a build checks its target three times.
    Anything msgspec refuses (not an object, NaN) is parsed as ``json.loads`` would."""
    import msgspec  # a core dependency

    try:
        raw = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
        return {k: msgspec.json.decode(v) if k in _HEAD else None for k, v in raw.items()}
    except msgspec.DecodeError:
        return json.loads(data)


def walk(directory: Path) -> Iterator[str]:
    """Relative paths of everything in ``directory``; symlinks are never followed.
    Without recursion: a folder nested 1,500 deep in the target was a RecursionError."""
    for here, dirs, files in walk_folders(directory, onerror=_raise):
        rel = os.path.relpath(here, directory)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        for name in sorted(dirs + files):
            yield prefix + name


def _raise(exc: OSError) -> None:
    raise exc


def looks_like_ours(raw: Any) -> bool:
    if not isinstance(raw, dict) or not isinstance(raw.get("format"), int):
        return False
    if not all(isinstance(raw.get(k), dict) for k in ("nodes", "edges")):
        return False
    if raw.get("kind") == MARKER:
        return True
    # Format 1 had no marker: its fixed set of top-level keys stands in for one.
    return raw["format"] == 1 and {"graphkit_version", "id_recipe", "contract"} <= set(raw)


# --- left-overs of killed writers ------------------------------------------------
# (found and cleaned by graphkit.core.files, which every output's writer shares)


def tidy(directory: Path) -> None:
    """Put back a snapshot a writer killed mid-swap left aside, and delete what dead
    writers left beside ``directory`` (their temporary, spill and work folders). Every
    build runs it first, whatever it then decides: a killed build's folders survived
    every later rebuild that kept the snapshot."""
    try:
        with locked(directory.parent):
            recover(directory)
            clean_leftovers(directory)
    except OSError:
        pass  # a folder we cannot tidy is no reason to refuse the build


def recover(directory: Path) -> bool:
    """If a writer died between its two renames, put the old snapshot back."""
    if directory.exists() or directory.is_symlink():
        return False
    trash = [p for p, kind, gone in leftovers(directory)
             if kind == "old" and gone and (p / MANIFEST).is_file()]
    for p in sorted(trash, key=lambda q: q.stat().st_mtime, reverse=True):
        try:
            os.rename(p, directory)
            return True
        except OSError:
            continue
    return False


def os_error(exc: OSError, directory: Path) -> SnapshotError:
    where = exc.filename or directory
    # Arrow's I/O errors carry only text ("Error writing bytes to file. Detail: [errno
    # 28] No space left on device"), but their errno: said as the system says it.
    reason = os.strerror(exc.errno) if exc.errno else exc.strerror or first_line(exc)
    if isinstance(exc, NotADirectoryError):
        reason = "a part of the path is a file"
    hint = None
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        hint = "free some space or choose another place; an earlier snapshot there is kept"
    shown = "" if str(where) == str(directory) else f" ({where})"
    return SnapshotError(f"cannot write the snapshot: {reason}{shown}", path=str(directory),
                         hint=hint)


def read_limited(path: Path) -> bytes:
    # Not blocking, and only a regular file: a FIFO in a manifest's place made a build
    # over that folder wait for a writer forever (round eight).
    with os.fdopen(open_regular(path), "rb") as f:
        data = f.read(MAX_MANIFEST_BYTES + 1)
    if len(data) > MAX_MANIFEST_BYTES:
        raise ValueError("manifest too large")
    return data
