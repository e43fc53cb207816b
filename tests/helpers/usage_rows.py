"""Generated HypAware-style rows with known token usage, files touched and
continuations, and the truth to check answers against.

Rows follow ``ai_gateway_messages``: usage in ``attributes.usage`` on the last
part of each assistant message (where HypAware writes it; Claude names, or
HypAware's ``cache_write_tokens``/``cache_read_tokens`` on Codex rows), tool
calls with ``tool_name``/``tool_args``, Claude subagents linked by
``attributes.claude.spawned_by_tool_use_id``, Codex child threads by
``parent_thread_id``. The truth is kept beside the rows as the generator made
them, never computed from the rows.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.helpers.rows import row

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
CLAUDE_MODELS = ("claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1")
CODEX_MODELS = ("gpt-5-codex", "gpt-5-codex-mini")
FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
          "cache_read_input_tokens")


@dataclass
class ThreadTruth:
    """What the generator put in one thread."""

    session_id: str
    parent: str | None
    kind: str
    own: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FIELDS, 0))
    by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    files: dict[str, list[int]] = field(default_factory=dict)  # path -> [reads, writes]


@dataclass
class Truth:
    """Per thread (by user-facing id), and each session's continuation."""

    threads: dict[str, ThreadTruth] = field(default_factory=dict)
    continues: dict[str, tuple[str, str]] = field(default_factory=dict)  # sid -> (origin, how)
    first: dict[str, datetime] = field(default_factory=dict)  # session -> first row time

    def session_threads(self, sid: str) -> dict[str, ThreadTruth]:
        return {k: t for k, t in self.threads.items() if t.session_id == sid}


