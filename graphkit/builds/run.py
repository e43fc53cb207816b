"""The library calls behind every command: build, write rows, check, load.

Each ``graphkit`` command parses its options, calls one function here (or in
:mod:`graphkit.queries` / :mod:`graphkit.snapshot`) and prints what it returns;
tests and notebooks call the same functions.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import msgspec
import pyarrow as pa

from graphkit.builds.uptodate import (  # noqa: F401 (the library's names for them)
    SKIPPED_IN_SUMMARY,
    default_cache_dir,
    skipped_lines_summary,
)
from graphkit.contract.loader import DEFAULT_CONTRACT, LoadedContract, load_contract
from graphkit.core.errors import GraphkitError
from graphkit.core.graph import GraphTables
from graphkit.core.schema import MESSAGES_SCHEMA
from graphkit.projection.conform import conform_sources, conform_table, read_spec
from graphkit.projection.project import Projection, project
from graphkit.sources.read import (
    Progress,
    SourceRows,
    computed_columns,
    read_sources,
    row_file_fingerprints,
)

if TYPE_CHECKING:
    from graphkit.enrich.base import IfExists  # for typing only: 6 dataclasses to build
    from graphkit.enrich.neo4j.store import Neo4jStore
    from graphkit.projection.checks import Finding
    from graphkit.projection.project import TableSink
    from graphkit.snapshot.write import EarlyTables

# What a caller may pass as sources: one path, several, or rows already in memory.
Sources: TypeAlias = str | Path | Sequence[str | Path] | pa.Table


def as_paths(sources: str | Path | Sequence[str | Path]) -> list[Path]:
    """``sources`` as a list of paths: a single path is accepted where a list is.

    >>> as_paths("samples/rows")
    [PosixPath('samples/rows')]
    """
    if isinstance(sources, str | Path):
        return [Path(sources)]
    return [Path(p) for p in sources]


@dataclass
class BuildResult:
    """A built graph and the account of the rows behind it."""

    contract: LoadedContract
    projection: Projection
    sources: SourceRows
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def graph(self) -> GraphTables:
        """The projected graph."""
        return self.projection.graph

    def summary(self) -> dict[str, Any]:
        """Counts for the closing summary and the snapshot manifest."""
        p = self.projection
        return {
            "rows_read": p.rows_read,
            "rows_used": p.rows_used,
            "rows_rejected": p.rows_rejected,
            "duplicate_rows": p.duplicates,
            "lines_skipped": len(self.sources.skipped),
            "nodes": self.graph.node_counts(),
            "edges": self.graph.edge_counts(),
            "dropped_edges": {t: d for t, d in p.dropped_edges.items() if any(d.values())},
        }


def source_messages(sources: SourceRows) -> list[str]:
    """What reading the sources has to say: its notes, then each finding not already
    among them (``check: message``), one line each."""
    out = list(sources.notes)
    out += [f"{f['check']}: {f['message']}" for f in sources.findings
            if f["message"] not in sources.notes]
    return out


def build(
    sources: Sources,
    *,
    contract: str | LoadedContract = DEFAULT_CONTRACT,
    granularity: str = "thread",
    strict: bool = False,
    since: datetime | None = None,
    until: datetime | None = None,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    fingerprints: bool = True,
    include_content: bool = False,
    hash_inputs: bool = False,
    input_state: list[list[Any]] | None = None,
    table_sink: TableSink | None = None,
) -> BuildResult:
    """Read ``sources``, check them against the contract and project the graph.

    ``sources`` is a path, a list of paths, or an Arrow table of
    ``ai_gateway_messages`` rows already in memory. ``fingerprints`` records each
    input file's size and mtime for the manifest, ``hash_inputs`` each row file's
    SHA-256 too. ``input_state``: what :func:`graphkit.builds.uptodate.input_state` said of
    ``sources`` just now (a transcript build takes the files and their stat from it).
    ``table_sink``: handed each table of a row build as it is projected
    (:func:`graphkit.projection.project.project`).

    >>> result = build("samples/rows")
    >>> result.summary()["nodes"]["Session"]
    12
    >>> from graphkit.builds.run import example_rows
    >>> build(records_table(example_rows())).graph.node_counts()["Thread"]
    5
    """
    import time

    c = contract if isinstance(contract, LoadedContract) else load_contract(contract)
    t0 = time.perf_counter()
    if (cache_dir is not None and not strict and since is None and until is None
            and not isinstance(sources, pa.Table)
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
                proj, rows = splice_build(roots, c, cache_dir=Path(cache_dir),
                                          granularity=granularity,
                                          include_content=include_content,
                                          progress=progress, inputs=input_state)
                return BuildResult(c, proj, rows, {"read+project": time.perf_counter() - t0})
            except SpliceUnusable:
                pass
    with ThreadPoolExecutor(max_workers=1) as background:
        hashing = None
        if isinstance(sources, pa.Table):
            rows = SourceRows()
            held = [conform_table(c, computed_columns(sources, read_spec(c, include_content)),
                                  "<table>")]
        else:
            paths = as_paths(sources)
            if fingerprints:
                # Hashing the input files (asked for) reads every byte of them, content
                # columns too, but holds no GIL: it runs beside read and projection.
                hashing = background.submit(row_file_fingerprints, paths, hash_inputs)
            rows = read_sources(paths, read_spec(c, include_content), strict=strict,
                                since=since, cache_dir=cache_dir, progress=progress,
                                fingerprints=False)
            held = [conform_sources(c, rows, since=since, until=until)]
        t1 = time.perf_counter()
        if progress:
            progress(f"projecting {held[0].num_rows} rows with {c.name} v{c.version}")
        # Hand the table over instead of keeping a reference here: project() drops
        # the columns it does not need early, and the originals can be freed then.
        proj = project(c, held.pop(), granularity=granularity, include_content=include_content,
                       sink=table_sink)
        t2 = time.perf_counter()
        if hashing is not None:
            # Row files first, then the transcripts' own: the order read_sources gives.
            rows.fingerprints[:0] = hashing.result()
    return BuildResult(c, proj, rows, {"read": t1 - t0, "project": t2 - t1})


@contextmanager
def _cache_errors(cache_dir: Path | None) -> Iterator[None]:
    """An OSError on a path in the build's cache folder (a file where a folder of it
    should be, a folder where one of its files should be, a full disk) as one line
    saying what to do: the folder is graphkit's own, and a fresh one only costs time."""
    try:
        yield
    except OSError as exc:
        if cache_dir is None:
            raise
        top = os.path.abspath(cache_dir)
        inside = [str(f) for f in (exc.filename, exc.filename2) if f is not None and
                  os.path.commonpath([top, os.path.abspath(f)]) == top]
        if not inside:
            raise
        raise GraphkitError(f"cannot use the build cache: {exc.strerror or exc}",
                            path=inside[-1],
                            hint=f"remove {cache_dir} (the next build makes it again) or give "
                                 "another --cache-dir"
                            ) from None


