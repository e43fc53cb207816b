"""Incremental transcript builds as whole processes: cold, nothing changed, one line appended.

    python -m bench.incremental [--runs 5] [--data bench/.data] [--out bench]

The benchmark's transcript set (``bench.generate``) is copied to a work folder (appends
must not touch the shared copy). Each figure is the median of ``--runs`` whole
``graphkit build <transcripts> --snapshot S --json`` processes:

- *cold*: snapshot and cache removed first;
- *no-op*: nothing changed since the last build;
- *append*: one line appended to one Claude session, then the build (a new line each run);
- *watch*: a ``graphkit build --watch --json`` process left running on the same copy (its own
  snapshot); one line appended to the same session, timed until the watcher prints that
  rebuild's line (wall, and the watcher's CPU over that time from ``/proc``), with a quiet
  second before each append; also the watcher's CPU while idle for a minute, with file
  events and with ``--poll 1``, beside the CPU of the stat walk a poll of its own would do.

Also: the cache's bytes against the transcripts' bytes, transcripts → rows lines/s and
peak RSS (``bench.worker transcripts``, no cache), and whether the snapshot after the
appends equals a cold build of the same files table for table. Writes its section of ``README.md``
and ``incremental.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

TARGETS = [  # metric, target text, op, threshold
    ("incremental_noop_ratio", "no-op rebuild ≤ 5% of cold (whole process)", "<=", 0.05),
    ("incremental_append_ratio", "one line appended ≤ 10% of cold (whole process)", "<=", 0.10),
    ("incremental_watch_append_ratio",
     "one line appended ≤ 10% of cold (`--watch` process, to its rebuild line)", "<=", 0.10),
    ("incremental_cache_ratio", "cache ≤ 20% of the transcripts' bytes", "<=", 0.20),
    ("transcripts_lines_per_s", "transcripts → rows ≥ 100k Claude lines/s", ">=", 100_000.0),
    ("transcripts_rss_mb", "transcripts → rows peak RSS < 500 MB", "<", 500.0),
]


def _env() -> dict[str, str]:
    # The same environment as bench.whole's processes (bytecode cached, as users have it).
    from bench.whole import child_env

    return child_env(ROOT)


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _build(src: Path, snap: Path, cpu: list[float] | None = None,
           **env: str) -> tuple[float, dict[str, Any]]:
    c0 = _cpu()
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "graphkit", "build", str(src), "--snapshot",
                           str(snap), "--json"], capture_output=True, text=True, cwd=ROOT,
                          env={**_env(), **env}, timeout=3600)
    took = time.perf_counter() - t0
    if cpu is not None:
        cpu.append(_cpu() - c0)  # user + system seconds of the process: steadier than wall
    if done.returncode != 0:
        raise RuntimeError(f"graphkit build failed:\n{done.stderr[-3000:]}")
    return took, json.loads(done.stdout)


def _tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _append(session: Path, n: int) -> None:
    last = json.loads(session.read_text().splitlines()[-1])
    line = dict(last, uuid=f"bench-append-{n:04d}", parentUuid=last.get("uuid"),
                type="user", message={"role": "user", "content": f"appended line {n}"})
    line.pop("toolUseResult", None)
    with session.open("a") as fh:
        fh.write(json.dumps(line, separators=(",", ":")) + "\n")


def _digests(snap: Path) -> dict[str, str]:
    m = json.loads((snap / "manifest.json").read_text())
    return {e["file"]: e["sha256"] for part in ("nodes", "edges") for e in m[part].values()}


def _same_tables(a: Path, b: Path) -> bool:
    """Table for table, and byte for byte (each table file's SHA-256 in the manifests)."""
    from graphkit.snapshot import read_snapshot

    if _digests(a) != _digests(b):
        return False
    ga, gb = read_snapshot(a), read_snapshot(b)
    if set(ga.nodes) != set(gb.nodes) or set(ga.edges) != set(gb.edges):
        return False
    return (all(ga.nodes[t].table.equals(gb.nodes[t].table) for t in ga.nodes)
            and all(ga.edges[t].table.equals(gb.edges[t].table) for t in ga.edges))


def _proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a running process (Linux ``/proc``; clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Watcher:
    """A ``graphkit build --watch --json`` process and its JSON lines."""

    def __init__(self, src: Path, snap: Path, *extra: str) -> None:
        import queue
        import threading

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "graphkit", "build", str(src), "--snapshot", str(snap),
             "--watch", "--json", *extra], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, cwd=ROOT, env=_env())
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.lines.put(json.loads(line))

        threading.Thread(target=read, daemon=True).start()

    def line(self, timeout: float = 600) -> dict[str, Any]:
        got = self.lines.get(timeout=timeout)
        if got["watch"].get("error"):
            raise RuntimeError(f"watch rebuild failed: {got['watch']['error']}")
        return got

    def idle_cpu(self, seconds: float) -> float:
        c0 = _proc_cpu(self.proc.pid)
        time.sleep(seconds)
        return _proc_cpu(self.proc.pid) - c0

    def stop(self) -> int:
        import signal

        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def _walk_cpu(src: Path, runs: int = 7) -> float:
    """CPU seconds of one stat walk of ``src`` (what a poll by graphkit's own no-op check
    costs), median of ``runs`` in this process."""
    from graphkit.builds.uptodate import input_state

    out = []
    for _ in range(runs):
        c0 = time.process_time()
        input_state([src])
        out.append(time.process_time() - c0)
    return statistics.median(out)


