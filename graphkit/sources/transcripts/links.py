"""Settle what no single transcript file knows, then shape rows to ``MESSAGES_SCHEMA``.

Runs over every file's pre-rows each time (cached or freshly parsed alike), so a partial
re-read gives the same answer as a full one:

- Claude ``--resume``: a resumed session replays earlier entries (same ``uuid`` and
  timestamp) under its new ``sessionId``. Each message is kept once, in the session that
  first had it, and the new session records ``attributes.claude.resumed_from``. "First had
  it" = among the sessions holding the message, the one that ended earliest (the original
  is a prefix of every resume of it), then the one with fewer messages, then the smaller
  id. See :func:`_settle_duplicates` for ids shared without a replay.
- Claude subagents: ``spawned_by_tool_use_id`` from the sidecar meta, else from a tool
  result naming the agent (``toolUseResult.agentId`` / ``agentId:`` footer, possibly in
  another file, e.g. a nested spawn's result lives in the parent agent's file), else from
  the Workflow run that launched it, else from inline-sidechain inference.
- Codex: ``session_id`` = the thread's own ``session_id``, else the root reached through
  ``parent_thread_id`` links, else the thread itself.
- Per thread: ``message_index`` (order of first appearance) and
  ``conversation_started_at`` (Codex: the ``session_meta`` time; Claude: first message).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from graphkit.core.schema import MESSAGES_SCHEMA, SCHEMA_VERSION
from graphkit.sources.transcripts.buffer import FileParse, dumps, rows_table
from graphkit.sources.transcripts.extras import (
    claude_continuations,
    drop_branch_copies,
    with_extras,
)

GATEWAY_ID = "graphkit-local"
_TS = pa.timestamp("us", tz="UTC")


@dataclass
class ParsedFile:
    """One input file's parse plus its sidecar (Claude ``agent-<id>.meta.json``), if any."""

    path: str
    parse: FileParse
    meta: dict[str, Any] | None = None


def link_files(files: list[ParsedFile], combined: Combiner) -> pa.Table:
    """Return schema rows for all files: Claude rows first, then Codex, each in file order.

    ``combined`` holds the files' pre-rows, handed to it as they were read.
    """
    claude = _link_claude([f for f in files if f.parse.kind == "claude"],
                          combined.table("claude"))
    codex = _link_codex([f for f in files if f.parse.kind == "codex"],
                        combined.table("codex"))
    table = pa.concat_tables([claude, codex])
    part_ids = table["part_id"].to_pylist()
    if len(set(part_ids)) == len(part_ids):
        return table
    seen: set[str] = set()
    mask = []
    for pid in part_ids:  # part_id is the row key: a part read twice is kept once
        mask.append(pid not in seen)
        seen.add(pid)
    return table.filter(pa.array(mask))


class Combiner:
    """Per-file pre-rows joined into a few large tables as the files are read.

    Thousands of small per-file tables would cost far more in Arrow objects (an array,
    its buffers and their bookkeeping per column and file) and in conversion calls than
    in data; so parsed rows wait here as tuples and are converted a batch at a time, and
    tables read back from the index are joined a batch at a time. Each row gets
    ``_file``: its file's position among the files of its kind.
    """

    def __init__(self, batch_rows: int = 20_000, batch_tables: int = 256) -> None:
        self.batch_rows, self.batch_tables = batch_rows, batch_tables
        self._files: dict[str, int] = {}
        self._rows: dict[str, list[tuple[Any, ...]]] = {}   # parsed, not yet converted
        self._row_files: dict[str, list[int]] = {}
        self._tables: dict[str, list[pa.Table]] = {}        # converted, not yet joined
        self._done: dict[str, list[pa.Table]] = {}

    def add(self, parse: FileParse) -> None:
        """Take ``parse``'s pre-rows (it is left without them)."""
        kind = parse.kind
        i = self._files.get(kind, 0)
        self._files[kind] = i + 1
        if parse.table is not None:
            if parse.table.num_rows:
                self._convert(kind)  # rows of earlier files first: keep the file order
                self._tables.setdefault(kind, []).append(parse.table.append_column(
                    "_file", pa.repeat(pa.scalar(i, pa.int32()), parse.table.num_rows)))
        elif parse.rows:
            self._rows.setdefault(kind, []).extend(parse.rows)
            self._row_files.setdefault(kind, []).extend([i] * len(parse.rows))
            if len(self._rows[kind]) >= self.batch_rows:
                self._convert(kind)
        parse.rows, parse.table = [], None
        tables = self._tables.get(kind, [])
        if len(tables) >= self.batch_tables or sum(t.num_rows for t in tables) >= self.batch_rows:
            self._flush(kind)

    def _convert(self, kind: str) -> None:
        rows = self._rows.pop(kind, [])
        files = self._row_files.pop(kind, [])
        if rows:
            table = rows_table(rows).append_column("_file", pa.array(files, pa.int32()))
            self._tables.setdefault(kind, []).append(table)

    def _flush(self, kind: str) -> None:
        tables = self._tables.pop(kind, [])
        if tables:
            self._done.setdefault(kind, []).append(pa.concat_tables(tables).combine_chunks())

    def table(self, kind: str) -> pa.Table | None:
        """All rows of ``kind`` with their ``_file``, or None if there are none."""
        self._convert(kind)
        self._flush(kind)
        done = self._done.get(kind)
        return pa.concat_tables(done) if done else None


