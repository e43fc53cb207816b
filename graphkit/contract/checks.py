"""Identity checks on message rows, without building a snapshot.

Each check looks for a way the identity columns of LLP 0030 can go wrong:
rows with no session, an id shared by two sessions, a parent that never
appears, a parent cycle, rows older than the session/conversation split.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.contract.groups import decoded
from graphkit.contract.loader import LoadedContract
from graphkit.contract.project import project
from graphkit.core.schema import FILE_COL, ROW_COL, SESSION_SPLIT_SCHEMA_VERSION

SAMPLE = 5  # examples listed per finding


@dataclass
class Finding:
    """One problem found, with a few examples of where."""

    check: str
    count: int
    message: str
    examples: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The finding as printed by ``graphkit check --json``."""
        return {"check": self.check, "count": self.count, "message": self.message,
                "examples": self.examples}


def _where(rows: pa.Table, mask: pa.Array) -> list[dict[str, Any]]:
    sub = rows.filter(mask).slice(0, SAMPLE)
    return [{"file": f, "row": r} for f, r in zip(
        sub.column(FILE_COL).to_pylist(), sub.column(ROW_COL).to_pylist(), strict=True)]


def _shared_ids(rows: pa.Table, column: str) -> list[dict[str, Any]]:
    t = rows.select([column, "session_id"]).filter(
        pc.and_(pc.is_valid(rows.column(column)), pc.is_valid(rows.column("session_id"))))
    g = t.group_by(column).aggregate([("session_id", "distinct")])
    multi = g.filter(pc.greater(pc.list_value_length(g.column("session_id_distinct")), 1))
    return [{column: k, "sessions": sorted(v)} for k, v in zip(
        multi.column(column).to_pylist(), multi.column("session_id_distinct").to_pylist(),
        strict=True)]


def check_rows(contract: LoadedContract, rows: pa.Table) -> list[Finding]:
    """All identity problems in ``rows`` (as read by ``read_sources``)."""
    # read_sources keeps Parquet text dictionary-encoded; the checks below
    # (is_in, unique, distinct lists) read values, and are not on a hot path.
    rows = decoded(rows)
    out: list[Finding] = []
    cols = set(rows.column_names)
    if "session_id" in cols:
        null = pc.is_null(rows.column("session_id"))
        n = pc.sum(null).as_py() or 0
        if n:
            out.append(Finding("null-session", n, f"{n} row(s) have no session_id",
                               _where(rows, null)))
    for column, name in (("agent_id", "agent-in-two-sessions"),
                         ("conversation_id", "thread-in-two-sessions")):
        if column in cols:
            shared = _shared_ids(rows, column)
            if shared:
                out.append(Finding(name, len(shared),
                                   f"{len(shared)} {column} value(s) appear under more than "
                                   "one session_id", shared[:SAMPLE]))
    if "schema_version" in cols:
        old = pc.fill_null(pc.less(rows.column("schema_version"),
                                   SESSION_SPLIT_SCHEMA_VERSION), False)
        n = pc.sum(old).as_py() or 0
        if n:
            out.append(Finding(
                "pre-split-schema", n,
                f"{n} row(s) have schema_version < {SESSION_SPLIT_SCHEMA_VERSION}: their "
                "conversation_id holds the Claude session id (before LLP 0030)",
                _where(rows, old)))
    proj = project(contract, rows)
    loops = proj.dropped_edges.get("PARENT_THREAD", {}).get("self_loop", 0)
    if loops:
        out.append(Finding("cycle", loops, f"{loops} thread(s) name themselves as parent"))
    out.extend(_missing_parents(contract, rows))
    parent = proj.graph.edges.get("PARENT_THREAD")
    threads = proj.graph.nodes.get("Thread")
    if parent is not None and threads is not None:
        g = nx.DiGraph()
        g.add_edges_from(zip(parent.table.column("source").to_pylist(),
                             parent.table.column("target").to_pylist(), strict=True))
        names = dict(zip(threads.table.column("id").to_pylist(),
                         threads.table.column("thread_id").to_pylist(), strict=True))
        cycles = [c for c in nx.simple_cycles(g)]
        if cycles:
            out.append(Finding("cycle", len(cycles),
                               f"{len(cycles)} parent cycle(s) among threads",
                               [{"threads": [names.get(n, n) for n in c]}
                                for c in cycles[:SAMPLE]]))
    return out


def _missing(refs: pa.Array, known: pa.Array) -> list[str]:
    refs = pc.unique(refs.drop_null())
    return sorted(pc.filter(refs, pc.invert(pc.is_in(refs, value_set=known))).to_pylist())


def _missing_parents(contract: LoadedContract, rows: pa.Table) -> list[Finding]:
    """Parent references whose target never appears in the rows."""
    out: list[Finding] = []
    cols = set(rows.column_names)
    if {"parent_thread_id", "conversation_id"} <= cols:
        known = pc.unique(pc.coalesce(rows.column("conversation_id"),
                                      rows.column("session_id")).drop_null())
        missing = _missing(rows.column("parent_thread_id").combine_chunks(), known)
        if missing:
            out.append(Finding("missing-parent", len(missing),
                               f"{len(missing)} parent_thread_id value(s) name a thread that "
                               "has no rows", [{"parent_thread_id": v} for v in missing[:SAMPLE]]))
    spawned = contract.derived.get("spawned_by")
    if spawned is not None and "tool_call_id" in cols:
        refs = spawned.evaluate(rows)
        refs = refs.combine_chunks() if isinstance(refs, pa.ChunkedArray) else refs
        missing = _missing(refs, pc.unique(rows.column("tool_call_id").drop_null()))
        if missing:
            out.append(Finding("missing-parent", len(missing),
                               f"{len(missing)} subagent(s) name a spawning tool call that "
                               "never appears", [{"spawned_by_tool_use_id": v}
                                                 for v in missing[:SAMPLE]]))
    return out
