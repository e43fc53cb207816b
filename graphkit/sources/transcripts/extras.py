"""Token usage and session continuations from transcripts, for the transcript parsers.

The parsers call these as they read (:class:`ClaudeUsage`, :func:`codex_usage`,
:func:`claude_links`) and keep what they find in a file's *facts*, keyed by the
line a message starts on; :mod:`.links` then writes it into the rows'
``attributes`` (:func:`with_extras`), after replays are settled, so a replayed
message's usage is counted once, in the session that first had it.

Usage, as the default contract reads it (``attributes.usage``), on the last part
of one message per model response:

- Claude: each assistant line's ``message.usage``, once per ``(message.id,
  requestId)`` (a missing ``requestId`` still forms a pair), with the numbers of
  the pair's *last* line: one response is split one content block a line, and
  earlier lines may carry partial output counts. What Claude bills beyond the four
  counts rides along when there is some (:data:`BILLING_KEYS`): the 1-hour part of the
  cache writes (``cache_creation.ephemeral_1h_input_tokens``) as
  ``cache_creation_1h_input_tokens``; the API's own web searches
  (``server_tool_use.web_search_requests``) and those of Claude Code's WebSearch tool (its
  result's ``toolUseResult.searchCount``, put on the message that made the call) as
  ``web_search_requests``; and the advisor's tokens (``iterations[]`` entries of type
  ``advisor_message``, which the top-level counts leave out) as ``advisor`` ``{model,
  <counts>}``. ``output_tokens`` already holds the thinking tokens
  (``output_tokens_details.thinking_tokens`` is a part of it): nothing is added for them.
- Codex: ``token_count`` events hold cumulative totals; the difference between
  consecutive totals is one turn's usage, put on the last assistant message
  before the event. ``input_tokens`` there include ``cached_input_tokens``, so
  the row carries ``input_tokens - cached_input_tokens`` as input and the cached
  part as cache reads; output includes reasoning. A forked rollout's copied
  prefix sets the baseline and is not counted again, and so does a total written
  before the file's first answer.

Continuations (``attributes.continues``): Claude ``/branch`` copies
(``forkedFrom.sessionId``: ``branch``), a session started from another's
compaction (its ``compact_boundary`` names a message of another session as
``logicalParentUuid``: ``compaction``) and agent-team members (entries naming
``teamName`` and an ``agentName`` other than the lead's: ``teammate`` of the
team's lead session). ``--resume`` is found by the resolver's replay rule
(``attributes.claude.resumed_from``); Codex forks by ``forked_from_id``.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.sources.transcripts.buffer import dumps_decoded, loads

TOKEN_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
              "cache_read_input_tokens")
# Of cache_creation_input_tokens, the part written with a 1-hour TTL (Claude's
# ``usage.cache_creation.ephemeral_1h_input_tokens``, priced 2x input against 1.25x for
# the 5-minute part): kept when the response reports some, for pricing from the rows.
HOUR_KEY = "cache_creation_1h_input_tokens"
# Web searches, billed per search beside the tokens.
SEARCH_KEY = "web_search_requests"
# The advisor model's own usage in a response (Claude's advisor tool): {model, counts}.
ADVISOR_KEY = "advisor"
BILLING_KEYS = (HOUR_KEY, SEARCH_KEY, ADVISOR_KEY)
USAGE_KEYS = (*TOKEN_KEYS, *BILLING_KEYS)
_LEAD_NAMES = frozenset({"team-lead", "lead", "leader"})


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


class ClaudeUsage:
    """``message.usage`` of one Claude file, once per ``(message.id, requestId)``."""

    def __init__(self) -> None:
        # pair -> (line the message starts on, usage); a later line of the pair replaces it.
        self.pairs: dict[tuple[str, str | None], tuple[int, dict[str, Any]]] = {}
        # tool call id -> (line its message starts on, web searches its result reports)
        self.searches: dict[str, tuple[int, int]] = {}

    def count(self, native_id: str | None, req: Any, usage: dict[str, Any],
              message_line: int) -> None:
        """Record the usage of an assistant entry for the message starting at
        ``message_line``: its ``message.id`` (when text), ``requestId`` and
        ``message.usage`` (an object), as the parser has read them."""
        mid = native_id if native_id is not None else f"line-{message_line}"
        rid = req if isinstance(req, str) else None
        counts: dict[str, Any] = {}
        for k in TOKEN_KEYS:  # _int inlined: this runs for every assistant line
            v = usage.get(k)
            counts[k] = v if isinstance(v, int) and not isinstance(v, bool) else 0
        if counts["cache_creation_input_tokens"]:  # its 1-hour part, if it says
            hour = _hour(usage)
            if hour:
                counts[HOUR_KEY] = hour
        server = usage.get("server_tool_use")
        if type(server) is dict:
            searches = server.get(SEARCH_KEY)
            if type(searches) is int and searches > 0:
                counts[SEARCH_KEY] = searches
        steps = usage.get("iterations")
        if type(steps) is list and steps:
            advisor = advisor_usage(steps)
            if advisor is not None:
                counts[ADVISOR_KEY] = advisor
        self.pairs[(mid, rid)] = (message_line, counts)

    def searched(self, message_line: int, call_id: str, searches: Any) -> None:
        """Record ``searches`` (a tool result's ``toolUseResult.searchCount``) on the
        message starting at ``message_line``, the one whose call ran them; once per
        call, however often a replay repeats its result."""
        if type(searches) is int and searches > 0:
            self.searches[call_id] = (message_line, searches)

    def facts(self) -> list[list[Any]]:
        """``[line, key, usage]`` per pair (key ``message.id|requestId``) and per call
        that searched the web (key ``search|<call id>``), in line order."""
        out = [[line, f"{mid}|{rid or ''}", usage]
               for (mid, rid), (line, usage) in self.pairs.items()]
        out += [[line, f"search|{call}", {SEARCH_KEY: n}]
                for call, (line, n) in self.searches.items()]
        return sorted(out, key=lambda f: f[0])


def web_searches(result: dict[str, Any], tool: str | None) -> int:
    """The web searches a tool's ``toolUseResult`` reports: its ``searchCount``, or, for
    Claude Code's ``WebSearch`` from before it wrote one, its ``results`` that are a
    server search's (an object naming the search's ``tool_use_id``; text entries are
    the model's commentary). Claude Code runs them in a request of its own, whose usage
    the transcript does not hold: only the count is there to bill.

    >>> web_searches({"searchCount": 3}, "WebSearch")
    3
    >>> web_searches({"results": ["noted", {"tool_use_id": "srvtoolu_1", "content": []}]},
    ...              "WebSearch")
    1
    """
    n = result.get("searchCount")
    if type(n) is int:
        return max(n, 0)
    found = result.get("results")
    if tool != "WebSearch" or type(found) is not list:
        return 0
    return sum(1 for r in found if type(r) is dict and isinstance(r.get("tool_use_id"), str))


def _hour(usage: dict[str, Any]) -> int:
    """The 1-hour part of a usage's cache writes (``cache_creation``'s
    ``ephemeral_1h_input_tokens``), 0 when it names none."""
    split = usage.get("cache_creation")
    hour = split.get("ephemeral_1h_input_tokens") if type(split) is dict else None
    return hour if type(hour) is int and hour > 0 else 0


def advisor_usage(steps: list[Any]) -> dict[str, Any] | None:
    """The advisor's usage in a response's ``iterations``: its ``advisor_message``
    entries added up, under the first one's model (Claude Code consults one advisor
    model); None without one. The top-level counts leave these out (they sum the
    executor's ``message`` entries), so they are the advisor's own.

    >>> advisor_usage([{"type": "message", "input_tokens": 5},
    ...                {"type": "advisor_message", "model": "claude-opus-4-8",
    ...                 "input_tokens": 900, "output_tokens": 40}])["input_tokens"]
    900
    """
    out: dict[str, Any] | None = None
    for step in steps:
        if type(step) is not dict or step.get("type") != "advisor_message":
            continue
        if out is None:
            model = step.get("model")
            out = {"model": model if isinstance(model, str) and model else None,
                   **dict.fromkeys(TOKEN_KEYS, 0)}
        for k in TOKEN_KEYS:
            out[k] += _int(step.get(k))
        if step.get("cache_creation_input_tokens"):
            out[HOUR_KEY] = out.get(HOUR_KEY, 0) + _hour(step)
    if out is not None and not out.get(HOUR_KEY):
        out.pop(HOUR_KEY, None)
    return out


def add_usage(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two usages of one message added up, key by key (the advisor's counts too)."""
    out: dict[str, Any] = {}
    for k in USAGE_KEYS:
        if k not in a and k not in b:
            continue
        x, y = a.get(k), b.get(k)
        if k == ADVISOR_KEY:
            out[k] = (y if not isinstance(x, dict) else x if not isinstance(y, dict) else
                      {"model": x.get("model") or y.get("model"),
                       **{c: _int(x.get(c)) + _int(y.get(c)) for c in (*TOKEN_KEYS, HOUR_KEY)
                          if c in x or c in y}})
        else:  # the parser's ints, added as they are (a value it passed on stays one)
            out[k] = a.get(k, 0) + b.get(k, 0)
    return out


# Codex reported no cache writes until its token counts gained
# ``cache_write_input_tokens``: rows carry cache_creation_input_tokens only when a turn
# wrote some (as HypAware's do not), so every earlier rollout's usage reads as before.
CODEX_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens",
              "cache_creation_input_tokens")
