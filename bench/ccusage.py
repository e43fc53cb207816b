"""graphkit beside ccusage on the same generated Claude history, as whole processes.

    python -m bench.ccusage [--runs 5] [--data bench/.data] [--out bench]

ccusage (``ccusage claude session --json --offline``) is the tool most people already run
over ``~/.claude/projects``; a user's first impression of graphkit is its first build. The
history is :func:`bench.generate.generate_transcripts` at the size issue 32 measured
(2,036 sessions, ~8k files with subagents, ~120 MB). Interleaved rounds (order rotated,
page cache warmed before every run), each figure the median of the rounds:

- **ccusage**: its native binary, as ``npx -y ccusage@VERSION`` installs it (run directly:
  npx's own start is no part of ccusage; the Node wrapper a global install puts on PATH is
  timed too, as *ccusage via node*);
- **cold**: ``graphkit build PROJECTS --snapshot S -q`` with no snapshot and no cache, then
  ``graphkit usage --snapshot S --json``: two processes, their wall times added; as users
  run it (every idle core: the cores less the last minute's load), with every core forced
  (``GRAPHKIT_PARSE_WORKERS`` = the cores) and with ``GRAPHKIT_PARSE_WORKERS=1``;
- **kept**: the same two commands when nothing changed (the build keeps the snapshot).

Wall, CPU (user + system, workers included) and peak RSS (the largest process of the
command, from GNU time) of each. The snapshots of the cold builds at 1 and at every core
must be equal table for table (digests of the manifests). When ``npx`` or the registry is
not there, the section says so and its targets read "not measured".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

VERSION = "20.0.24"  # as tests/queries/ccusage_compare.py (20.0.26 has no Linux x64 binary)
# Issue 32's history: 2,036 sessions, 119 MB, 8,100 files with subagents.
HISTORY = {"claude_sessions": 2036, "claude_lines": 165_000, "codex_rollouts": 0}

TARGETS = [  # metric, target text, op, threshold
    ("ccusage_cold_ratio", "`graphkit build` + `usage --json`, cold, ≤ 2× ccusage's wall "
     "(whole processes)", "<=", 2.0),
    ("ccusage_kept_ratio", "`graphkit build` (snapshot kept) + `usage --json` ≤ 1× ccusage's "
     "wall", "<=", 1.0),
]


def _time_tool() -> str | None:
    """GNU time, for the peak RSS of a command (a child's ``ru_maxrss`` read from a large
    parent carries the parent's size over on Linux; time's own is ~2 MB)."""
    for cand in ("/usr/bin/time", shutil.which("time")):
        if cand and os.path.isfile(cand):
            done = subprocess.run([cand, "-f", "%M", "true"], capture_output=True, text=True)
            if done.returncode == 0 and done.stderr.strip().isdigit():
                return cand
    return None


def run_cmd(cmd: list[str], env: dict[str, str], time_tool: str | None,
            expect: Callable[[str], bool] | None = None) -> dict[str, float]:
    """Wall, CPU (of it and its reaped children) and peak RSS MB of one command."""
    from bench.whole import _children_cpu

    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        full = [time_tool, "-f", "%M", "-o", rss.name, *cmd] if time_tool else cmd
        cpu0 = _children_cpu()
        t0 = time.perf_counter()
        done = subprocess.run(full, capture_output=True, text=True, cwd=ROOT, env=env)
        wall = time.perf_counter() - t0
        cpu = _children_cpu() - cpu0
        if done.returncode != 0 or (expect is not None and not expect(done.stdout)):
            raise RuntimeError(f"{' '.join(cmd[:3])} … failed ({done.returncode}):\n"
                               f"{done.stdout[-400:]}{done.stderr[-1500:]}")
        text = rss.read().strip().splitlines()
    peak = int(text[-1]) / 1024 if text and text[-1].isdigit() else float("nan")
    return {"wall_s": wall, "cpu_s": cpu, "rss_mb": peak}


def find_ccusage() -> tuple[dict[str, str] | None, str]:
    """The ccusage native binary (and its Node wrapper) ``npx`` installs, or why not."""
    npx = shutil.which("npx")
    if npx is None:
        return None, "npx is not on PATH (Node.js is not installed)"
    try:
        done = subprocess.run([npx, "-y", f"ccusage@{VERSION}", "--version"],
                              capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"npx -y ccusage@{VERSION} did not run ({exc})"
    if done.returncode != 0:
        return None, (f"npx -y ccusage@{VERSION} failed: "
                      f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    cache = _npm_cache() / "_npx"
    for pkg in sorted(cache.glob("*/node_modules/ccusage/package.json")):
        if json.loads(pkg.read_text()).get("version") != VERSION:
            continue
        modules = pkg.parent.parent
        wrapper = modules / "ccusage" / "src" / "cli.js"
        for native in sorted(modules.glob("@ccusage/ccusage-*/bin/ccusage*")):
            if os.access(native, os.X_OK):
                return {"native": str(native), "wrapper": str(wrapper),
                        "node": shutil.which("node") or "node"}, ""
        return None, ("ccusage's native package for this platform is not installed "
                      f"(looked in {modules / '@ccusage'})")
    return None, f"ccusage {VERSION} ran, but its package was not found under {cache}"


def _npm_cache() -> Path:
    """npm's cache folder, where npx installs packages (``npm config get cache``)."""
    npm = shutil.which("npm")
    if npm:
        done = subprocess.run([npm, "config", "get", "cache"], capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip():
            return Path(done.stdout.strip())
    return Path.home() / ".npm"


def _digests(snapshot: Path) -> dict[str, str]:
    m = json.loads((snapshot / "manifest.json").read_text())
    return {f"{part}/{k}": v["sha256"] for part in ("nodes", "edges")
            for k, v in m[part].items()}


def run(data: Path, say: Callable[[str], None] = print, runs: int = 5) -> dict[str, Any]:
    """Measure; the results as one dict (what ``python -m bench`` embeds)."""
    from bench.generate import ensure_transcripts
    from bench.whole import child_env, graphkit_command, warm

    history, meta = ensure_transcripts(data / "ccusage-history", **HISTORY)
    claude = history / "claude"
    projects = claude / "projects"
    nbytes = sum(f.stat().st_size for f in claude.rglob("*") if f.is_file())
    nfiles = sum(1 for f in projects.rglob("*.jsonl"))
    res: dict[str, Any] = {
        "history": {"sessions": meta["claude_sessions"], "lines": meta["claude_lines"],
                    "jsonl_files": nfiles, "mb": nbytes / 1e6},
        "runs": runs, "cores": os.cpu_count(), "load_avg": [list(os.getloadavg())],
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    say(f"ccusage beside graphkit: {meta['claude_sessions']} sessions, {nfiles} transcript "
        f"files, {nbytes / 1e6:.0f} MB ...")
    found, why = find_ccusage()
    res["ccusage"] = found or {"error": why}
    if found is None:
        say(f"  ccusage cannot run here: {why}")
    tool = _time_tool()
    gk = graphkit_command()
    env = child_env(ROOT)
    env.pop("GRAPHKIT_PARSE_WORKERS", None)
    one = dict(env, GRAPHKIT_PARSE_WORKERS="1")
    every = dict(env, GRAPHKIT_PARSE_WORKERS=str(os.cpu_count() or 1))
    cc_env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude))
    work = data / "ccusage-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)

    def is_json(out: str) -> bool:
        try:
            return bool(json.loads(out))
        except ValueError:
            return False

    def usage(snap: Path, e: dict[str, str]) -> dict[str, float]:
        return run_cmd([*gk, "usage", "--snapshot", str(snap), "--json"], e, tool,
                       lambda out: '"record": "usage"' in out)

    def build(snap: Path, e: dict[str, str], fresh: bool) -> dict[str, float]:
        if fresh:
            shutil.rmtree(snap, ignore_errors=True)
            shutil.rmtree(snap.parent / f".{snap.name}.cache", ignore_errors=True)
        said = "snapshot written" if fresh else "snapshot kept"
        return run_cmd([*gk, "build", str(projects), "--snapshot", str(snap)], e, tool,
                       lambda out: said in out)

    def pair(snap: Path, e: dict[str, str], fresh: bool) -> dict[str, float]:
        b, u = build(snap, e, fresh), usage(snap, e)
        return {"wall_s": b["wall_s"] + u["wall_s"], "cpu_s": b["cpu_s"] + u["cpu_s"],
                "rss_mb": max(b["rss_mb"], u["rss_mb"]), "build_wall_s": b["wall_s"],
                "usage_wall_s": u["wall_s"], "build_cpu_s": b["cpu_s"],
                "build_rss_mb": b["rss_mb"], "usage_rss_mb": u["rss_mb"]}

    kept = work / "kept"
    build(kept, env, True)  # untimed: the snapshot the kept runs keep (and .pyc files)
    tasks: dict[str, Callable[[], dict[str, float]]] = {
        "cold": lambda: pair(work / "cold", env, True),
        "cold_every_core": lambda: pair(work / "coldn", every, True),
        "cold_1_worker": lambda: pair(work / "cold1", one, True),
        "kept": lambda: pair(kept, env, False),
    }
    if found is not None:
        tasks["ccusage"] = lambda: run_cmd(
            [found["native"], "claude", "session", "--json", "--offline"], cc_env, tool,
            is_json)
        tasks["ccusage_node"] = lambda: run_cmd(
            [found["node"], found["wrapper"], "claude", "session", "--json", "--offline"],
            cc_env, tool, is_json)
    names = list(tasks)
    got: dict[str, list[dict[str, float]]] = {k: [] for k in names}
    for i in range(runs):
        for name in names[i % len(names):] + names[:i % len(names)]:
            warm(claude)
            got[name].append(tasks[name]())
        say(f"    round {i + 1}/{runs}: " + "  ".join(
            f"{k} {got[k][-1]['wall_s']:.2f}s" for k in names))
    med = {k: {f: statistics.median(r[f] for r in v) for f in v[0]} for k, v in got.items()}
    res["median"], res["all"] = med, got
    res["same_tables_any_workers"] = (_digests(work / "cold") == _digests(work / "cold1")
                                      == _digests(work / "coldn"))
    res["load_avg"].append(list(os.getloadavg()))
    metrics: dict[str, float] = {}
    if "ccusage" in med:
        metrics["ccusage_cold_ratio"] = med["cold"]["wall_s"] / med["ccusage"]["wall_s"]
        metrics["ccusage_kept_ratio"] = med["kept"]["wall_s"] / med["ccusage"]["wall_s"]
    res["metrics"] = metrics
    res["targets"] = judge(metrics, why)
    say("  " + ", ".join(f"{k} {v['wall_s']:.2f}s" for k, v in med.items())
        + (f"; cold {metrics['ccusage_cold_ratio']:.1f}x, kept "
           f"{metrics['ccusage_kept_ratio']:.2f}x ccusage" if metrics else
           f"; ccusage not measured: {why}")
        + f"; same tables at any workers: {res['same_tables_any_workers']}")
    shutil.rmtree(work, ignore_errors=True)
    return res


