"""HypAware's capture paths of one Claude Code session, read as one session.

HypAware writes a Claude Code session's messages as ``ai_gateway_messages`` rows through
its proxy, through an OTEL attach (``hyp attach claude``, LLP 0262), or from the
transcripts (``hyp backfill claude``); a user who captured live and backfilled later has
two copies of one message. The copies differ in their identity columns:

- **OTEL rows** are recognised by ``attributes.gateway.source = "otel"`` (the OTEL
  listener's label) or, failing that, ``attributes.claude.query_source`` (only the OTEL
  path stamps it). Their ``agent_id`` is the subagent's *type* (the event's
  ``agent.name``: ``Explore``), so instances of one type share it; ``parent_uuid`` is
  null and no ``spawned_by_tool_use_id`` is stamped: no spawn link. A tool call or
  result taken from a spooled body has a fallback hash for ``message_id``.
- **proxy and backfill rows** carry the instance id in ``agent_id``, the transcript
  ``uuid`` as ``message_id`` and the spawn link.

:func:`reconcile_captures` makes one session of the copies: the session's transcripts,
when they are among the sources, are its threads and parent links; else its proxy or
backfill rows are. Each other copy of one of their messages (the same tool call or tool
result id, else the same ``uuid``) is dropped, its usage (one per response) and the
columns its twin lacks (``repo_root``, ``git_branch``, ...) merged into the twin. An OTEL
subagent row with no twin goes to the one instance of its type that its response can
belong to (the instance a row of the same request went to; the only instance of that
type; the one instance of that type waiting for a response at that time). What is left
keeps its type-named thread, marked ``attributes.claude.agent_kind = "otel-agent-type"``,
and is reported (:data:`OTEL_CHECK`): these rows name no spawn link.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from graphkit.core.schema import json_as_text
from graphkit.core.times import TIMESTAMP, text_times

# The thread kind of OTEL subagent rows no instance was found for, and the finding's name.
OTEL_KIND = "otel-agent-type"
OTEL_CHECK = "otel-capture-unlinked-subagents"
# Columns a capture needs to be reconciled (a contract that reads fewer: left as read).
NEEDS = ("session_id", "message_id", "agent_id", "part_type", "tool_call_id", "attributes")
# Read beside a contract's columns where it reads the identity ones: a response's id.
EXTRA_COLUMNS = ("request_id",)
# Columns a kept copy takes from a dropped twin when its own is null: what only the
# rows know (the session-context record's repo_root and git identity, the request ids).
FILL = ("repo_root", "git_branch", "git_remote", "head_sha", "cwd", "model", "request_id",
        "prompt_id", "user_id", "client_version", "entrypoint", "permission_mode")
_ASSISTANT_PARTS = ("tool_call", "thinking", "reasoning")
WHAT_TO_DO = ("add the Claude projects folder (~/.claude/projects) as a source beside the "
              "rows, or run HypAware's `hyp backfill claude`, which stamps the spawn link")


@dataclass(slots=True)
class _Copy:
    """One row of a session: where it is, and what identifies its message and thread."""

    src: int                 # piece index
    at: int                  # row index in the piece
    session: str
    agent: str | None
    mid: str | None
    part: str | None
    call: str | None
    ts: int | None
    side: str | None         # "user", "assistant" or None (not known)
    request: str | None
    attrs: dict[str, Any] | None
    otel: bool
    pid: str | None


@dataclass
class CaptureReport:
    """What reconciling found: sessions captured through OTEL, sessions whose copies met
    (``reconciled``: with their transcripts), copies merged, OTEL rows given an
    instance, and the (session, type) → rows of OTEL subagent rows left unlinked."""

    otel_sessions: set[str] = field(default_factory=set)
    reconciled: set[str] = field(default_factory=set)
    with_transcripts: set[str] = field(default_factory=set)
    merged: int = 0
    placed: int = 0
    unlinked: dict[tuple[str, str], int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The build summary's ``otel_capture`` object (empty: no OTEL rows)."""
        if not self.otel_sessions:
            return {}
        sessions = sorted({s for s, _ in self.unlinked})
        return {"sessions": len(self.otel_sessions),
                "reconciled_with_transcripts": len(self.with_transcripts & self.otel_sessions),
                "copies_merged": self.merged, "rows_placed": self.placed,
                "unlinked_sessions": len(sessions),
                "unlinked_rows": sum(self.unlinked.values()),
                **({"what_to_do": WHAT_TO_DO} if sessions else {})}

    def notes(self) -> list[str]:
        """One line for the build's notes."""
        if not self.otel_sessions and not self.reconciled:
            return []
        out = []
        if self.reconciled:
            out.append(f"HypAware rows: {len(self.reconciled)} session(s) read from several "
                       f"copies made one ({len(self.with_transcripts)} with their "
                       f"transcripts); {self.merged} row copies merged, {self.placed} OTEL "
                       "row(s) placed in their subagent's thread")
        if self.unlinked:
            out.append(self.finding()["message"])
        return out

    def finding(self) -> dict[str, Any]:
        """The ``check`` finding for OTEL subagent rows left with no spawn link."""
        sessions = sorted({s for s, _ in self.unlinked})
        rows = sum(self.unlinked.values())
        message = (f"{len(sessions)} session(s) captured by HypAware through OTEL hold "
                   f"{rows} subagent row(s) that carry no spawn link (agent_id is the "
                   "subagent's type, so every run of one type shares one thread, kind "
                   f"{OTEL_KIND!r}, with no parent); to link them, {WHAT_TO_DO}")
        examples = [{"session_id": s, "agent_type": t, "rows": n}
                    for (s, t), n in sorted(self.unlinked.items())[:5]]
        return {"check": OTEL_CHECK, "count": len(sessions), "message": message,
                "examples": examples}

    def findings(self) -> list[dict[str, Any]]:
        return [self.finding()] if self.unlinked else []


