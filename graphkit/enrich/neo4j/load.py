"""Writing a :class:`GraphTables` into Neo4j: schema, node batches, then
relationship batches in parallel sessions that never contend.

:meth:`Neo4jStore.load <graphkit.enrich.neo4j.store.Neo4jStore.load>` is the
entry point; what each batch sends is :mod:`~graphkit.enrich.neo4j.cypher`'s
and :mod:`~graphkit.enrich.neo4j.convert`'s, how relationships are split
:mod:`~graphkit.enrich.neo4j.plan`'s.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from graphkit.core.errors import StoreError, WrittenMeanwhile
from graphkit.core.graph import GraphTables
from graphkit.core.progress import ProgressLike, Task, as_progress
from graphkit.enrich.base import IfExists, LoadReport
from graphkit.enrich.neo4j import convert, cypher, plan
from graphkit.enrich.neo4j.lock import LOCK_LABEL as LOCK_LABEL  # where it was

IF_EXISTS_CHOICES: tuple[str, ...] = ("merge", "replace", "fail")

# A node of this label exists while a load runs; a killed or failed one leaves it, and
# graph reads then say the graph is incomplete (Neo4jStore.unfinished_loads).
LOAD_MARKER = "GraphkitLoad"


class LoadTarget(Protocol):
    """What a load writes into and asks along the way: the interface
    :class:`~graphkit.enrich.neo4j.store.Neo4jStore` offers this module (named here,
    so the load needs no import of the store that calls it)."""

    batch_size: int
    workers: int
    indexes: tuple[tuple[str, str], ...]

    def load_lock(self, wait: float | None = None, progress: ProgressLike = None,
                  engine: str = "driver") -> AbstractContextManager[None]:
        """Hold the database's one load lock while the body runs."""

    def ensure_schema(self, labels: Sequence[str]) -> None:
        """Uniqueness on ``id`` for every label and the lookup indexes."""

    def unfinished_loads(self) -> list[dict[str, Any]]:
        """The loads that began writing and have not finished."""

    def delete_labels(self, labels: Sequence[str], batch_size: int | None = None) -> int:
        """Detach-delete every node with one of ``labels``."""

    def node_counts(self, labels: Sequence[str]) -> dict[str, int]:
        """Number of nodes per label."""

    def leader_counts(self, labels: Sequence[str]) -> dict[str, int]:
        """Number of nodes per label, read where writes go (the cluster leader)."""

    def write(self, query: str, **params: Any) -> int:
        """One managed write transaction; its count."""

    def write_ids(self, query: str, **params: Any) -> tuple[np.ndarray, np.ndarray]:
        """One managed write of a node batch: rows written and their internal ids."""


def load_graph(
    store: LoadTarget,
    graph: GraphTables,
    *,
    if_exists: IfExists = "merge",
    batch_size: int | None = None,
    workers: int | None = None,
    progress: ProgressLike = None,
    lock_wait: float | None = None,
) -> LoadReport:
    """What :meth:`Neo4jStore.load` does (its docstring says how)."""
    if if_exists not in IF_EXISTS_CHOICES:
        raise StoreError(
            f"unknown if_exists {if_exists!r}", hint=f"use one of {IF_EXISTS_CHOICES}"
        )
    size = batch_size or store.batch_size
    n_workers = workers or store.workers
    if n_workers < 1:
        raise StoreError(f"workers must be positive, got {n_workers}")
    started = time.perf_counter()
    labels = sorted(graph.nodes)
    # Building every query first validates every name before anything is written.
    for lab in labels:
        cypher.merge_nodes(lab, convert.node_props(graph.nodes[lab].table))
    for t, e in sorted(graph.edges.items()):
        cypher.merge_relationships(t, e.source_type, e.target_type, convert.edge_props(e.table))
    convert.check_columns(graph)
    convert.check_indexed(graph, list(store.indexes))
    report = LoadReport(batch_size=size)
    # Another graphkit load into this database waits here (at most lock_wait seconds).
    with store.load_lock(lock_wait, progress):
        _check_fail(store, labels, if_exists)
        meter = _load_locked(store, graph, labels, if_exists, size, n_workers, progress,
                             report)
    meter.task.done()
    report.seconds = time.perf_counter() - started
    return report

