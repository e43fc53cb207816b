"""Graphs that travel, with hostile values (issue 10, issue 3): a snapshot → every
export format → read back by graphkit, by networkx's own readers and by Neo4j (online
load, and the offline importer for the neo4j-csv/neo4j-parquet folders) must give the same
nodes, edges, values and types, or the export must refuse, naming the value.

Values are compared bit for bit (NaN equals NaN, -0.0 differs from 0.0).
"""

from __future__ import annotations

import json
import math
import re
import struct
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import networkx as nx
import pyarrow as pa
import pytest

from graphkit.builds.run import graph_from_records
from graphkit.core.errors import StoreError
from graphkit.core.graph import EdgeTable, GraphTables, NodeTable
from graphkit.core.ids import node_id
from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
from graphkit.enrich.networkx_store import NetworkXStore, from_networkx
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.export import ExportError, export_graph, get_format
from graphkit.export.from_neo4j import read_neo4j_graph
from graphkit.queries.usage import session_usage
from graphkit.snapshot import read_snapshot, write_snapshot
from tests.helpers.neo4j_admin import run_import
from tests.helpers.neo4j_server import launch, wipe_all
from tests.helpers.rows import row, spawned
from tests.helpers.typed_graphs import answers

FLOATS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, 1.7976931348623157e308, 0.1, None]
# Strings that break writers, from rows: separators, quotes, controls, bidi marks,
# emoji, ids equal after case folding or NFC, an empty string beside nulls, 1 MB.
STRINGS = ["tab\there", "nl\nx", "cr\r\nx", "q'\"`", "c,o;m|m", "back\\slash\\", "nul\x00x",
           "rtl\u200f\u202eabc", "emoji 😀", "", " ", "Straße", "STRASSE", "e\u0301", "\u00e9",
           "\u2028ls", "\ufeffbom", "\x7f del", "x" * 1_000_000]


def _bits(v: Any) -> Any:
    if isinstance(v, float):
        return ("float", struct.pack(">d", v))
    if isinstance(v, list):
        return [_bits(x) for x in v]
    if isinstance(v, dict):
        return {k: _bits(x) for k, x in v.items()}
    return (type(v).__name__, v)


def assert_exact(a: GraphTables, b: GraphTables, *, types: bool = True) -> None:
    """Same types, columns (any order), column types and values, bit for bit."""
    assert sorted(a.nodes) == sorted(b.nodes) and sorted(a.edges) == sorted(b.edges)
    pairs = [(t, a.nodes[t].table, b.nodes[t].table, ["id"]) for t in a.nodes]
    pairs += [(t, a.edges[t].table, b.edges[t].table, ["source", "target"]) for t in a.edges]
    for t, x, y, key in pairs:
        assert sorted(x.column_names) == sorted(y.column_names), t
        x, y = (z.sort_by([(c, "ascending") for c in key]) for z in (x, y))
        for name in x.column_names:
            if types:
                assert x.schema.field(name).type == y.schema.field(name).type, (t, name)
            assert _bits(x.column(name).to_pylist()) == _bits(y.column(name).to_pylist()), (
                t, name)


