"""The partitioned build on one machine, bounded in memory.

1. *Shuffle*: sources are read one piece (row file) at a time; each row goes to
   the partition of its partition key (CRC-32 of ``session_id`` by default) and is
   appended to that partition's Parquet file in a temporary folder.
2. *Project*: each partition file is read back and projected on its own
   (:func:`graphkit.builds.partitioned.partition.project_partition`); its partial tables are
   cut into id-range buckets and spilled, one row group per bucket.
3. *Merge*: type by type (node types first), bucket by bucket, the partitions' row
   groups of one bucket are merged (:mod:`graphkit.builds.partitioned.merge`) and
   appended to the snapshot file (:mod:`graphkit.builds.partitioned.output`); an edge
   a partition could not resolve is looked up among the merged nodes then.

Peak memory is one piece, one partition's projection, or one bucket — not the input.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from graphkit.builds.options import BuildOptions
from graphkit.builds.partitioned.inputs import (
    ReadAccount,
    auto_partitions,
    estimate_rows,
    partition_of,
    plan_sources,
    read_pieces,
    rows_schema,
)
from graphkit.builds.partitioned.merge import Resolver, final_schema, merge_parts, unify
from graphkit.builds.partitioned.output import SnapshotFolder
from graphkit.builds.partitioned.partition import PartOutput, project_partition, split_buckets
from graphkit.builds.partitioned.plan import ORD, Plan, describe, make_plan
from graphkit.contract.loader import LoadedContract, load_contract
from graphkit.core.files import temporary_folder
from graphkit.snapshot.format import COMPRESSION
from graphkit.snapshot.rejects import skipped_lines_path, write_rejects, write_skipped_lines
from graphkit.sources.read import Progress

# Output rows per merge bucket (of the largest type), so a bucket stays small.
ROWS_PER_BUCKET = 1_000_000
# Rows the shuffle holds before writing them to the partition files.
FLUSH_ROWS = 131_072


def buckets_for(rows: int) -> int:
    """Merge buckets for an input of ``rows`` rows: never depends on the partitions."""
    return max(1, min(4096, math.ceil(rows / ROWS_PER_BUCKET)))


@dataclass
class Totals:
    """Counts added up over partitions, and what every partition reports alike."""

    rows_read: int = 0
    rows_used: int = 0
    duplicates: int = 0
    dropped: dict[str, dict[str, int]] = field(default_factory=dict)
    rejects: list[pa.Table] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    # The edges partitions could not resolve, looked up at the merge.
    resolver: Resolver = field(default_factory=Resolver)

    def add(self, counts: dict[str, Any], rejects: pa.Table) -> None:
        """Add one partition's counts and rejects."""
        self.rows_read += counts["rows_read"]
        self.rows_used += counts["rows_used"]
        self.duplicates += counts["duplicates"]
        self.add_dropped(counts["dropped_edges"])
        self.resolver.need(counts.get("unresolved_ends", {}))
        if rejects.num_rows:
            self.rejects.append(rejects)
        self.meta = {k: counts[k] for k in ("content_properties", "edge_ends", "keys",
                                            "lineage")}

    def add_dropped(self, dropped: dict[str, dict[str, int]]) -> None:
        """Add edge rows dropped, by edge type and reason."""
        for etype, d in dropped.items():
            mine = self.dropped.setdefault(etype, {})
            for k, v in d.items():
                mine[k] = mine.get(k, 0) + v

    def rejects_table(self) -> pa.Table | None:
        """All rejects in input order (as the unpartitioned build lists them)."""
        if not self.rejects:
            return None
        t = pa.concat_tables(self.rejects, promote_options="permissive")
        t = t.take(pa.array(np.argsort(t.column(ORD).to_numpy(), kind="stable")))
        return t.drop_columns([ORD])


@dataclass
class EngineResult:
    """What a partitioned build did: its summary, skipped lines, rejects, manifest."""

    summary: dict[str, Any]
    skipped: list[dict[str, Any]]
    rejects: pa.Table | None
    manifest: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)


