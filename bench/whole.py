"""What a user runs, timed as whole processes: interpreter start, imports, work, exit.

``python -m bench`` calls :func:`run`. Per size, in rounds (each round runs every
task once, the order rotated round by round so no task always goes first, the
size's files read into the page cache before every timed run):

- **floor**: ``python -c`` that imports pyarrow and reads the columns graphkit
  reads (:data:`FLOOR_COLUMNS`) with ``pq.read_table``; nothing else.
- **build**: ``graphkit build DIR --snapshot OUT`` into a new folder (rows →
  graph → Parquet snapshot, manifest, rejects), the console script users run.
- **rebuild**: the same command again into the snapshot it made (nothing
  changed: the stat-based check of ``graphkit.builds.uptodate`` keeps the snapshot).
- **naive**: ``python -m bench.naive DIR`` (rows as dicts, a NetworkX graph one row
  at a time, the same graph; see ``bench/naive.py``). It writes no snapshot.

Then ``graphkit lineage ID --snapshot OUT`` on the largest size's snapshot.
Each run's wall time and CPU time (user + system, from ``wait4``) are kept;
the figures are medians. Ratios are of medians in the same run.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# The input columns graphkit reads with the default contract and without
# --include-content: its input columns less content, plus what touched_files
# is computed from (tool_args). The same list bench/naive.py reads.
FLOOR_COLUMNS = ["session_id", "conversation_id", "agent_id", "parent_thread_id",
                 "is_sidechain", "message_id", "part_id", "message_created_at",
                 "message_index", "part_type", "provider", "model", "client_name", "cwd",
                 "repo_root", "git_branch", "tool_name", "tool_call_id", "attributes",
                 "schema_version", "tool_args"]
FLOOR_CODE = ("import sys, pyarrow.parquet as pq; "
              "t = pq.read_table(sys.argv[1], columns=sys.argv[2].split(',')); "
              "print(t.num_rows)")


def graphkit_command() -> list[str]:
    """The ``graphkit`` console script beside this interpreter (what ``pip install``
    puts on PATH), or ``python -m graphkit`` where there is none."""
    script = Path(sys.executable).parent / "graphkit"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "graphkit"]


def child_env(code: Path = ROOT) -> dict[str, str]:
    # The checkout's code (or a baseline's), whatever the installed package points at.
    env = dict(os.environ)
    # Users run graphkit with its bytecode cached (pip compiles it; an editable
    # install writes __pycache__ on the first run). A shell that sets
    # PYTHONDONTWRITEBYTECODE would make every timed process compile graphkit's
    # modules from source (~0.3 CPU-s measured), a cost no user pays.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join([str(code), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed(cmd: list[str], expect: str | None = None, code: Path = ROOT) -> dict[str, float]:
    """Run ``cmd`` to its end; wall seconds and its user+system CPU seconds (the
    growth of this process's reaped-children CPU: runs are one at a time)."""
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=child_env(code))
    wall = time.perf_counter() - t0
    cpu = _children_cpu() - cpu0
    if done.returncode != 0 or (expect is not None and expect not in done.stdout):
        raise RuntimeError(f"{' '.join(cmd[:4])} … failed ({done.returncode}):\n"
                           f"{done.stdout[-500:]}{done.stderr[-2000:]}")
    return {"wall_s": wall, "cpu_s": cpu}


def warm(path: Path) -> None:
    """Read every file under ``path`` once, untimed (the page cache holds it)."""
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        with f.open("rb") as fh:
            while fh.read(1 << 24):
                pass


def _median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def rounds(tasks: dict[str, Callable[[], dict[str, float]]], n: int, data: Path,
           say: Callable[[str], None]) -> dict[str, list[dict[str, float]]]:
    """``n`` rounds of every task, the order rotated each round."""
    names = list(tasks)
    out: dict[str, list[dict[str, float]]] = {k: [] for k in names}
    for i in range(n):
        order = names[i % len(names):] + names[:i % len(names)]
        for name in order:
            warm(data)
            out[name].append(tasks[name]())
        say(f"    round {i + 1}/{n}: " + "  ".join(
            f"{k} {out[k][-1]['wall_s']:.2f}s" for k in names))
    return out


