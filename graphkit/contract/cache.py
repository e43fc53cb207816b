"""A cache of checked contracts, so a build need not check its contract again.

Loading a contract fresh means YAML, pydantic and the model classes: ~0.3 CPU-s of
imports and schema building, paid by every ``graphkit build`` (and by every
transcript append, where it is a large part of the whole). The result of a
successful load is plain data, so it is kept as JSON, keyed by the SHA-256 of the
contract file's bytes, graphkit's version and the size/mtime of the modules that
decide what a contract means (a changed model or loader never reads an old entry).
A hit costs a hash and a small JSON read; the contract's path and every error
still come from the file itself (a contract that fails to load is never cached,
so its error is found and worded exactly as without the cache).

Where: ``$GRAPHKIT_CONTRACT_CACHE`` if set (``0`` or empty: no cache), else
``$GRAPHKIT_HOME/contracts``, else ``$XDG_CACHE_HOME/graphkit/contracts``, else
``~/.cache/graphkit/contracts``. Any entry that cannot be read, or disagrees with
itself, is ignored and written again; a folder that cannot be written only costs
the next build a fresh load. An entry's first line is the SHA-256 of its key and the
JSON after it: a damaged, hand-edited or renamed entry is never taken for a checked
contract (its spec is trusted as it stands, so it must be the one written), and only a
regular file of sane size is read (a pipe or ``/dev/zero`` put there would hang).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from graphkit.core.files import opened_regular

FORMAT = 2  # 2: a digest line first
# An entry is ~65 KB for the shipped contract; anything far larger is not one.
_MAX_BYTES = 16 << 20
# The modules whose code decides what a contract file means.
_MEANING = ("model.py", "spec.py", "loader.py", "expr.py", "cache.py")


def cache_dir() -> Path | None:
    """The folder of cached contracts, or None when caching is off."""
    env = os.environ
    if "GRAPHKIT_CONTRACT_CACHE" in env:
        given = env["GRAPHKIT_CONTRACT_CACHE"]
        return None if given in ("", "0") else Path(given)
    if env.get("GRAPHKIT_HOME"):
        return Path(env["GRAPHKIT_HOME"]) / "contracts"
    root = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "graphkit" / "contracts"


def entry_key(data: bytes) -> str:
    """The cache key of a contract file's bytes under this graphkit's code."""
    from graphkit._version import __version__

    here = Path(__file__).resolve().parent
    stamp = []
    for name in _MEANING:
        try:
            st = (here / name).stat()
            stamp.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            stamp.append(f"{name}:-")
    h = hashlib.sha256(f"graphkit-contract {FORMAT} {__version__} {' '.join(stamp)}\0"
                       .encode())
    h.update(data)
    return h.hexdigest()


def _digest(key: str, body: bytes) -> bytes:
    return hashlib.sha256(key.encode() + b"\n" + body).hexdigest().encode()


def _read_regular(path: Path) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of at most ``_MAX_BYTES``; else
    None, or OSError for what is no regular file (a FIFO, a device, a folder)."""
    fd, st = opened_regular(path)
    with os.fdopen(fd, "rb") as f:
        if st.st_size > _MAX_BYTES:
            return None
        return f.read(_MAX_BYTES + 1)


def read_entry(data: bytes) -> dict[str, Any] | None:
    """The cached entry for these contract bytes, or None (no cache, miss, unreadable)."""
    folder = cache_dir()
    if folder is None:
        return None
    key = entry_key(data)
    try:
        raw = _read_regular(folder / f"{key}.json")
        if raw is None:
            return None
        head, _, body = raw.partition(b"\n")
        if head != _digest(key, body):
            return None
        entry = json.loads(body)
    except (OSError, ValueError, RecursionError):
        return None
    return entry if isinstance(entry, dict) and entry.get("format") == FORMAT else None


def write_entry(data: bytes, entry: dict[str, Any]) -> None:
    """Keep ``entry`` for these bytes, if it reads back as itself (JSON-safe) and the
    folder can be written; otherwise nothing (the cache only saves time)."""
    folder = cache_dir()
    if folder is None:
        return
    entry = {"format": FORMAT, **entry}
    try:
        text = json.dumps(entry, ensure_ascii=False, allow_nan=False)
        # Values YAML can give but JSON cannot keep (dates, non-text keys) stay uncached.
        if json.loads(text) != entry:
            return
        key = entry_key(data)
        body = text.encode("utf-8")
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".contract-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_digest(key, body) + b"\n" + body)
            os.replace(tmp, folder / f"{key}.json")
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except (OSError, TypeError, ValueError):
        return