def summarize(totals: Totals, counts: dict[str, dict[str, int]], skipped: int,
              engine: dict[str, Any]) -> dict[str, Any]:
    """The build summary, with the keys :meth:`graphkit.builds.result.BuildResult.summary` has."""
    return {
        "rows_read": totals.rows_read,
        "rows_used": totals.rows_used,
        "rows_rejected": sum(t.num_rows for t in totals.rejects),
        "duplicate_rows": totals.duplicates,
        "lines_skipped": skipped,
        "nodes": counts["node"],
        "edges": counts["edge"],
        "dropped_edges": {t: d for t, d in sorted(totals.dropped.items()) if any(d.values())},
        "engine": engine,
    }


class _Shuffle:
    """Rows appended to one Arrow IPC stream per partition (LZ4-compressed).

    IPC, not Parquet: a partition gets many small slices, and IPC writes each as
    it is (no per-slice dictionaries or encodings), so the shuffle costs about a
    copy. Slices are buffered until :data:`FLUSH_ROWS` rows wait in all, then
    each partition's are written as one batch.
    """

    def __init__(self, folder: Path, partitions: int) -> None:
        self.folder = folder
        self.partitions = partitions
        self.writers: dict[int, pa.ipc.RecordBatchStreamWriter] = {}
        self.schema: pa.Schema | None = None
        self.buffers: dict[int, list[pa.Table]] = {}
        self.buffered = 0

    def add(self, table: pa.Table, key: str) -> None:
        if self.schema is None:
            self.schema = table.schema
        elif table.schema != self.schema:
            table = pa.concat_tables([self.schema.empty_table(), table],
                                     promote_options="permissive").cast(self.schema)
        part = partition_of(table.column(key), self.partitions)
        order = np.argsort(part, kind="stable")
        sorted_part = part[order]
        table = table.take(pa.array(order))
        for p in np.unique(sorted_part):
            lo, hi = np.searchsorted(sorted_part, [p, p + 1])
            self.buffers.setdefault(int(p), []).append(table.slice(int(lo), int(hi - lo)))
        self.buffered += table.num_rows
        if self.buffered >= FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        for p, tables in sorted(self.buffers.items()):
            w = self.writers.get(p)
            if w is None:
                assert self.schema is not None
                w = pa.ipc.new_stream(str(self.path(p)), self.schema,
                                      options=pa.ipc.IpcWriteOptions(compression="lz4"))
                self.writers[p] = w
            w.write_table(pa.concat_tables(tables).combine_chunks())
        self.buffers = {}
        self.buffered = 0

    def path(self, p: int) -> Path:
        return self.folder / f"rows-{p:05d}.arrows"

    def read(self, p: int) -> pa.Table:
        with pa.ipc.open_stream(str(self.path(p))) as r:
            return r.read_all()

    def close(self) -> None:
        self.flush()
        for w in self.writers.values():
            w.close()


class _Partials:
    """Each partition's partial tables, one Parquet file per type, a row group per bucket."""

    def __init__(self, folder: Path, buckets: int) -> None:
        self.folder = folder
        self.buckets = buckets
        # (kind, type) -> [(file, {bucket: row group})]
        self.files: dict[tuple[str, str], list[tuple[Path, dict[int, int]]]] = {}
        self.schemas: dict[tuple[str, str], list[pa.Schema]] = {}

    def add(self, p: int, out: PartOutput) -> None:
        for (kind, type_), table in out.tables.items():
            self.schemas.setdefault((kind, type_), []).append(table.schema)
            pieces = split_buckets(kind, table, self.buckets)
            if not pieces:
                continue
            path = self.folder / f"{kind}-{type_}-{p:05d}.parquet"
            groups = {}
            # Spill files of partial tables, read back once: the snapshot's codec too.
            with pq.ParquetWriter(str(path), table.schema, compression=COMPRESSION) as w:
                for i, (b, piece) in enumerate(pieces):
                    w.write_table(piece, row_group_size=max(1, piece.num_rows))
                    groups[b] = i
            self.files.setdefault((kind, type_), []).append((path, groups))

    def bucket(self, key: tuple[str, str], b: int) -> list[pa.Table]:
        out = []
        for path, groups in self.files.get(key, []):
            if b in groups:
                out.append(pq.ParquetFile(str(path)).read_row_group(groups[b]))
        return out


