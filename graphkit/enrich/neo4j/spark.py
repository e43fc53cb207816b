"""``graphkit load SNAPSHOT --engine spark``: Spark's executors write a snapshot
into an existing Neo4j through the Neo4j Connector for Apache Spark.

What runs where:

- The driver reads the snapshot (checked against its manifest, as the driver
  load does), takes the database's load lock and holds it (and the load marker)
  while the executors write, prepares the schema (uniqueness constraints, lookup indexes) and,
  for ``--if-exists fail|replace``, checks or clears the graph's labels.
- It cuts the relationships with :func:`graphkit.enrich.neo4j.plan.edge_partitions`
  (the same plan as the driver load): rows in different plan partitions share
  no end node but dense ones, and each partition's rows are in lock order.
- Executors write: every node table first (distinct ids never contend), then
  each relationship type with one Spark partition per plan partition, its rows
  kept in lock order. Each Spark task's connector batches ``UNWIND $events``
  ``batch_size`` rows into one transaction (retried by the connector).

The Cypher is graphkit's (``MERGE`` on ``id``, ``SET += {…}``, timestamps in
zone UTC as the driver load stores them), not the connector's own node/
relationship modes: those store a Spark timestamp as a LocalDateTime. So both
loads give the same graph, and a rerun is a no-op.

The connector is built for Spark 3 (Neo4j lists Spark 3.4/3.5 as supported);
graphkit uses its newest Scala 2.13 build on PySpark 4, where its write path
works (tested here against a real server; see docs/scale.md).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.core.errors import StoreError, first_line
from graphkit.core.graph import EDGE_SOURCE, EDGE_TARGET, NODE_ID, GraphTables
from graphkit.core.progress import ProgressLike
from graphkit.enrich.base import IfExists, LoadReport
from graphkit.enrich.neo4j import cypher, plan
from graphkit.enrich.neo4j.load import load_marker
from graphkit.enrich.neo4j.store import (
    DEFAULT_BATCH_SIZE,
    IF_EXISTS_CHOICES,
    Neo4jConfig,
    Neo4jStore,
)

# The newest Scala 2.13 build of the connector on Maven Central (PySpark 4 is
# Scala 2.13). spark-submit users pass it with --packages.
CONNECTOR = "org.neo4j:neo4j-connector-apache-spark_2.13:5.3.8_for_spark_3"
_FORMAT = "org.neo4j.spark.DataSource"
_PART = "__gk_part"
_ORDER = "__gk_order"
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def utc_columns(table: pa.Table) -> list[str]:
    """Property columns holding timestamps in zone UTC: these travel as epoch
    seconds and nanoseconds (``<name>__s``, ``<name>__ns``) and become zoned
    DateTimes in Cypher; the connector would store them as LocalDateTimes."""
    return [f.name for f in table.schema if pa.types.is_timestamp(f.type)
            and f.type.tz in ("UTC", "+00:00") and f.name not in (NODE_ID, EDGE_SOURCE,
                                                                  EDGE_TARGET)]


def split_epochs(table: pa.Table, names: Sequence[str]) -> pa.Table:
    """``table`` with each column of ``names`` replaced by its whole epoch seconds
    and the nanoseconds after them (floor division: right before 1970 too)."""
    for name in names:
        col = table.column(name).combine_chunks()
        per = _PER_SECOND[col.type.unit]
        ticks = pc.fill_null(col.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
        valid = pc.is_valid(col).to_numpy(zero_copy_only=False)
        seconds = pa.array(np.floor_divide(ticks, per), pa.int64(), mask=~valid)
        nanos = pa.array(np.mod(ticks, per) * (1_000_000_000 // per), pa.int64(), mask=~valid)
        i = table.schema.get_field_index(name)
        table = table.remove_column(i).append_column(f"{name}__s", seconds) \
            .append_column(f"{name}__ns", nanos)
    return table


def _value(name: str, stamps: Sequence[str]) -> str:
    if name not in stamps:
        return f"event.{cypher.quote_name(name, 'property')}"
    s, ns = (f"event.{cypher.quote_name(f'{name}__{k}', 'property')}" for k in ("s", "ns"))
    return (f"CASE WHEN {s} IS NULL THEN null ELSE datetime({{datetime: "
            f"datetime.fromepoch({s}, {ns}), timezone: 'UTC'}}) END")


def _props(props: Sequence[str], stamps: Sequence[str]) -> str:
    # Names are spliced quoted; values come from the connector's `event` rows.
    return "{" + ", ".join(f"{cypher.quote_name(p, 'property')}: {_value(p, stamps)}"
                           for p in props) + "}"


def node_query(label: str, props: Sequence[str], stamps: Sequence[str] = ()) -> str:
    """The connector's per-batch Cypher (it prepends ``UNWIND $events AS event``):
    upsert ``label`` nodes on ``id`` as :func:`cypher.merge_nodes` does."""
    return (f"MERGE (n:{cypher.quote_name(label)} {{id: event.id}})"
            f" SET n += {_props(props, stamps)}")


def relationship_query(rel_type: str, source_label: str, target_label: str,
                       props: Sequence[str], stamps: Sequence[str] = ()) -> str:
    """Upsert ``rel_type`` relationships between existing ends, as
    :func:`cypher.merge_relationships` does (a missing end writes nothing)."""
    return (f"MATCH (a:{cypher.quote_name(source_label)} {{id: event.source}})"
            f" MATCH (b:{cypher.quote_name(target_label)} {{id: event.target}})"
            f" MERGE (a)-[r:{cypher.quote_name(rel_type, 'relationship type')}]->(b)"
            f" SET r += {_props(props, stamps)}")


def planned_order(n_rows: int, partitions: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's plan partition and its place in that partition's lock order."""
    part = np.zeros(n_rows, np.int32)
    order = np.zeros(n_rows, np.int64)
    for p, rows in enumerate(partitions):
        part[rows] = p
        order[rows] = np.arange(len(rows))
    return part, order


