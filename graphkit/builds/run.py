"""The in-memory build and the library calls beside it: write rows, check, small graphs.

:func:`build` reads sources, checks them against the contract and projects the graph in
this process; :func:`graphkit.builds.snapshot.build_snapshot` wraps it with the snapshot,
the files beside it and the up-to-date decision. Each ``graphkit`` command parses its
options, calls one function of the public API and prints what it returns; tests and
notebooks call the same functions.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import pyarrow as pa

from graphkit.builds.options import BuildOptions, Sources, as_paths
from graphkit.builds.result import (  # noqa: F401 (the library's names for them)
    SKIPPED_IN_SUMMARY,
    BuildResult,
    skipped_lines_summary,
    source_messages,
)
from graphkit.contract.loader import DEFAULT_CONTRACT, LoadedContract, load_contract
from graphkit.core.errors import GraphkitError
from graphkit.core.graph import GraphTables
from graphkit.core.schema import MESSAGES_SCHEMA
from graphkit.projection.conform import conform_sources, conform_table, read_spec
from graphkit.projection.project import project
from graphkit.sources.read import (
    Progress,
    SourceRows,
    computed_columns,
    read_sources,
    row_file_fingerprints,
)

if TYPE_CHECKING:
    from graphkit.projection.checks import Finding
    from graphkit.projection.project import TableSink


def build(
    sources: Sources,
    options: BuildOptions | None = None,
    *,
    progress: Progress | None = None,
    input_state: list[list[Any]] | None = None,
    table_sink: TableSink | None = None,
    **keywords: Any,
) -> BuildResult:
    """Read ``sources``, check them against the contract and project the graph.

    ``sources`` is a path, a list of paths, or an Arrow table of
    ``ai_gateway_messages`` rows already in memory. ``options``: a
    :class:`~graphkit.builds.options.BuildOptions` (``contract``, ``granularity``,
    ``include_content``, ``strict``, ``since``/``until``, ``cache_dir``, ``fingerprints``,
    ``hash_inputs``); ``keywords`` make one, or replace its values. ``input_state``:
    what :func:`graphkit.builds.uptodate.input_state` said of ``sources`` just now (a
    transcript build takes the files and their stat from it). ``table_sink``: handed
    each table of a row build as it is projected (:func:`graphkit.projection.project.project`).

    >>> result = build("samples/rows")
    >>> result.summary()["nodes"]["Session"]
    12
    >>> build("samples/rows", BuildOptions(granularity="message")).graph.granularity
    'message'
    >>> from graphkit.builds.run import example_rows
    >>> build(records_table(example_rows())).graph.node_counts()["Thread"]
    5
    """
    import time

    options = BuildOptions.of(options, **keywords)
    if options.partitioned:
        raise GraphkitError("a partitioned build (--engine, --partitions) writes a snapshot",
                            hint="call build_snapshot(sources, SNAPSHOT_DIR, options)")
    contract = options.contract
    c = contract if isinstance(contract, LoadedContract) else load_contract(contract)
    t0 = time.perf_counter()
    if (options.cache_dir is not None and not options.strict and options.since is None
            and options.until is None and not isinstance(sources, pa.Table)
            and not _row_files_among(as_paths(sources), input_state)):
        # Transcripts alone: build by link groups, keeping unchanged groups' graphs.
        from graphkit.builds.incremental.splice import (
            SpliceUnusable,
            splice_build,
            transcript_roots,
        )

        roots = transcript_roots(as_paths(sources), input_state)
        if roots:
            try:
                proj, rows = splice_build(roots, c, options, progress=progress,
                                          inputs=input_state)
                return BuildResult(c, proj, rows, {"read+project": time.perf_counter() - t0})
            except SpliceUnusable:
                pass
    with ThreadPoolExecutor(max_workers=1) as background:
        hashing = None
        spec = read_spec(c, options.include_content)
        if isinstance(sources, pa.Table):
            rows = SourceRows()
            held = [conform_table(c, computed_columns(sources, spec), "<table>")]
        else:
            paths = as_paths(sources)
            if options.fingerprints:
                # Hashing the input files (asked for) reads every byte of them, content
                # columns too, but holds no GIL: it runs beside read and projection.
                hashing = background.submit(row_file_fingerprints, paths, options.hash_inputs)
            rows = read_sources(paths, spec, strict=options.strict, since=options.since,
                                cache_dir=options.cache_dir, progress=progress,
                                fingerprints=False)
            held = [conform_sources(c, rows, since=options.since, until=options.until)]
        t1 = time.perf_counter()
        if progress:
            progress(f"projecting {held[0].num_rows} rows with {c.name} v{c.version}")
        # Hand the table over instead of keeping a reference here: project() drops
        # the columns it does not need early, and the originals can be freed then.
        proj = project(c, held.pop(), granularity=options.granularity,
                       include_content=options.include_content, sink=table_sink)
        t2 = time.perf_counter()
        if hashing is not None:
            # Row files first, then the transcripts' own: the order read_sources gives.
            rows.fingerprints[:0] = hashing.result()
    return BuildResult(c, proj, rows, {"read": t1 - t0, "project": t2 - t1})


def _row_files_among(paths: list[Path], inputs: list[list[Any]] | None) -> bool:
    """Whether a source is surely no transcript folder, so the spliced transcript build
    cannot apply (``transcript_roots`` would say None) and its imports (msgspec, the
    splice engine: ~0.1 CPU-s) need not be paid. Judged only where ``transcript_roots``
    itself asks ``source_kind``: a file, or a folder the stat walk found Parquet in."""
    from graphkit.builds.uptodate import source_tails
    from graphkit.sources.read import source_kind

    for p in paths:
        path = Path(p).expanduser()
        if not path.exists():
            return True
        root = str(path.resolve()).rstrip(os.sep) + os.sep
        asked = path.is_file() or (inputs is not None and any(
            end in source_tails(root, inputs) for end in (".parquet\n", ".pq\n")))
        if asked and source_kind(path) not in ("claude", "codex"):
            return True
    return False


@dataclass
class RowsResult:
    """What :func:`write_rows` wrote."""

    out: str
    rows: int
    skipped: list[dict[str, Any]]
    left_out: list[str]  # content columns not written (no --include-content)
    notes: list[str] = field(default_factory=list)  # what the reading noted (repairs)


def write_rows(sources: str | Path | Sequence[str | Path], out: Path | str,
               options: BuildOptions | None = None, *, progress: Progress | None = None,
               **keywords: Any) -> RowsResult:
    """Write the full ``ai_gateway_messages`` rows of ``sources`` to ``out``: Parquet
    (``.parquet``, ``.pq``, no suffix, or ``-`` for stdout) or JSON Lines (``.jsonl``,
    ``.ndjson``); another suffix is refused before anything is read.

    ``out`` is a file (written to a temporary file and renamed into place; a symbolic
    link's target is written), or an existing special file such as a pipe (written
    through, never replaced). It may not be a source, a transcript or a snapshot's file.
    Of ``options`` (or the ``keywords`` that make them) the reading ones apply:
    ``strict``, ``since``/``until``, ``cache_dir``, and ``include_content`` (content
    columns are left out without it; with it the file is private, 0600).
    """
    from graphkit.core.schema import CONTENT_COLUMNS
    from graphkit.sources.full_schema import read_message_rows

    o = BuildOptions.of(options, **keywords)
    paths = as_paths(sources)
    fmt = rows_format(out)
    if str(out) != "-":
        from graphkit.core.files import check_output

        check_output(out, sources=paths, what="rows file")  # before a long read
    if progress:
        progress("reading " + ", ".join(str(p) for p in paths))
    result = read_message_rows(paths, strict=o.strict, since=o.since, until=o.until,
                               cache_dir=o.cache_dir, include_content=o.include_content,
                               progress=progress)
    left_out = [] if o.include_content else list(CONTENT_COLUMNS)
    if progress:
        progress(f"writing {result.table.num_rows} rows to {out}")
    _write_rows_file(result.table, out, fmt, paths,
                     private=o.include_content)
    # The reading's notes and findings, as build prints them: a transcript line whose
    # lone surrogate was replaced is a finding only, and `rows` said nothing of it.
    return RowsResult(str(out), result.table.num_rows, list(result.skipped), left_out,
                      source_messages(result.account))


# What `rows --out` writes, by the output's suffix: what `graphkit build` reads back.
_ROWS_FORMATS = {".parquet": "parquet", ".pq": "parquet", "": "parquet",
                 ".jsonl": "jsonl", ".ndjson": "jsonl"}


def rows_format(out: Path | str) -> str:
    """``"parquet"`` or ``"jsonl"``: the format a rows file named ``out`` is written
    in (stdout and special files: Parquet); :class:`GraphkitError` for another suffix
    (``x.jsonl`` silently got Parquet, which ``graphkit build x.jsonl`` then refused).

    >>> rows_format("rows.jsonl"), rows_format("-"), rows_format("r.parquet")
    ('jsonl', 'parquet', 'parquet')
    """
    if str(out) == "-":
        return "parquet"
    path = Path(out)
    suffix = path.suffix.lower()
    fmt = _ROWS_FORMATS.get(suffix)
    if fmt is None:
        if path.exists() and not path.is_file() and not path.is_dir():
            return "parquet"  # a pipe or device: no suffix to go by
        raise GraphkitError(f"cannot write rows as {suffix!r}", path=str(out),
                            hint="name the file .parquet (Parquet) or .jsonl (JSON Lines)")
    return fmt


def _write_rows_file(table: pa.Table, out: Path | str, fmt: str,
                     sources: Sequence[Path], *, private: bool) -> None:
    import errno
    import sys

    import pyarrow.parquet as pq

    from graphkit.core.files import output_file, write_error

    if str(out) == "-":
        try:
            pq.write_table(table, pa.PythonFile(sys.stdout.buffer, mode="w"))
        except OSError as exc:  # stdout on a full disk; a closed pipe is the CLI's to end
            if exc.errno == errno.EPIPE:
                raise
            raise write_error(exc, "stdout") from None
        return
    with output_file(out, sources=sources, what="rows file", private=private) as f:
        if fmt == "jsonl":
            write_json_lines(table, f)
        else:
            pq.write_table(table, pa.PythonFile(f, mode="w"))


def write_json_lines(table: pa.Table, out: Any) -> None:
    """``table`` as JSON Lines to the binary file ``out``, one object per row, a batch
    at a time: timestamps as ISO 8601 text, nulls as null (what the row files' reader
    reads back to the same rows)."""
    for batch in table.to_batches(max_chunksize=8192):
        lines = [msgspec.json.encode(row) for row in batch.to_pylist()]
        out.write(b"\n".join(lines) + b"\n" if lines else b"")


def check(sources: str | Path | Sequence[str | Path], options: BuildOptions | None = None,
          *, progress: Progress | None = None,
          **keywords: Any) -> tuple[int, list[Finding]]:
    """Identity checks of ``sources`` without building: the number of rows read and the
    findings (empty when all is well). Of ``options`` (or the ``keywords`` that make
    them) ``contract`` and ``since``/``until`` (rows in that time only) apply."""
    from graphkit.projection.checks import check_rows, reading_findings

    o = BuildOptions.of(options, **keywords)
    c = o.contract if isinstance(o.contract, LoadedContract) else load_contract(o.contract)
    rows = read_sources(as_paths(sources), read_spec(c), since=o.since, fingerprints=False,
                        progress=progress)
    table = conform_sources(c, rows, since=o.since, until=o.until)
    if progress:
        progress(f"checking {table.num_rows} rows")
    return table.num_rows, reading_findings(rows) + check_rows(c, table)


def graph_from_records(
    records: list[dict[str, Any]],
    *,
    contract: str | LoadedContract = DEFAULT_CONTRACT,
    granularity: str = "thread",
) -> GraphTables:
    """Project a few rows given as dicts (columns as in ``ai_gateway_messages``)."""
    c = contract if isinstance(contract, LoadedContract) else load_contract(contract)
    table = records_table(records)
    return project(c, conform_table(c, table, "<records>"), granularity=granularity).graph


def records_table(records: list[dict[str, Any]]) -> pa.Table:
    """Rows given as dicts as an Arrow table of ``ai_gateway_messages`` columns
    (every column any record names, typed as in the schema)."""
    names = [n for n in MESSAGES_SCHEMA.names if any(n in r for r in records)]
    schema = pa.schema([MESSAGES_SCHEMA.field(n).with_nullable(True) for n in names])
    return pa.Table.from_pylist(records, schema=schema)


def example_rows() -> list[dict[str, Any]]:
    """A tiny Claude session: main loop → subagent ``ag-1`` → nested ``ag-2``,
    and a Codex root thread ``th-root`` with child ``th-child``."""
    t = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)

    def row(i: int, **kw: Any) -> dict[str, Any]:
        base = {"session_id": "sess-1", "message_id": f"m{i}", "part_id": f"m{i}:0",
                "message_created_at": t + timedelta(seconds=i), "message_index": i,
                "part_type": "text", "schema_version": 7}
        base.update(kw)
        return base

    def spawned(call: str) -> str:
        return json.dumps({"claude": {"spawned_by_tool_use_id": call}})

    return [
        row(1, part_type="tool_call", tool_name="Task", tool_call_id="toolu_1"),
        row(2, agent_id="ag-1", attributes=spawned("toolu_1"), part_type="tool_call",
            tool_name="Agent", tool_call_id="toolu_2"),
        row(3, agent_id="ag-2", attributes=spawned("toolu_2")),
        row(4, session_id="th-root", conversation_id="th-root"),
        row(5, session_id="th-root", conversation_id="th-child", parent_thread_id="th-root"),
    ]


def example_graph() -> GraphTables:
    """The graph of :func:`example_rows` (for docstring examples)."""
    return graph_from_records(example_rows())
