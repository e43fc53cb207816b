"""Same queries, same answers: every store on the identity cases of DOMAIN.md §2
and on a generated graph of a few thousand threads.

The stores: the NetworkX store, the snapshot reader the CLI uses, and Neo4j.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from graphkit.contract.loader import load_contract
from graphkit.core.errors import QueryError
from graphkit.core.graph import GraphTables
from graphkit.core.schema import tag_rows
from graphkit.enrich.base import LineageReader
from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
from graphkit.enrich.networkx_store import NetworkXStore
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.projection.conform import conform
from graphkit.projection.project import project
from graphkit.queries.lineage import lineage, session_tree, sessions
from graphkit.snapshot import write_snapshot
from samples.generate import Truth, generate
from tests.helpers.rows import identity_cases, table

STORES = ["networkx", "snapshot", "neo4j"]


def _graph(rows: Any) -> GraphTables:
    c = load_contract()
    return project(c, tag_rows(conform(c, rows, "t"), "t")).graph


@pytest.fixture(scope="module")
def generated() -> tuple[GraphTables, Truth]:
    rows, truth = generate(600, seed=2024, max_depth=4, duplicate_rate=0.04)
    return _graph(rows), truth


@pytest.fixture(scope="module")
def opened(
    neo4j_config: Neo4jConfig, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str, GraphTables], LineageReader]]:
    neo = Neo4jStore(neo4j_config)

    def open_store(kind: str, graph: GraphTables) -> LineageReader:
        if kind == "networkx":
            s = NetworkXStore()
            s.load(graph)
            return s
        if kind == "snapshot":
            d = tmp_path_factory.mktemp("snap") / "s"
            write_snapshot(graph, d)
            return SnapshotReader(d)
        neo.load(graph, if_exists="replace")
        return neo

    yield open_store
    neo.close()


def answers(reader: LineageReader, ids: list[str], session_ids: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"lineage": [], "trees": [], "errors": []}
    for i in ids:
        try:
            out["lineage"].append(lineage(reader, i).to_json())
        except QueryError as exc:
            out["errors"].append(str(exc))
    out["trees"] = [session_tree(reader, s).to_json() for s in session_ids]
    out["sessions"] = [s.to_json() for s in sessions(reader)]
    return out


@pytest.mark.parametrize("kind", STORES)
def test_identity_cases(kind: str, opened: Callable[[str, GraphTables], LineageReader]) -> None:
    graph = _graph(table(identity_cases()))
    reference = answers(opened("networkx", graph), IDS, SESSIONS)
    got = answers(opened(kind, graph), IDS, SESSIONS)
    assert got == reference
    assert len(reference["lineage"]) == len(IDS) - 1 and len(reference["errors"]) == 1


IDS = ["agentA", "agentB", "c1a0de00-0000-4000-8000-000000000001",
       "c0de0000-0000-4000-8000-00000000000a", "c0de0000-0000-4000-8000-00000000000b",
       "no-such-id"]
SESSIONS = ["c1a0de00-0000-4000-8000-000000000001", "c0de0000-0000-4000-8000-00000000000a"]


@pytest.mark.parametrize("kind", STORES)
def test_generated_graph(
    kind: str,
    opened: Callable[[str, GraphTables], LineageReader],
    generated: tuple[GraphTables, Truth],
) -> None:
    graph, truth = generated
    assert len(truth.parent) > 2000
    ids = list(truth.parent)
    random.Random(9).shuffle(ids)
    ids = ids[:300] + list(truth.sessions)[:20]
    session_ids = list(truth.sessions)[:40]
    reader = opened(kind, graph)
    got = answers(reader, ids, session_ids)
    # Against the generator's truth, not only against another store.
    for ans in got["lineage"][:300]:
        tid = ans["id"]
        assert [a["id"] for a in ans["ancestors"]] == [*truth.ancestors(tid),
                                                        truth.session_of[tid]]
        assert {d["id"] for d in ans["descendants"]} == truth.descendants(tid)
    if kind != "networkx":
        assert got == answers(opened("networkx", graph), ids, session_ids)


def test_reader_types_are_distinct(tmp_path: Path) -> None:
    # Guard against the parametrization silently comparing one store with itself.
    g = _graph(table(identity_cases()))
    write_snapshot(g, tmp_path / "s")
    assert type(SnapshotReader(tmp_path / "s")) is not NetworkXStore