def size_tasks(data: Path, work: Path,
               baseline: Path | None = None) -> dict[str, Callable[[], dict[str, float]]]:
    gk = graphkit_command()
    fresh, again = work / "snapshot-new", work / "snapshot-again"
    before = work / "snapshot-baseline"

    def build() -> dict[str, float]:
        shutil.rmtree(fresh, ignore_errors=True)
        return timed([*gk, "build", str(data), "--snapshot", str(fresh)], "snapshot written")

    def rebuild() -> dict[str, float]:
        # Nothing changed since the untimed build: the snapshot is kept, and says so.
        return timed([*gk, "build", str(data), "--snapshot", str(again)], "snapshot kept")

    def build_baseline() -> dict[str, float]:
        assert baseline is not None
        shutil.rmtree(before, ignore_errors=True)
        return timed([*gk, "build", str(data), "--snapshot", str(before)], "snapshot written",
                     code=baseline)

    tasks = {
        "floor": lambda: timed([sys.executable, "-c", FLOOR_CODE, str(data),
                                ",".join(FLOOR_COLUMNS)]),
        "build": build,
        "rebuild": rebuild,
        "naive": lambda: timed([sys.executable, "-m", "bench.naive", str(data)], "Thread"),
    }
    if baseline is not None:
        tasks["baseline"] = build_baseline
    return tasks


def run(paths: dict[str, Path], runs: int, work: Path, say: Callable[[str], None] = print,
        baseline: Path | None = None) -> dict[str, Any]:
    """Measure every size in ``paths`` (label -> rows folder); one dict of results.
    With ``baseline`` (another checkout of graphkit), its ``graphkit build`` runs in
    the same rounds as task ``baseline``: before and after, measured together."""
    result: dict[str, Any] = {"command": graphkit_command()[0], "runs": runs,
                              "baseline": str(baseline) if baseline else None,
                              "load_avg_at_start": os.getloadavg(), "sizes": []}
    t_start = time.time()
    gk = graphkit_command()
    for label, data in paths.items():
        w = work / f"whole-{label}"
        shutil.rmtree(w, ignore_errors=True)
        w.mkdir(parents=True)
        say(f"  whole processes, {label}: {runs} rounds of floor, build, rebuild, naive ...")
        warm(data)
        # Untimed: writes .pyc files after an edit, and the snapshot `rebuild` replaces.
        timed([*gk, "build", str(data), "--snapshot", str(w / "snapshot-again")],
              "snapshot written")
        load0 = os.getloadavg()
        got = rounds(size_tasks(data, w, baseline), runs, data, say)
        med = {k: {"wall_s": _median(v, "wall_s"), "cpu_s": _median(v, "cpu_s")}
               for k, v in got.items()}
        snap = w / "snapshot-new"
        row = {"label": label, "runs": got, "median": med, "load_avg": [load0, os.getloadavg()],
               "snapshot_mb": sum(f.stat().st_size for f in snap.rglob("*") if f.is_file()) / 1e6,
               "naive_over_build": med["naive"]["wall_s"] / med["build"]["wall_s"],
               "build_over_floor": med["build"]["wall_s"] / med["floor"]["wall_s"],
               "naive_over_build_cpu": med["naive"]["cpu_s"] / med["build"]["cpu_s"],
               "build_over_floor_cpu": med["build"]["cpu_s"] / med["floor"]["cpu_s"],
               "rebuild_over_build": med["rebuild"]["wall_s"] / med["build"]["wall_s"]}
        if baseline is not None:
            row["baseline_over_build"] = med["baseline"]["wall_s"] / med["build"]["wall_s"]
            row["naive_over_baseline"] = med["naive"]["wall_s"] / med["baseline"]["wall_s"]
            row["baseline_over_floor"] = med["baseline"]["wall_s"] / med["floor"]["wall_s"]
        result["sizes"].append(row)
        say(f"  {label}: floor {med['floor']['wall_s']:.2f}s build {med['build']['wall_s']:.2f}s "
            f"rebuild {med['rebuild']['wall_s']:.2f}s naive {med['naive']['wall_s']:.2f}s: "
            f"naive/build {row['naive_over_build']:.1f}x, build/floor "
            f"{row['build_over_floor']:.2f}x (CPU: {row['naive_over_build_cpu']:.1f}x, "
            f"{row['build_over_floor_cpu']:.2f}x)")
    result["wall_s"] = time.time() - t_start
    return result


