"""Graphs with hostile values through a real Neo4j: the online load and read-back, the
offline importer of the neo4j-csv/neo4j-parquet folders, and the same answers from a
snapshot, NetworkX and Neo4j (the exports alone: tests/export/test_round_trips.py).

Values are compared bit for bit (NaN equals NaN, -0.0 differs from 0.0)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from graphkit.builds.run import graph_from_records
from graphkit.core.errors import StoreError
from graphkit.core.graph import GraphTables, NodeTable
from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
from graphkit.enrich.networkx_store import NetworkXStore
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.export import export_graph
from graphkit.export.from_neo4j import read_neo4j_graph
from graphkit.queries.usage import session_usage
from graphkit.snapshot import read_snapshot, write_snapshot
from tests.helpers.neo4j_admin import run_import
from tests.helpers.neo4j_server import launch, wipe_all
from tests.helpers.rows import row
from tests.helpers.typed_graphs import (
    answers,
    assert_exact,
    hostile_rows,
    number_graph,
)


@pytest.fixture
def store(neo4j_config: Neo4jConfig) -> Iterator[Neo4jStore]:
    with Neo4jStore(neo4j_config, batch_size=500) as s:
        wipe_all(s)
        yield s


def _widened(g: GraphTables) -> GraphTables:
    """``g`` as Neo4j keeps it without a contract: float32 as double (documented)."""
    out = GraphTables(g.contract_name, g.contract_version, g.id_recipe, g.granularity)
    for t, nt in g.nodes.items():
        table = nt.table
        for i, f in enumerate(table.schema):
            if f.type == pa.float32():
                table = table.set_column(i, f.name, table.column(i).cast(pa.float64()))
        out.nodes[t] = NodeTable(t, nt.key, table)
    out.edges = dict(g.edges)
    return out


@pytest.mark.neo4j
def test_hostile_numbers_and_times_through_neo4j(store: Neo4jStore) -> None:
    g = number_graph(wide=False)
    store.load(g)
    assert_exact(read_neo4j_graph(store, contract=None), _widened(g))


@pytest.mark.neo4j
def test_neo4j_read_back_keeps_nanoseconds(store: Neo4jStore) -> None:
    g = number_graph(wide=False)
    store.load(g)
    back = store.read_graph().nodes["Num"].table.sort_by("id")
    assert back.column("ns").type == pa.timestamp("ns", tz="UTC")
    assert back.column("ns").to_pylist() == g.nodes["Num"].table.column("ns").to_pylist()


@pytest.mark.neo4j
def test_load_refuses_integers_past_64_bits_before_writing(store: Neo4jStore) -> None:
    with pytest.raises(StoreError, match=r"node Num column 'u64' holds 18446744073709551615"):
        store.load(number_graph())
    assert store.node_counts(["Num"]) == {"Num": 0}


@pytest.mark.neo4j
def test_load_refuses_lists_holding_nulls_before_writing(store: Neo4jStore) -> None:
    g = number_graph(wide=False)
    t = g.nodes["Num"].table
    i = t.schema.get_field_index("floats")
    lists = [[1.0, None]] + [[2.0]] * (t.num_rows - 1)
    g.nodes["Num"] = NodeTable("Num", ("name",), t.set_column(
        i, "floats", pa.array(lists, pa.list_(pa.float64()))))
    with pytest.raises(StoreError, match=r"node Num column 'floats' has lists holding nulls"):
        store.load(g)
    assert store.node_counts(["Num"]) == {"Num": 0}


@pytest.mark.neo4j
def test_load_refuses_an_id_too_long_for_its_index(store: Neo4jStore) -> None:
    """Neo4j's RANGE index takes 8,164 UTF-8 bytes; a longer session id failed the
    load midway with a server error. It is refused first, naming node and property."""
    fits = graph_from_records([row("é" * 4082, message_id="m1", input_tokens=5)])
    store.load(fits)
    nx_store = NetworkXStore()
    nx_store.load(fits)
    assert answers(store, fits) == answers(nx_store, fits)
    wipe_all(store)
    too_long = graph_from_records([row("S" * 10_000, message_id="m1")])
    # (a Claude session id names its main thread too: Thread.thread_id is checked first)
    with pytest.raises(StoreError, match=r"node Thread \S+ has a thread_id of 10,000 bytes; "
                                         r"Neo4j's index on Thread.thread_id holds at most "
                                         r"8,164"):
        store.load(too_long)
    assert store.node_counts(["Session", "Thread"]) == {"Session": 0, "Thread": 0}


@pytest.mark.neo4j
def test_hostile_rows_answer_the_same_from_snapshot_networkx_and_neo4j(
        tmp_path: Path, store: Neo4jStore) -> None:
    write_snapshot(graph_from_records(hostile_rows()), tmp_path / "snap")
    snap = read_snapshot(tmp_path / "snap")
    nx_store = NetworkXStore()
    nx_store.load(snap)
    store.load(snap)
    readers = [SnapshotReader(tmp_path / "snap"), nx_store, store]
    ask = [answers(r, snap) for r in readers]
    assert ask[0] == ask[1] == ask[2]
    sids = snap.nodes["Session"].table.column("session_id").to_pylist()
    usage = [[u.to_json() for u in session_usage(r, sids)] for r in readers]
    assert usage[0] == usage[1] == usage[2]
    assert_exact(read_neo4j_graph(store), snap)


@pytest.mark.neo4j
@pytest.mark.parametrize("fmt", ["neo4j-csv", "neo4j-parquet"])
def test_neo4j_folders_import_nan_infinity_and_early_fractional_times(
        fmt: str, tmp_path: Path, store: Neo4jStore) -> None:
    """neo4j-admin refused the CSV's ``nan``/``inf`` ("Not a number") and crashed on a
    Parquet time before 1970 with a fraction of a second; both now import, and hold
    what an online load of the same graph holds (the hostile rows' sessions too)."""
    g = graph_from_records(hostile_rows())
    numbers = number_graph(wide=False)
    g.nodes.update(numbers.nodes)
    g.edges.update(numbers.edges)
    store.load(g)
    online = store.read_graph()
    folder = tmp_path / fmt
    export_graph(g, fmt, folder)
    home = tmp_path / "home"
    run_import(folder, home)
    server = launch(home=home, heap="512m")
    try:
        with Neo4jStore(Neo4jConfig(uri=server.uri, password=server.password)) as neo:
            imported = neo.read_graph()
    finally:
        server.stop()
    # Documented: the 5.26 importer reads "" from Parquet as null; CSV cannot tell
    # an empty list from null.
    assert_exact(imported, _absent(online, "" if fmt == "neo4j-parquet" else []))


def _absent(g: GraphTables, empty: Any) -> GraphTables:
    """``g`` with every node value equal to ``empty`` made null."""
    out = GraphTables(g.contract_name, g.contract_version, g.id_recipe, g.granularity)
    for t, nt in g.nodes.items():
        table = nt.table
        for i, f in enumerate(table.schema):
            values = table.column(i).to_pylist()
            if any(v == empty and type(v) is type(empty) for v in values):
                table = table.set_column(i, f, pa.array(
                    [None if v == empty and type(v) is type(empty) else v for v in values],
                    f.type))
        out.nodes[t] = NodeTable(t, nt.key, table)
    out.edges = dict(g.edges)
    return out
