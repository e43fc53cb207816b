"""Benchmark data: ``ai_gateway_messages`` rows at 10k/100k/1M and Claude/Codex transcripts.

Rows have the real shape (DOMAIN.md §2): Claude sessions whose main loop spawns
subagents through ``Task``/``Agent`` tool calls, nested up to depth 4, each
subagent row naming its spawning call in ``attributes.claude.spawned_by_tool_use_id``;
Codex sessions whose root thread spawns child threads (``conversation_id`` =
thread, ``parent_thread_id``, ``session_id`` = root); several parts per
message; a few % duplicate rows; every ``MESSAGES_SCHEMA`` column, with
content columns of realistic sizes (so reading only the needed columns matters).

Only the thread tree is planned in Python (one loop step per thread); messages
and rows are numpy/pyarrow column operations, so 1M rows take seconds.
Seeded and deterministic.

    python -m bench.generate rows --rows 1m --out bench/.data/rows-1m
    python -m bench.generate transcripts --out bench/.data/transcripts
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphkit.core.schema import MESSAGES_SCHEMA

EPOCH = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)
EPOCH_US = int(EPOCH.timestamp() * 1_000_000)
GEN_VERSION = 3  # bump when the shape changes: cached data is regenerated

# thread kinds
CLAUDE_MAIN, CLAUDE_SUB, CODEX_ROOT, CODEX_CHILD = 0, 1, 2, 3
# part kinds
P_TEXT, P_THINKING, P_TOOL_CALL, P_TOOL_RESULT, P_REASONING = 0, 1, 2, 3, 4
PART_TYPES = ["text", "thinking", "tool_call", "tool_result", "reasoning"]
CLAUDE_PROVIDER_TYPES = ["text", "thinking", "tool_use", "tool_result", "thinking"]
CODEX_PROVIDER_TYPES = ["output_text", "reasoning", "function_call", "function_call_output",
                        "reasoning"]
CLAUDE_TOOLS = ["Read", "Bash", "Edit", "Grep", "Glob", "Write", "WebFetch", "TodoWrite",
                "Task", "Agent"]  # the last two: spawn calls only
CODEX_TOOLS = ["shell", "apply_patch", "update_plan", "view_image", "spawn_agent"]
AGENT_TYPES = ["Explore", "Plan", "general-purpose", "code-reviewer", "test-runner"]
PROJECTS = [f"/home/dev/src/{a}-{b}" for a in ("web", "api", "billing", "cli", "infra", "ml",
                                                 "auth", "search")
            for b in ("svc", "app", "lib", "tools", "core", "ui")]


def parse_size(text: str) -> int:
    """``10k`` → 10000, ``1m`` → 1000000, ``2500`` → 2500."""
    t = text.strip().lower()
    mult = 1
    if t.endswith("k"):
        mult, t = 1000, t[:-1]
    elif t.endswith("m"):
        mult, t = 1_000_000, t[:-1]
    return int(float(t) * mult)


def size_label(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}m"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


# ---------------------------------------------------------------------------
# text pools: content is sliced from pre-made texts, never built per row


def _word_pool(rng: np.random.Generator) -> list[str]:
    letters = np.array(list("etaoinshrdlucmfwypvbgkjqxz"))
    weights = np.linspace(2.0, 0.2, len(letters))
    weights /= weights.sum()
    words = []
    for _ in range(3000):
        n = int(rng.integers(2, 11))
        words.append("".join(rng.choice(letters, n, p=weights)))
    words += ["def", "return", "import", "self", "src/", "the", "a", "to", "of", "{", "}",
              "error", "test", "file", "line", "function", "async", "await", "=", "==", "#"]
    return words


def _text_pool(rng: np.random.Generator, n: int, mean: int, sigma: float = 0.8) -> pa.Array:
    """``n`` distinct texts with log-normal lengths around ``mean`` bytes."""
    words = np.array(_word_pool(rng))
    lengths = np.maximum(8, rng.lognormal(np.log(mean) - sigma**2 / 2, sigma, n)).astype(int)
    total_words = int(lengths.sum() // 6) + 1000
    stream = " ".join(words[rng.integers(0, len(words), total_words)].tolist())
    out = []
    pos = 0
    for ln in lengths.tolist():
        if pos + ln > len(stream):
            pos = 0
        out.append(stream[pos:pos + ln])
        pos += ln
    return pa.array(out, pa.string())


# ---------------------------------------------------------------------------
# rows


@dataclass
class RowsInfo:
    rows: int
    unique_rows: int
    sessions: int
    threads: int
    claude_subagents: int
    codex_children: int
    max_depth: int
    seconds: float


def _plan(target_rows: int, rnd: random.Random) -> dict[str, Any]:
    """The thread tree, one Python step per thread: kinds, parents, message counts,
    the parent message each child was spawned from, and start times."""
    kind: list[int] = []
    parent: list[int] = []
    session: list[int] = []
    depth: list[int] = []
    nmsg: list[int] = []
    start: list[int] = []  # microseconds after EPOCH
    spawn_msg: list[int] = []  # local index of the parent's spawning message, -1 for roots
    est = 0.0
    s = 0
    while est < target_rows:
        claude = rnd.random() < 0.6
        t0 = s * 53_000_000 + rnd.randrange(40_000_000)
        # depth-first: (parent index, depth, parent's spawning message, start time)
        stack: list[tuple[int, int, int, int]] = [(-1, 0, -1, t0)]
        while stack:
            par, d, smsg, ts = stack.pop()
            idx = len(kind)
            if d == 0:
                n = rnd.randint(8, 30)
                kids = rnd.choice([1, 2, 3, 4, 5, 6] if claude else [0, 1, 2, 3, 4])
            else:
                n = rnd.randint(2, 9)
                kids = rnd.choice([0, 0, 1, 2, 3]) if d < 4 else 0
            n = max(n, 2 * kids + 2)
            kind.append((CLAUDE_MAIN if d == 0 else CLAUDE_SUB) if claude
                        else (CODEX_ROOT if d == 0 else CODEX_CHILD))
            parent.append(par)
            session.append(s)
            depth.append(d)
            nmsg.append(n)
            start.append(ts)
            spawn_msg.append(smsg)
            est += n * 1.5
            # each child is spawned from its own assistant message (odd local index)
            slots = sorted(rnd.sample(range(n // 2 - 1), kids)) if kids else []
            for k in reversed(slots):
                m = 2 * k + 1
                stack.append((idx, d + 1, m, ts + m * 15_000_000 + 5_000_000))
        s += 1
    return {"kind": kind, "parent": parent, "session": session, "depth": depth, "nmsg": nmsg,
            "start": start, "spawn_msg": spawn_msg, "sessions": s}


def _excl_cumsum(a: np.ndarray) -> np.ndarray:
    out = np.zeros(len(a), np.int64)
    if len(a) > 1:
        np.cumsum(a[:-1], out=out[1:])
    return out


def _ids(prefix: str | pa.Array, nums: np.ndarray, width: int) -> pa.Array:
    """``prefix + zero-padded number`` for every number, in Arrow."""
    text = pc.utf8_lpad(pa.array(nums, pa.int64()).cast(pa.string()), width=width, padding="0")
    return pc.binary_join_element_wise(prefix, text, "")


def _null_unless(mask: np.ndarray, arr: pa.Array) -> pa.Array:
    return pc.if_else(pa.array(mask), arr, pa.nulls(len(arr), arr.type))


def _take_where(pool: pa.Array, idx: np.ndarray, mask: np.ndarray) -> pa.Array:
    """``pool[idx]`` where ``mask``, null elsewhere (nothing is copied for masked-out rows)."""
    return pc.take(pool, pa.array(idx, pa.int64(), mask=~mask))


def generate_rows(target_rows: int, *, seed: int = 11,
                  duplicate_rate: float = 0.03) -> tuple[pa.Table, pa.Table, RowsInfo]:
    """About ``target_rows`` rows (plus duplicates), the truth table, and a summary."""
    t_begin = time.perf_counter()
    rnd = random.Random(seed)
    rng = np.random.default_rng(seed)
    plan = _plan(int(target_rows / (1 + duplicate_rate)), rnd)
    kind = np.array(plan["kind"], np.int8)
    parent = np.array(plan["parent"], np.int64)
    tsess = np.array(plan["session"], np.int64)
    depth = np.array(plan["depth"], np.int64)
    nmsg = np.array(plan["nmsg"], np.int64)
    start = np.array(plan["start"], np.int64)
    smsg = np.array(plan["spawn_msg"], np.int64)
    T, S = len(kind), plan["sessions"]
    claude_t = kind <= CLAUDE_SUB

    # -- per session / per thread identities (Python: one step per thread) ------------
    session_uid = [str(uuid.UUID(int=rnd.getrandbits(128), version=4)) for _ in range(S)]
    thread_uid: list[str] = []
    for k, s in zip(kind.tolist(), tsess.tolist(), strict=True):
        if k in (CLAUDE_MAIN, CODEX_ROOT):
            thread_uid.append(session_uid[s])
        elif k == CLAUDE_SUB:
            thread_uid.append(f"a{rnd.getrandbits(64):016x}")
        else:
            thread_uid.append(str(uuid.UUID(int=rnd.getrandbits(128), version=4)))
    thread_uid_arr = pa.array(thread_uid, pa.string())
    first_thread = np.searchsorted(tsess, np.arange(S))  # threads are grouped by session
    root_of = first_thread[tsess]

    # -- messages ------------------------------------------------------------------
    M = int(nmsg.sum())
    msg_thread = np.repeat(np.arange(T), nmsg)
    t_msg_off = _excl_cumsum(nmsg)
    msg_local = np.arange(M) - t_msg_off[msg_thread]
    asst = (msg_local % 2) == 1
    n_parts = np.where(asst, 1 + rng.integers(0, 3, M), 1)
    children = np.nonzero(parent >= 0)[0]
    spawn_msg_global = t_msg_off[parent[children]] + smsg[children]
    n_parts[spawn_msg_global] = np.maximum(n_parts[spawn_msg_global], 2)
    msg_time = start[msg_thread] + msg_local * 15_000_000 + rng.integers(0, 4_000_000, M)
    msg_num = np.arange(M) + seed * 10**9
    msg_claude = claude_t[msg_thread]
    message_id = _ids(pc.if_else(pa.array(msg_claude), "msg_01", "resp_"), msg_num, 14)

    # -- rows (parts) ------------------------------------------------------------------
    R = int(n_parts.sum())
    row_msg = np.repeat(np.arange(M), n_parts)
    m_row_off = _excl_cumsum(n_parts)
    part_index = np.arange(R) - m_row_off[row_msg]
    row_thread = msg_thread[row_msg]
    row_local = msg_local[row_msg]
    row_asst = asst[row_msg]
    row_claude = claude_t[row_thread]
    u = rng.random(R)
    pk = np.full(R, P_TEXT, np.int8)
    user_result = (~row_asst) & (row_local > 0) & (u < 0.75)
    pk[user_result] = P_TOOL_RESULT
    first_asst = row_asst & (part_index == 0)
    pk[first_asst & row_claude & (u < 0.3)] = P_THINKING
    pk[first_asst & ~row_claude & (u < 0.5)] = P_REASONING
    pk[row_asst & (part_index > 0) & (u < 0.8)] = P_TOOL_CALL
    spawn_row = m_row_off[spawn_msg_global] + n_parts[spawn_msg_global] - 1
    pk[spawn_row] = P_TOOL_CALL
    is_call = pk == P_TOOL_CALL

    tools = CLAUDE_TOOLS + CODEX_TOOLS
    tool_code = np.where(row_claude, rng.integers(0, 8, R), 10 + rng.integers(0, 4, R))
    child_claude = claude_t[children]
    spawn_tool = np.where(child_claude, 8 + rng.integers(0, 2, len(children)), 14)
    tool_code[spawn_row] = spawn_tool
    tool_name = _null_unless(is_call, pc.take(pa.array(tools), pa.array(tool_code)))
    row_num = np.arange(R) + seed * 10**9
    call_prefix = pc.if_else(pa.array(row_claude), "toolu_01", "call_")
    tool_call_id = _null_unless(is_call, _ids(call_prefix, row_num, 16))

    # -- subagent attributes: the spawning call of each Claude subagent -------------------
    attrs: list[str | None] = []
    call_of_child = dict(zip(children.tolist(), spawn_row.tolist(), strict=True))
    for t in range(T):
        k = kind[t]
        if k == CLAUDE_SUB:
            row = call_of_child[t]
            call = "toolu_01" + str(row + seed * 10**9).zfill(16)
            attrs.append(json.dumps({"claude": {
                "spawned_by_tool_use_id": call,
                "agent_type": AGENT_TYPES[rnd.randrange(len(AGENT_TYPES))],
                "description": f"subtask {t % 97}: inspect module {t % 13}"}}))
        elif k == CLAUDE_MAIN:
            attrs.append('{"claude": {"entrypoint": "cli", "permission_mode": "default"}}')
        else:
            attrs.append('{"codex": {"originator": "codex_cli_rs"}}')
    t_attrs = pa.array(attrs, pa.string())

    # -- content: slices of pre-made text pools ----------------------------------------
    pools = {
        P_TEXT: _text_pool(rng, 4096, 350),
        P_THINKING: _text_pool(rng, 2048, 900),
        P_TOOL_RESULT: _text_pool(rng, 4096, 1500, 1.0),
    }
    # one pool of all texts; each part kind draws from its own range of it
    pool_all = pa.concat_arrays(list(pools.values()))
    bases = np.cumsum([0] + [len(p) for p in pools.values()])
    idx = np.zeros(R, np.int64)
    has_content = np.zeros(R, bool)
    for (p, pool), base in zip(pools.items(), bases[:-1], strict=True):
        mask = pk == p
        idx[mask] = base + rng.integers(0, len(pool), int(mask.sum()))
        has_content |= mask
    content = _take_where(pool_all, idx, has_content)
    args_pool = pa.array([json.dumps({"file_path": f"src/mod{i}/file{i % 31}.py",
                                      "pattern": "x" * (i % 200), "limit": i % 500})
                          for i in range(2048)])
    tool_args = _take_where(args_pool, rng.integers(0, 2048, R), is_call)
    sys_pool = _text_pool(rng, 8, 6000, 0.2)
    sys_rows = (row_local == 0) & (part_index == 0) & np.isin(kind[row_thread],
                                                             [CLAUDE_MAIN, CODEX_ROOT])
    system_text = _take_where(sys_pool, row_thread % 8, sys_rows)
    sig_pool = _text_pool(rng, 64, 300, 0.1)
    thinking_signature = _take_where(sig_pool, np.arange(R) % 64, pk == P_THINKING)

    # -- per-thread and per-session columns, taken per row -------------------------------
    def per_thread(values: list[Any] | pa.Array) -> pa.Array:
        arr = values if isinstance(values, pa.Array) else pa.array(values, pa.string())
        return pc.take(arr, pa.array(row_thread))

    def per_session(values: list[Any]) -> pa.Array:
        return pc.take(pa.array(values, pa.string()), pa.array(tsess[row_thread]))

    s_rnd = random.Random(seed + 1)
    s_cwd = [PROJECTS[s_rnd.randrange(len(PROJECTS))] for _ in range(S)]
    s_repo = [c if s_rnd.random() < 0.7 else None for c in s_cwd]
    s_branch = [s_rnd.choice(["main", "dev", f"feature/t-{s % 400}", f"fix/bug-{s % 900}"])
                for s in range(S)]
    s_remote = [f"git@github.com:acme/{c.rsplit('/', 1)[1]}.git" for c in s_cwd]
    s_sha = [f"{s_rnd.getrandbits(160):040x}" for _ in range(S)]
    sess_claude = claude_t[first_thread].tolist()
    s_opus = [s_rnd.random() < 0.3 for _ in range(S)]
    t_model = []
    for t in range(T):
        k = kind[t]
        if k == CLAUDE_MAIN:
            t_model.append("claude-opus-4-1" if s_opus[tsess[t]] else "claude-sonnet-4-5")
        elif k == CLAUDE_SUB:
            t_model.append("claude-haiku-4-5" if t % 2 else "claude-sonnet-4-5")
        else:
            t_model.append("gpt-5-codex" if k == CODEX_ROOT else "gpt-5-codex-mini")
    session_id_t = pc.take(pa.array(session_uid), pa.array(tsess))
    codex_t = ~claude_t
    conv_t = _null_unless(codex_t, thread_uid_arr)
    agent_t = _null_unless(kind == CLAUDE_SUB, thread_uid_arr)
    par_t = _null_unless(kind == CODEX_CHILD, pc.take(thread_uid_arr,
                                                       pa.array(np.maximum(parent, 0))))
    start_t = pa.array(start[root_of] + EPOCH_US, pa.timestamp("us", tz="UTC"))

    row_time = msg_time[row_msg]
    day = (row_time + EPOCH_US) // 86_400_000_000
    day0 = int(day.min())
    dates = pa.array([(datetime(1970, 1, 1) + timedelta(days=d)).date().isoformat()
                      for d in range(day0, int(day.max()) + 1)])
    mid_rows = pc.take(message_id, pa.array(row_msg))
    prev_msg = np.where(msg_local > 0, np.arange(M) - 1, 0)
    prev_mid = _null_unless(msg_local > 0, pc.take(message_id, pa.array(prev_msg)))
    prev_json = pc.binary_join_element_wise('"', prev_mid, '"', "")
    puuid = pc.binary_join_element_wise(message_id, "-u", "")
    parent_uuid = _null_unless(msg_local > 0, pc.take(puuid, pa.array(prev_msg)))
    prev_row = np.maximum(m_row_off[row_msg] - 1, 0)
    prev_is_call = is_call[prev_row] & (row_local > 0) & (part_index == 0)
    tool_result_for = _null_unless((pk == P_TOOL_RESULT) & prev_is_call,
                                   pc.take(tool_call_id, pa.array(prev_row)))
    role = pc.take(pa.array(["user", "assistant"]), pa.array(row_asst.astype(np.int8)))
    provider_types = pa.array(CLAUDE_PROVIDER_TYPES + CODEX_PROVIDER_TYPES)
    model_rows = _null_unless(row_asst, per_thread(t_model))
    is_error = _null_unless(pk == P_TOOL_RESULT, pa.array(rng.random(R) < 0.05))
    claude_s = pa.array(sess_claude)

    cols: dict[str, pa.Array] = {
        "gateway_id": pa.array(np.full(R, "hypaware-bench", object), pa.string()),
        "schema_version": pa.array(np.full(R, 7, np.int32)),
        "session_id": per_thread(session_id_t),
        "conversation_id": per_thread(conv_t),
        "user_id": per_session([f"user-{s % 7}" for s in range(S)]),
        "provider": per_thread(pc.if_else(pa.array(claude_t), "anthropic", "openai")),
        "model": model_rows,
        "system_text": system_text,
        "tools": _null_unless(sys_rows, pa.array(
            np.full(R, '["Read","Bash","Edit","Grep","Task"]', object), pa.string())),
        "conversation_started_at": per_thread(start_t),
        "conversation_source": per_session(
            ["claude_code_transcript" if c else "codex_rollout" for c in sess_claude]),
        "client_name": per_session(["claude-code" if c else "codex" for c in sess_claude]),
        "cwd": per_session(s_cwd),
        "git_branch": per_session(s_branch),
        "git_remote": per_session(s_remote),
        "head_sha": per_session(s_sha),
        "repo_root": per_session(s_repo),
        "client_version": per_session(["2.1.3" if c else "0.60.1" for c in sess_claude]),
        "entrypoint": per_session(["cli"] * S),
        "user_type": per_session(["external"] * S),
        "permission_mode": per_session(["default" if c else None for c in sess_claude]),
        "is_sidechain": per_thread(pa.array(np.isin(kind, [CLAUDE_SUB, CODEX_CHILD]))),
        "agent_id": per_thread(agent_t),
        "parent_thread_id": per_thread(par_t),
        "message_id": mid_rows,
        "previous_message_id": pc.take(prev_json, pa.array(row_msg)),
        "provider_uuid": pc.take(puuid, pa.array(row_msg)),
        "parent_uuid": pc.take(parent_uuid, pa.array(row_msg)),
        "logical_parent_uuid": pa.nulls(R, pa.string()),
        "source_tool_assistant_uuid": pa.nulls(R, pa.string()),
        "request_id": _null_unless(row_asst, _ids("req_01", msg_num[row_msg], 14)),
        "prompt_id": pa.nulls(R, pa.string()),
        "message_index": pa.array(row_local.astype(np.int32)),
        "message_created_at": pa.array(row_time + EPOCH_US, pa.timestamp("us", tz="UTC")),
        "role": role,
        "part_id": pc.binary_join_element_wise(
            mid_rows, pa.array(part_index).cast(pa.string()), ":"),
        "part_index": pa.array(part_index.astype(np.int32)),
        "part_type": pc.take(pa.array(PART_TYPES), pa.array(pk)),
        "provider_type": pc.take(provider_types,
                                 pa.array(pk.astype(np.int64) + np.where(row_claude, 0, 5))),
        "provider_subtype": pa.nulls(R, pa.string()),
        "content_text": content,
        "tool_name": tool_name,
        "tool_call_id": tool_call_id,
        "tool_args": tool_args,
        "caller_type": pa.nulls(R, pa.string()),
        "tool_result_for": tool_result_for,
        "thinking_signature": thinking_signature,
        "attachment_type": pa.nulls(R, pa.string()),
        "hook_event": pa.nulls(R, pa.string()),
        "is_error": is_error,
        "is_compact_summary": pa.array(np.zeros(R, bool)),
        "compact_metadata": pa.nulls(R, pa.string()),
        "status": pa.nulls(R, pa.string()),
        "attributes": per_thread(t_attrs),
        "raw_frame": pa.nulls(R, pa.string()),
        "date": pc.take(dates, pa.array(day - day0)),
    }
    del claude_s
    table = pa.Table.from_arrays([cols[n] for n in MESSAGES_SCHEMA.names],
                                 schema=MESSAGES_SCHEMA)
    unique = table.num_rows
    n_dup = int(unique * duplicate_rate)
    if n_dup:
        dup = np.sort(rng.choice(unique, n_dup, replace=False))
        table = pa.concat_tables([table, table.take(pa.array(dup))]).combine_chunks()

    parent_uid = [thread_uid[p] if p >= 0 else None for p in parent.tolist()]
    truth = pa.table({
        "thread_id": thread_uid_arr,
        "parent_id": pa.array(parent_uid, pa.string()),
        "session_id": session_id_t,
        "kind": pa.array(kind.astype(np.int8)),
        "depth": pa.array(depth.astype(np.int8)),
    })
    info = RowsInfo(rows=table.num_rows, unique_rows=unique, sessions=S, threads=T,
                    claude_subagents=int((kind == CLAUDE_SUB).sum()),
                    codex_children=int((kind == CODEX_CHILD).sum()),
                    max_depth=int(depth.max()), seconds=time.perf_counter() - t_begin)
    return table, truth, info


_NO_DICT = {"content_text", "tool_args", "system_text", "thinking_signature", "raw_frame",
            "part_id", "message_id", "tool_call_id", "provider_uuid", "parent_uuid",
            "previous_message_id", "request_id", "tool_result_for"}


def write_rows(table: pa.Table, truth: pa.Table, info: RowsInfo, out: Path,
               file_rows: int = 250_000) -> None:
    """Write ``part-NNNNN.parquet`` files (plus ``_truth.parquet``, ``_meta.json``)
    into ``out``, atomically (a temp folder renamed into place)."""
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    dict_cols = [n for n in table.column_names if n not in _NO_DICT]
    for i, off in enumerate(range(0, table.num_rows, file_rows)):
        pq.write_table(table.slice(off, file_rows), tmp / f"part-{i:05d}.parquet",
                       row_group_size=64 * 1024, use_dictionary=dict_cols)
    pq.write_table(truth, tmp / "_truth.parquet")
    meta = dict(info.__dict__, gen_version=GEN_VERSION)
    (tmp / "_meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def ensure_rows(target_rows: int, root: Path, *, seed: int = 11) -> tuple[Path, dict[str, Any]]:
    """The rows folder for ``target_rows`` under ``root``, generated unless cached."""
    out = root / f"rows-{size_label(target_rows)}"
    meta_path = out / "_meta.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        if meta.get("gen_version") == GEN_VERSION and meta.get("seed", seed) == seed:
            meta["cached"] = True
            return out, meta
    t0 = time.perf_counter()
    table, truth, info = generate_rows(target_rows, seed=seed)
    gen_s = time.perf_counter() - t0
    write_rows(table, truth, info, out)
    meta = json.loads(meta_path.read_text())
    meta.update(seed=seed, generate_seconds=round(gen_s, 2),
                write_seconds=round(time.perf_counter() - t0 - gen_s, 2),
                bytes=sum(f.stat().st_size for f in out.glob("part-*.parquet")))
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    meta["cached"] = False
    return out, meta


# ---------------------------------------------------------------------------
# transcripts: Claude projects (both subagent layouts) and Codex rollouts


def _iso(us: int) -> str:
    return (EPOCH + timedelta(microseconds=us)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass
class TranscriptsInfo:
    claude_lines: int
    claude_sessions: int
    claude_files: int
    claude_subagents: int
    codex_lines: int
    codex_rollouts: int
    bytes: int
    seconds: float


def generate_transcripts(out: Path, *, claude_lines: int = 100_000, claude_sessions: int = 1500,
                         codex_rollouts: int = 150, seed: int = 5) -> TranscriptsInfo:
    """Write ``out/claude/projects/...`` and ``out/codex/sessions/...``.

    Claude: 2/3 of the sessions use the current layout
    (``<session>/subagents/agent-<id>.jsonl`` + ``.meta.json``), 1/3 the older
    one (``agent-<id>.jsonl`` beside the session file); subagents nest up to
    depth 3; assistant messages are written one content block per line.
    """
    t0 = time.perf_counter()
    rnd = random.Random(seed)
    shutil.rmtree(out, ignore_errors=True)
    projects = out / "claude" / "projects"
    words = ["the", "a", "to", "of", "file", "test", "line", "error", "function", "return",
             "value", "import", "module"]
    per_session = claude_lines / claude_sessions
    lines_total = 0
    files = 0
    subagents = 0

    def text(n: int) -> str:
        return " ".join(rnd.choice(words) for _ in range(n))

    for s in range(claude_sessions):
        sid = str(uuid.UUID(int=rnd.getrandbits(128), version=4))
        proj = PROJECTS[s % len(PROJECTS)]
        pdir = projects / proj.replace("/", "-")
        pdir.mkdir(parents=True, exist_ok=True)
        new_layout = s % 3 != 2
        base_t = s * 60_000_000
        budget = max(8, int(rnd.gauss(per_session, per_session / 4)))
        counter = [0]

        def write_thread(path: Path, agent: str | None, depth: int, t: int, n_lines: int,
                         sid: str = sid, proj: str = proj, pdir: Path = pdir,
                         new_layout: bool = new_layout, s: int = s,
                         counter: list[int] = counter) -> int:
            nonlocal files, subagents, lines_total
            out_lines: list[str] = []
            parent_uuid = None
            common = {"isSidechain": agent is not None, "userType": "external", "cwd": proj,
                      "sessionId": sid, "version": "2.1.3", "gitBranch": "main"}
            if agent:
                common["agentId"] = agent

            def emit(entry: dict[str, Any]) -> None:
                nonlocal parent_uuid
                u = str(uuid.UUID(int=rnd.getrandbits(128), version=4))
                entry = {"parentUuid": parent_uuid, **common, **entry, "uuid": u}
                parent_uuid = u
                out_lines.append(json.dumps(entry, separators=(",", ":")))

            emit({"type": "user", "timestamp": _iso(t),
                  "message": {"role": "user", "content": text(30)}})
            kids_left = rnd.choice([0, 1, 2, 3]) if depth < 3 else 0
            while len(out_lines) < n_lines:
                t += rnd.randint(1, 20) * 1_000_000
                counter[0] += 1
                mid = f"msg_{s:05d}{counter[0]:06d}"
                model = "claude-haiku-4-5" if agent else "claude-sonnet-4-5"
                msg = {"id": mid, "type": "message", "role": "assistant", "model": model}
                if rnd.random() < 0.3:
                    emit({"type": "assistant", "timestamp": _iso(t), "message": {
                        **msg, "content": [{"type": "thinking", "thinking": text(60),
                                            "signature": "sig" + "A" * 80}]}})
                emit({"type": "assistant", "timestamp": _iso(t), "message": {
                    **msg, "content": [{"type": "text", "text": text(40)}]}})
                call = f"toolu_{s:05d}{counter[0]:06d}"
                spawn = kids_left > 0 and rnd.random() < 0.4
                name = rnd.choice(["Task", "Agent"]) if spawn else rnd.choice(
                    ["Read", "Bash", "Grep", "Edit"])
                inp = ({"subagent_type": "Explore", "description": "look", "prompt": text(20)}
                       if spawn else {"file_path": f"src/m{counter[0] % 40}.py"})
                emit({"type": "assistant", "timestamp": _iso(t), "message": {
                    **msg, "content": [{"type": "tool_use", "id": call, "name": name,
                                        "input": inp}],
                    "usage": {"input_tokens": 10, "output_tokens": 40}}, "requestId": "req_" + mid})
                result: dict[str, Any] = {"status": "completed"}
                if spawn:
                    kids_left -= 1
                    child = f"{rnd.getrandbits(64):016x}"
                    subagents += 1
                    if new_layout:
                        sub = pdir / sid / "subagents"
                        sub.mkdir(parents=True, exist_ok=True)
                        cpath = sub / f"agent-{child}.jsonl"
                        (sub / f"agent-{child}.meta.json").write_text(json.dumps(
                            {"agentType": "Explore", "description": "look", "toolUseId": call}))
                    else:
                        cpath = pdir / f"agent-{child}.jsonl"
                    n_child = max(4, min(30, int(rnd.gauss(8, 3))))
                    t = write_thread(cpath, child, depth + 1, t + 1_000_000, n_child)
                    result = {"status": "completed", "agentId": child, "totalToolUseCount": 3}
                t += 1_000_000
                emit({"type": "user", "timestamp": _iso(t), "message": {
                    "role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                                 "content": text(rnd.randint(20, 200))}]},
                      "toolUseResult": result})
                if rnd.random() < 0.05:
                    out_lines.append(json.dumps({"type": "queue-operation", "operation": "enqueue",
                                                 "timestamp": _iso(t), "sessionId": sid}))
            path.write_text("\n".join(out_lines) + "\n")
            files += 1
            lines_total += len(out_lines)
            return t

        main_lines = max(8, int(budget * 0.55))
        write_thread(pdir / f"{sid}.jsonl", None, 0, base_t, main_lines)

    claude_total = lines_total
    # Codex rollouts: a root thread and spawned children, newest envelope format.
    codex_lines = 0
    for r in range(codex_rollouts // 3):
        root = str(uuid.UUID(int=rnd.getrandbits(128), version=4))
        threads = [(root, None, 0)]
        for _ in range(2):
            threads.append((str(uuid.UUID(int=rnd.getrandbits(128), version=4)), root, 1))
        t = 10**12 + r * 3_600_000_000
        for tid, par, d in threads:
            t += 5_000_000
            day = EPOCH + timedelta(microseconds=t)
            folder = out / "codex" / "sessions" / day.strftime("%Y/%m/%d")
            folder.mkdir(parents=True, exist_ok=True)
            stamp = day.strftime("%Y-%m-%dT%H-%M-%S")
            meta: dict[str, Any] = {"id": tid, "session_id": root, "timestamp": _iso(t),
                                    "cwd": "/home/dev/src/api", "originator": "codex_cli_rs",
                                    "cli_version": "0.60.1", "model_provider": "openai"}
            if par:
                meta["source"] = {"subagent": {"thread_spawn": {
                    "parent_thread_id": par, "depth": d, "agent_nickname": "worker",
                    "agent_role": "worker"}}}
                meta["forked_from_id"] = par
            else:
                meta["source"] = "cli"
            lines = [{"timestamp": _iso(t), "type": "session_meta", "payload": meta},
                     {"timestamp": _iso(t), "type": "turn_context",
                      "payload": {"cwd": "/home/dev/src/api", "model": "gpt-5-codex"}}]
            for i in range(rnd.randint(8, 30)):
                t += 1_000_000
                kind = i % 4
                if kind == 0:
                    p = {"type": "message", "role": "user",
                         "content": [{"type": "input_text", "text": text(20)}]}
                elif kind == 1:
                    p = {"type": "reasoning", "summary": [{"type": "summary_text",
                                                          "text": text(10)}],
                         "encrypted_content": "gAAAA" + "x" * 40}
                elif kind == 2:
                    p = {"type": "function_call", "name": "shell", "call_id": f"call_{r}_{i}",
                         "arguments": json.dumps({"command": ["bash", "-lc", "ls"]})}
                else:
                    p = {"type": "function_call_output", "call_id": f"call_{r}_{i - 1}",
                         "output": json.dumps({"output": text(30)})}
                lines.append({"timestamp": _iso(t), "type": "response_item", "payload": p})
            lines.append({"timestamp": _iso(t), "type": "event_msg", "payload": {
                "type": "token_count", "info": {"total_token_usage": {"total_tokens": 999}}}})
            name = f"rollout-{stamp}-{tid}.jsonl"
            (folder / name).write_text("\n".join(json.dumps(x) for x in lines) + "\n")
            codex_lines += len(lines)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    info = TranscriptsInfo(claude_total, claude_sessions, files, subagents, codex_lines,
                           3 * (codex_rollouts // 3), size, time.perf_counter() - t0)
    (out / "_meta.json").write_text(json.dumps(dict(info.__dict__, gen_version=GEN_VERSION,
                                                    seed=seed)) + "\n")
    return info


def ensure_transcripts(root: Path, **kwargs: Any) -> tuple[Path, dict[str, Any]]:
    """The transcripts folder under ``root``, generated unless cached."""
    out = root / "transcripts"
    meta_path = out / "_meta.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        if meta.get("gen_version") == GEN_VERSION:
            return out, meta
    info = generate_transcripts(out, **kwargs)
    return out, dict(info.__dict__)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("rows")
    r.add_argument("--rows", default="100k")
    r.add_argument("--root", type=Path, default=Path(__file__).parent / ".data")
    r.add_argument("--seed", type=int, default=11)
    t = sub.add_parser("transcripts")
    t.add_argument("--root", type=Path, default=Path(__file__).parent / ".data")
    args = ap.parse_args()
    if args.what == "rows":
        path, meta = ensure_rows(parse_size(args.rows), args.root, seed=args.seed)
    else:
        path, meta = ensure_transcripts(args.root)
    print(path, json.dumps(meta))


if __name__ == "__main__":
    main()