def lineage(snapshot: Path, ids: list[str], runs: int) -> dict[str, Any]:
    """``graphkit lineage ID --snapshot DIR`` as a whole process, ``runs`` times."""
    gk = graphkit_command()
    got = [timed([*gk, "lineage", ids[i % len(ids)], "--snapshot", str(snapshot)],
                 ids[i % len(ids)]) for i in range(runs)]
    imp = [timed([sys.executable, "-c", "import graphkit.cli"]) for _ in range(3)]
    return {"median_s": _median(got, "wall_s"), "min_s": min(r["wall_s"] for r in got),
            "all_s": [r["wall_s"] for r in got], "cpu_median_s": _median(got, "cpu_s"),
            "python_import_cli_s": _median(imp, "wall_s"), "command": gk[0]}


def markdown(whole: dict[str, Any]) -> list[str]:
    """The whole-process section of RESULTS.md."""
    lines = ["## Whole processes (what a user runs)", "",
             f"`{Path(whole['command']).name} build DIR --snapshot OUT` and the others as "
             "whole processes (interpreter start, imports, work, exit), "
             f"{whole['runs']} interleaved rounds per size, each run after the size's files "
             "were read into the page cache; medians. **floor**: `python -c` importing pyarrow "
             f"and reading the {len(FLOOR_COLUMNS)} columns graphkit reads "
             "(`pq.read_table(DIR, columns=...)`). **build**: into a new folder. **rebuild**: "
             "the same command into the snapshot it made (nothing changed: the stat check "
             "keeps the snapshot). **naive**: `python -m bench.naive DIR` "
             "(the same graph, no snapshot written). CPU is user+system of the process.", "",
             "| rows | floor s | build s | rebuild s | naive s | naive/build | build/floor "
             "| CPU naive/build | CPU build/floor | snapshot MB | load avg (1 min) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for s in whole["sizes"]:
        m = s["median"]
        lines.append(
            f"| {s['label']} | {m['floor']['wall_s']:.2f} | {m['build']['wall_s']:.2f} | "
            f"{m['rebuild']['wall_s']:.2f} | {m['naive']['wall_s']:.2f} | "
            f"{s['naive_over_build']:.1f}× | {s['build_over_floor']:.2f}× | "
            f"{s['naive_over_build_cpu']:.1f}× | {s['build_over_floor_cpu']:.2f}× | "
            f"{s['snapshot_mb']:.1f} | {s['load_avg'][0][0]:.1f} → {s['load_avg'][1][0]:.1f} |")
    if whole.get("baseline"):
        lines += ["", f"Baseline in the same rounds: `graphkit build` of the checkout at "
                  f"`{whole['baseline']}` (before this change):", "",
                  "| rows | baseline build s | build s | baseline/build | naive/baseline "
                  "| baseline/floor |", "|---|---:|---:|---:|---:|---:|"]
        for s in whole["sizes"]:
            m = s["median"]
            lines.append(f"| {s['label']} | {m['baseline']['wall_s']:.2f} | "
                         f"{m['build']['wall_s']:.2f} | {s['baseline_over_build']:.2f}× | "
                         f"{s['naive_over_baseline']:.1f}× | {s['baseline_over_floor']:.2f}× |")
    lines.append("")
    return lines
