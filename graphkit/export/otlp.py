"""The history as OpenTelemetry traces: one trace per session, in the OTLP encoding
built by the OpenTelemetry protocol package (``opentelemetry-proto``, the ``otlp``
extra), written as OTLP/JSON (``--format otlp-json``) or sent over OTLP/HTTP in
protobuf (``--otlp-endpoint``).

The mapping follows the OpenTelemetry semantic conventions for generative AI as of
release :data:`SEMCONV` (docs/gen-ai/gen-ai-agent-spans.md and gen-ai-spans.md, the
last release that kept them in the main semantic-conventions repository):

- one trace per session; every span carries ``gen_ai.conversation.id`` = the session
  id, with ``session.id`` (OpenInference, Phoenix) and ``langfuse.session.id`` beside
  it, and graphkit's own ids: ``graphkit.session_id``, ``graphkit.thread_id`` and,
  where the span has one, ``graphkit.message_id`` or ``graphkit.tool_call_id``;
- an ``invoke_agent`` span (INTERNAL) per thread, ``gen_ai.agent.id`` its agent or
  thread id and ``gen_ai.agent.name`` its agent type (else its kind: ``main``, ...);
  a subagent's span is the child of the ``execute_tool`` span of the call that spawned
  it, or of its parent thread's span when that call is unknown (a thread with no
  known parent hangs under the session's main thread);
- a ``chat`` span (CLIENT) per model response with ``gen_ai.usage.*`` and the model, and
  one per advisor a thread's model consulted (``graphkit.advisor_of``: that model).
  ``gen_ai.usage.input_tokens`` includes the cached tokens, as the conventions ask;
  ``gen_ai.usage.cache_read.input_tokens`` and ``...cache_creation.input_tokens``
  say how many. A snapshot built at thread granularity knows no single responses:
  there a thread has one chat span per model it used, holding that model's sums
  (``graphkit.responses`` says how many responses);
- an ``execute_tool`` span (INTERNAL) per tool call (per tool, with ``graphkit.calls``,
  at thread granularity);
- a session that continues another (resume, fork, branch, compaction, teammate, ...)
  links its root span to that session's root span, the link saying how.

Trace and span ids are derived from the session, thread and message or call ids
(SHA-256 under a versioned recipe, each span's seeded by its thread), so a rerun
sends the same ids and sibling subagents never share one. No span ends before it
starts: a span ends at its last known time or later, stretched to cover its children.
Message text (and a subagent's model-written description) is included only when
asked (``--include-content``), and only a snapshot built with it holds any.

>>> from graphkit.builds.run import example_graph
>>> request, counts = trace_request(example_graph())
>>> counts["trace"], counts["invoke_agent"]
(2, 5)
>>> span = request.resource_spans[0].scope_spans[0].spans[0]
>>> len(span.trace_id), len(span.span_id)
(16, 8)
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphkit._version import __version__
from graphkit.core.errors import GraphkitError
from graphkit.core.graph import EDGE_SOURCE, EDGE_TARGET, NODE_ID, GraphTables, LineageVocabulary

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from graphkit.export.registry import ExportReport

#: The release of the OpenTelemetry semantic conventions whose GenAI spans this follows.
SEMCONV = "1.41.1"
#: The id recipe: changing how an id is derived changes this, so old ids stay explained.
ID_RECIPE = "graphkit-otlp/1"
# Spans per request sent to a receiver: receivers cap a request's size (4 MiB is common).
BATCH_SPANS = 2000

# Span kinds of the OTLP enum (opentelemetry/proto/trace/v1/trace.proto).
INTERNAL, CLIENT = 1, 3
# The default contract's names of what a detailed (message-granularity) snapshot holds.
MESSAGE, HAS_MESSAGE = "Message", "HAS_MESSAGE"
TOOL_CALL, MADE_CALL, SPAWNED_BY = "ToolCall", "MADE_CALL", "SPAWNED_BY"
MODEL, USED_MODEL, TOOL, CALLED_TOOL = "Model", "USED_MODEL", "Tool", "CALLED_TOOL"
TOKENS = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
          "cache_read_input_tokens")


class OtlpError(GraphkitError):
    """The traces cannot be sent where they were asked to go."""


@dataclass
class _Span:
    """One span before encoding; ids are bytes."""

    span_id: bytes
    name: str
    kind: int
    start: int  # unix nanoseconds (0: unknown)
    end: int
    attributes: dict[str, Any]
    parent: _Span | None = None
    children: list[_Span] = field(default_factory=list)
    links: list[tuple[bytes, bytes, dict[str, Any]]] = field(default_factory=list)

    def adopt(self, child: _Span) -> None:
        child.parent = self
        self.children.append(child)


@dataclass
class _Thread:
    node: dict[str, Any]
    span: _Span
    parent_node: str | None = None
    spawned_by: str | None = None  # a ToolCall node id


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("\x1f".join((ID_RECIPE, *parts)).encode("utf-8")).digest()


def trace_id_of(session_id: str) -> bytes:
    """The 16-byte trace id of a session.

    >>> trace_id_of("sess-1").hex()
    '...'
    >>> trace_id_of("sess-1") == trace_id_of("sess-1") != trace_id_of("sess-2")
    True
    """
    raw = _digest("trace", session_id)[:16]
    return raw if any(raw) else b"\x00" * 15 + b"\x01"


class _SpanIds:
    """Span ids of one trace: derived from the span's thread (its seed) and its own id,
    unique within the trace (a collision of 64-bit digests is rehashed, in a fixed
    order, so the result stays the same on every run)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.used: set[bytes] = set()

    def make(self, thread_node: str, kind: str, local: str) -> bytes:
        seed = _digest("thread", self.session_id, thread_node)
        n = 0
        while True:
            raw = hashlib.sha256(seed + f"\x1f{kind}\x1f{local}\x1f{n}".encode()).digest()[:8]
            if any(raw) and raw not in self.used:
                self.used.add(raw)
                return raw
            n += 1


