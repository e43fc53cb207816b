"""Neo4j load throughput of a snapshot: write mode, workers and batch size swept.

Each run gets a fresh server (a new launcher on a new temp data dir, 2 GiB
heap, 512 MiB page cache), so no run warms the next. A run is
``MODE:WORKERS:BATCH``: ``create`` loads into the empty database (graphkit
chooses CREATE), ``merge`` first puts one unrelated node of a graph label
there, so graphkit must MERGE, as into any non-empty database (the node is
not counted). Records are nodes + relationships; the time includes the
schema, the empty-target check and the plan, as ``graphkit load`` does.

Besides wall time, each run records the CPU seconds of the loading process
and of the server: on a shared machine (other work on the 2 cores) wall time
says how busy the machine was as much as how fast the load is.

    python -m bench.generate rows --rows 1m --root bench/.data
    graphkit build bench/.data/rows-1m --snapshot bench/.data/snapshot-1m
    python -m bench.neo4j_load --snapshot bench/.data/snapshot-1m \\
        --runs merge:1:5000,create:1:10000,create:2:10000,create:4:10000

``--rust`` only reports whether the driver's Rust extension (neo4j-rust-ext)
is loaded; run once with and once without it installed to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path
from typing import Any

from graphkit.core.graph import EdgeTable, GraphTables, NodeTable
from graphkit.enrich.neo4j.server import start_local_neo4j
from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
from graphkit.snapshot import read_snapshot


def _cpu_of(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of each thread of ``pid`` by thread kind (Bolt workers, JIT
    compilers, GC), so a run says where the server's CPU went."""
    kinds = {"neo4j.BoltWorke": "bolt", "C2 CompilerThre": "jit", "C1 CompilerThre": "jit",
             "GC Thread#": "gc", "G1 Conc#": "gc", "G1 Refine#": "gc", "VM Thread": "gc"}
    out: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended
        name = stat[stat.index("(") + 1:stat.rindex(")")].rstrip("0123456789")
        fields = stat.rsplit(")", 1)[1].split()
        kind = kinds.get(name, "other")
        out[kind] = out.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf(
            "SC_CLK_TCK")
    return out


def _own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def rust_loaded() -> bool:
    """True if the driver packs with neo4j-rust-ext."""
    import neo4j._codec.packstream.v1 as packstream

    return getattr(packstream, "_rust_pack", None) is not None


def renamed(graph: GraphTables, prefix: str) -> GraphTables:
    """``graph`` with every label and relationship type prefixed."""
    out = GraphTables(graph.contract_name, graph.contract_version, graph.id_recipe,
                      graph.granularity)
    out.nodes = {prefix + k: NodeTable(prefix + k, n.key, n.table) for k, n in graph.nodes.items()}
    out.edges = {prefix + k: EdgeTable(prefix + k, prefix + e.source_type,
                                       prefix + e.target_type, e.table)
                 for k, e in graph.edges.items()}
    return out


def one_run(graph: Any, mode: str, workers: int, batch: int,
            warmup: GraphTables | None, jvm: tuple[str, ...] = (),
            heap: str = "2g") -> dict[str, Any]:
    """Load ``graph`` into a fresh server; the run's figures.

    A server that has run for a while has compiled its hot code; a fresh one
    spends the first seconds of CPU compiling. ``warmup`` (another graph under
    other labels, so the target still holds none of ``graph``'s) is loaded
    first and not timed, as in a server that is already in use.
    """
    server = start_local_neo4j(heap=heap, pagecache="512m", timeout=300, jvm_options=jvm)
    try:
        store = Neo4jStore(Neo4jConfig(uri=server.uri, password=server.password),
                           batch_size=batch, workers=workers)
        with store:
            if warmup is not None:
                store.load(warmup)
            if mode == "merge":
                seed = sorted(graph.nodes)[0]
                store.ensure_schema(sorted(graph.nodes))
                store.execute(f"CREATE (:`{seed}` {{id: '__bench_not_in_graph__'}})")
            threads = _thread_cpu(server.process.pid)
            server_cpu, own_cpu = _cpu_of(server.process.pid), _own_cpu()
            load_avg = os.getloadavg()[0]
            report = store.load(graph)
            server_cpu = _cpu_of(server.process.pid) - server_cpu
            own_cpu = _own_cpu() - own_cpu
            by_kind = {k: round(v - threads.get(k, 0.0), 1)
                       for k, v in sorted(_thread_cpu(server.process.pid).items())}
            # The JVM starts and ends compiler threads as the queue needs them; an
            # ended one's CPU is gone from /proc/PID/task but not from the process
            # total, so the JIT figure is what the other kinds leave of the total.
            by_kind["jit"] = round(server_cpu - sum(v for k, v in by_kind.items()
                                                    if k != "jit"), 1)
            nodes = sum(store.node_counts(sorted(graph.nodes)).values()) - (mode == "merge")
            rels = sum(store.relationship_counts(sorted(graph.edges)).values())
    finally:
        server.stop()
    assert report.write_mode == mode, (report.write_mode, mode)
    assert nodes == sum(graph.node_counts().values()), nodes
    assert rels == sum(graph.edge_counts().values()) - sum(report.skipped_edges.values())
    records = nodes + rels
    return {"mode": mode, "workers": workers, "batch": batch, "records": records,
            "seconds": round(report.seconds, 2),
            "records_per_s": round(records / report.seconds),
            "client_cpu_s": round(own_cpu, 1), "server_cpu_s": round(server_cpu, 1),
            "records_per_cpu_s": round(records / (own_cpu + server_cpu)),
            "server_cpu_by_thread": by_kind,
            "load_avg_1m_at_start": round(load_avg, 1), "rust_ext": rust_loaded(),
            "heap": heap, "jvm": " ".join(jvm)}