_WRITES = "cache_creation_input_tokens"


def _codex_tokens(total: dict[str, Any]) -> dict[str, int]:
    """A Codex token count in the rows' terms. ``input_tokens`` there include the cached
    part and, in newer writers, the part written to the cache (OpenAI's input counts every
    prompt token; readers of inspect_swe's and other tools' Codex logs take input less
    both): input is what is left. A write count larger than that remainder cannot be part
    of the input, so it is then taken as counted beside it."""
    inp, cached = _int(total.get("input_tokens")), _int(total.get("cached_input_tokens"))
    writes = _int(total.get("cache_write_input_tokens"))
    fresh = inp - cached
    return {"input_tokens": fresh - writes if writes <= fresh else fresh,
            "output_tokens": _int(total.get("output_tokens")),
            "cache_read_input_tokens": cached, _WRITES: writes}


def codex_usage(lines: Sequence[tuple[int, dict[str, Any]]], inherited: set[int],
                assistant_lines: Sequence[int], thread: str,
                fork: bool = True) -> list[list[Any]]:
    """Per-turn usage of one rollout: ``[message line, key, usage]`` facts.

    ``lines`` are the rollout's (line, object) pairs, ``inherited`` the lines a
    fork copied from its parent (they only set the baseline), ``assistant_lines``
    the lines where the rollout's own assistant messages start. ``fork``: the rollout
    continues another's history, so a total before its first answer (or its first total,
    which counts its source's responses too) is no usage of its own; in any other
    rollout usage before the first answer is the first answer's, or, with no answer at
    all, its own fact at the line of the first count (:func:`.codex.parse_codex` gives
    that line a row to sit on).
    """
    starts = sorted(set(assistant_lines))
    keys = CODEX_KEYS
    out: dict[int, dict[str, int]] = {}
    prev = dict.fromkeys(keys, 0)
    at = 0  # index into starts of the first assistant message after the cursor
    last: int | None = None
    early: list[Any] = [None, dict.fromkeys(keys, 0)]  # (first line, usage) before any answer
    totals = 0  # token_count totals seen (a fork's first one counts its source's too)
    # Newer writers also write token_usage_record lines (a response's own usage); read
    # only when no token_count event carries usage (see _usage_records).
    records = None if _has_token_counts(lines) else _usage_records(lines, thread)
    for line, obj in lines:
        while at < len(starts) and starts[at] < line:
            last, at = starts[at], at + 1
        if records is not None:
            if line not in records:
                continue
            delta = _codex_tokens(records[line])
        else:
            payload = obj.get("payload")
            info = payload.get("info") if isinstance(payload, dict) and (
                payload.get("type") == "token_count") else None
            total = info.get("total_token_usage") if isinstance(info, dict) else None
            if isinstance(total, dict):
                now = _codex_tokens(total)
                # Totals only grow; one that shrinks started again from zero.
                base = prev if all(now[k] >= prev[k] for k in keys) else dict.fromkeys(
                    keys, 0)
                delta = {k: now[k] - base[k] for k in keys}
                last_usage = info.get("last_token_usage") if isinstance(info, dict) else None
                if fork and not totals and isinstance(last_usage, dict):
                    delta = _codex_tokens(last_usage)  # its own response
                prev = now
                totals += 1
            elif isinstance(info, dict) and isinstance(info.get("last_token_usage"), dict):
                # No total, only the last response's usage (other readers meet such
                # events): that response's usage is the delta itself.
                delta = _codex_tokens(info["last_token_usage"])
            else:
                continue
        if line in inherited or (last is None and fork):
            # A total before any answer of a fork is no response of its own: its copy
            # of its source's totals, whose answers the copy may leave out. The baseline.
            continue
        if last is None:  # no answer yet (newer writers count first): the first answer's
            if any(delta.values()):
                early[0] = early[0] if early[0] is not None else line
                early[1] = {k: early[1][k] + delta[k] for k in keys}
            continue
        if any(delta.values()):
            acc = out.setdefault(last, dict.fromkeys(keys, 0))
            out[last] = {k: acc[k] + delta[k] for k in keys}
    if early[0] is not None:
        spot = next((s for s in starts if s > early[0]), early[0])
        acc = out.setdefault(spot, dict.fromkeys(keys, 0))
        out[spot] = {k: acc[k] + early[1][k] for k in keys}
    # Cache writes only where a turn wrote some: the usage of every other turn is the
    # three counts it always was.
    return [[line, f"{thread}|turn-{line}",
             {k: v for k, v in usage.items() if v or k != _WRITES}]
            for line, usage in sorted(out.items())]


