"""Generate synthetic ``ai_gateway_messages`` rows with known lineage.

Claude-style sessions (main loop + subagents spawned by ``Task``/``Agent``
tool calls, nested up to ``max_depth``) and Codex-style sessions (root thread
+ spawned child threads), several parts per message, a few duplicated rows.
Every model response carries token usage (``attributes.usage``) for models
the price table names, the tool calls name the files they read and write
(``Read``/``Edit`` arguments, Codex ``apply_patch`` headers), and two sessions
continue earlier ones: a resumed Claude session (``attributes.claude.resumed_from``)
and a forked Codex thread (``attributes.codex.forked_from_id``), so every
command of the quick-start tour has something to show.
Seeded and deterministic: the same arguments give the same bytes.

The function also returns the truth — every thread's parent and session, and
each continuation — so tests can check lineage on data no one looked at.

    python samples/generate.py            # rewrites samples/rows/ (the quick-start data)
    python samples/generate.py --sessions 500 --out /tmp/rows
"""

from __future__ import annotations

import argparse
import json
import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from graphkit.core.schema import MESSAGES_SCHEMA

EPOCH = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


@dataclass
class Truth:
    """What the generated rows contain, by the id a user would type."""

    sessions: dict[str, dict[str, int]] = field(default_factory=dict)  # sid -> counts
    parent: dict[str, str | None] = field(default_factory=dict)  # thread id -> parent id
    session_of: dict[str, str] = field(default_factory=dict)  # thread id -> session id
    continues: dict[str, tuple[str, str]] = field(default_factory=dict)  # sid -> (sid, how)

    def ancestors(self, tid: str) -> list[str]:
        """Parent thread ids, nearest first."""
        out = []
        cur = self.parent.get(tid)
        while cur is not None:
            out.append(cur)
            cur = self.parent.get(cur)
        return out

    def descendants(self, tid: str) -> set[str]:
        """Every thread below ``tid``."""
        kids: dict[str, list[str]] = {}
        for t, p in self.parent.items():
            if p is not None:
                kids.setdefault(p, []).append(t)
        out: set[str] = set()
        stack = list(kids.get(tid, []))
        while stack:
            t = stack.pop()
            if t not in out:
                out.add(t)
                stack.extend(kids.get(t, []))
        return out


class _Rows:
    def __init__(self) -> None:
        self.cols: dict[str, list[object]] = {n: [] for n in MESSAGES_SCHEMA.names}

    def add(self, **values: object) -> None:
        for name, col in self.cols.items():
            col.append(values.get(name))

    def table(self) -> pa.Table:
        return pa.Table.from_pydict(self.cols, schema=MESSAGES_SCHEMA)


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _hex(rng: random.Random, n: int = 16) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _usage(extra: random.Random, provider: str) -> dict[str, int]:
    """One model response's tokens, as the provider reports them (HypAware's keys)."""
    if provider == "openai":  # Codex: no cache writes; input excludes the cached part
        return {"input_tokens": extra.randint(400, 3000), "output_tokens": extra.randint(80, 1500),
                "cache_read_input_tokens": extra.randint(2000, 24000)}
    return {"input_tokens": extra.randint(3, 60), "output_tokens": extra.randint(60, 900),
            "cache_creation_input_tokens": extra.randint(500, 6000),
            "cache_read_input_tokens": extra.randint(8000, 40000)}


class _Thread:
    """Writes the messages of one thread.

    ``rng`` draws the ids, times and shapes; ``extra`` everything added since
    (token counts, file paths), so adding those changed none of the ids the
    docs and tests name.
    """

    def __init__(self, rows: _Rows, rng: random.Random, base: dict[str, object],
                 start: datetime, extra: random.Random) -> None:
        self.rows, self.rng, self.base, self.extra = rows, rng, base, extra
        self.t = start
        self.index = 0

    def message(self, role: str, parts: list[dict[str, object]], model: str | None) -> str:
        mid = _uid(self.rng)
        self.t += timedelta(seconds=self.rng.randint(1, 30))
        for i, part in enumerate(parts):
            values = dict(self.base, message_id=mid, message_index=self.index, role=role,
                          message_created_at=self.t, part_id=f"{mid}:{i}", part_index=i,
                          model=model if role == "assistant" else None,
                          date=self.t.date().isoformat())
            values.update(part)
            if role == "assistant" and i == len(parts) - 1:
                # HypAware writes a response's usage on its last part.
                attrs = json.loads(str(values["attributes"])) if values.get("attributes") else {}
                attrs["usage"] = _usage(self.extra, str(values["provider"]))
                values["attributes"] = json.dumps(attrs)
            self.rows.add(**values)
        self.index += 1
        return mid


