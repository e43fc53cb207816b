"""Whole-process timings for the progress display and the terminal tables.

1. ``graphkit sessions`` over 24k sessions: the table on a terminal (a pseudo-terminal
   here) against ``--json``, and both piped, medians of 5.
2. The cost of the progress display on a build: the same transcript build with stderr
   on a pseudo-terminal (bars drawn) and with ``--quiet``, medians of 5.

    python -m bench.progress_bench            # writes its section of bench/README.md
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

GRAPHKIT = [sys.executable, "-m", "graphkit"]
REPO = Path(__file__).resolve().parent.parent
EPOCH_US = 1_795_000_000_000_000  # 2026-11-19, microseconds


def session_rows(n_sessions: int) -> pa.Table:
    """Three rows per session: a main-loop call spawning a subagent, the main loop's
    reply, and the subagent's one message (so each session has 2 threads, 1 agent)."""
    sid, mid, pid, ts, idx, ptype, agent, attrs, tool, call = ([] for _ in range(10))
    for s in range(n_sessions):
        session = f"5e55{s:08x}-0000-4000-8000-{s:012x}"
        t = EPOCH_US + s * 60_000_000
        for k in range(3):
            sid.append(session)
            mid.append(f"{session}-m{k}")
            pid.append(f"{session}-m{k}:0")
            ts.append(t + k * 1_000_000)
            idx.append(k)
            ptype.append("tool_call" if k == 0 else "text")
            tool.append("Task" if k == 0 else None)
            call.append(f"toolu_{s:08x}" if k == 0 else None)
            agent.append(f"a{s:015x}" if k == 2 else None)
            attrs.append(json.dumps({"claude": {"spawned_by_tool_use_id": f"toolu_{s:08x}"}})
                         if k == 2 else None)
    return pa.table({
        "session_id": sid, "message_id": mid, "part_id": pid,
        "message_created_at": pa.array(ts, pa.timestamp("us", tz="UTC")),
        "message_index": pa.array(idx, pa.int32()), "part_type": ptype,
        "role": ["assistant"] * len(sid),
        "tool_name": tool, "tool_call_id": call, "agent_id": agent, "attributes": attrs,
        "schema_version": pa.array([7] * len(sid), pa.int32()),
    }).combine_chunks()


def run(argv: list[str], *, tty_out: bool = False, tty_err: bool = False,
        cols: int = 160, pythonpath: str | None = None) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one whole process; stdout/stderr on a
    pseudo-terminal when asked (drained as a terminal would be), else to a pipe that is
    read to the end. CPU time is the steadier figure on a shared machine."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    # Run outside any checkout: ``python -m`` puts the working folder first on the
    # path, ahead of PYTHONPATH, which names the code timed (this repo by default).
    env = {**os.environ, "COLUMNS": str(cols), "PYTHONPATH": pythonpath or str(REPO)}
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=env, cwd=tempfile.gettempdir(),
                            stdout=slave if tty_out else subprocess.PIPE,
                            stderr=slave if tty_err else subprocess.DEVNULL)
    os.close(slave)
    if not tty_out:
        assert proc.stdout is not None
        while proc.stdout.read(1 << 16):
            pass
    while True:
        try:
            if not os.read(master, 1 << 16):
                break
        except OSError:  # EIO: every holder of the terminal's other end is gone
            break
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    os.close(master)
    if proc.returncode:
        raise SystemExit(f"{argv} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


Figure = tuple[str, float, float, list[float]]  # name, median wall, median CPU, walls


def median(name: str, runs: list[tuple[float, float]]) -> Figure:
    walls = [w for w, _ in runs]
    return name, statistics.median(walls), statistics.median(c for _, c in runs), walls


def sessions_figures(work: Path, n_sessions: int, n: int,
                     before: Path | None = None) -> list[Figure]:
    rows = work / "sessions-rows.parquet"
    pq.write_table(session_rows(n_sessions), rows)
    snap = work / "sessions-snap"
    subprocess.run([*GRAPHKIT, "build", str(rows), "--snapshot", str(snap), "--json"],
                   check=True, stdout=subprocess.DEVNULL)
    base = [*GRAPHKIT, "sessions", "--snapshot", str(snap)]
    cases: list[tuple[str, list[str], dict[str, Any]]] = [
        ("table, 160-column terminal", base, {"tty_out": True}),
        ("table, 80-column terminal", base, {"tty_out": True, "cols": 80}),
        ("--json, stdout a terminal", [*base, "--json"], {"tty_out": True}),
        ("TSV, stdout piped", base, {}),
        ("--json, stdout piped", [*base, "--json"], {})]
    if before is not None:
        cases[:0] = [(f"{name}, before (rich Table)", base, {**kw, "pythonpath": str(before)})
                     for name, _, kw in cases[:2]]
    return [median(name, [run(argv, **kw) for _ in range(n)]) for name, argv, kw in cases]


def build_figures(work: Path, transcripts: Path, n: int) -> list[Figure]:
    """Cold builds with stderr on a terminal, with and without ``--quiet``, taken in
    turns so a change in the machine's load falls on both alike."""
    modes = (("progress shown (stderr a terminal)", []), ("--quiet", ["--quiet"]))
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in modes}
    for _ in range(n):
        for name, extra in modes:
            snap = work / "build-snap"
            shutil.rmtree(snap, ignore_errors=True)
            shutil.rmtree(work / ".build-snap.cache", ignore_errors=True)
            times[name].append(run([*GRAPHKIT, "build", str(transcripts), "--snapshot",
                                    str(snap), *extra], tty_err=True, tty_out=True))
    return [median(name, times[name]) for name, _ in modes]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=24_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--transcripts", type=Path,
                    help="A transcript folder for the build overhead (default: the "
                         "benchmark's generated transcripts).")
    ap.add_argument("--before", type=Path,
                    help="A checkout of graphkit before this change, to time its table too.")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent,
                    help="the folder whose README.md gets the tables")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        table = sessions_figures(work, args.sessions, args.runs, args.before)
        transcripts = args.transcripts
        if transcripts is None:
            from bench.generate import ensure_transcripts

            transcripts, _ = ensure_transcripts(Path(__file__).parent / ".data")
        build = build_figures(work, transcripts, args.runs)
    head = ["| median wall s | median CPU s | wall s of each run |", "|---|---|---|---|"]
    lines = [f"## `graphkit sessions`, {args.sessions:,} sessions, whole processes "
             f"(median of {args.runs})", "", "| output " + head[0], head[1]]
    lines += [_row(f) for f in table]
    lines += ["", f"## Progress overhead: cold `graphkit build` of {transcripts.name} "
              f"(median of {args.runs})", "", "| stderr " + head[0], head[1]]
    lines += [_row(f) for f in build]
    print("\n".join(lines))
    if args.out:
        from bench.report import write_section

        write_section("progress", "\n".join(["# Progress and terminal tables", "", *lines]),
                      args.out)


def _row(f: Figure) -> str:
    name, wall, cpu, walls = f
    return f"| {name} | {wall:.2f} | {cpu:.2f} | {' '.join(f'{t:.2f}' for t in walls)} |"


if __name__ == "__main__":
    main()