def number_graph(*, wide: bool = True) -> GraphTables:
    """Floats NaN/±inf/-0.0/subnormal/max, int64 at ±2^63 and ±(2^53+1), uint64 past
    2^63 (``wide``), times at years 1 and 9999 with fractions, leap days, ns."""
    n = len(FLOATS)
    names = [f"n{i}" for i in range(n)]
    ids = [node_id("Num", [x]) for x in names]
    cols: dict[str, pa.Array] = {
        "id": pa.array(ids), "name": pa.array(names),
        "f64": pa.array(FLOATS, pa.float64()),
        "f32": pa.array(FLOATS, pa.float32()),
        "i64": pa.array([2**63 - 1, -2**63, 2**53 + 1, -(2**53 + 1), 0, 1, -1, 2**31, None],
                        pa.int64()),
        "when": pa.array([datetime(1, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
                          datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
                          datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC),
                          datetime(2024, 2, 29, tzinfo=UTC), datetime(2000, 2, 29, tzinfo=UTC),
                          *[datetime(2026, 1, 1, tzinfo=UTC)] * 3, None],
                         pa.timestamp("us", tz="UTC")),
        "ns": pa.array([-2**62, 2**63 - 1, 1, 0, 1_700_000_000_123_456_789, 5, 6, 7, None],
                       pa.timestamp("ns", tz="UTC")),
        "floats": pa.array([[math.nan], [-0.0], [math.inf, -math.inf], [], [1.5], [], [], [],
                            None], pa.list_(pa.float64())),
        "text": pa.array(["", " ", "nan", "NaN", "Infinity", "null", "0", "-0", None]),
    }
    if wide:
        cols["u64"] = pa.array([2**64 - 1, 2**63, 0, 1, 2**53 + 1, 5, 6, 7, None], pa.uint64())
    g = GraphTables("numbers", 1, 1, "thread")
    g.nodes["Num"] = NodeTable("Num", ("name",), pa.table(cols).sort_by("id"))
    edges = pa.table({"source": pa.array(ids[1:]), "target": pa.array(ids[:-1]),
                      "w": pa.array(FLOATS[:-1], pa.float64()),
                      "big": pa.array([2**63 - 1] * (n - 1), pa.int64())})
    g.edges["NEXT"] = EdgeTable("NEXT", "Num", "Num",
                                edges.sort_by([("source", "ascending"), ("target", "ascending")]))
    g.meta["indexes"] = {"Num": ["name"]}
    return g


def hostile_rows() -> list[dict[str, Any]]:
    """Sessions from rows holding every hostile string in ids, paths, models, branches,
    agent types and descriptions; token counts at ±(2^53 - 1); times at years 1 and
    9999 and a leap day; one session of a single row."""
    times = [datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
             datetime(1, 1, 1, tzinfo=UTC), datetime(2024, 2, 29, tzinfo=UTC)]
    out = []
    for i, s in enumerate(STRINGS):
        sid = f"s{i}-{s[:50]}"
        out.append(row(sid, message_id=f"m{i}", part_type="tool_call", tool_call_id=f"tu{i}",
                       tool_name="Task" if i % 2 else s or "T", cwd=s, model=s or None,
                       git_branch=s, input_tokens=(-1) ** i * (2**53 - 1), output_tokens=0))
        out.append(row(sid, agent_id=f"ag{i}{s[:30]}", is_sidechain=True, message_id=f"a{i}",
                       attributes=spawned(f"tu{i}", agent_type=s, description=s),
                       message_created_at=times[i % 3]))
    out.append(row("lonely", message_id="one"))
    return out


# --- networkx's formats: graphkit's readers and networkx's own ------------------------


def _nx_read(fmt: str, path: Path) -> nx.MultiDiGraph:
    """What another tool built on networkx sees."""
    if fmt == "node-link":
        return nx.node_link_graph(json.loads(path.read_text(encoding="utf-8")), edges="edges")
    if fmt == "graphml":
        return nx.read_graphml(path, force_multigraph=True)
    return nx.read_gexf(path)


@pytest.mark.parametrize("fmt", ["node-link", "graphml", "gexf"])
def test_hostile_rows_travel_through_networkx_formats(fmt: str, tmp_path: Path) -> None:
    write_snapshot(graph_from_records(hostile_rows()), tmp_path / "snap")
    snap = read_snapshot(tmp_path / "snap")
    path = tmp_path / f"graph.{fmt}"
    export_graph(snap, fmt, path)
    read = get_format(fmt).read
    assert read is not None
    assert_exact(read(path), snap)
    if fmt != "gexf":  # GEXF renames GEXF's own attribute names: graphkit's reader undoes it
        assert_exact(from_networkx(_nx_read(fmt, path)), snap)


def _reject_constant(token: str) -> None:
    raise AssertionError(f"not standard JSON: {token}")


