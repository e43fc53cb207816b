"""Read any mix of sources by their kind: the one entry point, :func:`read_sources`.

A source is a row file or folder (:mod:`.row_files`), a HypAware Iceberg cache
(:mod:`.iceberg`) or Claude Code / Codex transcripts (:mod:`.transcripts`). Each comes
back as raw *pieces* (a label and an Arrow table, in the source's own types), plus the
account of the reading: skipped lines, input fingerprints, notes. Shaping the pieces to a
contract and joining them is the contract layer's job
(:func:`graphkit.projection.conform.conform_sources`): sources know nothing of contracts,
only the :class:`ReadSpec` they are given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.core.errors import SourceError
from graphkit.core.schema import CONTENT_COLUMNS
from graphkit.sources.captures import capture_columns, reconcile_captures
from graphkit.sources.row_files import Piece, fingerprint, read_row_files, row_files
from graphkit.sources.touched import NEEDS as TOUCHED_NEEDS
from graphkit.sources.touched import TOUCHED_FILES, with_touched_files

Progress = Callable[[str], None]


class ReadSpec(msgspec.Struct, frozen=True):
    """What to read from each source.

    ``columns``: the columns wanted (others are left on disk where the format allows).
    ``text_columns``: those of them holding text (plain or JSON): read from Parquet
    dictionary-encoded, as Parquet stores ids and names, unless they hold content.
    ``include_content``: read the content columns (``CONTENT_COLUMNS``) too; they are the
    bulk of the bytes, so by default they stay on disk.

    >>> spec = ReadSpec(("session_id", "content_text"), text_columns=("session_id",))
    >>> sorted(spec.wanted()), spec.dictionary_columns()
    (['session_id'], ['session_id'])
    """

    columns: tuple[str, ...]
    text_columns: tuple[str, ...] = ()
    include_content: bool = False

    def wanted(self) -> set[str]:
        """The columns to read (with ``touched_files``, also what computes it)."""
        cols = set(self.columns)
        if not self.include_content:
            cols -= set(CONTENT_COLUMNS)
        if TOUCHED_FILES in cols:
            cols |= set(TOUCHED_NEEDS)
        # A response's id, for making HypAware's copies of one session one (.captures).
        return cols | capture_columns(cols)

    def dictionary_columns(self) -> list[str]:
        """Text columns to read dictionary-encoded: ids and names repeat across rows, so
        reading Parquet's dictionary and int32 indices skips building a string per row.
        Content is mostly distinct, so it stays plain."""
        return sorted(n for n in self.text_columns if n not in CONTENT_COLUMNS)


@dataclass
class SourceRows:
    """What reading the sources gave: raw pieces, and the account of the reading.

    ``pieces``: ``(label, table)`` per row file, Iceberg cache and transcript set, in the
    order read; each table in its source's own types.
    ``skipped``: every line (or, with ``line`` 0, whole file) that gave no rows, as
    ``{"path", "line", "reason"}``.
    ``fingerprints``: size and mtime of each input file (row files: SHA-256 too when
    asked for; transcripts: always, their cache needs it).
    ``notes``: one-line remarks for the summary.
    ``findings``: problems the reading found that a user should hear of, shaped like
    ``graphkit check`` findings (``check``, ``count``, ``message``, ``examples``): e.g.
    subagents with no spawning call, or whose session transcript is missing.
    """

    pieces: list[Piece] = field(default_factory=list)
    fingerprints: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    # Transcript files parsed this time and taken from the cache (``files_parsed``,
    # ``files_reused``); empty when no transcripts were read.
    transcripts: dict[str, int] = field(default_factory=dict)
    # Which of ``pieces`` holds the transcripts' rows (None: none was read).
    transcript_piece: int | None = None
    # HypAware's capture paths (:mod:`.captures`): the build summary's ``otel_capture``,
    # and how many row copies were merged into another copy of their message part.
    captures: dict[str, Any] = field(default_factory=dict)
    merged_copies: int = 0


def read_sources(
    paths: Sequence[Path],
    spec: ReadSpec,
    *,
    strict: bool = False,
    since: datetime | None = None,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    fingerprints: bool = True,
) -> SourceRows:
    """Read every source into pieces holding the columns ``spec`` asks for.

    ``strict`` fails on the first skipped transcript line; ``since`` lets transcripts
    skip older rows early (the caller still filters all rows); ``cache_dir`` holds the
    incremental transcript index; ``fingerprints`` records each input file's size and mtime.
    """
    result = SourceRows()
    wanted = spec.wanted()
    dictionary = spec.dictionary_columns()
    repaired: list[dict[str, Any]] = []
    # Row files get their computed columns as each file is read (beside the next file's
    # decoding); the other sources' pieces after all reading, by computed_pieces.
    finish = (lambda table: computed_columns(table, spec)) if TOUCHED_FILES in wanted else None
    computed: set[int] = set()  # id() of those tables: the pieces hold them meanwhile

    def read_rows(path: Path) -> list[Piece]:
        pieces = read_row_files(path, wanted, dictionary, repaired, finish)
        computed.update(id(table) for _, table in pieces)
        return pieces

    gather_sources(
        paths, result,
        read_rows=read_rows,
        # An Iceberg table refuses columns outside its schema; touched_files is computed.
        iceberg_columns=sorted(wanted - {TOUCHED_FILES}),
        strict=strict, since=since, cache_dir=cache_dir, progress=progress,
        fingerprints=fingerprints)
    note_repairs(result, repaired)
    before = [id(table) for _, table in result.pieces]
    reconcile(result)
    # A piece reconciling changed keeps the columns it had computed already.
    computed.update(id(t) for old, (_, t) in zip(before, result.pieces, strict=True)
                    if old in computed)
    result.pieces = computed_pieces(result.pieces, spec, computed)
    return result


def reconcile(result: SourceRows) -> None:
    """The copies HypAware and the transcripts hold of one Claude session made one
    (:func:`graphkit.sources.captures.reconcile_captures`), said in ``result``."""
    pieces, report = reconcile_captures(result.pieces, result.transcript_piece)
    result.pieces = pieces
    result.captures = report.summary()
    result.merged_copies = report.merged
    result.notes.extend(report.notes())
    result.findings.extend(report.findings())


def computed_pieces(pieces: list[Piece], spec: ReadSpec,
                    done: set[int] | frozenset[int] = frozenset()) -> list[Piece]:
    """:func:`computed_columns` of each piece, in order (those whose table's ``id`` is in
    ``done`` already have them). Pieces are independent and the work is mostly Arrow
    compute functions, which release the GIL: two pieces at a time (``touched_files``
    was the largest single-threaded step of reading 1M rows)."""
    todo = [piece for piece in pieces if id(piece[1]) not in done]
    if len(todo) < 2 or TOUCHED_FILES not in spec.wanted():
        made = {id(t): computed_columns(t, spec) for _, t in todo}
    else:
        import os
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
            made = dict(zip([id(t) for _, t in todo],
                            pool.map(lambda piece: computed_columns(piece[1], spec), todo),
                            strict=True))
    return [(label, made.get(id(t), t)) for label, t in pieces]


def note_repairs(result: SourceRows, repaired: list[dict[str, Any]]) -> None:
    """Say so when text that was not valid UTF-8 was repaired (finding ``invalid-utf8``)."""
    bytes_ = [r for r in repaired if not r.get("surrogate")]
    if bytes_:
        n = len(bytes_)
        message = (f"{n} text value(s) were not valid UTF-8; their invalid bytes were "
                   "replaced by U+FFFD")
        result.findings.append({"check": "invalid-utf8", "count": n, "message": message,
                                "examples": bytes_[:5]})
        result.notes.append(message)
    halves = [{k: v for k, v in r.items() if k != "surrogate"}
              for r in repaired if r.get("surrogate")]
    if halves:
        # JSON Lines rows holding "\ud800" (half of a UTF-16 pair, no text in UTF-8):
        # kept with U+FFFD in its place, as transcripts keep such a line; said here
        # with the first place, so the writer of the file can be fixed.
        first = halves[0]
        message = (f"{len(halves)} text value(s) held an escaped lone surrogate (\\ud800-"
                   f"\\udfff without its pair), replaced by U+FFFD; the first at "
                   f"{first['file']}:{first['line']} (column {first['column']!r})")
        result.findings.append({"check": "lone-surrogate", "count": len(halves),
                                "message": message, "examples": halves[:5]})
        result.notes.append(message)


def computed_columns(table: pa.Table, spec: ReadSpec) -> pa.Table:
    """``table`` with the columns sources compute (``touched_files``) when ``spec``
    asks for them; what only computed them (``tool_args`` without content) is dropped."""
    if TOUCHED_FILES not in spec.wanted():
        return table
    keep = spec.include_content and "tool_args" in spec.columns
    return with_touched_files(table, keep_args=keep)


def since_filter(table: pa.Table, since: datetime | None,
                 until: datetime | None = None) -> pa.Table:
    """Rows of ``table`` whose ``message_created_at`` is at or after ``since`` and
    at or before ``until`` (either bound may be None: open)."""
    if (since is None and until is None) or "message_created_at" not in table.column_names:
        return table
    ts = table.column("message_created_at")
    for bound, test in ((since, pc.greater_equal), (until, pc.less_equal)):
        if bound is not None:
            table = table.filter(pc.fill_null(
                test(ts, pa.scalar(bound, pa.timestamp("us", tz="UTC"))), False))
            ts = table.column("message_created_at")
    return table


def gather_sources(
    paths: Sequence[Path],
    result: SourceRows,
    *,
    read_rows: Callable[[Path], list[Piece]],
    iceberg_columns: Sequence[str] | None,
    strict: bool = False,
    since: datetime | None = None,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    fingerprints: bool = False,
) -> None:
    """Read each source by its kind into ``result.pieces``.

    Row files go through ``read_rows``; Iceberg caches are read with
    ``iceberg_columns`` (None: all); all transcripts are read together (their
    cross-file links need it), their skipped lines, fingerprints and a note landing in
    ``result``.
    """
    say = progress or (lambda _msg: None)
    transcript_paths: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise SourceError("no such file or folder", path=str(path),
                              hint="check the path")
        _not_an_output(path)
        kind = source_kind(path)
        if kind not in ("claude", "codex"):  # transcripts name their files as they go
            say(f"reading {path} ({kind})")
        if kind == "iceberg":
            from graphkit.sources.iceberg import read_iceberg

            fixed: list[dict[str, Any]] = []
            result.pieces.append((str(path), read_iceberg(path, columns=iceberg_columns,
                                                           repaired=fixed)))
            note_repairs(result, fixed)
        elif kind in ("claude", "codex"):
            transcript_paths.append(path)
        else:
            pieces = read_rows(path)
            _note_own_outputs(path, result)
            if not any(table.num_rows for _, table in pieces):
                # Zero rows is a graph of nothing, not an error; but say so, a user
                # who named a source expects rows from it.
                result.notes.append(f"{path}: no rows read (the files are empty, hold "
                                    "only blank lines or zero-row tables)")
            result.pieces.extend(pieces)
        if fingerprints and kind == "rows":
            result.fingerprints.extend(row_file_fingerprints([path]))
    if transcript_paths:
        _read_transcripts(transcript_paths, result, strict=strict, since=since,
                          cache_dir=cache_dir, progress=progress)


def _read_transcripts(paths: list[Path], result: SourceRows, *, strict: bool,
                      since: datetime | None, cache_dir: Path | None,
                      progress: Progress | None = None) -> None:
    from graphkit.sources.transcripts import read_transcripts

    tr = read_transcripts(paths, strict=strict, since=since, cache_dir=cache_dir,
                          progress=progress)
    result.skipped.extend(
        {"path": s.path, "line": s.line, "reason": s.reason} for s in tr.skipped)
    result.fingerprints.extend(tr.fingerprints)
    result.findings.extend(tr.findings)
    result.transcripts = {"files_parsed": tr.files_read, "files_reused": tr.files_reused}
    result.notes.append(
        f"transcripts: {tr.files_read} file(s) parsed, {tr.files_reused} reused from the "
        f"index, {len(tr.skipped)} line(s) skipped")
    if tr.agents:
        result.notes.append("transcript subagent threads: " + ", ".join(
            f"{n} {kind}" for kind, n in tr.agents.items()))
    result.transcript_piece = len(result.pieces)
    result.pieces.append((",".join(str(p) for p in paths), tr.table))


def row_file_fingerprints(paths: Sequence[Path], digest: bool = False) -> list[dict[str, Any]]:
    """Size and mtime (with ``digest``, SHA-256 too) of every row file among ``paths``
    (folders walked), in the order :func:`read_sources` lists them; transcripts bring
    their own, Iceberg caches have none. Reads only bytes, so it can run beside the
    reading."""
    out: list[dict[str, Any]] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.exists() and source_kind(path) == "rows":
            files = [path] if path.is_file() else [
                f for fs in row_files(path).values() for f in fs]
            out.extend(fingerprint(f, digest) for f in files)
    return out


def _not_an_output(path: Path) -> None:
    """Refuse a snapshot, an export or a rejects file given as a source: it is a graph
    (or rows left out of one), not message rows; `rows` wrote a snapshot's tables as
    368 rows of nulls without a word, `build` said a column was missing."""
    from graphkit.sources.row_files import graphkit_output

    what = graphkit_output(path)
    if what is not None:
        raise SourceError(f"this is {what}, not message rows", path=str(path),
                          hint="give the sources it was built from; read a snapshot with "
                               "--snapshot (sessions, tree, usage, export …)")


def _note_own_outputs(path: Path, result: SourceRows) -> None:
    """Say which of graphkit's own outputs below a row folder were not read as rows."""
    if not path.is_dir():
        return
    from graphkit.sources.row_files import row_files

    own: list[Path] = []
    row_files(path, own)
    if own:
        shown = ", ".join(str(p) for p in own[:3]) + (" …" if len(own) > 3 else "")
        result.notes.append(f"{path}: {len(own)} graphkit output(s) below it not read as "
                            f"rows (a snapshot, export, rejects or skipped-lines file): "
                            f"{shown}")


def source_kind(path: Path) -> str:
    """``iceberg``, ``claude``, ``codex`` or ``rows``."""
    # Imported here: plain row files never need the transcript/Iceberg readers.
    from graphkit.sources.iceberg import is_iceberg_source
    from graphkit.sources.transcripts import transcript_kind

    if is_iceberg_source(path):
        return "iceberg"
    kind = transcript_kind(path)
    return kind or "rows"
