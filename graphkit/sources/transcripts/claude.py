"""Claude Code transcripts (``~/.claude/projects/...``) → pre-rows of one file.

Handled layouts, all under one project folder:

- ``<session>.jsonl``: the main loop; also holds *inline* sidechain entries in older versions
  (``isSidechain: true`` lines written between main-loop lines, see ``sidechain_integrated``).
- ``<session>/subagents/agent-<id>.jsonl`` (+ sidecar ``agent-<id>.meta.json``, read by
  :mod:`graphkit.sources.transcripts.read`), and the older ``agent-<id>.jsonl`` beside the sessions.
- ``<session>/subagents/workflows/<runId>/agent-<id>.jsonl``: Workflow-tool agents, whose
  ``sessionId`` reads ``<session>#agent-<id>``.
- ``{"loglines": [...]}`` JSON exports (claude-code-transcripts).

``agent-acompact-*`` files are compaction runs: Claude spawns them itself to summarise a
session (no Task/Agent call). They are read as threads of their session and classified
``compaction`` by :mod:`graphkit.sources.transcripts.claude_links`; lines they replay from
the session (same ``uuid``) are kept once, in the session's own file. 2.0.x "Warmup" agent
files are recognised by their first prompt and classified ``warmup`` there too.

Of ``attachment`` lines only a ``queued_command`` (a prompt typed while a turn ran, 2.1.x)
is a message, a user one; server tool results (``web_search_tool_result`` and kin) keep
their pages' titles and urls, and their error objects are errors; the API's MCP connector
calls (``mcp_tool_use``) are named ``mcp__<server>__<tool>``. Lines of the "flat" shape
(``role``/``model``/``usage``/``content`` at the top, no envelope ``type``) are read as the
entries they stand for. Bookkeeping entries (:data:`QUIET_TYPES`) are read as nothing; an
entry of any other type is a skipped line naming it.

What one file cannot know (resume duplicates, the spawning call named in another file) is
returned as ``facts`` and settled in :mod:`graphkit.sources.transcripts.links` over all files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from graphkit.core.errors import excerpt
from graphkit.sources.transcripts.buffer import (
    LINE_AT,
    MESSAGE_COLUMNS,
    PART_COLUMNS,
    STATUS_ERROR,
    STATUS_SUCCESS,
    FileParse,
    Part,
    RowBuffer,
    dumps_decoded,
    id_list,
    json_lines,
    parse_timestamp,
    with_lone_surrogates,
)
from graphkit.sources.transcripts.claude_records import (
    QUIET_RECORDS,
    SESSION_RECORDS,
    is_job_state,
    job_state_facts,
    session_record,
)
from graphkit.sources.transcripts.extras import ClaudeUsage, claude_links, web_searches
from graphkit.sources.transcripts.files import holds_lone_surrogate, json_document
from graphkit.sources.transcripts.sidechains import (
    SideLine,
    Spawn,
    inline_chain_agents,
    synthetic_id,
)

SPAWN_TOOLS = frozenset({"Task", "Agent"})
# The model Claude Code writes on messages it made itself, no model having answered
# ("API Error: 529 …", "No response requested."): no model, as other readers take it.
SYNTHETIC_MODEL = "<synthetic>"
_ROW_TYPES = frozenset({"user", "assistant", "system"})
# Entry types Claude Code writes that hold no message: session titles and tags, file and
# attribution snapshots, queue and mode bookkeeping, context-collapse records, progress
# echoes of a subagent's messages (its own file has them). Read as nothing, quietly; any
# other type is a skipped line that says its type (a newer writer's entry is counted, not
# silently lost). Names as Claude Code's writer and public readers list them.
QUIET_TYPES = frozenset({
    "summary", "custom-title", "ai-title", "last-prompt", "task-summary", "tag",
    "agent-name", "agent-color", "agent-setting", "pr-link", "bridge-session",
    "file-history-snapshot", "attribution-snapshot", "queue-operation", "progress",
    "speculation-accept", "mode", "permission-mode", "isolation-latch",
    "content-replacement", "marble-origami-commit",
    "marble-origami-snapshot", "marble-origami-reset", "attachment",
})
_FLAT_KEYS = ("role", "model", "usage", "content", "id", "stop_reason")
_ATTACHMENT_TYPE_AT = len(MESSAGE_COLUMNS) + PART_COLUMNS.index("attachment_type")
_FOOTER = "agentId: "
_MESSAGE_ID_AT = MESSAGE_COLUMNS.index("message_id")


class ClaudeLayout(msgspec.Struct, frozen=True):
    """Where a file sits in the projects tree, and what its path alone says."""

    session_hint: str          # session id for lines that carry none
    agent_id: str | None       # from ``agent-<id>.jsonl``
    workflow_run_id: str | None
    compaction: bool
    folder_session: str | None = None  # the session a ``<session>/subagents/`` folder names


@lru_cache(maxsize=1024)  # read.py asks again for the file just parsed
def claude_layout(path: Path) -> ClaudeLayout:
    """Return what the path of a Claude transcript says about its session and agent."""
    # The last five names of the path, "" above its root (Path.parent's names, without
    # making a Path per parent).
    parts = path.parts
    names = ("", "", "", "", "", *(parts[1:] if path.anchor else parts))[-5:]
    stem = names[4].split(".", 1)[0]
    if not stem.startswith("agent-"):
        return ClaudeLayout(stem, None, None, False)
    agent = stem[len("agent-"):]
    compaction = agent.startswith("acompact")
    if names[2] == "workflows" and names[1] == "subagents":
        # <session>/subagents/workflows/<runId>/agent-<id>.jsonl
        return ClaudeLayout(names[0], agent, names[3], compaction, names[0])
    if names[3] == "subagents":
        return ClaudeLayout(names[2], agent, None, compaction, names[2])
    return ClaudeLayout(stem, agent, None, compaction)


def _entries(path: Path, data: bytes, skipped: list[tuple[int, str]],
             lone: list[int]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, entry) for a JSONL file or a ``{"loglines": [...]}`` document
    (whose "lines" are its loglines: a lone surrogate's place is the logline's number)."""
    if path.suffix == ".json":
        try:
            whole: list[int] = []
            doc = json_document(data, whole)
        except ValueError:
            skipped.append((1, "not valid JSON"))
            return
        except RecursionError:
            skipped.append((1, "JSON nested too deeply to read"))
            return
        lines = doc.get("loglines") if isinstance(doc, dict) else None
        if not isinstance(lines, list):
            skipped.append((1, "JSON document without a 'loglines' list"))
            return
        if whole:  # which loglines held one: the document as read, before its repair
            as_read = json.loads(data)["loglines"]
            lone.extend(n for n, e in enumerate(as_read, 1) if holds_lone_surrogate(e))
        for number, entry in enumerate(lines, 1):
            if isinstance(entry, dict):
                yield number, entry
            else:
                skipped.append((number, "logline is not a JSON object"))
        return
    for number, entry in json_lines(data, skipped, lone):
        yield number, entry


