"""One measurement per process, so peak RSS and warm caches do not mix.

``python -m bench.worker TASK ARGS...`` prints one JSON object: the task's
numbers plus ``peak_rss_mb`` (this process's ``ru_maxrss``). Timings exclude
interpreter start and imports; ``bench/__main__.py`` times whole processes
where that is the point (``graphkit lineage``).
"""

from __future__ import annotations

import json
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def _rss_mb() -> float:
    # VmHWM is this address space's own high-water mark. ru_maxrss is not:
    # Linux carries it across fork+exec, so a worker started by a parent that
    # once held 500 MB (say, after generating the data) would report 500 MB.
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _pcts(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {"p50_ms": 1000 * statistics.median(s),
            "p99_ms": 1000 * s[min(len(s) - 1, round(0.99 * (len(s) - 1)))],
            "n": len(s)}


def floor(path: str) -> dict[str, Any]:
    """pyarrow reading the contract's non-content columns: the floor."""
    import pyarrow.parquet as pq

    from bench.naive import COLUMNS

    t0 = time.perf_counter()
    table = pq.read_table(path, columns=COLUMNS)
    return {"seconds": time.perf_counter() - t0, "rows": table.num_rows}


def graphkit_build(path: str) -> dict[str, Any]:
    from graphkit.builds.run import build

    t0 = time.perf_counter()
    r = build([Path(path)], fingerprints=False)
    el = time.perf_counter() - t0
    return {"seconds": el, "rows": r.projection.rows_read, "read_s": r.timings["read"],
            "project_s": r.timings["project"], "nodes": r.graph.node_counts(),
            "edges": r.graph.edge_counts()}


def naive_build(path: str) -> dict[str, Any]:
    from bench.naive import naive_build as nb

    G, tm = nb(Path(path))
    return {"seconds": tm["total"], "read_s": tm["read"], "build_s": tm["build"],
            "nodes": G.number_of_nodes(), "edges": G.number_of_edges()}


def _sample_ids(graph: Any, n: int, seed: int = 3) -> list[str]:
    """Random thread ids a user would type (subagents, Codex threads, main loops)."""
    ids = [i for i in graph.nodes["Thread"].table.column("thread_id").to_pylist() if i]
    return random.Random(seed).sample(ids, min(n, len(ids)))


def lineage_nx(path: str, snapshot: str = "", queries: str = "2000") -> dict[str, Any]:
    """Build, (optionally) write a snapshot, load NetworkX, time lineage per id."""
    from graphkit.builds.run import build
    from graphkit.enrich.networkx_store import NetworkXStore
    from graphkit.queries.lineage import lineage
    from graphkit.snapshot import write_snapshot

    r = build([Path(path)], fingerprints=False)
    out: dict[str, Any] = {"threads": r.graph.nodes["Thread"].table.num_rows}
    if snapshot:
        t0 = time.perf_counter()
        write_snapshot(r.graph, Path(snapshot), summary=r.summary())
        out["snapshot_write_s"] = time.perf_counter() - t0
    store = NetworkXStore()
    t0 = time.perf_counter()
    store.load(r.graph)
    out["load_s"] = time.perf_counter() - t0
    ids = _sample_ids(r.graph, int(queries))
    lineage(store, ids[0])  # builds the id index once, as the CLI does
    samples = []
    for i in ids:
        t = time.perf_counter()
        lineage(store, i)
        samples.append(time.perf_counter() - t)
    out.update(_pcts(samples))
    out["sample_ids"] = ids[:20]
    return out


def _cpu() -> float:
    """CPU seconds of this process and its finished children (GRAPHKIT_PARSE_WORKERS)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def transcripts(path: str) -> dict[str, Any]:
    # Measure the parse the command line runs: graphkit's CLI refuses pandas (only Spark
    # uses it), so pyarrow never imports it there; here it would, at the first pa.array,
    # and 0.2-0.45 s of a one-off import would be timed as parsing.
    from graphkit.core.lazy import NoPandas

    sys.meta_path.insert(0, NoPandas())
    from graphkit.sources.transcripts import read_transcripts

    meta = json.loads((Path(path) / "_meta.json").read_text())
    # CPU seconds beside wall: on a shared machine the wall clock mostly measures the
    # neighbours; the CPU time this process spent is what the parser costs.
    t0, c0 = time.perf_counter(), _cpu()
    r = read_transcripts([Path(path) / "claude" / "projects"])
    claude_s, claude_cpu = time.perf_counter() - t0, _cpu() - c0
    t1 = time.perf_counter()
    rc = read_transcripts([Path(path) / "codex" / "sessions"])
    codex_s = time.perf_counter() - t1
    return {"seconds": claude_s, "cpu_s": claude_cpu, "lines": meta["claude_lines"],
            "rows": r.table.num_rows, "sessions": meta["claude_sessions"],
            "files": r.files_read, "lines_per_s": meta["claude_lines"] / claude_s,
            "lines_per_cpu_s": meta["claude_lines"] / claude_cpu, "skipped": len(r.skipped),
            "codex_lines": meta["codex_lines"], "codex_s": codex_s,
            "codex_rows": rc.table.num_rows}


def neo4j(path: str, uri: str, password: str, naive_sample: str = "3000",
          queries: str = "300") -> dict[str, Any]:
    """graphkit's batched load vs per-statement MERGEs (a sample, extrapolated),
    then lineage latency against the loaded server."""
    from bench.naive import build_graph, neo4j_per_row, neo4j_statements, read_rows
    from graphkit.builds.run import build
    from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
    from graphkit.queries.lineage import lineage

    r = build([Path(path)], fingerprints=False)
    cfg = Neo4jConfig(uri=uri, password=password)
    out: dict[str, Any] = {}
    with Neo4jStore(cfg) as store:
        # naive first, into a scratch label space that is then wiped
        G = build_graph(read_rows(Path(path)))
        stmts = neo4j_statements(G)
        k = min(int(naive_sample), len(stmts))
        # the same share of node and relationship statements as the whole load
        n_nodes = G.number_of_nodes()
        share = k / len(stmts)
        sample = stmts[: int(n_nodes * share)] + stmts[n_nodes: n_nodes + int(
            (len(stmts) - n_nodes) * share)]
        store.ensure_schema(sorted(r.graph.nodes))
        with store._driver.session(database=cfg.database) as session:
            secs = neo4j_per_row(session, sample)
        out["naive_sample_statements"] = len(sample)
        out["naive_sample_s"] = secs
        out["naive_total_statements"] = len(stmts)
        out["naive_extrapolated_s"] = secs * len(stmts) / max(1, len(sample))
        store.delete_labels(sorted(r.graph.nodes))
        rep = store.load(r.graph, if_exists="replace")
        out["graphkit_load_s"] = rep.seconds
        rels = getattr(rep, "relationships", None) or getattr(rep, "edges", {})
        out["graphkit_items"] = sum(rep.nodes.values()) + sum(rels.values())
        ids = _sample_ids(r.graph, int(queries))
        lineage(store, ids[0])
        samples = []
        for i in ids:
            t = time.perf_counter()
            lineage(store, i)
            samples.append(time.perf_counter() - t)
        out.update(_pcts(samples))
        out["threads"] = r.graph.nodes["Thread"].table.num_rows
    return out


TASKS = {"floor": floor, "graphkit": graphkit_build, "naive": naive_build,
         "lineage_nx": lineage_nx, "transcripts": transcripts, "neo4j": neo4j}


def main() -> None:
    task, *args = sys.argv[1:]
    result = TASKS[task](*args)
    result["peak_rss_mb"] = _rss_mb()
    print(json.dumps(result, default=str))


if __name__ == "__main__":
    main()