def _has_token_counts(lines: Sequence[tuple[int, dict[str, Any]]]) -> bool:
    """Whether any ``token_count`` event of the rollout carries usage (``info``)."""
    for _line, obj in lines:
        payload = obj.get("payload")
        if type(payload) is dict and payload.get("type") == "token_count" and isinstance(
                payload.get("info"), dict):
            return True
    return False


def _usage_records(lines: Sequence[tuple[int, dict[str, Any]]],
                   thread: str) -> dict[int, dict[str, Any]]:
    """line -> usage of the rollout's ``token_usage_record`` lines (newer writers: one per
    model response, its own usage, not a running total), once per ``response_id``; a
    record naming another thread is that thread's (a copy), not this one's. Read only
    when no ``token_count`` event carries usage: where both are written they count the
    same responses (the totals are read then, as for every older rollout)."""
    out: dict[int, dict[str, Any]] = {}
    seen: set[str] = set()
    for line, obj in lines:
        payload = obj.get("payload")
        if obj.get("type") != "token_usage_record" or type(payload) is not dict:
            continue
        usage, owner, response = (payload.get("usage"), payload.get("thread_id"),
                                  payload.get("response_id"))
        if type(usage) is not dict or (isinstance(owner, str) and owner != thread):
            continue
        if isinstance(response, str):
            if response in seen:
                continue
            seen.add(response)
        out[line] = usage
    return out


