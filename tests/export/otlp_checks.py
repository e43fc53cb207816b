"""What every OTLP export of a snapshot must hold, checked against the graph as the
command line answers it (``tree --json``, ``usage --json``): shared by the OTLP/JSON
file's tests and the real-receiver test (tests/e2e/test_otlp_receiver.py)."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from graphkit.cli import cli


@dataclass
class Span:
    trace: str  # hex
    span: str
    parent: str | None
    name: str
    start: int  # any monotone unit (ns, or µs from an ISO time)
    end: int
    attrs: dict[str, Any]


def cli_records(*argv: str) -> list[dict[str, Any]]:
    res = CliRunner().invoke(cli, [*argv, "--json"])
    assert res.exit_code == 0, res.output
    return [json.loads(line) for line in res.stdout.splitlines()]


def spans_of_otlp_json(data: dict[str, Any]) -> list[Span]:
    """The spans of an OTLP/JSON ``ExportTraceServiceRequest``."""
    out = []
    for rs in data["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                attrs = {a["key"]: next(iter(a["value"].values())) for a in s["attributes"]}
                attrs = {k: int(v) if isinstance(v, str) and k.startswith(
                    ("gen_ai.usage.", "llm.token_count.")) else v for k, v in attrs.items()}
                out.append(Span(s["traceId"], s["spanId"], s.get("parentSpanId"), s["name"],
                                int(s["startTimeUnixNano"]), int(s["endTimeUnixNano"]), attrs))
    return out


def check_against_graph(spans: list[Span], snapshot: Path) -> dict[str, int]:
    """Assert the spans are the snapshot's history; how many of what were checked."""
    by_id = {(s.trace, s.span): s for s in spans}
    assert len(by_id) == len(spans), "a span id is used twice in one trace"
    traces: dict[str, set[str]] = defaultdict(set)
    for s in spans:
        sid = s.attrs["graphkit.session_id"]
        assert s.attrs["gen_ai.conversation.id"] == s.attrs["session.id"] == \
            s.attrs["langfuse.session.id"] == sid
        assert "graphkit.thread_id" in s.attrs, s
        assert s.end >= s.start, f"{s.name} ends before it starts"
        if s.parent:
            parent = by_id[(s.trace, s.parent)]  # the parent is in the same trace
            assert parent.attrs["graphkit.session_id"] == sid
        traces[s.trace].add(sid)
    assert all(len(v) == 1 for v in traces.values()), "a trace holds two sessions"
    sessions = [r["session_id"] for r in cli_records("sessions", "--snapshot", str(snapshot))]
    assert sorted(sid for v in traces.values() for sid in v) == sorted(sessions)

    agents: dict[str, dict[str, Span]] = defaultdict(dict)
    for s in spans:
        if s.attrs["gen_ai.operation.name"] == "invoke_agent":
            thread = s.attrs["graphkit.thread_id"]
            assert thread not in agents[s.attrs["graphkit.session_id"]], "two spans of a thread"
            agents[s.attrs["graphkit.session_id"]][thread] = s
    checked = {"sessions": len(sessions), "threads": 0, "subagents": 0, "tokens": 0}
    for sid in sessions:
        tree = [r for r in cli_records("tree", sid, "--snapshot", str(snapshot))
                if r["record"] == "tree" and r["type"] == "Thread"]
        assert sorted(agents[sid]) == sorted(r["id"] for r in tree), sid
        checked["threads"] += len(tree)
        for r in tree:
            if r["parent_type"] != "Thread" or r["cycle"]:
                continue
            assert _agent_above(agents[sid][r["id"]], by_id) == r["parent_id"], r
            checked["subagents"] += 1
        (usage,) = cli_records("usage", sid, "--snapshot", str(snapshot))
        total = usage["total"]
        sums: dict[str, int] = defaultdict(int)
        for s in spans:
            if s.attrs["graphkit.session_id"] == sid and \
                    s.attrs["gen_ai.operation.name"] == "chat":
                for k in ("input_tokens", "output_tokens", "cache_read.input_tokens",
                          "cache_creation.input_tokens"):
                    sums[k] += int(s.attrs.get(f"gen_ai.usage.{k}", 0))
        assert sums["output_tokens"] == total["output_tokens"], sid
        assert sums["cache_read.input_tokens"] == total["cache_read_input_tokens"], sid
        assert sums["cache_creation.input_tokens"] == total["cache_creation_input_tokens"]
        # The conventions' input count holds the cached tokens too.
        assert sums["input_tokens"] == total["input_tokens"] + \
            total["cache_read_input_tokens"] + total["cache_creation_input_tokens"], sid
        checked["tokens"] += sum(sums.values())
    return checked


def _agent_above(span: Span, by_id: dict[tuple[str, str], Span]) -> str | None:
    """The thread of the nearest invoke_agent span above ``span``."""
    node = span
    while node.parent:
        node = by_id[(node.trace, node.parent)]
        if node.attrs["gen_ai.operation.name"] == "invoke_agent":
            return str(node.attrs["graphkit.thread_id"])
    return None
