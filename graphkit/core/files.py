"""Writing one output file the way every command does: whole or not at all, through a
special file rather than over it, and a failed write (disk full, read-only) as one line.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import socket
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from graphkit.core.errors import GraphkitError, first_line, printable
from graphkit.core.text import is_text
from graphkit.core.transcript_kinds import kind_of_object


def write_error(exc: OSError, path: Path | str) -> GraphkitError:
    """An OS error while writing ``path`` (no space left, read-only, no permission) as a
    :class:`GraphkitError`; Arrow's own I/O errors carry no ``strerror``, only text."""
    reason = exc.strerror or first_line(exc)
    if isinstance(exc, PermissionError) or exc.errno == errno.EROFS:
        # "Free some space" sent a user whose folder was not theirs to the wrong fix.
        hint = "choose a place the user running graphkit may write to"
    elif exc.errno == errno.ENAMETOOLONG:
        hint = "choose a shorter name"
    else:
        hint = "free some space or choose a writable place"
    return GraphkitError(f"cannot write: {reason}", path=str(path), hint=hint)


_READ_FLAGS = (os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
               | getattr(os, "O_BINARY", 0))


def opened_regular(path: Path | str, dir_fd: int | None = None
                   ) -> tuple[int, os.stat_result]:
    """:func:`open_regular`'s descriptor and the open file's stat (one fstat serves the
    check and a caller that wants the size)."""
    fd = os.open(path, _READ_FLAGS, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if stat.S_ISREG(st.st_mode):
        # O_NONBLOCK is left on: it changes nothing in a regular file's reads.
        return fd, st
    os.close(fd)
    if stat.S_ISDIR(st.st_mode):  # as read() says of a folder
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    raise OSError(errno.EINVAL, "not a regular file", str(path))


def open_regular(path: Path | str, dir_fd: int | None = None) -> int:
    """A descriptor of ``path`` (relative to ``dir_fd`` if given) opened to read, if it
    is a regular file; else OSError "not a regular file" (IsADirectoryError for a
    folder). Opened without blocking: a FIFO put where a file belongs (a snapshot's
    manifest or table, a contract cache entry, a transcript, a price table) waited for
    a writer forever, and a link to a device such as ``/dev/zero`` never ended."""
    return opened_regular(path, dir_fd)[0]


# Temporary siblings are named after their file (".NAME.…", so a user sees whose they
# are, and the watch and left-over cleaning know them); past this many bytes the name is
# cut and a digest of the whole added, so a name the file system takes (255 bytes) still
# leaves room for the temporary name's own ~50.
_WHOLE_NAME_BYTES = 200


_ONE_READ = 0x7FFF0000  # Linux reads at most ~2 GiB in one call


def read_file(path: Path | str) -> tuple[os.stat_result, bytes]:
    """A file's stat (of the open file) and its bytes, by one open, one fstat and one
    read: half the CPU of ``stat`` + ``read_bytes`` over thousands of small transcripts.
    Raises OSError as ``open``/``read`` do, and for what is not a regular file."""
    fd, st = opened_regular(path)
    try:
        want = st.st_size + 1  # one byte more: a short read then means the end
        data = os.read(fd, want)
        if len(data) == want or want > _ONE_READ:
            chunks = [data]
            while chunks[-1]:  # grown since the fstat (or /proc's size 0): to the end
                chunks.append(os.read(fd, 1 << 20))
            data = b"".join(chunks)
    finally:
        os.close(fd)
    return st, data


def temp_prefix(path: Path | str) -> str:
    """The prefix of ``path``'s temporary siblings: ``.NAME.``, or for a name of more than
    200 bytes its first 180 and a digest (a 250-byte ``--snapshot`` or ``--out`` name
    was refused as "File name too long": the temporary name added ~45 bytes).

    >>> temp_prefix("out/graph"), len(temp_prefix("x" * 250))
    ('.graph.', 191)
    """
    name = os.path.basename(os.fspath(path).rstrip(os.sep)) or os.fspath(path)
    raw = os.fsencode(name)
    if len(raw) <= _WHOLE_NAME_BYTES:
        return f".{name}."
    cut = os.fsdecode(raw[:180].decode("utf-8", "ignore").encode())
    return f".{cut}~{hashlib.sha256(raw).hexdigest()[:8]}."


def own_outputs(paths: Sequence[Path | None]) -> Callable[[str], bool]:
    """A test of whether a path is one of ``paths``, inside one, or one's hidden or
    temporary sibling (``.NAME.…``, :func:`temp_prefix`): something graphkit writes
    itself, which a watch of the folder around it must not take for a change.

    >>> mine = own_outputs([Path("/t/out/graph")])
    >>> [mine(p) for p in ("/t/out/graph/nodes/x.parquet", "/t/out/.graph.cache/s",
    ...                    "/t/out/graphs.jsonl", "/t/out/.graph.graphkit-tmp-1/m")]
    [True, True, False, True]
    """
    outs = [os.path.abspath(p) for p in paths if p is not None]

    def mine(path: str) -> bool:
        for out in outs:
            if path == out or path.startswith(out + os.sep):
                return True
            parent, name = os.path.split(out)
            if path.startswith((os.path.join(parent, f".{name}."),
                                os.path.join(parent, temp_prefix(name)))):
                return True
        return False

    return mine


def name_max(folder: Path) -> int:
    """The longest file name (bytes) the file system under ``folder`` takes."""
    for up in (folder, *folder.parents):
        try:
            return int(os.pathconf(up, "PC_NAME_MAX"))
        except (OSError, ValueError):
            continue
    return 255


def check_name_fits(path: Path, what: str, hint: str) -> None:
    """Refuse, before any work, a file graphkit will write whose name is longer than
    the file system takes: named after the snapshot (``NAME.rejects.jsonl``,
    ``.NAME.cache``), such a file failed only when first written, perhaps the day a
    row was first rejected, after a whole build."""
    size = len(os.fsencode(path.name))
    most = name_max(path.parent)
    if size > most:
        raise GraphkitError(f"the {what}'s name is too long ({size} bytes, more than "
                            f"the {most} a file name may have here)", path=str(path),
                            hint=hint)


def utf8_path(path: Path | str, what: str) -> None:
    """Refuse a path named in bytes that are not UTF-8 (Python holds them as lone
    surrogates): Arrow's file system takes only UTF-8 paths, and a snapshot or a folder
    export so named failed half-way with a traceback naming its temporary folder."""
    if not is_text(str(path)):
        raise GraphkitError(f"the {what} path is not valid UTF-8 (bytes of another "
                            "encoding)", path=os.fsencode(path).decode("utf-8", "replace"),
                            hint="choose a name in UTF-8")


# --- left-overs of killed writers --------------------------------------------------
#
# Every temporary sibling a graphkit writer makes is named ``.NAME.graphkit-KIND-HOST-PID-…``
# so that the next run at that path can tell one whose writer is dead (its pid gone, on
# this host; on another, untouched for an hour) from one a live writer still fills, and
# delete it, whatever that run then decides (refuse, keep, or write).

# A hidden left-over of a writer on another host (whose pid cannot be asked)
# counts as abandoned after this long; a write takes seconds.
STALE_SECONDS = 3600.0
HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def writer_prefix(path: Path | str, kind: str = "tmp") -> str:
    """The name prefix of this process's temporary siblings of ``path``.

    >>> writer_prefix("out/g.html").startswith(".g.html.graphkit-tmp-")
    True
    """
    return f"{temp_prefix(path)}graphkit-{kind}-{HOST}-{os.getpid()}-"


def leftovers(path: Path) -> Iterator[tuple[Path, str, bool]]:
    """Hidden siblings of ``path`` a graphkit writer made (files or folders):
    (their path, their kind, whether their writer is gone)."""
    prefix = temp_prefix(path)
    mine = re.compile(re.escape(prefix)
                      + r"graphkit-(tmp|old)-([0-9a-f]{8})-(\d+)-\w+(?:\.tmp)?")
    try:
        siblings = list(os.scandir(path.parent))
    except OSError:
        return
    for entry in siblings:
        if not entry.name.startswith(prefix):
            continue
        m = mine.fullmatch(entry.name)
        if m:
            kind, host, pid = m.group(1), m.group(2), int(m.group(3))
            gone = not alive(pid) if host == HOST else older_than(entry, STALE_SECONDS)
            yield Path(entry.path), kind, gone
        # Older graphkits named their temp files like mkstemp does (.NAME.x1y2z3w4.tmp),
        # which a user's own hidden copy could match: those are never touched.


def clean_leftovers(path: Path, kinds: Sequence[str] = ("tmp", "old")) -> None:
    """Delete what dead graphkit writers left beside ``path`` (of the given kinds)."""
    for found, kind, gone in leftovers(path):
        if gone and kind in kinds:
            if found.is_dir() and not found.is_symlink():
                shutil.rmtree(found, ignore_errors=True)
            else:
                with suppress(OSError):
                    found.unlink()


def work_folder(path: Path) -> Path:
    """A new private folder beside ``path``, named as its writer's (a build's spill or
    work folder, a parse's hand-over folder), after deleting those that dead writers
    left there: a killed build's folders no longer outlive every later run.

    >>> import tempfile
    >>> d = work_folder(Path(tempfile.mkdtemp()) / "graph")
    >>> d.name.startswith(".graph.graphkit-tmp-"), oct(d.stat().st_mode & 0o777)
    (True, '0o700')
    """
    clean_leftovers(path)
    folder = Path(tempfile.mkdtemp(prefix=writer_prefix(path), dir=path.parent))
    os.chmod(folder, 0o700)  # mkdtemp says 0700 but the umask can take bits away
    return folder


@contextmanager
def temporary_folder(path: Path) -> Iterator[Path]:
    """:func:`work_folder` of ``path``, deleted at the end whatever happens."""
    folder = work_folder(path)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie has exited: it does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    with suppress(OSError):
        stat_line = Path(f"/proc/{pid}/stat").read_text()
        return stat_line.rsplit(")", 1)[1].split()[0] != "Z"
    return True


def older_than(entry: os.DirEntry[str], seconds: float) -> bool:
    try:
        return time.time() - entry.stat(follow_symlinks=False).st_mtime > seconds
    except OSError:
        return False


# --- walking folders ---------------------------------------------------------------

def walk_folders(top: Path | str, onerror: Callable[[OSError], None] | None = None
                 ) -> Iterator[tuple[str, list[str], list[str]]]:
    """What ``os.walk(top, onerror=onerror)`` yields, top-down and in the same order
    (a caller may sort or prune ``dirnames`` in place), links to folders listed but not
    entered; without recursion: Python 3.11's ``os.walk`` calls itself once per level,
    and a folder tree 1,500 levels deep ended in a RecursionError traceback.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "a" / "b").mkdir(parents=True)
    >>> [(os.path.relpath(d, root), dirs) for d, dirs, _ in walk_folders(root)]
    [('.', ['a']), ('a', ['b']), ('a/b', [])]
    """
    stack = [os.fspath(top)]
    while stack:
        here = stack.pop()
        try:
            with os.scandir(here) as listing:
                entries = list(listing)
        except OSError as exc:
            if onerror is not None:
                onerror(exc)
            continue
        dirnames: list[str] = []
        filenames: list[str] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirnames if is_dir else filenames).append(entry.name)
        yield here, dirnames, filenames
        for name in reversed(dirnames):
            path = os.path.join(here, name)
            if not os.path.islink(path):
                stack.append(path)


