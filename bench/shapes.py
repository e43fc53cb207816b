"""Skewed but valid data shapes, every user command as a whole process, at two sizes.

``python -m bench --only shapes`` (or ``python -m bench.shapes``) generates each
shape at ``n`` and ``4n`` (threads, sessions, files or MB: see :data:`SHAPES`),
builds it, runs the commands users run on it (``build``, ``lineage``, ``tree``,
``usage`` and ``--by``, ``files`` and ``--path``, ``sessions``, ``diff``,
``view``, ``export`` in every format, ``check``) as ``graphkit`` processes and
reports each command's growth exponent: ``log(cpu(4n) / cpu(n)) / log 4`` of
the CPU seconds (user + system) less the command's own floor (the same
command on the bundled sample rows: interpreter, imports, reading a tiny
snapshot). Linear work gives ~1; the target is ≤ 1.2. An exponent is only
computed when the larger run's net time is above :data:`NOISE_S` (below that a
ratio of two small numbers is noise, and nothing a user feels).

The shapes (rows are Parquet files with the columns the default contract
reads; transcripts are Claude Code / Codex files):

- ``wide``: one session holding n threads, each spawned by a random earlier one.
- ``deep``: one session whose threads form one chain n deep.
- ``fan``: one parent thread with n direct children.
- ``parent-loops``: one session whose n threads pair off into parent loops (hostile:
  a loop's threads hang under the session, flagged).
- ``long-ids``: n/10 sessions of 10 threads, every id 10 KB long.
- ``resume-chain``: n sessions, each continuing the one before (resume, fork).
- ``hot-file``: n threads (in n/100 sessions) all touching the same file.
- ``many-models``: n subagents, each with its own model and agent type.
- ``tiny-files``: n Claude transcript files of two lines each.
- ``claude-deep``: a Claude session whose subagents nest n deep (one file each).
- ``codex-forks``: n Codex rollouts, each forked from the one before.
- ``huge-line``: a Claude session with one tool result line of n MB.

Results go to ``bench/shapes.json`` and the shapes section of ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.report import write_section
from bench.whole import ROOT, graphkit_command

HERE = Path(__file__).resolve().parent
EPOCH = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)
TARGET = 1.2
NOISE_S = 0.25  # net CPU-s of the larger run below which no exponent is computed
MIN_S = 0.1  # a smaller run's net CPU-s counted as at least this
FORMATS = ["node-link", "graphml", "gexf", "cypher", "edges", "neo4j-csv", "neo4j-parquet"]

# ---------------------------------------------------------------------------
# rows shapes: one Parquet row per thread (a message part), Codex or Claude ids


def _rows_table(rows: list[dict[str, Any]]) -> pa.Table:
    cols = ["session_id", "conversation_id", "agent_id", "parent_thread_id", "message_id",
            "part_id", "message_index", "part_type", "provider", "model", "cwd", "tool_name",
            "tool_call_id", "attributes", "touched_files"]
    data: dict[str, Any] = {c: [r.get(c) for r in rows] for c in cols}
    data["message_index"] = pa.array(data["message_index"], pa.int64())
    data["schema_version"] = pa.array([7] * len(rows), pa.int32())
    data["message_created_at"] = pa.array(
        [EPOCH + timedelta(seconds=r["t"]) for r in rows], pa.timestamp("us", tz="UTC"))
    return pa.table({k: (v if isinstance(v, pa.Array) else pa.array(v, pa.string()))
                     for k, v in data.items()})


def _usage(i: int, extra: dict[str, Any] | None = None) -> str:
    return json.dumps({"usage": {"input_tokens": 10 + i % 7, "output_tokens": 20},
                       **(extra or {})})


def _codex_row(sid: str, tid: str, parent: str | None, i: int, **kw: Any) -> dict[str, Any]:
    mid = f"m-{tid}"
    return {"session_id": sid, "conversation_id": tid, "parent_thread_id": parent,
            "message_id": mid, "part_id": mid + ":0", "message_index": 0, "part_type": "text",
            "provider": "openai", "model": "gpt-5-codex", "cwd": "/home/dev/src/api",
            "attributes": _usage(i), "t": i, **kw}


def _tree_rows(n: int, parent_of: Callable[[int], int]) -> list[dict[str, Any]]:
    """One Codex session: thread 0 is the root, thread i's parent is parent_of(i)."""
    sid = "s-0"
    tid = [sid] + [f"t-{i:07d}" for i in range(1, n + 1)]
    return [_codex_row(sid, tid[i], tid[parent_of(i)] if i else None, i)
            for i in range(n + 1)]