@contextmanager
def load_marker(store: LoadTarget, labels: list[str], if_exists: str) -> Iterator[None]:
    """A committed :data:`LOAD_MARKER` node while the body writes, removed (with the
    markers this load makes stale, :func:`cypher.delete_load_markers`) only if it
    finishes: a load killed, or failed, midway leaves the database saying its graph
    is incomplete. (Before, only a replace said so: a killed merge or create left
    half a graph that every read reported as whole.)"""
    token = secrets.token_hex(8)
    store.write(cypher.create_load_marker(LOAD_MARKER), labels=labels, mode=if_exists,
                 token=token, host=socket.gethostname(), pid=os.getpid())
    yield
    store.write(cypher.delete_load_markers(LOAD_MARKER), token=token, labels=labels,
                 replace=if_exists == "replace")


def _check_fail(store: LoadTarget, labels: list[str], if_exists: IfExists) -> None:
    if labels and if_exists == "fail":
        existing = {k: v for k, v in store.node_counts(labels).items() if v}
        if existing:
            raise StoreError(
                "the database already holds this graph's labels "
                + ", ".join(f"{k} ({v})" for k, v in existing.items()),
                hint="load with --if-exists merge or replace",
            )


def _load_locked(store: LoadTarget, graph: GraphTables, labels: list[str],
                 if_exists: IfExists, size: int, n_workers: int, progress: ProgressLike,
                 report: LoadReport) -> _Meter:
    """:func:`load_graph`'s writes, under the load lock and marker: replace's delete,
    nodes, then relationships."""
    with ThreadPoolExecutor(1, thread_name_prefix="graphkit-plan") as planner:
        # The relationship plan is NumPy work: it runs while the server
        # builds the schema and takes the nodes.
        planned = planner.submit(plan.edge_partitions, graph, n_workers)
        store.ensure_schema(labels)
        report.resumed_replace = any(m["mode"] == "replace" for m in store.unfinished_loads())
        with load_marker(store, labels, if_exists):
            if if_exists == "replace":
                report.removed = store.delete_labels(labels)
            ends = sorted({*labels, *(e.source_type for e in graph.edges.values()),
                           *(e.target_type for e in graph.edges.values())})
            empty = not any(store.leader_counts(ends).values()) if ends else True
            report.write_mode = "create" if empty else "merge"
            report.workers = n_workers
            meter = _Meter(as_progress(progress).start(
                "loading Neo4j", unit="records",
                total=sum(graph.node_counts().values()) + sum(graph.edge_counts().values())))
            node_ids = np.full(plan.node_offsets(graph)[1], -1, np.int64)
            try:
                report.nodes = _load_nodes(store, graph, empty, size, n_workers, meter, node_ids)
                _load_edges(store, graph, planned.result(), empty, size, meter, report, node_ids)
            except WrittenMeanwhile:
                if not empty:
                    raise
                # A writer other than a graphkit load (those wait for the lock) created
                # one of these nodes since the database was seen empty. Merging is
                # idempotent, so the whole graph is written again that way.
                report.write_mode = "merge"
                node_ids[:] = -1
                report.nodes = _load_nodes(store, graph, False, size, n_workers, meter, node_ids)
                _load_edges(store, graph, planned.result(), False, size, meter, report, node_ids)
    return meter