def missing_ends(graph: GraphTables) -> dict[str, int]:
    """Per edge type, rows with an end that is not among the graph's nodes
    (they write nothing, as in the driver load)."""
    out = {}
    for etype, ends in plan.edge_ends(graph).items():
        n = int(np.count_nonzero((ends.source < 0) | (ends.target < 0)))
        if n:
            out[etype] = n
    return out


class _Writer:
    """The connector's options for one server, and its failures as StoreErrors."""

    def __init__(self, spark: Any, config: Neo4jConfig, batch_size: int) -> None:
        self.spark = spark
        self.config = config
        # Spark redacts option values whose key matches spark.redaction.regex
        # ("password" among them) in plans, logs and the UI.
        self.options = {"url": config.uri, "batch.size": str(batch_size),
                        "authentication.type": "basic" if config.password else "none"}
        if config.password is not None:
            self.options["authentication.basic.username"] = config.user
            self.options["authentication.basic.password"] = config.password
        if config.database:
            self.options["database"] = config.database

    def write(self, df: Any, query: str) -> None:
        try:
            df.write.format(_FORMAT).mode("Append").options(**self.options) \
                .option("query", query).save()
        except Exception as exc:
            raise self.error(exc) from None

    def error(self, exc: BaseException) -> StoreError:
        text = self.config.redact(str(exc))
        where = self.config.display_uri
        if "Failed to find the data source" in text or "DATA_SOURCE_NOT_FOUND" in text:
            return StoreError("the Neo4j Connector for Apache Spark is not on Spark's classpath",
                              hint=f"spark-submit --packages {CONNECTOR} (graphkit adds it "
                                   "to the Spark sessions it starts)")
        if "AuthenticationException" in text or "Unauthorized" in text:
            return StoreError(f"Neo4j at {where} refused the credentials of user "
                              f"{self.config.user!r}", hint="check NEO4J_USERNAME and "
                                                            "NEO4J_PASSWORD")
        if "ServiceUnavailable" in text:
            return StoreError(f"Spark executors cannot reach Neo4j at {where}",
                              hint="NEO4J_URI must name the server as the executors see it")
        cause = next((ln.strip() for ln in text.splitlines() if "Exception:" in ln), None)
        return StoreError(f"the Spark load into Neo4j at {where} failed: "
                          f"{(cause or first_line(exc))[:300]}")


def require_connector(spark: Any) -> None:
    """A one-line :class:`StoreError` now, before anything is written, if the
    connector's classes are not in Spark's JVM (a JVM's classpath is fixed when
    it starts: a session started without the package cannot gain it)."""
    try:
        jvm = spark.sparkContext._jvm
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(_FORMAT, False, loader)
    except Exception:
        raise StoreError("the Neo4j Connector for Apache Spark is not on Spark's classpath",
                         hint=f"spark-submit --packages {CONNECTOR} (graphkit adds it to the "
                              "Spark sessions it starts, if none runs yet)") from None


def _frame(spark: Any, table: pa.Table, parts: int) -> Any:
    return arrow_frame(spark, table).repartition(parts)


def _write_nodes(w: _Writer, graph: GraphTables, parts: int) -> dict[str, int]:
    written = {}
    for label in sorted(graph.nodes):
        table = graph.nodes[label].table
        stamps = utc_columns(table)
        props = [n for n in table.column_names if n != NODE_ID]
        if table.num_rows:
            w.write(_frame(w.spark, split_epochs(table, stamps), parts),
                    node_query(label, props, stamps))
        written[label] = table.num_rows
    return written