def _check_cache_writable(cache_dir: Path | None) -> None:
    """Refuse, before anything is built, a cache folder (or the folder it would be made
    in) the user may not write: the build record is written after the snapshot, so a
    refusal then left a new snapshot in place of the old under an exit 2 (another
    user's snapshot in a folder anyone may write, its cache theirs)."""
    if cache_dir is None:
        return
    path = Path(os.path.abspath(cache_dir))
    from graphkit.core.files import snapshot_around

    around = snapshot_around(path)
    if around is not None:  # its files there: that snapshot could not be replaced
        raise GraphkitError(f"refusing to keep the build cache inside the snapshot {around}",
                            path=str(cache_dir), hint="give --cache-dir a folder outside it")
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is None or not existing.is_dir():
        return  # a file in the way is the build's own one-line refusal (_cache_errors)
    if not os.access(existing, os.W_OK | os.X_OK):
        raise GraphkitError("cannot use the build cache: Permission denied",
                            path=str(existing),
                            hint=f"give a --cache-dir the user running graphkit may write "
                                 f"to, or remove {cache_dir} (the next build makes it again)")


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


def default_rejects_path(snapshot_dir: Path | None) -> Path:
    """``SNAPSHOT.rejects.jsonl`` beside the snapshot (``graphkit.rejects.jsonl``
    when the graph goes only to Neo4j)."""
    target = snapshot_dir or Path("graphkit")
    return target.with_name(target.name + ".rejects.jsonl")


