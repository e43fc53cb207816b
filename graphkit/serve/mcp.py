"""The graph for agents: an MCP server over stdio (``graphkit mcp``).

Each tool asks one question the command line answers (``sessions``, ``lineage``,
``tree``, ``usage``, ``files``) and returns, as ``structuredContent``, the records
that command prints with ``--json``: ``lineage`` the one record, the others
``{"records": [...]}`` (``sessions`` also a ``next_cursor``). The records come
from the functions the commands' ``--json`` paths call, so the two cannot drift
apart (tests/cli/test_mcp.py compares them over one snapshot). A bad argument or
an unknown id is a tool error carrying the command's one-line message.

Built on the official MCP Python SDK's low-level ``Server`` (the ``mcp`` extra):
the tools' input and output schemas are written here, not inferred from Python
types, so ``structuredContent`` is the record exactly.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphkit._version import __version__
from graphkit.core.errors import GraphkitError, printable
from graphkit.queries.files import files
from graphkit.queries.lineage import lineage_many, tree
from graphkit.queries.prices import GROUPINGS
from graphkit.queries.records import (
    file_records as file_record_list,
)
from graphkit.queries.records import (
    lineage_records,
    tree_records,
)
from graphkit.queries.records import (
    session_records as session_record_list,
)
from graphkit.queries.records import (
    usage_records as usage_record_list,
)
from graphkit.queries.sessions import sessions
from graphkit.queries.usage_report import usage

if TYPE_CHECKING:
    import mcp_types
    from mcp.server import Server

    from graphkit.enrich.base import LineageReader

# Sessions a page of the ``sessions`` tool holds by default; a cursor picks up after it.
PAGE = 500
MCP_PAGE_SIZE = PAGE  # the front door's name for it (graphkit mcp --page's default)
# One encoder for the records, as ``--json`` prints them (values JSON lacks as text).
_ENCODE = json.JSONEncoder(default=str).encode
MANIFEST_URI = "graphkit://snapshot/manifest.json"
CONTRACT_URI = "graphkit://snapshot/contract.yaml"

INSTRUCTIONS = (
    "graphkit answers questions about AI coding-agent sessions (Claude Code, Codex) from a "
    "built graph: who spawned whom (lineage, tree), what a thread and every subagent below "
    "it spent (usage: tokens and cost per thread, its subtree and the session) and which "
    "thread read or wrote a file (files). Ids are session ids, thread ids or subagent "
    "(agent) ids as the transcripts write them. Every tool is read-only.")


class ToolArgumentError(GraphkitError):
    """A tool was called with arguments its input schema refuses."""


def json_ready(record: dict[str, Any]) -> Any:
    """``record`` as ``--json`` prints it, read back: what ``structuredContent`` holds."""
    return json.loads(_ENCODE(record))


# --- the questions: each the records the matching command prints with --json -------------

def session_records(reader: LineageReader, since: str | None, until: str | None,
                    limit: int | None) -> list[dict[str, Any]]:
    """``graphkit sessions --json [--since] [--until] [--limit]``'s records."""
    return session_record_list(sessions(reader, since=since, until=until, limit=limit))


def lineage_record(reader: LineageReader, user_id: str) -> dict[str, Any]:
    """``graphkit lineage ID --json``'s record."""
    (record,) = lineage_records(lineage_many(reader, [user_id]))
    return record


def tree_records_of(reader: LineageReader, session_id: str) -> list[dict[str, Any]]:
    """``graphkit tree SESSION_ID --json``'s records: the nodes, then the continuations."""
    return tree_records(tree(reader, session_id))


def usage_records(reader: LineageReader, session_id: str | None,
                  by: str | None) -> list[dict[str, Any]]:
    """``graphkit usage [SESSION_ID] [--by BY] --json``'s records."""
    ids = [session_id] if session_id is not None else []
    return usage_record_list(usage(reader, ids, by=by))


def file_records(reader: LineageReader, session_id: str | None,
                 path: str | None) -> list[dict[str, Any]]:
    """``graphkit files [SESSION_ID] [--path PATH] --json``'s records."""
    ids = [session_id] if session_id is not None else []
    return file_record_list(files(reader, ids, path=path))


# --- the tools' schemas ----------------------------------------------------------------

_TEXT = {"type": "string"}
_MAYBE_TEXT = {"type": ["string", "null"]}
_REF = {"type": "object", "required": ["type", "id"],
        "properties": {"type": _TEXT, "id": _TEXT}}
# The four counts, and what Claude bills beside them where there are some.
_TOKENS = {"type": "object", "required": ["input_tokens", "output_tokens"],
           "properties": {k: {"type": "integer"} for k in (
               "input_tokens", "output_tokens", "cache_creation_input_tokens",
               "cache_read_input_tokens", "cache_creation_1h_input_tokens",
               "web_search_requests")}}