def claude_links(entry: dict[str, Any], line: int, facts: dict[str, Any]) -> None:
    """Note an entry's pointers to other sessions in ``facts``: ``/branch`` copies
    (``forked``: the line is a copy, and of which session) and team membership."""
    forked = entry.get("forkedFrom")
    if isinstance(forked, dict) and isinstance(forked.get("sessionId"), str):
        facts.setdefault("forked", {})[str(line)] = forked["sessionId"]
    team = entry.get("teamName")
    if isinstance(team, str) and team:
        name = entry.get("agentName")
        facts.setdefault("teams", {}).setdefault(team, name if isinstance(name, str) else "")


def drop_branch_copies(table: pa.Table, facts: Sequence[dict[str, Any]]) -> pa.Table:
    """Rows a ``/branch`` copied from another session (the line says
    ``forkedFrom`` and the origin holds the same message) are the origin's:
    dropped here, whatever their timestamps, so they count once."""
    if not any(f.get("forked") for f in facts):
        return table
    sessions = table.column("session_id").to_pylist()
    uuids = table.column("provider_uuid").to_pylist()
    holders: dict[str, set[str]] = {}
    for s, u in zip(sessions, uuids, strict=True):
        if u:
            holders.setdefault(u, set()).add(s)
    mask = []
    for s, u, f, ln in zip(sessions, uuids, table.column("_file").to_pylist(),
                           table.column("line").to_pylist(), strict=True):
        origin = facts[f].get("forked", {}).get(str(ln))
        mask.append(not (origin and origin != s and u and origin in holders.get(u, ())))
    return table.filter(pa.array(mask))