# --- what an output may not replace -------------------------------------------------

# What a reader of row files or transcripts takes from a folder: an output that would
# replace such a file inside a source folder replaces a source.
READ_SUFFIXES = frozenset({".parquet", ".pq", ".arrow", ".feather", ".ipc", ".jsonl",
                           ".ndjson", ".json", ".zst"})
# A file graphkit writes beside a snapshot (it may be in a source folder: a snapshot
# built into its own source folder), and the first line's keys that make it graphkit's.
_SIDE_FILES = (".rejects.jsonl", ".skipped.jsonl")
# How much of an existing file is read to tell whether it is a transcript: the first
# line nearly always says, and a file without newlines is never read whole.
_HEAD_BYTES = 256 << 10
_HEAD_LINES = 20


def _head(path: Path) -> bytes:
    try:
        with os.fdopen(open_regular(path), "rb") as f:
            return f.read(_HEAD_BYTES)
    except OSError:
        return b""


def transcript_head_kind(head: bytes) -> str | None:
    """"claude" or "codex" if the first lines of ``head`` say so (bounded: at most
    ``_HEAD_LINES`` lines of what was read), else None.

    >>> transcript_head_kind(b'{"type": "user", "sessionId": "s"}\\n')
    'claude'
    >>> transcript_head_kind(b'<html>') is None
    True
    """
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    try:
        # A UTF-16/32 file (json.loads would detect it): its lines as text.
        text = head.decode(json.detect_encoding(head), "ignore")
    except (LookupError, ValueError):
        return None
    lines = text.lstrip("\ufeff").splitlines()
    for line in lines[:_HEAD_LINES]:
        if not line.strip():
            continue
        try:
            kind = kind_of_object(json.loads(line))
        except (ValueError, RecursionError):
            continue
        if kind is not None:
            return kind
    if len(lines) == 1:  # a one-document .json export, read whole if it fits
        try:
            return kind_of_object(json.loads(text))
        except (ValueError, RecursionError):
            return None
    return None


