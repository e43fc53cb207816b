"""Read users' local agent history (Claude Code transcripts, Codex rollouts) as message rows.

:func:`read_transcripts` walks the given files/folders (:mod:`.files`), parses each file
(:mod:`.claude`, :mod:`.codex`) or takes its rows from the incremental index
(:mod:`.index`), and settles cross-file facts (:mod:`.links`).
"""

from __future__ import annotations

import datetime as dt
import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.core.errors import SourceError
from graphkit.core.progress import ProgressLike, as_progress
from graphkit.core.schema import MESSAGES_SCHEMA
from graphkit.sources.transcripts.buffer import LONE_SURROGATES, FileParse
from graphkit.sources.transcripts.claude import claude_layout
from graphkit.sources.transcripts.claude_links import link_claude
from graphkit.sources.transcripts.codex_links import link_codex
from graphkit.sources.transcripts.codex_state import read_state, state_databases
from graphkit.sources.transcripts.files import (
    not_a_transcript,
    read_meta,
    sniff_kind,
    transcript_files,
)
from graphkit.sources.transcripts.index import (
    CACHE_SCHEMA,
    TranscriptIndex,
    check_cache_dir,
    stat_key,
)
from graphkit.sources.transcripts.links import Combiner, LinkReport, ParsedFile, closure_keys
from graphkit.sources.transcripts.pool import (
    READ_GC_THRESHOLD,
    Parsed,
    may_pool,
    parse_in_workers,
    parse_one,
    read_one,
    workers_for,
)


@dataclass
class SkippedLine:
    """A line (or, with line 0, a whole file) that gave no rows, and why."""

    path: str
    line: int
    reason: str


@dataclass
class TranscriptRows:
    """Rows read from transcripts, with what was skipped and what the cache saved.

    ``agents`` counts subagent threads by kind (``subagent``, ``warmup``, ``compaction``,
    ``orphan``); ``findings`` are problems a user should hear of (``graphkit check``
    shape: ``check``, ``count``, ``message``, ``examples``).
    """

    table: pa.Table
    skipped: list[SkippedLine] = field(default_factory=list)
    files_read: int = 0
    files_reused: int = 0
    fingerprints: list[dict[str, Any]] = field(default_factory=list)
    agents: dict[str, int] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    # With ``closure=True`` (the spliced build, :mod:`graphkit.builds.incremental.splice`):
    # the files that gave a parse, in order; each one's link keys (:func:`.links.closure_keys`);
    # each row's file (index into ``files``); the transcript file each fingerprint is
    # of; where the skipped lines of rows left out at conversion start.
    files: list[str] = field(default_factory=list)
    file_codex: list[bool] = field(default_factory=list)  # each of ``files``: a Codex rollout?
    file_keys: list[set[str]] = field(default_factory=list)
    row_file: Any = None
    fingerprint_files: list[str] = field(default_factory=list)
    bad_from: int = 0
    parsed: list[str] = field(default_factory=list)  # the files parsed (not from the cache)


def read_transcripts(
    paths: Sequence[Path],
    *,
    strict: bool = False,
    since: dt.datetime | None = None,
    cache_dir: Path | None = None,
    progress: ProgressLike = None,
    closure: bool = False,
    listed: bool = False,
) -> TranscriptRows:
    """Return message rows (``MESSAGES_SCHEMA``) for Claude and Codex transcripts under ``paths``.

    ``strict`` turns the first skipped line into a :class:`SourceError`; ``since`` keeps rows
    created at or after it (a naive datetime is UTC); ``cache_dir`` holds the incremental
    index (must lie outside the transcript folders); ``progress`` hears files done of the
    total, rows and bytes read and the file being read; ``closure`` fills the fields the
    spliced build needs (:class:`TranscriptRows`); ``listed``: ``paths`` are the files
    to read, exactly and in this order (not walked, not resolved; the caller checked
    ``cache_dir``).
    """
    with _fewer_collections():
        return _read(paths, strict, since, cache_dir, progress, closure, listed)



@contextmanager
def _fewer_collections() -> Iterator[None]:
    """Run the cyclic garbage collector rarely while transcripts are read.

    Parsing allocates millions of dicts and tuples and frees nearly all of them by reference
    counting (it makes no cycles); at the default threshold the collector ran every 700
    allocations and scanned the growing rows again and again: 15-20% of the CPU time.
    """
    old = gc.get_threshold()
    gc.set_threshold(READ_GC_THRESHOLD, 50, 100)
    try:
        yield
    finally:
        gc.set_threshold(*old)


