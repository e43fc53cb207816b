"""The snapshot index: where the latest snapshot of each build lives.

A small JSON file in the user's data folder (``$GRAPHKIT_HOME/index.json``,
else ``$XDG_DATA_HOME/graphkit/index.json``, else
``~/.local/share/graphkit/index.json``) maps a build's key — its sorted
absolute source set, contract name and version, and granularity — to the
snapshot folder that build last wrote. ``graphkit build`` records every
snapshot it writes; ``sessions``, ``lineage``, ``tree`` and ``view`` given no
``--snapshot`` ask it for the latest snapshot of the user's own transcript
folders. Like seed 000's replay index: a rerun overwrites its slot rather than
appending, and every write replaces the whole file atomically::

    {"format": 1,
     "snapshots": {"<key>": {"snapshot": "/home/me/out/graph",
                             "sources": ["/home/me/.claude/projects"],
                             "contract": {"name": "ai-gateway-graph", "version": 1},
                             "granularity": "thread",
                             "built_at": "2026-11-24T09:00:00+00:00"}}}

A file that cannot be read as an index reads as empty, with
:attr:`SnapshotIndex.problem` saying why; the next write moves it aside to
``index.json.corrupt`` instead of losing it silently.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphkit.core.files import clean_leftovers, writer_prefix

if TYPE_CHECKING:  # only named: a kept rebuild records itself here without pyarrow
    from graphkit.core.graph import GraphTables

INDEX_ENV = "GRAPHKIT_HOME"
INDEX_FILE = "index.json"
INDEX_FORMAT = 1


def index_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the index lives, from ``env`` (default: the environment at call time).

    >>> index_path({"GRAPHKIT_HOME": "/tmp/gk"})
    PosixPath('/tmp/gk/index.json')
    >>> index_path({"XDG_DATA_HOME": "/x", "HOME": "/home/me"})
    PosixPath('/x/graphkit/index.json')
    >>> index_path({"HOME": "/home/me"})
    PosixPath('/home/me/.local/share/graphkit/index.json')
    """
    env = os.environ if env is None else env
    home = env.get(INDEX_ENV)
    if home:
        return Path(home).expanduser() / INDEX_FILE
    xdg = env.get("XDG_DATA_HOME")
    # The XDG spec says a relative XDG_DATA_HOME is invalid and must be ignored.
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else (
        Path(env.get("HOME") or Path.home()) / ".local" / "share")
    return base / "graphkit" / INDEX_FILE


def source_set(sources: Sequence[str | Path]) -> list[str]:
    """The sources as sorted, de-duplicated absolute paths (what a key is made of)."""
    return sorted({str(Path(s).expanduser().resolve()) for s in sources})


def index_key(sources: Sequence[str | Path], contract_name: str, contract_version: int,
              granularity: str) -> str:
    """The slot of one kind of build: a digest of its source set, contract and granularity.

    >>> index_key(["/b", "/a"], "c", 1, "thread") == index_key(["/a", "/b", "/a"], "c", 1,
    ...                                                          "thread")
    True
    """
    canon = json.dumps([source_set(sources), contract_name, int(contract_version),
                        granularity], separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:24]


