"""Neo4j load of one snapshot: Spark's executors (the connector) beside the driver load.

    python -m bench.spark_load [--size 100k] [--runs driver-create,driver-merge,spark-merge]

Each run gets a fresh server (launcher, 1 GiB heap); ``merge`` runs first put
one unrelated node of a graph label there, so the target is not empty (the
Spark load always MERGEs; the driver load CREATEs into an empty database).
Records are nodes + relationships; the time includes the schema and the plan
(and, for Spark, building its DataFrames), not Spark's start, which is reported
apart. CPU seconds: this process and Spark's JVM (client), and the server; on a
shared machine CPU says more about the work than wall time. Writes the section
as the ``spark-load`` section of ``README.md``, and ``spark_load.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def snapshot_of(size: str, data: Path) -> Path:
    """The snapshot of ``rows-<size>`` (built with the in-memory build if missing)."""
    from bench.generate import parse_size
    from bench.scale_data import ensure_big_rows
    from graphkit.builds.run import build
    from graphkit.snapshot import write_snapshot

    snap = data / f"load-snapshot-{size}"
    if not (snap / "manifest.json").exists():
        rows, _meta = ensure_big_rows(parse_size(size), data)
        r = build([rows], fingerprints=False)
        write_snapshot(r.graph, snap, summary=r.summary())
    return snap


def one_run(snap: Path, how: str, spark: Any, partitions: int | None) -> dict[str, Any]:
    from graphkit.enrich.neo4j.server import start_local_neo4j
    from graphkit.enrich.neo4j.spark import load_spark
    from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
    from graphkit.snapshot import read_snapshot

    engine, mode = how.split("-")
    graph = read_snapshot(snap)
    server = start_local_neo4j(heap="1g", pagecache="512m", timeout=300)
    try:
        with Neo4jStore(Neo4jConfig(uri=server.uri, password=server.password)) as store:
            labels = sorted(graph.nodes)
            if mode == "merge":
                store.ensure_schema(labels)
                store.execute(f"CREATE (:`{labels[0]}` {{id: '__bench_not_in_graph__'}})")
            jvm = spark.sparkContext._gateway.proc.pid if engine == "spark" else None
            before = (own_cpu(), cpu_of(jvm) if jvm else 0.0, cpu_of(server.process.pid))
            load_avg = os.getloadavg()[0]
            report = (load_spark(graph, store, spark, partitions=partitions)
                      if engine == "spark" else store.load(graph))
            after = (own_cpu(), cpu_of(jvm) if jvm else 0.0, cpu_of(server.process.pid))
            nodes = sum(store.node_counts(labels).values()) - (mode == "merge")
            rels = sum(store.relationship_counts(sorted(graph.edges)).values())
    finally:
        server.stop()
    assert report.write_mode == mode, (report.write_mode, mode)
    assert nodes == sum(graph.node_counts().values())
    assert rels == sum(graph.edge_counts().values()) - sum(report.skipped_edges.values())
    client = (after[0] - before[0]) + (after[1] - before[1])
    server_cpu = after[2] - before[2]
    return {"run": how, "writers": report.workers, "records": nodes + rels,
            "seconds": round(report.seconds, 1),
            "records_per_s": round((nodes + rels) / report.seconds),
            "client_cpu_s": round(client, 1), "server_cpu_s": round(server_cpu, 1),
            "records_per_cpu_s": round((nodes + rels) / (client + server_cpu)),
            "load_avg_1m_at_start": round(load_avg, 1)}


def markdown(results: dict[str, Any]) -> str:
    """The runs of every measured size as one Markdown section."""
    lines = ["## Neo4j load: Spark executors (connector) beside the driver load", "",
             "Fresh server per run (1 GiB heap, 512 MiB page cache); Spark started once per "
             "size (not counted). `writers`: the driver load's sessions, or Spark tasks "
             "(`local[2]` runs two at a time). Client CPU = this process + Spark's JVM. "
             "`python -m bench.spark_load --size N`.", "",
             "| snapshot | run | writers | seconds | records/s | client CPU s | server CPU s | "
             "records/CPU-s | load avg at start |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for res in results.values():
        what = (f"{res['size']} rows: {res['nodes']:,} nodes + {res['relationships']:,} rels; "
                f"Spark `{res['master']}` start {res['spark_start_s']:.0f} s")
        for r in res["runs"]:
            lines.append(f"| {what} | {r['run']} | {r['writers']} | {r['seconds']} | "
                         f"{r['records_per_s']:,} | {r['client_cpu_s']} | {r['server_cpu_s']} | "
                         f"{r['records_per_cpu_s']:,} | {r['load_avg_1m_at_start']} |")
            what = ""
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.spark_load",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="100k")
    ap.add_argument("--runs", default="driver-create,driver-merge,spark-merge")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", type=int, help="Spark writers (default: its parallelism)")
    ap.add_argument("--data", type=Path, default=HERE / ".data")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args()
    from graphkit.core.spark import start_session
    from graphkit.enrich.neo4j.spark import CONNECTOR
    from graphkit.snapshot import read_snapshot

    snap = snapshot_of(args.size, args.data)
    graph = read_snapshot(snap)
    t0 = time.perf_counter()
    spark = start_session(args.master, app_name="bench load", packages=[CONNECTOR])
    res: dict[str, Any] = {"size": args.size, "master": args.master,
                           "spark_start_s": time.perf_counter() - t0,
                           "nodes": sum(graph.node_counts().values()),
                           "relationships": sum(graph.edge_counts().values()), "runs": []}
    try:
        for how in args.runs.split(","):
            row = one_run(snap, how, spark, args.partitions)
            print(json.dumps(row), flush=True)
            res["runs"].append(row)
    finally:
        spark.stop()
    saved = args.out / "spark_load.json"
    results = json.loads(saved.read_text()) if saved.exists() else {}
    results = {**{k: v for k, v in results.items() if "runs" in v}, args.size: res}
    saved.write_text(json.dumps(results, indent=2) + "\n")
    from bench.report import write_section

    write_section("spark-load", markdown(results), args.out)
    print(markdown(results))


if __name__ == "__main__":
    main()