def claude_continuations(table: pa.Table, facts: Sequence[dict[str, Any]]) -> dict[
        str, tuple[str, str]]:
    """Session -> (the session it continues, how) for branches, compactions and
    teammates (resumes are the resolver's)."""
    out: dict[str, tuple[str, str]] = {}
    # The copies themselves are gone (drop_branch_copies): the file says who it copied.
    for fact in facts:
        for origin in sorted(set(fact.get("forked", {}).values())):
            for s in fact.get("sessions", []):
                if origin != s:
                    out.setdefault(s, (origin, "branch"))
    _compactions(table, out)
    if not any(fact.get("teams") for fact in facts):
        return out
    members: dict[str, dict[str, str]] = {}  # team -> session -> agent name
    sessions = table.column("session_id").to_pylist()
    for f, s in zip(table.column("_file").to_pylist(), sessions, strict=True):
        for team, name in facts[f].get("teams", {}).items():
            members.setdefault(team, {}).setdefault(s, name)
    for team in members.values():
        leads = sorted(s for s, name in team.items() if not name or name in _LEAD_NAMES)
        if len(leads) == 1:
            for s in team:
                if s != leads[0]:
                    out.setdefault(s, (leads[0], "teammate"))
    return out


def _compactions(table: pa.Table, out: dict[str, tuple[str, str]]) -> None:
    """Sessions started from another session's compaction: a row whose
    ``logical_parent_uuid`` only other sessions hold. Only rows naming such a uuid, and
    rows holding one, are read into Python (most rows name none)."""
    named = table.filter(pc.is_valid(table.column("logical_parent_uuid")))
    if not named.num_rows:
        return
    wanted = pc.unique(named.column("logical_parent_uuid"))
    holding = table.filter(pc.fill_null(pc.is_in(table.column("provider_uuid"), wanted), False))
    holders: dict[str, list[str]] = {}  # uuid -> sessions holding it, first holder first
    for s, u in zip(holding.column("session_id").to_pylist(),
                    holding.column("provider_uuid").to_pylist(), strict=True):
        if u and s not in holders.setdefault(u, []):
            holders[u].append(s)
    for s, lp in zip(named.column("session_id").to_pylist(),
                     named.column("logical_parent_uuid").to_pylist(), strict=True):
        held = holders.get(lp, []) if lp else []
        # Compacted within the session (the usual case) when it holds the message itself.
        if held and s not in held:
            out.setdefault(s, (held[0], "compaction"))