# Files a tool call names, relative to the session's folder (made absolute by graphkit).
FILES = ["src/app.py", "src/models.py", "src/handlers.py", "tests/test_app.py", "README.md",
         "pyproject.toml"]


def _claude_session(rows: _Rows, rng: random.Random, truth: Truth, start: datetime,
                    max_depth: int, extra: random.Random, resumes: str | None = None,
                    cwd: str | None = None) -> str:
    sid = _uid(rng)
    cwd = rng.choice(["/home/dev/src/webapp", "/home/dev/src/billing-svc", "/home/dev/src/cli"]
                     ) if cwd is None else cwd
    common = dict(gateway_id="graphkit-sample", schema_version=7, session_id=sid,
                  provider="anthropic", conversation_started_at=start, client_name="claude-code",
                  cwd=cwd, git_branch="main", client_version="2.1.0")
    truth.parent[sid] = None
    truth.session_of[sid] = sid
    if resumes is not None:
        truth.continues[sid] = (resumes, "resume")
    counts = {"threads": 0, "agents": 0, "messages": 0}
    tool = rng.choice(["Task", "Agent"])  # older and newer Claude Code

    def run(thread_id: str, agent_id: str | None, spawned_by: str | None, depth: int,
            t0: datetime) -> None:
        attrs: dict[str, object] = {}
        base = dict(common, is_sidechain=agent_id is not None, agent_id=agent_id)
        if spawned_by:
            attrs["claude"] = {"spawned_by_tool_use_id": spawned_by,
                               "agent_type": rng.choice(["Explore", "Plan", "general-purpose"]),
                               "description": "synthetic subagent"}
        elif resumes is not None:  # how HypAware marks a resumed Claude session's rows
            attrs["claude"] = {"resumed_from": resumes}
        base["attributes"] = json.dumps(attrs) if attrs else None
        th = _Thread(rows, rng, base, t0, extra)
        counts["threads"] += 1
        th.message("user", [dict(part_type="text", content_text="task")], None)
        counts["messages"] += 1
        n_spawn = rng.choice([0, 1, 1, 2]) if depth < max_depth else 0
        for _ in range(n_spawn):
            call = "toolu_" + _hex(rng, 20)
            th.message("assistant", [
                dict(part_type="text", content_text="delegating"),
                dict(part_type="tool_call", tool_name=tool, tool_call_id=call,
                     tool_args=json.dumps({"prompt": "look"})),
            ], "claude-sonnet-4-5")
            child = _hex(rng)
            truth.parent[child] = thread_id
            truth.session_of[child] = sid
            counts["agents"] += 1
            counts["messages"] += 1
            run(child, child, call, depth + 1, th.t)
            th.message("user", [dict(part_type="tool_result", tool_result_for=call,
                                     content_text="done")], None)
            counts["messages"] += 1
        # The main loop edits a file, subagents read one.
        touch = "Edit" if agent_id is None else "Read"
        th.message("assistant", [dict(part_type="text", content_text="answer"),
                                 dict(part_type="tool_call", tool_name=touch,
                                      tool_call_id="toolu_" + _hex(rng, 20),
                                      tool_args=json.dumps({"file_path": extra.choice(FILES)}))],
                   "claude-haiku-4-5" if agent_id else "claude-sonnet-4-5")
        counts["messages"] += 1

    run(sid, None, None, 0, start)
    truth.sessions[sid] = counts
    return sid


