"""What a spliced transcript build keeps between builds (:mod:`graphkit.builds.incremental.splice`).

``cache_dir/graph`` holds the state (``graph-state.json.zst``: the roots, the walk of
every file's stat, the transcript files listed from it with each one's group, and each
group's partial-graph file) and the key table (``graph-keys.arrow``: a 64-bit hash of every
link key and its group). A state that is unreadable, of another format or parser version,
or of a shape this code did not write, is not used: the build starts over, and says why.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

from graphkit.builds.incremental.merged import json_bytes, json_value, zstd_pack, zstd_unpack
from graphkit.builds.uptodate import packed_inputs, stat_bytes

BUCKETS = 16
FORMAT = 8  # 6: a hot group; 7: zstd accounts and state; 8: the walk as arrays
_STATE = "graph-state.json.zst"
_KEYS = "graph-keys.arrow"
HOT = BUCKETS  # the group of recently changed sessions (no key hashes to it)


def parser_version() -> int:
    """The parser version, as the transcript cache reads it (one place to bump)."""
    from graphkit.sources.transcripts import index

    return int(index.PARSER_VERSION)

def key_hashes(keys: Iterable[str]) -> np.ndarray:
    """64-bit hashes of link keys (two checksums: fast, and a collision only makes a
    build read one group more)."""
    out = []
    for k in keys:
        b = k.encode()
        out.append(zlib.crc32(b) << 32 | zlib.adler32(b))
    return np.array(out, dtype=np.uint64)

class Walk:
    """The stat of every file a build looked at: ``paths`` sorted, ``stats`` an int64
    array of their ``[size, mtime_ns, inode, ctime_ns]`` (-1s: none). Kept in the state
    as one NUL-joined text and the array's bytes, so that an append compares 9k stats
    in one array operation instead of decoding, comparing and encoding 9k JSON lists
    (~30 ms of an append's ~0.5 CPU-s)."""

    def __init__(self, paths: list[str], stats: np.ndarray, text: str | None = None) -> None:
        self.paths, self.stats, self._text = paths, stats, text
        self._at: dict[str, int] | None = None

    @classmethod
    def of(cls, stats: dict[str, list[int] | None]) -> Walk:
        paths = sorted(stats)
        flat = stat_bytes([v for p in paths for v in (stats[p] or _NO_STAT)])
        return cls(paths, np.frombuffer(flat, dtype=np.int64).reshape(-1, 4))

    @classmethod
    def of_inputs(cls, inputs: list[list[Any]]) -> Walk:
        """From :func:`graphkit.builds.uptodate.input_state`'s list (sorted by path; a file
        it could not stat has -1s, as here), packed once for the build record too."""
        text, flat = packed_inputs(inputs)
        return cls([row[0] for row in inputs],
                   np.frombuffer(flat, dtype=np.int64).reshape(-1, 4), text)

    def text(self) -> str:
        if self._text is None:
            self._text = "\0".join(self.paths)
        return self._text

    def _where(self) -> dict[str, int]:
        if self._at is None:
            self._at = {p: i for i, p in enumerate(self.paths)}
        return self._at

    def stat(self, path: str | None) -> list[int] | None:
        i = None if path is None else self._where().get(path)
        if i is None or self.stats[i, 0] == -1:
            return None
        return [int(v) for v in self.stats[i]]

    def index(self, paths: list[str]) -> np.ndarray:
        """Each of ``paths``' position in the walk (every one is in it)."""
        at = self._where()
        return np.array([at[p] for p in paths], dtype=np.int32)


_NO_STAT = [-1, -1, -1, -1]


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(a.tobytes()).decode("ascii")


def _unb64(text: Any, dtype: Any) -> np.ndarray:
    if not isinstance(text, str):
        raise ValueError("state array")
    return np.frombuffer(base64.b64decode(text, validate=True), dtype=dtype)


class Before:
    """What the last build's state says of the files: the walk it saw, the transcript
    files it listed from it (positions in the walk) and each one's group."""

    def __init__(self, state: dict[str, Any]) -> None:
        roots, text = state.get("roots"), state.get("walk")
        if not (isinstance(roots, list) and all(isinstance(r, str) for r in roots)
                and isinstance(text, str)):
            raise ValueError("state walk")
        paths = text.split("\0") if text else []
        stats = _unb64(state.get("stats"), "<i8")
        if len(stats) != 4 * len(paths):
            raise ValueError("state stats")
        self.roots, self.walk = roots, Walk(paths, stats.reshape(-1, 4), text)
        self.files = _unb64(state.get("files"), "<i4")
        self.groups = _unb64(state.get("groups"), "<i2")
        if len(self.files) != len(self.groups) or (len(self.files) and (
                int(self.files.min()) < 0 or int(self.files.max()) >= len(paths)
                or int(self.groups.min()) < 0 or int(self.groups.max()) > HOT)):
            raise ValueError("state files")
        # Taken as the transcript files of this walk (not listed again) only if sealed as
        # written: a state edited by hand may name a file that is none.
        self.seal = _seal(roots, text, self.files)
        self.sealed = state.get("listing") == self.seal

    def listed(self) -> list[str]:
        paths = self.walk.paths
        return [paths[i] for i in self.files.tolist()]

    def entries(self) -> dict[str, list[Any]]:
        """``{path: [group, stat, sidecar stat]}`` of every file listed last time."""
        w = self.walk
        return {p: [b, w.stat(p), w.stat(side_path(p))]
                for p, b in zip(self.listed(), self.groups.tolist(), strict=True)}


def _seal(roots: list[str], text: str, files: np.ndarray) -> str:
    """A digest of the roots, the walk's paths and the files listed from them."""
    h = hashlib.sha256(json.dumps(roots).encode())
    h.update(b"\0\0" + text.encode("utf-8", "surrogatepass") + b"\0\0")
    h.update(files.astype("<i4").tobytes())
    return h.hexdigest()


def _check_parts(state: dict[str, Any]) -> None:
    """ValueError unless ``parts`` maps a bucket's digits to a dict (a state edited by
    hand, still JSON of another shape, was a traceback later on)."""
    parts = state.get("parts", {})
    if not isinstance(parts, dict):
        raise ValueError("state")
    for b, part in parts.items():
        if not (b.isascii() and b.isdigit() and isinstance(part, dict)):
            raise ValueError("state part")


class Store:
    """``cache_dir/graph``: the state, the key table, each group's cache and partial."""

    def __init__(self, folder: Path) -> None:
        self.dir = folder
        self.state: dict[str, Any] = {}
        self.before: Before | None = None
        self.walk: Walk | None = None  # this build's (read_groups sets it)
        self.rooted: list[str] = []
        self.problem: str | None = None
        self.parsed: set[str] = set()  # files parsed by this build (some twice: moved)
        self.keys = pa.table({"h": pa.array([], pa.uint64()), "b": pa.array([], pa.int16())})
        path = folder / _STATE
        if not path.exists():
            return
        try:
            state = json_value(zstd_unpack(path.read_bytes()))
            if not isinstance(state, dict):
                raise ValueError("state")
            if state.get("format") != FORMAT or state.get("parser") != parser_version() \
                    or state.get("buckets") != BUCKETS:
                return
            _check_parts(state)
            before = Before(state)
            with pa.OSFile(str(folder / _KEYS)) as fh:
                keys = pa.ipc.open_file(fh).read_all()
            if keys.schema.names != ["h", "b"]:
                raise ValueError("key table")
            self.state, self.keys, self.before = state, keys, before
        except (OSError, ValueError, KeyError, TypeError, binascii.Error,
                pa.ArrowException, msgspec.DecodeError) as exc:
            self.problem = f"stored graph parts unreadable ({type(exc).__name__}); rebuilt"

    def part(self, b: int) -> dict[str, Any] | None:
        got = self.state.get("parts", {}).get(str(b))
        return got if isinstance(got, dict) else None

def side_path(path: str) -> str | None:
    """An ``agent-*`` file's ``.meta.json`` sidecar (string work: asked of every file of
    every build, where ``os.path`` cost 30 ms for 6k files)."""
    folder, sep, name = path.rpartition(os.sep)
    if not name.startswith("agent-"):
        return None
    side = name.split(".", 1)[0] + ".meta.json"
    return f"{folder}{sep}{side}" if folder else sep + side

def save_state(store: Store, files: list[str], assign: dict[str, int],
               read_keys: dict[int, dict[str, np.ndarray]],
               parts: dict[int, dict[str, Any]]) -> None:
    """Write the state and key table of this build: ``files`` in order, each one's group
    (``assign``), the link keys' hashes (:func:`key_hashes`) of every file of the groups
    read this time (``read_keys`` by group; the other groups' are kept as stored) and
    every group's partial."""
    from graphkit.sources.transcripts.index import atomic_write

    keep = store.keys.filter(pa.array(~np.isin(store.keys.column("b").to_numpy(),
                                               list(read_keys))))
    fresh_h, fresh_b = [keep.column("h").to_numpy()], [keep.column("b").to_numpy()]
    for b, by_file in read_keys.items():
        for path, h in by_file.items():
            fresh_h.append(h)
            fresh_b.append(np.full(len(h), assign.get(path, b), dtype=np.int16))
    table = pa.table({"h": pa.array(np.concatenate(fresh_h), pa.uint64()),
                      "b": pa.array(np.concatenate(fresh_b).astype(np.int16), pa.int16())})
    # LZ4: the hashes are random (zstd saved 3% of 1 MB for ~1 ms more a build, both ways).
    options = pa.ipc.IpcWriteOptions(compression="lz4")

    def write_keys(fh: Any) -> None:
        with pa.ipc.new_file(fh, table.schema, options=options) as w:
            w.write_table(table)

    atomic_write(store.dir / _KEYS, write_keys)
    walk, prev = store.walk, store.before
    assert walk is not None
    if prev is not None and prev.sealed and prev.roots == store.rooted \
            and prev.walk.text() == walk.text() and prev.listed() == files:
        at, seal = prev.files, prev.seal  # the same walk and files: the same positions
    else:
        at = walk.index(files)
        seal = _seal(store.rooted, walk.text(), at)
    state = {"format": FORMAT, "parser": parser_version(), "buckets": BUCKETS,
             "roots": store.rooted, "walk": walk.text(),
             "stats": _b64(walk.stats.astype("<i8", copy=False)),  # as Before reads it
             "files": _b64(at.astype("<i4")), "listing": seal,
             "groups": _b64(np.array([assign[p] for p in files], dtype="<i2")),
             "parts": {str(b): {"file": part["file"], "key": part["key"],
                                "rows": sum(part["file_rows"])} for b, part in parts.items()}}
    payload = zstd_pack(json_bytes(state))
    atomic_write(store.dir / _STATE, lambda fh: fh.write(payload))


def drop_stale(store: Store, parts: dict[int, dict[str, Any]]) -> None:
    """Partial files no group names any more; a whole build's transcript cache (this build
    keeps partial graphs instead of rows)."""
    keep = {p["file"] for p in parts.values()}
    for old in store.dir.glob("part-*.arrow"):
        if old.name not in keep:
            old.unlink(missing_ok=True)
    (store.dir / "graph-state.json.gz").unlink(missing_ok=True)  # format 6's state
    for pattern in ("transcripts-rows-*.arrow", "transcripts-entries-*.json.gz",
                    "transcripts-cache.json.gz"):
        for old in store.dir.parent.glob(pattern):
            old.unlink(missing_ok=True)
