"""Claude Code's session records (2.1.2xx–3xx) that hold no message but say something of
the session: read into a file's facts, settled across files in :mod:`.claude_links`.

- ``continued-in`` ``{sessionId, continuedInSessionId}``: background mode (``/background``,
  ``--bg``, ``/fork``) moved the conversation to a new session id; the new session
  replays the old one's messages (same ``uuid``, lines marked ``sessionKind: "bg"``).
- ``cost-state`` ``{sessionId, totalCostUSD, modelUsage{model: {costUSD, ...}}}``: Claude
  Code's own running cost of the session (cumulative: the last one counts).
- ``fork-context-ref`` ``{agentId, parentSessionId, parentLastUuid, contextLength}``: the
  first line of a fork subagent's file (``subagent_type: "fork"``, on by default since
  2.1.232): it inherits its parent's conversation up to ``parentLastUuid``.
- ``relocated`` ``{sessionId, relocatedCwd}`` and ``worktree-state``
  ``{sessionId, worktreeSession: {worktreePath, originalCwd, ...}}``: where the session
  works.

Shapes as public readers of these files take them (e.g. agentsview's format notes, a Go
reader's ``KnownKinds`` of 2.1.288, orca's continuation tracker); see
``tests/fixtures/shaped/README.md``.
"""

from __future__ import annotations

import math
from typing import Any

