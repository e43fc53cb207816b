"""Parsing many transcript files in worker processes.

Parsing is pure Python (the GIL allows one thread at a time), so a large cold read is
parsed by two processes: this one and a child. Each parses its files in order exactly as
the other would (:func:`parse_one`) into one Arrow table of pre-rows per kind and run of
files (converted where parsed; the child's tables travel as buffers, not as millions of
Python objects) with each file's fingerprint, facts, skipped lines and row count. The
caller slices the tables per file, so what it sees is what the cache gives for a file:
the same rows, facts and left-out lines as a parse in the main process.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa

from graphkit.core.errors import SourceError
from graphkit.core.files import read_file, work_folder
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

# Off by default (GRAPHKIT_PARSE_WORKERS=2 turns it on): on the shared, loaded 2-core
# benchmark machine a second process only adds CPU; with a core to spare it takes ~20% of
# the instructions off this process (bench/PROFILE_NOTES.md at d9272aa, parsing passes 3 and 7).
WORKERS = 1
# Below this many bytes to parse, starting interpreters costs more than it saves.
MIN_BYTES = 16 * 1024 * 1024
_RUN_BYTES = 1024 * 1024  # files per claim: about this many bytes, in order

# Young objects between two collections of the cyclic GC while transcripts are read
# (here in the parse child, and by read.py's _fewer_collections).
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
    return 2 if may_pool() and total_bytes >= MIN_BYTES else 1


def may_pool() -> bool:
    """Whether any read may parse in a second process: two CPUs to run on and
    ``GRAPHKIT_PARSE_WORKERS`` asking for two (junk in it is an error either way)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return _wanted() >= 2 and cpus >= 2


def _wanted() -> int:
    """``GRAPHKIT_PARSE_WORKERS`` as a number (unset or blank: :data:`WORKERS`); junk
    is one line naming the variable (it was a ValueError traceback on every build)."""
    raw = os.environ.get("GRAPHKIT_PARSE_WORKERS", "")
    if not raw.strip():
        return WORKERS
    try:
        return int(raw)
    except ValueError:
        raise SourceError(f"GRAPHKIT_PARSE_WORKERS is {raw[:40]!r}, which is no whole number",
                          hint="set it to 1 or 2 (the processes that parse transcripts), "
                               "or unset it") from None


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


class _Claims:
    """Which runs each process parses, decided as they go: this process takes runs from the
    front, the child from the back, each claiming a run by creating its marker file
    (``O_EXCL``: exactly one creator wins, on every OS) until a claim fails, where they
    have met. The child starts later (a fresh interpreter and its imports), so a fixed
    split left this process idle waiting for it; claiming lets whichever is faster take
    more."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def take(self, run: int) -> bool:
        try:
            os.close(os.open(os.path.join(self.folder, f"{run}.run"),
                             os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return False
        return True


def parse_in_workers(paths: Sequence[Path], sizes: Sequence[int]) -> Iterator[Parsed]:
    """Each file's outcome, in the order of ``paths``: this process parses runs of files
    from the front while a child (``python -m graphkit.sources.transcripts.pool``) parses
    runs from the back (:class:`_Claims`). A child process, not multiprocessing: that would
    re-import the caller's main script (or fork its threads mid-lock). If the child fails,
    its runs are parsed here."""
    runs = _runs(paths, sizes)
    # Named for this process (and the dead ones' deleted first): a killed build's
    # hand-over folder does not pile up in the temporary folder.
    folder = str(work_folder(Path(tempfile.gettempdir(), "graphkit-parse")))
    claims = _Claims(folder)
    child = None
    try:
        if len(runs) > 1:
            child = _start_child(runs, folder)
        done = 0
        while done < len(runs) and (child is None or claims.take(done)):
            yield from _in_order(*_parse_run(runs[done]))
            done += 1
        if done == len(runs):
            return  # this process took every run: the child has nothing to give
        got = None
        assert child is not None
        if child.wait() == 0:
            try:
                got = pickle.loads(Path(folder, "out.pickle").read_bytes())
            except (OSError, pickle.UnpicklingError, EOFError, ValueError, AttributeError,
                    ImportError):
                got = None
        if got is not None and got[0] == done:
            for outcomes, tables in got[1]:
                yield from _in_order(outcomes, tables)
        else:  # the child failed: parse its runs here
            for run in runs[done:]:
                yield from _in_order(*_parse_run(run))
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _start_child(runs: list[list[str]], folder: str) -> subprocess.Popen[bytes] | None:
    """Start the child parsing runs from the back of ``runs`` (None if it cannot start).
    The runs go in a file, not a pipe: a pipe holds 64 KiB, and writing more would wait
    until the child had imported everything and began reading."""
    root = str(Path(__file__).resolve().parents[3])  # the folder holding graphkit/
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])]))
    Path(folder, "runs.json").write_text(json.dumps(runs))
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "graphkit.sources.transcripts.pool", folder],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=env)
    except OSError:
        return None


def child_main() -> None:
    """The child: claims runs from the back of ``runs.json`` in the folder named and
    writes ``(first run it parsed, [(outcomes, tables) per run, in order])`` to
    ``out.pickle`` there."""
    folder = sys.argv[1]
    runs = json.loads(Path(folder, "runs.json").read_text())
    gc.set_threshold(READ_GC_THRESHOLD, 50, 100)
    claims = _Claims(folder)
    got = []
    first = len(runs)
    while first > 0 and claims.take(first - 1):
        first -= 1
        got.append(_parse_run(runs[first]))
    got.reverse()
    payload = pickle.dumps((first, got), protocol=pickle.HIGHEST_PROTOCOL)
    Path(folder, "out.tmp").write_bytes(payload)
    os.replace(Path(folder, "out.tmp"), Path(folder, "out.pickle"))


if __name__ == "__main__":
    # pyarrow's first ``pa.array`` imports pandas if it can (0.2 CPU-s), only to ask whether
    # the input is a pandas object; the child converts lists of tuples, for which the
    # answer is no either way, so it tells pyarrow there is no pandas. The tables are the
    # same (tests/builds/incremental/test_incremental.py compares them).
    # (None in sys.modules is not enough: pyarrow's compiled import takes the None.)
    from graphkit.core.lazy import NoPandas

    sys.meta_path.insert(0, NoPandas())
    # Through the module's own name, so what is pickled names graphkit's classes, not
    # __main__'s.
    from graphkit.sources.transcripts import pool

    pool.child_main()
