"""The last spliced build's merged tables, kept so a build merges only what changed.

After an append to one session, only the groups read again (usually the hot one) have new
partial tables, and most of their tables are what they were (a user line changes the
Session and Thread tables, not the Tool or TOUCHED ones). A node or edge type whose partial
table is the same in every group read again (the same rows, order keys and schema) merges
to the same table as last time — the other groups' partials are the very files merged last
time, and the relative order of their rows holds whatever files came or went — so it is
taken from ``graph-merged.arrow`` instead of being loaded from all 17 partials and merged
again.

The file is laid out like a partial (an 8-byte length, a zstd'd JSON account, then one
zstd Arrow IPC stream per table) and its account names the project key and the partial
file of every group it was merged from: it is used only when those are exactly the
partials the last build kept (and ``key`` the build's key), so a damaged, foreign or stale
file means merging everything, never a wrong table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa

from graphkit.builds.uptodate import MERGED_FILE, file_stat, recorded_tables

MERGED = Path(MERGED_FILE).name
Types = list[tuple[str, str]]


class Merged:
    """The stored merged tables of the last build (``usable`` False: none to use)."""

    def __init__(self, folder: Path, key: str, before: dict[int, str] | None) -> None:
        self.folder, self.key = folder, key
        self.before = before or {}
        self.tables: dict[tuple[str, str], tuple[int, int]] = {}
        # Per type: the keys more than one row of the partials held (merge_parts' shared).
        self.shared_at: dict[tuple[str, str], tuple[int, int]] = {}
        self.buf: pa.Buffer | None = None
        self.problem: str | None = None
        self.stat = file_stat(str(folder / MERGED))
        if before is None:
            return
        try:
            data = (folder / MERGED).read_bytes()
        except OSError:
            return  # none yet (the first build of this cache, or an older graphkit's)
        try:
            info, self.buf = split_account(data, MERGED)
            parts = {int(b): str(name) for b, name in info["parts"].items()}
            tables = {(str(k), str(t)): (int(at), int(size))
                      for k, t, at, size in info["tables"]}
            shared = {(str(k), str(t)): (int(at), int(size))
                      for k, t, at, size in info.get("shared", [])}
        except (ValueError, KeyError, TypeError, msgspec.DecodeError) as exc:
            self.buf = None
            self.problem = (f"stored merged graph unreadable ({type(exc).__name__}); "
                            "merged again")
            return
        if info.get("key") == key and parts == self.before:
            self.tables, self.shared_at = tables, shared
        else:
            self.buf = None

    @property
    def usable(self) -> bool:
        return self.buf is not None

    def table(self, key: tuple[str, str], where: str = "tables") -> pa.Table:
        at, size = (self.tables if where == "tables" else self.shared_at)[key]
        assert self.buf is not None
        if at < 0 or at + size > self.buf.size:
            raise ValueError("outside the file")
        return pa.ipc.open_stream(self.buf.slice(at, size)).read_all()

    def shared(self, key: tuple[str, str]) -> pa.Array | None:
        """The keys of a type more than one partial row held last time (None: unknown)."""
        if key not in self.shared_at:
            return None
        return self.table(key, "shared").column(0).combine_chunks()

    def raw(self, key: tuple[str, str], where: str = "tables") -> bytes:
        at, size = (self.tables if where == "tables" else self.shared_at)[key]
        assert self.buf is not None
        return self.buf.slice(at, size).to_pybytes()


_MOST = 1 << 31  # no stored account or state is near this: a length beyond it is damage


def zstd_pack(raw: bytes) -> bytes:
    """``raw`` as 8 bytes of its length, then one zstd frame (level 1). The accounts name
    every file with its fingerprint (4 MB of JSON for 9k files): zlib took ~16 ms to
    decompress them on every incremental build and ~90 ms to compress them on a cold one;
    zstd 1 takes ~4 and ~10, and the result is smaller."""
    return len(raw).to_bytes(8, "little") + pa.Codec("zstd", 1).compress(raw, asbytes=True)


def zstd_unpack(data: bytes) -> bytes:
    """What :func:`zstd_pack` packed; ValueError if ``data`` is not such a frame."""
    size = int.from_bytes(data[:8], "little")
    if len(data) < 8 or size > _MOST:
        raise ValueError("no zstd frame")
    try:
        raw = pa.Codec("zstd").decompress(data[8:], size, asbytes=True)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"damaged zstd frame ({exc})") from None
    if len(raw) != size:
        raise ValueError("damaged zstd frame")
    return bytes(raw)


def json_bytes(value: Any) -> bytes:
    """``value`` as JSON: msgspec's, or json's where msgspec refuses a lone surrogate (a
    transcript path with bytes that are not UTF-8, as ``os.fsdecode`` gives it; json
    escapes it as ``\\udcff``, and :func:`json_value` reads that back)."""
    try:
        return msgspec.json.encode(value)
    except UnicodeEncodeError:
        return json.dumps(value).encode()


def json_value(raw: bytes) -> Any:
    """What :func:`json_bytes` wrote: msgspec reads it, or json where msgspec refuses an
    escaped lone surrogate; ValueError if it is no JSON."""
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return json.loads(raw)


def pack_account(info: dict[str, Any]) -> bytes:
    """A stored file's head: the account's length in 8 bytes, then the account (JSON,
    :func:`zstd_pack`'d); its tables' streams follow it."""
    head = zstd_pack(json_bytes(info))
    return len(head).to_bytes(8, "little") + head


def split_account(data: bytes, name: str) -> tuple[dict[str, Any], pa.Buffer]:
    """A stored file's account (see :func:`pack_account`) naming ``name``, and the tables
    after it; ValueError if it is not that file's."""
    size = int.from_bytes(data[:8], "little")
    if not 0 < size <= len(data) - 8:
        raise ValueError("no account")
    info = json_value(zstd_unpack(data[8:8 + size]))
    if not isinstance(info, dict) or info.get("file") != name:
        raise ValueError("not this file's account")
    return info, pa.py_buffer(data).slice(8 + size)


def changed_groups(merged: Merged, parts: dict[int, dict[str, Any]]) -> list[int]:
    """The groups whose partial file is not the one merged last time (new, gone, or
    projected again)."""
    now = {b: str(p["file"]) for b, p in parts.items()}
    return sorted(b for b in {*now, *merged.before} if now.get(b) != merged.before.get(b))


def unchanged(merged: Merged, types: Types, parts: dict[int, dict[str, Any]],
              load: Any, raw: Any = None) -> set[tuple[str, str]]:
    """The types whose merged table is the stored one: each group whose partial file is
    not the one merged last time has the same partial table of the type as before (or
    neither has one). ``load(bucket, file, types)`` reads those tables of a partial, None
    when it cannot (a missing or damaged partial: nothing is taken as unchanged).
    ``raw(bucket, file)``: each table's stored stream (None: unreadable); a type whose
    streams are the same bytes before and now is the same table, not decoded to compare
    (~30 streams an append)."""
    if not merged.usable:
        return set()
    now = {b: str(p["file"]) for b, p in parts.items()}
    changed = changed_groups(merged, parts)
    same = {t for t in types if t in merged.tables}
    for b in changed:
        if not same:
            break
        undecided = set(same)
        if raw is not None and b in merged.before and b in now:
            old_raw, new_raw = raw(b, merged.before[b]), raw(b, now[b])
            if old_raw is not None and new_raw is not None:
                undecided = {t for t in same if t not in old_raw or t not in new_raw
                             or not old_raw[t].equals(new_raw[t])}
        if not undecided:
            continue
        old = load(b, merged.before[b], undecided) if b in merged.before else {}
        new = load(b, now[b], undecided) if b in now else {}
        if old is None or new is None:
            return set()
        for t in undecided:
            a, c = old.get(t), new.get(t)
            if (a is None) != (c is None) or (a is not None and not a.equals(c)):
                same.discard(t)
    return same


def _encoded(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema,
                           options=pa.ipc.IpcWriteOptions(compression="zstd")) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def save(merged: Merged, parts: dict[int, dict[str, Any]],
         tables: dict[tuple[str, str], pa.Table], kept: set[tuple[str, str]],
         shared: dict[tuple[str, str], pa.Array]) -> None:
    """Store this build's merged tables (the kept ones' streams copied as they were) and
    each type's shared keys (``shared``: the types merged or spliced again; a kept type's
    are copied)."""
    from graphkit.sources.transcripts.index import atomic_write

    chunks: list[bytes] = []
    listed: list[list[Any]] = []
    keys: list[list[Any]] = []
    at = 0
    for t, table in tables.items():
        data = merged.raw(t) if t in kept else _encoded(table)
        listed.append([*t, at, len(data)])
        chunks.append(data)
        at += len(data)
        if t in shared:
            data = _encoded(pa.table({"k": shared[t]}))
        elif t in kept and t in merged.shared_at:
            data = merged.raw(t, "shared")
        else:
            continue
        keys.append([*t, at, len(data)])
        chunks.append(data)
        at += len(data)
    info = {"file": MERGED, "key": merged.key, "tables": listed, "shared": keys,
            "parts": {str(b): str(p["file"]) for b, p in parts.items()}}
    payload = b"".join([pack_account(info), *chunks])
    merged.folder.mkdir(parents=True, exist_ok=True)
    atomic_write(merged.folder / MERGED, lambda fh: fh.write(payload))


def same_files(merged: Merged, kept: Types) -> dict[str, list[str]]:
    """For the types taken from the stored merged tables, the previous snapshot's file of
    each, when that snapshot was written from these very tables (the build record says so,
    and it is unchanged since): ``{"nodes/T.parquet": [path, sha256]}``. The snapshot
    writer links such a file instead of encoding the table again, after checking its
    digest."""
    if not kept or merged.stat is None:
        return {}
    recorded = recorded_tables(merged.folder.parent, merged.stat)
    out = {}
    for kind, name in kept:
        rel = f"{'nodes' if kind == 'node' else 'edges'}/{name}.parquet"
        if rel in recorded:
            out[rel] = recorded[rel]
    return out


def splice_type(kind: str, prev: pa.Table, shared: pa.Array | None,
                pairs: list[tuple[pa.Table | None, pa.Table | None]]) -> pa.Table | None:
    """A changed type's merged table from last time's, when every key the groups read
    again hold (before or now) was held by one partial row alone and by none of the other
    groups: those rows are replaced by the new partial rows (as a merge takes a row found
    once), the rest stay, sorted by key as a merge sorts. ``pairs``: each such group's
    (old, new) partial table. None when that does not hold (then the type is merged)."""
    import pyarrow.compute as pc

    from graphkit.builds.partitioned.merge import key_columns, row_keys

    pairs = [(o, n) for o, n in pairs if o is not None or n is not None]
    if any(o is None or n is None or o.schema != n.schema for o, n in pairs):
        return None  # a table new or gone in a group, or its schema changed: merge
    old = [o for o, _n in pairs if o is not None and o.num_rows]
    new = [n for _o, n in pairs if n is not None and n.num_rows]
    if any(name not in t.column_names for t in new for name in prev.column_names):
        return None
    empty = pa.array([], pa.string())
    old_keys = pa.concat_arrays([row_keys(kind, t).combine_chunks().cast(pa.string())
                                 for t in old] or [empty])
    new_keys = pa.concat_arrays([row_keys(kind, t).combine_chunks().cast(pa.string())
                                 for t in new] or [empty])
    if len(old_keys) and pc.count_distinct(old_keys).as_py() != len(old_keys):
        return None
    if len(new_keys) and pc.count_distinct(new_keys).as_py() != len(new_keys):
        return None
    held = pa.concat_arrays([old_keys, new_keys])
    if shared is None:
        return None
    if len(shared) and pc.any(pc.is_in(held, value_set=shared)).as_py():
        return None  # another group holds one too: its rows merge
    prev_keys = row_keys(kind, prev).cast(pa.string())
    hit = pc.is_in(prev_keys, value_set=held)
    if (pc.sum(hit).as_py() or 0) != len(old_keys):
        return None  # last time's table has a key of these groups that none held alone
    rows = [prev.filter(pc.invert(hit)),
            *(t.select(prev.column_names).cast(prev.schema) for t in new)]
    out = pa.concat_tables(rows)
    order = [(c, "ascending") for c in key_columns(kind)]
    return out.take(pc.sort_indices(out.select(key_columns(kind)), sort_keys=order))
