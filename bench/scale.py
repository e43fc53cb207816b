"""Peak RSS against rows for the partitioned build, and Spark's time beside the local one.

    python -m bench.scale [--sizes 100k,1m,10m] [--spark-sizes 100k,1m] [--no-spark]

Each build runs as a whole process (``python -m bench.scale worker ...``), its
peak RSS read from its own ``VmHWM`` at exit (imports included). For sizes up
to 1M the in-memory build is measured too (``bench.worker graphkit``). The
Spark build's snapshot is checked byte for byte against the local one's.
Writes ``scale.json`` and its section of ``README.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _vmhwm_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def worker_local(path: str, snapshot: str, partitions: str = "auto") -> dict[str, Any]:
    """A partitioned local build, as ``graphkit build --partitions`` runs it."""
    from graphkit.builds.partitioned.local import build_local

    t0 = time.perf_counter()
    r = build_local([Path(path)], Path(snapshot), fingerprints=False,
                    partitions=None if partitions == "auto" else int(partitions))
    return {"seconds": time.perf_counter() - t0, "timings": r.timings,
            "rows": r.summary["rows_read"], "partitions": r.summary["engine"]["partitions"],
            "buckets": r.summary["engine"]["buckets"], "nodes": r.summary["nodes"],
            "edges": r.summary["edges"]}


def worker_spark(path: str, snapshot: str, master: str = "local[2]",
                 partitions: str = "auto") -> dict[str, Any]:
    """The same build on Spark; Spark's start is timed apart from the build."""
    from graphkit.builds.partitioned.spark import build_spark
    from graphkit.core.spark import start_session

    t0 = time.perf_counter()
    spark = start_session(master)
    started = time.perf_counter() - t0
    t1 = time.perf_counter()
    try:
        r = build_spark([Path(path)], Path(snapshot), spark=spark, fingerprints=False,
                        partitions=None if partitions == "auto" else int(partitions))
    finally:
        spark.stop()
    return {"seconds": time.perf_counter() - t1, "spark_start_s": started,
            "timings": r.timings, "rows": r.summary["rows_read"],
            "partitions": r.summary["engine"]["partitions"]}