def merge_order(key: tuple[str, str]) -> tuple[bool, str, str]:
    """Node types before edge types: an edge is resolved against merged nodes."""
    return (key[0] != "node", *key)


def merge_into(plan: Plan, partials: _Partials, folder: SnapshotFolder,
               say: Progress, totals: Totals) -> dict[str, dict[str, int]]:
    """Merge every type bucket by bucket into the snapshot folder; counts by kind.
    Edges partitions could not resolve are resolved (their drops added to ``totals``)."""
    counts: dict[str, dict[str, int]] = {"node": {}, "edge": {}}
    resolver = totals.resolver
    for key in sorted(partials.schemas, key=merge_order):
        kind, type_ = key
        schema = unify(partials.schemas[key], plan.types[key].columns)
        tp = plan.types[key]
        writer = folder.writer(kind, type_, final_schema(schema))
        for b in range(partials.buckets):
            merged = merge_parts(plan, tp, partials.bucket(key, b), schema)
            if kind == "node":
                resolver.see(type_, merged)
            else:
                merged = resolver.resolve(tp, merged)
            writer.add(merged)
        writer.close()
        counts[kind][type_] = writer.rows
        say(f"merged {kind} {type_}: {writer.rows} rows")
    totals.add_dropped(resolver.dropped)
    return {k: dict(sorted(v.items())) for k, v in counts.items()}


@dataclass(frozen=True)
class BuildStart:
    """What a partitioned build (local or Spark) settles before reading a row: the
    contract's plan, the input pieces (and every file listed), and how many
    partitions and buckets the input's estimated size asks for."""

    plan: Plan
    listed: list[str]
    pieces: list[tuple[str, list[Path]]]
    partitions: int
    buckets: int


def plan_build(sources: Sequence[Path], options: BuildOptions,
               partition_key: str | None = None) -> BuildStart:
    """The :class:`BuildStart` of a partitioned build of ``sources`` with ``options``."""
    contract = options.contract
    c = contract if isinstance(contract, LoadedContract) else load_contract(contract)
    listed: list[str] = []
    pieces = plan_sources(sources, listed)
    estimate = estimate_rows(pieces)
    return BuildStart(make_plan(c, partition_key), listed, pieces,
                      partition_count(options, estimate), buckets_for(estimate))