def snapshot_folder(folder: Path) -> bool:
    """Whether ``folder`` is laid out as a graphkit snapshot (a manifest, nodes, edges)."""
    return ((folder / "manifest.json").is_file() and (folder / "nodes").is_dir()
            and (folder / "edges").is_dir())


def snapshot_around(path: Path) -> Path | None:
    """The snapshot folder ``path`` is, or lies in (a table lies two levels down), if
    any: nothing but graphkit's writer may put a file there. Links are followed."""
    path = Path(os.path.realpath(path))
    for up in (path, path.parent, path.parent.parent):
        if up.is_dir() and snapshot_folder(up):
            return up
    return None


def _graphkit_side_file(path: Path) -> bool:
    """A rejects or skipped-lines file graphkit wrote (its first line says so)."""
    if not path.name.endswith(_SIDE_FILES):
        return False
    line = _head(path).split(b"\n", 1)[0]
    if not line.strip():
        return True  # empty: as the rejects writer counts it, graphkit's to replace
    try:
        first = json.loads(line or b"null")
    except (ValueError, RecursionError):
        return False
    return isinstance(first, dict) and "reason" in first and (
        {"source", "row"} <= first.keys() or {"path", "line"} <= first.keys())


def _under(path: str, folder: str) -> bool:
    return path != folder and path.startswith(folder.rstrip(os.sep) + os.sep)