def test_node_link_is_standard_json_with_nan_and_infinity(tmp_path: Path) -> None:
    g = number_graph()
    path = tmp_path / "g.json"
    export_graph(g, "node-link", path)
    # JSON has no NaN/Infinity: jq, JavaScript's JSON.parse and Java parsers refuse them.
    data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    assert json.loads(data["graph"]["encoding"])["nodes"]["Num"]["f64"] == "text"
    assert {n["f64"] for n in data["nodes"] if n["name"] in ("n0", "n1", "n2")} == {
        "NaN", "Infinity", "-Infinity"}
    assert_exact(from_networkx(_nx_read("node-link", path)), g)


_JAVA_DOUBLE = re.compile(r"NaN|-?Infinity|[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def _typed_values(path: Path, fmt: str) -> dict[str, list[tuple[str, str]]]:
    """Each declared numeric type: the (attribute, value) pairs written under it."""
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"} if fmt == "graphml" else {}
    root = ET.parse(path).getroot()
    out: dict[str, list[tuple[str, str]]] = {}
    if fmt == "graphml":
        types = {k.get("id"): (k.get("attr.name"), k.get("attr.type"))
                 for k in root.iter(f"{{{ns['g']}}}key")}
        for d in root.iter(f"{{{ns['g']}}}data"):
            name, t = types[d.get("key")]
            out.setdefault(t, []).append((name, d.text or ""))
    else:
        types = {a.get("id"): (a.get("title"), a.get("type")) for a in root.iter()
                 if a.tag.endswith("attribute")}
        for v in root.iter():
            if v.tag.endswith("attvalue"):
                name, t = types[v.get("for")]
                out.setdefault(t, []).append((name, v.get("value") or ""))
    return out


@pytest.mark.parametrize("fmt", ["graphml", "gexf"])
def test_xml_numbers_are_what_their_type_says(fmt: str, tmp_path: Path) -> None:
    """GraphML's double is Java's (no ``nan``/``inf``), GEXF's xsd:double; the
    ``long`` of both is 64-bit signed: a value past it is held as text, marked."""
    g = number_graph()
    path = tmp_path / f"g.{fmt}"
    export_graph(g, fmt, path)
    typed = _typed_values(path, fmt)
    for t in ("long", "integer"):
        for name, v in typed.get(t, []):
            assert -2**63 <= int(v) < 2**63, (name, v)
    doubles = typed.get("double", []) + typed.get("float", [])
    if fmt == "graphml":
        for name, v in doubles:
            assert _JAVA_DOUBLE.fullmatch(v), (name, v)
    else:
        for name, v in doubles:
            assert re.fullmatch(r"NaN|-?INF|[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", v), (name, v)
    read = get_format(fmt).read
    assert read is not None
    assert_exact(read(path), g)
    if fmt == "graphml":
        assert_exact(from_networkx(_nx_read(fmt, path)), g)


@pytest.mark.parametrize("fmt", ["neo4j-csv", "neo4j-parquet"])
def test_neo4j_folders_refuse_integers_past_64_bits(fmt: str, tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"Num property 'u64' holds 18446744073709551615"):
        export_graph(number_graph(), fmt, tmp_path / fmt)
    assert not (tmp_path / fmt).exists()


# --- Neo4j: online load, offline import ------------------------------------------------


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


@pytest.mark.parametrize("fmt", ["neo4j-csv", "neo4j-parquet"])
def test_neo4j_folders_say_which_index_will_not_build(fmt: str, tmp_path: Path) -> None:
    """The import itself takes a 10,000-byte session id; the index schema.cypher then
    makes on it fails in Neo4j, which the export says instead of leaving it to find."""
    g = graph_from_records([row("S" * 10_000, message_id="m1")])
    report = export_graph(g, fmt, tmp_path / fmt)
    said = [n for n in report.notes if "will fail to build" in n]
    assert said and "thread_id of 10,000 bytes" in said[0] and "8,164" in said[0]
    assert "will fail to build" in (tmp_path / fmt / "README.md").read_text(encoding="utf-8")
    fits = graph_from_records([row("S" * 8164, message_id="m1")])
    assert not [n for n in export_graph(fits, fmt, tmp_path / "fits").notes
                if "will fail to build" in n]


@pytest.mark.parametrize("fmt", ["node-link", "graphml", "gexf"])
def test_the_earliest_nanosecond_times_read_back(fmt: str, tmp_path: Path) -> None:
    """Arrow's ISO-8601 parser overflowed within a second of the earliest ns time
    (1677-09-21T00:12:43.145224193): the file was written, and could not be read."""
    g = GraphTables("ns", 1, 1, "thread")
    for tz in ("UTC", None):
        g.nodes[f"T{tz or 'local'}"] = NodeTable(f"T{tz or 'local'}", ("id",), pa.table({
            "id": [f"{tz}{i}" for i in "abcd"],
            "t": pa.array([-2**63 + 1, 2**63 - 1, -1, None], pa.timestamp("ns", tz=tz))}))
    path = tmp_path / f"g.{fmt}"
    export_graph(g, fmt, path)
    read = get_format(fmt).read
    assert read is not None
    assert_exact(read(path), g)


def test_a_property_named_type_is_refused_not_taken_for_the_label(tmp_path: Path) -> None:
    """networkx graphs hold each node's label in the attribute ``type``: a contract
    property of that name replaced it, so the NetworkX store and the node-link, GraphML
    and GEXF files held Tool nodes of type "anthropic" (Neo4j kept both)."""
    from graphkit.builds.run import build
    from tests.helpers.paths import REPO
    from tests.helpers.rows import identity_cases, table

    text = (REPO / "contracts" / "ai-gateway-graph.yaml").read_text(encoding="utf-8")
    old = "      calls: {count: tool_call_id}\n"
    assert old in text
    contract = tmp_path / "typed.yaml"
    contract.write_text(text.replace(old, old + "      type: {first: provider}\n", 1),
                        encoding="utf-8")
    g = build(table(identity_cases()), contract=str(contract)).graph
    assert "type" in g.nodes["Tool"].table.column_names
    said = r"node type Tool has a property named 'type', which a networkx graph uses"
    with pytest.raises(StoreError, match=said):
        NetworkXStore().load(g)
    for fmt in ("node-link", "graphml", "gexf"):
        with pytest.raises(StoreError, match=said):
            export_graph(g, fmt, tmp_path / f"g.{fmt}")
        assert not (tmp_path / f"g.{fmt}").exists()


def _named_graph(**doc: list[Any]) -> GraphTables:
    g = GraphTables("names", 1, 1, "thread")
    g.nodes["Doc"] = NodeTable("Doc", ("name",), pa.table(
        {"id": ["d1", "d2"], "name": ["a", "b"], "label": ["L1", "L2"], **doc}))
    g.edges["REL"] = EdgeTable("REL", "Doc", "Doc", pa.table({
        "source": ["d1"], "target": ["d2"], "weight": [1.5], "key": ["kk"], "id": ["e"],
        "label": ["el"]}))
    return g


def test_gexf_carries_an_edge_property_named_key(tmp_path: Path) -> None:
    """GEXF writes GEXF's own names ``prop_<name>``; reading an edge property
    ``key`` back failed: "add_edge() got multiple values for keyword argument 'key'"."""
    g = _named_graph()
    export_graph(g, "gexf", tmp_path / "g.gexf")
    read = get_format("gexf").read
    assert read is not None
    assert_exact(read(tmp_path / "g.gexf"), g)


def test_gexf_refuses_a_property_named_as_a_renamed_one(tmp_path: Path) -> None:
    """A property ``prop_label`` read back as ``label`` (or clashed with it)."""
    with pytest.raises(ExportError, match=r"node type Doc has a property named 'prop_label'"):
        export_graph(_named_graph(prop_label=["P1", "P2"]), "gexf", tmp_path / "g.gexf")


def test_node_link_refuses_an_edge_property_named_key(tmp_path: Path) -> None:
    """node-link's edge field ``key`` took the property's place: it read back lost."""
    with pytest.raises(ExportError, match=r"edge type REL has a property named 'key'"):
        export_graph(_named_graph(), "node-link", tmp_path / "g.json")
    assert not (tmp_path / "g.json").exists()
