"""Generated Claude Code transcripts and Codex rollouts with known token usage,
files and continuations, shaped like the real ones (compact JSON a line, as the
tools write it; ccusage's reader needs that too).

Claude: one API response split one content block a line (same ``message.id``
and ``requestId``, earlier lines with partial ``output_tokens``), some without
``requestId``; subagents in ``<session>/subagents/agent-<id>.jsonl`` with their
``.meta.json``; a ``--resume`` (a new session replaying the origin's lines:
same uuids and timestamps), a ``/branch`` (copies marked ``forkedFrom``, new
timestamps), a session started from another's compaction
(``compact_boundary`` whose ``logicalParentUuid`` is the other session's last
message) and an agent team (``teamName``/``agentName``).

Codex: cumulative ``token_count`` totals (a repeated event included), a
spawned child thread and a ``codex fork`` whose copied prefix carries the
parent's totals.

The truth is what the writer put in, never read back from the files.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

T0 = datetime(2026, 10, 5, 8, 0, tzinfo=UTC)
FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
          "cache_read_input_tokens")
CWD = "/home/dev/src/shop"
MODELS = ("claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001")


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def write(path: Path, entries: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries),
                    encoding="utf-8")


@dataclass
class Truth:
    """Own usage per (session, thread id), files per (session, thread, path)
    [reads, writes], continuations per session, and every response once."""

    own: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    parents: dict[tuple[str, str], str | None] = field(default_factory=dict)
    files: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    continues: dict[str, tuple[str, str]] = field(default_factory=dict)
    by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    messages: dict[str, int] = field(default_factory=dict)  # per session, each once

    def message(self, session: str) -> None:
        self.messages[session] = self.messages.get(session, 0) + 1

    def add(self, session: str, thread: str, model: str, usage: dict[str, int]) -> None:
        acc = self.own.setdefault((session, thread), dict.fromkeys(FIELDS, 0))
        per = self.by_model.setdefault(model, dict.fromkeys(FIELDS, 0))
        for f in FIELDS:
            acc[f] += usage.get(f, 0)
            per[f] += usage.get(f, 0)


class Claude:
    """Writes Claude sessions under ``root`` (a projects folder)."""

    def __init__(self, root: Path, truth: Truth, seed: int) -> None:
        self.root = root / "-home-dev-src-shop"
        self.truth = truth
        self.rng = random.Random(seed)
        self.clock = T0
        self.n = 0

    def _uuid(self) -> str:
        self.n += 1
        return f"{self.n:08x}-0000-4000-8000-{self.rng.randrange(16**12):012x}"

    def _tick(self) -> datetime:
        self.clock += timedelta(seconds=self.rng.randint(1, 20))
        return self.clock

    def _entry(self, kind: str, session: str, parent: str | None, message: dict[str, Any],
               agent: str | None, **extra: Any) -> dict[str, Any]:
        e = {"parentUuid": parent, "isSidechain": agent is not None, "userType": "external",
             "cwd": CWD, "sessionId": session, "version": "2.0.14", "gitBranch": "main",
             "type": kind, "message": message, "uuid": self._uuid(),
             "timestamp": _iso(self._tick()), **extra}
        if agent:
            e["agentId"] = agent
        return e

    def user(self, out: list[dict[str, Any]], session: str, parent: str | None,
             content: Any, agent: str | None = None, **extra: Any) -> str:
        out.append(self._entry("user", session, parent, {"role": "user", "content": content},
                               agent, **extra))
        self.truth.message(session)
        return str(out[-1]["uuid"])

    def response(self, out: list[dict[str, Any]], session: str, thread: str,
                 parent: str | None, blocks: list[dict[str, Any]],
                 agent: str | None = None) -> str:
        """One API response, one content block a line; usage final on the last line."""
        r = self.rng
        model = r.choice(MODELS)
        final = {"input_tokens": r.randint(1, 900), "output_tokens": r.randint(20, 4000),
                 "cache_creation_input_tokens": r.randint(0, 30000),
                 "cache_read_input_tokens": r.randint(0, 150000)}
        self.truth.add(session, thread, model, final)
        self.truth.message(session)  # one message however many lines
        mid = f"msg_{self.rng.randrange(16**20):020x}"
        req = f"req_{self.rng.randrange(16**16):016x}" if r.random() < 0.85 else None
        for k, block in enumerate(blocks):
            usage = dict(final) if k == len(blocks) - 1 else dict(
                final, output_tokens=r.randint(1, final["output_tokens"]))
            usage["service_tier"] = "standard"
            extra = {"requestId": req} if req else {}
            out.append(self._entry("assistant", session, parent, {
                "model": model, "id": mid, "type": "message", "role": "assistant",
                "content": [block], "stop_reason": None, "usage": usage}, agent, **extra))
            parent = str(out[-1]["uuid"])
        return str(parent)

    def _file_block(self, session: str, thread: str) -> dict[str, Any]:
        name, kind = self.rng.choice(["src/cart.py", "src/api/orders.py", "README.md"]), \
            self.rng.choice(["Read", "Edit", "Write"])
        key = (session, thread, f"{CWD}/{name}")
        self.truth.files.setdefault(key, [0, 0])[0 if kind == "Read" else 1] += 1
        path = name if self.rng.random() < 0.5 else f"{CWD}/{name}"
        return {"type": "tool_use", "id": f"toolu_{self._uuid()[:8]}", "name": kind,
                "input": {"file_path": path, "content": "FILE BODY"}}

    def turns(self, out: list[dict[str, Any]], session: str, thread: str,
              parent: str | None, n: int, agent: str | None = None,
              spawn: list[str] | None = None) -> str | None:
        """``n`` user/assistant turns; each id in ``spawn`` becomes a Task call."""
        for i in range(n):
            parent = self.user(out, session, parent, f"step {i}", agent)
            blocks: list[dict[str, Any]] = [{"type": "text", "text": "working"}]
            if self.rng.random() < 0.5:
                blocks.append(self._file_block(session, thread))
            if spawn and i < len(spawn):
                blocks.append({"type": "tool_use", "id": spawn[i], "name": "Task",
                               "input": {"subagent_type": "Explore", "description": "look",
                                         "prompt": "look around"}})
            parent = self.response(out, session, thread, parent, blocks, agent)
        return parent

    def session(self, sid: str, subagents: int = 2, **extra: Any) -> list[dict[str, Any]]:
        """A main loop spawning ``subagents`` (one of them nested), written to disk."""
        out: list[dict[str, Any]] = []
        self.truth.parents[(sid, sid)] = None
        calls = [f"toolu_spawn_{sid[:8]}_{i}" for i in range(subagents)]
        self.turns(out, sid, sid, None, max(3, subagents), spawn=calls)
        for e in out:
            e.update(extra)
        write(self.root / f"{sid}.jsonl", out)
        for i, call in enumerate(calls):
            self._subagent(sid, sid, call, nested=i == 0)
        return out

    def _subagent(self, sid: str, parent: str, call: str, nested: bool) -> None:
        agent = f"a{self._uuid()[:15]}"
        self.truth.parents[(sid, agent)] = parent
        sub: list[dict[str, Any]] = []
        inner = [f"toolu_inner_{agent}"] if nested else []
        self.turns(sub, sid, agent, None, 2, agent=agent, spawn=inner)
        base = self.root / sid / "subagents" / f"agent-{agent}"
        write(base.with_suffix(".jsonl"), sub)
        base.with_suffix(".meta.json").write_text(json.dumps(
            {"agentType": "Explore", "description": "look", "toolUseId": call}))
        for c in inner:
            self._subagent(sid, agent, c, nested=False)

    def resume(self, origin: list[dict[str, Any]], origin_id: str, sid: str) -> None:
        """``--resume``: the new session replays the origin (same uuids, timestamps)."""
        out = [dict(e, sessionId=sid) for e in origin]
        self.truth.parents[(sid, sid)] = None
        self.turns(out, sid, sid, str(out[-1]["uuid"]), 2)
        write(self.root / f"{sid}.jsonl", out)
        self.truth.continues[sid] = (origin_id, "resume")

    def branch(self, origin: list[dict[str, Any]], origin_id: str, sid: str) -> None:
        """``/branch``: copies marked ``forkedFrom`` (stamped now), then its own turns."""
        out = [dict(e, sessionId=sid, timestamp=_iso(self._tick()),
                    forkedFrom={"sessionId": origin_id, "messageUuid": e["uuid"]})
               for e in origin[: len(origin) // 2 * 2]]
        self.truth.parents[(sid, sid)] = None
        self.turns(out, sid, sid, str(out[-1]["uuid"]), 2)
        write(self.root / f"{sid}.jsonl", out)
        self.truth.continues[sid] = (origin_id, "branch")

    def compacted(self, origin: list[dict[str, Any]], origin_id: str, sid: str) -> None:
        """A session started from the origin's compaction summary."""
        out: list[dict[str, Any]] = []
        boundary = self._entry("system", sid, None, {}, None, subtype="compact_boundary",
                               content="Conversation compacted",
                               logicalParentUuid=origin[-1]["uuid"],
                               compactMetadata={"trigger": "auto", "preTokens": 150000})
        boundary.pop("message")
        out.append(boundary)
        self.truth.message(sid)
        head = self.user(out, sid, str(boundary["uuid"]), "This session is being continued "
                         "from a previous conversation.", isCompactSummary=True)
        self.truth.parents[(sid, sid)] = None
        self.turns(out, sid, sid, head, 2)
        write(self.root / f"{sid}.jsonl", out)
        self.truth.continues[sid] = (origin_id, "compaction")