def build_snapshot(
    sources: Sources,
    snapshot_dir: Path | None,
    *,
    rejects_path: Path | None = None,
    store: str = "snapshot",
    neo4j: Neo4jStore | None = None,
    if_exists: IfExists = "merge",
    batch_size: int | None = None,
    progress: Progress | None = None,
    input_state: list[list[Any]] | None = None,
    **build_options: Any,
) -> tuple[BuildResult, dict[str, Any]]:
    """Build, write rejects and the snapshot, and load the graph into ``store``.

    ``store`` is ``snapshot`` (the snapshot alone), ``networkx`` (also loaded
    into an in-process NetworkX graph, whose counts the summary reports) or
    ``neo4j`` (also loaded into ``neo4j``, a connected store). Returns the
    build and the summary the CLI prints. ``input_state``: what
    :func:`graphkit.builds.uptodate.input_state` says of ``sources``, when the caller
    has just asked (the walk of every file under them is not repeated).
    """
    if snapshot_dir is None and store != "neo4j":
        raise GraphkitError("no snapshot folder given",
                            hint="give --snapshot DIR to say where the graph goes "
                                 "(or --store neo4j)")
    if store == "neo4j" and neo4j is None:
        raise GraphkitError("--store neo4j needs a Neo4j connection",
                            hint="set NEO4J_URI (and NEO4J_USERNAME/NEO4J_PASSWORD)")
    if snapshot_dir is not None:
        from graphkit.snapshot.write import check_snapshot_target

        check_snapshot_target(snapshot_dir)  # a file in the way fails now, not after the build
    say = progress or (lambda _msg: None)
    include_content = bool(build_options.get("include_content"))
    if "cache_dir" not in build_options or (build_options["cache_dir"] is None
                                            and snapshot_dir is not None):
        # The CLI passes None when --cache-dir is not given: the cache goes beside the
        # snapshot then (a build with no cache parsed every transcript every time).
        build_options["cache_dir"] = default_cache_dir(snapshot_dir)
    rejects_file = rejects_path or default_rejects_path(snapshot_dir)
    from graphkit.snapshot.rejects import check_rejects_folder, check_side_names

    check_side_names(rejects_file, build_options["cache_dir"])  # first: is_dir() raises
    check_rejects_folder(rejects_file, [] if isinstance(sources, pa.Table) else
                         as_paths(sources))
    _check_cache_writable(build_options["cache_dir"])
    reuse = _Reuse.start(sources, snapshot_dir, store, rejects_file, rejects_path,
                         build_options, input_state)
    if reuse is not None and (done := reuse.previous(
            build_options.get("contract", DEFAULT_CONTRACT), say)) is not None:
        return done
    early = None
    if snapshot_dir is not None:
        from graphkit.snapshot.write import EarlyTables

        # The snapshot's tables are written as the projection makes them.
        early = EarlyTables(snapshot_dir, include_content)
    try:
        return _build_and_write(sources, snapshot_dir, early, rejects_file, rejects_path,
                                store, neo4j, if_exists, batch_size, progress, input_state,
                                reuse, build_options)
    except BaseException:
        if early is not None:
            early.abandon()
        raise