def rows_wide(n: int) -> list[dict[str, Any]]:
    state = [1]

    def parent(i: int) -> int:  # a deterministic pseudo-random earlier thread
        state[0] = (state[0] * 1103515245 + 12345) % (1 << 31)
        return state[0] % i
    return _tree_rows(n, parent)


def rows_deep(n: int) -> list[dict[str, Any]]:
    return _tree_rows(n, lambda i: i - 1)


def rows_fan(n: int) -> list[dict[str, Any]]:
    return _tree_rows(n, lambda i: 0)


def rows_parent_loops(n: int) -> list[dict[str, Any]]:
    """Hostile, not valid: one session whose n threads pair off into parent loops
    (a's parent b, b's parent a); tree/usage/view hang each loop under the session."""
    sid = "s-0"
    rows = [_codex_row(sid, sid, None, 0)]
    for k in range(n // 2):
        a, b = f"a-{k:07d}", f"b-{k:07d}"
        rows += [_codex_row(sid, a, b, 2 * k + 1), _codex_row(sid, b, a, 2 * k + 2)]
    return rows


def rows_long_ids(n: int) -> list[dict[str, Any]]:
    pad = "x" * 10_000
    out = []
    for s in range(max(1, n // 10)):
        sid = f"s{s:06d}-{pad}"
        tids = [sid] + [f"t{s:06d}-{k}-{pad}" for k in range(1, 10)]
        for k, tid in enumerate(tids):
            out.append(_codex_row(sid, tid, tids[(k - 1) // 2] if k else None, s * 10 + k))
    return out


def rows_resume_chain(n: int) -> list[dict[str, Any]]:
    out = []
    for s in range(n):
        sid = f"s-{s:07d}"
        extra = ({"continues": {"session_id": f"s-{s - 1:07d}",
                                "how": "resume" if s % 2 else "fork"}} if s else None)
        out.append({**_codex_row(sid, sid, None, s), "attributes": _usage(s, extra)})
    return out


def rows_hot_file(n: int) -> list[dict[str, Any]]:
    touched = json.dumps([{"path": "/home/dev/src/api/hot.py", "reads": 1, "writes": 1}])
    out = []
    per = 100
    for i in range(n):
        sid = f"s-{i // per:07d}"
        tid = sid if i % per == 0 else f"t-{i:07d}"
        out.append(_codex_row(sid, tid, sid if tid != sid else None, i, tool_name="apply_patch",
                              tool_call_id=f"c-{i}", part_type="tool_call",
                              touched_files=touched))
    return out


def rows_many_models(n: int) -> list[dict[str, Any]]:
    """Claude: a main loop whose n Task calls each spawn a subagent with its own
    model and agent type."""
    sid = "s-0"
    out = []
    for i in range(n):
        mid = f"main-{i:07d}"
        out.append({"session_id": sid, "message_id": mid, "part_id": mid + ":0",
                    "message_index": i, "part_type": "tool_call", "provider": "anthropic",
                    "model": "claude-sonnet-4-5", "tool_name": "Task",
                    "tool_call_id": f"toolu_{i:07d}", "cwd": "/home/dev/src/api",
                    "attributes": _usage(i), "t": 2 * i})
        sub = f"sub-{i:07d}"
        out.append({"session_id": sid, "agent_id": f"a{i:07d}", "message_id": sub,
                    "part_id": sub + ":0", "message_index": 0, "part_type": "text",
                    "provider": "anthropic", "model": f"model-{i:07d}",
                    "cwd": "/home/dev/src/api", "t": 2 * i + 1,
                    "attributes": _usage(i, {"claude": {
                        "spawned_by_tool_use_id": f"toolu_{i:07d}",
                        "agent_type": f"type-{i:07d}"}})})
    return out


# ---------------------------------------------------------------------------
# transcript shapes


def _iso(t: float) -> str:
    return (EPOCH + timedelta(seconds=t)).isoformat().replace("+00:00", "Z")


def _claude_line(sid: str, u: str, parent: str | None, t: float, kind: str, content: Any,
                 agent: str | None = None, **extra: Any) -> str:
    msg: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        msg.update(id=f"msg_{u}", type="message", model="claude-sonnet-4-5",
                   usage={"input_tokens": 10, "output_tokens": 20})
    entry = {"parentUuid": parent, "isSidechain": agent is not None, "userType": "external",
             "cwd": "/home/dev/src/api", "sessionId": sid, "version": "2.1.3",
             "gitBranch": "main", "type": kind, "uuid": u, "timestamp": _iso(t),
             "message": msg, **extra}
    if agent:
        entry["agentId"] = agent
    return json.dumps(entry, separators=(",", ":"))


def tx_tiny_files(n: int, out: Path) -> dict[str, str]:
    first = ""
    for i in range(n):
        d = out / "claude" / "projects" / f"-home-dev-p{i % 100:03d}"
        d.mkdir(parents=True, exist_ok=True)
        sid = str(uuid.UUID(int=i + 1, version=4))
        first = first or sid
        (d / f"{sid}.jsonl").write_text(
            _claude_line(sid, f"u{i}a", None, i, "user", "hi") + "\n"
            + _claude_line(sid, f"u{i}b", f"u{i}a", i + 0.5, "assistant",
                           [{"type": "text", "text": "ok"}]) + "\n")
    return {"session": first, "thread": first}


def tx_claude_deep(n: int, out: Path) -> dict[str, str]:
    """A main loop spawning agent 1, which spawns agent 2, ... n deep."""
    sid = str(uuid.UUID(int=7, version=4))
    d = out / "claude" / "projects" / "-home-dev-src-api"
    sub = d / sid / "subagents"
    sub.mkdir(parents=True)

    def thread(agent: str | None, t: int, call: str | None) -> list[str]:
        p = f"{agent or 'main'}-"
        lines = [_claude_line(sid, p + "1", None, t, "user", "go", agent)]
        if call:
            lines.append(_claude_line(sid, p + "2", p + "1", t + 0.5, "assistant", [
                {"type": "tool_use", "id": call, "name": "Task",
                 "input": {"subagent_type": "Explore", "description": "dig", "prompt": "x"}}],
                agent))
        return lines

    (d / f"{sid}.jsonl").write_text("\n".join(thread(None, 0, "toolu_0")) + "\n")
    for k in range(1, n + 1):
        agent = f"{k:016x}"
        call = f"toolu_{k}" if k < n else None
        (sub / f"agent-{agent}.jsonl").write_text("\n".join(thread(agent, k, call)) + "\n")
        (sub / f"agent-{agent}.meta.json").write_text(json.dumps(
            {"agentType": "Explore", "description": "dig", "toolUseId": f"toolu_{k - 1}"}))
    return {"session": sid, "thread": f"{n:016x}"}


def tx_codex_forks(n: int, out: Path) -> dict[str, str]:
    ids = [str(uuid.UUID(int=1000 + i, version=4)) for i in range(n)]
    for i, tid in enumerate(ids):
        t = i * 60.0
        day = EPOCH + timedelta(seconds=t)
        folder = out / "codex" / "sessions" / day.strftime("%Y/%m/%d")
        folder.mkdir(parents=True, exist_ok=True)
        meta: dict[str, Any] = {"id": tid, "timestamp": _iso(t), "cwd": "/home/dev/src/api",
                                "originator": "codex_cli_rs", "cli_version": "0.60.1",
                                "model_provider": "openai", "source": "cli"}
        if i:
            meta["forked_from_id"] = ids[i - 1]
        lines = [{"timestamp": _iso(t), "type": "session_meta", "payload": meta},
                 {"timestamp": _iso(t), "type": "turn_context",
                  "payload": {"cwd": "/home/dev/src/api", "model": "gpt-5-codex"}},
                 {"timestamp": _iso(t + 1), "type": "response_item", "payload": {
                     "type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": f"step {i}"}]}}]
        name = f"rollout-{day.strftime('%Y-%m-%dT%H-%M-%S')}-{tid}.jsonl"
        (folder / name).write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return {"session": ids[-1], "thread": ids[-1]}


def tx_huge_line(mb: int, out: Path) -> dict[str, str]:
    sid = str(uuid.UUID(int=9, version=4))
    d = out / "claude" / "projects" / "-home-dev-src-api"
    d.mkdir(parents=True)
    big = ("lorem ipsum dolor sit amet " * 40 + "\n") * (mb * 1_000_000 // 1081 + 1)
    lines = [_claude_line(sid, "u1", None, 0, "user", "read it"),
             _claude_line(sid, "u2", "u1", 1, "assistant", [
                 {"type": "tool_use", "id": "toolu_1", "name": "Read",
                  "input": {"file_path": "/home/dev/src/api/big.txt"}}]),
             _claude_line(sid, "u3", "u2", 2, "user", [
                 {"type": "tool_result", "tool_use_id": "toolu_1", "content": big}],
                 toolUseResult={"type": "text", "file": {"content": big}}),
             _claude_line(sid, "u4", "u3", 3, "assistant", [{"type": "text", "text": "done"}])]
    (d / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")
    return {"session": sid, "thread": sid}


RowsGen = Callable[[int], list[dict[str, Any]]]
TxGen = Callable[[int, Path], dict[str, str]]

# name: (generator, default n (the larger run is 4n), unit, what to ask lineage/tree about)
SHAPES: dict[str, tuple[RowsGen | TxGen, int, str]] = {
    "wide": (rows_wide, 5000, "threads"),
    "deep": (rows_deep, 5000, "threads"),
    "fan": (rows_fan, 5000, "threads"),
    "parent-loops": (rows_parent_loops, 5000, "threads"),
    "long-ids": (rows_long_ids, 500, "threads"),
    "resume-chain": (rows_resume_chain, 2500, "sessions"),
    "hot-file": (rows_hot_file, 5000, "threads"),
    "many-models": (rows_many_models, 2500, "subagents"),
    "tiny-files": (tx_tiny_files, 2500, "files"),
    "claude-deep": (tx_claude_deep, 1000, "subagents"),
    "codex-forks": (tx_codex_forks, 1000, "rollouts"),
    "huge-line": (tx_huge_line, 4, "MB"),
}
TRANSCRIPTS = {"tiny-files", "claude-deep", "codex-forks", "huge-line"}
# Which session a rows shape's tree/usage/view ask about ("first"/"last" row's); lineage
# asks about the last row's thread (the deepest, the last child, the last session).
PICK = {"wide": "first", "deep": "first", "fan": "first", "parent-loops": "first",
        "long-ids": "first",
        "resume-chain": "last", "hot-file": "first", "many-models": "first"}


def generate(shape: str, n: int, out: Path) -> tuple[Path, Path, dict[str, str]]:
    """The shape's source folder at size n, an OLD source (the same less its last
    1% for ``diff``), and the ids to ask about."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    gen = SHAPES[shape][0]
    src, old = out / "src", out / "old"
    if shape in TRANSCRIPTS:
        ids = gen(n, src)  # type: ignore[call-arg]
        return src, src, ids
    rows: list[dict[str, Any]] = gen(n)  # type: ignore[call-arg, assignment]
    cut = len(rows) - max(1, len(rows) // 100)
    src.mkdir()
    old.mkdir()
    pq.write_table(_rows_table(rows[:cut]), src / "part-0.parquet")
    pq.write_table(_rows_table(rows[cut:]), src / "part-1.parquet")
    shutil.copy(src / "part-0.parquet", old / "part-0.parquet")
    last = rows[-1]
    ids = {"session": rows[-1 if PICK[shape] == "last" else 0]["session_id"],
           "thread": last.get("agent_id") or last["conversation_id"] or last["session_id"]}
    return src, old, ids


def commands(src: Path, old_snap: Path, snap: Path, ids: dict[str, str],
             work: Path) -> dict[str, list[str]]:
    """Every command a user runs, as argv after ``graphkit``, in the order run
    (``build`` first: the others read its snapshot)."""
    s = ["--snapshot", str(snap)]
    cmds = {
        "build": ["-q", "build", str(src), "--snapshot", str(snap)],
        "check": ["-q", "check", str(src)],
        "lineage": ["lineage", ids["thread"], *s, "--json"],
        "tree": ["tree", ids["session"], *s],
        "tree --json": ["tree", ids["session"], *s, "--json"],
        "usage": ["usage", *s],
        "usage SESSION": ["usage", ids["session"], *s],
        "usage --by model": ["usage", "--by", "model", *s],
        "usage --by agent-type": ["usage", "--by", "agent-type", *s],
        "files": ["files", *s],
        "files --path": ["files", "--path", "*.py", *s],
        "sessions": ["sessions", *s],
        "sessions --json": ["sessions", *s, "--json"],
        "diff": ["diff", str(old_snap), str(snap), "--json"],
        "view": ["view", ids["session"], *s, "--out", str(work / "view.html")],
    }
    for f in FORMATS:
        dest = work / f"export-{f}"
        cmds[f"export {f}"] = ["-q", "export", str(snap), "--format", f, str(dest)]
    return cmds


def _children_cpu_run(cmd: list[str], gk: list[str], code: Path = ROOT) -> dict[str, Any]:
    import resource
    import subprocess

    from bench.whole import child_env

    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([*gk, *cmd], capture_output=True, cwd=ROOT, env=child_env(code))
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out: dict[str, Any] = {"wall_s": time.perf_counter() - t0,
                           "cpu_s": (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime),
                           "rc": done.returncode, "stdout_bytes": len(done.stdout),
                           "peak_rss_mb": ru1.ru_maxrss / 1024}
    if done.returncode not in (0, 1):
        out["error"] = done.stderr.decode(errors="replace")[-400:]
    return out


def floors(work: Path, gk: list[str], code: Path = ROOT) -> dict[str, float]:
    """Each command's CPU-s on the bundled sample rows: its fixed cost."""
    sample = ROOT / "samples" / "rows"
    snap = work / "floor-snap"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    ids = {"session": "8299ed6e-811c-4fa7-b124-c205cd625a7f", "thread": "818d8962058765a6"}
    got: dict[str, float] = {}
    for name, cmd in commands(sample, snap, snap, ids, work).items():
        runs = [_children_cpu_run(cmd, gk, code)["cpu_s"] for _ in range(3)]
        got[name] = sorted(runs)[1]
    return got


def exponent(small: float, big: float, floor: float) -> float | None:
    """log4 of the growth of the net CPU-s; ``None`` when the larger run's net is
    under :data:`NOISE_S`. A smaller net under :data:`MIN_S` counts as MIN_S: a
    ratio against ~0 s is noise, not growth."""
    a, b = small - floor, big - floor
    if math.isnan(a) or math.isnan(b) or b < NOISE_S:
        return None
    return math.log(b / max(a, MIN_S)) / math.log(4)


def summarize(res: dict[str, Any]) -> None:
    """Each shape's exponents from its runs (again: the rule may have changed
    since the runs), and the metrics ``python -m bench`` judges."""
    worst: list[float] = []
    failed = 0
    for per in res["shapes"].values():
        per["exponent"] = {name: exponent(rr[0]["cpu_s"], rr[1]["cpu_s"],
                                          res["floors"].get(name, 0.0))
                           for name, rr in per["runs"].items()}
        worst += [e for e in per["exponent"].values() if e is not None]
        failed += sum(1 for rr in per["runs"].values() for r in rr if "error" in r)
    res["metrics"] = {"shapes_worst_exponent": max(worst, default=None),
                      "shapes_failed_runs": failed}
    res["when"] = res["started"]
    res["load_avg"] = res["load_avg_at_start"]


def run(shapes: list[str], scale: float, work: Path,
        say: Callable[[str], None] = print, code: Path = ROOT) -> dict[str, Any]:
    """Every shape at n and 4n with graphkit from the checkout ``code``."""
    gk = graphkit_command()
    say("  shapes: floors (every command on samples/rows) ...")
    fl = floors(work / "floor", gk, code)
    result: dict[str, Any] = {"scale": scale, "code": str(code),
                              "load_avg_at_start": os.getloadavg(),
                              "started": time.strftime("%Y-%m-%d %H:%M:%S"), "floors": fl,
                              "shapes": {}}
    for shape in shapes:
        n0 = max(1, int(SHAPES[shape][1] * scale))
        per: dict[str, Any] = {"unit": SHAPES[shape][2], "sizes": [n0, 4 * n0], "runs": {}}
        for n in (n0, 4 * n0):
            w = work / f"{shape}-{n}"
            t0 = time.perf_counter()
            src, old, ids = generate(shape, n, w / "data")
            gen_s = time.perf_counter() - t0
            snap, old_snap = w / "snap", w / "old-snap"
            # The diff's OLD snapshot (untimed; `build` is timed below).
            _children_cpu_run(["-q", "build", str(old), "--snapshot", str(old_snap)], gk, code)
            for name, cmd in commands(src, old_snap, snap, ids, w).items():
                r = _children_cpu_run(cmd, gk, code)
                per["runs"].setdefault(name, []).append(r)
                if "error" in r:
                    say(f"    {shape} {n} {name}: FAILED {r['error'][-200:]}")
            shutil.rmtree(w, ignore_errors=True)
            say(f"    {shape} n={n}: generated in {gen_s:.1f}s, "
                f"build {per['runs']['build'][-1]['cpu_s']:.2f} CPU-s")
        result["shapes"][shape] = per
        summarize(result)
        worst = max(((e, k) for k, e in per["exponent"].items() if e is not None),
                    default=(None, ""))
        say(f"  {shape}: worst exponent {worst[0] if worst[0] is None else round(worst[0], 2)}"
            f" ({worst[1]}); " + ", ".join(f"{k} {r[0]['cpu_s']:.2f}→{r[1]['cpu_s']:.2f}"
                                            for k, r in per["runs"].items()))
    result["load_avg_at_end"] = os.getloadavg()
    summarize(result)
    return result


def markdown(res: dict[str, Any], note: str = "") -> str:
    names = list(next(iter(res["shapes"].values()))["runs"]) if res["shapes"] else []
    lines = ["# Skewed shapes: growth of every command, whole processes", "",
             "Written by `python -m bench --only shapes` (`bench/shapes.py`; its docstring "
             "describes the shapes). Each shape at n and 4n; per command the CPU-seconds "
             "(user + system) of one `graphkit` process at each size, and the growth "
             "exponent log(net(4n)/net(n))/log 4, where net = CPU-s less the command's floor "
             "(the same command on `samples/rows`). 1.0 = linear; target ≤ "
             f"{TARGET}. `·` = the larger run's net time is under {NOISE_S} s "
             f"(constant cost; no exponent); a smaller run's net under {MIN_S} s counts as "
             f"{MIN_S} s. **bold** = above the target. FAILED = the process exited with an "
             "error (not `check`'s exit 1 for findings).", "",
             f"Run {res['started']}, scale {res['scale']}, load average "
             f"{res['load_avg_at_start'][0]:.1f} → {res['load_avg_at_end'][0]:.1f}.", ""]
    if note:
        lines += [note, ""]
    lines += ["| command | floor CPU-s | " + " | ".join(res["shapes"]) + " |",
              "|---|---:|" + "---:|" * len(res["shapes"])]
    lines.insert(len(lines) - 2, "Sizes: " + ", ".join(
        f"{k} {v['sizes'][0]:,}/{v['sizes'][1]:,} {v['unit']}" for k, v in res["shapes"].items())
        + ".\n")
    for name in names:
        cells = []
        for per in res["shapes"].values():
            rr = per["runs"][name]
            e = per["exponent"][name]
            if any("error" in r for r in rr):
                cells.append("FAILED")
                continue
            ex = "·" if e is None else (f"**{e:.2f}**" if e > TARGET else f"{e:.2f}")
            cells.append(f"{ex} ({rr[0]['cpu_s']:.2f}→{rr[1]['cpu_s']:.2f})")
        lines.append(f"| `{name}` | {res['floors'].get(name, 0):.2f} | " + " | ".join(cells)
                     + " |")
    lines += ["", "Cells: exponent (CPU-s at n → CPU-s at 4n).", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.shapes", description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply every shape's default n (e.g. 20 for 100k-thread shapes)")
    ap.add_argument("--work", type=Path, default=HERE / ".data" / "shapes")
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--code", type=Path, default=ROOT,
                    help="the graphkit checkout to run (default: this one), e.g. a baseline")
    ap.add_argument("--note", default="", help="a line for the report (e.g. the machine was busy)")
    ap.add_argument("--report", type=Path,
                    help="only write the report again from this shapes.json")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.report:
        res = json.loads(args.report.read_text())
        summarize(res)
        write_section("shapes", markdown(res, args.note), args.out)
        print(markdown(res, args.note))
        return
    res = run([s for s in args.shapes.split(",") if s], args.scale, args.work,
              lambda m: print(m, flush=True), args.code)
    (args.out / "shapes.json").write_text(json.dumps(res, indent=1) + "\n")
    write_section("shapes", markdown(res, args.note), args.out)
    print(markdown(res, args.note))


if __name__ == "__main__":
    sys.exit(main())
