"""The benchmark suite: ``python -m bench [--sizes 10k,100k,1m] [--quick] [--only S,..]``.

Sections, in order (``--only``/``--skip`` pick; a partial run keeps the other
sections' figures from the previous ``results.json``, each dated):

- ``build``: per size, the pyarrow read floor, graphkit's in-process build and
  the naive per-row build, each in its own process (peak RSS does not mix).
- ``whole``: what users run, as whole processes (``bench/whole.py``): ``graphkit
  build DIR --snapshot OUT``, a rebuild, the naive script and the read floor,
  interleaved rounds, medians.
- ``lineage``: lineage latency in NetworkX, ``graphkit lineage ID --snapshot DIR``
  as a whole process.
- ``transcripts``: transcripts → rows. ``neo4j``: load vs per-statement MERGEs
  and lineage on the server. ``scale``: partitioned build's peak RSS vs rows.
- ``shapes``: skewed shapes (one session of 100k threads, a chain 20k deep, ...)
  at two sizes, every user command as a whole process, the growth exponent of
  its CPU time (``bench/shapes.py``).

Prints a table of ratios, writes ``results.json`` and ``time_vs_rows.png`` to ``--out``,
and each section's tables into ``README.md`` there (``bench/report.py``).

Absolute times on a shared machine are noise; the ratios are measured in the
same run and are what the targets are about.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.generate import ensure_rows, ensure_transcripts, parse_size, size_label
from bench.report import write_section

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def say(msg: str) -> None:
    print(msg, flush=True)


def worker(task: str, *args: str, timeout: float = 900) -> dict[str, Any]:
    """Run ``bench.worker TASK`` in a fresh process; its JSON answer."""
    cmd = [sys.executable, "-m", "bench.worker", task, *args]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{task} failed:\n{done.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    out["process_s"] = time.perf_counter() - t0
    return out


def warm(path: Path) -> float:
    """Read every file under ``path`` once, untimed, so the OS page cache holds it.

    Without this the first process to read a size pays the disk (the 1M floor
    once measured 3.1 s cold against ~0.2 s warm), and whichever task runs
    first looks slow. Returns the MB read.
    """
    total = 0
    files = [path] if path.is_file() else sorted(f for f in path.rglob("*") if f.is_file())
    for f in files:
        with f.open("rb") as fh:
            while chunk := fh.read(1 << 24):
                total += len(chunk)
    return total / 1e6


def best_of(n: int, task: str, *args: str, warm_path: Path | None = None) -> dict[str, Any]:
    """The fastest of ``n`` runs (the least disturbed by other load), with all times kept.

    Each run is a fresh process; with ``warm_path`` its files are read into the
    page cache before every run, so every run (and every task) starts warm.
    """
    runs = []
    for _ in range(n):
        if warm_path is not None:
            warm(warm_path)
        runs.append(worker(task, *args))
    best = min(runs, key=lambda r: r["seconds"])
    best["all_seconds"] = [r["seconds"] for r in runs]
    best["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    return best


def machine() -> dict[str, Any]:
    import networkx
    import pyarrow

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = int(line.split()[1]) // 1024
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "ram_mb": mem,
            "python": platform.python_version(), "pyarrow": pyarrow.__version__,
            "networkx": networkx.__version__, "platform": platform.platform(),
            "load_avg_at_start": os.getloadavg()}


def check_same_graph(path: Path) -> dict[str, Any]:
    """graphkit and the naive baseline must build the same graph; fail loudly if not."""
    from bench.naive import compare, naive_build
    from graphkit.builds.run import build
    from graphkit.enrich.networkx_store import to_networkx

    G, _ = naive_build(path)
    ours = to_networkx(build([path], fingerprints=False).graph)
    return compare(G, ours)


def check_lineage_truth(path: Path, n: int = 300) -> int:
    """Lineage answers equal the generator's truth for ``n`` random threads."""
    import random

    import pyarrow.parquet as pq

    from graphkit.builds.run import build
    from graphkit.enrich.networkx_store import NetworkXStore
    from graphkit.queries.lineage import lineage

    truth = pq.read_table(path / "_truth.parquet").to_pylist()
    parent = {t["thread_id"]: t["parent_id"] for t in truth}
    store = NetworkXStore()
    store.load(build([path], fingerprints=False).graph)
    for t in random.Random(5).sample(truth, min(n, len(truth))):
        tid = t["thread_id"]
        want, cur = [], parent[tid]
        while cur is not None:
            want.append(cur)
            cur = parent[cur]
        got = [r.id for r in lineage(store, tid).ancestors]
        assert got[:-1] == want and got[-1] == t["session_id"], (tid, got, want)
    return n


