"""The partitioned build on Spark: the same projection and merge, run by Spark.

- Parquet row files are read by Spark's own reader (the contract's columns, each
  row's file and row index from ``_metadata``); every batch is conformed,
  tagged and numbered by graphkit's code in ``mapInArrow``. Other pieces
  (JSON Lines, Arrow IPC, transcripts, HypAware Iceberg caches) are read with
  graphkit's readers on the driver, one piece at a time, and handed to Spark as
  Arrow tables.
- ``groupBy(partition).applyInArrow`` runs
  :func:`graphkit.builds.partitioned.partition.project_partition` on each partition's rows
  and returns its partial tables cut into id-range buckets (Arrow IPC bytes).
- ``groupBy(kind, type, bucket).applyInArrow`` runs
  :func:`graphkit.builds.partitioned.merge.merge_parts` on each bucket.
- The driver streams the merged buckets in order into the snapshot files
  (``toLocalIterator``: one Spark partition at a time), node types first, so
  that an edge a partition could not resolve is looked up among the merged
  nodes (:class:`graphkit.builds.partitioned.merge.Resolver`) before it is written.

Executors need graphkit and its dependencies importable: with a cluster master
graphkit ships itself as a zip (``addPyFile``); pyarrow, numpy, pydantic and
PyYAML must be installed there (see the README).
"""

from __future__ import annotations

import io
import json
import shutil
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphkit.builds.options import BuildOptions
from graphkit.builds.partitioned.inputs import (
    ReadAccount,
    plain,
    read_pieces,
    rows_schema,
)
from graphkit.builds.partitioned.local import (
    EngineResult,
    Totals,
    finish,
    plan_build,
    side_files,
    summarize,
)
from graphkit.builds.partitioned.merge import final_schema, merge_parts, unify
from graphkit.builds.partitioned.output import SnapshotFolder, TableWriter
from graphkit.builds.partitioned.partition import project_partition, split_buckets
from graphkit.builds.partitioned.plan import ORD, Plan, describe
from graphkit.core.errors import GraphkitError, SourceError
from graphkit.core.files import work_folder
from graphkit.core.schema import FILE_COL, ROW_COL
from graphkit.core.spark import (
    active_session,
    ship_graphkit,
    spark_failure,
    start_session,
    use_worker_python,
)
from graphkit.projection.conform import check_schema, conform, read_spec
from graphkit.sources.read import Progress, computed_columns
from graphkit.sources.row_files import fingerprint

_PART = "__gk_part"
_PATH = "__gk_path"
_ROWIDX = "__gk_rowidx"
# Input positions: piece number in the high bits, row within the piece below.
_PIECE_SHIFT = 36
_MARK = "graphkit-error: "
_OUT = "rec string, kind string, type string, bucket int, payload binary"


def _ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue()


def _from_ipc(data: bytes | bytearray | memoryview) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(bytes(data))).read_all()


def _guard(fn: Any) -> Any:
    """``fn`` with a user mistake (GraphkitError) passed back to the driver as
    text Spark keeps in its error, not as an executor traceback."""
    def run(table: pa.Table) -> pa.Table:
        try:
            return fn(table)
        except GraphkitError as exc:
            raise RuntimeError(_MARK + str(exc)) from None
    return run