def _read(paths: Sequence[Path], strict: bool, since: dt.datetime | None,
          cache_dir: Path | None, progress: ProgressLike, closure: bool = False,
          listed: bool = False) -> TranscriptRows:
    if cache_dir is not None and not listed:
        check_cache_dir(Path(cache_dir), paths)
    shown = as_progress(progress)
    if listed:
        files = [Path(p) for p in paths]
    else:
        shown.note("listing transcript files in " + ", ".join(map(str, paths)))
        files = transcript_files(paths)
    index = TranscriptIndex(Path(cache_dir)) if cache_dir is not None else None
    result = TranscriptRows(table=pa.table({}))
    parsed: list[ParsedFile] = []
    combined = Combiner()
    lone: list[tuple[str, int]] = []  # (file, line) of each line a lone surrogate was in

    seen: dict[str, list[str]] = {"claude": [], "codex": []}
    pooled = _pooled(files, index)
    task = shown.start("reading transcripts", total=len(files), unit="files")
    for path in files:
        task.set_source(str(path))
        got = _load_or_parse(path, index, result, strict, pooled)
        if got is None:
            task.advance()
            continue
        parse, fingerprint, bad, span = got
        task.advance(rows=parse.num_rows, bytes=fingerprint["size"])
        result.fingerprints.append(fingerprint)
        result.fingerprint_files.append(str(path))
        lone.extend((str(path), line) for line in parse.facts.get(LONE_SURROGATES, ()))
        for line, reason in parse.skipped:
            _skip(result, strict, SkippedLine(str(path), line, reason))
        rows = span[1] if span is not None else parse.num_rows
        if not rows and not parse.skipped and not bad and not parse.facts.get("job_state"):
            _skip(result, strict, SkippedLine(str(path), 0, _no_messages(parse.kind)))
        meta = None
        if parse.kind == "claude" and claude_layout(path).agent_id:
            meta, meta_print, meta_lone = _meta(path, index)
            if meta_lone is not None and meta_print is not None:
                lone.append((meta_print["path"], meta_lone))
            if meta_print:
                result.fingerprints.append(meta_print)
                result.fingerprint_files.append(str(path))
        parsed.append(ParsedFile(str(path), parse, meta))
        position = len(seen[parse.kind])
        seen[parse.kind].append(str(path))
        if span is not None and index is not None and index.rows is not None:
            combined.add_span(parse.kind, index.rows, *span)
        else:
            combined.add(parse)
        # Rows a cached file left out at conversion, where a fresh parse reports them.
        combined.bad.extend((parse.kind, position, line, why) for line, why in bad)

    task.done()
    left_out = combined.left_out(list(seen))
    if index:
        bad_of: dict[str, list[tuple[int, str]]] = {}
        for kind, position, line, why in left_out:
            bad_of.setdefault(seen[kind][position], []).append((line, why))
        tables = [combined.table(k) or CACHE_SCHEMA.empty_table() for k in seen]
        index.save(tables, seen, bad_of)
    shown.note(f"linking {len(parsed)} transcript file(s)")
    report = LinkReport()
    rollouts = [Path(f.path) for f in parsed if f.parse.kind == "codex"]
    if rollouts:  # ~/.codex/state_*.sqlite: spawn edges of absent or archived parents
        report.codex_state = read_state(state_databases([] if listed else paths, rollouts))
        report.findings.extend({"check": "codex-state", "count": 1, "message": note,
                                "examples": []} for note in report.codex_state.notes)
    if closure:
        result.files = [f.path for f in parsed]
        result.file_codex = [f.parse.kind == "codex" for f in parsed]
        result.file_keys = closure_keys(parsed, {k: combined.table(k) for k in seen})
    table = _link(parsed, combined, report, result if closure else None)
    of_kind = {kind: [f.path for f in parsed if f.parse.kind == kind]
               for kind in ("claude", "codex")}
    result.bad_from = len(result.skipped)
    for kind, position, line, why in left_out:
        _skip(result, strict, SkippedLine(of_kind[kind][position], line, why))
    result.agents = dict(sorted(report.kinds.items()))
    result.findings = report.findings + lone_surrogate_findings(lone)
    if since is not None:
        when = since if since.tzinfo else since.replace(tzinfo=dt.UTC)
        table = table.filter(pc.greater_equal(
            table["message_created_at"], pa.scalar(when, pa.timestamp("us", tz="UTC"))))
    result.table = table
    return result


