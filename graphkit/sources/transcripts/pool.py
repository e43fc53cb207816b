"""Parsing many transcript files in worker processes.

Parsing is pure Python (the GIL allows one thread at a time), so a large cold read is
parsed by every core: this process and forked children (:func:`graphkit.core.workers.
run_all`), each parsing runs of files (~1 MB each, largest first) exactly as the other
would (:func:`parse_one`) into one Arrow table of pre-rows per kind and run (converted
where parsed; a child's tables travel as buffers, not as millions of Python objects) with
each file's fingerprint, facts, skipped lines and row count. The caller slices the tables
per file, so what it sees is what the cache gives for a file: the same rows, facts and
left-out lines as a parse in the main process, whatever the number of processes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa

from graphkit.core.files import read_file
from graphkit.core.workers import can_fork, run_all, wanted_workers
from graphkit.sources.transcripts.buffer import (
    LINE_AT,
    FileParse,
    checked_rows_table,
    json_roundtrip,
)
from graphkit.sources.transcripts.claude import parse_claude
from graphkit.sources.transcripts.codex import parse_codex
from graphkit.sources.transcripts.files import (
    ZSTD,
    as_utf8,
    not_a_transcript,
    sniff_kind,
    unzstd,
)
from graphkit.sources.transcripts.index import stat_key

# Below this many bytes to parse, the workers' start and the tables' way back cost more
# than they save.
MIN_BYTES = 4 * 1024 * 1024
_RUN_BYTES = 1024 * 1024  # files per claim: about this many bytes, in order

# Young objects between two collections of the cyclic GC while transcripts are read
# (here in a parse worker, and by read.py's _fewer_collections).
# What a read keeps is ~13 lists of facts per file plus the rows waiting for conversion
# (~20k 41-value tuples): at 100k the collector ran twice over the benchmark's 5,698
# files (0.08-0.13 CPU-s of ~1.8, found nothing: the parser makes no cycles); at 1M a
# read of up to ~70k files runs it never, and a larger one as often per object as before.
READ_GC_THRESHOLD = 1_000_000


class Parsed(msgspec.Struct):
    """One file's outcome: a parse (rows not yet attached) or why it gave none."""

    path: str
    stat: list[int] | None = None         # index.stat_key
    fingerprint: dict[str, Any] | None = None
    parse: FileParse | None = None
    count: int = 0                         # rows of this file in its run's table of its kind
    bad: list[tuple[int, str]] = msgspec.field(default_factory=list)  # rows left out at conversion
    error: str | None = None               # "cannot read file: ..." (line 0)
    not_transcript: str | None = None      # why it is not a transcript (line 1)


def parse_one(path: Path, kind: str, data: bytes) -> FileParse:
    """Parse one file; its facts go through JSON, as they do through the cache."""
    parse = parse_claude(path, data) if kind == "claude" else parse_codex(path, data)
    parse.facts = json_roundtrip(parse.facts)
    return parse


def read_one(path: Path) -> tuple[Parsed, bytes | None]:
    """Stat, read and hash one file (what is needed before parsing it)."""
    out = Parsed(str(path))
    try:
        st, data = read_file(path)
        out.stat = stat_key(st)
    except OSError as exc:
        out.error = f"cannot read file: {exc.strerror}"
        return out, None
    out.fingerprint = {"path": str(path), "size": len(data), "mtime_ns": st.st_mtime_ns,
                       "sha256": hashlib.sha256(data).hexdigest()}
    if path.name.endswith(ZSTD):  # a compressed rollout: its lines, as a plain one's
        try:
            data = unzstd(data)
        except OSError as exc:
            out.error = f"cannot read file: {exc.strerror}"
            return out, None
    try:
        data = as_utf8(data)  # a BOM, UTF-16 or UTF-32: read as the UTF-8 it says
    except UnicodeError as exc:
        out.error = str(exc)
        return out, None
    return out, data


def _parse_run(paths: list[str]) -> tuple[list[Parsed], dict[str, pa.Table]]:
    """Worker: parse a run of files; their rows as one table per kind."""
    outcomes: list[Parsed] = []
    rows: dict[str, list[tuple[Any, ...]]] = {}
    owner: dict[str, list[int]] = {}
    for i, name in enumerate(paths):
        path = Path(name)
        out, data = read_one(path)
        outcomes.append(out)
        if data is None:
            continue
        kind = sniff_kind(path.name, data)
        if kind is None:
            out.not_transcript = not_a_transcript(path, data)
            continue
        parse = parse_one(path, kind, data)
        out.count = len(parse.rows)
        rows.setdefault(kind, []).extend(parse.rows)
        owner.setdefault(kind, []).extend([i] * len(parse.rows))
        parse.rows = []
        out.parse = parse
    tables = {}
    for kind, kind_rows in rows.items():
        table, bad = checked_rows_table(kind_rows)
        for r, why in bad:
            o = outcomes[owner[kind][r]]
            o.bad.append((kind_rows[r][LINE_AT], why))
            o.count -= 1
        tables[kind] = table
    return outcomes, tables


def _runs(paths: Sequence[Path], sizes: Sequence[int]) -> list[list[str]]:
    runs: list[list[str]] = [[]]
    held = 0
    for path, size in zip(paths, sizes, strict=True):
        if held >= _RUN_BYTES:
            runs.append([])
            held = 0
        runs[-1].append(str(path))
        held += size
    return [r for r in runs if r]


def workers_for(total_bytes: int) -> int:
    """How many processes parse ``total_bytes`` (1: this one alone)."""
    if total_bytes < MIN_BYTES:
        return 1
    return wanted_workers() if can_fork() else 1


def may_pool() -> bool:
    """Whether any read may parse in other processes: more than one wanted
    (``GRAPHKIT_PARSE_WORKERS``, else the cores; junk in it is an error either way) and
    children can be forked here."""
    return wanted_workers() >= 2 and can_fork()


def _in_order(outcomes: list[Parsed], tables: dict[str, pa.Table]) -> Iterator[Parsed]:
    """A run's outcomes, each parse given its slice of the run's table of its kind."""
    at: dict[str, int] = {}
    for out in outcomes:
        if out.parse is not None:
            kind = out.parse.kind
            start = at.get(kind, 0)
            out.parse.table = tables[kind].slice(start, out.count)
            out.parse.run = (tables[kind], start)
            at[kind] = start + out.count
        yield out


def parse_in_workers(paths: Sequence[Path], sizes: Sequence[int]) -> Iterator[Parsed]:
    """Each file's outcome, in the order of ``paths``: runs of files parsed by every
    worker process (a failed worker's runs are parsed here)."""
    runs = _runs(paths, sizes)
    weights: list[float] = []
    at = 0
    for run in runs:
        weights.append(float(sum(sizes[at:at + len(run)])))
        at += len(run)
    for outcomes, tables in run_all(_parse_run, runs, workers_for(sum(sizes)), weights):
        yield from _in_order(outcomes, tables)
