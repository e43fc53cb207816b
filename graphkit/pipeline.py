"""The build pipeline as one library call: sources → contract → graph tables.

The CLI's ``build`` is a thin wrapper over :func:`build`; tests and notebooks
call it directly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from graphkit.contract.loader import DEFAULT_CONTRACT, LoadedContract, load_contract
from graphkit.contract.project import Projection, project
from graphkit.contract.validate import conform_sources, conform_table, read_spec
from graphkit.core.graph import GraphTables
from graphkit.core.schema import MESSAGES_SCHEMA
from graphkit.sources.read import Progress, SourceRows, read_sources


@dataclass
class BuildResult:
    """A built graph and the account of the rows behind it."""

    contract: LoadedContract
    projection: Projection
    sources: SourceRows
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def graph(self) -> GraphTables:
        """The projected graph."""
        return self.projection.graph

    def summary(self) -> dict[str, Any]:
        """Counts for the closing summary and the snapshot manifest."""
        p = self.projection
        return {
            "rows_read": p.rows_read,
            "rows_used": p.rows_used,
            "rows_rejected": p.rows_rejected,
            "duplicate_rows": p.duplicates,
            "lines_skipped": len(self.sources.skipped),
            "nodes": self.graph.node_counts(),
            "edges": self.graph.edge_counts(),
            "dropped_edges": {t: d for t, d in p.dropped_edges.items() if any(d.values())},
        }


def build(
    sources: Sequence[Path],
    *,
    contract: str | LoadedContract = DEFAULT_CONTRACT,
    granularity: str = "thread",
    strict: bool = False,
    since: datetime | None = None,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    fingerprints: bool = True,
    include_content: bool = False,
) -> BuildResult:
    """Read ``sources``, check them against the contract and project the graph."""
    import time

    c = contract if isinstance(contract, LoadedContract) else load_contract(contract)
    t0 = time.perf_counter()
    rows = read_sources(sources, read_spec(c, include_content), strict=strict, since=since,
                        cache_dir=cache_dir, progress=progress, fingerprints=fingerprints)
    held = [conform_sources(c, rows, since=since)]
    t1 = time.perf_counter()
    if progress:
        progress(f"projecting {held[0].num_rows} rows with {c.name} v{c.version}")
    # Hand the table over instead of keeping a reference here: project() drops
    # the columns it does not need early, and the originals can be freed then.
    proj = project(c, held.pop(), granularity=granularity, include_content=include_content)
    t2 = time.perf_counter()
    return BuildResult(c, proj, rows, {"read": t1 - t0, "project": t2 - t1})


def graph_from_records(
    records: list[dict[str, Any]],
    *,
    contract: str | LoadedContract = DEFAULT_CONTRACT,
    granularity: str = "thread",
) -> GraphTables:
    """Project a few rows given as dicts (columns as in ``ai_gateway_messages``)."""
    c = contract if isinstance(contract, LoadedContract) else load_contract(contract)
    names = [n for n in MESSAGES_SCHEMA.names if any(n in r for r in records)]
    schema = pa.schema([MESSAGES_SCHEMA.field(n).with_nullable(True) for n in names])
    table = pa.Table.from_pylist(records, schema=schema)
    return project(c, conform_table(c, table, "<records>"), granularity=granularity).graph


def example_rows() -> list[dict[str, Any]]:
    """A tiny Claude session: main loop → subagent ``ag-1`` → nested ``ag-2``,
    and a Codex root thread ``th-root`` with child ``th-child``."""
    t = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)

    def row(i: int, **kw: Any) -> dict[str, Any]:
        base = {"session_id": "sess-1", "message_id": f"m{i}", "part_id": f"m{i}:0",
                "message_created_at": t + timedelta(seconds=i), "message_index": i,
                "part_type": "text", "schema_version": 7}
        base.update(kw)
        return base

    def spawned(call: str) -> str:
        return json.dumps({"claude": {"spawned_by_tool_use_id": call}})

    return [
        row(1, part_type="tool_call", tool_name="Task", tool_call_id="toolu_1"),
        row(2, agent_id="ag-1", attributes=spawned("toolu_1"), part_type="tool_call",
            tool_name="Agent", tool_call_id="toolu_2"),
        row(3, agent_id="ag-2", attributes=spawned("toolu_2")),
        row(4, session_id="th-root", conversation_id="th-root"),
        row(5, session_id="th-root", conversation_id="th-child", parent_thread_id="th-root"),
    ]


def example_graph() -> GraphTables:
    """The graph of :func:`example_rows` (for docstring examples)."""
    return graph_from_records(example_rows())