def _watch(work: Path, data: Path, session: Path, runs: int, idle: float,
           say: Any) -> dict[str, Any]:
    """The watch-mode figures (see the module's docstring)."""
    snap = data / "incremental-watch-snapshot"
    for p in (snap, data / f".{snap.name}.cache"):
        shutil.rmtree(p, ignore_errors=True)
    say(f"  --watch: {runs} appends, {idle:.0f} s idle with file events and with --poll 1 ...")
    w = _Watcher(work, snap)
    first = w.line()
    time.sleep(2.0)  # the first build's tail (its threads ending) is not idling
    idle_events = w.idle_cpu(idle)
    wall, cpu, inner = [], [], []
    lines = []
    for n in range(runs):
        time.sleep(1.0)  # quiet: the watcher waits for events, nothing else runs
        c0 = _proc_cpu(w.proc.pid)
        t0 = time.perf_counter()
        _append(session, 1000 + n)
        got = w.line()
        wall.append(time.perf_counter() - t0)
        cpu.append(_proc_cpu(w.proc.pid) - c0)
        inner.append(got["watch"]["cpu_seconds"])
        lines.append({k: got["watch"][k] for k in ("rebuild", "changed_paths", "seconds")}
                     | {"transcripts": got.get("transcripts")})
    code = w.stop()
    p = _Watcher(work, snap, "--poll", "1")
    p.line()
    time.sleep(2.0)
    idle_poll = p.idle_cpu(idle)
    code_poll = p.stop()
    # The watcher's snapshot after its appends against a cold build of the same files.
    check = data / "incremental-watch-check"
    shutil.rmtree(check, ignore_errors=True)
    shutil.rmtree(data / f".{check.name}.cache", ignore_errors=True)
    _build(work, check)
    identical = _same_tables(snap, check)
    for p_ in (check, data / f".{check.name}.cache", snap, data / f".{snap.name}.cache"):
        shutil.rmtree(p_, ignore_errors=True)
    for name in (check.name, snap.name):
        (data / f"{name}.skipped.jsonl").unlink(missing_ok=True)
    per_min = 60.0 / idle
    return {"wall": wall, "cpu": cpu, "rebuild_cpu": inner, "lines": lines,
            "first_build": first.get("transcripts"), "exit_codes": [code, code_poll],
            "idle_seconds": idle,
            "idle_cpu_per_min": {"events": idle_events * per_min,
                                 "poll_1s": idle_poll * per_min,
                                 "stat_walk_1s": _walk_cpu(work) * 60.0},
            "equals_cold_build": identical}


def _parse_rate(src: Path, runs: int) -> dict[str, Any]:
    out = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-m", "bench.worker", "transcripts", str(src)],
                              capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=3600)
        if done.returncode != 0:
            raise RuntimeError(f"bench.worker transcripts failed:\n{done.stderr[-3000:]}")
        out.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {"lines_per_s": statistics.median(r["lines_per_s"] for r in out),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in out),
            "runs_lines_per_s": [round(r["lines_per_s"]) for r in out],
            "lines": out[0]["lines"]}