def _run(args: list[str], timeout: float = 7200) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{args[:3]} failed:\n{done.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    out["process_s"] = time.perf_counter() - t0
    return out


def _digests(snapshot: Path) -> dict[str, str]:
    return {str(p.relative_to(snapshot)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(snapshot.rglob("*.parquet"))}


def run(sizes: list[int], spark_sizes: list[int], data: Path,
        say: Any = print) -> dict[str, Any]:
    """Measure; the results as one dict (what ``python -m bench`` embeds)."""
    from bench.generate import size_label
    from bench.scale_data import ensure_big_rows

    out: dict[str, Any] = {"local": [], "spark": []}
    for n in sizes:
        path, meta = ensure_big_rows(n, data)
        snap = data / f"scale-snapshot-{size_label(n)}"
        say(f"partitioned build {size_label(n)} ({meta['rows']:,} rows, "
            f"{meta['sessions']:,} sessions) ...")
        row = {"label": size_label(n), "sessions": meta["sessions"],
               **_run(["-m", "bench.scale", "worker", "local", str(path), str(snap)])}
        if n <= 1_000_000:
            mem = _run(["-m", "bench.worker", "graphkit", str(path)])
            row["in_memory_rss_mb"] = mem["peak_rss_mb"]
            row["in_memory_s"] = mem["seconds"]
        row["per_partition_rows"] = row["rows"] / row["partitions"]
        row["per_partition_project_s"] = row["timings"]["project"] / row["partitions"]
        out["local"].append(row)
        say(f"  {row['seconds']:.1f}s, {row['partitions']} partitions, peak RSS "
            f"{row['peak_rss_mb']:.0f} MB" + (f" (in-memory build {row['in_memory_rss_mb']:.0f} MB)"
                                             if "in_memory_rss_mb" in row else ""))
        if n in spark_sizes:
            spark_snap = data / f"scale-snapshot-{size_label(n)}-spark"
            say(f"Spark build {size_label(n)} (local[2]) ...")
            sp = _run(["-m", "bench.scale", "worker", "spark", str(path), str(spark_snap)])
            sp["label"] = size_label(n)
            sp["same_bytes_as_local"] = _digests(spark_snap) == _digests(snap)
            sp["local_seconds"] = row["seconds"]
            out["spark"].append(sp)
            say(f"  Spark {sp['seconds']:.1f}s (+{sp['spark_start_s']:.0f}s start) vs local "
                f"{row['seconds']:.1f}s; same snapshot bytes: {sp['same_bytes_as_local']}")
            shutil.rmtree(spark_snap, ignore_errors=True)
        shutil.rmtree(snap, ignore_errors=True)
    by = {r["label"]: r for r in out["local"]}
    metrics: dict[str, float] = {}
    if "1m" in by and "10m" in by:
        metrics["rss_growth_1m_10m"] = by["10m"]["peak_rss_mb"] / by["1m"]["peak_rss_mb"]
    if "100k" in by and "1m" in by:
        metrics["rss_growth_100k_1m"] = by["1m"]["peak_rss_mb"] / by["100k"]["peak_rss_mb"]
    if "10m" in by:
        metrics["rss_10m_mb"] = by["10m"]["peak_rss_mb"]
    out["metrics"] = metrics
    return out


def markdown(res: dict[str, Any]) -> str:
    """The results as a Markdown section."""
    lines = ["## Partitioned build: peak RSS against rows", "",
             "Whole processes; peak RSS is the process's `VmHWM` at exit (imports included). "
             "`--partitions auto`: about 100k rows per partition.", "",
             "| rows | sessions | partitions | seconds | read s | project s | merge s | "
             "peak RSS MB | in-memory build RSS MB |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in res["local"]:
        t = r["timings"]
        mem = r.get("in_memory_rss_mb")
        lines.append(f"| {r['rows']:,} | {r['sessions']:,} | {r['partitions']} | "
                     f"{r['seconds']:.1f} | {t['read']:.1f} | {t['project']:.1f} | "
                     f"{t['merge']:.1f} | {r['peak_rss_mb']:.0f} | "
                     f"{'—' if mem is None else f'{mem:.0f}'} |")
    if res["spark"]:
        lines += ["", "## Spark engine beside the local one (`local[2]`, same data)", "",
                  "| rows | partitions | Spark start s | Spark build s | local build s | "
                  "same snapshot bytes |", "|---:|---:|---:|---:|---:|---|"]
        for s in res["spark"]:
            lines.append(f"| {s['rows']:,} | {s['partitions']} | {s['spark_start_s']:.0f} | "
                         f"{s['seconds']:.1f} | {s['local_seconds']:.1f} | "
                         f"{s['same_bytes_as_local']} |")
    lines += ["", "Metrics: " + ", ".join(f"{k} = {v:.3g}" for k, v in res["metrics"].items()),
              ""]
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "worker":
        # Like the CLI: jemalloc hands freed pages back (set before pyarrow loads).
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
        task, *args = sys.argv[2:]
        result = {"local": worker_local, "spark": worker_spark}[task](*args)
        result["peak_rss_mb"] = _vmhwm_mb()
        # CPU seconds (user + system, all threads): on a shared machine a
        # steadier measure of the work than wall time.
        import resource

        use = resource.getrusage(resource.RUSAGE_SELF)
        result["cpu_s"] = use.ru_utime + use.ru_stime
        print(json.dumps(result, default=str))
        return
    from bench.generate import parse_size

    ap = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100k,1m,10m")
    ap.add_argument("--spark-sizes", default="100k,1m")
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--data", type=Path, default=HERE / ".data")
    args = ap.parse_args()
    sizes = sorted(parse_size(s) for s in args.sizes.split(","))
    spark = [] if args.no_spark else [parse_size(s) for s in args.spark_sizes.split(",")]
    res = run(sizes, spark, args.data)
    (args.out / "scale.json").write_text(json.dumps(res, indent=2, default=str) + "\n")
    from bench.report import write_section

    # The Spark load's section (bench/spark_load.py) is measured apart, and kept.
    write_section("scale", "# graphkit at scale\n\n" + markdown(res), args.out)
    print(markdown(res))


if __name__ == "__main__":
    main()
