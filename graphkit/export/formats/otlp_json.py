"""``otlp-json``: the history as OpenTelemetry traces in the OTLP/JSON encoding, one
``ExportTraceServiceRequest`` (see :mod:`graphkit.export.otlp` for the mapping): one
trace per session, an ``invoke_agent`` span per thread, ``chat`` spans with token
usage, ``execute_tool`` spans, continuations as links. Any OTLP/JSON reader takes it
(an OpenTelemetry Collector's ``otlpjsonfile`` receiver, or a POST to ``/v1/traces``
with ``Content-Type: application/json``); ``graphkit export --otlp-endpoint URL``
sends the same spans over OTLP/HTTP.
"""

from __future__ import annotations

import json
from functools import partial

from graphkit.core.graph import GraphTables
from graphkit.export.registry import ExportError, ExportReport, Format, Output, Progress


def write(graph: GraphTables, out: Output, progress: Progress, *,
          include_content: bool = False) -> ExportReport:
    """Write ``graph`` as one OTLP/JSON ``ExportTraceServiceRequest`` to ``out``."""
    try:
        from graphkit.export.otlp import to_otlp_json, trace_request
    except ImportError as exc:  # the otlp extra: opentelemetry-proto
        raise ExportError(f"the otlp-json format needs the OpenTelemetry protocol package "
                          f"({exc.name})", hint="pip install 'graphkit[otlp]'") from None
    progress("mapping sessions to traces")
    request, counts = trace_request(graph, include_content=include_content)
    progress(f"writing {sum(v for k, v in counts.items() if k not in ('trace', 'link'))} "
             "spans")
    text = json.dumps(to_otlp_json(request), ensure_ascii=False, separators=(",", ":"))
    with out.open_binary() as fh:
        fh.write(text.encode("utf-8") + b"\n")
    report = ExportReport("otlp-json", out.name, nodes={k: v for k, v in counts.items()
                                                       if k != "link"},
                          edges={"link": counts.get("link", 0)})
    spans = sum(v for k, v in report.nodes.items() if k != "trace")
    report.account = (f"{report.nodes['trace']} traces, {spans} spans and "
                      f"{report.edges['link']} links")
    if graph.granularity == "thread":
        report.notes.append("a thread-granularity snapshot: one chat span per model a "
                            "thread used and one execute_tool span per tool (build with "
                            "--granularity message for one per response and per call)")
    return report


FORMAT = Format(
    name="otlp-json",
    summary="OpenTelemetry traces (OTLP/JSON): a trace per session, spans per thread, "
            "response and tool call",
    write=write,
    write_content=partial(write, include_content=True),
)