def _text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A text or JSON column as plain text (dictionaries decoded, structs as JSON)."""
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if pa.types.is_string(column.type):
        return column
    if pa.types.is_large_string(column.type):
        return column.cast(pa.string())
    return pa.chunked_array([json_as_text(c) for c in column.chunks], pa.string())


def _otel_candidates(table: pa.Table) -> pa.ChunkedArray | None:
    """Rows whose attributes may say OTEL (a text search; :func:`_is_otel` decides), or
    None when none can. A dictionary column is searched in its dictionary only."""
    col = table.column("attributes")
    if pa.types.is_struct(col.type):
        names = {f.name: f.type for f in col.type}
        if not any(pa.types.is_struct(names.get(k, pa.null())) for k in ("gateway", "claude")):
            return None
    if pa.types.is_dictionary(col.type):
        chunks = []
        for chunk in col.chunks:
            hit = _mentions_otel(chunk.dictionary)
            chunks.append(pc.fill_null(pc.take(hit, chunk.indices), False))
        found = pa.chunked_array(chunks, pa.bool_())
    else:
        found = pc.fill_null(_mentions_otel(_text(col)), False)
    return found if pc.any(found).as_py() else None


def _mentions_otel(text: Any) -> Any:
    text = _text(pa.chunked_array([text]) if isinstance(text, pa.Array) else text)
    return pc.or_(pc.match_substring(text, '"otel"'), pc.match_substring(text, "query_source"))


def _is_otel(attrs: dict[str, Any] | None) -> bool:
    if not attrs:
        return False
    gateway, claude = attrs.get("gateway"), attrs.get("claude")
    if isinstance(gateway, dict) and gateway.get("source") == "otel":
        return True
    return isinstance(claude, dict) and isinstance(claude.get("query_source"), str)


def _spawned(c: _Copy) -> bool:
    """Whether a row names the call that spawned its subagent (proxy, backfill)."""
    claude = (c.attrs or {}).get("claude")
    return isinstance(claude, dict) and claude.get("spawned_by_tool_use_id") is not None


def _loads(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _sessions(table: pa.Table, mask: pa.ChunkedArray | None = None) -> set[str]:
    col = table.column("session_id")
    if mask is not None:
        col = col.filter(mask)
    return {s for s in pc.unique(_text(col)).to_pylist() if isinstance(s, str)}


def _micros(column: pa.ChunkedArray) -> list[int | None]:
    """Times as microseconds since 1970 (None where a value cannot be read so)."""
    try:
        if pa.types.is_timestamp(column.type):
            times = column.cast(pa.timestamp("us", tz=column.type.tz))
        elif pa.types.is_string(column.type) or pa.types.is_dictionary(column.type) \
                or pa.types.is_large_string(column.type):
            times = text_times(_text(column))
        else:
            return [None] * len(column)
        return times.cast(TIMESTAMP).cast(pa.int64()).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return [None] * len(column)


def _side(role: Any, part: Any, request: Any, attrs: dict[str, Any] | None) -> str | None:
    """Whose turn a row is: the model's ("assistant") or the user's (tools' results
    included). Rows without ``role`` tell it by their part, a request id (only a
    response has one) or usage."""
    if role in ("user", "tool"):
        return "user"
    if role == "assistant":
        return "assistant"
    if part == "tool_result":
        return "user"
    if part in _ASSISTANT_PARTS or isinstance(request, str) or (attrs and "usage" in attrs):
        return "assistant"
    return None


def _copies(src: int, table: pa.Table, rows: pa.Array) -> list[_Copy]:
    """The rows at ``rows`` of a piece as copies."""
    sub = table.take(rows)

    def col(name: str) -> list[Any]:
        return (_text(sub.column(name)).to_pylist() if name in sub.column_names
                else [None] * sub.num_rows)

    attrs = [_loads(a) for a in col("attributes")]
    ts = (_micros(sub.column("message_created_at")) if "message_created_at" in sub.column_names
          else [None] * sub.num_rows)
    calls = [c if c is not None else r for c, r in zip(col("tool_call_id"),
                                                         col("tool_result_for"), strict=True)]
    out = []
    for i, (at, session, agent, mid, part, role, req, pid) in enumerate(zip(
            rows.to_pylist(), col("session_id"), col("agent_id"), col("message_id"),
            col("part_type"), col("role"), col("request_id"), col("part_id"), strict=True)):
        out.append(_Copy(src, at, str(session), agent or None, mid, part, calls[i], ts[i],
                         _side(role, part, req, attrs[i]), req, attrs[i],
                         _is_otel(attrs[i]), pid))
    return out


@dataclass
class _Changes:
    """What reconciling does to the pieces: rows dropped, agents and attributes set,
    null columns filled from a dropped twin."""

    drop: set[tuple[int, int]] = field(default_factory=set)
    agent: dict[tuple[int, int], str] = field(default_factory=dict)
    attrs: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    fill: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)

    def set_attrs(self, c: _Copy, attrs: dict[str, Any]) -> None:
        c.attrs = attrs
        self.attrs[(c.src, c.at)] = attrs


def reconcile_captures(pieces: list[tuple[str, pa.Table]], transcripts: int | None
                       ) -> tuple[list[tuple[str, pa.Table]], CaptureReport]:
    """``pieces`` with the copies of each Claude session made one (module docstring);
    ``transcripts``: the index of the transcripts' piece, if any. Pieces holding no
    OTEL row and no session of the transcripts come back as they were."""
    report = CaptureReport()
    rows = [i for i, (_, t) in enumerate(pieces) if i != transcripts
            and all(n in t.column_names for n in NEEDS) and t.num_rows]
    if not rows:
        return pieces, report
    known: set[str] = set()
    if transcripts is not None and pieces[transcripts][1].num_rows:
        t = pieces[transcripts][1]
        known = _sessions(t, pc.is_null(t.column("conversation_id")))
    wanted: set[str] = set()
    for i in rows:
        table = pieces[i][1]
        otel = _otel_candidates(table)
        if otel is not None:
            wanted |= _sessions(table, otel)
        if known:
            wanted |= _sessions(table) & known
    if not wanted:
        return pieces, report
    value_set = pa.array(sorted(wanted), pa.string())
    by_session: dict[str, list[_Copy]] = {}
    for i in [*rows, *([transcripts] if known and transcripts is not None else [])]:
        table = pieces[i][1]
        hit = pc.fill_null(pc.is_in(_text(table.column("session_id")), value_set=value_set),
                           False)
        if i == transcripts:
            hit = pc.and_(hit, pc.is_null(table.column("conversation_id")))
        for c in _copies(i, table, pc.indices_nonzero(hit).cast(pa.int64())):
            by_session.setdefault(c.session, []).append(c)
    changes = _Changes()
    for session in sorted(by_session):
        _reconcile_session(session, by_session[session], transcripts, changes, report)
    return _apply(pieces, changes), report


def _reconcile_session(session: str, copies: list[_Copy], transcripts: int | None,
                       changes: _Changes, report: CaptureReport) -> None:
    """One session's copies made one (module docstring)."""
    # The thread of an OTEL row's type holds OTEL rows only: a row of it that names no
    # spawn link is one too (not every OTEL row carries the label: query_source is on
    # some rows of a response only).
    types = {c.agent for c in copies if c.otel and c.agent}
    for c in copies:
        if not c.otel and c.agent in types and c.src != transcripts and not _spawned(c):
            c.otel = True
    if types or any(c.otel for c in copies):
        report.otel_sessions.add(session)
    told = [c for c in copies if c.src == transcripts]
    if told:
        base, extra = told, [c for c in copies if c.src != transcripts]
    else:
        base = [c for c in copies if not c.otel]
        extra = [c for c in copies if c.otel]
    if base and extra:
        report.reconciled.add(session)
        if told:
            report.with_transcripts.add(session)
        left = _merge(base, extra, changes, report)
    else:
        left = extra if base else [c for c in copies if c.otel]
    for c in left:
        if c.otel and c.agent and (c.src, c.at) not in changes.agent:
            attrs = dict(c.attrs or {})
            claude = dict(attrs.get("claude") or {}) if isinstance(attrs.get("claude"),
                                                                  dict) else {}
            claude.update(agent_kind=OTEL_KIND, agent_type=c.agent)
            attrs["claude"] = claude
            changes.set_attrs(c, attrs)
            key = (session, c.agent)
            report.unlinked[key] = report.unlinked.get(key, 0) + 1