def build_local(
    sources: Sequence[Path],
    snapshot_dir: Path,
    options: BuildOptions | None = None,
    *,
    partition_key: str | None = None,
    progress: Progress | None = None,
    work_dir: Path | None = None,
    rejects_file: Path | None = None,
    **keywords: Any,
) -> EngineResult:
    """Build ``sources`` partition by partition into the snapshot ``snapshot_dir``.

    ``options`` (or the ``keywords`` that make them): the contract, ``partitions`` (a
    count; ``auto`` or none: sized from the input) and what shapes the graph, as for
    :func:`graphkit.builds.run.build`. Rejected rows are written to ``rejects_file``
    when given (and named in the summary), as ``graphkit build`` does.
    """
    options = BuildOptions.of(options, **keywords)
    say = progress or (lambda _m: None)
    start = plan_build(sources, options, partition_key)
    plan, listed, pieces = start.plan, start.listed, start.pieces
    c, n_parts, n_buckets = plan.contract, start.partitions, start.buckets
    timings: dict[str, float] = {}
    snapshot_dir = Path(snapshot_dir)
    snapshot_dir.parent.mkdir(parents=True, exist_ok=True)
    base = work_dir or snapshot_dir.parent
    # Named after the snapshot and this process: the next build deletes it if a kill
    # left it (a TemporaryDirectory's spill folder outlived every later run).
    with temporary_folder(Path(base) / snapshot_dir.name) as tmp:
        account = ReadAccount(listed=listed)
        t0 = time.perf_counter()
        shuffle = _Shuffle(tmp, n_parts)
        try:
            for table in read_pieces(pieces, c, account, options, progress):
                shuffle.add(table, plan.partition_key)
                del table
        finally:
            shuffle.close()
        timings["read"] = time.perf_counter() - t0
        say(f"{account.rows} rows in {n_parts} partition(s); projecting each")
        totals = Totals()
        partials = _Partials(tmp, n_buckets)
        # No rows at all (zero-row files) still project once, from no rows in the
        # partitions' schema: the in-memory build writes every type's empty table.
        empty = (shuffle.schema or rows_schema(c)).empty_table()
        for p in range(n_parts):
            path = shuffle.path(p)
            if not path.exists() and p > 0:
                continue
            rows = shuffle.read(p) if path.exists() else empty
            out = project_partition(plan, rows, granularity=options.granularity,
                                    include_content=options.include_content)
            del rows
            path.unlink(missing_ok=True)
            totals.add(out.counts, out.rejects)
            partials.add(p, out)
            del out
            pa.default_memory_pool().release_unused()
        timings["project"] = time.perf_counter() - t0 - timings["read"]
        folder = SnapshotFolder(snapshot_dir)
        try:
            counts = merge_into(plan, partials, folder, say, totals)
            engine = {"name": "local", "partitions": n_parts, "buckets": n_buckets,
                      **describe(plan)}
            summary = summarize(totals, counts, len(account.skipped), engine)
            rejects = totals.rejects_table()
            side_files(summary, rejects, account.skipped, rejects_file, options)
            manifest = finish(folder, plan, totals, summary, account, options)
        except BaseException:
            folder.abandon()
            raise
        timings["merge"] = time.perf_counter() - t0 - timings["read"] - timings["project"]
    return EngineResult(summary, account.skipped, rejects, manifest, timings)


def partition_count(options: BuildOptions, rows: int) -> int:
    """The partitions of a build of about ``rows`` rows: the count asked for, else sized
    from the input."""
    return options.partitions if isinstance(options.partitions, int) else auto_partitions(rows)


def side_files(summary: dict[str, Any], rejects: pa.Table | None,
               skipped: list[dict[str, Any]], rejects_file: Path | None,
               options: BuildOptions) -> None:
    """Write the rejects and skipped-lines files beside the snapshot (when a
    rejects file is named) and name them in the summary, as the in-memory build does."""
    if rejects_file is None:
        return
    if rejects is not None:
        write_rejects(rejects_file, rejects, include_content=options.include_content)
        summary["rejects_file"] = str(rejects_file)
    if skipped:
        path = skipped_lines_path(rejects_file)
        write_skipped_lines(path, skipped)
        summary["skipped_lines_file"] = str(path)


def finish(folder: SnapshotFolder, plan: Plan, totals: Totals, summary: dict[str, Any],
           account: ReadAccount, options: BuildOptions) -> dict[str, Any]:
    """Fill the manifest's per-type entries and write it."""
    spec = plan.contract.spec
    indexes = {r.type: list(r.index) for r in spec.nodes}
    keys = totals.meta.get("keys", {})
    for t, n in summary["nodes"].items():
        folder.nodes[t] = {"file": f"nodes/{t}.parquet", "count": n, "key": keys.get(t, []),
                           "index": indexes.get(t, [])}
    ends = totals.meta.get("edge_ends", {})
    for t, n in summary["edges"].items():
        src, dst = ends.get(t, [None, None])
        folder.edges[t] = {"file": f"edges/{t}.parquet", "count": n, "source_type": src,
                           "target_type": dst}
    meta = {"contract": plan.contract.name, "version": plan.contract.version,
            "granularity": options.granularity, "lineage": totals.meta.get("lineage")}
    return folder.finish(meta, inputs=account.listed_order(), summary=summary,
                         include_content=options.include_content)
