"""Codex rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) → pre-rows of one file.

One rollout is one *thread*: ``session_meta.payload.id`` → ``conversation_id``. The session
(the root thread) may need other files (a child names only its parent), so it is settled in
:mod:`graphkit.sources._resolve`; this module records the thread's own facts.

Formats handled:

- the envelope ``{timestamp, type, payload}`` with ``session_meta``, ``response_item``,
  ``event_msg``, ``turn_context`` and ``compacted`` lines (unknown types are ignored);
- very old rollouts: a bare ``{id, timestamp}`` first line, then bare response items;
- forks and spawned sub-threads: the first ``session_meta`` owns the file; the parent's lines
  copied in before the child's own content are not the child's (see ``_inherited``).

Codex writes each user/agent message twice, as a ``response_item`` message and as an
``event_msg`` (``user_message``/``agent_message``). Response items are the richer record,
so event messages are used only for a rollout that has no response-item messages at all
(older or minimal writers).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from graphkit.sources._rows import (
    STATUS_ERROR,
    STATUS_SUCCESS,
    FileParse,
    RowBuffer,
    dumps,
    id_list,
    json_lines,
    json_text,
    parse_timestamp,
)
from graphkit.sources.transcript_extras import codex_usage

_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}
_TEXT_ITEMS = {"input_text", "output_text", "text", "summary_text", "reasoning_text", "refusal"}


def _thread_id_from_name(path: Path) -> str:
    stem = path.name.split(".", 1)[0]
    return stem[-36:] if len(stem) >= 36 and stem[-28] == "-" else stem


def _texts(items: Any) -> str | None:
    if not isinstance(items, list):
        return None
    out = [i.get("text") for i in items if isinstance(i, dict) and i.get("type") in _TEXT_ITEMS]
    return "\n".join(t for t in out if isinstance(t, str)) if out else None


def _meta_facts(meta: dict[str, Any], line_ts: int | None) -> dict[str, Any]:
    source = meta.get("source")
    spawn: dict[str, Any] = {}
    if isinstance(source, dict):
        sub = source.get("subagent")
        found = sub.get("thread_spawn") if isinstance(sub, dict) else None
        spawn = found if isinstance(found, dict) else {}
        source_name = "subagent" if "subagent" in source else next(iter(source), None)
    else:
        source_name = source if isinstance(source, str) else None
    parent = spawn.get("parent_thread_id") or meta.get("parent_thread_id")
    git: dict[str, Any] = meta["git"] if isinstance(meta.get("git"), dict) else {}
    started = parse_timestamp(meta.get("timestamp"))
    attrs = {
        "thread_id": meta.get("id"),
        "forked_from_id": meta.get("forked_from_id") or spawn.get("forked_from_id"),
        "spawn_call_id": spawn.get("spawn_call_id"),
        "depth": spawn.get("depth"),
        "agent_nickname": spawn.get("agent_nickname") or meta.get("agent_nickname"),
        "agent_role": spawn.get("agent_role") or meta.get("agent_role"),
        "thread_source": meta.get("thread_source"),
        "source": source_name,
        "originator": meta.get("originator"),
        "model_provider": meta.get("model_provider"),
        "cli_version": meta.get("cli_version"),
    }
    return {
        "thread_id": meta.get("id"),
        "session_id": meta.get("session_id") or None,
        "parent_thread_id": parent or None,
        "started_at": started if started is not None else line_ts,
        "cwd": meta.get("cwd"),
        "git_branch": git.get("branch"),
        "git_remote": git.get("repository_url"),
        "head_sha": git.get("commit_hash"),
        "attributes": {k: v for k, v in attrs.items() if v is not None},
    }


def parse_codex(path: Path, data: bytes) -> FileParse:
    """Parse one Codex rollout into pre-rows plus the thread facts it holds."""
    skipped: list[tuple[int, str]] = []
    lines = list(json_lines(data, skipped))
    buf = RowBuffer()
    meta: dict[str, Any] | None = None
    legacy = False
    if lines:
        first = lines[0][1]
        if first.get("type") == "session_meta" and isinstance(first.get("payload"), dict):
            meta = _meta_facts(first["payload"], parse_timestamp(first.get("timestamp")))
        elif "type" not in first and "id" in first:
            legacy = True  # bare {id, timestamp} header, bare items after it
            meta = _meta_facts(first, None)
    if meta is None or not meta.get("thread_id"):
        meta = _meta_facts({"id": _thread_id_from_name(path)}, None)
    thread = meta["thread_id"]
    parent = meta["parent_thread_id"]

    inherited = _inherited(lines, meta, legacy)
    # (line, ts, kind, payload, model, cwd, sandbox) per message-bearing line, in file order.
    records: list[tuple[int, int, str, dict[str, Any], Any, Any, Any]] = []
    has_items = False
    model = cwd = sandbox = None
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
        if line in inherited or kind not in ("response_item", "event_msg", "compacted"):
            continue
        if not isinstance(payload, dict):
            skipped.append((line, f"{kind} line without a payload object"))
            continue
        if ts is None:
            skipped.append((line, "timestamp missing or not ISO 8601"))
            continue
        last_ts = ts
        if kind == "response_item" and payload.get("type") == "message":
            has_items = True
        records.append((line, ts, kind, payload, model, cwd, sandbox))

    tool_names: dict[str, str] = {}
    prev_mid: str | None = None
    user_type = meta["attributes"].get("thread_source") or ("subagent" if parent else None)
    role: str | None
    parts: list[tuple[Any, ...]]
    for line, ts, kind, payload, model, cwd, sandbox in records:
        ptype = payload.get("type")
        if kind == "event_msg":
            if has_items or ptype not in ("user_message", "agent_message"):
                continue
            role = "user" if ptype == "user_message" else "assistant"
            text = payload.get("message")
            parts = [("text", "event_msg", ptype, text if isinstance(text, str) else None,
                      None, None, None, None, None)]
        elif kind == "compacted":
            role = "system"
            parts = [("text", "compacted", "compact_summary", payload.get("message"),
                      None, None, None, None, None)]
        else:
            role, parts = _item_parts(payload, tool_names)
            if role is None:
                continue
        native = payload.get("id") if isinstance(payload.get("id"), str) else None
        mid = native or hashlib.sha256(f"{thread}:{line}".encode()).hexdigest()[:16]
        message = (
            meta["session_id"] or thread, thread, model, cwd, meta["git_branch"],
            meta["git_remote"], meta["head_sha"], meta["attributes"].get("cli_version"),
            meta["attributes"].get("originator"), user_type, sandbox, parent is not None, None,
            parent, mid, id_list(prev_mid), native, None, None, None,
            None, None, ts, role, None, True if kind == "compacted" else None, None, line,
        )
        prev_mid = mid
        for index, (ptype_out, prov_type, prov_sub, text, name, call_id, args, result_for,
                    err) in enumerate(parts):
            status = None
            if ptype_out == "tool_result":
                status = STATUS_ERROR if err else STATUS_SUCCESS
            buf.add(message, (index, ptype_out, prov_type, prov_sub, text, name, call_id, args,
                              result_for, None, None, err, status))
    table = buf.table()
    facts = {**meta, "inherited_lines": len(inherited),
             "usage": codex_usage(lines, inherited, table, thread)}
    return FileParse("codex", table, facts, skipped)


def _inherited(lines: list[tuple[int, dict[str, Any]]], meta: dict[str, Any],
               legacy: bool) -> set[int]:
    """Return the line numbers a forked/spawned rollout copied from its parent.

    The copy sits right after the owner's ``session_meta`` (sometimes behind the parent's own
    ``session_meta``). It ends with the parent's spawn call when the owner names it
    (``spawn_call_id``); otherwise at the first line stamped no earlier than the owner's
    start, since copied lines keep their original, earlier timestamps.
    """
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


def _item_parts(payload: dict[str, Any], tool_names: dict[str, str]) -> tuple[
        str | None, list[tuple[Any, ...]]]:
    """Return (role, parts) for one response item; role None for items that are not messages.

    A part is (part_type, provider_type, provider_subtype, text, tool_name, call_id,
    tool_args, tool_result_for, is_error).
    """
    ptype = payload.get("type")
    if ptype == "message":
        parts: list[tuple[Any, ...]] = []
        content = payload.get("content")
        for item in content if isinstance(content, list) else []:
            if not isinstance(item, dict):
                continue
            itype = item.get("type")
            if itype in _TEXT_ITEMS:
                parts.append(("text", "message", "text", item.get("text"),
                              None, None, None, None, None))
            elif itype == "input_image":
                parts.append(("image", "message", itype, None, None, None, None, None, None))
        if isinstance(content, str):
            parts.append(("text", "message", "text", content, None, None, None, None, None))
        return (payload.get("role") or "assistant"), parts
    if ptype == "reasoning":
        summary = _texts(payload.get("summary"))
        body = _texts(payload.get("content"))
        joined = "\n".join(t for t in (summary, body) if t) or None
        return "assistant", [("reasoning", "reasoning", "thinking", joined,
                              None, None, None, None, None)]
    if ptype in _CALLS:
        call_id = payload.get("call_id") or payload.get("id")
        name = payload.get("name") or ptype.removesuffix("_call")
        if ptype == "function_call":
            args = json_text(payload.get("arguments"))
        elif ptype == "custom_tool_call":
            args = json_text(payload.get("input"))
        else:
            action = payload.get("action")
            args = dumps(action) if action is not None else None
        if isinstance(call_id, str):
            tool_names[call_id] = name
        return "assistant", [("tool_call", ptype, "tool_use", None, name, call_id, args,
                              None, None)]
    if ptype in _OUTPUTS:
        call_id = payload.get("call_id")
        output = payload.get("output")
        err = None
        text: str | None
        if isinstance(output, str):
            text = output
        elif isinstance(output, list):
            text = _texts(output)
        elif isinstance(output, dict):
            inner = output.get("content")
            text = inner if isinstance(inner, str) else dumps(output)
            err = True if output.get("success") is False else None
        else:
            text = None
        return "tool", [("tool_result", ptype, "tool_result", text, tool_names.get(str(call_id)),
                         call_id, None, call_id, err)]
    return None, []
