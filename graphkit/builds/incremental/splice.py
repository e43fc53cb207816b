"""A transcript build that keeps the graph of every session a change cannot reach.

Linking is global (a resume is found by message ids shared across sessions, a subagent's
spawning call may sit in another file, Codex parents are matched by time), but it only
ever joins files that share a *link key* (:func:`graphkit.sources.transcripts.links.
closure_keys`). So the transcript files are kept in ``BUCKETS`` groups that no chain of
shared keys crosses; each group is parsed, linked and projected on its own
(:func:`graphkit.builds.partitioned.partition.project_partition`, the partitioned engine's widened
contract), and its partial graph is stored in ``cache_dir/graph`` with a 64-bit hash of
every link key (``graph-keys.arrow``). A build parses and projects again only the groups
holding a changed, new or deleted file, and the groups a changed file's keys now reach
(files linked through them are moved into one group); every other group's partial graph
is taken as stored, and all are merged (:func:`graphkit.builds.partitioned.merge.merge_parts`) into
tables equal to a build of all rows at once. No rows are kept: parsing a group's files
again costs about what reading their rows back did, at a third of the cache.

Rows' input positions (which order rejects and break ties of ``first``/``last``) are
stored per group as (file, row in file) and made global again at the merge, so a new
file elsewhere does not stale them.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
import pyarrow as pa

from graphkit.builds.incremental.state import (
    BUCKETS,
    FORMAT,
    HOT,
    Store,
    Walk,
    drop_stale,
    key_hashes,
    parser_version,
    save_state,
    side_path,
)
from graphkit.builds.uptodate import file_stat, source_tails
from graphkit.core.progress import Progress as CoreProgress
from graphkit.core.progress import Task, as_progress

READING = "reading transcripts"  # the task read_transcripts starts

if TYPE_CHECKING:
    from graphkit.builds.options import BuildOptions
    from graphkit.contract.loader import LoadedContract
    from graphkit.projection.project import Projection
    from graphkit.sources.read import Progress, SourceRows
    from graphkit.sources.transcripts.read import TranscriptRows

_CODEX_KEY = "x:codex"  # every Codex rollout holds it (see closure_keys)
_ROUNDS = 4 * BUCKETS  # groups only ever grow within a build; this is a safety net


class SpliceUnusable(Exception):
    """The sources cannot be built this way (e.g. no rows at all): build them whole."""


class _Group(msgspec.Struct):
    """One group's files as read this time (``rows`` None: not read yet)."""

    members: list[str]
    rows: TranscriptRows | None = None
    keys: dict[str, set[str]] = msgspec.field(default_factory=dict)



def project_key(c: LoadedContract, granularity: str, include_content: bool) -> str:
    """What the stored partial graphs depend on besides the transcripts."""
    from graphkit._version import __version__
    from graphkit.projection.project import content_columns

    # What counts as content decides which properties the parts hold (a subagent's
    # description became content): parts stored under another rule are not reused.
    doc = [c.spec.model_dump_json(), c.name, c.version, granularity, include_content,
           __version__, parser_version(), BUCKETS, FORMAT, sorted(content_columns(c))]
    return hashlib.sha256(json.dumps(doc).encode()).hexdigest()


def bucket_of_key(key: str) -> int:
    # surrogatepass: a key guessed from a file name in bytes that are not UTF-8 (held
    # as lone surrogates) stopped the whole build (round eight); other keys hash as before.
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % BUCKETS


def _guess(path: str) -> int:
    """A new file's first group: its session's, as the path tells it (a subagent file beside
    the session files: as its first line tells it); moved if its keys say otherwise."""
    p = Path(path)
    if p.name.startswith("rollout-"):
        return bucket_of_key(_CODEX_KEY)
    if p.parent.name == "subagents":
        return bucket_of_key("s:" + p.parent.parent.name)
    if p.name.startswith("agent-"):
        from graphkit.core.files import open_regular

        try:
            with os.fdopen(open_regular(path), "rb") as fh:
                first = msgspec.json.decode(fh.readline())
            if isinstance(first, dict) and isinstance(first.get("sessionId"), str):
                return bucket_of_key("s:" + first["sessionId"])
        except (OSError, ValueError, RecursionError, msgspec.DecodeError):
            pass  # a guess only: the file's keys decide
    return bucket_of_key("s:" + p.name.split(".", 1)[0])