@dataclass
class _Base:
    """The authoritative copies of a session, indexed for finding a twin."""

    calls: dict[str, _Copy] = field(default_factory=dict)
    results: dict[str, _Copy] = field(default_factory=dict)
    by_mid: dict[str, list[_Copy]] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)        # instance -> agent type
    timeline: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)
    used: set[tuple[int, str]] = field(default_factory=set)    # messages with usage
    requests: set[str] = field(default_factory=set)            # responses with usage

    @classmethod
    def of(cls, base: list[_Copy]) -> _Base:
        out = cls()
        for c in base:
            if c.call and c.part == "tool_call":
                out.calls.setdefault(c.call, c)
            elif c.call and c.part == "tool_result":
                out.results.setdefault(c.call, c)
            if c.mid:
                out.by_mid.setdefault(c.mid, []).append(c)
            claude = (c.attrs or {}).get("claude")
            if c.agent and isinstance(claude, dict) and isinstance(claude.get("agent_type"), str):
                out.types.setdefault(c.agent, claude["agent_type"])
            if c.agent:
                out.note(c.agent, c)
            if c.attrs and isinstance(c.attrs.get("usage"), dict):
                out.used.add((c.src, c.mid or ""))
                if c.request:
                    out.requests.add(c.request)
        return out

    def note(self, agent: str, c: _Copy) -> None:
        if c.ts is not None and c.side is not None:
            # At one time a user-side row comes before the answer to it.
            self.timeline.setdefault(agent, []).append(
                (c.ts, 0 if c.side == "user" else 1, c.side))

    def twin(self, e: _Copy) -> _Copy | None:
        """The base copy of ``e``'s message part, if any: by tool call or result id,
        else by message id (the same part id, else the same part type)."""
        if e.part == "tool_call" and e.call:
            found = self.calls.get(e.call)
        elif e.part == "tool_result" and e.call:
            found = self.results.get(e.call)
        else:
            same = self.by_mid.get(e.mid or "", [])
            found = (next((c for c in same if c.pid and c.pid == e.pid), None)
                     or next((c for c in same if c.part == e.part), None)
                     or (same[0] if same else None))
        if found is None:
            return None
        if e.otel:  # an OTEL row's agent is a type: a subagent row meets a subagent's
            ok = (found.agent is None) == (e.agent is None) and (
                e.agent is None or self.types.get(found.agent or "", e.agent) == e.agent)
        else:
            ok = found.agent == e.agent
        return found if ok else None


