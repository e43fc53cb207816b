"""Claude rows across files: resumed sessions, subagents' spawning calls and kinds.

- ``--resume``: a resumed session replays earlier entries (same ``uuid`` and timestamp)
  under its new ``sessionId``. Each message is kept once, in the session that first had
  it, and the new session records ``attributes.claude.resumed_from``. "First had it" =
  among the sessions holding the message, the one that ended earliest (the original is a
  prefix of every resume of it), then the one with fewer messages, then the smaller id.
  See :func:`settle_duplicates` for ids shared without a replay.
- A subagent's ``spawned_by_tool_use_id``: from the sidecar meta, else from a tool result
  naming the agent (``toolUseResult.agentId`` / ``agentId:`` footer, possibly in another
  file, e.g. a nested spawn's result lives in the parent agent's file), else from the
  Workflow run that launched it, else from inline-sidechain inference.
- Threads that are not spawned subagents say what they are in
  ``attributes.claude.agent_kind``: ``warmup`` (2.0.x startup agents, first prompt
  "Warmup"), ``compaction`` (``agent-acompact-*`` runs summarising the session) or
  ``orphan`` (no spawning call found, reported).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.sources.transcripts.buffer import dumps, dumps_decoded
from graphkit.sources.transcripts.claude import claude_layout
from graphkit.sources.transcripts.claude_records import (
    background_pairs,
    drop_background_copies,
    side_run_kind,
    with_cost_state,
    workspace_columns,
)
from graphkit.sources.transcripts.extras import (
    claude_continuations,
    drop_branch_copies,
    with_extras,
)
from graphkit.sources.transcripts.links import (
    ColumnCodes,
    LinkReport,
    ParsedFile,
    finish_rows,
    number_threads,
)


def _held_once(table: pa.Table, codes: ColumnCodes | None = None) -> bool:
    """Whether every message id sits in one (session, file) only (the usual case), told
    by array operations instead of a Python pass over the rows: each row's session and
    file equal those of its message id's first row (``codes``: of ``table``'s columns)."""
    mids = table["message_id"]
    if not table.num_rows or mids.null_count or table["session_id"].null_count:
        return False
    codes = ColumnCodes.of(table, codes)
    mid, _ = codes("message_id")
    session, _ = codes("session_id")
    file = table["_file"].to_numpy()
    _, first = np.unique(mid, return_index=True)  # codes are 0..k-1: first[code]
    at = first[mid]
    return bool((session[at] == session).all() and (file[at] == file).all())


def settle_duplicates(table: pa.Table, codes: ColumnCodes | None = None
                      ) -> tuple[pa.Table, dict[str, str]]:
    """Keep each Claude message once; return the table and session → resumed_from.

    A message id held by several (session, file) pairs has one owner: the session that
    ended earliest (then fewer messages, smaller id, earlier file). Another holder's copy is

    - dropped when it is the same session (one session, two files), or a *replay*: same
      timestamp as the owner's, in a session that owns messages of its own (it continued,
      as a ``--resume`` does); that session then records ``resumed_from``;
    - otherwise kept under ``<session>:<id>`` (ids reused by unrelated sessions, or a plain
      copy of a session that added nothing), so ``part_id`` stays unique.
    """
    if _held_once(table, codes):
        return table, {}  # the same table: ``codes`` still hold for it
    sessions = table["session_id"].to_pylist()
    mids = table["message_id"].to_pylist()
    files = table["_file"].to_pylist()
    ts = table["message_created_at"].cast(pa.int64()).to_pylist()
    first: dict[str, tuple[str, int]] = {}
    dups: dict[str, dict[tuple[str, int], int]] = {}
    for mid, sess, f, t in zip(mids, sessions, files, ts, strict=True):
        seen = first.get(mid)
        if seen is None:
            first[mid] = (sess, f)
        elif seen != (sess, f):
            holders = dups.setdefault(mid, {})
            holders.setdefault(seen, -1)
            holders.setdefault((sess, f), t)
    if not dups:
        return table, {}
    own = {sess for mid, sess in zip(mids, sessions, strict=True) if mid not in dups}
    stats = table.group_by("session_id").aggregate(
        [("message_created_at", "max"), ("message_id", "count_distinct")])
    rank = {
        s: (int(end.value), n, s) for s, end, n in zip(
            stats["session_id"].to_pylist(), stats["message_created_at_max"],
            stats["message_id_count_distinct"].to_pylist(), strict=True)
    }
    first_ts: dict[tuple[str, str, int], int] = {}
    for mid, sess, f, t in zip(mids, sessions, files, ts, strict=True):
        if mid in dups:
            first_ts.setdefault((mid, sess, f), t)
    owners = {mid: min(holders, key=lambda sf: (*rank[sf[0]], sf[1]))
              for mid, holders in dups.items()}
    own.update(owner[0] for owner in owners.values())  # sessions that added something
    action: dict[tuple[str, str, int], str] = {}  # (mid, session, file) -> drop|qualify
    latest: dict[str, tuple[int, str]] = {}
    for mid, holders in dups.items():
        owner = owners[mid]
        owner_ts = first_ts[(mid, *owner)]
        for sess, f in holders:
            if (sess, f) == owner:
                continue
            t = first_ts[(mid, sess, f)]
            if sess == owner[0]:
                action[(mid, sess, f)] = "drop"
            elif t == owner_ts and sess in own:
                action[(mid, sess, f)] = "drop"
                # The latest replayed message names the session this one continues.
                if sess not in latest or t > latest[sess][0]:
                    latest[sess] = (t, owner[0])
            else:
                action[(mid, sess, f)] = "qualify"
    qualified = {(sess, mid) for (mid, sess, _), a in action.items() if a == "qualify"}
    requalify = {sess for sess, _ in qualified}
    prevs = table["previous_message_id"].to_pylist()
    mask, new_mids, new_prevs = [], [], []
    for mid, sess, f, prev in zip(mids, sessions, files, prevs, strict=True):
        a = action.get((mid, sess, f))
        mask.append(a != "drop")
        new_mids.append(f"{sess}:{mid}" if a == "qualify" else mid)
        if sess in requalify and prev and prev != "[]":
            ids = [f"{sess}:{p}" if (sess, p) in qualified else p for p in json.loads(prev)]
            prev = dumps(ids)
        new_prevs.append(prev)
    table = table.set_column(table.schema.get_field_index("message_id"), "message_id",
                             pa.array(new_mids, pa.string()))
    table = table.set_column(table.schema.get_field_index("previous_message_id"),
                             "previous_message_id", pa.array(new_prevs, pa.string()))
    return table.filter(pa.array(mask)), {s: o for s, (_, o) in latest.items()}


@dataclass
class _Facts:
    """The cross-file facts of all Claude files, keyed by (session, agent) or call."""

    meta_of: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    run_of: dict[tuple[str, str], str] = field(default_factory=dict)
    agent_link: dict[tuple[str, str], str] = field(default_factory=dict)
    run_link: dict[tuple[str, str], str] = field(default_factory=dict)
    inline: dict[tuple[str, str], str] = field(default_factory=dict)
    spawns: dict[str, list[Any]] = field(default_factory=dict)
    warmups: set[tuple[str, str]] = field(default_factory=set)
    # (session, agent) -> the call a fork subagent's fork-context-ref places it under
    forks: dict[tuple[str, str], str] = field(default_factory=dict)

    @classmethod
    def of(cls, files: list[ParsedFile]) -> _Facts:
        out = cls()
        for f in files:
            facts = f.parse.facts
            agent = facts.get("agent_id")
            for sess in facts.get("sessions", []):
                if agent and f.meta:
                    out.meta_of.setdefault((sess, agent), f.meta)
                if agent and facts.get("workflow_run_id"):
                    out.run_of.setdefault((sess, agent), facts["workflow_run_id"])
                if agent and facts.get("warmup"):
                    out.warmups.add((sess, agent))
                for named, call in facts.get("inline_agents", {}).items():
                    out.inline.setdefault((sess, named), call)
            for sess, named, call in facts.get("agent_links", []):
                out.agent_link.setdefault((sess, named), call)
            for sess, run, call in facts.get("run_links", []):
                out.run_link.setdefault((sess, run), call)
            for call, info in facts.get("spawns", {}).items():
                out.spawns.setdefault(call, info)
        return out

    def agent_attributes(self, sess: str, agent: str) -> dict[str, Any]:
        """``attributes.claude`` of a subagent thread: its spawning call, type, kind."""
        meta = self.meta_of.get((sess, agent)) or {}
        run = self.run_of.get((sess, agent))
        call = (meta.get("toolUseId") or self.agent_link.get((sess, agent))
                or (self.run_link.get((sess, run)) if run else None)
                or self.inline.get((sess, agent)) or self.forks.get((sess, agent)))
        info = self.spawns.get(call, [None, None]) if call else [None, None]
        kind = side_run_kind(agent)  # Claude's own runs (compaction, prompt suggestion)
        if kind is not None:
            pass  # no spawning call: no one's subagent
        elif call is None:
            kind = "warmup" if (sess, agent) in self.warmups else "orphan"
        claude = {
            "spawned_by_tool_use_id": call,
            "agent_type": meta.get("agentType") or info[0] or (
                kind if kind != "orphan" else None),
            "description": meta.get("description") or info[1],
            "workflow_run_id": run,
            "agent_kind": kind,
        }
        return {k: v for k, v in claude.items() if v is not None}


def link_claude(files: list[ParsedFile], table: pa.Table | None,
                report: LinkReport, keep_file: bool = False) -> pa.Table | None:
    """Claude pre-rows of all files as schema rows, linked; what was found goes to ``report``
    (``keep_file``: each row's ``_file`` too; None when there are no rows)."""
    if table is None:
        return None
    file_facts = [f.parse.facts for f in files]
    table = drop_branch_copies(table, file_facts)
    background = background_pairs(file_facts)
    table = one_session_per_agent_file(drop_background_copies(table, background), files)
    codes = ColumnCodes(table)
    table, resumed_from = settle_duplicates(table, codes)
    facts = _Facts.of(files)
    facts.forks = fork_calls(table, files, facts.spawns)
    ts = table["message_created_at"].cast(pa.int64()).to_numpy(zero_copy_only=False)
    # The codes are reused only if settling kept the table as it was (number_threads checks).
    threads = number_threads(table, ("session_id", "agent_id"), ts, codes)

    attrs_of: dict[tuple[str, str | None], str | None] = {}
    for sess, agent in threads.keys:
        if agent is None:
            claude = {"resumed_from": resumed_from[sess]} if sess in resumed_from else {}
        else:
            claude = facts.agent_attributes(sess, agent)
            report.kinds[claude.get("agent_kind", "subagent")] += 1
        attrs_of[(sess, agent)] = dumps_decoded({"claude": claude}) if claude else None
    _report_threads(attrs_of, report, present_sessions(files))
    per_thread = np.empty(len(attrs_of), dtype=object)
    per_thread[:] = list(attrs_of.values())
    continues = claude_continuations(table, file_facts)
    continues.update((new, (origin, "background")) for new, origin in background.items())
    attributes = with_cost_state(
        with_extras(per_thread[threads.code].tolist(), table, file_facts, continues), table,
        file_facts)
    return workspace_columns(finish_rows(table, "anthropic", "claude", threads.index,
                                         threads.started[threads.code], attributes,
                                         keep_file), file_facts)


def _report_threads(attrs_of: dict[tuple[str, str | None], str | None],
                    report: LinkReport, present: set[str] | None = None) -> None:
    """Findings: subagents with no spawning call, subagents whose session has no main
    transcript among the inputs, or one with no messages (``attrs_of``: every thread's
    attributes; ``present``: sessions whose own transcript was read)."""
    mains = {sess for sess, agent in attrs_of if agent is None}
    orphans, lost, empty = [], [], []
    for (sess, agent), attrs in sorted(attrs_of.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        if agent is None:
            continue
        if sess not in mains and present and sess in present:
            empty.append({"session_id": sess, "agent_id": agent})
        elif sess not in mains:
            lost.append({"session_id": sess, "agent_id": agent})
        elif attrs and '"agent_kind":"orphan"' in attrs:
            orphans.append({"session_id": sess, "agent_id": agent})
    report.add("missing-session", "{n} Claude subagent(s) whose session transcript "
               "(<session>.jsonl) is not among the inputs", lost)
    report.add("session-without-messages", "{n} Claude subagent(s) whose session "
               "transcript (<session>.jsonl) is among the inputs but has no messages (only "
               "summaries or bookkeeping records)", empty)
    report.add("orphan-subagent", "{n} Claude subagent(s) with no spawning call found (no "
               "sidecar toolUseId, no result naming the agent, no matching prompt)", orphans)


def present_sessions(files: list[ParsedFile]) -> set[str]:
    """Sessions whose own transcript (``<session>.jsonl``, not an agent file) was read,
    messages or none."""
    out = set()
    for f in files:
        layout = claude_layout(Path(f.path))
        if layout.agent_id is None:
            out.add(layout.session_hint)
            out.update(f.parse.facts.get("sessions", []))
    return out


def one_session_per_agent_file(table: pa.Table, files: list[ParsedFile]) -> pa.Table:
    """An agent file is one agent of one session: rows of an agent file whose lines name
    another session (a 2.0.x "Warmup" agent file carries the ids of both the session it
    started in and the one that went on) take the file's first session."""
    moved = {i: sessions[0] for i, f in enumerate(files)
             if f.parse.facts.get("agent_id") and len(
                 sessions := f.parse.facts.get("sessions", [])) > 1}
    if not moved or not table.num_rows:
        return table
    file_of = table.column("_file").to_pylist()
    now = table.column("session_id").to_pylist()
    fixed = [moved.get(f, s) for f, s in zip(file_of, now, strict=True)]
    if fixed == now:
        return table
    at = table.schema.get_field_index("session_id")
    return table.set_column(at, table.schema.field("session_id"), pa.array(fixed, pa.string()))


def fork_calls(table: pa.Table, files: list[ParsedFile],
               spawns: dict[str, list[Any]]) -> dict[tuple[str, str], str]:
    """(session, agent) → spawning call of each fork subagent whose file opens with a
    ``fork-context-ref``: the latest ``subagent_type: "fork"`` call (else any spawning
    call) of the thread holding its ``parentLastUuid``, made at or before the fork's
    first line, that no other fork took."""
    refs = [(f.parse.facts["fork_ref"], f.parse.facts.get("agent_id"),
             f.parse.facts.get("sessions", [])) for f in files if f.parse.facts.get("fork_ref")]
    if not refs or not table.num_rows:
        return {}
    wanted = {r["parent_last_uuid"] for r, _, _ in refs if r.get("parent_last_uuid")}
    uuid_col, parent_col = table.column("provider_uuid"), table.column("parent_uuid")
    hit = pc.fill_null(pc.or_(pc.is_in(uuid_col, pa.array(sorted(wanted), pa.string())),
                              pc.is_in(parent_col, pa.array(sorted(wanted), pa.string()))),
                       False)
    holder: dict[str, tuple[str, str | None]] = {}
    for row in table.filter(hit).select(["provider_uuid", "parent_uuid", "session_id",
                                          "agent_id"]).to_pylist():
        for u in (row["provider_uuid"], row["parent_uuid"]):
            if u in wanted:
                holder.setdefault(u, (row["session_id"], row["agent_id"]))
    calls = table.filter(pc.fill_null(pc.is_in(table.column("tool_call_id"), pa.array(
        sorted(spawns), pa.string())), False)).select(
        ["tool_call_id", "session_id", "agent_id", "message_created_at", "part_type"])
    starts = _agent_starts(table, {ref.get("agent_id") or agent for ref, agent, _ in refs})
    out: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    for ref, agent, sessions in sorted(refs, key=lambda r: starts.get(
            r[0].get("agent_id") or r[1] or "", 0)):
        place = holder.get(ref.get("parent_last_uuid") or "")
        name = ref.get("agent_id") or agent
        if place is None or not name:
            continue
        found = _fork_call(calls, place, spawns, taken, starts.get(name))
        if found is not None:
            taken.add(found)
            for s in sessions or [place[0]]:
                out[(s, name)] = found
    return out


def _agent_starts(table: pa.Table, agents: set[Any]) -> dict[str, Any]:
    """Each agent's first message time (comparable values)."""
    names = sorted(a for a in agents if isinstance(a, str))
    rows = table.filter(pc.fill_null(pc.is_in(table.column("agent_id"),
                                              pa.array(names, pa.string())), False))
    out: dict[str, Any] = {}
    for a, t in zip(rows.column("agent_id").to_pylist(),
                    rows.column("message_created_at").to_pylist(), strict=True):
        if a not in out or t < out[a]:
            out[a] = t
    return out


def _fork_call(calls: pa.Table, place: tuple[str, str | None], spawns: dict[str, list[Any]],
               taken: set[str], start: Any) -> str | None:
    rows = [r for r in calls.to_pylist() if r["part_type"] == "tool_call"
            and (r["session_id"], r["agent_id"]) == place and r["tool_call_id"] not in taken
            and (start is None or r["message_created_at"] <= start)]
    forks = [r for r in rows if (spawns.get(r["tool_call_id"]) or [None])[0] == "fork"]
    pick = sorted(forks or rows, key=lambda r: r["message_created_at"])
    return pick[-1]["tool_call_id"] if pick else None