def bulk_import(snapshot: Path, graph: GraphTables, fmt: str) -> dict[str, Any]:
    """Export ``snapshot`` as ``fmt`` and import it with neo4j-admin (the
    folder README's command, enrich/neo4j-admin's jar): seconds and records/s."""
    import shutil
    import tempfile

    from bench.export_formats import neo4j_import
    from graphkit.export import export_snapshot

    work = Path(tempfile.mkdtemp(prefix="graphkit-import-bench-"))
    try:
        t0 = time.perf_counter()
        export_snapshot(snapshot, fmt, work / fmt)
        exported = time.perf_counter() - t0
        load_avg = os.getloadavg()[0]
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds = neo4j_import(work / fmt)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        import_cpu = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    records = sum(graph.node_counts().values()) + sum(graph.edge_counts().values())
    return {"mode": f"neo4j-admin import ({fmt})", "records": records,
            "export_seconds": round(exported, 2), "seconds": round(seconds, 2),
            "records_per_s": round(records / seconds),
            "records_per_s_with_export": round(records / (seconds + exported)),
            "import_cpu_s": round(import_cpu, 1),
            "load_avg_1m_at_start": round(load_avg, 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--snapshot", type=Path, default=Path("bench/.data/snapshot-1m"))
    p.add_argument("--runs", default="merge:1:5000,create:1:10000,create:2:10000,"
                                     "create:4:10000,create:4:20000")
    p.add_argument("--out", type=Path, help="append each run as a JSON line here")
    p.add_argument("--warmup", type=Path, default=Path("bench/.data/snapshot-100k"),
                   help="a snapshot loaded (under other labels) before each timed load; "
                        "'none' for a cold server")
    p.add_argument("--import", dest="run_import", action="store_true",
                   help="also export neo4j-csv and neo4j-parquet folders and time "
                        "neo4j-admin database import full on them")
    p.add_argument("--jvm", default="",
                   help="JVM flags for the server, space-separated: --jvm=\"-XX:+UseParallelGC …\"")
    p.add_argument("--heap", default="2g", help="the server's heap (-Xms = -Xmx)")
    args = p.parse_args()
    started = time.perf_counter()
    graph = read_snapshot(args.snapshot)
    print(f"snapshot {args.snapshot}: {sum(graph.node_counts().values())} nodes, "
          f"{sum(graph.edge_counts().values())} relationships (read in "
          f"{time.perf_counter() - started:.1f} s); rust ext: {rust_loaded()}", flush=True)
    warmup = (None if str(args.warmup) == "none"
              else renamed(read_snapshot(args.warmup), "Warmup"))
    if args.run_import:
        for fmt in ("neo4j-csv", "neo4j-parquet"):
            row = bulk_import(args.snapshot, graph, fmt)
            print(json.dumps(row), flush=True)
            if args.out:
                with args.out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
    for spec in filter(None, args.runs.split(",")):
        mode, workers, batch = spec.split(":")
        row = one_run(graph, mode, int(workers), int(batch), warmup,
                      tuple(args.jvm.split()), args.heap)
        print(json.dumps(row), flush=True)
        if args.out:
            with args.out.open("a") as f:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