def check_output(path: Path | str, *, sources: Sequence[Path | str] = (),
                 what: str = "output") -> Path:
    """Where an output named ``path`` is written, or a one-line :class:`GraphkitError`
    naming both the output and what it would destroy.

    A symbolic link stands for its target (as a ``--snapshot`` link does): the target is
    written, atomically, and the link is kept. Refused, whether the path names them or
    a link leads to them: one of the ``sources`` being read (or a file a source folder's
    reader takes), a Claude Code or Codex transcript, and a file or folder inside a
    graphkit snapshot (the snapshot would no longer verify, or no longer be replaceable).
    Special files (a pipe, ``/dev/stdout``) are returned as given: they are written
    through.
    """
    given = Path(path)
    shown = printable(str(given))
    if _special(given):
        return given
    target = Path(os.path.realpath(given))
    if target.is_symlink():  # realpath stops where links loop
        raise GraphkitError("is a symbolic link that loops", path=shown,
                            hint="remove the link or point it at a file")
    via = "" if target == given.absolute() else f" (a link to {printable(str(target))})"
    clean_leftovers(target)  # what a killed writer left, whatever this run decides
    up = snapshot_around(target)
    if up is not None:
        inner = "is" if up == target else "is inside"
        raise GraphkitError(
            f"refusing to write the {what} into a snapshot: it{via} {inner} the "
            f"snapshot {printable(str(up))}", path=shown,
            hint=f"give the {what} a path outside the snapshot folder")
    real = str(target)
    for source in sources:
        src = os.path.realpath(source)
        same = real == src
        if not same and target.exists():
            with suppress(OSError):
                same = os.path.samefile(real, src)
        inside = (not same and os.path.isdir(src) and _under(real, src)
                  and target.is_file() and target.suffix.lower() in READ_SUFFIXES
                  and not target.name.startswith((".", "_"))
                  and not _graphkit_side_file(target))
        if same or inside:
            whose = "is" if same else "is a file of"
            raise GraphkitError(
                f"refusing to write the {what} over a source: it{via} {whose} the source "
                f"{printable(str(source))}", path=shown,
                hint=f"give the {what} another path")
    if target.is_file():
        kind = transcript_head_kind(_head(target))
        if kind is not None:
            app = "Claude Code" if kind == "claude" else "Codex"
            raise GraphkitError(f"refusing to write the {what} over a {app} transcript{via}",
                                path=shown, hint=f"give the {what} another path")
    return target


def _special(path: Path) -> bool:
    """A pipe, a terminal or a device (``/dev/stdout``, ``/dev/null``): written through,
    never replaced (renaming over it would replace the device node itself). A path under
    /dev or /proc is one too: ``/dev/stdout`` redirected to a file leads there."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode)) or \
        str(path.absolute()).startswith(("/dev/", "/proc/"))


@contextmanager
def output_file(path: Path | str, *, public: bool = False, private: bool = False,
                sources: Sequence[Path | str] = (), what: str = "output"
                ) -> Iterator[IO[bytes]]:
    """A binary file to write ``path`` through.

    :func:`check_output` first: a source, a transcript or a snapshot's file is refused,
    and a symbolic link stands for its target. A regular (or new) file is written to a
    temporary sibling renamed over it at the end, so a reader never sees half of it and
    a failure leaves the old one; what a killed writer left there before is deleted
    first. A pipe, a terminal or a device is written through. ``public`` gives the file
    the umask's usual mode, ``private`` 0600 (content, like a snapshot's files); a
    temporary file starts private. OS errors become :func:`write_error`.
    """
    path = Path(path)
    if path.is_dir():
        raise GraphkitError("the output path is a folder", path=str(path),
                            hint="give a file name, or - for stdout")
    target = check_output(path, sources=sources, what=what)
    if _special(target):
        try:
            with target.open("wb") as f:
                yield f
        except OSError as exc:
            raise write_error(exc, path) from None
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=writer_prefix(target), suffix=".tmp",
                                   dir=target.parent)
    except OSError as exc:
        raise write_error(exc, path) from None
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        if public and not private:
            mask = os.umask(0)  # the only way to read the umask is to set it
            os.umask(mask)
            os.chmod(tmp, 0o666 & ~mask)
        else:
            os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise write_error(exc, path) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