def _record(kind: str, required: list[str], /, **props: Any) -> dict[str, Any]:
    """A record's schema: its ``record`` field, the fields every one has; more may follow
    (a later graphkit may add columns, which a client should pass over)."""
    return {"type": "object", "required": ["record", *required],
            "properties": {"record": {"const": kind}, **props}}


def _records(*kinds: dict[str, Any], **more: Any) -> dict[str, Any]:
    item = kinds[0] if len(kinds) == 1 else {"oneOf": list(kinds)}
    return {"type": "object", "required": ["records", *more],
            "properties": {"records": {"type": "array", "items": item}, **more}}


def _args(required: list[str] | None = None, **props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or [],
            "additionalProperties": False}


_COST = {"type": ["number", "null"]}
_SESSION = _record("session", ["session_id", "threads", "agents", "messages", "tokens",
                               "cost_usd"],
                   session_id=_TEXT, threads={"type": "integer"},
                   agents={"type": "integer"}, messages={"type": "integer"},
                   first_seen=_MAYBE_TEXT, last_seen=_MAYBE_TEXT,
                   workspaces={"type": "array", "items": _TEXT},
                   models={"type": "array", "items": _TEXT}, tokens=_TOKENS,
                   total_tokens={"type": "integer"}, cost_usd=_COST, cost_note=_MAYBE_TEXT,
                   unpriced_models={"type": "array", "items": _TEXT})
_LINEAGE = _record("lineage", ["id", "session_id", "ancestors", "descendants", "continues"],
                   id=_TEXT, session_id=_TEXT,
                   ancestors={"type": "array", "items": _REF},
                   descendants={"type": "array", "items": _REF},
                   continues={"type": "array", "items": {
                       "type": "object", "required": ["type", "id", "how"],
                       "properties": {"type": _TEXT, "id": _TEXT, "how": _MAYBE_TEXT}}})
_TREE = _record("tree", ["type", "id", "depth", "parent_type", "parent_id"],
                type=_TEXT, id=_TEXT, depth={"type": "integer"}, parent_type=_MAYBE_TEXT,
                parent_id=_MAYBE_TEXT, kind=_MAYBE_TEXT, agent_type=_MAYBE_TEXT,
                messages={"type": ["integer", "null"]}, cycle={"type": "boolean"})
_CONTINUATION = _record("continuation", ["session_id", "direction", "type", "id", "how",
                                         "depth"],
                        session_id=_TEXT, direction={"enum": ["continues", "continued_by"]},
                        type=_TEXT, id=_TEXT, how=_MAYBE_TEXT, depth={"type": "integer"})
_USAGE = _record("usage", ["session_id", "own", "total", "cost_usd", "threads"],
                 session_id=_TEXT, own=_TOKENS, total=_TOKENS, cost_usd=_COST,
                 cost_note=_MAYBE_TEXT, unpriced_models={"type": "array", "items": _TEXT},
                 # Claude Code's own figure, where the session's data holds one.
                 claude_cost_usd=_COST, cost_gap_usd=_COST, cost_gap_cause=_MAYBE_TEXT,
                 threads={"type": "array", "items": {
                     "type": "object",
                     "required": ["id", "own", "subtree", "own_cost_usd", "subtree_cost_usd"],
                     "properties": {"id": _TEXT, "parent": _MAYBE_TEXT, "own": _TOKENS,
                                    "subtree": _TOKENS, "depth": {"type": "integer"},
                                    "kind": _MAYBE_TEXT, "agent_type": _MAYBE_TEXT,
                                    "own_cost_usd": _COST, "subtree_cost_usd": _COST,
                                    "cost_note": _MAYBE_TEXT}}})
# session_id: the session a group lies in; null for a group across sessions.
_USAGE_GROUP = _record("usage_group", ["session_id", "by", "key", "cost_usd",
                                       "unpriced_models"],
                       session_id=_MAYBE_TEXT, by=_TEXT, key=_MAYBE_TEXT, cost_usd=_COST,
                       unpriced_models={"type": "array", "items": _TEXT},
                       cost_note=_MAYBE_TEXT, sessions={"type": "integer"},
                       claude_cost_usd=_COST, cost_gap_usd=_COST,
                       cost_gap_cause=_MAYBE_TEXT)
_FILE = _record("file", ["session_id", "thread", "path", "reads", "writes"],
                session_id=_TEXT, thread=_TEXT, path=_TEXT, reads={"type": "integer"},
                writes={"type": "integer"})
_WHEN = ("YYYY-MM-DD, an ISO timestamp (an offset or an IANA zone after it), today, "
         "yesterday or '7 days ago' (UTC)")


@dataclass(frozen=True)
class Tool:
    """One tool: its schemas, and the call that answers it from a store."""

    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    answer: Callable[[LineageReader, dict[str, Any]], dict[str, Any]]