@dataclass
class SnapshotIndex:
    """The index as read from disk: its entries by key, and what was wrong with
    the file if it could not be read (then it reads as empty)."""

    path: Path
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    reason: str | None = None  # why the file (or some entries) could not be read
    newer: bool = False  # written by a newer graphkit: read as empty, never overwritten
    rewritten: bool = False  # an unreadable file was moved aside and a new one written

    @property
    def problem(self) -> str | None:
        """One line for stderr saying what was wrong with the file, if anything."""
        if self.reason is None:
            return None
        if self.newer:
            return (f"{self.path}: {self.reason}; ignoring it (it is never overwritten) — "
                    "give --snapshot DIR")
        done = (f"started a new one, the old file kept as {self.path.name}.corrupt"
                if self.rewritten else "reading it as empty" if not self.entries
                else "using the rest")
        return f"{self.path}: unreadable snapshot index ({self.reason}); {done}"

    @classmethod
    def load(cls, path: Path | None = None) -> SnapshotIndex:
        """The index at ``path`` (default :func:`index_path`); missing reads as empty."""
        path = path or index_path()
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(path)
        except OSError as exc:
            return cls(path, reason=exc.strerror or str(exc))
        try:
            data = json.loads(text)
        except ValueError as exc:
            return cls(path, reason=f"not JSON: {exc}")
        if not isinstance(data, dict) or not isinstance(data.get("snapshots"), dict):
            return cls(path, reason='no "snapshots" object')
        fmt = data.get("format")
        if isinstance(fmt, int) and fmt > INDEX_FORMAT:
            return cls(path, newer=True, reason=(
                f"snapshot index format {fmt} was written by a newer graphkit "
                f"(this one reads {INDEX_FORMAT})"))
        entries = {k: v for k, v in data["snapshots"].items()
                   if isinstance(v, dict) and isinstance(v.get("snapshot"), str)
                   and isinstance(v.get("sources"), list)}
        bad = len(data["snapshots"]) - len(entries)
        reason = f"{bad} malformed entr{'y' if bad == 1 else 'ies'}" if bad else None
        return cls(path, entries, reason)

    def latest(self, sources: Sequence[str | Path]) -> dict[str, Any] | None:
        """The most recently built entry for exactly this source set, any contract
        or granularity (``None`` when no build of it was recorded)."""
        want = source_set(sources)
        found = [e for e in self.entries.values() if e.get("sources") == want]
        return max(found, key=lambda e: str(e.get("built_at", ""))) if found else None


def record_snapshot(snapshot_dir: Path, sources: Sequence[str | Path], contract_name: str,
                    contract_version: int, granularity: str, *,
                    path: Path | None = None) -> SnapshotIndex:
    """Point the slot of this build at ``snapshot_dir`` (a rerun overwrites its
    slot; a slot elsewhere naming the same folder is dropped, since the folder
    now holds this build) and write the index atomically. Returns the index
    as written, with ``problem`` set if the old file was unusable."""
    path = path or index_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path):
        idx = SnapshotIndex.load(path)
        if idx.newer:
            return idx
        if idx.reason and path.exists():
            os.replace(path, path.with_name(path.name + ".corrupt"))
            idx.rewritten = True
        folder = str(Path(snapshot_dir).expanduser().resolve())
        key = index_key(sources, contract_name, contract_version, granularity)
        idx.entries = {k: e for k, e in idx.entries.items() if e.get("snapshot") != folder}
        idx.entries[key] = {
            "snapshot": folder,
            "sources": source_set(sources),
            "contract": {"name": contract_name, "version": int(contract_version)},
            "granularity": granularity,
            "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        _write_atomically(path, {"format": INDEX_FORMAT, "snapshots": idx.entries})
    return idx


def remember_snapshot(snapshot_dir: Path, sources: Sequence[str | Path],
                      graph: GraphTables) -> dict[str, str]:
    """:func:`record_snapshot` for a build's graph, as summary fields: ``index``
    (the file written) and ``index_note`` (what was wrong, if anything).

    A build whose snapshot is written does not fail because the index cannot
    be: the note says what happened instead.
    """
    try:
        idx = record_snapshot(snapshot_dir, sources, graph.contract_name,
                              graph.contract_version, graph.granularity)
    except OSError as exc:
        return {"index_note": f"{index_path()}: could not record the snapshot in the index: "
                              f"{exc.strerror or exc}"}
    out = {"index": str(idx.path)}
    if idx.problem:
        out["index_note"] = idx.problem
    return out


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock beside the index, so two builds finishing at once
    do not each write the index without the other's slot."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: the atomic replace still holds
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write_atomically(path: Path, data: dict[str, Any]) -> None:
    clean_leftovers(path)  # a killed writer's temporary copy (named for its pid)
    fd, tmp = tempfile.mkstemp(prefix=writer_prefix(path), suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
