"""``graphkit export --format otlp-json`` and ``--otlp-endpoint`` on fixture snapshots:
the file is the OTLP/JSON encoding of an ExportTraceServiceRequest, its spans are the
graph's history (tests/export/otlp_checks.py), and a push sends the same spans as
protobuf with the headers OTEL_EXPORTER_OTLP_HEADERS names. The push to a real
receiver is tests/e2e/test_otlp_receiver.py."""

from __future__ import annotations

import base64
import gzip
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import opentelemetry.proto  # noqa: F401  (the otlp extra, in .[dev]: missing is a failure)
import pytest
from click.testing import CliRunner

from graphkit.cli import cli
from tests.export.otlp_checks import check_against_graph, cli_records, spans_of_otlp_json
from tests.helpers.paths import REPO

SOURCES = [REPO / "samples" / "rows", REPO / "tests/fixtures/transcripts/claude-code-log",
           REPO / "tests/fixtures/shaped"]
SIDECHAINS = REPO / "tests/fixtures/shaped/claude-parallel-sidechains"
# A fork: the first session continues the second (tests/fixtures/shaped/codex-fork-*).
FORK = ("019b3d4e-6071-7c8d-9eaf-203b4c5d6e03", "019b2c3d-4e5f-7a6b-8c9d-0e1f2a3b4c01")


def run(*argv: str, env: dict[str, str] | None = None, code: int = 0) -> Any:
    res = CliRunner().invoke(cli, [str(a) for a in argv], env=env)
    assert res.exit_code == code, res.output
    return res


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("otlp")
    out = {}
    for granularity in ("thread", "message"):
        out[granularity] = root / granularity
        run("-q", "build", *SOURCES, "--granularity", granularity, "--snapshot",
            out[granularity])
    out["content"] = root / "content"
    run("-q", "build", SIDECHAINS, "--granularity", "message", "--include-content",
        "--snapshot", out["content"])
    return out


def export(snapshot: Path, out: Path, *more: str) -> dict[str, Any]:
    run("export", snapshot, "--format", "otlp-json", out, *more)
    data: dict[str, Any] = json.loads(out.read_text())
    return data