def _load_nodes(store: LoadTarget, graph: GraphTables, create: bool, size: int, n_workers: int,
                meter: _Meter, node_ids: np.ndarray) -> dict[str, int]:
    """Every node batch, ``n_workers`` at a time (distinct ids never contend).

    Each batch returns its nodes' internal ids, kept in ``node_ids`` at the
    nodes' positions (:func:`plan.node_offsets`) for the relationships.
    """
    offsets, _ = plan.node_offsets(graph)
    jobs: list[tuple[str, str, int, pa.Table]] = []
    for label in sorted(graph.nodes):
        table = graph.nodes[label].table
        props, epoch = convert.node_props(table), convert.epoch_columns(table)
        # CREATE would refuse a second row with the same id: MERGE folds them.
        query = (cypher.create_nodes(label, props, epoch, node_ids=True)
                 if create and not plan.has_duplicate_ids(table)
                 else cypher.merge_nodes(label, props, epoch, node_ids=True))
        if epoch:
            table = convert.as_epoch(table, epoch)
        jobs += [(label, query, offsets[label] + i, table.slice(i, size))
                 for i in range(0, table.num_rows, size)]
    written = {label: 0 for label in sorted(graph.nodes)}

    def one(job: tuple[str, str, int, pa.Table]) -> tuple[str, int]:
        label, query, start, rows = job
        at, ids = store.write_ids(query, **convert.node_params(rows))
        node_ids[start + at] = ids
        meter.add(rows.num_rows, label)
        return label, len(at)

    with ThreadPoolExecutor(n_workers, thread_name_prefix="graphkit-load") as pool:
        for label, done in pool.map(one, jobs):
            written[label] += done
    return written

def _load_edges(store: LoadTarget, graph: GraphTables, load_plan: plan.LoadPlan, create: bool,
                size: int, meter: _Meter, report: LoadReport,
                node_ids: np.ndarray) -> None:
    """Each partition's relationship batches in one session, the partitions at once.

    Rows whose two ends this load wrote find them by internal id; the
    others (an end not among the graph's nodes) by label and id, as before.
    """
    by_id, by_key, tables = {}, {}, {}
    for etype, e in graph.edges.items():
        props, epoch = convert.edge_props(e.table), convert.epoch_columns(e.table)
        creating = create and etype not in load_plan.repeated_pairs
        by_id[etype] = cypher.relationships_by_node_id(
            etype, e.source_type, e.target_type, props, epoch, create=creating)
        by_key[etype] = (
            cypher.create_relationships(etype, e.source_type, e.target_type, props, epoch)
            if creating
            else cypher.merge_relationships(etype, e.source_type, e.target_type, props,
                                            epoch))
        tables[etype] = convert.as_epoch(e.table, epoch) if epoch else e.table
    parts = len(next(iter(load_plan.partitions.values()), [None]))
    failed = threading.Event()

    def write(etype: str, rows: np.ndarray) -> int:
        ends = load_plan.ends[etype]
        src, dst = ends.source[rows], ends.target[rows]
        s = np.where(src >= 0, node_ids[src], -1)
        t = np.where(dst >= 0, node_ids[dst], -1)
        known = (src >= 0) & (dst >= 0) & (s >= 0) & (t >= 0)
        done = 0
        if known.any():
            batch = tables[etype].take(pa.array(rows[known]))
            done += store.write(by_id[etype], s=s[known].tolist(), t=t[known].tolist(),
                                **convert.edge_params(batch))
        if not known.all():
            batch = tables[etype].take(pa.array(rows[~known]))
            done += store.write(by_key[etype], **convert.edge_params(batch))
        return done

    def one_partition(p: int) -> dict[str, int]:
        written: dict[str, int] = {}
        for etype in sorted(graph.edges):
            rows = load_plan.partitions[etype][p]
            for i in range(0, len(rows), size):
                if failed.is_set():  # another partition failed: stop early
                    return written
                try:
                    done = write(etype, rows[i:i + size])
                except BaseException:
                    failed.set()
                    raise
                written[etype] = written.get(etype, 0) + done
                meter.add(len(rows[i:i + size]), etype)
        return written

    totals = {etype: 0 for etype in sorted(graph.edges)}
    with ThreadPoolExecutor(parts, thread_name_prefix="graphkit-load") as pool:
        for written in pool.map(one_partition, range(parts)):
            for etype, done in written.items():
                totals[etype] += done
    report.edges = totals
    for etype, edges in sorted(graph.edges.items()):
        if totals[etype] < edges.table.num_rows:
            report.skipped_edges[etype] = edges.table.num_rows - totals[etype]


class _Meter:
    """Records written so far, counted on a progress task after every batch (from
    any thread), with the label or type the batch wrote."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self._lock = threading.Lock()

    def add(self, records: int, what: str) -> None:
        with self._lock:
            self.task.set_source(what)
            self.task.advance(records)