def _page(records: list[dict[str, Any]], cursor: str | None, size: int) -> dict[str, Any]:
    start = _offset(cursor) if cursor is not None else 0
    end = start + size
    return {"records": records[start:end],
            "next_cursor": _cursor(end) if end < len(records) else None}


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": offset}).encode()).decode()


def _offset(cursor: str) -> int:
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))["after"]
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeEncodeError):
        value = None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ToolArgumentError(f"cursor {cursor!r} is not one this server gave",
                                hint="pass the next_cursor of the previous page, or none")
    return value


def tools(page: int = PAGE) -> list[Tool]:
    """The server's tools, in the order it lists them; ``sessions`` answers ``page``
    sessions at a time."""
    return [
        Tool("sessions", "Sessions",
             "Sessions with their thread, agent and message counts, oldest first, as "
             "`graphkit sessions --json` lists them (limit: only the N most recent). "
             f"Pages of {page}: pass next_cursor back as cursor for the next.",
             _args(since={"type": "string", "description": f"Only sessions active at or "
                                                           f"after this time: {_WHEN}."},
                   until={"type": "string", "description": f"Only sessions active at or "
                                                           f"before this time: {_WHEN}."},
                   limit={"type": "integer", "minimum": 1,
                          "description": "Only the N most recent sessions."},
                   cursor={"type": "string", "description": "next_cursor of the page "
                                                            "before."}),
             _records(_SESSION, next_cursor=_MAYBE_TEXT),
             lambda r, a: _page(session_records(r, a.get("since"), a.get("until"),
                                                a.get("limit")), a.get("cursor"), page)),
        Tool("lineage", "Lineage",
             "Who spawned a thread or subagent, up to its session (ancestors, nearest "
             "first), everything it spawned (descendants), and the sessions its session "
             "continues (resume, fork, branch, compaction, teammate). The id is a subagent "
             "(agent) id, a thread id or a session id. Answers 'who spawned me'.",
             _args(["id"], id={"type": "string", "description": "An agent, thread or "
                                                                "session id."}),
             _LINEAGE,
             lambda r, a: lineage_record(r, a["id"])),
        Tool("tree", "Session tree",
             "A session's threads and subagents in drawing order (main thread first, "
             "children by start time) with depth and parent, then the sessions it "
             "continues and that continue it.",
             _args(["session_id"], session_id={"type": "string"}),
             _records(_TREE, _CONTINUATION),
             lambda r, a: {"records": tree_records_of(r, a["session_id"])}),
        Tool("usage", "Token usage and cost",
             "Tokens per thread: its own and its subtree's (itself and every subagent "
             "below it), and the session's total; with `by`, tokens and cost in USD per "
             "group (a model without a price is unpriced, never zero). Without session_id: "
             "every session. Answers 'what did my subtree cost'.",
             _args(session_id={"type": "string"},
                   by={"enum": list(GROUPINGS), "description": "Group by this, with cost."}),
             _records(_USAGE, _USAGE_GROUP),
             lambda r, a: {"records": usage_records(r, a.get("session_id"), a.get("by"))}),
        Tool("files", "Files read and written",
             "The files each thread read or wrote (reads, writes), paths absolute. `path` "
             "is a glob over the whole path (*/src/*.py) or a path ending (src/app.py): "
             "without session_id it asks which agents changed that file in any session.",
             _args(session_id={"type": "string"}, path={"type": "string"}),
             _records(_FILE),
             lambda r, a: {"records": file_records(r, a.get("session_id"), a.get("path"))}),
    ]