class Codex:
    """Writes Codex rollouts under ``root`` (a sessions folder)."""

    def __init__(self, root: Path, truth: Truth) -> None:
        self.root = root / "2026" / "10" / "06"
        self.truth = truth
        self.clock = T0 + timedelta(days=1)

    def _ts(self) -> str:
        self.clock += timedelta(seconds=7)
        return _iso(self.clock)

    @staticmethod
    def line(ts: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": ts, "type": kind, "payload": payload}

    def tokens(self, total: dict[str, int]) -> dict[str, Any]:
        return self.line(self._ts(), "event_msg", {"type": "token_count", "info": {
            "total_token_usage": {**total, "total_tokens": total["input_tokens"]
                                  + total["output_tokens"]},
            "last_token_usage": None, "model_context_window": 272000}})

    def turn(self, out: list[dict[str, Any]], session: str, thread: str, n: int,
             total: dict[str, int], model: str, patch: str | None = None) -> dict[str, int]:
        """A user message, an answer (maybe a patch) and a token_count with the new
        cumulative ``total``; the truth gets the difference."""
        ts = self._ts()
        self.truth.messages[session] = self.truth.messages.get(session, 0) + (3 if patch else 2)
        ask = f"do {n} ({thread[-2:]})"  # threads say different things: no copy
        out.append(self.line(ts, "response_item", {"type": "message", "role": "user",
                                                   "content": [{"type": "input_text",
                                                                "text": ask}]}))
        if patch:
            out.append(self.line(self._ts(), "response_item", {
                "type": "custom_tool_call", "name": "apply_patch", "call_id": f"c{n}{thread}",
                "input": f"*** Begin Patch\n*** Update File: {patch}\n@@\n-a\n+b\n*** End Patch"}))
            key = (session, thread, f"{CWD}/{patch}")
            self.truth.files.setdefault(key, [0, 0])[1] += 1
        out.append(self.line(self._ts(), "response_item", {
            "type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": f"done {n} ({thread[-2:]})"}]}))
        grown = {"input_tokens": total["input_tokens"] + 4000 + 100 * n,
                 "cached_input_tokens": total["cached_input_tokens"] + 3000 + 10 * n,
                 "output_tokens": total["output_tokens"] + 250 + n,
                 "reasoning_output_tokens": total["reasoning_output_tokens"] + 64}
        d_in = grown["input_tokens"] - total["input_tokens"]
        d_cached = grown["cached_input_tokens"] - total["cached_input_tokens"]
        self.truth.add(session, thread, model, {
            "input_tokens": d_in - d_cached, "cache_read_input_tokens": d_cached,
            "output_tokens": grown["output_tokens"] - total["output_tokens"]})
        out.append(self.tokens(grown))
        return grown

    def rollout(self, thread: str, *, session: str, model: str, turns: int,
                parent: str | None = None, forked_from: str | None = None,
                copied: list[dict[str, Any]] | None = None,
                total: dict[str, int] | None = None) -> list[dict[str, Any]]:
        meta: dict[str, Any] = {"id": thread, "timestamp": self._ts(), "cwd": CWD,
                                "cli_version": "0.60.0", "originator": "codex_cli_rs"}
        if parent:
            meta["source"] = {"subagent": {"thread_spawn": {"parent_thread_id": parent,
                                                            "depth": 1}}}
        if forked_from:
            meta["forked_from_id"] = forked_from
        out = [self.line(meta["timestamp"], "session_meta", meta)]
        out += copied or []
        out.append(self.line(self._ts(), "turn_context", {"model": model, "cwd": CWD}))
        total = dict(total or dict.fromkeys(
            ("input_tokens", "cached_input_tokens", "output_tokens",
             "reasoning_output_tokens"), 0))
        self.truth.parents[(session, thread)] = parent
        for n in range(turns):
            total = self.turn(out, session, thread, n, total, model,
                              patch="src/cart.py" if n == 0 else None)
            if n == 0:
                out.append(self.tokens(total))  # Codex repeats an event now and then
        path = self.root / f"rollout-2026-10-06T08-00-00-{thread}.jsonl"
        write(path, out)
        return out