def _build_and_write(sources: Sources, snapshot_dir: Path | None, early: EarlyTables | None,
                     rejects_file: Path, rejects_path: Path | None, store: str,
                     neo4j: Neo4jStore | None, if_exists: IfExists, batch_size: int | None,
                     progress: Progress | None, input_state: list[list[Any]] | None,
                     reuse: _Reuse | None,
                     build_options: dict[str, Any]) -> tuple[BuildResult, dict[str, Any]]:
    """:func:`build_snapshot` once it knows a build is needed: build, write the rejects
    and the snapshot (``early``: its tables already being written), load ``store``."""
    from graphkit.snapshot import write_snapshot
    from graphkit.snapshot.rejects import (
        remove_stale,
        skipped_lines_path,
        write_rejects,
        write_skipped_lines,
    )

    say = progress or (lambda _msg: None)
    include_content = bool(build_options.get("include_content"))
    with _cache_errors(build_options["cache_dir"]):
        result = build(sources, progress=progress, **build_options,
                       input_state=reuse.inputs if reuse is not None else input_state,
                       table_sink=early.add if early is not None else None)
    summary = result.summary()
    if result.projection.rows_rejected:
        write_rejects(rejects_file, result.projection.rejects, include_content=include_content)
        summary["rejects_file"] = str(rejects_file)
    elif rejects_path is None:
        remove_stale(rejects_file)  # it would claim rejects this build did not have
    skipped_file = skipped_lines_path(rejects_file)
    if result.sources.skipped:
        write_skipped_lines(skipped_file, result.sources.skipped)
        summary["skipped_lines_file"] = str(skipped_file)
    elif rejects_path is None:
        remove_stale(skipped_file)
    manifest = None  # the one written (the build record takes its tables' digests)
    if snapshot_dir is not None:
        say(f"writing {snapshot_dir}")
        manifest = write_snapshot(result.graph, snapshot_dir,
                                  inputs=result.sources.fingerprints, summary=summary,
                                  include_content=include_content, early=early)
        summary["snapshot"] = str(snapshot_dir)
        if not isinstance(sources, pa.Table):  # rows in memory have no source set to index
            from graphkit.snapshot.index import remember_snapshot

            summary.update(remember_snapshot(snapshot_dir, as_paths(sources), result.graph))
    if result.sources.transcripts:
        # After the snapshot: how much the cache saved is no part of what was built.
        summary["transcripts"] = dict(result.sources.transcripts)
    if reuse is not None:
        with _cache_errors(reuse.cache_dir):
            reuse.record(result.contract, summary, result.sources.skipped, manifest)
    if store == "networkx":
        from graphkit.enrich.networkx_store import NetworkXStore

        summary["networkx"] = NetworkXStore().load(result.graph).to_json()
    if neo4j is not None:
        say(f"loading into Neo4j at {neo4j.config.display_uri}")
        summary["neo4j"] = neo4j.load(result.graph, if_exists=if_exists,
                                      batch_size=batch_size, progress=progress).to_json()
    return result, summary


class _ReusedResult(BuildResult):
    """The result of a rebuild that found nothing changed: the graph is the snapshot's,
    read only if asked for (the command itself needs only the summary)."""

    def __init__(self, contract: LoadedContract, sources: SourceRows, snapshot_dir: Path,
                 summary: dict[str, Any], rejects_file: Path | None) -> None:
        self.contract, self.sources, self.timings = contract, sources, {}
        self._dir, self._summary, self._rejects = snapshot_dir, summary, rejects_file
        self._projection: Projection | None = None

    @property
    def projection(self) -> Projection:  # type: ignore[override]
        if self._projection is None:
            from graphkit.snapshot import read_snapshot

            s = self._summary
            rejects = pa.table({})
            if s.get("rows_rejected") and self._rejects is not None:
                import pyarrow.json as pj

                rejects = pj.read_json(self._rejects)
            self._projection = Projection(read_snapshot(self._dir), s["rows_read"],
                                          s["rows_used"], s["duplicate_rows"], rejects,
                                          s.get("dropped_edges", {}))
        return self._projection

    def summary(self) -> dict[str, Any]:
        return dict(self._summary)