def _result_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(t for t in texts if isinstance(t, str))
    return None


def _server_result(content: Any) -> tuple[str | None, bool | None]:
    """The text and error flag of a server tool's result block (``web_search_tool_result``
    and the like, Anthropic API): a list of results (``web_search_result``: title and url
    per line; their page text is encrypted), one result object (``stdout`` of code
    execution, a fetched ``url``), or an error object (``type`` ``*_error`` with an
    ``error_code``), which no ``is_error`` flag marks."""
    if isinstance(content, dict):
        kind = content.get("type")
        if isinstance(kind, str) and kind.endswith("_error"):
            code = content.get("error_code")
            return (code if isinstance(code, str) else kind), True
        for key in ("stdout", "url", "text"):
            if isinstance(content.get(key), str):
                return content[key], None
        return None, None
    if isinstance(content, list):
        lines = []
        for item in content:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "text" and isinstance(item.get("text"), str):
                lines.append(item["text"])
                continue
            said = [item[k] for k in ("title", "url") if isinstance(item.get(k), str)]
            if said:
                lines.append(" ".join(said))
        return "\n".join(lines), None
    return _result_text(content), None


QUEUED = "queued_command"


def _queued_prompt(e: dict[str, Any]) -> list[Any] | None:
    """The blocks of a ``queued_command`` attachment's prompt (text, or content blocks
    when it carried images); None for other attachments and empty prompts (agentsview
    #401/#406 read them so: ``{"type": "attachment", "attachment": {"type":
    "queued_command", "commandMode": "prompt", "prompt": ...}}``)."""
    att = e.get("attachment")
    if not isinstance(att, dict) or att.get("type") != QUEUED:
        return None
    prompt = att.get("prompt")
    if isinstance(prompt, str):
        return [{"type": "text", "text": prompt}] if prompt.strip() else None
    if isinstance(prompt, list) and any(isinstance(b, dict) for b in prompt):
        return prompt
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


