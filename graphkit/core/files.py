"""Writing one output file the way every command does: whole or not at all, through a
special file rather than over it, and a failed write (disk full, read-only) as one line.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from graphkit.core.errors import GraphkitError, first_line
from graphkit.core.text import is_text


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


@contextmanager
def output_file(path: Path | str, *, public: bool = False) -> Iterator[IO[bytes]]:
    """A binary file to write ``path`` through.

    A regular (or new) file is written to a temporary sibling renamed over it at the end,
    so a reader never sees half of it and a failure leaves the old one. A pipe, a terminal
    or a device (``/dev/stdout``, ``/dev/null``) is written through: renaming over it would
    replace the device node itself. ``public`` gives the file the umask's usual mode
    (a temporary file starts private). OS errors become :func:`write_error`.
    """
    path = Path(path)
    if path.is_dir():
        raise GraphkitError("the output path is a folder", path=str(path),
                            hint="give a file name, or - for stdout")
    if path.exists() and not path.is_file():
        try:
            with path.open("wb") as f:
                yield f
        except OSError as exc:
            raise write_error(exc, path) from None
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise write_error(exc, path) from None
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        if public:
            mask = os.umask(0)  # the only way to read the umask is to set it
            os.umask(mask)
            os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise write_error(exc, path) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