def _guard_iter(fn: Any) -> Any:
    """:func:`_guard` for a function returning an iterator (``mapInArrow``)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        try:
            yield from fn(batches)
        except GraphkitError as exc:
            raise RuntimeError(_MARK + str(exc)) from None
    return run


def _user_error(exc: BaseException) -> GraphkitError | None:
    text = str(exc)
    at = text.find(_MARK)
    if at < 0:
        return None
    return GraphkitError(text[at + len(_MARK):].splitlines()[0].strip())


def _file_uri(path: Path) -> str:
    # A plain absolute path: Spark reads its argument as a Hadoop path, where a
    # percent-escaped `=` (hive folders) would name another file.
    return str(path.resolve())


def _uri_key(uri: str) -> str:
    """A file URI as Spark reports it (``file:/a``, ``file:///a``) → the absolute path."""
    return str(Path(unquote(urlparse(uri).path)).resolve()) if "://" in uri or \
        uri.startswith("file:") else str(Path(uri).resolve())


def _spark_reads(t: pa.DataType) -> bool:
    """Whether Spark's Parquet reader reads a column of type ``t`` as pyarrow does:
    it refuses nanosecond times, reads unsigned integers as decimals and has no
    column type of only nulls."""
    if pa.types.is_dictionary(t):
        return _spark_reads(t.value_type)
    if pa.types.is_timestamp(t):
        return t.unit != "ns"
    if pa.types.is_null(t) or pa.types.is_unsigned_integer(t):
        return False
    if pa.types.is_nested(t):
        return all(_spark_reads(t.field(i).type) for i in range(t.num_fields))
    return True


def _parquet_groups(plan: Plan, files: list[tuple[int, Path]],
                    include_content: bool) -> tuple[list[list[tuple[int, Path]]], set[int]]:
    """The Parquet row files Spark reads, in groups of one column-type set (Spark's
    schema merge refuses text beside binary, or a column of only nulls beside text,
    which graphkit reads alike), and the pieces it cannot read as graphkit does
    (nanosecond times, unsigned integers), left to graphkit's reader."""
    spec = read_spec(plan.contract, include_content)
    wanted = spec.wanted()
    groups: dict[tuple[tuple[str, str], ...], list[tuple[int, Path]]] = {}
    driver: set[int] = set()
    for i, f in files:
        try:
            schema = pq.read_schema(f)
        except (OSError, pa.ArrowInvalid) as exc:
            raise SourceError(f"cannot read rows: {str(exc).splitlines()[0]}",
                              path=str(f)) from None
        check_schema(plan.contract, schema, str(f))
        cols = [fl for fl in schema if fl.name in wanted]
        if not all(_spark_reads(fl.type) for fl in cols):
            driver.add(i)
            continue
        key = tuple(sorted((fl.name, str(fl.type)) for fl in cols))
        groups.setdefault(key, []).append((i, f))
    return list(groups.values()), driver


def _parquet_frame(spark: Any, plan: Plan, files: list[tuple[int, Path]],
                   options: BuildOptions) -> Any:
    """Spark's read of Parquet row files of one column-type set (:func:`_parquet_groups`),
    conformed by graphkit per batch."""
    contract = plan.contract
    # What the executors' function takes with it: these values, not the options.
    since, until = options.since, options.until
    names: set[str] = set()
    for _i, f in files:
        names |= set(pq.read_schema(f).names)
    # What read_sources reads: the contract's columns (no content unless asked)
    # and what the sources' computed columns (touched_files) are made from.
    spec = read_spec(contract, options.include_content)
    wanted = [n for n in sorted(names) if n in spec.wanted()]
    labels = {_uri_key(_file_uri(f)): (str(f), i) for i, f in files}
    target = rows_schema(contract)
    df = spark.read.option("mergeSchema", "true").parquet(*[_file_uri(f) for _i, f in files])
    df = df.selectExpr(*[f"`{n}`" for n in wanted], f"_metadata.file_path AS {_PATH}",
                       f"_metadata.row_index AS {_ROWIDX}")

    def conform_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from graphkit.sources.read import since_filter

        for batch in batches:
            t = pa.Table.from_batches([batch])
            paths = t.column(_PATH).combine_chunks()
            for path in paths.unique().to_pylist():
                part = t.filter(pc.equal(t.column(_PATH), path))
                label, piece = labels[_uri_key(path)]
                idx = part.column(_ROWIDX).cast(pa.int64())
                raw = computed_columns(part.drop_columns([_PATH, _ROWIDX]), spec)
                rows = conform(contract, raw, label)
                rows = rows.append_column(FILE_COL, pa.array([label] * part.num_rows,
                                                             pa.string()))
                rows = rows.append_column(ROW_COL, pc.add(idx, 1))
                rows = rows.append_column(ORD, pc.add(idx, piece << _PIECE_SHIFT))
                rows = plain(since_filter(rows, since, until)).cast(target)
                yield from rows.to_batches()

    return df.mapInArrow(_guard_iter(conform_batches), _spark_schema(target))


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def _input_frame(spark: Any, plan: Plan, pieces: list[tuple[str, list[Path]]],
                 account: ReadAccount, options: BuildOptions, progress: Progress | None,
                 say: Progress) -> Any:
    """All input rows as one DataFrame of :func:`rows_schema`, with a partition column."""
    target = rows_schema(plan.contract)
    frames = []
    parquet = [(i, ps[0]) for i, (kind, ps) in enumerate(pieces)
               if kind == "rows" and ps[0].suffix.lower() in (".parquet", ".pq")]
    groups, driver = _parquet_groups(plan, parquet, options.include_content)
    in_spark = {i for i, _f in parquet} - driver
    for i, piece in enumerate(pieces):
        if i in in_spark:
            if options.fingerprints:
                account.fingerprints.append(fingerprint(piece[1][0]))
            continue
        say(f"reading {', '.join(map(str, piece[1]))} with graphkit's reader")
        for table in read_pieces([piece], plan.contract, account, options, progress):
            # Positions as Spark numbers the Parquet rows: piece, then row.
            pos = pc.add(table.column(ORD), i << _PIECE_SHIFT)
            table = table.set_column(table.schema.get_field_index(ORD), ORD, pos)
            frames.append(spark.createDataFrame(table.cast(target)))
    if in_spark:
        say(f"Spark reads {len(in_spark)} Parquet file(s)")
    frames.extend(_parquet_frame(spark, plan, group, options) for group in groups)
    if not frames:  # only zero-row files graphkit's reader found nothing in
        frames.append(spark.createDataFrame(target.empty_table()))
    df = frames[0]
    for f in frames[1:]:
        df = df.unionByName(f)
    return df


def _project_stage(df: Any, plan: Plan, n_parts: int, n_buckets: int,
                   options: BuildOptions) -> Any:
    from pyspark.sql import functions as F

    target = rows_schema(plan.contract)
    # What the executors' function takes with it: these values, not the options.
    granularity, include_content = options.granularity, options.include_content

    def run(table: pa.Table) -> pa.Table:
        rows = table.drop_columns([_PART]).cast(target)
        out = project_partition(plan, rows, granularity=granularity,
                                include_content=include_content)
        recs: list[tuple[str, str, str, int, bytes]] = []
        for (kind, type_), t in sorted(out.tables.items()):
            recs.append(("schema", kind, type_, -1, _ipc(t.schema.empty_table())))
            recs.extend(("part", kind, type_, b, _ipc(piece))
                        for b, piece in split_buckets(kind, t, n_buckets))
        recs.append(("rejects", "", "", -1, _ipc(out.rejects)))
        recs.append(("counts", "", "", -1, json.dumps(out.counts).encode()))
        cols = list(zip(*recs, strict=True))
        return pa.table({"rec": list(cols[0]), "kind": list(cols[1]), "type": list(cols[2]),
                         "bucket": pa.array(cols[3], pa.int32()),
                         "payload": pa.array(cols[4], pa.binary())})

    keyed = df.withColumn(_PART, F.pmod(F.xxhash64(F.col(plan.partition_key)), F.lit(n_parts)))
    return keyed.groupBy(_PART).applyInArrow(_guard(run), _OUT)


def _merge_stage(parts: Any, plan: Plan, schemas: dict[tuple[str, str], pa.Schema]) -> Any:
    def run(table: pa.Table) -> pa.Table:
        kind, type_ = table.column("kind")[0].as_py(), table.column("type")[0].as_py()
        b = table.column("bucket")[0].as_py()
        pieces = [_from_ipc(p) for p in table.column("payload").to_pylist()]
        merged = merge_parts(plan, plan.types[(kind, type_)], pieces, schemas[(kind, type_)])
        return pa.table({"rec": ["merged"], "kind": [kind], "type": [type_],
                         "bucket": pa.array([b], pa.int32()),
                         "payload": pa.array([_ipc(merged)], pa.binary())})

    return parts.filter("rec = 'part'").groupBy("kind", "type", "bucket") \
        .applyInArrow(_guard(run), _OUT)


def _collect_meta(stage: Any, totals: Totals,
                  plan: Plan) -> dict[tuple[str, str], pa.Schema]:
    """Partition counts and rejects into ``totals``; each type's unified schema."""
    schemas: dict[tuple[str, str], list[pa.Schema]] = {}
    for row in stage.filter("rec != 'part'").collect():
        if row["rec"] == "schema":
            schemas.setdefault((row["kind"], row["type"]), []).append(
                _from_ipc(row["payload"]).schema)
        elif row["rec"] == "rejects":
            totals.rejects.append(_from_ipc(row["payload"]))
        else:
            counts = json.loads(bytes(row["payload"]))
            totals.add(counts, pa.table({}))
    totals.rejects = [t for t in totals.rejects if t.num_rows]
    return {k: unify(v, plan.types[k].columns) for k, v in schemas.items()}


def _write_merged(merged: Any, plan: Plan, schemas: dict[tuple[str, str], pa.Schema],
                  folder: SnapshotFolder, say: Progress,
                  totals: Totals) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {"node": {}, "edge": {}}
    writers: dict[tuple[str, str], TableWriter] = {}
    resolver = totals.resolver
    # Persisted first: the range sort samples its input before sorting, which
    # would otherwise run every merge twice. toLocalIterator then holds one sorted
    # partition at a time on the driver. Nodes ("node" > "edge") come first: the
    # edges partitions could not resolve are looked up among them.
    merged = merged.persist()
    for row in merged.orderBy(merged["kind"].desc(), "type", "bucket").toLocalIterator():
        key = (row["kind"], row["type"])
        if key not in writers:
            writers[key] = folder.writer(*key, final_schema(schemas[key]))
        table = _from_ipc(row["payload"])
        if key[0] == "node":
            resolver.see(key[1], table)
        else:
            table = resolver.resolve(plan.types[key], table)
        writers[key].add(table)
    merged.unpersist()
    totals.add_dropped(resolver.dropped)
    for key, schema in schemas.items():
        w = writers.get(key) or folder.writer(*key, final_schema(schema))
        w.close()
        counts[key[0]][key[1]] = w.rows
        say(f"merged {key[0]} {key[1]}: {w.rows} rows")
    return {k: dict(sorted(v.items())) for k, v in counts.items()}


def build_spark(
    sources: Sequence[Path],
    snapshot_dir: Path,
    options: BuildOptions | None = None,
    *,
    partition_key: str | None = None,
    spark: Any = None,
    progress: Progress | None = None,
    rejects_file: Path | None = None,
    **keywords: Any,
) -> EngineResult:
    """Build ``sources`` on Spark into the snapshot ``snapshot_dir``: on ``spark`` (a
    session), else on one at ``options.spark_master`` (else the running one, else
    ``local[*]``). ``options`` (or the ``keywords`` that make them) as for
    :func:`graphkit.builds.partitioned.local.build_local`."""
    options = BuildOptions.of(options, **keywords)
    say = progress or (lambda _m: None)
    start = plan_build(sources, options, partition_key)
    plan, listed, pieces = start.plan, start.listed, start.pieces
    c, n_parts, n_buckets = plan.contract, start.partitions, start.buckets
    t0 = time.perf_counter()
    # A session this call starts is stopped at the end; one it was given, or
    # found running (spark-submit, a notebook), is left as it was.
    owned = spark is None and active_session() is None
    session = spark or start_session(options.spark_master)
    if session.sparkContext.master.startswith("local"):
        use_worker_python(session)  # a session found running too: its workers are ours
    timings = {"spark_start": time.perf_counter() - t0}
    session.conf.set("spark.sql.shuffle.partitions", str(n_parts))
    session.conf.set("spark.sql.session.timeZone", "UTC")
    account = ReadAccount(listed=listed)
    # Named after the snapshot and this process, beside it: the next build deletes it
    # if a kill left it.
    Path(snapshot_dir).parent.mkdir(parents=True, exist_ok=True)
    work = work_folder(Path(snapshot_dir))
    folder: SnapshotFolder | None = None
    stage = None
    try:
        ship_graphkit(session, work)
        df = _input_frame(session, plan, pieces, account, options, progress, say)
        stage = _project_stage(df, plan, n_parts, n_buckets, options)
        stage = stage.persist()
        totals = Totals()
        t1 = time.perf_counter()
        schemas = _collect_meta(stage, totals, plan)
        if not totals.meta:
            # No rows, so no partition ran: project no rows here, as the local
            # engines do, for every type's empty table and the contract's account.
            empty = project_partition(plan, rows_schema(c).empty_table(),
                                      granularity=options.granularity,
                                      include_content=options.include_content)
            totals.add(empty.counts, empty.rejects)
            schemas = {k: unify([t.schema]) for k, t in empty.tables.items()}
        account.rows = totals.rows_read
        timings["read_project"] = time.perf_counter() - t1
        folder = SnapshotFolder(Path(snapshot_dir))
        counts = _write_merged(_merge_stage(stage, plan, schemas), plan, schemas, folder, say,
                               totals)
        timings["merge"] = time.perf_counter() - t1 - timings["read_project"]
        engine = {"name": "spark", "master": session.sparkContext.master,
                  "partitions": n_parts, "buckets": n_buckets, **describe(plan)}
        summary = summarize(totals, counts, len(account.skipped), engine)
        rejects = totals.rejects_table()
        side_files(summary, rejects, account.skipped, rejects_file, options)
        manifest = finish(folder, plan, totals, summary, account, options)
    except GraphkitError:
        if folder is not None:
            folder.abandon()
        raise
    except Exception as exc:
        if folder is not None:
            folder.abandon()
        user = _user_error(exc) or spark_failure(exc, session)
        if user is not None:
            raise user from None
        raise
    finally:
        if stage is not None:
            stage.unpersist()
        shutil.rmtree(work, ignore_errors=True)
        if owned:
            session.stop()
    return EngineResult(summary, account.skipped, rejects, manifest, timings)