def _prompt_text(blocks: list[Any]) -> str | None:
    """The text a user entry says (its first text block): a sidechain's task prompt."""
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "text":
            value = block.get("text")
            return value if isinstance(value, str) else None
    return None


class _Content(NamedTuple):
    """What an entry says before its parts: its blocks and the message-level fields."""

    blocks: list[Any]
    role: str
    model: str | None = None
    native_id: str | None = None   # ``message.id``: shared by the lines of a split message
    subtype: str | None = None


def _system_content(e: dict[str, Any]) -> _Content | None:
    """A ``system`` entry as one text block; None for bookkeeping with nothing to show."""
    text = e.get("content")
    subtype = e.get("subtype")
    if subtype != "compact_boundary" and not (isinstance(text, str) and text):
        return None  # hook/duration bookkeeping
    return _Content([{"type": "text", "text": text if isinstance(text, str) else None}],
                    "system", subtype=subtype)


def _result_links(e: dict[str, Any], side: bool) -> tuple[str | None, str | None]:
    """The agent and Workflow run an entry's ``toolUseResult`` names (for its first result)."""
    tur = e.get("toolUseResult")
    named = tur.get("agentId") if isinstance(tur, dict) else None
    run_id = tur.get("runId") if isinstance(tur, dict) else None
    if not named and not side and isinstance(e.get("agentId"), str):
        named = e.get("agentId")  # v2.0 wrote the spawned agent beside the result
    return named, run_id