def _codex_session(rows: _Rows, rng: random.Random, truth: Truth, start: datetime,
                   max_depth: int, extra: random.Random, forks: str | None = None) -> str:
    root = _uid(rng)
    counts = {"threads": 0, "agents": 0, "messages": 0}
    common = dict(gateway_id="graphkit-sample", schema_version=7, session_id=root,
                  provider="openai", conversation_started_at=start, client_name="codex",
                  cwd="/home/dev/src/api", client_version="0.60.0")
    if forks is not None:
        truth.continues[root] = (forks, "fork")

    def run(tid: str, parent: str | None, depth: int, t0: datetime) -> None:
        truth.parent[tid] = parent
        truth.session_of[tid] = root
        # A forked root thread names the thread it forked (Codex's forked_from_id).
        fork = forks if parent is None and forks is not None else None
        base = dict(common, conversation_id=tid, parent_thread_id=parent,
                    is_sidechain=parent is not None,
                    attributes=json.dumps({"codex": {"forked_from_id": fork}}) if fork else None)
        th = _Thread(rows, rng, base, t0, extra)
        counts["threads"] += 1
        if parent is not None:  # a child thread is one of the session's agents
            counts["agents"] += 1
        th.message("user", [dict(part_type="text", content_text="task")], None)
        counts["messages"] += 1
        n_spawn = rng.choice([0, 1, 2]) if depth < max_depth else 0
        for _ in range(n_spawn):
            call = "call_" + _hex(rng, 12)
            th.message("assistant", [dict(part_type="tool_call", tool_name="spawn_agent",
                                          tool_call_id=call)], "gpt-5-codex")
            counts["messages"] += 1
            run(_uid(rng), tid, depth + 1, th.t)
        patch = (f"*** Begin Patch\n*** Update File: {extra.choice(FILES)}\n@@\n-old\n+new\n"
                 "*** End Patch\n")
        th.message("assistant", [dict(part_type="reasoning"),
                                 dict(part_type="text", content_text="answer"),
                                 dict(part_type="tool_call", tool_name="apply_patch",
                                      tool_call_id="call_" + _hex(extra, 12), tool_args=patch)],
                   "gpt-5-codex")
        counts["messages"] += 1

    run(root, None, 0, start)
    truth.sessions[root] = counts
    return root


def generate(sessions: int = 12, *, seed: int = 7, max_depth: int = 4,
             duplicate_rate: float = 0.03) -> tuple[pa.Table, Truth]:
    """Rows for ``sessions`` sessions (alternating Claude and Codex) and their truth.

    With two sessions or more, two more continue earlier ones (a resume of the
    middle Claude session, a fork of a Codex session); they and every token count
    and file path are drawn from a random source of their own, so the ids of the
    first sessions do not depend on them.
    """
    rng = random.Random(seed)
    extra = random.Random(f"{seed}:extra")
    rows = _Rows()
    truth = Truth()
    cwds: dict[str, str] = {}
    for i in range(sessions):
        start = EPOCH + timedelta(hours=7 * i)
        if i % 2 == 0:
            sid = _claude_session(rows, rng, truth, start, max_depth, extra)
            cwds[sid] = str(rows.cols["cwd"][-1])
        else:
            _codex_session(rows, rng, truth, start, max_depth, extra)
    if sessions >= 2:
        # The Claude session in the middle is resumed two hours after it started and
        # the Codex session before it (after it, for two) forked five hours after; both
        # fall before the next session starts, so time windows over the others keep
        # their sessions.
        order = list(truth.sessions)
        mid = (sessions // 2) & ~1
        codex = mid - 1 if mid else mid + 1
        start = EPOCH + timedelta(hours=7 * mid)
        _claude_session(rows, extra, truth, start + timedelta(hours=2), 1, extra,
                        resumes=order[mid], cwd=cwds[order[mid]])
        _codex_session(rows, extra, truth, start + timedelta(hours=5), 1, extra,
                       forks=order[codex])
    table = rows.table()
    n_dup = int(table.num_rows * duplicate_rate)
    if n_dup:
        dup_idx = sorted(rng.sample(range(table.num_rows), n_dup))
        table = pa.concat_tables([table, table.take(dup_idx)])
    return table, truth


def write_partitioned(table: pa.Table, out: Path) -> None:
    """Write rows as a hive-partitioned Parquet folder (``date=…/part-0.parquet``)."""
    import pyarrow.compute as pc

    out.mkdir(parents=True, exist_ok=True)
    for day in sorted(set(table.column("date").to_pylist())):
        part = table.filter(pc.equal(table.column("date"), day)).drop_columns(["date"])
        d = out / f"date={day}"
        d.mkdir(exist_ok=True)
        pq.write_table(part, d / "part-0.parquet")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=12)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "rows")
    args = ap.parse_args()
    table, truth = generate(args.sessions, seed=args.seed)
    write_partitioned(table, args.out)
    print(f"wrote {table.num_rows} rows, {len(truth.sessions)} sessions, "
          f"{len(truth.parent)} threads to {args.out}")


if __name__ == "__main__":
    main()