def judge(metrics: dict[str, float], why: str = "") -> list[dict[str, Any]]:
    """Each target met or missed, and by how much (a ratio of the bound)."""
    out = []
    for key, text, _op, limit in TARGETS:
        v = metrics.get(key)
        if v is None:
            out.append({"key": key, "target": text, "value": None,
                        "status": f"not measured ({why or 'ccusage did not run'})"})
            continue
        status = (f"met ({v / limit:.2f}× of the bound)" if v <= limit else
                  f"missed: {v:.2f}× vs {limit:g}× ({v / limit:.1f}× over)")
        out.append({"key": key, "target": text, "value": v, "status": status, "met": v <= limit})
    return out


def markdown(res: dict[str, Any]) -> list[str]:
    """Its section of bench/README.md."""
    h = res["history"]
    lines = ["## graphkit beside ccusage (whole processes)", "",
             f"{res['when']}, load average {res['load_avg'][0][0]:.1f} → "
             f"{res['load_avg'][-1][0]:.1f} ({res['cores']} cores, shared). Generated Claude "
             f"history: {h['sessions']:,} sessions, {h['jsonl_files']:,} transcript files, "
             f"{h['mb']:.0f} MB. Medians of {res['runs']} interleaved rounds; **cold** and "
             "**kept** are `graphkit build PROJECTS --snapshot S` then `graphkit usage "
             "--snapshot S --json`, wall times added; CPU includes worker processes; peak "
             "RSS is the largest single process.", ""]
    cc = res.get("ccusage", {})
    if "error" in cc:
        lines += [f"**ccusage could not run here**: {cc['error']}.", ""]
    med = res["median"]
    base = med.get("ccusage", {}).get("wall_s")
    labels = {"ccusage": f"`ccusage claude session --json --offline` ({VERSION}, native)",
              "ccusage_node": "the same via its Node wrapper (`ccusage` on PATH)",
              "cold": "graphkit cold: build + usage (as run: every idle core)",
              "cold_every_core": f"graphkit cold, `GRAPHKIT_PARSE_WORKERS={res['cores']}`",
              "cold_1_worker": "graphkit cold, `GRAPHKIT_PARSE_WORKERS=1`",
              "kept": "graphkit, snapshot kept: build + usage"}
    lines += ["| command | wall s | of ccusage | CPU s | peak RSS MB | build / usage wall s |",
              "|---|---:|---:|---:|---:|---|"]
    for k, label in labels.items():
        if k not in med:
            continue
        m = med[k]
        ratio = f"{m['wall_s'] / base:.2f}×" if base else "—"
        split = (f"{m['build_wall_s']:.2f} / {m['usage_wall_s']:.2f}"
                 if "build_wall_s" in m else "")
        lines.append(f"| {label} | {m['wall_s']:.2f} | {ratio} | {m['cpu_s']:.2f} | "
                     f"{m['rss_mb']:.0f} | {split} |")
    lines += ["", "Cold snapshots as run, at 1 worker and at every core equal table for table: "
              f"**{res['same_tables_any_workers']}**.", "",
              "| target | measured | status |", "|---|---:|---|"]
    for j in res["targets"]:
        v = j["value"]
        lines.append(f"| {j['target']} | {'—' if v is None else f'{v:.2f}'} | {j['status']} |")
    lines.append("")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.ccusage",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--data", type=Path, default=HERE / ".data")
    args = ap.parse_args()
    res = run(args.data, runs=args.runs)
    (args.out / "ccusage.json").write_text(json.dumps(res, indent=1) + "\n")
    from bench.report import write_section

    write_section("ccusage", "\n".join(markdown(res)), args.out)
    print("\n".join(markdown(res)))
    sys.exit(0)


if __name__ == "__main__":
    main()
