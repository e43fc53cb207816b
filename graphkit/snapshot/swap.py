"""Putting a finished snapshot folder in place, safely: the atomic swap, the
lock writers take turns at, the refusal to replace folders graphkit did not
write, and the clean-up of what killed writers left (see :mod:`.write`)."""

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
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from graphkit.core.errors import first_line
from graphkit.core.files import open_regular, temp_prefix
from graphkit.snapshot.format import MANIFEST, MARKER, MAX_MANIFEST_BYTES, SnapshotError

# A hidden left-over of a writer on another host (whose pid cannot be asked)
# counts as abandoned after this long; a write takes seconds.
STALE_SECONDS = 3600.0
DIR_MODE = 0o700
FILE_MODE = 0o600
HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


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
    prefix = f"{temp_prefix(directory)}graphkit-{kind}-{HOST}-{os.getpid()}-"
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=directory.parent))
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
    """Relative paths of everything in ``directory``; symlinks are never followed."""
    for entry in os.scandir(directory):
        yield entry.name
        if entry.is_dir(follow_symlinks=False):
            yield from (f"{entry.name}/{n}" for n in walk(Path(entry.path)))


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

def leftovers(directory: Path) -> Iterator[tuple[Path, str, bool]]:
    """Hidden siblings of ``directory`` a graphkit writer made: (path, kind, abandoned)."""
    prefix = temp_prefix(directory)
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
            gone = not alive(pid) if host == HOST else older_than(entry, STALE_SECONDS)
            yield Path(entry.path), kind, gone
        # Older graphkits named their temp folders like mkdtemp does (.NAME.x1y2z3w4),
        # which a user's own hidden copy could match: those are never touched.


def clean_leftovers(directory: Path) -> None:
    for path, _kind, gone in leftovers(directory):
        if gone:
            shutil.rmtree(path, ignore_errors=True)


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


def alive(pid: int) -> bool:
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


def older_than(entry: os.DirEntry[str], seconds: float) -> bool:
    try:
        return time.time() - entry.stat(follow_symlinks=False).st_mtime > seconds
    except OSError:
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