def _nanos(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if isinstance(value, datetime):
        when = value if value.tzinfo else value.replace(tzinfo=UTC)
        delta = when - datetime(1970, 1, 1, tzinfo=UTC)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    if isinstance(value, date):
        return _nanos(datetime(value.year, value.month, value.day, tzinfo=UTC))
    return None


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and value == value else 0


class _Graph:
    """The tables the mapping reads, as rows by node id and edges by source."""

    def __init__(self, graph: GraphTables) -> None:
        self.graph = graph
        self.v = graph.lineage or LineageVocabulary()
        # Each table is read once, whatever number of sessions asks for it.
        self._nodes: dict[str, dict[str, dict[str, Any]]] = {}
        self._edges: dict[str, dict[str, list[tuple[str, dict[str, Any]]]]] = {}

    def nodes(self, node_type: str | None) -> dict[str, dict[str, Any]]:
        name = node_type or ""
        if name not in self._nodes:
            nt = self.graph.nodes.get(name)
            self._nodes[name] = {} if nt is None else {r[NODE_ID]: r
                                                       for r in nt.table.to_pylist()}
        return self._nodes[name]

    def edges(self, edge_type: str | None) -> dict[str, list[tuple[str, dict[str, Any]]]]:
        name = edge_type or ""
        if name not in self._edges:
            self._edges[name] = self._read_edges(name)
        return self._edges[name]

    def _read_edges(self, edge_type: str) -> dict[str, list[tuple[str, dict[str, Any]]]]:
        et = self.graph.edges.get(edge_type)
        out: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
        if et is None:
            return out
        for r in et.table.to_pylist():
            out[r[EDGE_SOURCE]].append((r[EDGE_TARGET], r))
        for targets in out.values():
            targets.sort(key=lambda t: t[0])
        return out


def _common(session_id: str, thread_id: str | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {"gen_ai.conversation.id": session_id, "session.id": session_id,
                             "langfuse.session.id": session_id,
                             "graphkit.session_id": session_id}
    if thread_id is not None:
        attrs["graphkit.thread_id"] = thread_id
    return attrs


def _usage(row: dict[str, Any]) -> dict[str, Any]:
    """``gen_ai.usage.*`` of a response (or a sum): input includes the cached tokens."""
    i, o, cw, cr = (_count(row.get(k)) for k in TOKENS)
    return {"gen_ai.usage.input_tokens": i + cw + cr, "gen_ai.usage.output_tokens": o,
            "gen_ai.usage.cache_creation.input_tokens": cw,
            "gen_ai.usage.cache_read.input_tokens": cr,
            # OpenInference's names, which Phoenix counts and prices.
            "llm.token_count.prompt": i + cw + cr, "llm.token_count.completion": o,
            "llm.token_count.total": i + cw + cr + o}


def _chat_attrs(s: _Session, t: _Thread, model: Any, provider: Any,
                usage: dict[str, Any]) -> dict[str, Any]:
    """A ``chat`` span's attributes: the operation, provider (else the session's), the
    model when known, ``usage``'s ``gen_ai.usage.*`` and the span's ids."""
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider or s.node.get("provider") or "_OTHER",
        "openinference.span.kind": "LLM",
        **({"gen_ai.request.model": model, "gen_ai.response.model": model,
            "llm.model_name": model} if model else {}),
        **_usage(usage), **_common(s.session_id, t.span.attributes["graphkit.thread_id"])}


@dataclass
class _Session:
    """The spans of one session, built from the graph."""

    g: _Graph
    node: dict[str, Any]
    threads: list[dict[str, Any]]
    include_content: bool
    counts: dict[str, int]
    root: _Span | None = None
    spans: list[_Span] = field(default_factory=list)

    @property
    def session_id(self) -> str:
        return str(self.node.get(self.g.v.session_key) or self.node[NODE_ID])


def trace_request(graph: GraphTables, *, include_content: bool = False,
                  ) -> tuple[ExportTraceServiceRequest, dict[str, int]]:
    """The whole graph as one ``ExportTraceServiceRequest``, and how many traces and
    spans of each operation (and links) it holds."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    counts: dict[str, int] = defaultdict(int)
    for resource in _resource_spans(graph, include_content, counts):
        request.resource_spans.append(resource)
    return request, {"trace": counts.pop("trace", 0), "invoke_agent": 0, "chat": 0,
                     "execute_tool": 0, **counts}


def trace_batches(graph: GraphTables, *, include_content: bool = False,
                  ) -> Iterator[ExportTraceServiceRequest]:
    """The graph as requests of whole sessions, each at most :data:`BATCH_SPANS` spans
    (a session with more is a request of its own)."""
    return _batches(graph, include_content, defaultdict(int))


def _resource_spans(graph: GraphTables, include_content: bool,
                    counts: dict[str, int]) -> Iterator[Any]:
    g = _Graph(graph)
    v = g.v
    threads = g.nodes(v.thread)
    by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for source, targets in g.edges(v.has_thread).items():
        by_session[source].extend(threads[t] for t, _ in targets if t in threads)
    sessions = [_Session(g, row, by_session.get(nid, []), include_content, counts)
                for nid, row in sorted(g.nodes(v.session).items(),
                                       key=lambda kv: (str(kv[1].get("first_seen") or ""),
                                                       kv[0]))]
    built = {s.node[NODE_ID]: s for s in sessions}
    for s in sessions:
        _build_session(s)
    _link_continuations(g, built, counts)
    for s in sessions:
        if s.spans:
            counts["trace"] += 1
            yield _encode(s)


def _build_session(s: _Session) -> None:
    g, v, sid = s.g, s.g.v, s.session_id
    ids = _SpanIds(sid)
    agents = g.nodes(v.agent)
    has_agent = g.edges(v.has_agent)
    parents = g.edges(v.parent)
    spawned = g.edges(SPAWNED_BY)
    session_start = _nanos(s.node.get("first_seen")) or 0
    made: dict[str, _Thread] = {}
    for row in sorted(s.threads, key=lambda r: (str(r.get("first_seen") or ""), r[NODE_ID])):
        nid = row[NODE_ID]
        agent = next((agents[a] for a, _ in has_agent.get(nid, []) if a in agents), {})
        kind = row.get("kind") or "thread"
        name = agent.get("agent_type") or kind
        thread_id = str(row.get(v.thread_key) or nid)
        attrs = {"gen_ai.operation.name": "invoke_agent",
                 "gen_ai.provider.name": s.node.get("provider") or "_OTHER",
                 "gen_ai.agent.id": str(row.get("agent_id") or thread_id),
                 "gen_ai.agent.name": str(name), "openinference.span.kind": "AGENT",
                 "graphkit.thread_kind": kind, **_common(sid, thread_id)}
        if s.include_content and agent.get("description"):
            attrs["gen_ai.agent.description"] = str(agent["description"])
        start = _nanos(row.get("first_seen")) or session_start
        span = _Span(ids.make(nid, "invoke_agent", thread_id), f"invoke_agent {name}",
                     INTERNAL, start, max(start, _nanos(row.get("last_seen")) or start), attrs)
        made[nid] = _Thread(row, span,
                            next((p for p, _ in parents.get(nid, []) if p != nid), None),
                            next((c for c, _ in spawned.get(nid, [])), None))
        s.counts["invoke_agent"] += 1
    calls = _thread_details(s, made, ids)
    main = _main_thread(made, sid, v.thread_key)
    for t in made.values():
        parent = _parent_span(t, made, calls, main)
        if parent is not None:
            parent.adopt(t.span)
    roots = [t.span for t in made.values() if t.span.parent is None]
    for root in roots:
        _stretch(root)
    s.root = next((r for r in roots if main is not None and r is main.span),
                  roots[0] if roots else None)
    s.spans = [sp for root in roots for sp in _walk(root)]


def _main_thread(made: dict[str, _Thread], session_id: str, key: str) -> _Thread | None:
    """The session's main thread: a Claude main loop, else the thread named as the
    session (a Codex root thread), else the first thread with no parent."""
    threads = list(made.values())
    return (next((t for t in threads if t.node.get("kind") == "main"), None)
            or next((t for t in threads if t.node.get(key) == session_id
                     and t.parent_node is None and t.spawned_by is None), None)
            or next((t for t in threads if t.parent_node is None and t.spawned_by is None),
                    None))


def _parent_span(t: _Thread, made: dict[str, _Thread], calls: dict[str, _Span],
                 main: _Thread | None) -> _Span | None:
    """A thread's parent span: the spawning call's, the parent thread's, or the main
    thread's for a thread no one is known to have spawned; None for the main thread
    (and a parent link that would make a loop)."""
    for candidate in ((calls.get(t.spawned_by) if t.spawned_by else None),
                      (made[t.parent_node].span if t.parent_node in made else None)):
        if candidate is not None and not _under(candidate, t.span):
            return candidate
    if main is None or t is main or _under(main.span, t.span):
        return None
    return main.span


def _under(span: _Span, ancestor: _Span) -> bool:
    """Whether ``span`` is ``ancestor`` or below it (adopting it would close a loop)."""
    node: _Span | None = span
    while node is not None:
        if node is ancestor:
            return True
        node = node.parent
    return False


def _walk(root: _Span) -> Iterator[_Span]:
    stack = [root]
    while stack:
        span = stack.pop()
        yield span
        stack.extend(reversed(span.children))


def _stretch(root: _Span) -> None:
    """Make every span end no earlier than it starts and no earlier than its children
    end (a loop, not recursion: chains of subagents can be thousands deep)."""
    order = list(_walk(root))
    for span in reversed(order):
        span.end = max([span.start, span.end, *(c.end for c in span.children)])


def _thread_details(s: _Session, made: dict[str, _Thread], ids: _SpanIds) -> dict[str, _Span]:
    """The chat and execute_tool spans under each thread's span; the execute_tool spans
    by ToolCall node id (a subagent's SPAWNED_BY names one)."""
    _advisor_chats(s, made, ids)
    if MESSAGE in s.g.graph.nodes and TOOL_CALL in s.g.graph.nodes:
        return _responses_and_calls(s, made, ids)
    _models_and_tools(s, made, ids)
    return {}


def _advisor_chats(s: _Session, made: dict[str, _Thread], ids: _SpanIds) -> None:
    """A chat span per advisor a thread's model consulted (Claude's advisor tool: its
    tokens are on the ``USED_MODEL`` edge, ``advisor_*``, and nowhere per message), so
    the spans' tokens add up to what ``graphkit usage`` counts for the thread."""
    used, models = s.g.edges(USED_MODEL), s.g.nodes(MODEL)
    for nid, t in made.items():
        for m, props in used.get(nid, []):
            tokens = {k: _count(props.get(f"advisor_{k}")) for k in TOKENS}
            if not any(tokens.values()):
                continue
            advisor = props.get("advisor_model")
            attrs = {**_chat_attrs(s, t, advisor, None, tokens),
                     "graphkit.advisor_of": str(models.get(m, {}).get("model"))}
            t.span.adopt(_Span(ids.make(nid, "advisor", f"{m}/{advisor}"),
                               f"chat {advisor}" if advisor else "chat", CLIENT,
                               t.span.start, t.span.end, attrs))
            s.counts["chat"] += 1


def _responses_and_calls(s: _Session, made: dict[str, _Thread],
                         ids: _SpanIds) -> dict[str, _Span]:
    g, sid = s.g, s.session_id
    messages, models = g.nodes(MESSAGE), g.nodes(MODEL)
    providers = {m.get("model"): m.get("provider") for m in models.values()}
    has_message, made_call, tool_calls = g.edges(HAS_MESSAGE), g.edges(MADE_CALL), \
        g.nodes(TOOL_CALL)
    calls: dict[str, _Span] = {}
    for nid, t in made.items():
        thread_id = t.span.attributes["graphkit.thread_id"]
        rows = sorted((messages[m] for m, _ in has_message.get(nid, []) if m in messages),
                      key=lambda r: (_nanos(r.get("created_at")) or 0,
                                     _count(r.get("message_index")), r[NODE_ID]))
        previous_end: int | None = None
        asked: list[dict[str, Any]] = []
        for r in rows:
            at = _nanos(r.get("created_at")) or t.span.start
            last = _nanos(r.get("last_at")) or at
            if r.get("role") == "assistant" or (r.get("role") is None and r.get("model")):
                _chat(s, t, ids, r, asked, (previous_end or at, last), providers)
                asked = []
            else:
                asked.append(r)
            previous_end = last
        for c, _ in made_call.get(nid, []):
            call = tool_calls.get(c)
            if call is None:
                continue
            name = str(call.get("tool_name") or "tool")
            start = _nanos(call.get("called_at")) or t.span.start
            attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                     "gen_ai.tool.call.id": str(call.get("tool_call_id")),
                     "openinference.span.kind": "TOOL",
                     "graphkit.tool_call_id": str(call.get("tool_call_id")),
                     **_common(sid, thread_id)}
            if call.get("message_id") is not None:
                attrs["graphkit.message_id"] = str(call["message_id"])
            span = _Span(ids.make(nid, "execute_tool", str(call.get("tool_call_id"))),
                         f"execute_tool {name}", INTERNAL, start,
                         max(start, _nanos(call.get("answered_at")) or start), attrs)
            t.span.adopt(span)
            calls[c] = span
            s.counts["execute_tool"] += 1
    return calls


def _chat(s: _Session, t: _Thread, ids: _SpanIds, r: dict[str, Any],
          asked: list[dict[str, Any]], when: tuple[int, int],
          providers: dict[Any, Any]) -> None:
    model = r.get("model")
    attrs = {**_chat_attrs(s, t, model, providers.get(model), r),
             "graphkit.message_id": str(r.get("message_id"))}
    if s.include_content:
        _content(attrs, r, asked)
    start, end = when
    t.span.adopt(_Span(ids.make(t.node[NODE_ID], "chat", str(r.get("message_id"))),
                       f"chat {model}" if model else "chat", CLIENT, min(start, end),
                       end, attrs))
    s.counts["chat"] += 1


def _content(attrs: dict[str, Any], response: dict[str, Any],
             asked: list[dict[str, Any]]) -> None:
    """The response's text as ``gen_ai.output.messages`` and the messages since the last
    response as ``gen_ai.input.messages`` (the conventions' JSON message shapes)."""
    def message(r: dict[str, Any]) -> dict[str, Any]:
        return {"role": r.get("role") or "user",
                "parts": [{"type": "text", "content": r.get("text")}]}

    inputs = [message(r) for r in asked if r.get("text") is not None]
    if inputs:
        attrs["gen_ai.input.messages"] = json.dumps(inputs, ensure_ascii=False)
    if response.get("text") is not None:
        attrs["gen_ai.output.messages"] = json.dumps([message(response)], ensure_ascii=False)


def _models_and_tools(s: _Session, made: dict[str, _Thread], ids: _SpanIds) -> None:
    """Thread granularity: a chat span per model a thread used (its responses summed;
    tokens on no model's edge under ``(no model)``), an execute_tool span per tool."""
    g, sid = s.g, s.session_id
    models, tools = g.nodes(MODEL), g.nodes(TOOL)
    used, called = g.edges(USED_MODEL), g.edges(CALLED_TOOL)
    for nid, t in made.items():
        thread_id = t.span.attributes["graphkit.thread_id"]
        left = {k: _count(t.node.get(k)) for k in TOKENS}
        groups: list[tuple[str | None, str | None, dict[str, Any]]] = []
        for m, props in used.get(nid, []):
            row = models.get(m, {})
            groups.append((row.get("model"), row.get("provider"), props))
            for k in TOKENS:
                left[k] -= _count(props.get(k))
        if any(left.values()):
            groups.append((None, None, {**left, "messages": None}))
        for model, provider, props in groups:
            attrs = _chat_attrs(s, t, model, provider, props)
            if props.get("messages") is not None:
                attrs["graphkit.responses"] = _count(props["messages"])
            t.span.adopt(_Span(ids.make(nid, "chat", str(model)),
                               f"chat {model}" if model else "chat", CLIENT,
                               t.span.start, t.span.end, attrs))
            s.counts["chat"] += 1
        for tool, props in called.get(nid, []):
            name = str(tools.get(tool, {}).get("tool_name") or "tool")
            attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                     "openinference.span.kind": "TOOL",
                     "graphkit.calls": _count(props.get("calls")), **_common(sid, thread_id)}
            t.span.adopt(_Span(ids.make(nid, "execute_tool", name), f"execute_tool {name}",
                               INTERNAL, t.span.start, t.span.end, attrs))
            s.counts["execute_tool"] += 1


