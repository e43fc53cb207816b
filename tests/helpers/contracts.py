"""Contracts for tests: a contract from YAML text (loaded, or refused with one line), a
projection of a table, and a comparison of two projections table by table."""

from __future__ import annotations

import dataclasses
import itertools
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from graphkit.contract.loader import LoadedContract, load_contract
from graphkit.core.errors import ContractError
from graphkit.projection.conform import conform
from graphkit.projection.project import Projection, Shortcuts, project
from tests.helpers.rows import row, spawned

#: Every combination of the projection's shortcuts, all on first.
ALL_SHORTCUTS = [Shortcuts(*flags) for flags in itertools.product(
    (True, False), repeat=len(dataclasses.fields(Shortcuts)))]


def contract_from(tmp_path: Path, text: str) -> LoadedContract:
    """A contract loaded from ``text``, written to a file the way a user keeps it."""
    path = tmp_path / "contract.yaml"
    path.write_text(text)
    return load_contract(str(path))


def run(c: LoadedContract, table: pa.Table, **kw: Any) -> Projection:
    """``table`` conformed to ``c`` and projected."""
    return project(c, conform(c, table, "<test>"), **kw)


def assert_same(a: Projection, b: Projection) -> None:
    """Two projections give the same tables (schema, order, values) and counts."""
    assert a.graph.nodes.keys() == b.graph.nodes.keys()
    assert a.graph.edges.keys() == b.graph.edges.keys()
    for t, n in a.graph.nodes.items():
        assert n.table.equals(b.graph.nodes[t].table, check_metadata=True), t
    for t, e in a.graph.edges.items():
        assert e.table.equals(b.graph.edges[t].table, check_metadata=True), t
    assert a.rejects.equals(b.rejects, check_metadata=True)
    assert (a.rows_read, a.rows_used, a.duplicates, a.dropped_edges) == (
        b.rows_read, b.rows_used, b.duplicates, b.dropped_edges)
    assert a.graph.meta == b.graph.meta


def session_rows(seed: int, sessions: int = 12) -> list[dict[str, Any]]:
    """Rows of Claude sessions with nested subagents and Codex sessions with
    child threads, tool calls and results, duplicates, and a few unusable rows:
    the default contract's cases, mixed by a seeded generator."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for s in range(sessions):
        sid = f"sess-{seed}-{s}"
        if rng.random() < 0.5:  # Claude: main loop, subagents spawned by tool calls
            calls = [f"{sid}-call-main"]
            rows.append(row(sid, part_type="tool_call", tool_name="Task",
                            tool_call_id=calls[0], cwd=f"/src/p{s % 3}", model="sonnet"))
            for a in range(rng.randint(0, 3)):
                call = f"{sid}-call-{a}"
                rows.append(row(sid, agent_id=f"{sid}-ag{a}", is_sidechain=True,
                                attributes=spawned(rng.choice(calls), agent_type="Explore"),
                                part_type="tool_call", tool_name="Agent", tool_call_id=call,
                                model="haiku"))
                rows.append(row(sid, agent_id=f"{sid}-ag{a}", part_type="tool_result",
                                tool_call_id=call))
                calls.append(call)
        else:  # Codex: a root thread and child threads naming it
            rows.append(row(sid, conversation_id=sid, provider="openai", model="codex",
                            cwd=f"/src/p{s % 3}", part_type="tool_call", tool_name="shell"))
            for ch in range(rng.randint(0, 2)):
                rows.append(row(sid, conversation_id=f"{sid}-ch{ch}", parent_thread_id=sid,
                                provider="openai", model="codex-mini"))
    rows += [dict(r) for r in rng.sample(rows, k=len(rows) // 10)]  # duplicate parts
    rows.append(row(None, message_id=f"orphan-{seed}"))
    rows.append(row("old", conversation_id="old", schema_version=5))
    rows.append(row("s-ghost", conversation_id="c-ghost", parent_thread_id="ghost"))
    rng.shuffle(rows)
    return rows


def dictionary_coded(table: pa.Table) -> pa.Table:
    """``table`` with its text columns dictionary-encoded, as Parquet reads them."""
    cols = [c.dictionary_encode() if pa.types.is_string(c.type) else c for c in table.columns]
    return pa.Table.from_arrays(cols, names=table.column_names)


def write_contract(tmp_path: Path, text: str) -> Path:
    """``text`` written to ``tmp_path/c.yaml`` (UTF-8), as a user keeps a contract."""
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def refused(tmp_path: Path, text: str, line: int | None = None) -> ContractError:
    """The :class:`ContractError` loading ``text`` raises: it names the file, is one
    line whatever the contract held, and (if ``line`` is given) names that line."""
    path = write_contract(tmp_path, text)
    with pytest.raises(ContractError) as info:
        load_contract(str(path))
    assert info.value.path == str(path), str(info.value)
    assert "\n" not in str(info.value)
    if line is not None:
        assert info.value.line == line, str(info.value)
    return info.value


# Sums over an unnested JSON column (touched files): a node per path, an edge per session.
FILES_CONTRACT = """
contract: files
version: 1
input:
  session_id: {type: string, required: true}
  n: {type: string}
  touched: {type: json}
nodes:
  - type: Session
    key: [session_id]
    properties: {total: {sum: n}}
  - type: F
    key: [p]
    unnest: {column: touched, fields: {p: path, w: writes}}
    properties: {writes: {sum: w}}
edges:
  - type: T
    from: {type: Session, key: [session_id]}
    to: {type: F, key: [p]}
    unnest: {column: touched, fields: {p: path, w: writes}}
    properties: {writes: {sum: w}, rows: {count: "*"}}
"""
