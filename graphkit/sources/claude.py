"""Claude Code transcripts (``~/.claude/projects/...``) → pre-rows of one file.

Handled layouts, all under one project folder:

- ``<session>.jsonl``: the main loop; also holds *inline* sidechain entries in older versions
  (``isSidechain: true`` lines written between main-loop lines, see ``sidechain_integrated``).
- ``<session>/subagents/agent-<id>.jsonl`` (+ sidecar ``agent-<id>.meta.json``, read by
  :mod:`graphkit.sources.transcripts`), and the older ``agent-<id>.jsonl`` beside the sessions.
- ``<session>/subagents/workflows/<runId>/agent-<id>.jsonl``: Workflow-tool agents, whose
  ``sessionId`` reads ``<session>#agent-<id>``.
- ``{"loglines": [...]}`` JSON exports (claude-code-transcripts).

``agent-acompact-*`` files are compaction runs, deliberately NOT read: Claude spawns them
itself to summarise a session (no Task/Agent call, so no parent link), their input replays
the session (its messages would count twice), and their output already lands in the main
file as the ``isCompactSummary`` user message.

What one file cannot know (resume duplicates, the spawning call named in another file) is
returned as ``facts`` and settled in :mod:`graphkit.sources._resolve` over all files.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphkit.sources._rows import (
    MESSAGE_COLUMNS,
    STATUS_ERROR,
    STATUS_SUCCESS,
    FileParse,
    RowBuffer,
    dumps,
    id_list,
    json_lines,
    parse_timestamp,
)
from graphkit.sources.transcript_extras import ClaudeUsage, claude_links

SPAWN_TOOLS = frozenset({"Task", "Agent"})
_ROW_TYPES = frozenset({"user", "assistant", "system"})
_AGENT_POS = MESSAGE_COLUMNS.index("agent_id")
_FOOTER = "agentId: "
_MID_POS = MESSAGE_COLUMNS.index("message_id")
_OPEN = 2**62  # a spawn call whose result never came: its window stays open


@dataclass(frozen=True)
class ClaudeLayout:
    """Where a file sits in the projects tree, and what its path alone says."""

    session_hint: str          # session id for lines that carry none
    agent_id: str | None       # from ``agent-<id>.jsonl``
    workflow_run_id: str | None
    compaction: bool


def claude_layout(path: Path) -> ClaudeLayout:
    """Return what the path of a Claude transcript says about its session and agent."""
    stem = path.name.split(".", 1)[0]
    if not stem.startswith("agent-"):
        return ClaudeLayout(stem, None, None, False)
    agent = stem[len("agent-"):]
    compaction = agent.startswith("acompact")
    parent = path.parent
    if parent.parent.name == "workflows" and parent.parent.parent.name == "subagents":
        return ClaudeLayout(parent.parent.parent.parent.name, agent, parent.name, compaction)
    if parent.name == "subagents":
        return ClaudeLayout(parent.parent.name, agent, None, compaction)
    return ClaudeLayout(stem, agent, None, compaction)


def _entries(path: Path, data: bytes, skipped: list[tuple[int, str]]) -> Iterator[
        tuple[int, dict[str, Any]]]:
    """Yield (line number, entry) for a JSONL file or a ``{"loglines": [...]}`` document."""
    if path.suffix == ".json":
        try:
            doc = json.loads(data)
        except ValueError:
            skipped.append((1, "not valid JSON"))
            return
        lines = doc.get("loglines") if isinstance(doc, dict) else None
        if not isinstance(lines, list):
            skipped.append((1, "JSON document without a 'loglines' list"))
            return
        for number, entry in enumerate(lines, 1):
            if isinstance(entry, dict):
                yield number, entry
            else:
                skipped.append((number, "logline is not a JSON object"))
        return
    for number, entry in json_lines(data, skipped):
        yield number, entry


def _result_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(t for t in texts if isinstance(t, str))
    return None


def _footer_agent(text: str | None) -> str | None:
    """Return the agent id of an ``agentId: <id> (use SendMessage ...)`` result footer."""
    if not text:
        return None
    at = text.find(_FOOTER)
    if at < 0:
        return None
    tokens = text[at + len(_FOOTER):].split(None, 1)
    if not tokens:
        return None
    return tokens[0].strip("),.;'\"") or None


def _synthetic_id(*parts: object) -> str:
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:16]


def parse_claude(path: Path, data: bytes) -> FileParse:
    """Parse one Claude transcript into pre-rows plus the cross-file facts it holds."""
    layout = claude_layout(path)
    skipped: list[tuple[int, str]] = []
    buf = RowBuffer()
    facts: dict[str, Any] = {
        "agent_id": layout.agent_id, "workflow_run_id": layout.workflow_run_id,
        "sessions": [], "agent_links": [], "run_links": [], "spawns": {}, "inline_agents": {},
    }
    if layout.compaction:
        return FileParse("claude", buf.table(), facts, skipped)

    in_agent_file = layout.agent_id is not None
    sessions: dict[str, None] = {}
    groups: dict[str, tuple[tuple[Any, ...], list[int]]] = {}  # message.id -> (message, [next])
    uuid_to_mid: dict[str, str] = {}
    tool_names: dict[str, str] = {}
    # For inline sidechains without agentId: (uuid, parent, agentId, ts, first row, end row)
    side_lines: list[tuple[str | None, str | None, str | None, int, int, int]] = []
    spawn_windows: dict[str, list[int]] = {}   # main-loop Task/Agent id -> [call ts, result ts]
    link_of_call: dict[str, str] = {}
    last_ts: int | None = None
    usage = ClaudeUsage()

    for line, e in _entries(path, data, skipped):
        etype = e.get("type")
        if etype not in _ROW_TYPES:
            continue  # summary, queue-operation, progress, ...: tolerated, not messages
        raw_ts = e.get("timestamp")
        ts = parse_timestamp(raw_ts) if raw_ts is not None else last_ts
        if ts is None:
            skipped.append((line, "timestamp missing or not ISO 8601"))
            continue
        last_ts = ts
        msg = e.get("message")
        if etype == "system":
            text = e.get("content")
            subtype = e.get("subtype")
            if subtype != "compact_boundary" and not (isinstance(text, str) and text):
                continue  # hook/duration bookkeeping with nothing to show
            blocks: list[Any] = [{"type": "text", "text": text if isinstance(text, str) else None}]
            role, model, native_mid = "system", None, None
        else:
            if not isinstance(msg, dict):
                skipped.append((line, f"{etype} entry without a 'message' object"))
                continue
            content = msg.get("content")
            if isinstance(content, str):
                blocks = [{"type": "text", "text": content}]
            elif isinstance(content, list):
                blocks = content
            else:
                skipped.append((line, f"{etype} message without content"))
                continue
            role = msg.get("role") or etype
            model = msg.get("model") if etype == "assistant" else None
            native_mid = msg.get("id") if etype == "assistant" else None
            subtype = None

        raw_sid = e.get("sessionId")
        session = (raw_sid.partition("#agent-")[0] if isinstance(raw_sid, str) and raw_sid
                   else layout.session_hint)
        sessions[session] = None
        side = in_agent_file or bool(e.get("isSidechain"))
        agent = (e.get("agentId") or layout.agent_id) if in_agent_file else (
            e.get("agentId") if side else None)
        uuid = e.get("uuid") if isinstance(e.get("uuid"), str) else None
        if uuid is not None and uuid in uuid_to_mid:
            continue  # the same entry written twice in one file: count it once

        group = groups.get(native_mid) if native_mid else None
        if group is not None:
            # A later content block of an assistant message split one block per line.
            message, next_part = group
        else:
            mid = uuid or _synthetic_id(session, agent or "", line)
            parent = e.get("parentUuid")
            prev = uuid_to_mid.get(parent, parent) if isinstance(parent, str) else None
            cm = e.get("compactMetadata")
            message = (
                session, None, model, e.get("cwd"), e.get("gitBranch"), None, None,
                e.get("version"), e.get("entrypoint"), e.get("userType"),
                e.get("permissionMode"), side, agent, None, mid,
                id_list(prev), uuid, parent, e.get("logicalParentUuid"),
                e.get("sourceToolAssistantUUID"), e.get("requestId"), e.get("promptId"),
                ts, role, e.get("hookEvent"), True if e.get("isCompactSummary") else None,
                dumps(cm) if cm else None, line,
            )
            next_part = [0]
            if native_mid:
                groups[native_mid] = (message, next_part)
        if uuid is not None:
            uuid_to_mid[uuid] = message[_MID_POS]
        usage.note(e, message[-1])  # keyed by the line the message starts on
        claude_links(e, message[-1], facts)
        first_row = len(buf)
        tur = e.get("toolUseResult")
        named = tur.get("agentId") if isinstance(tur, dict) else None
        run_id = tur.get("runId") if isinstance(tur, dict) else None
        if not named and not side and isinstance(e.get("agentId"), str):
            named = e.get("agentId")  # v2.0 wrote the spawned agent beside the result

        for block in blocks:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            part: tuple[Any, ...]
            index = next_part[0]
            next_part[0] += 1
            if btype == "text":
                part = (index, "text", etype, subtype or "text", block.get("text"),
                        None, None, None, None, None, None, None, None)
            elif btype in ("tool_use", "server_tool_use"):
                call_id, name, args = block.get("id"), block.get("name"), block.get("input")
                if isinstance(call_id, str) and isinstance(name, str):
                    tool_names[call_id] = name
                    if name in SPAWN_TOOLS and isinstance(args, dict):
                        facts["spawns"][call_id] = [args.get("subagent_type"),
                                                    args.get("description")]
                        if not side:
                            spawn_windows[call_id] = [ts, _OPEN]
                part = (index, "tool_call", etype, btype, None, name, call_id,
                        dumps(args) if args is not None else None, None, None, None, None, None)
            elif btype == "tool_result" or (isinstance(btype, str)
                                            and btype.endswith("_tool_result")):
                for_id = block.get("tool_use_id")
                text = _result_text(block.get("content"))
                err = block.get("is_error")
                part = (index, "tool_result", etype, btype, text, tool_names.get(str(for_id)),
                        for_id, None, for_id, None, None, err if isinstance(err, bool) else None,
                        STATUS_ERROR if err else STATUS_SUCCESS)
                if isinstance(for_id, str):
                    agent_named = _footer_agent(text) or named
                    named = None  # toolUseResult describes the first result of the line only
                    if agent_named:
                        facts["agent_links"].append([session, agent_named, for_id])
                        link_of_call[for_id] = agent_named
                    if run_id:
                        facts["run_links"].append([session, run_id, for_id])
                        run_id = None
                    if for_id in spawn_windows:
                        spawn_windows[for_id][1] = ts
            elif btype in ("thinking", "redacted_thinking"):
                part = (index, "thinking", etype, btype, block.get("thinking"), None, None, None,
                        None, block.get("signature"), None, None, None)
            elif btype in ("image", "document"):
                source = block.get("source")
                media = source.get("media_type") if isinstance(source, dict) else None
                part = (index, btype, etype, btype, None, None, None, None, None, None,
                        media or btype, None, None)
            else:
                part = (index, str(btype or "unknown"), etype, btype, None, None, None, None,
                        None, None, None, None, None)
            buf.add(message, part)
        if side and not in_agent_file:
            side_lines.append((uuid, e.get("parentUuid"), agent, ts, first_row, len(buf)))

    facts["sessions"] = list(sessions)
    facts["usage"] = usage.facts()
    agent_ids = None
    if any(a is None for _, _, a, _, _, _ in side_lines):
        agent_ids = _infer_inline_agents(buf, side_lines, spawn_windows, link_of_call, facts)
    return FileParse("claude", buf.table(agent_ids), facts, skipped)


def _infer_inline_agents(
    buf: RowBuffer,
    side_lines: list[tuple[str | None, str | None, str | None, int, int, int]],
    spawn_windows: dict[str, list[int]],
    link_of_call: dict[str, str],
    facts: dict[str, Any],
) -> list[str | None]:
    """Give inline sidechain lines that lack ``agentId`` the agent of their chain.

    Lines chained by ``parentUuid`` share an agent; a chain naming no agent is matched to
    the one main-loop Task/Agent call whose call..result window holds its first line. With
    no single match the chain gets its own id, ``sidechain-<first uuid>``, and no parent
    link: guessing between parallel calls would invent lineage.
    """
    by_uuid = {u: i for i, (u, _, _, _, _, _) in enumerate(side_lines) if u}

    def root(i: int) -> int:
        seen = set()
        while True:
            p = side_lines[i][1]
            j = by_uuid.get(p) if p else None
            if j is None or j in seen:
                return i
            seen.add(j)
            i = j

    chains: dict[int, list[int]] = {}
    for i in range(len(side_lines)):
        chains.setdefault(root(i), []).append(i)
    agent_ids: list[str | None] = [row[_AGENT_POS] for row in buf.rows]
    for head, members in chains.items():
        named = next((side_lines[i][2] for i in members if side_lines[i][2]), None)
        if named is None:
            start = min(side_lines[i][3] for i in members)
            calls = [c for c, (lo, hi) in spawn_windows.items() if lo <= start <= hi]
            if len(calls) == 1:
                named = link_of_call.get(calls[0]) or f"sidechain-{calls[0]}"
                facts["inline_agents"][named] = calls[0]
            else:
                named = f"sidechain-{side_lines[head][0] or head}"
        for i in members:
            _, _, _, _, lo, hi = side_lines[i]
            for r in range(lo, hi):
                agent_ids[r] = named
    return agent_ids