def lone_surrogate_findings(places: list[tuple[str, int]], count: int | None = None
                            ) -> list[dict[str, Any]]:
    """The finding (none, or one) that ``places`` (file, line) held an escaped lone
    surrogate made U+FFFD: a line of text was changed, so it is said and counted with
    the first place, as the row files' reader says it (``sources.read.note_repairs``).
    ``count``: of all places, when ``places`` are only some (the spliced build merges
    each group's first five); the first is the least (file, line), whatever the order
    the files were read in, so a spliced build names the one a whole build names."""
    if not places:
        return []
    places = sorted(places)
    file, line = places[0]
    count = len(places) if count is None else count
    message = (f"{count} transcript line(s) held an escaped lone surrogate "
               f"(\\ud800-\\udfff without its pair), replaced by U+FFFD; the first at "
               f"{file}:{line}")
    return [{"check": "lone-surrogate", "count": count, "message": message,
             "examples": [{"file": f, "line": n} for f, n in places[:5]]}]


def _link(files: list[ParsedFile], combined: Combiner, report: LinkReport,
          rows_of: TranscriptRows | None = None) -> pa.Table:
    """Return schema rows for all files: Claude rows first, then Codex, each in file order
    (with ``rows_of``, each row's file goes to its ``row_file``)."""
    keep = rows_of is not None
    linked, owners = [], []
    for kind, link in (("claude", link_claude), ("codex", link_codex)):
        of_kind = [f for f in files if f.parse.kind == kind]
        t = link(of_kind, combined.table(kind), report, keep)
        if t is None:
            continue
        if keep:
            where = {f.path: i for i, f in enumerate(files)}
            at = np.array([where[f.path] for f in of_kind], dtype=np.int32)
            owners.append(at[t.column("_file").to_numpy()] if t.num_rows
                          else np.zeros(0, np.int32))
            t = t.drop_columns(["_file"])
        linked.append(t)
    table = pa.concat_tables(linked) if linked else MESSAGES_SCHEMA.empty_table()
    if rows_of is not None:
        rows_of.row_file = np.concatenate(owners) if owners else np.zeros(0, np.int32)
    # part_id is the row key: nearly always unique, told without a Python pass.
    if pc.count_distinct(table["part_id"], mode="all").as_py() == table.num_rows:
        return table
    part_ids = table["part_id"].to_pylist()
    seen: set[str] = set()
    mask = []
    for pid in part_ids:  # part_id is the row key: a part read twice is kept once
        mask.append(pid not in seen)
        seen.add(pid)
    if rows_of is not None:
        rows_of.row_file = rows_of.row_file[np.array(mask, dtype=bool)]
    return table.filter(pa.array(mask))


# parse, fingerprint, rows left out at conversion, (start, count) in the index's rows
_Got: TypeAlias = tuple[FileParse, dict[str, Any], list[tuple[int, str]], tuple[int, int] | None]


def _meta(agent_file: Path, index: TranscriptIndex | None
          ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, int | None]:
    """An agent file's sidecar, its fingerprint and the line of its first lone surrogate
    made U+FFFD (None: none); from the index while the sidecar's size, mtime and inode
    are unchanged."""
    if index is None:
        return read_meta(agent_file)  # nothing to reuse: no stat of the sidecar first
    key = str(agent_file)
    entry = index.entry(key) if index else None
    side = agent_file.with_name(agent_file.name.split(".", 1)[0] + ".meta.json")
    try:
        now = stat_key(side.stat())
    except OSError:
        now = None
    kept = entry.get("sidecar") if entry else None
    # An entry without "lone" is older than the count (harden12): read the sidecar again,
    # so a repair it made is counted too.
    if (index and key in index.new_entries and now is not None and isinstance(kept, dict)
            and kept.get("stat") == now and "lone" in kept
            and isinstance(kept.get("fingerprint"), dict)):
        index.new_entries[key]["sidecar"] = kept
        meta = kept.get("meta")
        line = kept["lone"]
        return ((meta if isinstance(meta, dict) else None), kept["fingerprint"],
                line if isinstance(line, int) and not isinstance(line, bool) else None)
    meta, fingerprint, line = read_meta(agent_file)
    if index and now is not None and fingerprint is not None and key in index.new_entries:
        index.new_entries[key]["sidecar"] = {"stat": now, "meta": meta,
                                             "fingerprint": fingerprint, "lone": line}
    return meta, fingerprint, line