def _home(keys: set[str], paths: list[str]) -> int:
    """The group a set of linked files belongs in when none was in one before: all Codex
    rollouts', else its smallest session's (what :func:`_guess` guesses)."""
    if _CODEX_KEY in keys:
        return bucket_of_key(_CODEX_KEY)
    sessions = [k for k in keys if k.startswith("s:")]
    return bucket_of_key(min(sessions)) if sessions else _guess(min(paths))



def listed_files(roots: list[Path], inputs: list[list[Any]] | None
                 ) -> tuple[list[str], dict[str, list[int] | None]]:
    """The transcript files under ``roots`` in order (as :func:`transcript_files` lists
    them) and the stat of every file there, from ``inputs`` (``engine.reuse.input_state``:
    the walk the no-op check made) when given, else walked and stat'ed here."""
    if inputs is None:
        files, stats = _walked_here(roots)
        return files, stats
    stats = {row[0]: (row[1:] if row[1] != -1 else None) for row in inputs}
    return _candidates(roots, list(stats)), stats


def _walked_here(roots: list[Path]) -> tuple[list[str], dict[str, list[int] | None]]:
    from graphkit.sources.transcripts.files import transcript_files

    files = [str(p) for p in transcript_files(roots)]
    stats: dict[str, list[int] | None] = {}
    for p in files:
        stats[p] = file_stat(p)
        side = side_path(p)
        if side is not None:
            stats[side] = file_stat(side)
    return files, stats


def _root_texts(roots: list[Path]) -> list[str]:
    return [str(Path(given).expanduser().resolve()) for given in roots]


# A compressed Codex rollout (graphkit.sources.transcripts.files.ZSTD, named here so a
# rebuild that changes nothing imports no reader).
ZSTD = ".jsonl.zst"


def _candidates(roots: list[Path], paths: list[str]) -> list[str]:
    """The transcript files among the walked ``paths`` below ``roots``, in order."""
    found: set[str] = set()
    listed = set(paths)
    for root in _root_texts(roots):
        if not os.path.isdir(root):
            found.add(root)
            continue
        prefix = root.rstrip(os.sep) + os.sep
        for path in paths:
            if path.startswith(prefix) and _candidate(root, path) and not (
                    path.endswith(ZSTD) and path[:-4] in listed):  # the plain one wins
                found.add(path)
    return sorted(found)


def _candidate(root: str, path: str) -> bool:
    """:func:`graphkit.sources.transcripts.files.candidates`' rule, on a path's text
    (``path`` lies below ``root``)."""
    folder, name = path.rsplit(os.sep, 1)
    if not name.endswith((".jsonl", ".json", ZSTD)) or name.endswith(".meta.json"):
        return False
    if name.startswith("agent-"):
        return True  # in subagents/ or not
    below = folder[len(root):]
    # The split only where the text could name the folder (asked of every file). As
    # candidates(): a folder named subagents below the root, or the file's own folder
    # (the root itself, say) so named; not a folder below a root named subagents.
    in_subagents = ("subagents" in below and "subagents" in below.split(os.sep)) \
        or folder.rsplit(os.sep, 1)[-1] == "subagents"
    return not in_subagents