def start_neo4j() -> tuple[Any, str]:
    """A throwaway local server via graphkit's helper, or (None, why not)."""
    try:
        from graphkit.enrich.neo4j.server import start_local_neo4j
    except ImportError as exc:
        return None, f"graphkit.enrich.neo4j.server is not available ({exc})"
    if shutil.which("java") is None:
        return None, "java is not on PATH"
    try:
        return start_local_neo4j(heap="2g", pagecache="512m", timeout=240), ""
    except Exception as exc:
        return None, f"could not start a local Neo4j: {str(exc).splitlines()[0]}"


# ---------------------------------------------------------------------------

TARGETS = [
    # key, description, how to read the result
    ("whole_speedup_1m", "`graphkit build` 1M → snapshot ≥ 20× the naive script, whole "
     "processes", ">=", 20.0),
    ("whole_floor_ratio_1m", "`graphkit build` 1M → snapshot ≤ 2× the read floor, whole "
     "processes", "<=", 2.0),
    ("speedup_1m", "build 1M rows ≥ 20× faster than naive (in-process)", ">=", 20.0),
    ("floor_ratio_1m", "build 1M within 3× of the pyarrow read floor (in-process)", "<=",
     3.0),
    ("rss_1m_mb", "peak RSS building 1M ≤ 1.5 GB", "<=", 1536.0),
    ("growth_100k_1m", "100k→1M time growth ≤ 11×", "<=", 11.0),
    ("neo4j_speedup", "Neo4j load ≥ 20× per-row baseline", ">=", 20.0),
    ("neo4j_records_per_s", "Neo4j load ≥ 100k records/s, 1M rows (online, fresh server)",
     ">=", 100000.0),
    ("lineage_nx_p50_ms", "lineage p50 ≤ 1 ms NetworkX (~100k threads)", "<=", 1.0),
    ("lineage_neo4j_p50_ms", "lineage p50 ≤ 10 ms Neo4j (~100k threads)", "<=", 10.0),
    ("cli_lineage_s", "`graphkit lineage` process ≤ 1 s (~100k-thread snapshot)", "<=", 1.0),
    ("transcripts_lines_per_s", "transcripts→rows ≥ 100k Claude lines/s (wall)", ">=",
     100000.0),
    ("transcripts_lines_per_cpu_s", "transcripts→rows ≥ 100k Claude lines per CPU-second",
     ">=", 100000.0),
    ("transcripts_process_lines_per_s", "transcripts→rows ≥ 100k Claude lines/s, whole "
     "`graphkit rows` process", ">=", 100000.0),
    ("ccusage_cold_ratio", "`graphkit build` + `usage --json` cold ≤ 2× ccusage's wall, "
     "whole processes, same history (bench/ccusage.py)", "<=", 2.0),
    ("ccusage_kept_ratio", "`graphkit build` (snapshot kept) + `usage --json` ≤ 1× "
     "ccusage's wall", "<=", 1.0),
    ("incremental_noop_ratio", "transcript rebuild, nothing changed ≤ 5% of cold (whole "
     "process)", "<=", 0.05),
    ("incremental_append_ratio", "transcript rebuild, one line appended ≤ 10% of cold "
     "(whole process)", "<=", 0.10),
    ("incremental_watch_append_ratio", "transcript rebuild, one line appended ≤ 10% of cold "
     "(`graphkit build --watch` process, to its rebuild line)", "<=", 0.10),
    ("incremental_cache_ratio", "transcript cache ≤ 20% of the transcripts' bytes", "<=",
     0.20),
    ("transcripts_rss_mb", "transcripts→rows peak RSS < 500 MB", "<", 500.0),
    ("rss_growth_1m_10m", "partitioned build peak RSS 1M→10M rows ≤ 1.5×", "<=", 1.5),
    ("rss_10m_mb", "partitioned build of 10M rows < 2 GB peak RSS", "<", 2048.0),
    ("shapes_worst_exponent", "skewed shapes: every command's CPU-s growth exponent n → 4n "
     "≤ 1.2 (bench/README.md, shapes)", "<=", 1.2),
]