def generate(root: Path, seed: int = 11) -> Truth:
    """Claude projects under ``root/claude``, Codex sessions under ``root/codex``."""
    truth = Truth()
    c = Claude(root / "claude", truth, seed)
    ids = [f"5e55{i:04d}-0000-4000-8000-000000000000" for i in range(8)]
    first = c.session(ids[0], subagents=2)
    c.clock += timedelta(hours=2)
    c.resume(first, ids[0], ids[1])
    c.clock += timedelta(hours=2)
    second = c.session(ids[2], subagents=1)
    c.branch(second, ids[2], ids[3])
    c.clock += timedelta(hours=2)
    c.compacted(second, ids[2], ids[4])
    c.clock += timedelta(hours=2)
    c.session(ids[5], subagents=1, teamName="alpha")
    for sid, name in ((ids[6], "indexer"), (ids[7], "reviewer")):
        c.session(sid, subagents=0, teamName="alpha", agentName=name)
        truth.continues[sid] = (ids[5], "teammate")

    x = Codex(root / "codex", truth)
    root_id, child, fork = ("019b0000-0000-7000-8000-00000000000a",
                            "019b0000-0000-7000-8000-00000000000b",
                            "019b0000-0000-7000-8000-00000000000c")
    parent_lines = x.rollout(root_id, session=root_id, model="gpt-5-codex", turns=3)
    end = next(i for i, ln in enumerate(parent_lines) if ln["payload"].get("type") == "token_count")
    copied = parent_lines[1:end + 1]  # the parent's first turn, its token_count included
    first_total = copied[-1]["payload"]["info"]["total_token_usage"]
    base = {k: first_total[k] for k in ("input_tokens", "cached_input_tokens",
                                        "output_tokens", "reasoning_output_tokens")}
    x.rollout(child, session=root_id, model="gpt-5-codex-mini", turns=2, parent=root_id,
              copied=[dict(ln) for ln in copied], total=base)
    x.rollout(fork, session=fork, model="gpt-5-codex", turns=2, forked_from=root_id,
              copied=[dict(ln) for ln in copied], total=base)
    truth.continues[fork] = (root_id, "fork")
    return truth