class Gen:
    """Builds the rows; every random choice comes from one seeded generator."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.rows: list[dict[str, Any]] = []
        self.truth = Truth()
        self.clock = T0
        self.n = 0

    def _tick(self) -> datetime:
        self.clock += timedelta(seconds=self.rng.randint(1, 30))
        return self.clock

    def _id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n:06d}"

    def _usage(self, thread: str, model: str, codex: bool) -> dict[str, int]:
        r = self.rng
        u = {"input_tokens": r.randint(0, 5000), "output_tokens": r.randint(1, 3000),
             "cache_creation_input_tokens": 0 if codex else r.randint(0, 20000),
             "cache_read_input_tokens": r.randint(0, 90000)}
        t = self.truth.threads[thread]
        per = t.by_model.setdefault(model, dict.fromkeys(FIELDS, 0))
        for f in FIELDS:
            t.own[f] += u[f]
            per[f] += u[f]
        if codex:  # HypAware's own names on Codex rows, and fields it adds
            return {"input_tokens": u["input_tokens"], "output_tokens": u["output_tokens"],
                    "cache_read_tokens": u["cache_read_input_tokens"],
                    "reasoning_tokens": u["output_tokens"] // 3,
                    "total_tokens": u["input_tokens"] + u["output_tokens"]
                    + u["cache_read_input_tokens"]}
        if r.random() < 0.3:  # the Claude fixture's HypAware names, now and then
            return {"input_tokens": u["input_tokens"], "output_tokens": u["output_tokens"],
                    "cache_write_tokens": u["cache_creation_input_tokens"],
                    "cache_read_tokens": u["cache_read_input_tokens"]}
        return u

    def _file_call(self, thread: str, cwd: str) -> tuple[str, str]:
        """A tool call touching files: (tool_name, tool_args), truth updated."""
        r = self.rng
        files = self.truth.threads[thread].files
        name = r.choice(["src/app.py", "src/db/models.py", "README.md", "tests/test_app.py"])
        kind = r.choice(["Read", "Edit", "Write", "patch"])
        if kind == "patch":
            names = r.sample(["src/app.py", "src/util.py", "docs/guide.md"], 2)
            for n in names:
                files.setdefault(f"{cwd}/{n}", [0, 0])[1] += 1
            body = "".join(f"*** Update File: {n}\n@@\n-a\n+b\n" for n in names)
            return "apply_patch", json.dumps({"input": f"*** Begin Patch\n{body}*** End Patch"})
        path = f"{cwd}/{name}"
        files.setdefault(path, [0, 0])[0 if kind == "Read" else 1] += 1
        arg = name if r.random() < 0.5 else path  # relative and absolute paths
        return kind, json.dumps({"file_path": arg, "content": "SECRET FILE BODY"})

    def thread_rows(self, sid: str, thread: str, *, agent_id: str | None = None,
                    conversation_id: str | None = None, parent_thread_id: str | None = None,
                    attrs: dict[str, Any] | None = None, codex: bool = False,
                    spawn: int = 0) -> list[str]:
        """Rows of one thread; returns the tool-call ids it made to spawn subagents."""
        r = self.rng
        cwd = "/home/dev/src/app"
        common = {"agent_id": agent_id, "conversation_id": conversation_id,
                  "parent_thread_id": parent_thread_id, "cwd": cwd,
                  "is_sidechain": bool(agent_id or parent_thread_id),
                  "provider": "openai" if codex else "anthropic"}
        attributes = json.dumps(attrs) if attrs else None
        spawns = []
        for i in range(r.randint(1, 4)):
            mid = self._id("u")
            self.rows.append(row(sid, message_id=mid, role="user", attributes=attributes,
                                 message_created_at=self._tick(), **common))
            model = r.choice(CODEX_MODELS if codex else CLAUDE_MODELS)
            mid = self._id("a")
            parts: list[dict[str, Any]] = [{"part_type": "text"}]
            if r.random() < 0.6:
                tool, args = self._file_call(thread, cwd)
                parts.append({"part_type": "tool_call", "tool_name": tool, "tool_args": args,
                              "tool_call_id": self._id("call_")})
            if i < spawn:
                call = self._id("toolu_")
                spawns.append(call)
                parts.append({"part_type": "tool_call", "tool_name": "Task",
                              "tool_call_id": call})
            usage = self._usage(thread, model, codex)
            when = self._tick()
            for k, part in enumerate(parts):
                a = dict(attrs or {})
                if k == len(parts) - 1:
                    a["usage"] = usage
                self.rows.append(row(sid, message_id=mid, part_id=f"{mid}#{k}", part_index=k,
                                     model=model, message_created_at=when,
                                     attributes=json.dumps(a) if a else None,
                                     **common, **part))
        return spawns

    def claude_session(self, sid: str, depth: int,
                       continues: tuple[str, str] | None = None) -> None:
        self.truth.threads[sid] = ThreadTruth(sid, None, "main")
        self.truth.first[sid] = self.clock + timedelta(seconds=1)
        attrs = {"continues": {"session_id": continues[0], "how": continues[1]}} \
            if continues and continues[1] != "resume" else None
        if continues and continues[1] == "resume":
            attrs = {"claude": {"resumed_from": continues[0]}}
        if continues:
            self.truth.continues[sid] = continues
        calls = self.thread_rows(sid, sid, attrs=attrs, spawn=self.rng.randint(1, 3))
        self._subagents(sid, sid, calls, depth)

    def _subagents(self, sid: str, parent: str, calls: list[str], depth: int) -> None:
        for call in calls:
            agent = self._id("ag")
            self.truth.threads[agent] = ThreadTruth(sid, parent, "subagent")
            more = self.thread_rows(sid, agent, agent_id=agent,
                                    attrs={"claude": {"spawned_by_tool_use_id": call}},
                                    spawn=self.rng.randint(0, 2) if depth > 1 else 0)
            self._subagents(sid, agent, more, depth - 1)

    def orphan(self, sid: str) -> None:
        """A subagent whose spawning call is in no row: counted in the total only."""
        agent = self._id("orphan")
        self.truth.threads[agent] = ThreadTruth(sid, None, "subagent")
        self.thread_rows(sid, agent, agent_id=agent,
                         attrs={"claude": {"spawned_by_tool_use_id": "toolu_missing"}})

    def codex_session(self, root: str, children: int, forked_from: str | None = None) -> None:
        self.truth.threads[root] = ThreadTruth(root, None, "thread")
        self.truth.first[root] = self.clock + timedelta(seconds=1)
        attrs = {"codex": {"forked_from_id": forked_from}} if forked_from else None
        if forked_from:
            self.truth.continues[root] = (forked_from, "fork")
        self.thread_rows(root, root, conversation_id=root, codex=True, attrs=attrs)
        for _ in range(children):
            child = self._id("019a0000-child-")
            self.truth.threads[child] = ThreadTruth(root, root, "child-thread")
            self.thread_rows(root, child, conversation_id=child, parent_thread_id=root,
                             codex=True, attrs={"codex": {"forked_from_id": root}})


# Session i continues session j, and how: a chain 3 -> 2 -> 1 -> 0, and a teammate.
PLAN = {1: (0, "resume"), 2: (1, "branch"), 3: (2, "compaction"), 5: (4, "teammate")}


def claude_id(i: int) -> str:
    return f"c1a0de00-0000-4000-8000-{i:012d}"


def generate(seed: int = 7, sessions: int = 6) -> tuple[list[dict[str, Any]], Truth]:
    """Claude sessions with subagent trees (one with an orphan, some continuing
    others: :data:`PLAN`), Codex sessions with child threads (the second a fork
    of the first), and a duplicated part."""
    g = Gen(seed)
    for i in range(sessions):
        plan = PLAN.get(i)
        g.claude_session(claude_id(i), depth=3,
                         continues=(claude_id(plan[0]), plan[1]) if plan else None)
        if i == 0:
            g.orphan(claude_id(0))
        g.clock += timedelta(hours=6)
    roots = [f"019a0000-root-{i:04d}" for i in range(2)]
    for i, root in enumerate(roots):
        g.codex_session(root, children=2, forked_from=roots[0] if i else None)
        g.clock += timedelta(hours=6)
    g.rows.append(dict(g.rows[5]))  # the same part twice counts once
    return g.rows, g.truth