def check_arguments(tool: Tool, arguments: dict[str, Any]) -> None:
    """Refuse arguments ``tool``'s input schema does not allow, in one line naming the
    argument (:class:`ToolArgumentError`)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(tool.input_schema).iter_errors(arguments))
    if error is None:
        return
    where = ".".join(str(p) for p in error.absolute_path)
    raise ToolArgumentError(f"{tool.name}: {where + ': ' if where else ''}{error.message}",
                            hint="the tool's inputSchema lists what it takes")


# --- the server ------------------------------------------------------------------------

def _snapshot_texts(snapshot: str | Path | None) -> dict[str, tuple[str, str, str]]:
    """The resources: uri → (name, mime type, text) for the snapshot's manifest and the
    contract it was built with (when that contract, at that version, is still found)."""
    if snapshot is None:
        return {}
    from graphkit.contract.loader import find_contract, load_contract
    from graphkit.snapshot.read import read_manifest

    manifest = read_manifest(snapshot)
    out = {MANIFEST_URI: ("manifest.json", "application/json",
                          json.dumps(manifest, indent=2, default=str))}
    named = manifest.get("contract") or {}
    try:
        path = find_contract(str(named.get("name")))
        if load_contract(str(path)).version == named.get("version"):
            out[CONTRACT_URI] = (path.name, "application/yaml",
                                 path.read_text(encoding="utf-8"))
    except (GraphkitError, OSError, UnicodeDecodeError):
        pass  # a contract of the user's own, moved or edited since: only the manifest
    return out


def error_text(exc: BaseException) -> str:
    """The one line the command line would print for ``exc`` (without ``Error: ``)."""
    # A click error (a store the command line opens) says its own line; ours is str().
    message = getattr(exc, "format_message", None)
    return printable(message() if callable(message) else str(exc))


def make_server(open_store: Callable[[], Any], snapshot: str | Path | None, *,
                page: int = PAGE) -> Server[Any]:
    """The MCP server: ``open_store()`` is a context manager giving the store each call
    asks (a snapshot read in place per call, so a rebuilt snapshot is seen); ``snapshot``
    the folder whose manifest and contract are its resources (None for Neo4j)."""
    import mcp_types as types
    from mcp.server import Server

    known = {t.name: t for t in tools(page)}
    texts = _snapshot_texts(snapshot)
    annotations = types.ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                        idempotent_hint=True, open_world_hint=False)

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, title=t.title, description=t.description,
                       input_schema=t.input_schema, output_schema=t.output_schema,
                       annotations=annotations) for t in known.values()])

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = known.get(params.name)
        try:
            if tool is None:
                raise ToolArgumentError(f"no tool named {params.name!r}",
                                        hint="tools: " + ", ".join(known))
            arguments = dict(params.arguments or {})
            check_arguments(tool, arguments)
            with open_store() as reader:
                answer = json_ready(tool.answer(reader, arguments))
        except GraphkitError as exc:
            return _failed(types, error_text(exc))
        except Exception as exc:  # a bug: said, and the server goes on
            logging.getLogger("graphkit.mcp").exception("tool %s failed", params.name)
            return _failed(types, f"graphkit failed inside (a bug, please report it): "
                                  f"{error_text(exc)}")
        lines = answer.get("records", [answer])
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="\n".join(map(_ENCODE, lines)))],
            structured_content=answer)

    async def list_resources(_ctx: Any, _params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[
            types.Resource(uri=uri, name=name, mime_type=mime,
                           description=f"The snapshot's {name}")
            for uri, (name, mime, _) in texts.items()])

    async def read_resource(_ctx: Any,
                            params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        from mcp import MCPError

        found = texts.get(str(params.uri))
        if found is None:
            raise MCPError(code=types.INVALID_PARAMS,
                           message=f"no resource {str(params.uri)!r}; resources: "
                                   + (", ".join(texts) or "none (a Neo4j store has none)"))
        _, mime, text = found
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=params.uri, mime_type=mime, text=text)])

    return Server("graphkit", version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_read_resource=read_resource)


def _failed(types: Any, message: str) -> mcp_types.CallToolResult:
    result: mcp_types.CallToolResult = types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True)
    return result


def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` on stdin and stdout until the client closes stdin."""
    import anyio
    from mcp.server.stdio import stdio_server

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


def serve_mcp(open_store: Callable[[], Any], snapshot: str | Path | None, *,
              page: int = PAGE) -> None:
    """Serve the graph to agents over MCP on stdin and stdout until the client closes
    stdin (what ``graphkit mcp`` runs).

    The tools ``sessions``, ``lineage``, ``tree``, ``usage`` and ``files`` answer with
    the records the matching command prints with ``--json`` (``structuredContent``);
    the snapshot's manifest and contract are resources. A bad argument or an unknown id
    is a tool error carrying the command's one-line message; the server goes on.

    Parameters
    ----------
    open_store : callable
        Called for each tool call; returns a context manager giving the store to ask,
        such as ``lambda: graphkit.open_store(snapshot)`` (a snapshot read in place per
        call, so a rebuilt snapshot is seen).
    snapshot : str, Path or None
        The snapshot folder whose manifest and contract are the server's resources
        (None for Neo4j: no resources).
    page : int
        Sessions per page of the ``sessions`` tool (:data:`MCP_PAGE_SIZE` by default);
        its ``next_cursor`` asks for the next.

    Raises
    ------
    SnapshotError
        ``snapshot`` is not a readable snapshot (before anything is served).
    ImportError
        The ``mcp`` extra is not installed.

    Examples
    --------
    It serves until its client (an agent) closes stdin, so not run here; register it
    with Claude Code as ``claude mcp add graphkit -- graphkit mcp``:

    >>> from graphkit.enrich.open import open_store
    >>> serve_mcp(lambda: open_store("out/graph"), "out/graph")  # doctest: +SKIP
    """
    serve_stdio(make_server(open_store, snapshot, page=page))