@dataclass(slots=True)
class _ClaudeFile:
    """The state of parsing one Claude transcript; :meth:`add` takes one self."""

    layout: ClaudeLayout
    skipped: list[tuple[int, str]] = field(default_factory=list)
    buf: RowBuffer = field(default_factory=RowBuffer)
    facts: dict[str, Any] = field(default_factory=dict)
    sessions: dict[str, None] = field(default_factory=dict)
    # message.id -> (message, next part index) for assistant messages split over lines
    groups: dict[str, tuple[tuple[Any, ...], list[int]]] = field(default_factory=dict)
    uuid_to_mid: dict[str, str] = field(default_factory=dict)
    uuid_line: dict[str, int] = field(default_factory=dict)
    # The entry on a given line, read again only to compare a repeated uuid.
    entry_at: Callable[[int], dict[str, Any] | None] = lambda _line: None
    # The file's bytes, searched for its first timestamp only for a flat line written
    # before any (kept as the reference the caller holds: no copy, no closure per file).
    data: bytes = b""
    tool_names: dict[str, str] = field(default_factory=dict)
    call_lines: dict[str, int] = field(default_factory=dict)  # call id -> its message's line
    side_lines: list[SideLine] = field(default_factory=list)
    spawns: dict[str, Spawn] = field(default_factory=dict)  # main-loop Task/Agent calls
    link_of_call: dict[str, str] = field(default_factory=dict)
    last_ts: int | None = None
    usage: ClaudeUsage = field(default_factory=ClaudeUsage)
    in_agent_file: bool = False
    # The entry being turned into rows, as its parts need it (set per entry rather than
    # passed around: this runs for every line of every transcript).
    e: dict[str, Any] = field(default_factory=dict)
    etype: str = ""
    ts: int = 0
    session: str = ""
    side: bool = False
    subtype: str | None = None
    results: int = 0   # tool results of the entry so far: only the first reads toolUseResult
    line: int = 0  # the line the entry's message starts on
    ts_of: dict[str, int | None] = field(default_factory=dict)  # timestamp text -> parsed
    session_of: dict[str, str] = field(default_factory=dict)  # sessionId text -> session

    def __post_init__(self) -> None:
        self.in_agent_file = self.layout.agent_id is not None
        self.facts = {
            "agent_id": self.layout.agent_id, "workflow_run_id": self.layout.workflow_run_id,
            "sessions": [], "agent_links": [], "run_links": [], "spawns": {},
            "inline_agents": {}, "orphan_chains": [], "warmup": None,
        }

    def add(self, line: int, e: dict[str, Any]) -> None:
        """Turn one entry into rows (or a skipped line, or nothing for other types)."""
        etype = e.get("type")
        if type(etype) is not str or etype not in _ROW_TYPES:  # (a list is no set member)
            flat = _flat_entry(e)
            if flat is not None:  # role/model/usage at the top (siropkin/budi#275)
                self._add_flat(line, flat)
            elif not isinstance(etype, str):
                self.skipped.append((line, "entry 'type' is not text"))
            elif etype == "attachment":
                # of attachments (hook output, reminders, ...) only a queued prompt is one
                if _queued_prompt(e) is not None:
                    self._add_queued(line, e)
            elif etype in SESSION_RECORDS:  # 2.1.2xx: facts of the session (.claude_records)
                self._session_record(line, e, etype)
            elif etype not in QUIET_TYPES and etype not in QUIET_RECORDS:  # a str here
                self.skipped.append((line, f"entry type {excerpt(etype)} is not read"))
            return
        raw_ts = e.get("timestamp")
        if raw_ts is None:
            ts = self.last_ts
        elif type(raw_ts) is str:
            # The lines of a split message share one timestamp: parse each text once.
            ts = self.ts_of.get(raw_ts)
            if ts is None:
                ts = self.ts_of[raw_ts] = parse_timestamp(raw_ts)
        else:
            ts = None
        if ts is None:
            self.skipped.append((line, "timestamp missing or not ISO 8601"))
            return
        self.last_ts = ts
        if etype == "system":
            content = _system_content(e)
            if content is None:
                return
            self._add_message(line, e, etype, ts, content.blocks, content.role, None, None,
                              content.subtype, None)
            return
        # A user or assistant entry (nearly every line): its content, or why it has none.
        msg = e.get("message")
        if not isinstance(msg, dict):
            self.skipped.append((line, f"{etype} entry without a 'message' object"))
            return
        blocks = msg.get("content")
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        elif not isinstance(blocks, list):
            self.skipped.append((line, f"{etype} message without content"))
            return
        # The content's fields as arguments, not a _Content: a NamedTuple instance is a
        # subtype allocation and deallocation per line (~0.5 us, against ~0.1 for a tuple).
        if etype == "assistant":
            native = msg.get("id")
            # Usage is counted only for messages carrying a usage object.
            usage = msg.get("usage")
            model = msg.get("model")
            self._add_message(line, e, etype, ts, blocks, msg.get("role") or etype,
                              None if model == SYNTHETIC_MODEL else model,
                              native if isinstance(native, str) else None,
                              None, usage if isinstance(usage, dict) else None)
            return
        self._add_message(line, e, etype, ts, blocks, msg.get("role") or etype, None, None,
                          None, None)

    def _add_message(self, line: int, e: dict[str, Any], etype: str, ts: int,
                     blocks: list[Any], role: str, model: str | None,
                     native_id: str | None, subtype: str | None,
                     usage: dict[str, Any] | None) -> None:
        """Rows of one entry: its message (or the split message it continues) and a
        row per content block; ``blocks`` to ``subtype`` are :class:`_Content`'s fields."""
        raw_session = e.get("sessionId")
        # A file's lines name one session or a few: each text is read once.
        session = self.session_of.get(raw_session) if type(raw_session) is str else None
        if session is None:
            session = self._session(raw_session)
        self.sessions[session] = None
        in_agent_file = self.in_agent_file
        side = in_agent_file or bool(e.get("isSidechain"))
        if in_agent_file:
            agent = e.get("agentId") or self.layout.agent_id
        else:
            agent = e.get("agentId") if side else None
        uuid = e.get("uuid")
        if not isinstance(uuid, str):
            uuid = None
        elif uuid in self.uuid_to_mid:
            self._repeated(line, uuid, e)  # the same entry written twice: count it once
            return
        group = self.groups.get(native_id) if native_id else None
        if group is not None:
            # A later content block of an assistant message split one block per line.
            message, next_part = group
        else:
            message = self._message(line, e, ts, session, side, agent, uuid, role, model)
            next_part = [0]
            if native_id:
                self.groups[native_id] = (message, next_part)
        if uuid is not None:
            self.uuid_to_mid[uuid] = message[_MESSAGE_ID_AT]
            self.uuid_line[uuid] = line
        if usage is not None:  # keyed by the line the message starts on
            self.usage.count(native_id, e.get("requestId"), usage, message[LINE_AT])
        if "forkedFrom" in e or "teamName" in e:
            claude_links(e, message[LINE_AT], self.facts)
        rows = self.buf.rows
        first_row = len(rows)
        self.e, self.etype, self.ts, self.session = e, etype, ts, session
        self.side, self.subtype, self.results = side, subtype, 0
        self.line = message[LINE_AT]
        part = self._part
        for block in blocks:
            if type(block) is not dict:
                continue
            index = next_part[0]
            next_part[0] += 1
            rows.append(message + part(block, index))  # RowBuffer.add, inlined
        if in_agent_file:
            if etype == "user" and self.facts["warmup"] is None:
                # 2.0.x started "Warmup" agents of its own: first prompt "Warmup", no caller.
                first = _prompt_text(blocks)
                self.facts["warmup"] = first is not None and first.strip() == "Warmup"
        elif side:
            prompt = _prompt_text(blocks) if etype == "user" else None
            self.side_lines.append(SideLine(session, line, uuid, e.get("parentUuid"), agent, ts,
                                            prompt, first_row, len(self.buf)))

    def _session_record(self, line: int, e: dict[str, Any], etype: str) -> None:
        """A record saying something of the session, not a message (continued-in,
        cost-state, fork-context-ref, relocated, worktree-state): into the facts."""
        raw = e.get("sessionId")
        session = self._session(raw) if isinstance(raw, str) and raw else (
            self.layout.folder_session or self.layout.session_hint)
        why = session_record(self.facts, line, e, etype, session)
        if why is not None:
            self.skipped.append((line, why))

    def _add_flat(self, line: int, e: dict[str, Any]) -> None:
        """A line of the "flat" shape (its message's fields at the top, no envelope
        ``type``), as the envelope it stands for. A line without a time takes the one
        before it, or, before any, the file's first time (budi reads them at the epoch)."""
        if e.get("timestamp") is None and self.last_ts is None:
            self.last_ts = _first_time(self.data)
            self.data = b""  # searched once: a file with no time at all is not searched again
        self.add(line, e)

    def _add_queued(self, line: int, e: dict[str, Any]) -> None:
        """A prompt the user sent while a turn was running (2.1.x writes it as an
        ``attachment`` of type ``queued_command``, no ``user`` line): a user message."""
        raw_ts = e.get("timestamp")
        ts = self.last_ts if raw_ts is None else parse_timestamp(raw_ts)
        if ts is None:
            self.skipped.append((line, "timestamp missing or not ISO 8601"))
            return
        self.last_ts = ts
        rows = self.buf.rows
        first = len(rows)
        self._add_message(line, e, "attachment", ts, _queued_prompt(e) or [], "user", None,
                          None, QUEUED, None)
        for i in range(first, len(rows)):
            row = rows[i]
            rows[i] = (*row[:_ATTACHMENT_TYPE_AT], QUEUED, *row[_ATTACHMENT_TYPE_AT + 1:])

    def _session(self, raw_session: Any) -> str:
        """The session a line's ``sessionId`` says (kept in ``session_of`` when text)."""
        # Workflow agents write ``<session>#agent-<id>``.
        if isinstance(raw_session, str) and raw_session:
            session = (raw_session.partition("#agent-")[0] if "#" in raw_session
                       else raw_session)
        else:
            session = self.layout.session_hint
        if self.layout.folder_session and session.startswith("agent-"):
            # Some versions stamp a subagent's own id as its session: the folder knows.
            session = self.layout.folder_session
        if type(raw_session) is str:
            self.session_of[raw_session] = session
        return session

    def _repeated(self, line: int, uuid: str, e: dict[str, Any]) -> None:
        """A uuid seen before in this file: fine if it says the same, else a conflict,
        reported as a skipped line (the first copy is the one kept)."""
        first = self.uuid_line.get(uuid)
        if first is None or first == line:
            return
        if _said(self.entry_at(first)) != _said(e):
            said = excerpt(uuid, 36, quote=False)
            self.skipped.append((line, f"uuid {said} written again with other content "
                                       f"than line {first}; the first is kept"))

    def _message(self, line: int, e: dict[str, Any], ts: int, session: str, side: bool,
                 agent: str | None, uuid: str | None, role: str, model: str | None
                 ) -> tuple[Any, ...]:
        """The message's columns, in :class:`Message` field order: a plain tuple (a
        Message instance cost ~0.8 us more to make and free, 58k times here)."""
        parent = e.get("parentUuid")
        prev = self.uuid_to_mid.get(parent, parent) if isinstance(parent, str) else None
        cm = e.get("compactMetadata")
        get = e.get
        return (
            session, None, model, get("cwd"), get("gitBranch"), None, None,
            get("version"), get("entrypoint"), get("userType"), get("permissionMode"),
            side, agent, None, uuid or synthetic_id(session, agent or "", line),
            id_list(prev), uuid, parent, get("logicalParentUuid"),
            get("sourceToolAssistantUUID"), get("requestId"), get("promptId"), ts,
            role, get("hookEvent"), True if get("isCompactSummary") else None,
            dumps_decoded(cm) if cm else None, line,
        )

    # A part's columns in Part field order. The common parts are plain tuples: they are
    # only ever joined to their message's row, and a Part instance cost a second
    # allocation and a call per row (0.3 us of ~8 a line).
    def _part(self, block: dict[str, Any], index: int) -> tuple[Any, ...]:
        btype = block.get("type")
        if btype == "text":  # most parts: the tuple built directly, as in _message
            return (index, "text", self.etype, self.subtype or "text", block.get("text"),
                    None, None, None, None, None, None, None, None)
        if btype in ("tool_use", "server_tool_use", "mcp_tool_use"):
            return self._tool_call(block, index)
        if btype == "tool_result":
            return self._tool_result(block, index, False)
        if isinstance(btype, str) and btype.endswith("_tool_result"):
            return self._tool_result(block, index, True)  # a server tool's result
        if btype in ("thinking", "redacted_thinking"):
            return (index, "thinking", self.etype, btype, block.get("thinking"), None, None,
                    None, None, block.get("signature"), None, None, None)
        if btype in ("image", "document"):
            source = block.get("source")
            media = source.get("media_type") if isinstance(source, dict) else None
            return Part(index, btype, self.etype, btype, attachment_type=media or btype)
        return Part(index, str(btype or "unknown"), self.etype, btype)

    def _tool_call(self, block: dict[str, Any], index: int) -> tuple[Any, ...]:
        call_id, name, args = block.get("id"), block.get("name"), block.get("input")
        server = block.get("server_name")
        if isinstance(server, str) and server and isinstance(name, str):
            # The API's MCP connector (``mcp_tool_use``: name and server apart): named as
            # Claude Code names the tools of the MCP servers it runs, mcp__server__tool.
            name = f"mcp__{server}__{name}"
        if isinstance(call_id, str) and isinstance(name, str):
            self.tool_names[call_id] = name
            self.call_lines[call_id] = self.line
            if name in SPAWN_TOOLS and isinstance(args, dict):
                self.facts["spawns"][call_id] = [args.get("subagent_type"),
                                                 args.get("description")]
                if not self.side:
                    prompt = args.get("prompt")
                    self.spawns[call_id] = Spawn(
                        self.ts, prompts={prompt} if isinstance(prompt, str) else set())
        return (index, "tool_call", self.etype, block.get("type"), None, name, call_id,
                dumps_decoded(args) if args is not None else None, None, None, None, None, None)

    def _tool_result(self, block: dict[str, Any], index: int,
                     server: bool) -> tuple[Any, ...]:
        for_id = block.get("tool_use_id")
        err = block.get("is_error")
        if server:  # web search, web fetch, code execution: their own result shapes
            text, failed = _server_result(block.get("content"))
            err = err if isinstance(err, bool) else failed
        else:
            text = _result_text(block.get("content"))
        if isinstance(for_id, str):
            self.results += 1
            named, run_id = (_result_links(self.e, self.side) if self.results == 1
                             else (None, None))
            agent_named = _footer_agent(text) or named
            if agent_named:
                self.facts["agent_links"].append([self.session, agent_named, for_id])
                self.link_of_call[for_id] = agent_named
            if run_id:
                self.facts["run_links"].append([self.session, run_id, for_id])
            if self.results == 1:
                tur = self.e.get("toolUseResult")
                if type(tur) is dict and ("searchCount" in tur or "results" in tur):
                    self.usage.searched(self.call_lines.get(for_id, self.line), for_id,
                                        web_searches(tur, self.tool_names.get(for_id)))
            spawn = self.spawns.get(for_id)
            if spawn is not None:
                spawn.result_ts = self.ts
                if self.results == 1:  # the result echoes the prompt it ran (some versions)
                    tur = self.e.get("toolUseResult")
                    prompt = tur.get("prompt") if isinstance(tur, dict) else None
                    if isinstance(prompt, str):
                        spawn.prompts.add(prompt)
        return (index, "tool_result", self.etype, block.get("type"), text,
                self.tool_names.get(str(for_id)), for_id, None, for_id, None, None,
                err if isinstance(err, bool) else None,
                STATUS_ERROR if err else STATUS_SUCCESS)

    def finish(self) -> FileParse:
        """The file's pre-rows and facts, inline sidechains given their agents."""
        self.facts["sessions"] = list(self.sessions)
        self.facts["usage"] = self.usage.facts()
        agent_ids = None
        if any(side.agent is None for side in self.side_lines):
            agent_ids = self.buf.agent_ids()
            for chain in inline_chain_agents(self.side_lines, self.spawns, self.link_of_call):
                if chain.call is not None:
                    self.facts["inline_agents"][chain.agent] = chain.call
                elif chain.orphan:
                    self.facts["orphan_chains"].append([chain.session, chain.agent, chain.line])
                for r in chain.rows:
                    agent_ids[r] = chain.agent
        return FileParse("claude", self.buf.take(agent_ids), self.facts, self.skipped)