def _last_parts(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """The messages of ``table`` as ``file << 32 | line`` keys (ascending) and, per key,
    the row of its last part (highest ``part_index``, the later row on a tie)."""
    if not table.num_rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    keys = (table.column("_file").to_numpy().astype(np.int64) << 32) | table.column(
        "line").to_numpy().astype(np.int64)
    parts = table.column("part_index").to_numpy()
    rows = np.arange(len(keys))
    order = np.lexsort((rows, parts, keys))
    ends = np.ones(len(order), dtype=bool)
    ends[:-1] = keys[order][1:] != keys[order][:-1]
    last = order[ends]
    return keys[last], last


def _usage_spots(table: pa.Table, facts: Sequence[dict[str, Any]]) -> list[int]:
    """For every usage fact of every file, in order, the row of the last part of the
    message it names (-1: no such message here, e.g. a replayed copy dropped)."""
    files, lines = [], []
    for f, fact in enumerate(facts):
        for line, _key, _usage in fact.get("usage", []):
            files.append(f)
            lines.append(line if isinstance(line, int) and 0 <= line < 2**32 else -1)
    if not files:
        return []
    keys, last = _last_parts(table)
    if not len(keys):
        return [-1] * len(files)
    wanted = (np.array(files, dtype=np.int64) << 32) | np.array(lines, dtype=np.int64)
    at = np.searchsorted(keys, wanted)
    found = at < len(keys)
    found[found] = keys[at[found]] == wanted[found]
    found &= np.array(lines, dtype=np.int64) >= 0
    return np.where(found, last[np.minimum(at, len(keys) - 1)], -1).tolist()


# The usual usage: all four counts, plain ints (one format instead of four members joined).
_FOUR = ('"usage":{' + ",".join(f'"{k}":%d' for k in TOKEN_KEYS) + "}")
_COUNTS = itemgetter(*TOKEN_KEYS)


def _usage_member(usage: dict[str, Any]) -> str | None:
    """``"usage":{...}`` (counts in USAGE_KEYS order) as compact JSON when every count is
    a plain int (the usual case: what msgspec and json.dumps both write), else None."""
    if len(usage) == len(TOKEN_KEYS):
        try:
            counts = _COUNTS(usage)
        except KeyError:
            counts = None  # other keys: the loop below reads the ones it knows
        if counts is not None:
            for v in counts:
                if type(v) is not int:
                    return None
            return _FOUR % counts  # %d writes an int as str() does
    items = []
    for k in USAGE_KEYS:
        if k in usage:
            v = usage[k]
            if type(v) is not int:
                return None
            items.append(f'"{k}":{v}')
    return '"usage":{' + ",".join(items) + "}"


def _open_object(text: str) -> str | None:
    """``text`` less its closing brace, when members written after it read as
    ``dumps_decoded`` of the object with those members added (ints only) would:
    ``text`` is an object without ``usage`` that dumps_decoded writes as ``text``."""
    doc = loads(text)
    if type(doc) is not dict or not doc or "usage" in doc or dumps_decoded(doc) != text:
        return None
    return text[:-1]


def with_extras(attributes: list[str | None], table: pa.Table,
                facts: Sequence[dict[str, Any]],
                continues: dict[str, tuple[str, str]] | None = None) -> list[str | None]:
    """``attributes`` (JSON text per row) with ``usage`` on the last part of each
    message a file's ``usage`` facts name (each pair once over all files, the
    first file holding it), and ``continues`` on the rows of a continuing
    session's main thread."""
    spots = iter(_usage_spots(table, facts) if any(f.get("usage") for f in facts) else [])
    usage_at: dict[int, dict[str, Any]] = {}  # row -> its usage (most rows: none)
    seen: set[str] = set()
    for fact in facts:
        for _line, key, usage in fact.get("usage", []):
            spot = next(spots)
            if spot < 0 or key in seen:
                continue  # a replayed copy, dropped: its origin counts it
            seen.add(key)
            acc = usage_at.get(spot)
            if acc is None:  # the usual case: one pair per message (counts are ints)
                usage_at[spot] = usage  # put in USAGE_KEYS order when written
            else:
                usage_at[spot] = add_usage(acc, usage)
    continues_at: dict[int, dict[str, str]] = {}
    if continues:
        # Only the main-thread rows of continuing sessions (most rows are neither).
        rows = pc.indices_nonzero(pc.and_(
            pc.is_null(table.column("agent_id")),
            pc.is_in(table.column("session_id"), pa.array(list(continues), pa.string()))))
        sessions = table.column("session_id").take(rows).to_pylist()
        for i, s in zip(rows.to_pylist(), sessions, strict=True):
            origin, how = continues[s]
            continues_at[i] = {"session_id": origin, "how": how}
    if not usage_at and not continues_at:
        return attributes
    out = list(attributes)
    opened: dict[str, str | None] = {}  # attribute text -> _open_object(text)
    for i, usage in usage_at.items():
        if i in continues_at:
            continue  # written with its continuation below
        text = out[i]
        # The usual cases, written directly: usage alone, or added to a thread's
        # attributes (the same few texts over and over).
        member = _usage_member(usage)
        if member is not None:
            if not text:
                out[i] = "{" + member + "}"
                continue
            if text not in opened:
                opened[text] = _open_object(text)
            head = opened[text]
            if head is not None:
                out[i] = head + "," + member + "}"
                continue
        out[i] = _added(text, {"usage": usage})
    for i, cont in continues_at.items():
        add: dict[str, Any] = {"usage": usage_at[i]} if i in usage_at else {}
        add["continues"] = cont
        out[i] = _added(out[i], add)
    return out


def _added(text: str | None, add: dict[str, Any]) -> str:
    """Attribute text ``text`` with the members of ``add`` set (usage in USAGE_KEYS order)."""
    if "usage" in add:
        add["usage"] = {k: add["usage"][k] for k in USAGE_KEYS if k in add["usage"]}
    doc = loads(text) if text else {}
    doc.update(add)
    return dumps_decoded(doc)