def _number(threads: list[Any], mids: list[str], ts: list[int]) -> tuple[list[int], dict[Any, int]]:
    """Return each row's message_index within its thread and each thread's first timestamp."""
    index_of: dict[str, int] = {}
    counters: dict[Any, int] = {}
    start: dict[Any, int] = {}
    out = []
    for key, mid, t in zip(threads, mids, ts, strict=True):
        idx = index_of.get(mid)
        if idx is None:
            idx = index_of[mid] = counters.get(key, 0)
            counters[key] = idx + 1
        out.append(idx)
        first = start.get(key)
        if first is None or t < first:
            start[key] = t
    return out, start


def _settle_duplicates(table: pa.Table) -> tuple[pa.Table, dict[str, str]]:
    """Keep each Claude message once; return the table and session → resumed_from.

    A message id held by several (session, file) pairs has one owner: the session that
    ended earliest (then fewer messages, smaller id, earlier file). Another holder's copy is

    - dropped when it is the same session (one session, two files), or a *replay*: same
      timestamp as the owner's, in a session that owns messages of its own (it continued,
      as a ``--resume`` does); that session then records ``resumed_from``;
    - otherwise kept under ``<session>:<id>`` (ids reused by unrelated sessions, or a plain
      copy of a session that added nothing), so ``part_id`` stays unique.
    """
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


def _link_claude(files: list[ParsedFile], table: pa.Table | None) -> pa.Table:
    if table is None:
        return MESSAGES_SCHEMA.empty_table()
    file_facts = [f.parse.facts for f in files]
    table = drop_branch_copies(table, file_facts)
    table, resumed_from = _settle_duplicates(table)

    meta_of: dict[tuple[str, str], dict[str, Any]] = {}
    run_of: dict[tuple[str, str], str] = {}
    agent_link: dict[tuple[str, str], str] = {}
    run_link: dict[tuple[str, str], str] = {}
    inline: dict[tuple[str, str], str] = {}
    spawns: dict[str, list[Any]] = {}
    for f in files:
        facts = f.parse.facts
        agent = facts.get("agent_id")
        for sess in facts.get("sessions", []):
            if agent and f.meta:
                meta_of.setdefault((sess, agent), f.meta)
            if agent and facts.get("workflow_run_id"):
                run_of.setdefault((sess, agent), facts["workflow_run_id"])
            for named, call in facts.get("inline_agents", {}).items():
                inline.setdefault((sess, named), call)
        for sess, named, call in facts.get("agent_links", []):
            agent_link.setdefault((sess, named), call)
        for sess, run, call in facts.get("run_links", []):
            run_link.setdefault((sess, run), call)
        for call, info in facts.get("spawns", {}).items():
            spawns.setdefault(call, info)

    sessions = table["session_id"].to_pylist()
    agents = table["agent_id"].to_pylist()
    threads = list(zip(sessions, agents, strict=True))
    ts = table["message_created_at"].cast(pa.int64()).to_pylist()
    index, start = _number(threads, table["message_id"].to_pylist(), ts)

    attrs_of: dict[tuple[str, str | None], str | None] = {}
    for sess, agent in start:
        claude: dict[str, Any] = {}
        if agent is None:
            if sess in resumed_from:
                claude["resumed_from"] = resumed_from[sess]
        else:
            meta = meta_of.get((sess, agent)) or {}
            run = run_of.get((sess, agent))
            call = (meta.get("toolUseId") or agent_link.get((sess, agent))
                    or (run_link.get((sess, run)) if run else None) or inline.get((sess, agent)))
            info = spawns.get(call, [None, None]) if call else [None, None]
            claude = {
                "spawned_by_tool_use_id": call,
                "agent_type": meta.get("agentType") or info[0],
                "description": meta.get("description") or info[1],
                "workflow_run_id": run,
            }
            claude = {k: v for k, v in claude.items() if v is not None}
        attrs_of[(sess, agent)] = dumps({"claude": claude}) if claude else None
    attributes = with_extras([attrs_of[k] for k in threads], table, file_facts,
                             claude_continuations(table, file_facts))
    return _finish(table, "anthropic", "claude", index, [start[k] for k in threads],
                   attributes)