def _flat_entry(e: dict[str, Any]) -> dict[str, Any] | None:
    """The envelope a "flat" line stands for, or None for any other line.

    Some Claude subagent files were reported with each line's message fields at the top:
    ``{"role": "assistant", "model": ..., "usage": {...}, "content": [...], ...}`` with no
    envelope ``type`` (siropkin/budi#275 reads them as a fallback), or as the API's own
    message object (``"type": "message"``). Such a line is read as the ``user`` or
    ``assistant`` entry it would have been; an assistant line without content gets one
    empty text part, so its usage has a row to sit on. Snake-case ``request_id`` and
    ``session_id`` are read as the envelope's names."""
    etype = e.get("type")
    role = e.get("role")
    if etype not in (None, "message") or role not in ("user", "assistant") or (
            "message" in e or ("content" not in e and "usage" not in e)):
        return None
    msg = {k: e[k] for k in _FLAT_KEYS if k in e}
    if msg.get("content") is None:
        msg["content"] = [{"type": "text", "text": None}] if role == "assistant" else []
    out = {k: v for k, v in e.items() if k not in _FLAT_KEYS}
    out["type"], out["message"] = role, msg
    for snake, camel in (("request_id", "requestId"), ("session_id", "sessionId")):
        if camel not in out and isinstance(out.get(snake), str):
            out[camel] = out[snake]
    return out