def _link_continuations(g: _Graph, built: dict[str, _Session], counts: dict[str, int]) -> None:
    """A session that continues another links its root span to the other's root span."""
    for source, targets in g.edges(g.v.continues).items():
        s = built.get(source)
        if s is None or s.root is None:
            continue
        for target, props in targets:
            other = built.get(target)
            if other is None or other.root is None or other is s:
                continue
            s.root.links.append((trace_id_of(other.session_id), other.root.span_id, {
                "graphkit.continuation.how": props.get("how") or "unknown",
                "graphkit.session_id": other.session_id}))
            counts["link"] += 1


def _value(value: Any, out: Any) -> None:
    """Fill the OTLP ``AnyValue`` ``out`` with ``value``."""
    if isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        out.int_value = value
    elif isinstance(value, float):
        out.double_value = value
    else:
        out.string_value = str(value)


def _attributes(target: Any, attrs: dict[str, Any]) -> None:
    for key, value in attrs.items():
        if value is None:
            continue
        kv = target.add()
        kv.key = key
        _value(value, kv.value)


def _encode(s: _Session) -> Any:
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans

    resource = ResourceSpans()
    _attributes(resource.resource.attributes, {
        "service.name": s.node.get("client_name") or "graphkit",
        "graphkit.session_id": s.session_id})
    scope = resource.scope_spans.add()
    scope.scope.name = "graphkit"
    scope.scope.version = __version__
    trace_id = trace_id_of(s.session_id)
    for span in s.spans:
        out = scope.spans.add()
        out.trace_id = trace_id
        out.span_id = span.span_id
        if span.parent is not None:
            out.parent_span_id = span.parent.span_id
        out.name = span.name
        out.kind = span.kind
        out.start_time_unix_nano = span.start
        out.end_time_unix_nano = span.end
        _attributes(out.attributes, span.attributes)
        for link_trace, link_span, attrs in span.links:
            link = out.links.add()
            link.trace_id = link_trace
            link.span_id = link_span
            _attributes(link.attributes, attrs)
    return resource