@pytest.mark.slow
def test_the_file_is_the_otlp_json_encoding(snapshots: dict[str, Path], tmp_path: Path) -> None:
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    data = export(snapshots["message"], tmp_path / "t.json")
    names: set[str] = set()

    def walk(obj: Any) -> None:
        if isinstance(obj, dict):
            names.update(obj)  # field names; graphkit's attribute names are values
            for val in obj.values():
                walk(val)
        elif isinstance(obj, list):
            for item in obj:
                walk(item)

    walk(data)
    assert {"resourceSpans", "scopeSpans", "traceId", "spanId", "parentSpanId",
            "startTimeUnixNano", "endTimeUnixNano", "links"} <= names
    assert all(re.fullmatch(r"[a-z][a-zA-Z]*", n) for n in names), sorted(names)  # camelCase
    spans = [s for rs in data["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    for s in spans:
        assert re.fullmatch(r"[0-9a-f]{32}", s["traceId"]) and s["traceId"] != "0" * 32
        assert re.fullmatch(r"[0-9a-f]{16}", s["spanId"])
        assert re.fullmatch(r"[0-9a-f]{16}", s.get("parentSpanId", "0" * 16))
        assert s["kind"] in (1, 3)  # enums as numbers: INTERNAL, CLIENT
        assert int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"]) > 0
    # The protobuf JSON mapping, ids aside, holds nothing the OTLP messages lack.
    for s in spans:
        for k in ("traceId", "spanId", "parentSpanId"):
            if k in s:
                s[k] = base64.b64encode(bytes.fromhex(s[k])).decode()
        for link in s.get("links", []):
            for k in ("traceId", "spanId"):
                link[k] = base64.b64encode(bytes.fromhex(link[k])).decode()
    request = ParseDict(data, ExportTraceServiceRequest())
    assert sum(len(ss.spans) for rs in request.resource_spans
               for ss in rs.scope_spans) == len(spans)


@pytest.mark.slow
@pytest.mark.parametrize("granularity", ["thread", "message"])
def test_spans_are_the_graph_s_history(snapshots: dict[str, Path], tmp_path: Path,
                                       granularity: str) -> None:
    spans = spans_of_otlp_json(export(snapshots[granularity], tmp_path / "t.json"))
    checked = check_against_graph(spans, snapshots[granularity])
    counts = json.loads((snapshots[granularity] / "manifest.json").read_text())["counts"]
    # Every session and thread of the fixtures (dozens of each) was checked.
    assert checked["sessions"] == counts["nodes"]["Session"] >= 50
    assert checked["threads"] == counts["nodes"]["Thread"] >= 118
    assert checked["subagents"] >= 60 and checked["tokens"] > 0


def test_a_span_per_response_and_per_call_and_subagents_under_their_call(
        snapshots: dict[str, Path], tmp_path: Path) -> None:
    snapshot = snapshots["message"]
    spans = spans_of_otlp_json(export(snapshot, tmp_path / "t.json"))
    ops = [s.attrs["gen_ai.operation.name"] for s in spans]
    import pyarrow.parquet as pq

    manifest = json.loads((snapshot / "manifest.json").read_text())
    messages = pq.read_table(snapshot / manifest["nodes"]["Message"]["file"]).to_pylist()
    # A chat span per response, and one per advisor a thread's model consulted (the
    # billing fixture's: its tokens are on USED_MODEL only, never per message).
    chat = [s for s in spans if s.attrs["gen_ai.operation.name"] == "chat"
            and "graphkit.advisor_of" not in s.attrs]
    advised = pq.read_table(snapshot / manifest["edges"]["USED_MODEL"]["file"]).to_pylist()
    advisors = sum(1 for e in advised if any(v for k, v in e.items()
                                             if k.startswith("advisor_") and k != "advisor_model"))
    assert advisors >= 1
    assert ops.count("chat") == len(chat) + advisors
    assert len(chat) == sum(m["role"] == "assistant" for m in messages)
    assert ops.count("execute_tool") == manifest["counts"]["edges"]["MADE_CALL"]
    assert all("graphkit.message_id" in s.attrs for s in chat)
    by_id = {(s.trace, s.span): s for s in spans}
    sid = "3b9e61f0-2222-4c1d-8e7f-6a5b00000002"  # two sidechains spawned side by side
    subagents = {s.attrs["graphkit.thread_id"]: s for s in spans
                 if s.attrs["graphkit.session_id"] == sid
                 and s.attrs["gen_ai.operation.name"] == "invoke_agent"
                 and s.attrs["graphkit.thread_kind"] == "subagent"}
    assert len(subagents) == 2
    assert len({s.span for s in subagents.values()}) == 2
    for thread, span in subagents.items():
        call = by_id[(span.trace, span.parent or "")]
        assert call.attrs["gen_ai.operation.name"] == "execute_tool"
        assert call.attrs["gen_ai.tool.name"] == "Task"
        assert thread == "sidechain-" + call.attrs["gen_ai.tool.call.id"]
        assert call.start <= span.start and call.end >= span.end  # stretched to its subagent


@pytest.mark.slow
def test_ids_are_the_same_on_every_export(snapshots: dict[str, Path], tmp_path: Path) -> None:
    first = (tmp_path / "a.json", tmp_path / "b.json")
    for out in first:
        export(snapshots["message"], out)
    assert first[0].read_bytes() == first[1].read_bytes()


def test_a_continuation_is_a_link_to_the_continued_session(snapshots: dict[str, Path],
                                                           tmp_path: Path) -> None:
    data = export(snapshots["thread"], tmp_path / "t.json")
    spans = spans_of_otlp_json(data)
    roots = {s.attrs["graphkit.session_id"]: s for s in spans if s.parent is None}
    raw = {s["spanId"]: s for rs in data["resourceSpans"] for ss in rs["scopeSpans"]
           for s in ss["spans"]}
    (link,) = raw[roots[FORK[0]].span]["links"]
    assert (link["traceId"], link["spanId"]) == (roots[FORK[1]].trace, roots[FORK[1]].span)
    how = {a["key"]: a["value"]["stringValue"] for a in link["attributes"]}
    assert how == {"graphkit.continuation.how": "fork", "graphkit.session_id": FORK[1]}


CONTENT = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.agent.description")


def test_content_only_with_include_content(snapshots: dict[str, Path], tmp_path: Path) -> None:
    plain = spans_of_otlp_json(export(snapshots["content"], tmp_path / "p.json"))
    assert not [k for s in plain for k in s.attrs if k in CONTENT]
    full = spans_of_otlp_json(export(snapshots["content"], tmp_path / "c.json",
                                     "--include-content"))
    found = {k for s in full for k in s.attrs if k in CONTENT}
    assert found == set(CONTENT)
    outputs = [json.loads(s.attrs["gen_ai.output.messages"]) for s in full
               if "gen_ai.output.messages" in s.attrs]
    assert all(m[0]["role"] == "assistant" and m[0]["parts"][0]["type"] == "text"
               for m in outputs)
    assert [(s.span, s.parent) for s in plain] == [(s.span, s.parent) for s in full]


def test_include_content_is_refused_by_formats_that_write_what_the_snapshot_holds(
        snapshots: dict[str, Path], tmp_path: Path) -> None:
    res = run("export", snapshots["thread"], "--format", "graphml", tmp_path / "g.graphml",
              "--include-content", code=2)
    assert "--include-content" in res.stderr and len(res.stderr.strip().splitlines()) == 1


class _Receiver(BaseHTTPRequestHandler):
    got: ClassVar[list[tuple[str, dict[str, str], bytes]]] = []
    status = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).got.append((self.path, {k.lower(): v for k, v in self.headers.items()},
                               body))
        self.send_response(type(self).status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(b"" if type(self).status == 200 else b"denied: bad key")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, type[_Receiver]]]:
    handler = type("Receiver", (_Receiver,), {"got": [], "status": 200})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_a_push_sends_the_same_spans_as_protobuf_with_the_env_headers(
        snapshots: dict[str, Path], tmp_path: Path,
        receiver: tuple[str, type[_Receiver]]) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from graphkit.export.otlp import to_otlp_json

    url, handler = receiver
    env = {"OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=s%20cret, x-tenant = t1",
           "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}
    res = run("export", snapshots["message"], "--otlp-endpoint", url, env=env)
    sessions = json.loads((snapshots["message"] / "manifest.json").read_text())[
        "counts"]["nodes"]["Session"]
    assert f"sent {sessions} traces" in res.stdout
    spans = []
    for path, headers, body in handler.got:
        assert path == "/v1/traces"
        assert headers["content-type"] == "application/x-protobuf"
        assert headers["content-encoding"] == "gzip"
        assert (headers["x-api-key"], headers["x-tenant"]) == ("s cret", "t1")
        request = ExportTraceServiceRequest.FromString(gzip.decompress(body))
        spans += spans_of_otlp_json(to_otlp_json(request))
    written = spans_of_otlp_json(export(snapshots["message"], tmp_path / "t.json"))
    assert sorted(spans, key=lambda s: (s.trace, s.span)) == \
        sorted(written, key=lambda s: (s.trace, s.span))


@pytest.mark.slow
def test_a_refused_push_is_one_line_that_keeps_the_key_secret(
        snapshots: dict[str, Path], receiver: tuple[str, type[_Receiver]]) -> None:
    url, handler = receiver
    handler.status = 401
    res = run("export", snapshots["thread"], "--otlp-endpoint", url + "/v1/traces",
              env={"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20hunter2"}, code=2)
    (line,) = res.stderr.strip().splitlines()
    assert "HTTP 401" in line and "denied: bad key" in line and "OTEL_EXPORTER_OTLP_HEADERS" \
        in line
    assert "hunter2" not in res.output


@pytest.mark.parametrize("argv, env, says", [
    (["--otlp-endpoint", "ftp://x"], {}, "is not an http(s) URL"),
    (["--otlp-endpoint", "http://127.0.0.1:9", "--format", "otlp-json"], {},
     "give no --format or OUT"),
    ([], {}, "give --format FORMAT and OUT"),
    (["--otlp-endpoint", "http://127.0.0.1:9"], {"OTEL_EXPORTER_OTLP_HEADERS": "a=1,s3cr3t"},
     "entry 2 is no key=value pair"),
])
def test_bad_endpoints_and_headers_are_one_line(snapshots: dict[str, Path], argv: list[str],
                                                env: dict[str, str], says: str) -> None:
    res = run("export", snapshots["thread"], *argv, env=env, code=2)
    (line,) = res.stderr.strip().splitlines()
    assert says in line and "s3cr3t" not in line


def test_usage_sums_are_the_command_s(snapshots: dict[str, Path]) -> None:
    """The checks compare with `usage --json`; that answer is not all zero."""
    totals = [r["total"]["output_tokens"]
              for r in cli_records("usage", "--snapshot", str(snapshots["thread"]))]
    assert sum(totals) > 0