def _first_time(data: bytes) -> int | None:
    """The first ``timestamp`` of the file that parses (a flat line before any takes it)."""
    for m in re.finditer(rb'"timestamp"\s*:\s*"([^"]{1,64})"', data):
        ts = parse_timestamp(m.group(1).decode("utf-8", "replace"))
        if ts is not None:
            return ts
    return None


def _said(e: dict[str, Any] | None) -> tuple[Any, ...]:
    """What an entry says, for telling a repeat from a conflict (not where it sits)."""
    if e is None:
        return (None,)
    msg = e.get("message")
    if isinstance(msg, dict):
        return e.get("type"), msg.get("role"), msg.get("content")
    return e.get("type"), e.get("subtype"), e.get("content")


def _entry_reader(path: Path, data: bytes) -> Callable[[int], dict[str, Any] | None]:
    """A function giving the entry on a line (1-based), reading only that line again."""
    cache: list[Any] = []

    def entry_at(line: int) -> dict[str, Any] | None:
        if not cache:  # split once, on the first repeat (repeats are rare)
            if path.suffix == ".json":
                doc = json_document(data)
                cache.append([json.dumps(x) for x in doc.get("loglines", [])])
            else:
                cache.append(data.split(b"\n"))
        try:
            got = json_document(cache[0][line - 1])
        except (IndexError, ValueError, RecursionError):
            return None
        return got if isinstance(got, dict) else None

    return entry_at


def parse_claude(path: Path, data: bytes) -> FileParse:
    """Parse one Claude transcript into pre-rows plus the cross-file facts it holds."""
    if is_job_state(path):  # ~/.claude/jobs/<id>/state.json: a fork's parent, no rows
        facts, skipped = job_state_facts(data)
        return FileParse("claude", [], facts, skipped)
    state = _ClaudeFile(claude_layout(path))
    state.entry_at = _entry_reader(path, data)
    state.data = data
    lone: list[int] = []
    entries = (_entries(path, data, state.skipped, lone) if path.suffix == ".json"
               else json_lines(data, state.skipped, lone))  # JSONL: no generator in between
    add = state.add
    for line, entry in entries:
        add(line, entry)
    return with_lone_surrogates(state.finish(), lone)