def judge(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key, desc, op, target in TARGETS:
        v = metrics.get(key)
        if v is None:
            out.append({"key": key, "target": desc, "value": None, "status": "not measured"})
            continue
        met = {">=": v >= target, "<=": v <= target, "<": v < target}[op]
        if met:
            margin = f"met ({v / target:.2f}× of the bound)"
        elif op == ">=":
            margin = f"missed: {v:.3g} vs {target:g} ({target / v:.1f}× short)"
        else:
            margin = f"missed: {v:.3g} vs {target:g} ({v / target:.1f}× over)"
        out.append({"key": key, "target": desc, "value": v, "status": margin, "met": met})
    return out


def plot(results: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = results["sizes"]
    rows = [s["rows"] for s in sizes]
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for key, label in (("floor_s", "pyarrow read floor"), ("graphkit_s", "graphkit build"),
                       ("naive_s", "naive per-row build")):
        ax.plot(rows, [s[key] for s in sizes], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rows")
    ax.set_ylabel("seconds (best of runs, warm page cache)")
    ax.set_title("graph build time vs rows (same run, same data)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "time_vs_rows.png", dpi=120)
    plt.close(fig)


COLUMN_NOTES = [
    "What each column measures (times exclude interpreter start and imports):",
    "",
    "- **floor s**: `pyarrow.parquet.read_table(dir, columns=...)` of the 20 non-content "
    "input columns the contract reads, default read options (strings decoded to plain "
    "`string` arrays). The cost of getting the bytes into Arrow, nothing else.",
    "- **graphkit s**: `graphkit.builds.run.build([dir], fingerprints=False)`: read the same "
    "columns, conform, derive, reject, dedupe, order, group into node and edge tables "
    "with ids (rows → graph tables). No snapshot is written and no NetworkX graph built.",
    "- **naive s**: `bench/naive.py`: the same columns read with `read_table(...).to_pylist()`, "
    "then a NetworkX `MultiDiGraph` built row by row with the same identity rules, ids and "
    "properties (checked equal to graphkit's graph on the smallest size). It builds a "
    "NetworkX graph, which graphkit's number does not include, and graphkit's includes "
    "the reject/dedupe/order steps the naive script also does.",
    "- Method: before every run the size's files are read once, untimed, so the OS page cache "
    "is warm for all three alike; each cell is the best (minimum) of N runs, each run a fresh "
    "process (N in `runs` in results.json). Peak RSS is the process's own high-water mark "
    "(`VmHWM`; not `ru_maxrss`, which Linux carries over from the parent across fork+exec), "
    "the max over the runs.",
]


def write_markdown(results: dict[str, Any], out: Path) -> None:
    m = results["machine"]
    lines = ["# Results", "",
             f"Run {results['started']} with `python -m bench {' '.join(results['argv'])}` "
             f"({results['wall_s']:.0f} s wall).", "",
             f"Machine: {m['cpu']}, {m['cores']} cores, {m['ram_mb'] / 1024:.1f} GiB RAM, "
             f"Python {m['python']}, pyarrow {m['pyarrow']}, networkx {m['networkx']} "
             f"({m['platform']}); load average at start {m['load_avg_at_start']}. "
             "The machine is shared: absolute times are noise, ratios are measured in the "
             "same run on the same data.", "",
             "## Build (thread granularity; `graphkit.builds.run.build(fingerprints=False)`)", "",
             *COLUMN_NOTES, "",
             "| rows | threads | floor s | graphkit s | naive s | naive/graphkit | "
             "graphkit/floor | graphkit peak RSS MB | naive peak RSS MB |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in results["sizes"]:
        lines.append(f"| {s['rows']:,} | {s['threads']:,} | {s['floor_s']:.3f} | "
                     f"{s['graphkit_s']:.3f} | {s['naive_s']:.3f} | {s['speedup']:.1f}× | "
                     f"{s['floor_ratio']:.1f}× | {s['graphkit_rss_mb']:.0f} | "
                     f"{s['naive_rss_mb']:.0f} |")
    lines += ["", "![time vs rows](time_vs_rows.png)", ""]
    if results.get("whole"):
        from bench.whole import markdown as whole_markdown

        lines += whole_markdown(results["whole"])
    runs_at = results.get("sections_run", {})
    if runs_at:
        lines += ["Sections of this file and when each was measured (load average at its "
                  "start and end):", ""]
        lines += [f"- {k}: {v['at']}, " + (
            f"kept from an earlier run (load {v['load_avg'][0][0]:.1f} at its start)"
            if v.get("kept") else f"{v['seconds']:.0f} s, load "
            f"{v['load_avg'][0][0]:.1f} → {v['load_avg'][1][0]:.1f}")
            for k, v in runs_at.items() if k in SECTIONS]
        lines.append("")
    lines += ["## Targets", "", "| target | measured | status |", "|---|---:|---|"]
    for j in results["targets"]:
        v = j["value"]
        lines.append(f"| {j['target']} | {'—' if v is None else f'{v:.3g}'} | {j['status']} |")
    # incremental, scale and shapes have sections of their own (bench/report.py);
    # every other figure is in results.json.
    notes = results.get("notes", [])
    if notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    write_section("results", "\n".join(lines), out)


SECTIONS = ("build", "whole", "lineage", "transcripts", "ccusage", "incremental", "neo4j",
            "scale", "shapes")


def section_build(args: argparse.Namespace, results: dict[str, Any], paths: dict[int, Path],
                  metrics: dict[str, Any]) -> None:
    """In-process build vs floor vs naive, best of N fresh processes per size."""
    sizes = sorted(paths)
    smallest = paths[sizes[0]]
    say("checking that naive and graphkit build the same graph ...")
    results["same_graph_check"] = {"rows": size_label(sizes[0]),
                                   **check_same_graph(smallest)}
    say(f"  equal: {results['same_graph_check']}")
    results["lineage_truth_checked"] = check_lineage_truth(smallest)
    results["sizes"] = []
    reps = 1 if args.quick else 3
    for n in sizes:
        p = str(paths[n])
        mb = warm(paths[n])
        say(f"size {size_label(n)}: page cache warmed ({mb:.0f} MB); floor "
            f"({max(3, reps)} runs), graphkit, naive ({reps} run(s) each) ...")
        fl = best_of(max(3, reps), "floor", p, warm_path=paths[n])
        gk = best_of(reps, "graphkit", p, warm_path=paths[n])
        nv = best_of(reps, "naive", p, warm_path=paths[n])
        row = {"label": size_label(n), "rows": gk["rows"],
               "threads": gk["nodes"].get("Thread", 0),
               "floor_s": fl["seconds"], "graphkit_s": gk["seconds"], "naive_s": nv["seconds"],
               "graphkit_read_s": gk["read_s"], "graphkit_project_s": gk["project_s"],
               "naive_read_s": nv["read_s"], "naive_build_s": nv["build_s"],
               "speedup": nv["seconds"] / gk["seconds"],
               "floor_ratio": gk["seconds"] / fl["seconds"],
               "graphkit_rss_mb": gk["peak_rss_mb"], "naive_rss_mb": nv["peak_rss_mb"],
               "floor_rss_mb": fl["peak_rss_mb"],
               "runs": {"floor": fl["all_seconds"], "graphkit": gk["all_seconds"],
                        "naive": nv["all_seconds"]}}
        results["sizes"].append(row)
        say(f"  floor {row['floor_s']:.3f}s  graphkit {row['graphkit_s']:.3f}s  naive "
            f"{row['naive_s']:.3f}s  naive/graphkit {row['speedup']:.1f}x  graphkit/floor "
            f"{row['floor_ratio']:.1f}x  RSS {row['graphkit_rss_mb']:.0f} MB")
    by = {s["label"]: s for s in results["sizes"]}
    if "1m" in by:
        metrics.update(speedup_1m=by["1m"]["speedup"], floor_ratio_1m=by["1m"]["floor_ratio"],
                       rss_1m_mb=by["1m"]["graphkit_rss_mb"])
    if "1m" in by and "100k" in by:
        metrics["growth_100k_1m"] = by["1m"]["graphkit_s"] / by["100k"]["graphkit_s"]


def section_whole(args: argparse.Namespace, results: dict[str, Any], paths: dict[int, Path],
                  metrics: dict[str, Any]) -> None:
    """Whole CLI processes: build → snapshot, rebuild, floor and naive (bench/whole.py)."""
    from bench import whole

    wanted = [parse_size(x) for x in args.whole_sizes.split(",") if x]
    runs = args.whole_runs or (3 if args.quick else 5)
    sel = {size_label(n): paths[n] for n in sorted(wanted) if n in paths}
    results["whole"] = w = whole.run(sel, runs, args.data, say, baseline=args.whole_baseline)
    for s in w["sizes"]:
        if s["label"] == "1m":
            metrics["whole_speedup_1m"] = s["naive_over_build"]
            metrics["whole_floor_ratio_1m"] = s["build_over_floor"]


def section_lineage(args: argparse.Namespace, results: dict[str, Any], paths: dict[int, Path],
                    metrics: dict[str, Any]) -> None:
    """Lineage latency in NetworkX, and `graphkit lineage` as a whole process."""
    from bench import whole

    big = max(paths)
    snap = args.data / f"snapshot-{size_label(big)}"
    say(f"lineage (NetworkX) on {size_label(big)} and snapshot {snap} ...")
    lx = worker("lineage_nx", str(paths[big]), str(snap), "300" if args.quick else "2000")
    results["lineage_networkx"] = lx
    metrics["lineage_nx_p50_ms"] = lx["p50_ms"]
    say(f"  {lx['threads']:,} threads: p50 {lx['p50_ms']:.3f} ms p99 {lx['p99_ms']:.3f} ms "
        f"(NetworkX load {lx['load_s']:.2f}s)")
    cl = whole.lineage(snap, lx["sample_ids"], 3 if args.quick else 7)
    results["cli_lineage"] = cl
    metrics["cli_lineage_s"] = cl["median_s"]
    say(f"  graphkit lineage process: median {cl['median_s']:.2f}s "
        f"(bare `import graphkit.cli` process {cl['python_import_cli_s']:.2f}s)")


def section_transcripts(args: argparse.Namespace, results: dict[str, Any],
                        paths: dict[int, Path], metrics: dict[str, Any]) -> None:
    tdir, tmeta = ensure_transcripts(args.data)
    say(f"transcripts: {tmeta['claude_lines']:,} Claude lines, {tmeta['claude_sessions']} "
        "sessions ...")
    warm(tdir)  # as every timed section: the first reader would else pay the disk
    tr = worker("transcripts", str(tdir))
    results["transcripts"] = tr
    metrics["transcripts_lines_per_s"] = tr["lines_per_s"]
    if tr.get("lines_per_cpu_s"):
        metrics["transcripts_lines_per_cpu_s"] = tr["lines_per_cpu_s"]
    metrics["transcripts_rss_mb"] = tr["peak_rss_mb"]
    say(f"  {tr['lines_per_s']:,.0f} lines/s, peak RSS {tr['peak_rss_mb']:.0f} MB")
    # What a user runs: the command as a process, interpreter start, imports and the
    # Parquet it writes included (the figure above is the read alone).
    from bench import whole

    projects = tdir / "claude" / "projects"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.parquet"
        cmd = [*whole.graphkit_command(), "rows", str(projects), "--out", str(out), "-q"]
        runs = [whole.timed(cmd) for _ in range(3 if args.quick else 5)]
    wall = statistics.median(r["wall_s"] for r in runs)
    tr["process"] = {"wall_s": wall, "cpu_s": statistics.median(r["cpu_s"] for r in runs),
                     "runs_wall_s": [round(r["wall_s"], 3) for r in runs]}
    metrics["transcripts_process_lines_per_s"] = tmeta["claude_lines"] / wall
    say(f"  `graphkit rows` process: median {wall:.2f} s wall, "
        f"{tmeta['claude_lines'] / wall:,.0f} lines/s")


def section_neo4j(args: argparse.Namespace, results: dict[str, Any], paths: dict[int, Path],
                  metrics: dict[str, Any]) -> None:
    notes = results["notes"]
    big = max(paths)
    server, why = start_neo4j()
    if server is None:
        notes.append(f"Neo4j skipped: {why}")
        say(f"Neo4j skipped: {why}")
        return
    try:
        say(f"Neo4j at {server.uri}: load + per-row sample + lineage on {size_label(big)} ...")
        nj = worker("neo4j", str(paths[big]), server.uri, server.password or "",
                    "1000" if args.quick else "3000", "100" if args.quick else "300",
                    timeout=1500)
        results["neo4j"] = nj
        metrics["neo4j_speedup"] = nj["naive_extrapolated_s"] / nj["graphkit_load_s"]
        metrics["neo4j_records_per_s"] = nj["graphkit_items"] / nj["graphkit_load_s"]
        metrics["lineage_neo4j_p50_ms"] = nj["p50_ms"]
        notes.append(
            f"Neo4j per-row baseline: {nj['naive_sample_statements']} of "
            f"{nj['naive_total_statements']} MERGE statements were run (nodes and "
            "relationships in proportion) and the time extrapolated linearly.")
        say(f"  graphkit load {nj['graphkit_load_s']:.1f}s "
            f"({metrics['neo4j_records_per_s']:,.0f} records/s), per-row extrapolated "
            f"{nj['naive_extrapolated_s']:.0f}s "
            f"({metrics['neo4j_speedup']:.1f}x); lineage p50 {nj['p50_ms']:.2f} ms")
    except Exception as exc:
        notes.append(f"Neo4j run failed: {str(exc).splitlines()[0]}")
        say(f"Neo4j run failed: {exc}")
    finally:
        server.stop()


# The incremental and scale sections are also run on their own (`python -m bench.incremental`,
# `python -m bench.scale`), which write incremental.json / scale.json beside this file; a run
# that skips them reports those files' figures, so the targets table is never blank for them.
STANDALONE = {"incremental": HERE / "incremental.json", "scale": HERE / "scale.json",
              "shapes": HERE / "shapes.json", "ccusage": HERE / "ccusage.json"}


def keep_standalone_runs(results: dict[str, Any], metrics: dict[str, Any],
                         run_these: list[str]) -> None:
    """Fill sections not run now from their standalone result files, marked as kept."""
    for name, path in STANDALONE.items():
        if name in run_these or not path.exists():
            continue
        got = json.loads(path.read_text())
        results[name] = got
        metrics.update({k: v for k, v in got.get("metrics", {}).items()
                        if not k.startswith("transcripts_")})  # measured by their section
        load = got.get("load_avg") or [0.0, 0.0, 0.0]
        results.setdefault("sections_run", {})[name] = {
            "at": got.get("when", f"see {path.name}"), "seconds": None,
            "load_avg": [list(load), list(load)], "kept": True}


def section_ccusage(args: argparse.Namespace, results: dict[str, Any], paths: dict[int, Path],
                    metrics: dict[str, Any]) -> None:
    """graphkit's first build (and a kept one) + `usage --json` beside ccusage, whole
    processes on the same generated Claude history (bench/ccusage.py)."""
    from bench.ccusage import markdown
    from bench.ccusage import run as run_ccusage

    got = run_ccusage(args.data, say, runs=3 if args.quick else 5)
    results["ccusage"] = got
    metrics.update(got["metrics"])
    if not got["metrics"]:
        results["notes"].append(f"ccusage not measured: {got['ccusage'].get('error')}")
    (args.out / "ccusage.json").write_text(json.dumps(got, indent=1, default=str) + "\n")
    write_section("ccusage", "\n".join(markdown(got)), args.out)


def section_incremental(args: argparse.Namespace, results: dict[str, Any],
                        paths: dict[int, Path], metrics: dict[str, Any]) -> None:
    from bench.incremental import run as run_incremental  # cold / no-op / append builds

    results["incremental"] = run_incremental(args.data, say, runs=3 if args.quick else 5,
                                             idle=15.0 if args.quick else 60.0)
    metrics.update({k: v for k, v in results["incremental"]["metrics"].items()
                    if not k.startswith("transcripts_")})  # those are measured above


def section_scale(args: argparse.Namespace, results: dict[str, Any], paths: dict[int, Path],
                  metrics: dict[str, Any]) -> None:
    from bench.scale import run as run_scale

    spark_sizes = "" if args.quick else args.spark_sizes
    results["scale"] = run_scale(
        sorted(parse_size(x) for x in ("100k" if args.quick else args.scale_sizes).split(",")),
        [parse_size(x) for x in spark_sizes.split(",") if x], args.data, say)
    metrics.update(results["scale"]["metrics"])


def section_shapes(args: argparse.Namespace, results: dict[str, Any], paths: dict[int, Path],
                   metrics: dict[str, Any]) -> None:
    from bench.shapes import SHAPES, markdown
    from bench.shapes import run as run_shapes

    got = run_shapes(list(SHAPES), 0.25 if args.quick else args.shapes_scale,
                     args.data / "shapes", say)
    results["shapes"] = got
    metrics.update(got["metrics"])
    (args.out / "shapes.json").write_text(json.dumps(got, indent=1) + "\n")
    write_section("shapes", markdown(got), args.out)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10k,100k,1m")
    ap.add_argument("--quick", action="store_true",
                    help="sizes 10k,100k, one run each (3 whole-process rounds), fewer queries")
    ap.add_argument("--only", default="",
                    help="comma-separated sections to run (" + ",".join(SECTIONS) + "); the "
                         "others keep their figures from the previous results.json")
    ap.add_argument("--skip", default="", help="comma-separated sections not to run")
    ap.add_argument("--no-neo4j", action="store_true", help="the same as --skip neo4j")
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--data", type=Path, default=HERE / ".data")
    ap.add_argument("--whole-sizes", default="100k,1m",
                    help="sizes timed as whole `graphkit build` processes (quick: 10k,100k)")
    ap.add_argument("--whole-runs", type=int, default=0,
                    help="interleaved rounds per size (default 5; quick 3)")
    ap.add_argument("--whole-baseline", type=Path,
                    help="another graphkit checkout whose `graphkit build` runs in the same "
                         "rounds (before/after)")
    ap.add_argument("--scale-sizes", default="100k,1m,10m",
                    help="peak RSS vs rows of the partitioned build ('' skips; bench/scale.py)")
    ap.add_argument("--spark-sizes", default="100k,1m", help="Spark engine beside local")
    ap.add_argument("--shapes-scale", type=float, default=0.5,
                    help="multiply the skewed shapes' default sizes (bench/shapes.py): 0.5 is "
                         "~480 processes, 3-4 min on an idle machine")
    args = ap.parse_args()
    if args.quick and args.whole_sizes == "100k,1m":
        args.whole_sizes = "10k,100k"
    return args


def main() -> None:
    if sys.argv[1:] == ["--report-only"]:
        # The results section again from results.json, with the
        # standalone sections' latest files (`python -m bench.incremental` run since).
        results = json.loads((HERE / "results.json").read_text())
        metrics = dict(results.get("metrics", {}))
        keep_standalone_runs(results, metrics, [])
        results["metrics"] = metrics
        results["targets"] = judge(metrics)
        (HERE / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
        write_markdown(results, HERE)
        return
    args = parse_args()
    started = time.time()
    only = [x for x in args.only.split(",") if x] or list(SECTIONS)
    skip = {x for x in args.skip.split(",") if x} | ({"neo4j"} if args.no_neo4j else set())
    if not args.scale_sizes:
        skip.add("scale")
    unknown = (set(only) | skip) - set(SECTIONS)
    if unknown:
        raise SystemExit(f"unknown section(s) {sorted(unknown)}; sections are {SECTIONS}")
    run_these = [x for x in SECTIONS if x in only and x not in skip]
    sizes = sorted({parse_size(s) for s in ("10k,100k" if args.quick else args.sizes).split(",")}
                   | {parse_size(x) for x in args.whole_sizes.split(",") if x
                      and "whole" in run_these})
    args.out.mkdir(parents=True, exist_ok=True)
    # A partial run (--only/--skip) keeps the other sections' figures from the
    # last results.json, each with the time and load it was measured at.
    prev_path = args.out / "results.json"
    prev: dict[str, Any] = (json.loads(prev_path.read_text())
                            if prev_path.exists() and len(run_these) < len(SECTIONS) else {})
    results: dict[str, Any] = {**prev, "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                               "argv": sys.argv[1:], "machine": machine(), "notes": []}
    results.setdefault("sizes", [])
    runs_at = results.setdefault("sections_run", {})
    for name in SECTIONS:
        if prev and name not in run_these and name not in runs_at:
            # Figures kept from a run that predates per-section dates.
            load = prev.get("machine", {}).get("load_avg_at_start", [0.0])
            runs_at[name] = {"at": prev.get("started", "?"), "seconds": None,
                             "load_avg": [list(load), list(load)], "kept": True}
    notes = results["notes"]
    notes.append("graphkit in-process is timed with fingerprints=False (no SHA-256 of the "
                 "input files, which the naive script does not do either); the whole "
                 "`graphkit build` process records their size and mtime (SHA-256 only with "
                 "--hash-inputs). The naive script reads the "
                 "same non-content columns graphkit reads and memoizes node ids per key, so "
                 "it is a strong baseline, not a straw man.")
    say(f"machine: {results['machine']}; sections: {','.join(run_these)}")

    paths = {}
    # The shapes section makes its own data: a run of it alone generates no rows.
    for n in sizes if set(run_these) - {"shapes"} else []:
        t0 = time.perf_counter()
        paths[n], meta = ensure_rows(n, args.data)
        say(f"data {size_label(n)}: {meta['rows']:,} rows, {meta['threads']:,} threads, "
            f"{meta['sessions']:,} sessions ({'cached' if meta.get('cached') else 'generated'} "
            f"in {time.perf_counter() - t0:.1f}s)")
        results.setdefault("data", {})[size_label(n)] = meta

    metrics: dict[str, Any] = dict(prev.get("metrics", {}))
    for name in run_these:
        t0 = time.time()
        load0 = os.getloadavg()
        globals()[f"section_{name}"](args, results, paths, metrics)
        runs_at[name] = {"at": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t0)),
                         "seconds": round(time.time() - t0, 1),
                         "load_avg": [list(load0), list(os.getloadavg())]}
    for name in skip:
        if name not in runs_at:
            notes.append(f"{name} skipped")

    keep_standalone_runs(results, metrics, run_these)
    results["metrics"] = metrics
    results["targets"] = judge(metrics)
    results["wall_s"] = time.time() - started
    (args.out / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    if results["sizes"]:
        plot(results, args.out)
    write_markdown(results, args.out)
    say("")
    say(f"{'rows':>10} {'floor s':>8} {'graphkit s':>10} {'naive s':>8} {'naive/gk':>8} "
        f"{'gk/floor':>8} {'RSS MB':>7}")
    for s in results["sizes"]:
        say(f"{s['rows']:>10,} {s['floor_s']:>8.3f} {s['graphkit_s']:>10.3f} "
            f"{s['naive_s']:>8.3f} {s['speedup']:>7.1f}x {s['floor_ratio']:>7.1f}x "
            f"{s['graphkit_rss_mb']:>7.0f}")
    say("")
    for j in results["targets"]:
        say(f"  {j['target']:<70} {j['status']}")
    say(f"\nwrote {args.out / 'README.md'}, results.json, time_vs_rows.png "
        f"({results['wall_s']:.0f}s)")


if __name__ == "__main__":
    main()