def _merge(base: list[_Copy], extra: list[_Copy], changes: _Changes,
           report: CaptureReport) -> list[_Copy]:
    """Each copy of ``extra`` with a twin in ``base`` merged into it; what is left, after
    OTEL subagent rows were placed where one instance can be named."""
    index = _Base.of(base)
    request_of: dict[str, str] = {}   # request id -> the instance its rows went to
    left = []
    for e in extra:
        twin = index.twin(e)
        if twin is None:
            left.append(e)
            continue
        changes.drop.add((e.src, e.at))
        changes.fill.setdefault((twin.src, twin.at), (e.src, e.at))
        report.merged += 1
        if e.otel and e.agent and twin.agent:
            index.types.setdefault(twin.agent, e.agent)
            if e.request:
                request_of.setdefault(e.request, twin.agent)
        _move_usage(e, twin, index, changes)
    placed = []
    for e in sorted(left, key=lambda c: (c.ts if c.ts is not None else -1, c.at)):
        where = _instance(e, index, request_of) if e.otel and e.agent else None
        if where is None:
            _drop_counted_usage(e, index, changes)
            placed.append(e)
            continue
        changes.agent[(e.src, e.at)] = where
        index.note(where, e)
        if e.request:
            request_of.setdefault(e.request, where)
        report.placed += 1
    return placed


