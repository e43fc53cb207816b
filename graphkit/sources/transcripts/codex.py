"""Codex rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) → pre-rows of one file.

One rollout is one *thread*: ``session_meta.payload.id`` → ``conversation_id``. The session
(the root thread) may need other files (a child names only its parent), so it is settled in
:mod:`graphkit.sources.transcripts.links`; this module records the thread's own facts.

Formats handled:

- the envelope ``{timestamp, type, payload}`` with ``session_meta``, ``response_item``,
  ``event_msg``, ``turn_context`` and ``compacted`` lines; ``world_state`` and
  ``inter_agent_communication_metadata`` lines and the non-message items (ghost snapshots,
  encrypted compactions, ...) are read as nothing; a line or item of any other type is a
  skipped line naming it;
- messages between agents (MultiAgentV2): ``inter_agent_communication`` lines,
  ``agent_message`` items, and an assistant message whose text is an
  ``InterAgentCommunication``'s JSON are user messages of the thread that received them;
- ``thread_rolled_back`` (``num_turns``): the undone turns' lines stay, and are kept with
  their usage (they ran); the next message follows the one before them, and the thread
  counts ``rolled_back_turns``;
- very old rollouts: a bare ``{id, timestamp}`` first line, then bare response items;
- forks and spawned sub-threads: the first ``session_meta`` owns the file; the parent's lines
  copied in before the child's own content are not the child's (see ``_inherited``);
- items of newer writers: ``tool_search_call``/``tool_search_output``,
  ``image_generation_call``, calls with a ``namespace`` (MCP tools).

Codex writes each user/agent message twice, as a ``response_item`` message and as an
``event_msg`` (``user_message``/``agent_message``). Response items are the richer record,
so event messages are used only for a rollout that has no response-item messages at all
(older or minimal writers).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, NamedTuple

from graphkit.core.errors import excerpt
from graphkit.sources.transcripts.buffer import (
    STATUS_ERROR,
    STATUS_SUCCESS,
    FileParse,
    Message,
    Part,
    RowBuffer,
    dumps,
    id_list,
    json_lines,
    json_text,
    loads,
    parse_timestamp,
    with_lone_surrogates,
)
from graphkit.sources.transcripts.extras import codex_usage

# Tuples, not sets: a mutated line may carry a list where a type name belongs, and a
# tuple compares it instead of hashing it.
_CALLS = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
# Items of newer writers that are a call with their own fields (codex-rs ``ResponseItem``):
# ``tool_search_call`` (``arguments`` an object) / ``tool_search_output`` (the ``tools``
# found), and ``image_generation_call`` (``revised_prompt``; ``result`` is the image itself,
# base64, not kept).
_TOOL_SEARCH = ("tool_search_call", "tool_search_output")
_IMAGE_CALL = "image_generation_call"
_TEXT_ITEMS = ("input_text", "output_text", "text", "summary_text", "reasoning_text",
               "refusal")
_CWD = re.compile(r"<cwd>([^<\n]*)</cwd>")
# A message another agent sent this thread (MultiAgentV2): a top-level
# ``inter_agent_communication`` line, or an ``agent_message`` response item.
_INTER_AGENT = "inter_agent_communication"
_AGENT_MESSAGE = "agent_message"
_MESSAGE_KINDS = ("response_item", "event_msg", "compacted", _INTER_AGENT)
# Line and item types that hold no message (known, read as nothing): anything else is a
# skipped line naming its type, so a newer writer's record is counted, not lost unsaid.
_QUIET_KINDS = ("session_meta", "turn_context", "world_state",
                "inter_agent_communication_metadata", "token_usage_record")
_QUIET_ITEMS = ("ghost_snapshot", "compaction", "compaction_summary", "context_compaction",
                "configuration_update", "compaction_trigger", "additional_tools", "other")
_ITEM_TYPES = frozenset(("message", "reasoning", _AGENT_MESSAGE, _IMAGE_CALL, *_CALLS,
                         *_OUTPUTS, *_TOOL_SEARCH, *_QUIET_ITEMS))
# User messages Codex writes itself (context, instructions, a shell command the user ran):
# no user turn of their own, so a rollback does not count them (codex-rs
# ``is_contextual_user_message_content``).
_CONTEXTUAL = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions",
               "<user_shell_command>", "<skill>", "<turn_aborted>", "<subagent_notification>")
OPEN = 2**62  # a review that never ended: its window stays open

Lines = list[tuple[int, dict[str, Any]]]


def _thread_id_from_name(path: Path) -> str:
    stem = path.name.split(".", 1)[0]
    return stem[-36:] if len(stem) >= 36 and stem[-28] == "-" else stem


def _texts(items: Any) -> str | None:
    if not isinstance(items, list):
        return None
    out = [i.get("text") for i in items if isinstance(i, dict) and i.get("type") in _TEXT_ITEMS]
    return "\n".join(t for t in out if isinstance(t, str)) if out else None


def _text_id(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _meta_facts(meta: dict[str, Any], line_ts: int | None) -> dict[str, Any]:
    source = meta.get("source")
    spawn: dict[str, Any] = {}
    subagent = None  # what kind of subagent run, when not a plain thread spawn
    if isinstance(source, dict):
        sub = source.get("subagent", source.get("subAgent"))
        found = sub.get("thread_spawn") if isinstance(sub, dict) else None
        spawn = found if isinstance(found, dict) else {}
        if isinstance(sub, str):
            subagent = sub                      # {"subagent": "review"}, "compact", ...
        elif isinstance(sub, dict) and not spawn:
            subagent = next(iter(sub), None)    # {"subagent": {"other": "guardian"}}
        source_name = "subagent" if sub is not None else next(iter(source), None)
    else:
        source_name = source if isinstance(source, str) else None
    parent = _text_id(spawn.get("parent_thread_id")) or _text_id(meta.get("parent_thread_id"))
    git: dict[str, Any] = meta["git"] if isinstance(meta.get("git"), dict) else {}
    started = parse_timestamp(meta.get("timestamp"))
    attrs = {
        "thread_id": meta.get("id"),
        # Only text is an id: a number or an object there (a damaged or foreign
        # rollout) named no session, and an object stopped the build (unhashable).
        "forked_from_id": _text_id(meta.get("forked_from_id"))
        or _text_id(spawn.get("forked_from_id")),
        "spawn_call_id": spawn.get("spawn_call_id"),
        "depth": spawn.get("depth"),
        "agent_nickname": spawn.get("agent_nickname") or meta.get("agent_nickname"),
        # Codex reads "agent_type" as another name of agent_role (serde alias) and
        # writes the spawned agent's place in the tree as agent_path (0.9x+).
        "agent_role": spawn.get("agent_role") or spawn.get("agent_type")
        or meta.get("agent_role"),
        "agent_path": spawn.get("agent_path"),
        "thread_source": meta.get("thread_source"),
        "source": source_name,
        "subagent": subagent,
        "originator": meta.get("originator"),
        "model_provider": meta.get("model_provider"),
        "cli_version": meta.get("cli_version"),
    }
    base = meta.get("history_base")
    history_start = meta.get("subagent_history_start_ordinal")
    paginated = not isinstance(history_start, int) and isinstance(base, dict)
    if paginated and isinstance(base, dict):
        history_start = base.get("end_ordinal_exclusive")
    return {
        # 0.154+: a fork's rollout holds only its own records; the history is its
        # source's, up to an ordinal of the source (history_base), not copied in.
        **({"paginated": True} if paginated else {}),
        "thread_id": meta.get("id"),
        "session_id": meta.get("session_id") or None,
        # Records before this ordinal are the parent's history, copied in.
        "history_start": history_start if isinstance(history_start, int) else None,
        "parent_thread_id": parent or None,
        "started_at": started if started is not None else line_ts,
        "cwd": meta.get("cwd"),
        "git_branch": git.get("branch"),
        "git_remote": git.get("repository_url"),
        "head_sha": git.get("commit_hash"),
        "attributes": {k: v for k, v in attrs.items() if v is not None},
    }


class _Record(NamedTuple):
    """A message-bearing line, with the turn context in force when it was written."""

    line: int
    ts: int
    kind: str
    payload: dict[str, Any]
    model: Any
    cwd: Any
    sandbox: Any


def _header(path: Path, lines: Lines,
            skipped: list[tuple[int, str]]) -> tuple[dict[str, Any], bool]:
    """The thread's facts from its first line, and whether the file is a legacy rollout
    (a bare ``{id, timestamp}`` header, bare items after it)."""
    meta: dict[str, Any] | None = None
    legacy = False
    if lines:
        first = lines[0][1]
        if first.get("type") == "session_meta" and isinstance(first.get("payload"), dict):
            meta = _meta_facts(first["payload"], parse_timestamp(first.get("timestamp")))
        elif "type" not in first and "id" in first:
            legacy = True
            meta = _meta_facts(first, None)
        if meta is not None and meta["thread_id"] is not None and not isinstance(
                meta["thread_id"], str):
            skipped.append((lines[0][0], "session_meta id is not text; the thread id is "
                                         "taken from the file name"))
            meta = None
    if meta is None or not meta.get("thread_id"):
        meta = _meta_facts({"id": _thread_id_from_name(path)}, None)
    return meta, legacy


def _context_cwd(lines: Lines, legacy: bool) -> str | None:
    """The cwd of the first ``<environment_context>`` user message, for a rollout whose
    header names none (rollouts of mid 2025: the header had no cwd, the context message
    Codex sent the model did)."""
    for _line, obj in lines:
        payload = obj if legacy else obj.get("payload")
        if not isinstance(payload, dict) or payload.get("type") != "message" or (
                payload.get("role") != "user"):
            continue
        text = _texts(payload.get("content")) or ""
        if "<environment_context>" in text:
            found = _CWD.search(text)
            return found.group(1).strip() or None if found else None
    return None


def _records(lines: Lines, meta: dict[str, Any], legacy: bool, inherited: set[int],
             skipped: list[tuple[int, str]]) -> list[_Record]:
    """The thread's own message-bearing lines in file order; ``turn_context`` lines set
    the model, cwd and sandbox of the lines after them."""
    records: list[_Record] = []
    model = sandbox = None
    cwd = meta["cwd"]
    last_ts = meta["started_at"]
    kind: Any
    payload: Any
    for line, obj in lines:
        if legacy:
            kind, payload, raw_ts = "response_item", obj, obj.get("timestamp")
        else:
            kind, payload, raw_ts = obj.get("type"), obj.get("payload"), obj.get("timestamp")
        ts = parse_timestamp(raw_ts) if raw_ts is not None else last_ts
        if kind == "turn_context" and isinstance(payload, dict):
            model = payload.get("model") or model
            cwd = payload.get("cwd") or cwd
            policy = payload.get("sandbox_policy")
            sandbox = (policy.get("type") if isinstance(policy, dict) else policy) or sandbox
            continue
        if line in inherited:
            continue
        if kind not in _MESSAGE_KINDS:
            if not legacy and kind not in _QUIET_KINDS:
                said = excerpt(kind) if isinstance(kind, str) else repr(type(kind).__name__)
                skipped.append((line, f"rollout line type {said} is not read"))
            continue
        if not isinstance(payload, dict):
            skipped.append((line, f"{kind} line without a payload object"))
            continue
        ptype = payload.get("type") if kind == "response_item" else None
        if kind == "response_item" and not (type(ptype) is str and ptype in _ITEM_TYPES) and (
                not legacy or isinstance(ptype, str)):  # legacy header, state lines: quiet
            said = (f"of type {excerpt(ptype)}" if isinstance(ptype, str) else
                    "without a type" if ptype is None else "whose type is not text")
            skipped.append((line, f"response_item {said} is not read"))
            continue
        if ts is None:
            skipped.append((line, "timestamp missing or not ISO 8601"))
            continue
        last_ts = ts
        records.append(_Record(line, ts, kind, payload, model, cwd, sandbox))
    return records


def parse_codex(path: Path, data: bytes) -> FileParse:
    """Parse one Codex rollout into pre-rows plus the thread facts it holds."""
    skipped: list[tuple[int, str]] = []
    lone: list[int] = []
    lines = list(json_lines(data, skipped, lone))
    meta, legacy = _header(path, lines, skipped)
    if not meta["cwd"]:
        meta["cwd"] = _context_cwd(lines, legacy)
    inherited = _inherited(lines, meta, legacy)
    records = _records(lines, meta, legacy, inherited, skipped)
    # Event messages repeat the response-item ones; used only when there are none.
    has_items = any(r.kind == "response_item" and r.payload.get("type") == "message"
                    for r in records)
    # 0.14x+: user turns may be written only as item_completed events (UserMessage).
    user_items = has_items and _has_user_items(records)
    # Turns a writer also wrote as the older events are read from those (as before).
    said = {r.payload.get("type") for r in records if r.kind == "event_msg"}
    completed = (not user_items and "user_message" not in said,
                 not has_items and "agent_message" not in said)
    buf = RowBuffer()
    tool_names: dict[str, str] = {}
    prev_mid: str | None = None
    answers: list[int] = []  # where assistant messages start: usage goes on them
    rollbacks = _rollbacks(lines, inherited)
    turns: list[str | None] = []  # per user turn still in force: the message before it
    undone = 0
    for record in records:
        while rollbacks and rollbacks[0][0] < record.line:
            # thread_rolled_back: the last N user turns were undone (their lines stay).
            # The next message follows the one before them, as Claude's rewinds do: the
            # undone turns stay as a branch, with their rows, files and usage (they ran).
            n = min(rollbacks.pop(0)[1], len(turns))
            if n:
                prev_mid = turns[-n]
                del turns[-n:]
                undone += n
        got = _parts(record, has_items, tool_names, completed)
        if got is None:
            continue
        role, parts = got
        if role == "user" and _turn_start(record, parts):
            turns.append(prev_mid)
        message = _message(record, meta, role, prev_mid)
        prev_mid = message.message_id
        if role == "assistant":
            answers.append(record.line)
        for part in parts:
            buf.add(message, part)
    if undone:
        meta["attributes"]["rolled_back_turns"] = undone
    # A rollout continuing another's history counts no usage before its own answers.
    fork = bool(inherited or meta.get("paginated") or meta["attributes"].get("forked_from_id")
                or (meta["parent_thread_id"] and len(buf)))
    usage = codex_usage(lines, inherited, answers, meta["thread_id"], fork)
    _usage_carriers(usage, answers, lines, meta, buf, prev_mid)
    facts = {**meta, "inherited_lines": len(inherited), **_thread_events(lines, inherited),
             "usage": usage}
    return with_lone_surrogates(FileParse("codex", buf.take(), facts, skipped), lone)


def _usage_carriers(usage: list[list[Any]], answers: list[int], lines: Lines,
                    meta: dict[str, Any], buf: RowBuffer, prev_mid: str | None) -> None:
    """A row for usage no answer of the rollout holds (a spawned child whose rollout has
    token counts and no message lines): an empty assistant message at the count's line,
    so the thread and its tokens stay (as a flat Claude line's usage gets a row)."""
    own = set(answers)
    ts_of = {line: obj.get("timestamp") for line, obj in lines}
    for line, _key, _counts in usage:
        if line in own:
            continue
        ts = parse_timestamp(ts_of.get(line)) or meta["started_at"]
        if ts is None:
            continue
        record = _Record(line, ts, "event_msg", {"type": "token_count"}, None, meta["cwd"],
                         None)
        message = _message(record, meta, "assistant", prev_mid)
        prev_mid = message.message_id
        buf.add(message, Part(0, "text", "event_msg", "token_count"))


def _rollbacks(lines: Lines, inherited: set[int]) -> list[tuple[int, int]]:
    """(line, turns) of the thread's own ``thread_rolled_back`` events (``num_turns``)."""
    out = []
    for line, obj in lines:
        payload = obj.get("payload")
        if type(payload) is dict and payload.get("type") == "thread_rolled_back" and (
                line not in inherited):
            n = payload.get("num_turns")
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                out.append((line, n))
    return out


def _turn_start(record: _Record, parts: list[Part]) -> bool:
    """Whether a user-role message starts a user turn: not one of the context messages
    Codex writes itself (a rollback counts only real turns, codex-rs
    ``is_user_turn_boundary``); a message from another agent does."""
    if record.kind == _INTER_AGENT or record.payload.get("type") == _AGENT_MESSAGE:
        return True
    text = next((p.content_text for p in parts if p.content_text), "") or ""
    return not text.lstrip().startswith(_CONTEXTUAL)


def _thread_events(lines: Lines, inherited: set[int]) -> dict[str, Any]:
    """What the thread's own events say about other threads: the threads it spawned
    (``collab_agent_spawn_end``'s ``new_thread_id``, a started ``sub_agent_activity``'s
    ``agent_thread_id``) and by which call, and when it ran reviews (entered/exited review
    mode)."""
    spawned: list[str] = []
    calls: dict[str, str] = {}  # spawned thread -> the call that spawned it
    reviews: list[list[int]] = []
    for line, obj in lines:
        payload = obj.get("payload")
        if line in inherited or not isinstance(payload, dict):
            continue
        if isinstance(payload.get("new_thread_id"), str):
            spawned.append(payload["new_thread_id"])
            if isinstance(payload.get("call_id"), str):  # collab_agent_spawn_end
                calls.setdefault(payload["new_thread_id"], payload["call_id"])
        elif payload.get("type") == "sub_agent_activity" and isinstance(
                payload.get("agent_thread_id"), str) and payload.get("kind") in (
                "started", None):
            # Newer writers: a "started" activity's event_id is the spawn call's id.
            spawned.append(payload["agent_thread_id"])
            if isinstance(payload.get("event_id"), str):
                calls.setdefault(payload["agent_thread_id"], payload["event_id"])
        kind = payload.get("type")
        ts = parse_timestamp(obj.get("timestamp"))
        if kind == "entered_review_mode" and ts is not None:
            reviews.append([ts, OPEN])
        elif kind == "exited_review_mode" and ts is not None and reviews and (
                reviews[-1][1] == OPEN):
            reviews[-1][1] = ts
    return {"spawned_threads": spawned, "spawn_calls": calls, "review_windows": reviews}


def _message(record: _Record, meta: dict[str, Any], role: str,
             prev_mid: str | None) -> Message:
    thread = meta["thread_id"]
    parent = meta["parent_thread_id"]
    attrs = meta["attributes"]
    native = record.payload.get("id") if isinstance(record.payload.get("id"), str) else None
    return Message(
        session_id=meta["session_id"] or thread, conversation_id=thread, model=record.model,
        cwd=record.cwd, git_branch=meta["git_branch"], git_remote=meta["git_remote"],
        head_sha=meta["head_sha"], client_version=attrs.get("cli_version"),
        entrypoint=attrs.get("originator"),
        user_type=attrs.get("thread_source") or ("subagent" if parent else None),
        permission_mode=record.sandbox, is_sidechain=parent is not None, agent_id=None,
        parent_thread_id=parent,
        message_id=native or hashlib.sha256(f"{thread}:{record.line}".encode()).hexdigest()[:16],
        previous_message_id=id_list(prev_mid), provider_uuid=native, parent_uuid=None,
        logical_parent_uuid=None, source_tool_assistant_uuid=None, request_id=None,
        prompt_id=None, message_created_at=record.ts, role=role, hook_event=None,
        is_compact_summary=True if record.kind == "compacted" else None,
        compact_metadata=None, line=record.line,
    )


def _parts(record: _Record, has_items: bool, tool_names: dict[str, str],
           completed: tuple[bool, bool] = (False, False)
           ) -> tuple[str, list[Part]] | None:
    """(role, parts) of a record; None for a record that is not a message."""
    payload = record.payload
    if record.kind == "event_msg":
        if payload.get("type") == _ITEM_COMPLETED:
            return _completed_item(payload, *completed)
        return None if has_items else _event_message(payload)
    if record.kind == "compacted":
        return "system", [Part(0, "text", "compacted", "compact_summary",
                               payload.get("message"))]
    if record.kind == _INTER_AGENT:
        text = payload.get("content")
        return "user", [Part(0, "text", _INTER_AGENT, _INTER_AGENT,
                             text if isinstance(text, str) else None)]
    ptype = payload.get("type")
    if not isinstance(ptype, str):
        return None  # not an item this reader knows
    if ptype == "message":
        role = payload.get("role") or "assistant"
        parts = _message_item(payload)
        if role == "assistant" and len(parts) == 1:
            said = _communication(parts[0].content_text)
            if said is not None:  # another agent's message, wrapped as an assistant one
                return "user", [Part(0, "text", _INTER_AGENT, _INTER_AGENT, said)]
        return role, parts
    if ptype == _AGENT_MESSAGE:
        return "user", [Part(0, "text", _AGENT_MESSAGE, _AGENT_MESSAGE,
                             _texts(payload.get("content")))]
    if ptype == "reasoning":
        return "assistant", [_reasoning_item(payload)]
    if ptype in _CALLS:
        return "assistant", [_call_item(payload, tool_names)]
    if ptype in _OUTPUTS:
        return "tool", [_output_item(payload, tool_names)]
    if ptype in _TOOL_SEARCH or ptype == _IMAGE_CALL:
        return _searched_or_drawn(payload, ptype, tool_names)
    return None


def _searched_or_drawn(payload: dict[str, Any], ptype: str,
                       tool_names: dict[str, str]) -> tuple[str, list[Part]]:
    """A tool search's call or output, or an image generation (a call answered in place)."""
    if ptype == _IMAGE_CALL:
        call_id = _text_id(payload.get("id")) or _text_id(payload.get("call_id"))
        prompt = payload.get("revised_prompt")
        args = dumps({"revised_prompt": prompt}) if isinstance(prompt, str) else None
        return "assistant", [Part(0, "tool_call", ptype, "tool_use", tool_name="image_generation",
                                  tool_call_id=call_id, tool_args=args)]
    call_id = _text_id(payload.get("call_id"))
    if ptype == "tool_search_call":
        if call_id is not None:
            tool_names[call_id] = "tool_search"
        arguments = payload.get("arguments")
        return "assistant", [Part(0, "tool_call", ptype, "tool_use", tool_name="tool_search",
                                  tool_call_id=call_id, tool_args=json_text(arguments))]
    tools = payload.get("tools")
    return "tool", [Part(0, "tool_result", ptype, "tool_result",
                         dumps(tools) if tools is not None else None,
                         tool_name=tool_names.get(call_id or "", "tool_search"),
                         tool_call_id=call_id, tool_result_for=call_id,
                         status=STATUS_SUCCESS)]


_ITEM_COMPLETED = "item_completed"


def _has_user_items(records: list[_Record]) -> bool:
    """Whether a user turn is written as a response item (a user message that is not
    context Codex writes itself)."""
    for r in records:
        if r.kind == "response_item" and r.payload.get("type") == "message" and (
                r.payload.get("role") == "user"):
            text = _texts(r.payload.get("content")) or ""
            if not text.lstrip().startswith(_CONTEXTUAL):
                return True
    return False


def _completed_item(payload: dict[str, Any], users: bool,
                    answers: bool) -> tuple[str, list[Part]] | None:
    """An ``item_completed`` event (0.14x+: ``{"item": {"type": "UserMessage" |
    "AgentMessage", "content": [{"type": "text" | "Text", "text"}]}}``): a user turn when
    the rollout writes its user turns nowhere else (``users``: no such response item, no
    ``user_message`` event), an answer likewise (``answers``)."""
    item = payload.get("item")
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    if kind == "UserMessage" and users:
        role = "user"
    elif kind == "AgentMessage" and answers:
        role = "assistant"
    else:
        return None
    content = item.get("content")
    texts = [c.get("text") for c in content if isinstance(c, dict) and isinstance(
        c.get("text"), str)] if isinstance(content, list) else []
    if not texts:
        return None
    return role, [Part(i, "text", "event_msg", kind, t) for i, t in enumerate(texts)]


def _event_message(payload: dict[str, Any]) -> tuple[str, list[Part]] | None:
    """A ``user_message``/``agent_message`` event (other events are not messages)."""
    ptype = payload.get("type")
    if ptype not in ("user_message", "agent_message"):
        return None
    text = payload.get("message")
    role = "user" if ptype == "user_message" else "assistant"
    return role, [Part(0, "text", "event_msg", ptype, text if isinstance(text, str) else None)]


def _communication(text: str | None) -> str | None:
    """The words of a message from another agent that Codex (MultiAgentV2) recorded as an
    assistant message whose text is the JSON of an ``InterAgentCommunication``
    (``author``, ``recipient``, ``content``, ``trigger_turn``); None for any other text."""
    if not text or text[:1] != "{" or '"recipient"' not in text:
        return None
    try:
        doc = loads(text)
    except (ValueError, RecursionError):
        return None
    if type(doc) is not dict or not {"author", "recipient", "content"} <= doc.keys():
        return None
    content = doc["content"]
    return content if isinstance(content, str) else None


def _message_item(payload: dict[str, Any]) -> list[Part]:
    """A ``message`` response item: one part per text or image item."""
    parts: list[Part] = []
    content = payload.get("content")
    for item in content if isinstance(content, list) else []:
        if not isinstance(item, dict):
            continue
        itype = item.get("type")
        if itype in _TEXT_ITEMS:
            parts.append(Part(len(parts), "text", "message", "text", item.get("text")))
        elif itype == "input_image":
            parts.append(Part(len(parts), "image", "message", itype))
    if isinstance(content, str):
        parts.append(Part(len(parts), "text", "message", "text", content))
    return parts


def _reasoning_item(payload: dict[str, Any]) -> Part:
    """A ``reasoning`` item: its summary and content texts as one thinking part."""
    summary = _texts(payload.get("summary"))
    body = _texts(payload.get("content"))
    joined = "\n".join(t for t in (summary, body) if t) or None
    return Part(0, "reasoning", "reasoning", "thinking", joined)


def _call_item(payload: dict[str, Any], tool_names: dict[str, str]) -> Part:
    """A tool call (function, custom tool, local shell, web search)."""
    ptype = payload["type"]
    call_id = payload.get("call_id") or payload.get("id")
    name = payload.get("name") or ptype.removesuffix("_call")
    space = payload.get("namespace")
    if isinstance(space, str) and space and isinstance(name, str):
        # Newer writers split an MCP tool's name: {"namespace": "mcp__weather__", "name":
        # "get_forecast"} is the tool the model called "mcp__weather__get_forecast" (a
        # namespace without the trailing "__" is joined by one, as Codex flattens it).
        name = space + name if space.endswith("__") else f"{space}__{name}"
    if ptype == "function_call":
        args = json_text(payload.get("arguments"))
    elif ptype == "custom_tool_call":
        args = json_text(payload.get("input"))
    else:
        action = payload.get("action")
        args = dumps(action) if action is not None else None
    if isinstance(call_id, str):
        tool_names[call_id] = name
    return Part(0, "tool_call", ptype, "tool_use", tool_name=name, tool_call_id=call_id,
                tool_args=args)


def _output_item(payload: dict[str, Any], tool_names: dict[str, str]) -> Part:
    """A tool call's output; a ``{"success": false}`` output is an error."""
    call_id = payload.get("call_id")
    output = payload.get("output")
    err = None
    text: str | None
    if isinstance(output, str):
        text = output
        if output[:1] == "{" and '"exit_code"' in output:
            err = _exit_failed(output)
    elif isinstance(output, list):
        text = _texts(output)
    elif isinstance(output, dict):
        inner = output.get("content")
        # {"content": [content items], "success": ...}: the items' text, as for a list
        text = (inner if isinstance(inner, str) else _texts(inner) if isinstance(inner, list)
                else dumps(output))
        err = True if output.get("success") is False else None
    else:
        text = None
    return Part(0, "tool_result", payload["type"], "tool_result", text,
                tool_name=tool_names.get(str(call_id)), tool_call_id=call_id,
                tool_result_for=call_id, is_error=err,
                status=STATUS_ERROR if err else STATUS_SUCCESS)


def _exit_failed(output: str) -> bool | None:
    """True for an early shell output ``{"output": ..., "metadata": {"exit_code": N,
    "duration_seconds": ...}}`` with N != 0: codex-rs marked such a call failed
    (``success: Some(exit_code == 0)``) but wrote only the text, so the exit code is the
    one trace of it. None for any other text."""
    try:
        doc = loads(output)
    except (ValueError, RecursionError):
        return None
    meta = doc.get("metadata") if isinstance(doc, dict) and "output" in doc else None
    code = meta.get("exit_code") if isinstance(meta, dict) else None
    if not isinstance(code, int) or isinstance(code, bool):
        return None
    return True if code != 0 else None


def _inherited(lines: Lines, meta: dict[str, Any], legacy: bool) -> set[int]:
    """Return the line numbers a forked/spawned rollout copied from its parent.

    Newer rollouts say where the child's own history starts
    (``subagent_history_start_ordinal`` or ``history_base.end_ordinal_exclusive``): records
    before that ordinal (a record's ``ordinal``, else its position) are the copy. Otherwise
    the copy sits right after the owner's ``session_meta`` (sometimes behind the parent's
    own ``session_meta``). It ends with the parent's spawn call when the owner names it
    (``spawn_call_id``); otherwise at the first line stamped no earlier than the owner's
    start, when copied lines keep their original, earlier timestamps. A copy stamped at
    fork time is found later, against the parent's own rollout (:mod:`.codex_links`).
    """
    start_ordinal = meta.get("history_start")
    if start_ordinal is not None and not legacy and meta.get("paginated"):
        # The ordinal counts in the source: only a record numbered below it is a copy.
        return {line for position, (line, obj) in enumerate(lines) if position and type(
            obj.get("ordinal")) is int and obj["ordinal"] < start_ordinal}
    if start_ordinal is not None and not legacy:
        return {line for position, (line, obj) in enumerate(lines) if position and (
            obj["ordinal"] if isinstance(obj.get("ordinal"), int) else position)
            < start_ordinal}
    attrs = meta["attributes"]
    forked = bool(meta["parent_thread_id"] or attrs.get("forked_from_id"))
    second_meta = any(o.get("type") == "session_meta" for _, o in lines[1:])
    if legacy or not (forked or second_meta):
        return set()
    spawn_call = attrs.get("spawn_call_id")
    has_spawn_line = spawn_call is not None and any(
        isinstance(o.get("payload"), dict) and o["payload"].get("call_id") == spawn_call
        and o["payload"].get("type") in _CALLS for _, o in lines[1:])
    start = meta["started_at"]
    out: set[int] = set()
    for line, obj in lines[1:]:
        if obj.get("type") == "session_meta":
            out.add(line)
            continue
        if obj.get("type") == "turn_context":
            continue
        payload = obj.get("payload")
        if has_spawn_line:
            out.add(line)
            if isinstance(payload, dict) and payload.get("call_id") == spawn_call:
                break
            continue
        ts = parse_timestamp(obj.get("timestamp"))
        if start is None or ts is None or ts >= start:
            break
        out.add(line)
    return out
