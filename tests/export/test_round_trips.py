"""Graphs that travel, with hostile values (issue 10, issue 3): a snapshot → every
export format → read back by graphkit and by networkx's own readers must give the same
nodes, edges, values and types, or the export must refuse, naming the value.

Neo4j's side (the online load, the offline importer of the neo4j-csv/neo4j-parquet
folders) is tests/e2e/neo4j/test_round_trips.py.

Values are compared bit for bit (NaN equals NaN, -0.0 differs from 0.0)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import networkx as nx
import pyarrow as pa
import pytest

from graphkit.builds.run import graph_from_records
from graphkit.core.errors import StoreError
from graphkit.core.graph import EdgeTable, GraphTables, NodeTable
from graphkit.enrich.networkx_store import NetworkXStore, from_networkx
from graphkit.export import ExportError, export_graph, get_format
from graphkit.snapshot import read_snapshot, write_snapshot
from tests.helpers.rows import row
from tests.helpers.typed_graphs import (
    assert_exact,
    hostile_rows,
    number_graph,
)


def _nx_read(fmt: str, path: Path) -> nx.MultiDiGraph:
    """What another tool built on networkx sees."""
    if fmt == "node-link":
        return nx.node_link_graph(json.loads(path.read_text(encoding="utf-8")), edges="edges")
    if fmt == "graphml":
        return nx.read_graphml(path, force_multigraph=True)
    return nx.read_gexf(path)


@pytest.mark.slow
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