def _pooled(files: list[Path], index: TranscriptIndex | None) -> dict[str, Iterator[Parsed]]:
    """Files to parse in worker processes (a large cold read): their outcomes in order."""
    if not may_pool():
        return {}  # one process however much there is to read: no stat of every file
    todo, sizes = [], []
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            continue  # reported where it is read
        entry = index.entry(str(path)) if index else None
        if entry is None or entry.get("stat") != stat_key(stat):
            todo.append(path)
            sizes.append(stat.st_size)
    if workers_for(sum(sizes)) < 2:
        return {}
    outcomes = parse_in_workers(todo, sizes)
    return {str(p): outcomes for p in todo}


def _load_or_parse(path: Path, index: TranscriptIndex | None, result: TranscriptRows,
                   strict: bool, pooled: dict[str, Iterator[Parsed]]) -> _Got | None:
    """Return a file's parse (from the index when unchanged), fingerprint, the lines a
    cached or pooled parse left out at conversion and, if cached, where its rows are in
    the index's table (start, count); None if unread."""
    key = str(path)
    entry = index.entry(key) if index else None
    if key in pooled:
        out = next(pooled[key])
        assert out.path == key, (out.path, key)  # outcomes come in file order
        stat: list[int] | None = out.stat
        fingerprint, data = out.fingerprint, None
        if out.error is not None:
            _skip(result, strict, SkippedLine(key, 0, out.error))
            return None
    elif index is None:  # no cache to consult: read_one's own stat is the only one
        out = None
        got, data = read_one(path)
        if got.error is not None:
            _skip(result, strict, SkippedLine(key, 0, got.error))
            return None
        stat, fingerprint = got.stat, got.fingerprint
    else:
        out = None
        try:
            st = path.stat()
        except OSError as exc:
            _skip(result, strict, SkippedLine(key, 0, f"cannot read file: {exc.strerror}"))
            return None
        stat = stat_key(st)
        if index and entry and entry.get("stat") == stat:
            cached = index.load(key)  # same size, mtime and inode: not even opened
            if cached is not None:
                result.files_reused += 1
                index.remember(key, stat, entry["sha256"], cached[0])
                return cached[0], {"path": key, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                                   "sha256": entry["sha256"]}, cached[1], cached[2:]
        got, data = read_one(path)
        if got.error is not None:
            _skip(result, strict, SkippedLine(key, 0, got.error))
            return None
        fingerprint = got.fingerprint
    assert fingerprint is not None and stat is not None
    if index and entry and entry.get("sha256") == fingerprint["sha256"]:
        cached = index.load(key)  # touched but unchanged: no need to parse again
        if cached is not None:
            result.files_reused += 1
            index.remember(key, stat, fingerprint["sha256"], cached[0])
            return cached[0], fingerprint, cached[1], cached[2:]
    if out is not None:
        if out.parse is None:
            _skip(result, strict, SkippedLine(key, 1, out.not_transcript or "not read"))
            return None
        parse, bad = out.parse, out.bad
    else:
        assert data is not None
        kind = sniff_kind(path.name, data)
        if kind is None:
            _skip(result, strict, SkippedLine(key, 1, not_a_transcript(path, data)))
            return None
        parse, bad = parse_one(path, kind, data), []
    result.files_read += 1
    result.parsed.append(key)
    if index:
        index.remember(key, stat, fingerprint["sha256"], parse)
    return parse, fingerprint, bad, None


def _skip(result: TranscriptRows, strict: bool, skipped: SkippedLine) -> None:
    if strict:
        what = "that line" if skipped.line else "that file"
        raise SourceError(skipped.reason, path=skipped.path, line=skipped.line or None,
                          hint=f"fix or remove {what}, or read without --strict to skip it")
    result.skipped.append(skipped)


def _no_messages(kind: str) -> str:
    """Why a transcript that parsed cleanly gave no rows."""
    if kind == "codex":
        return "a Codex rollout with a session header but no messages; file skipped (0 rows)"
    return ("no messages in this Claude transcript (only summaries or bookkeeping entries); "
            "file skipped (0 rows)")
