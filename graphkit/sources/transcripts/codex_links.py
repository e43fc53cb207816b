"""Codex rows across files: each thread's session and parent.

``session_id`` = the thread's own ``session_id``, else the root reached through
``parent_thread_id`` links, else the thread itself. ``conversation_started_at`` is the
``session_meta`` time.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from graphkit.sources.transcripts.buffer import dumps, loads
from graphkit.sources.transcripts.extras import with_extras
from graphkit.sources.transcripts.links import (
    LinkReport,
    ParsedFile,
    finish_rows,
    number_messages,
)


def link_codex(files: list[ParsedFile], table: pa.Table | None,
               report: LinkReport, keep_file: bool = False) -> pa.Table | None:
    """Codex pre-rows of all files as schema rows, each thread under its session and parent;
    subagent threads with no parent found are marked and reported to ``report``
    (``keep_file``: each row's ``_file`` too; None when there are no rows)."""
    if table is None:
        return None
    facts_of: dict[str, dict[str, Any]] = {}
    for f in files:
        facts_of.setdefault(f.parse.facts["thread_id"], f.parse.facts)
    table = _drop_replayed(table, facts_of)
    convs = table["conversation_id"].to_pylist()
    ts = table["message_created_at"].cast(pa.int64()).to_pylist()
    index, start = number_messages(convs, table["message_id"].to_pylist(), ts)
    state = report.codex_state
    known: dict[str, str] = state.parents if state is not None else {}
    # The state database's spawn edges before any guess; they also name the parents of
    # threads whose rollouts are absent, so a session is found through them.
    told = {c: p for c, p in known.items()
            if c in facts_of and not facts_of[c].get("parent_thread_id")}
    found = {**_find_parents(facts_of, _spans(convs, ts)), **told}
    parents = {**known, **{t: f["parent_thread_id"] for t, f in facts_of.items()
                           if f.get("parent_thread_id")}}
    parents.update(found)
    attrs_of, orphans = {}, []
    for conv in start:
        facts = facts_of.get(conv, {})
        if facts.get("started_at") is not None:
            start[conv] = min(start[conv], facts["started_at"])
        attrs = dict(facts.get("attributes") or {})
        if state is not None:
            _state_names(attrs, state.names.get(conv, {}))
        if conv in parents:
            report.kinds["subagent"] += 1
        elif _is_subagent(facts):
            attrs["agent_kind"] = "orphan"
            report.kinds["orphan"] += 1
            orphans.append({"thread_id": conv, "source": attrs.get("source"),
                            "subagent": attrs.get("subagent")})
        attrs_of[conv] = dumps({"codex": attrs}) if attrs else None
    report.add("orphan-subagent", "{n} Codex subagent thread(s) whose parent thread was "
               "not found (no parent id, spawn event, review call or timing matches)", orphans)
    table = _set_links(table, convs, {c: _root(c, facts_of, parents) for c in start}, found,
                       {c for c in start if _is_subagent(facts_of.get(c, {})) or c in told})
    attributes = with_extras([attrs_of[c] for c in convs], table,
                             [f.parse.facts for f in files])
    return finish_rows(table, "openai", "codex", index, [start[c] for c in convs], attributes,
                       keep_file)


def _state_names(attrs: dict[str, Any], names: dict[str, str]) -> None:
    """A thread's nickname, role and name from the state database, where its rollout
    names none."""
    for key, name in (("agent_nickname", "agent_nickname"), ("agent_role", "agent_role"),
                      ("thread_name", "name"), ("thread_name", "title")):
        if name in names and not attrs.get(key):
            attrs[key] = names[name]


def _is_subagent(facts: dict[str, Any]) -> bool:
    attrs = facts.get("attributes") or {}
    return bool(facts.get("parent_thread_id")) or "subagent" in (
        attrs.get("source"), attrs.get("thread_source"))


def _root(thread: str, facts_of: dict[str, dict[str, Any]], parents: dict[str, str]) -> str:
    """The session of a thread: its own ``session_id``, else its root through parents."""
    seen: set[str] = set()
    current = thread
    while True:
        facts = facts_of.get(current)
        if facts is not None and facts.get("session_id"):
            return str(facts["session_id"])
        parent = parents.get(current)
        if not parent or parent in seen:
            return current
        seen.add(current)
        current = parent


def _spans(convs: list[str], ts: list[int]) -> dict[str, tuple[int, int]]:
    """Each thread's first and last message time."""
    out: dict[str, tuple[int, int]] = {}
    for conv, t in zip(convs, ts, strict=True):
        lo, hi = out.get(conv, (t, t))
        out[conv] = (min(lo, t), max(hi, t))
    return out


def _find_parents(facts_of: dict[str, dict[str, Any]],
                  spans: dict[str, tuple[int, int]]) -> dict[str, str]:
    """Parents of subagent threads whose rollout names none, by the first rule that
    singles one out: a spawn event naming the thread, its ``session_id`` naming another
    thread, a review the other thread ran when this one started, that thread being at work
    (same cwd) when this one started."""
    spawner: dict[str, set[str]] = {}
    for thread, facts in facts_of.items():
        for child in facts.get("spawned_threads", []):
            spawner.setdefault(child, set()).add(thread)
    found: dict[str, str] = {}
    for thread, facts in facts_of.items():
        if facts.get("parent_thread_id") or not _is_subagent(facts):
            continue
        began, cwd = facts.get("started_at"), facts.get("cwd")
        others = [t for t in facts_of if t != thread]
        review = (facts.get("attributes") or {}).get("subagent") == "review"
        rules = [
            sorted(spawner.get(thread, set()) - {thread}),
            [s for s in [facts.get("session_id")] if s and s != thread and s in facts_of],
            # A review run starts as its parent enters review mode: within 100 ms (either
            # side: the event may be written just after the run's first line), same cwd.
            _entered_review(facts_of, others, began, cwd) if review else [],
            [t for t in others if began is not None and any(
                lo <= began <= hi for lo, hi in facts_of[t].get("review_windows", []))
             and not (review and cwd and facts_of[t].get("cwd") not in (None, cwd))],
            [t for t in others if began is not None and t in spans
             and spans[t][0] <= began <= spans[t][1] and facts_of[t].get("cwd") == cwd
             and not _is_subagent(facts_of[t])],
        ]
        for candidates in rules:
            if len(candidates) == 1:
                found[thread] = candidates[0]
                break
    return found


REVIEW_GAP_US = 100_000  # how near a review run's start its parent enters review mode


def _entered_review(facts_of: dict[str, dict[str, Any]], others: list[str], began: Any,
                    cwd: Any) -> list[str]:
    """The threads of ``cwd`` that entered review mode within 100 ms of ``began``."""
    if not isinstance(began, int):
        return []
    return [t for t in others if facts_of[t].get("cwd") == cwd and any(
        isinstance(lo, int) and abs(began - lo) <= REVIEW_GAP_US
        for lo, _ in facts_of[t].get("review_windows", []))]


def _set_links(table: pa.Table, convs: list[str], session_of: dict[str, str],
               found: dict[str, str], subagents: set[str]) -> pa.Table:
    """Rows with their session, the parents found here, and subagent threads marked."""
    def put(t: pa.Table, name: str, values: list[Any], kind: pa.DataType) -> pa.Table:
        return t.set_column(t.schema.get_field_index(name), name, pa.array(values, kind))

    table = put(table, "session_id", [session_of[c] for c in convs], pa.string())
    if not subagents:
        return table
    parents = table["parent_thread_id"].to_pylist()
    sidechain = table["is_sidechain"].to_pylist()
    user_type = table["user_type"].to_pylist()
    table = put(table, "parent_thread_id", [found.get(c, p) for c, p in zip(
        convs, parents, strict=True)], pa.string())
    table = put(table, "is_sidechain", [True if c in subagents else s for c, s in zip(
        convs, sidechain, strict=True)], pa.bool_())
    return put(table, "user_type", [(u or "subagent") if c in subagents else u for c, u in zip(
        convs, user_type, strict=True)], pa.string())


def _drop_replayed(table: pa.Table, facts_of: dict[str, dict[str, Any]]) -> pa.Table:
    """A forked or spawned thread without the messages it replayed from its source thread.

    Codex writes a fork's copy of the source's history into the new rollout, stamped at
    fork time; when no ordinal or spawn call marks where it ends, the copy is found by
    content: the fork's leading messages (role, text and call id) that run in order with a
    stretch of the source's messages (:func:`_run`: past what a fork leaves out of its
    copy) belong to the source, which has them already. A thread its
    parent's ``spawn_agent`` call started without the parent's history (see
    :func:`_fresh_spawns`) copied nothing: its first message may repeat the parent's words.
    """
    sources = {}
    for thread, facts in facts_of.items():
        source = (facts.get("attributes") or {}).get("forked_from_id") or facts.get(
            "parent_thread_id")
        if facts.get("paginated"):
            continue  # its rollout holds only its own records: nothing replayed
        if source and source != thread and source in facts_of:
            sources[thread] = source
    if not sources:
        return table
    convs = table["conversation_id"].to_pylist()
    mids = table["message_id"].to_pylist()
    # A tool call or output says its call id too: a copy keeps the source's ids, the
    # thread's own calls have new ones (two calls with no text were the same "words").
    said = list(zip(table["role"].to_pylist(), table["content_text"].to_pylist(),
                    table["tool_call_id"].to_pylist(), strict=True))
    messages: dict[str, list[tuple[str, Any]]] = {}
    seen: set[tuple[str, str]] = set()
    for conv, mid, what in zip(convs, mids, said, strict=True):
        if (conv, mid) not in seen:  # a message once, by its first part
            seen.add((conv, mid))
            messages.setdefault(conv, []).append((mid, what))
    drop: set[tuple[str, str]] = set()
    fresh = _fresh_spawns(table, facts_of, sources)
    for thread, source in sources.items():
        if thread in fresh:
            continue
        mine = [what for _, what in messages.get(thread, [])]
        theirs = [what for _, what in messages.get(source, [])]
        replayed = max((_run(mine, theirs, j) for j, what in enumerate(theirs)
                        if mine and what == mine[0]), default=0)
        drop.update((thread, mid) for mid, _ in messages.get(thread, [])[:replayed])
    if not drop:
        return table
    return table.filter(pa.array([(c, m) not in drop for c, m in zip(convs, mids,
                                                                      strict=True)]))


# Roles a fork always copies; codex-rs (``keep_forked_rollout_item``) leaves reasoning,
# tool calls and outputs, and assistant messages other than final answers out of the copy.
_ALWAYS_COPIED = ("user", "developer", "system")


def _run(mine: list[Any], theirs: list[Any], at: int) -> int:
    """How many of ``mine`` match ``theirs`` from position ``at`` on, in order: a source
    message a fork may leave out of its copy (not in :data:`_ALWAYS_COPIED`) is stepped
    over, any other mismatch ends the copy."""
    n, j = 0, at
    while n < len(mine) and j < len(theirs):
        if mine[n] == theirs[j]:
            n += 1
        elif theirs[j][0] in _ALWAYS_COPIED:
            break
        j += 1
    return n


SPAWN_TOOL = "spawn_agent"


def _fresh_spawns(table: pa.Table, facts_of: dict[str, dict[str, Any]],
                  sources: dict[str, str]) -> set[str]:
    """Threads whose source spawned them by a ``spawn_agent`` call that asked for none of
    its history (:func:`_asks_for_history`): Codex starts such a thread empty, with the
    call's message as its first input, so nothing in it is a copy.

    The call is the one the source's events name with the thread's id
    (``collab_agent_spawn_end``, a started ``sub_agent_activity``: ``spawn_calls`` of its
    facts), else the one whose output names the thread's id (``{"agent_id": ...}``, or
    ``agent_id: ...`` in early versions); a thread whose call is not found keeps the
    content match.
    """
    named = table["tool_name"]
    if named.null_count == len(named):
        return set()
    picked = table.filter(pc.fill_null(pc.equal(named, SPAWN_TOOL), False))
    if not picked.num_rows:
        return set()
    args_of: dict[tuple[str, str], Any] = {}
    said: dict[str, list[tuple[str, str]]] = {}  # source -> (call id, output text)
    for conv, ptype, call, args, text in zip(
            picked["conversation_id"].to_pylist(), picked["part_type"].to_pylist(),
            picked["tool_call_id"].to_pylist(), picked["tool_args"].to_pylist(),
            picked["content_text"].to_pylist(), strict=True):
        if not isinstance(call, str):
            continue
        if ptype == "tool_call":
            args_of[(conv, call)] = args
        elif ptype == "tool_result" and isinstance(text, str):
            said.setdefault(conv, []).append((call, text))
    fresh = set()
    for thread, source in sources.items():
        call = (facts_of[source].get("spawn_calls") or {}).get(thread)
        if call is None:
            calls = {c for c, text in said.get(source, []) if thread in text}
            call = calls.pop() if len(calls) == 1 else None
        if call is not None and (source, call) in args_of and not _asks_for_history(
                args_of[(source, call)]):
            fresh.add(thread)
    return fresh


def _asks_for_history(args: Any) -> bool:
    """Whether ``spawn_agent`` arguments ask for the child to start from the caller's
    history (codex-rs: ``fork_context: true``, default false; MultiAgentV2's calls, which
    name a ``task_name``, fork unless ``fork_turns`` is ``"none"``, default ``"all"``).
    Arguments that cannot be read are taken to ask (the content match then decides)."""
    try:
        doc = loads(args) if isinstance(args, str) else None
    except (ValueError, RecursionError):
        return True
    if not isinstance(doc, dict):
        return True
    if "task_name" in doc:
        turns = doc.get("fork_turns")
        return not (isinstance(turns, str) and turns.strip().lower() == "none")
    return doc.get("fork_context") is True