def read_groups(roots: list[Path], store: Store, key: str, progress: Progress | None,
                inputs: list[list[Any]] | None = None,
                ) -> tuple[list[str], Walk, dict[str, int], dict[int, _Group], list[str]]:
    """Decide the groups and read the ones that must be projected again.

    Returns the transcript files in order, the walk they were listed from (each file's
    and sidecar's stat before reading), each one's group, the groups read (keyed by
    bucket) and notes for the summary.
    """
    prev = store.before
    rooted = _root_texts(roots)
    if inputs is not None:
        walk = Walk.of_inputs(inputs)
        same = prev is not None and prev.sealed and prev.roots == rooted \
            and prev.walk.text() == walk.text()
        files = prev.listed() if same and prev is not None else _candidates(roots, walk.paths)
    else:
        files, walked = _walked_here(roots)
        walk = Walk.of(walked)
        same = prev is not None and prev.roots == rooted and prev.walk.text() == walk.text() \
            and prev.listed() == files
    shown = _OneTask(as_progress(progress), len(files))
    notes = [store.problem] if store.problem else []
    dirty: set[int] = set()
    changed: set[str] = set()
    if same and prev is not None:
        # The same files as last time (an append): the stats that differ, in one pass.
        assign = dict(zip(files, prev.groups.tolist(), strict=True))
        moved = np.flatnonzero((walk.stats != prev.walk.stats).any(axis=1)).tolist()
        touched = {walk.paths[i] for i in moved}
        changed = {p for p in touched if p in assign}
        if any(p.endswith(".meta.json") for p in touched):
            changed |= {p for p in files if side_path(p) in touched}
        dirty = {assign[p] for p in changed}
        old = dict(assign)
    else:
        before = prev.entries() if prev is not None else {}
        listed = set(files)
        assign = {p: int(v[0]) for p, v in before.items() if p in listed}
        old = dict(assign)
        for p in files:
            now = [walk.stat(p), walk.stat(side_path(p))]
            if p not in before:
                assign[p] = _guess(p)
                dirty.add(assign[p])
                changed.add(p)
            elif before[p][1:] != now:
                dirty.add(assign[p])
                changed.add(p)
        dirty.update(int(v[0]) for p, v in before.items() if p not in assign)
    for b in sorted({*assign.values()}):
        part = store.part(b)
        if part is None or part.get("key") != key or not (store.dir / str(
                part.get("file"))).is_file():
            dirty.add(b)  # no partial, or one made with another contract or options
    # Decided once per build: else files sent home would be called hot again next round.
    cool = sum(1 for b in assign.values() if b == HOT) * BUCKETS > len(files)
    groups: dict[int, _Group] = {}
    for _ in range(_ROUNDS):
        for b in sorted(dirty):
            members = [p for p in files if assign.get(p) == b]
            if b not in groups or groups[b].members != members:
                groups[b] = _read_group(members, shown)
                store.parsed.update(groups[b].rows.parsed)  # type: ignore[union-attr]
        reached = _reached(groups, changed, store.keys, dirty)
        if reached:
            dirty |= reached
            continue
        regrouped = _regroup(groups, assign, old, changed if prev is not None else set(),
                             cool)
        if not regrouped:
            shown.finish(len(files))
            store.walk, store.rooted = walk, rooted
            return files, walk, assign, groups, notes
        dirty |= regrouped
    raise SpliceUnusable("link groups did not settle")


class _OneTask(CoreProgress):
    """The groups' reads shown as one ``reading transcripts`` task over all files: each
    file named and counted once (a file read again, moved to another group, is not)."""

    def __init__(self, outer: CoreProgress, total: int) -> None:
        self.outer = outer
        self.task = outer.start(READING, total=total, unit="files")
        self.counted: set[str] = set()

    def note(self, message: str) -> None:
        self.outer.note(message)

    def start(self, name: str, total: int | None = None, unit: str = "") -> Task:
        return _Shared(self) if name == READING else self.outer.start(name, total, unit)

    def finish(self, total: int) -> None:
        """Count the files not read (their groups kept) and end the task."""
        if total > len(self.counted):
            self.task.advance(total - len(self.counted))
        self.task.done()


class _Shared(Task):
    def __init__(self, one: _OneTask) -> None:
        self.one, self.current = one, ""

    def set_source(self, label: str) -> None:
        self.current = label
        if label not in self.one.counted:
            self.one.task.set_source(label)

    def advance(self, n: int = 1, **counts: int) -> None:
        if self.current not in self.one.counted:
            self.one.counted.add(self.current)
            self.one.task.advance(n, **counts)


def _read_group(members: list[str], progress: Any) -> _Group:
    """Parse a group's files and link them. No rows are cached: the group's partial graph
    is what is kept, and parsing a group's files again costs about what reading their
    rows back did (without the rows, the cache is a third of the size)."""
    from graphkit.sources.transcripts.read import read_transcripts

    rows = read_transcripts([Path(p) for p in members], progress=progress, closure=True,
                            listed=True)
    return _Group(members, rows, dict(zip(rows.files, rows.file_keys, strict=True)))


def _reached(groups: dict[int, _Group], changed: set[str], keys: pa.Table, dirty: set[int]
             ) -> set[int]:
    """Groups not yet read that hold a key of a changed or new file (an unchanged file's
    keys are its group's alone already)."""
    if not keys.num_rows:
        return set()
    mine = [key_hashes(k) for g in groups.values() for p, k in g.keys.items() if p in changed]
    if not mine:
        return set()
    import pyarrow.compute as pc

    held = np.unique(np.concatenate(mine))
    hit = keys.filter(pc.is_in(keys.column("h"), pa.array(held)))
    return {int(b) for b in np.unique(hit.column("b").to_numpy())} - dirty