class _Reuse(msgspec.Struct):
    """Whether a build may keep the previous snapshot (:mod:`graphkit.builds.uptodate`)."""

    cache_dir: Path
    key: str
    inputs: list[list[Any]]
    snapshot_dir: Path
    side_files: list[Path]
    rejects_file: Path
    sources: list[Path]
    granularity: str

    @classmethod
    def start(cls, sources: Sources, snapshot_dir: Path | None, store: str,
              rejects_file: Path, rejects_path: Path | None, options: dict[str, Any],
              inputs: list[list[Any]] | None = None) -> _Reuse | None:
        """Only a build from files into a snapshot alone is skipped when nothing changed."""
        if isinstance(sources, pa.Table) or snapshot_dir is None or store != "snapshot":
            return None
        from graphkit.builds.uptodate import build_key, input_state
        from graphkit.snapshot.rejects import skipped_lines_path

        paths = as_paths(sources)
        shaping = {k: v for k, v in options.items() if k not in ("contract", "cache_dir")}
        shaping["rejects_path"] = rejects_path
        key = build_key(options.get("contract", DEFAULT_CONTRACT), paths, snapshot_dir,
                        shaping)
        return cls(Path(options["cache_dir"]), key,
                   input_state(paths) if inputs is None else inputs, Path(snapshot_dir),
                   [rejects_file, skipped_lines_path(rejects_file)], rejects_file, paths,
                   str(options.get("granularity", "thread")))

    def previous(self, contract: str | LoadedContract,
                 say: Callable[[str], None]) -> tuple[BuildResult, dict[str, Any]] | None:
        from graphkit.builds.uptodate import kept_build

        found = kept_build(self.cache_dir, self.key, self.sources, self.snapshot_dir,
                           self.inputs)
        if found is None:
            return None
        say(f"nothing changed since {self.snapshot_dir} was built; kept as it is")
        summary, skipped = found
        c = contract if isinstance(contract, LoadedContract) else load_contract(contract)
        rows = SourceRows(skipped=skipped, transcripts=summary.get("transcripts", {}))
        rejects = self.rejects_file if summary.get("rejects_file") else None
        return _ReusedResult(c, rows, self.snapshot_dir, summary, rejects), summary

    def record(self, contract: LoadedContract, summary: dict[str, Any],
               skipped: list[dict[str, Any]], manifest: dict[str, Any] | None = None) -> None:
        from graphkit.builds.uptodate import record_build

        record_build(self.cache_dir, self.key, self.inputs, self.snapshot_dir,
                     self.side_files, (contract.name, contract.version), self.granularity,
                     summary, skipped, manifest)


@dataclass
class RowsResult:
    """What :func:`write_rows` wrote."""

    out: str
    rows: int
    skipped: list[dict[str, Any]]
    left_out: list[str]  # content columns not written (no --include-content)
    notes: list[str] = field(default_factory=list)  # what the reading noted (repairs)


def write_rows(sources: str | Path | Sequence[str | Path], out: Path | str, *,
               progress: Progress | None = None, **options: Any) -> RowsResult:
    """Write the full ``ai_gateway_messages`` rows of ``sources`` to ``out``: Parquet
    (``.parquet``, ``.pq``, no suffix, or ``-`` for stdout) or JSON Lines (``.jsonl``,
    ``.ndjson``); another suffix is refused before anything is read.

    ``out`` is a file (written to a temporary file and renamed into place; a symbolic
    link's target is written), or an existing special file such as a pipe (written
    through, never replaced). It may not be a source, a transcript or a snapshot's file.
    Content columns are left out unless ``include_content=True``.
    """
    from graphkit.sources.full_schema import read_message_rows

    paths = as_paths(sources)
    fmt = rows_format(out)
    if str(out) != "-":
        from graphkit.core.files import check_output

        check_output(out, sources=paths, what="rows file")  # before a long read
    if progress:
        progress("reading " + ", ".join(str(p) for p in paths))
    result = read_message_rows(paths, progress=progress, **options)
    from graphkit.core.schema import CONTENT_COLUMNS

    left_out = [] if options.get("include_content") else list(CONTENT_COLUMNS)
    if progress:
        progress(f"writing {result.table.num_rows} rows to {out}")
    _write_rows_file(result.table, out, fmt, paths,
                     private=bool(options.get("include_content")))
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


def check(sources: str | Path | Sequence[str | Path], *,
          contract: str | LoadedContract = DEFAULT_CONTRACT, since: datetime | None = None,
          until: datetime | None = None,
          progress: Progress | None = None) -> tuple[int, list[Finding]]:
    """Identity checks of ``sources`` without building (rows from ``since`` to
    ``until`` only): the number of rows read and the findings (empty when all is well)."""
    from graphkit.projection.checks import check_rows, reading_findings

    c = contract if isinstance(contract, LoadedContract) else load_contract(contract)
    rows = read_sources(as_paths(sources), read_spec(c), since=since, fingerprints=False,
                        progress=progress)
    table = conform_sources(c, rows, since=since, until=until)
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