def _move_usage(e: _Copy, twin: _Copy, index: _Base, changes: _Changes) -> None:
    """A dropped copy's usage goes to its twin when the twin's message and response
    have none yet (one usage per response)."""
    usage = (e.attrs or {}).get("usage")
    if not isinstance(usage, dict):
        return
    key = (twin.src, twin.mid or "")
    request = twin.request or e.request
    if key in index.used or (request and request in index.requests):
        return
    changes.set_attrs(twin, {**(twin.attrs or {}), "usage": usage})
    index.used.add(key)
    if request:
        index.requests.add(request)


def _drop_counted_usage(e: _Copy, index: _Base, changes: _Changes) -> None:
    """A kept copy whose response's usage is counted already loses its own."""
    if e.request and e.request in index.requests and isinstance(
            (e.attrs or {}).get("usage"), dict):
        changes.set_attrs(e, {k: v for k, v in (e.attrs or {}).items() if k != "usage"})


def _instance(e: _Copy, index: _Base, request_of: dict[str, str]) -> str | None:
    """The one instance an OTEL subagent row (``agent_id`` a type) belongs to, or None:
    the instance a row of the same response went to; else the only instance of its
    type; else, for a response, the one instance of its type (or of no known type)
    waiting for a response at its time."""
    if e.request and e.request in request_of:
        return request_of[e.request]
    typed = sorted(a for a, t in index.types.items() if t == e.agent)
    if len(typed) == 1:
        return typed[0]
    if e.side != "assistant" or e.ts is None:
        return None
    pool = typed or sorted(a for a in index.timeline if a not in index.types)
    waiting = [a for a in pool if _waiting(index.timeline.get(a, []), e.ts)]
    return waiting[0] if len(waiting) == 1 else None


def _waiting(events: list[tuple[int, int, str]], ts: int) -> bool:
    """Whether a thread's latest row at or before ``ts`` is the user's: it awaits an
    answer (a Claude agent sends one request at a time)."""
    before = [ev for ev in events if ev[0] <= ts]
    return bool(before) and max(before)[2] == "user"


def _apply(pieces: list[tuple[str, pa.Table]], changes: _Changes
           ) -> list[tuple[str, pa.Table]]:
    """The pieces with ``changes`` made (pieces no change touches stay as they are)."""
    touched = {src for src, _ in [*changes.drop, *changes.agent, *changes.attrs,
                                  *changes.fill]}
    out = list(pieces)
    for src in sorted(touched):
        label, table = pieces[src]
        table = _set_values(table, "agent_id", _of(changes.agent, src))
        table = _set_values(table, "attributes", {
            at: json.dumps(a, ensure_ascii=False, separators=(",", ":"))
            for at, a in _of(changes.attrs, src).items()})
        for name in FILL:
            if name in table.column_names:
                table = _set_values(table, name, _fills(pieces, changes, src, name,
                                                        table.column(name)), only_null=True)
        drop = sorted(at for s, at in changes.drop if s == src)
        if drop:
            keep = pc.invert(pc.is_in(pa.array(range(table.num_rows)),
                                      value_set=pa.array(drop, pa.int64())))
            table = table.filter(keep)
        out[src] = (label, table)
    return out


def _of(values: dict[tuple[int, int], Any], src: int) -> dict[int, Any]:
    return {at: v for (s, at), v in values.items() if s == src}


def _fills(pieces: Sequence[tuple[str, pa.Table]], changes: _Changes, src: int, name: str,
           column: pa.ChunkedArray) -> dict[int, Any]:
    """Row → the value a dropped twin holds in column ``name``, for rows of ``src``."""
    out: dict[int, Any] = {}
    for (s, at), (tsrc, tat) in changes.fill.items():
        twin_table = pieces[tsrc][1]
        if s != src or name not in twin_table.column_names:
            continue
        value = twin_table.column(name)[tat].as_py()
        if value is not None and column[at].as_py() is None:
            out[at] = value if isinstance(value, str) else None
    return {k: v for k, v in out.items() if v is not None}


def _set_values(table: pa.Table, name: str, values: dict[int, Any],
                only_null: bool = False) -> pa.Table:
    """``table`` with column ``name`` set at the given rows (as text)."""
    if not values or name not in table.column_names:
        return table
    column = _text(table.column(name))
    if not pa.types.is_string(column.type):  # pragma: no cover - text columns only
        return table
    now = column.to_pylist()
    for at, v in values.items():
        if not only_null or now[at] is None:
            now[at] = v
    at = table.schema.get_field_index(name)
    return table.set_column(at, pa.field(name, pa.string()), pa.array(now, pa.string()))


def capture_columns(columns: Iterable[str]) -> set[str]:
    """The columns to read beside ``columns`` for reconciling (none if it lacks the
    identity columns a capture is told by)."""
    cols = set(columns)
    return set(EXTRA_COLUMNS) if set(NEEDS) <= cols else set()