# --- OTLP/JSON ----------------------------------------------------------------------

_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def to_otlp_json(request: ExportTraceServiceRequest) -> dict[str, Any]:
    """``request`` in the OTLP/JSON encoding: protobuf's JSON mapping with camelCase
    field names and enums as numbers, except that trace and span ids are hex strings
    (not base64), as the OTLP specification says."""
    from google.protobuf.json_format import MessageToDict

    data: dict[str, Any] = MessageToDict(request, use_integers_for_enums=True)
    for resource in data.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                _hex_ids(span)
                for link in span.get("links", []):
                    _hex_ids(link)
    return data


def _hex_ids(obj: dict[str, Any]) -> None:
    import base64

    for key in _ID_FIELDS:
        if key in obj:
            obj[key] = base64.b64decode(obj[key]).hex()


# --- OTLP/HTTP ----------------------------------------------------------------------

def headers_from_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The headers ``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` (else ``OTEL_EXPORTER_OTLP_HEADERS``)
    names: comma-separated ``key=value`` pairs, values percent-decoded (the W3C Baggage
    format without its ``;`` properties), as the OTLP exporter specification says.

    >>> headers_from_env({"OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b, x-tenant = t1"})
    {'api-key': 'a b', 'x-tenant': 't1'}
    """
    env = os.environ if env is None else env
    name = ("OTEL_EXPORTER_OTLP_TRACES_HEADERS" if env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            else "OTEL_EXPORTER_OTLP_HEADERS")
    out: dict[str, str] = {}
    for i, item in enumerate((env.get(name) or "").split(","), 1):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            # The entry's text may hold a secret: name its place, never its value.
            raise OtlpError(f"{name}: entry {i} is no key=value pair",
                            hint="write it as key1=value1,key2=value2 (values "
                                 "percent-encoded)")
        out[urllib.parse.unquote(key.strip())] = urllib.parse.unquote(value.split(";")[0]
                                                                        .strip())
    return out


def traces_url(endpoint: str) -> str:
    """Where to POST: ``endpoint`` as given when it has a path, else with the OTLP
    traces path ``/v1/traces`` (as ``OTEL_EXPORTER_OTLP_ENDPOINT`` is read).

    >>> traces_url("http://127.0.0.1:4318"), traces_url("https://x.example/api/otel/v1/traces")
    ('http://127.0.0.1:4318/v1/traces', 'https://x.example/api/otel/v1/traces')
    """
    parts = urllib.parse.urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise OtlpError(f"--otlp-endpoint {endpoint!r} is not an http(s) URL",
                        hint="give one like http://127.0.0.1:4318 or "
                             "https://host/v1/traces")
    if parts.path in ("", "/"):
        parts = parts._replace(path="/v1/traces")
    return urllib.parse.urlunsplit(parts)


def send(requests: Iterable[ExportTraceServiceRequest], endpoint: str, *,
         headers: dict[str, str] | None = None, timeout: float = 30.0) -> int:
    """POST each request to the OTLP/HTTP ``endpoint`` in binary protobuf (gzipped when
    ``OTEL_EXPORTER_OTLP_COMPRESSION`` is ``gzip``); the number of spans sent.
    A refusal is one :class:`OtlpError` line naming the URL and the status."""
    url = traces_url(endpoint)
    base = {"Content-Type": "application/x-protobuf",
            "User-Agent": f"graphkit/{__version__}", **(headers or {})}
    compress = (os.environ.get("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION")
                or os.environ.get("OTEL_EXPORTER_OTLP_COMPRESSION") or "").lower() == "gzip"
    sent = 0
    for request in requests:
        body = request.SerializeToString()
        hdrs = dict(base)
        if compress:
            body = gzip.compress(body)
            hdrs["Content-Encoding"] = "gzip"
        _post(url, body, hdrs, timeout)
        sent += sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
    return sent


def _post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> None:
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            resp.read()
    except urllib.error.HTTPError as exc:
        said = exc.read(300).decode("utf-8", "replace").strip().splitlines()
        hint = ("check OTEL_EXPORTER_OTLP_HEADERS (the receiver's key)"
                if exc.code in (401, 403) else "check the URL and that the receiver "
                                               "takes OTLP/HTTP protobuf")
        raise OtlpError(f"POST {url}: HTTP {exc.code} {exc.reason}"
                        + (f": {said[0][:200]}" if said else ""), hint=hint) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise OtlpError(f"POST {url}: {reason}",
                        hint="is the receiver running and reachable?") from None


def send_traces(snapshot_dir: str | Path, endpoint: str, *, include_content: bool = False,
                progress: Callable[[str], None] | None = None,
                headers: dict[str, str] | None = None) -> ExportReport:
    """Send the snapshot in ``snapshot_dir`` to an OTLP/HTTP receiver as traces, a trace
    per session, and return what was sent (``graphkit export --otlp-endpoint``).

    Parameters
    ----------
    snapshot_dir : str or Path
        A snapshot folder.
    endpoint : str
        The receiver's URL; one without a path gets ``/v1/traces``.
    include_content : bool
        Add message text (from a snapshot built with it) and descriptions.
    progress : callable, optional
        Called with a line for each step.
    headers : dict of str to str, optional
        HTTP headers; by default those of ``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` or
        ``OTEL_EXPORTER_OTLP_HEADERS``, as the OpenTelemetry specification says.

    Returns
    -------
    ExportReport
        What was sent: traces, spans and links, and the time it took.

    Raises
    ------
    OtlpError
        A bad URL or header, or a receiver that refused or could not be reached (one
        line; header values are never shown).
    SnapshotError
        The snapshot cannot be read.
    ImportError
        The ``otlp`` extra (``opentelemetry-proto``) is not installed.

    Examples
    --------
    A receiver of a few lines (an OpenTelemetry Collector answers the same way):

    >>> import http.server, tempfile, threading
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.snapshot.write import write_snapshot
    >>> snapshot = Path(tempfile.mkdtemp()) / "graph"
    >>> _ = write_snapshot(example_graph(), snapshot)
    >>> class Receiver(http.server.BaseHTTPRequestHandler):
    ...     def do_POST(self) -> None:
    ...         self.rfile.read(int(self.headers["Content-Length"]))
    ...         self.send_response(200); self.end_headers()
    ...     def log_message(self, *args: Any) -> None:
    ...         pass
    >>> server = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
    >>> threading.Thread(target=server.serve_forever, daemon=True).start()
    >>> send_traces(snapshot, f"http://127.0.0.1:{server.server_port}").account
    '2 traces, 7 spans and 0 links'
    >>> server.shutdown(); server.server_close()
    >>> send_traces(snapshot, "http://127.0.0.1:1")
    Traceback (most recent call last):
    ...
    graphkit.export.otlp.OtlpError: POST http://127.0.0.1:1/v1/traces: ...; is the receiver ...
    """
    import time

    from graphkit.export.registry import ExportReport
    from graphkit.snapshot import read_snapshot

    say = progress or (lambda _m: None)
    url = traces_url(endpoint)  # a bad URL or header fails before the snapshot is read
    hdrs = headers_from_env() if headers is None else headers
    say(f"reading snapshot {snapshot_dir}")
    t0 = time.perf_counter()
    graph = read_snapshot(Path(snapshot_dir))
    counts: dict[str, int] = defaultdict(int)
    say(f"sending to {url}")
    sent = send(_batches(graph, include_content, counts), url, headers=hdrs)
    report = ExportReport("otlp-http", url,
                          nodes={"trace": counts.pop("trace", 0), **counts},
                          edges={"link": counts.pop("link", 0)})
    report.nodes.pop("link", None)
    report.account = f"{report.nodes['trace']} traces, {sent} spans and " \
                     f"{report.edges['link']} links"
    report.seconds = time.perf_counter() - t0
    return report


def _batches(graph: GraphTables, include_content: bool,
             counts: dict[str, int]) -> Iterator[ExportTraceServiceRequest]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    batch, size = ExportTraceServiceRequest(), 0
    for resource in _resource_spans(graph, include_content, counts):
        n = sum(len(s.spans) for s in resource.scope_spans)
        if size and size + n > BATCH_SPANS:
            yield batch
            batch, size = ExportTraceServiceRequest(), 0
        batch.resource_spans.append(resource)
        size += n
    if size:
        yield batch