def _link_codex(files: list[ParsedFile], table: pa.Table | None) -> pa.Table:
    if table is None:
        return MESSAGES_SCHEMA.empty_table()
    facts_of: dict[str, dict[str, Any]] = {}
    for f in files:
        facts_of.setdefault(f.parse.facts["thread_id"], f.parse.facts)

    def root(thread: str) -> str:
        seen: set[str] = set()
        current = thread
        while True:
            facts = facts_of.get(current)
            if facts is not None and facts.get("session_id"):
                return str(facts["session_id"])
            parent = facts.get("parent_thread_id") if facts else None
            if not parent or parent in seen:
                return current
            seen.add(current)
            current = parent

    convs = table["conversation_id"].to_pylist()
    ts = table["message_created_at"].cast(pa.int64()).to_pylist()
    index, start = _number(convs, table["message_id"].to_pylist(), ts)
    session_of = {c: root(c) for c in start}
    attrs_of = {}
    for conv in start:
        facts = facts_of.get(conv, {})
        if facts.get("started_at") is not None:
            start[conv] = min(start[conv], facts["started_at"])
        attrs = facts.get("attributes") or {}
        attrs_of[conv] = dumps({"codex": attrs}) if attrs else None
    table = table.set_column(table.schema.get_field_index("session_id"), "session_id",
                             pa.array([session_of[c] for c in convs], pa.string()))
    attributes = with_extras([attrs_of[c] for c in convs], table,
                             [f.parse.facts for f in files])
    return _finish(table, "openai", "codex", index, [start[c] for c in convs], attributes)


def _finish(table: pa.Table, provider: str, client: str, index: list[int],
            started: list[int], attributes: list[str | None]) -> pa.Table:
    """Return the pre-rows as ``MESSAGES_SCHEMA`` rows, in schema column order."""
    n = table.num_rows
    computed: dict[str, Any] = {
        "gateway_id": pa.array([GATEWAY_ID] * n, pa.string()),
        "schema_version": pa.array([SCHEMA_VERSION] * n, pa.int32()),
        "provider": pa.array([provider] * n, pa.string()),
        "conversation_source": pa.array([client] * n, pa.string()),
        "client_name": pa.array([client] * n, pa.string()),
        "conversation_started_at": pa.array(started, _TS),
        "message_index": pa.array(index, pa.int32()),
        "part_id": pc.binary_join_element_wise(
            table["message_id"], pc.cast(table["part_index"], pa.string()), "#"),
        "attributes": pa.array(attributes, pa.string()),
        "date": pc.strftime(table["message_created_at"], format="%Y-%m-%d"),
    }
    arrays = []
    for field in MESSAGES_SCHEMA:
        if field.name in computed:
            arrays.append(computed[field.name])
        elif field.name in table.column_names:
            arrays.append(table[field.name])
        else:
            arrays.append(pa.nulls(n, field.type))
    return pa.Table.from_arrays(arrays, schema=MESSAGES_SCHEMA)