CONTINUED_IN = "continued-in"
COST_STATE = "cost-state"
FORK_REF = "fork-context-ref"
RELOCATED = "relocated"
WORKTREE = "worktree-state"
SESSION_RECORDS = frozenset({CONTINUED_IN, COST_STATE, FORK_REF, RELOCATED, WORKTREE})
# Records that hold nothing graphkit uses (bookkeeping of Claude Code 2.1.2xx–3xx: frame
# and latch state, file-history deltas, background job lifecycle, request shapes, ...):
# known, read as nothing.
QUIET_RECORDS = frozenset({
    "frame-link", "atis-latch", "file-history-delta", "result", "started", "launched",
    "failed", "dev-mods", "api-request-shape", "api-request-blob", "api-request",
    "ended-by-model", "artifact-comment-monitor", "artifact-autoreact-ledger",
    "history-suppression", "memory-mode", "observer-ref",
})


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: Any) -> float | None:
    """``value`` as a finite float, or None (no number, NaN, infinite, or an integer past
    a float's range: JSON has no limit on digits)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


# The most a cost-state may say a session cost: what a float holds exactly (2^53 - 1,
# the bound the graph's sums take from their rows); a larger figure is damage, not a bill.
_LARGEST_COST = 2**53 - 1

# cost-state's modelUsage fields -> the rows' names (Claude's cost of a model, and the
# tokens and web searches it counted for it).
_MODEL_USAGE = (("costUSD", "cost_usd"), ("inputTokens", "input_tokens"),
                ("outputTokens", "output_tokens"),
                ("cacheCreationInputTokens", "cache_creation_input_tokens"),
                ("cacheReadInputTokens", "cache_read_input_tokens"),
                ("webSearchRequests", "web_search_requests"))


def _model_usage(u: dict[str, Any]) -> dict[str, float]:
    """One model's entry of a cost-state's ``modelUsage``: the numbers it gives (a
    negative cost or count, or one past the bound, is none: nothing is said of it)."""
    out = {}
    for key, name in _MODEL_USAGE:
        value = _number(u.get(key))
        if value is not None and 0 <= value <= _LARGEST_COST:
            out[name] = value if name == "cost_usd" else int(value)
    return out


def session_record(facts: dict[str, Any], line: int, e: dict[str, Any], etype: str,
                   session: str) -> str | None:
    """Note one session record in ``facts`` (``session``: the file's session, for a
    record naming none); the reason to skip it when it cannot be read, else None."""
    if etype == CONTINUED_IN:
        new = _text(e.get("continuedInSessionId"))
        if new is None:
            return "continued-in record without a continuedInSessionId"
        facts.setdefault("continued_in", []).append([_text(e.get("sessionId")) or session,
                                                     new])
    elif etype == COST_STATE:
        total = _number(e.get("totalCostUSD"))
        if total is None or not 0 <= total <= _LARGEST_COST:
            return (f"cost-state record without a totalCostUSD from 0 to {_LARGEST_COST:,}")
        usage = e.get("modelUsage")
        models = {m: _model_usage(u) for m, u in usage.items()
                  if isinstance(m, str) and isinstance(u, dict)} \
            if isinstance(usage, dict) else {}
        facts.setdefault("cost_state", {})[_text(e.get("sessionId")) or session] = {
            "total_cost_usd": total, "models": models, "line": line}
    elif etype == FORK_REF:
        facts["fork_ref"] = {"agent_id": _text(e.get("agentId")),
                             "parent_session_id": _text(e.get("parentSessionId")),
                             "parent_last_uuid": _text(e.get("parentLastUuid")),
                             "context_length": e.get("contextLength")
                             if isinstance(e.get("contextLength"), int) else None}
    else:
        _workspace(facts, e, etype, session)
    return None


def _workspace(facts: dict[str, Any], e: dict[str, Any], etype: str, session: str) -> None:
    """``relocated`` and ``worktree-state``: the session's cwd (the worktree it works in)
    and repository root (the checkout the worktree was made from)."""
    place = facts.setdefault("workspace", {}).setdefault(
        _text(e.get("sessionId")) or session, {})
    if etype == RELOCATED:
        cwd = _text(e.get("relocatedCwd"))
        if cwd:
            place["cwd"] = cwd
        return
    tree = e.get("worktreeSession")
    if isinstance(tree, dict):
        for key, name in (("worktreePath", "cwd"), ("originalCwd", "repo_root")):
            value = _text(tree.get(key))
            if value:
                place[name] = value


# -- across files (called by :mod:`.claude_links`) ---------------------------------------
def background_pairs(facts: list[dict[str, Any]]) -> dict[str, str]:
    """New session → the session it continues in background mode (``continued-in``
    records and ``~/.claude/jobs/<id>/state.json``'s fork fields, see :mod:`.jobs`)."""
    out: dict[str, str] = {}
    for fact in facts:
        for origin, new in fact.get("continued_in", []):
            if isinstance(origin, str) and isinstance(new, str) and origin != new:
                out.setdefault(new, origin)
    return out


def drop_background_copies(table: Any, pairs: dict[str, str]) -> Any:
    """Rows of a background continuation that replay its origin's messages (the same
    ``uuid`` as a row of the origin session): the origin's, dropped here whatever
    their timestamps, so a replayed prefix counts once (its usage too: a dropped row's
    usage has no row to sit on)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pairs or not table.num_rows:
        return table
    sessions = table.column("session_id")
    involved = pc.is_in(sessions, pa.array(sorted({*pairs, *pairs.values()}), pa.string()))
    rows = pc.indices_nonzero(pc.fill_null(involved, False))
    if not len(rows):
        return table
    sess = sessions.take(rows).to_pylist()
    uuids = table.column("provider_uuid").take(rows).to_pylist()
    held: dict[str, set[str]] = {}
    for s, u in zip(sess, uuids, strict=True):
        if u:
            held.setdefault(s, set()).add(u)
    drop = [i for i, s, u in zip(rows.to_pylist(), sess, uuids, strict=True)
            if u and s in pairs and u in held.get(pairs[s], ())]
    if not drop:
        return table
    keep = pc.invert(pc.is_in(pa.array(range(table.num_rows), pa.int64()),
                              pa.array(drop, pa.int64())))
    return table.filter(keep)


def workspace_columns(table: Any, facts: list[dict[str, Any]]) -> Any:
    """Schema rows with ``cwd`` and ``repo_root`` of sessions a ``relocated`` or
    ``worktree-state`` record places, where the rows have none."""
    import pyarrow as pa

    places: dict[str, dict[str, str]] = {}
    for fact in facts:
        for session, place in (fact.get("workspace") or {}).items():
            places.setdefault(session, {}).update(place)
    if not places or not table.num_rows:
        return table
    sessions = table.column("session_id").to_pylist()
    for name in ("cwd", "repo_root"):
        values = table.column(name).to_pylist()
        changed = False
        for i, s in enumerate(sessions):
            value = places.get(s, {}).get(name)
            if value and values[i] is None:
                values[i], changed = value, True
        if changed:
            at = table.schema.get_field_index(name)
            table = table.set_column(at, table.schema.field(name),
                                     pa.array(values, pa.string()))
    return table


def with_cost_state(attributes: list[str | None], table: Any,
                    facts: list[dict[str, Any]]) -> list[str | None]:
    """``attributes`` with each session's last ``cost-state`` as ``claude.cost_state``
    ``{total_cost_usd, models: {model: {cost_usd, <counts>}}}`` on one row of it (its
    main thread's first, else its first): Claude Code's own cost of the session, shown
    beside graphkit's."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from graphkit.sources.transcripts.buffer import dumps_decoded, loads

    states: dict[str, dict[str, Any]] = {}
    for fact in facts:
        for session, state in (fact.get("cost_state") or {}).items():
            states[session] = {"total_cost_usd": state["total_cost_usd"],
                               "models": state.get("models") or {}}
    if not states or not table.num_rows:
        return attributes
    sessions = table.column("session_id")
    wanted = pc.fill_null(pc.is_in(sessions, value_set=pa.array(sorted(states), pa.string())),
                          False)
    rows = pc.indices_nonzero(wanted)
    mains = pc.is_null(table.column("agent_id").take(rows)).to_pylist()
    at: dict[str, tuple[bool, int]] = {}  # session -> (a main-thread row, which)
    for i, s, main in zip(rows.to_pylist(), sessions.take(rows).to_pylist(), mains,
                          strict=True):
        if s not in at or (main and not at[s][0]):
            at[s] = (main, i)
    out = list(attributes)
    for s, (_main, i) in at.items():
        text = out[i]
        doc = loads(text) if text else {}
        if not isinstance(doc, dict):
            continue
        claude = doc.get("claude")
        doc["claude"] = {**(claude if isinstance(claude, dict) else {}),
                         "cost_state": states[s]}
        out[i] = dumps_decoded(doc)
    return out


def side_run_kind(agent: str) -> str | None:
    """The kind of a run Claude Code starts itself, by its agent id's prefix (the file
    ``agent-aprompt_suggestion-<hex>.jsonl``): none is anyone's subagent.

    >>> side_run_kind("aprompt_suggestion-33a4cf"), side_run_kind("a1f0c0ffee")
    ('prompt-suggestion', None)
    """
    for prefix, kind in (("acompact", "compaction"), ("aprompt_suggestion", "prompt-suggestion"),
                         ("aside_question", "side-question")):
        if agent.startswith(prefix):
            return kind
    return None


def is_job_state(path: Any) -> bool:
    """Whether ``path`` is a background job's ``~/.claude/jobs/<id>/state.json``."""
    return path.name == "state.json" and path.parent.parent.name == "jobs"


def job_state_facts(data: bytes) -> tuple[dict[str, Any], list[tuple[int, str]]]:
    """A background job's ``state.json`` as facts: ``forkSessionId`` continues
    ``forkParentSessionId`` in background mode (the same edge as a ``continued-in``
    record, for a fork whose old transcript holds none); no rows."""
    import json

    facts: dict[str, Any] = {"agent_id": None, "sessions": [], "job_state": True}
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return facts, [(1, "background job state.json is not valid JSON")]
    if not isinstance(doc, dict):
        return facts, [(1, "background job state.json is not a JSON object")]
    parent, fork = _text(doc.get("forkParentSessionId")), _text(doc.get("forkSessionId"))
    if parent and fork and parent != fork:
        facts["continued_in"] = [[parent, fork]]
    return facts, []