def run(data: Path, say: Any = print, runs: int = 5, idle: float = 60.0) -> dict[str, Any]:
    """Measure; the results as one dict (what ``python -m bench`` embeds)."""
    from bench.generate import ensure_transcripts

    src, meta = ensure_transcripts(data)
    work = data / "incremental-work"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work, copy_function=shutil.copy2)
    snap = data / "incremental-snapshot"
    cache = data / f".{snap.name}.cache"
    transcript_bytes = _tree_bytes(work)
    say(f"incremental: {meta['claude_lines']:,} Claude lines, {transcript_bytes / 1e6:.0f} MB "
        f"of transcripts, {runs} runs each ...")
    cold, noop, append = [], [], []
    cpu: dict[str, list[float]] = {"cold": [], "noop": [], "append": []}
    summaries: dict[str, Any] = {}
    for _ in range(runs):
        shutil.rmtree(snap, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
        took, summaries["cold"] = _build(work, snap, cpu["cold"])
        cold.append(took)
    cache_bytes = _tree_bytes(cache)
    for _ in range(runs):
        took, summaries["noop"] = _build(work, snap, cpu["noop"])
        noop.append(took)
    session = max((p for p in (work / "claude" / "projects").glob("*/*.jsonl")),
                  key=lambda p: p.stat().st_size)
    for n in range(runs):
        _append(session, n)
        took, summaries["append"] = _build(work, snap, cpu["append"])
        append.append(took)
    # The snapshot after the appends against a cold build, and against a build of all rows
    # at once (no link groups kept or merged: GRAPHKIT_SPLICE=0).
    identical = True
    for name, env in (("incremental-check", {}), ("incremental-whole", {"GRAPHKIT_SPLICE": "0"})):
        check = data / name
        shutil.rmtree(check, ignore_errors=True)
        shutil.rmtree(data / f".{check.name}.cache", ignore_errors=True)
        _build(work, check, **env)
        identical = identical and _same_tables(snap, check)
        shutil.rmtree(check, ignore_errors=True)
        shutil.rmtree(data / f".{check.name}.cache", ignore_errors=True)
        (data / f"{check.name}.skipped.jsonl").unlink(missing_ok=True)
    watch = _watch(work, data, session, runs, idle, say)
    say("  transcripts → rows (no cache) ...")
    parse = _parse_rate(src, runs)
    med = {k: statistics.median(v) for k, v in (("cold", cold), ("noop", noop),
                                                 ("append", append))}
    metrics = {"incremental_noop_ratio": med["noop"] / med["cold"],
               "incremental_append_ratio": med["append"] / med["cold"],
               "incremental_watch_append_ratio": statistics.median(watch["wall"]) / med["cold"],
               "incremental_cache_ratio": cache_bytes / transcript_bytes,
               "transcripts_lines_per_s": parse["lines_per_s"],
               "transcripts_rss_mb": parse["peak_rss_mb"]}
    res = {"runs": runs, "transcript_bytes": transcript_bytes, "cache_bytes": cache_bytes,
           "files": summaries["cold"].get("transcripts"), "seconds": med,
           "all_seconds": {"cold": cold, "noop": noop, "append": append},
           "cpu_seconds": {k: statistics.median(v) for k, v in cpu.items()},
           "summary_transcripts": {k: s.get("transcripts") for k, s in summaries.items()},
           "append_equals_cold_build": identical, "parse": parse, "metrics": metrics,
           "watch": watch,
           "targets": judge(metrics), "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "load_avg": os.getloadavg()}
    say(f"  cold {med['cold']:.1f}s, no-op {med['noop']:.2f}s "
        f"({metrics['incremental_noop_ratio']:.1%}), append {med['append']:.2f}s "
        f"({metrics['incremental_append_ratio']:.1%}), watch append "
        f"{statistics.median(watch['wall']):.2f}s "
        f"({metrics['incremental_watch_append_ratio']:.1%}), cache "
        f"{metrics['incremental_cache_ratio']:.1%} of transcripts, "
        f"{parse['lines_per_s']:,.0f} lines/s; after appends equal to a cold build: {identical}")
    return res


def judge(metrics: dict[str, float]) -> list[dict[str, Any]]:
    """Each target met or missed, and by how much."""
    out = []
    for key, text, op, limit in TARGETS:
        v = metrics.get(key)
        if v is None:
            out.append({"target": text, "value": None, "status": "not measured"})
            continue
        ok = {"<=": v <= limit, "<": v < limit, ">=": v >= limit}[op]
        by = v / limit if op == ">=" else limit / v if v else float("inf")
        out.append({"target": text, "value": v,
                    "status": "met" if ok else f"missed (at {by:.0%} of the target)"})
    return out


def markdown(res: dict[str, Any]) -> str:
    """The results as a Markdown section."""
    s, m = res["seconds"], res["metrics"]
    lines = ["## Incremental transcript builds (whole processes)", "",
             f"{res['when']}, load average {', '.join(f'{x:.1f}' for x in res['load_avg'])} "
             f"(2 cores, shared). Median of {res['runs']} `graphkit build <transcripts> "
             "--snapshot S --json` processes each; transcripts: "
             f"{res['transcript_bytes'] / 1e6:.1f} MB, "
             f"{res['files']['files_parsed']:,} transcript files.", "",
             "| build | median wall s | of cold | median CPU s | CPU of cold | runs, wall s |",
             "|---|---:|---:|---:|---:|---|"]
    for k, label in (("cold", "cold (no snapshot, no cache)"), ("noop", "nothing changed"),
                     ("append", "one line appended to one session")):
        c = res["cpu_seconds"]
        lines.append(f"| {label} | {s[k]:.2f} | {s[k] / s['cold']:.1%} | {c[k]:.2f} | "
                     f"{c[k] / c['cold']:.1%} | "
                     + ", ".join(f"{x:.2f}" for x in res["all_seconds"][k]) + " |")
    w = res.get("watch")
    if w:
        c, cw, wc = res["cpu_seconds"], statistics.median(w["wall"]), statistics.median(w["cpu"])
        lines.append(f"| one line appended, **`--watch` process** (to its rebuild line) | "
                     f"{cw:.2f} | {cw / s['cold']:.1%} | {wc:.2f} | {wc / c['cold']:.1%} | "
                     + ", ".join(f"{x:.2f}" for x in w["wall"]) + " |")
        i = w["idle_cpu_per_min"]
        lines += ["", "The `--watch` row: one `graphkit build --watch --json` process left "
                  "running on the same copy (its own snapshot, first built cold in it); each "
                  "run appends one line to the same session after a quiet second and times "
                  "until the watcher prints that rebuild's line (CPU: the watcher's, from "
                  "`/proc`, over that time; its own count of the rebuild alone: median "
                  f"{statistics.median(w['rebuild_cpu']):.3f} CPU-s). The whole-process row "
                  "above it starts a new `graphkit build` for each append. Watcher idle CPU "
                  f"per minute: **{i['events']:.2f} s** with file events (inotify), "
                  f"{i['poll_1s']:.2f} s with `--poll 1` (notify's polling walk), against "
                  f"{i['stat_walk_1s']:.2f} s for graphkit's own stat walk once a second "
                  f"(measured in-process, ×60). Exit codes on SIGINT: {w['exit_codes']}. "
                  "Its snapshot after the appends equals a cold build of the same files, "
                  f"byte for byte: **{w['equals_cold_build']}**."]
    p = res["parse"]
    lines += ["", f"Cache: {res['cache_bytes'] / 1e6:.1f} MB = "
              f"{m['incremental_cache_ratio']:.1%} of the transcripts' bytes. "
              f"Files per build: {res['summary_transcripts']}. Snapshot after the appends "
              f"equals a cold build of the same files and a build of all rows at once "
              "(`GRAPHKIT_SPLICE=0`), table for table and byte for byte (table digests): "
              f"**{res['append_equals_cold_build']}**.", "",
              f"Transcripts → rows (`bench.worker transcripts`, no cache, {p['lines']:,} "
              f"Claude lines): median {p['lines_per_s']:,.0f} lines/s (runs "
              f"{p['runs_lines_per_s']}), peak RSS {p['peak_rss_mb']:.0f} MB.", "",
              "| target | measured | status |", "|---|---:|---|"]
    for j in res["targets"]:
        v = j["value"]
        lines.append(f"| {j['target']} | {'—' if v is None else f'{v:.3g}'} | {j['status']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.incremental",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--data", type=Path, default=HERE / ".data")
    ap.add_argument("--idle", type=float, default=60.0,
                    help="seconds the --watch process is left idle to measure its CPU")
    args = ap.parse_args()
    res = run(args.data, runs=args.runs, idle=args.idle)
    (args.out / "incremental.json").write_text(json.dumps(res, indent=2, default=str) + "\n")
    from bench.report import write_section

    write_section("incremental", markdown(res), args.out)
    print(markdown(res))


if __name__ == "__main__":
    main()