def _regroup(groups: dict[int, _Group], assign: dict[str, int], old: dict[str, int],
             changed: set[str], cool: bool) -> set[int]:
    """Files that share keys (through others too) put in one group: :data:`HOT` when one
    of them ``changed`` (the sessions being written to: the next append re-reads them
    alone, not a 16th of the history), else the lowest one their members were in before
    this build, else :func:`_home`'s. When the hot group outgrows an average group, its
    files that did not change go back to their homes. Returns the groups that changed."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for g in groups.values():
        for path, keys in g.keys.items():
            root = find("f:" + path)
            for k in keys:
                other = find(k)
                if other != root:
                    parent[other] = root
    members: dict[str, list[str]] = {}
    keys_of: dict[str, set[str]] = {}
    for g in groups.values():
        for path in g.members:
            root = find("f:" + path)
            members.setdefault(root, []).append(path)
            keys_of.setdefault(root, set()).update(g.keys.get(path, ()))
    moved: set[int] = set()
    for root, paths in members.items():
        known = [old[p] for p in paths if p in old]
        if any(p in changed for p in paths):
            target = HOT
        elif known and not (cool and min(known) == HOT):
            target = min(known)
        else:
            target = _home(keys_of[root], paths)
        for p in paths:
            if assign[p] != target:
                moved.update((assign[p], target))
                assign[p] = target
    return moved


def _maybe_tables(root: str, inputs: list[list[Any]]) -> bool:
    """Whether a file under ``root`` could make it a row-file or Iceberg source: one named
    ``*.parquet``/``*.pq``, or below a ``metadata`` or ``data`` folder (one string search
    over all the paths, not a test per path; a newline in a name can only say yes)."""
    tails = source_tails(root, inputs)
    return any(m in tails for m in (".parquet\n", ".pq\n", f"{os.sep}metadata{os.sep}",
                                    f"{os.sep}data{os.sep}"))


def transcript_roots(paths: list[Path], inputs: list[list[Any]] | None = None
                     ) -> list[Path] | None:
    """``paths`` when every one is a transcript folder or file (and the spliced build is
    not turned off by ``GRAPHKIT_SPLICE=0``), else None. ``inputs`` (the no-op check's
    walk) spares the walk that rules out an Iceberg cache when no file could be one."""
    if os.environ.get("GRAPHKIT_SPLICE") == "0":
        return None
    from graphkit.sources.read import source_kind
    from graphkit.sources.transcripts.files import transcript_kind

    for p in paths:
        path = Path(p).expanduser()
        if not path.exists():
            return None
        root = str(path.resolve()).rstrip(os.sep) + os.sep
        plain = inputs is not None and path.is_dir() and not _maybe_tables(root, inputs)
        kind = transcript_kind(path) if plain else source_kind(path)
        if kind not in ("claude", "codex"):
            return None
    return [Path(p).expanduser() for p in paths]


def splice_build(roots: list[Path], contract: LoadedContract, options: BuildOptions, *,
                 progress: Progress | None, inputs: list[list[Any]] | None = None
                 ) -> tuple[Projection, SourceRows]:
    """Build the transcripts under ``roots`` group by group in ``options.cache_dir``,
    keeping unchanged groups' partial graphs (see the module doc). Raises
    :class:`SpliceUnusable` when the contract cannot be merged from parts (a distinct
    count over rows of several sessions, an ``order_by`` of derived columns): that is
    remembered, and such builds go whole."""
    from graphkit.builds.partitioned.plan import PartitionError

    assert options.cache_dir is not None
    cache_dir = Path(options.cache_dir)
    marker = cache_dir / "graph" / "graph-unusable"
    key = project_key(contract, options.granularity, options.include_content)
    try:
        if marker.read_text() == key:
            raise SpliceUnusable("the contract cannot be merged from parts")
    except OSError:
        pass
    try:
        return _splice(roots, contract, cache_dir, key, options, progress, inputs)
    except PartitionError as exc:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(key)
        raise SpliceUnusable(str(exc)) from exc


def _splice(roots: list[Path], contract: LoadedContract, cache_dir: Path, key: str,
            options: BuildOptions, progress: Progress | None,
            inputs: list[list[Any]] | None) -> tuple[Projection, SourceRows]:
    from graphkit.builds.incremental.merged import Merged
    from graphkit.builds.incremental.parts import (
        PartUnreadable,
        assemble,
        forget_reads,
        load_info,
        project_group,
        save_part,
    )
    from graphkit.builds.partitioned.plan import make_plan
    from graphkit.sources.transcripts.index import check_cache_dir

    check_cache_dir(cache_dir, roots)
    plan = make_plan(contract)  # refuses a contract that cannot be merged, before reading
    store = Store(cache_dir / "graph")
    files, _walk, assign, groups, notes = read_groups(roots, store, key, progress, inputs)
    if not any(g.rows is not None and g.rows.table.num_rows for g in groups.values()) and \
            not any((store.part(b) or {}).get("rows") for b in set(assign.values())
                    if b not in groups):
        raise SpliceUnusable("no rows")
    if progress:
        unread = [b for b in set(assign.values()) if b not in groups]
        rows = sum(g.rows.table.num_rows for g in groups.values() if g.rows is not None) + \
            sum(int((store.part(b) or {}).get("rows", 0)) for b in unread)
        progress(f"projecting {rows} rows with {contract.name} v{contract.version} "
                 f"({len(set(assign.values())) - len(unread)} link groups, "
                 f"{len(unread)} kept)")
    label = ",".join(str(p) for p in roots)
    # The partial files the last build merged (the merged tables it kept name them).
    before = {int(b): str(p.get("file")) for b, p in store.state.get("parts", {}).items()
              if isinstance(p, dict)} if store.state else None
    parts: dict[int, dict[str, Any]] = {}
    for _ in range(_ROUNDS):
        for b in sorted(set(assign.values())):
            if b in parts:
                continue
            g = groups.get(b)
            if g is None:
                ref = store.part(b)
                assert ref is not None
                try:
                    parts[b] = load_info(store.dir, b, ref)
                except PartUnreadable as exc:
                    notes.append(f"stored graph part of link group {b} unreadable ({exc}); "
                                 "projected again")
                    g = groups[b] = _Group([p for p in files if assign.get(p) == b])
                else:
                    continue
            if progress:
                progress(f"projecting link group {b} ({len(g.members)} files)")
            if g.rows is None:  # its stored partial was unreadable: read it again
                g = groups[b] = _read_group(g.members, progress)
                store.parsed.update(g.rows.parsed)  # type: ignore[union-attr]
            assert g.rows is not None
            out, info = project_group(plan, contract, g.rows, label, options.granularity,
                                      options.include_content)
            info["key"] = key
            parts[b] = save_part(store.dir, b, out, info)
        try:
            projection, sources, agents = assemble(plan, contract, files, parts,
                                                   options.granularity, store.dir,
                                                   Merged(store.dir, key, before), notes)
            break
        except PartUnreadable as exc:
            notes.append(f"stored graph part of link group {exc.bucket} unreadable "
                         f"({exc}); projected again")
            members = [p for p in files if assign.get(p) == exc.bucket]
            groups[exc.bucket] = _Group(members)
            del parts[exc.bucket]
    else:
        forget_reads()
        raise SpliceUnusable("stored graph parts unreadable")
    forget_reads()
    save_state(store, files, assign, {b: g.keys for b, g in groups.items()}, parts)
    drop_stale(store, parts)
    reused = sum(1 for b in parts if b not in groups)
    final = {p for part in parts.values() for p in part["files"]}
    parsed, kept = len(store.parsed & set(files)), len(final - store.parsed)
    sessions = {b: int(parts[b].get("sessions", 0)) for b in parts}
    sources.transcripts = {
        "files_parsed": parsed, "files_reused": kept,
        "groups_projected": len(parts) - reused, "groups_reused": reused,
        "sessions_projected": sum(n for b, n in sessions.items() if b in groups),
        "sessions_reused": sum(n for b, n in sessions.items() if b not in groups)}
    sources.notes = [*notes, f"transcripts: {parsed} file(s) parsed, {kept} "
                     f"reused from the index, {len(sources.skipped)} line(s) skipped; "
                     f"{len(parts) - reused} link group(s) projected, {reused} kept"]
    if agents:
        sources.notes.append("transcript subagent threads: " + ", ".join(
            f"{n} {kind}" for kind, n in agents.items()))
    return projection, sources