def relationship_frame(spark: Any, graph: GraphTables, etype: str,
                       load_plan: plan.LoadPlan, plan_columns: bool = False) -> Any:
    """``etype``'s rows as a DataFrame with one Spark partition per plan partition
    (range partitioning on its number 0..parts-1; two may share one), each in
    lock order. The plan columns are dropped after the sort (which keeps the
    order) unless ``plan_columns``."""
    from pyspark.sql import functions as F

    e = graph.edges[etype]
    parts = len(load_plan.partitions[etype])
    part, order = planned_order(e.table.num_rows, load_plan.partitions[etype])
    table = split_epochs(e.table, utc_columns(e.table)).append_column(_PART, pa.array(part)) \
        .append_column(_ORDER, pa.array(order))
    df = arrow_frame(spark, table).repartitionByRange(parts, F.col(_PART)) \
        .sortWithinPartitions(_PART, _ORDER)
    return df if plan_columns else df.drop(_PART, _ORDER)


def arrow_frame(spark: Any, table: pa.Table) -> Any:
    """An Arrow table as a DataFrame (sent from the driver's memory to Spark)."""
    return spark.createDataFrame(table)


def _write_edges(w: _Writer, graph: GraphTables, parts: int) -> None:
    load_plan = plan.edge_partitions(graph, parts)
    for etype in sorted(graph.edges):
        e = graph.edges[etype]
        if not e.table.num_rows:
            continue
        stamps = utc_columns(e.table)
        props = [n for n in e.table.column_names if n not in (EDGE_SOURCE, EDGE_TARGET)]
        w.write(relationship_frame(w.spark, graph, etype, load_plan),
                relationship_query(etype, e.source_type, e.target_type, props, stamps))


def load_spark(
    graph: GraphTables,
    store: Neo4jStore,
    spark: Any,
    *,
    if_exists: IfExists = "merge",
    batch_size: int | None = None,
    partitions: int | None = None,
    lock_wait: float | None = None,
    progress: ProgressLike = None,
) -> LoadReport:
    """Write ``graph`` into ``store``'s database from ``spark``'s executors
    (``partitions`` writers at once, default Spark's parallelism), holding the
    database's load lock (waiting at most ``lock_wait`` seconds for it, default
    the store's; ``progress`` hears who holds it meanwhile).

    ``if_exists`` as in :meth:`Neo4jStore.load`; rows are always ``MERGE``d, so
    a rerun (or a rerun after a failed one) converges to the same graph.
    """
    if if_exists not in IF_EXISTS_CHOICES:
        raise StoreError(f"unknown if_exists {if_exists!r}", hint=f"use one of "
                                                                 f"{IF_EXISTS_CHOICES}")
    started = time.perf_counter()
    size = batch_size or DEFAULT_BATCH_SIZE
    parts = partitions or max(1, int(spark.sparkContext.defaultParallelism))
    labels = sorted(graph.nodes)
    for lab in labels:  # every name checked before anything is written
        cypher.merge_nodes(lab, [n for n in graph.nodes[lab].table.column_names if n != NODE_ID])
    for t, e in graph.edges.items():
        cypher.merge_relationships(t, e.source_type, e.target_type,
                                   [n for n in e.table.column_names
                                    if n not in (EDGE_SOURCE, EDGE_TARGET)])
    require_connector(spark)
    report = LoadReport(batch_size=size, write_mode="merge", workers=parts)
    # The executors write in sessions of their own; this driver-side process holds
    # the database's load lock meanwhile, so another graphkit load (driver or Spark)
    # waits for this one, and the marker says the graph is incomplete until done.
    with store.load_lock(lock_wait, progress, engine="spark"):
        if labels and if_exists == "fail":
            existing = {k: v for k, v in store.node_counts(labels).items() if v}
            if existing:
                raise StoreError("the database already holds this graph's labels "
                                 + ", ".join(f"{k} ({v})" for k, v in existing.items()),
                                 hint="load with --if-exists merge or replace")
        store.ensure_schema(labels)
        report.resumed_replace = any(m["mode"] == "replace" for m in store.unfinished_loads())
        w = _Writer(spark, store.config, size)
        with load_marker(store, labels, if_exists):
            if if_exists == "replace":
                report.removed = store.delete_labels(labels)
            report.nodes = _write_nodes(w, graph, parts)
            _write_edges(w, graph, parts)
    report.skipped_edges = missing_ends(graph)
    report.edges = {t: e.table.num_rows - report.skipped_edges.get(t, 0)
                    for t, e in sorted(graph.edges.items())}
    report.seconds = time.perf_counter() - started
    return report


def load_snapshot_spark(snapshot_dir: Path, store: Neo4jStore, *, master: str | None = None,
                        spark: Any = None, **kwargs: Any) -> LoadReport:
    """Read ``snapshot_dir`` and :func:`load_spark` it, in the running Spark
    session (spark-submit), the one given, or one this call starts on ``master``
    with the connector (and stops at the end)."""
    from graphkit.core.spark import active_session, start_session
    from graphkit.snapshot import read_snapshot

    graph = read_snapshot(snapshot_dir)
    owned = spark is None and active_session() is None
    session = spark or active_session() or start_session(
        master, app_name="graphkit load", packages=[CONNECTOR])
    try:
        return load_spark(graph, store, session, **kwargs)
    finally:
        if owned:
            session.stop()
