"""Every file format read back by the tool that owns it (networkx, pandas,
pyarrow), and the command line around them. The Neo4j formats' imports into a
real Neo4j are in tests/e2e/neo4j/test_export_import.py."""

from __future__ import annotations

import io
import json
from pathlib import Path

import networkx as nx
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphkit.core.graph import EdgeTable, GraphTables
from graphkit.enrich.networkx_store import from_networkx, to_networkx
from graphkit.export import ExportError, export_graph, format_names, get_format
from graphkit.export.formats.cypher import float_literal, string_literal
from graphkit.snapshot import read_snapshot, write_snapshot
from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.paths import REPO
from tests.helpers.typed_graphs import (
    CONTROL,
    HOSTILE,
    assert_same_graph,
    lineage_graph,
    typed_graph,
)

GRAPHS = {"typed": typed_graph, "lineage": lineage_graph}


def test_every_format_module_is_found() -> None:
    assert format_names() == ["cypher", "edges", "gexf", "graphml", "neo4j-csv",
                              "neo4j-parquet", "node-link", "otlp-json"]
    for name in format_names():
        assert get_format(name).name == name


def test_unknown_format_names_the_known_ones() -> None:
    with pytest.raises(ExportError, match=r"unknown export format 'dot'.*graphml"):
        get_format("dot")


# --- networkx's formats, read back by networkx ----------------------------------


def _read_with_networkx(fmt: str, path: Path) -> GraphTables:
    if fmt == "node-link":
        data = json.loads(path.read_text(encoding="utf-8"))
        return from_networkx(nx.node_link_graph(data, edges="edges"))
    if fmt == "graphml":
        return from_networkx(nx.read_graphml(path, force_multigraph=True))
    read = get_format(fmt).read  # GEXF: nx.read_gexf plus the <meta> description
    assert read is not None
    return read(path)


@pytest.mark.parametrize("graph", sorted(GRAPHS))
@pytest.mark.parametrize("fmt", ["node-link", "graphml", "gexf"])
def test_networkx_formats_read_back_exactly(fmt: str, graph: str, tmp_path: Path) -> None:
    g = GRAPHS[graph]()
    path = tmp_path / f"graph.{fmt}"
    report = export_graph(g, fmt, path)
    assert report.nodes == g.node_counts() and report.edges == g.edge_counts()
    assert_same_graph(_read_with_networkx(fmt, path), g)


def test_graphml_as_other_tools_see_it(tmp_path: Path) -> None:
    g = typed_graph()
    export_graph(g, "graphml", tmp_path / "g.graphml")
    G = nx.read_graphml(tmp_path / "g.graphml")
    encoding = json.loads(G.graph["encoding"])
    assert encoding["nodes"]["Doc"]["when"] == "iso8601"
    assert encoding["nodes"]["Doc"]["tags"] == "json"
    assert encoding["nodes"]["Doc"]["meta"] == "json"
    assert encoding["nodes"]["Doc"]["name"] == "json"  # it holds NUL, which XML cannot
    doc = next(a for _n, a in G.nodes(data=True) if a.get("type") == "Doc"
               and a.get("n") == 1)
    assert doc["when"] == "2026-11-20T09:00:01.000007+00:00"
    assert json.loads(doc["tags"]) == [HOSTILE[1], "x;y", "z"]
    assert isinstance(doc["big"], int) and isinstance(doc["flag"], bool)
    assert "title" not in next(a for _n, a in G.nodes(data=True) if a.get("n") == 0)  # null
    ids = [d for _u, _v, d in G.edges(data=True)]
    assert len(ids) == sum(g.edge_counts().values())
    text = (tmp_path / "g.graphml").read_text(encoding="utf-8")
    assert len(set(_edge_ids(text))) == len(_edge_ids(text))  # unique, as GraphML requires


def _edge_ids(text: str) -> list[str]:
    import re

    return re.findall(r'<edge [^>]*id="([^"]+)"', text)


def test_gexf_as_gephi_sees_it(tmp_path: Path) -> None:
    export_graph(typed_graph(), "gexf", tmp_path / "g.gexf")
    G = nx.read_gexf(tmp_path / "g.gexf")
    labels = {a["label"] for _n, a in G.nodes(data=True)}
    assert "Person Ada / Lovelace" in labels
    edge = next(d for _u, _v, d in G.edges(data=True) if d["label"] == "WROTE")
    # GEXF's own "weight" and "label" are not the edge's properties of those names.
    assert "prop_weight" in edge and "prop_label" in edge
    text = (tmp_path / "g.gexf").read_text(encoding="utf-8")
    assert "<description>" in text and 'defaultedgetype="directed"' in text


def test_to_networkx_graph_is_writable_by_networkx_writers() -> None:
    for make in GRAPHS.values():
        G = to_networkx(make())
        nx.write_graphml(G, io.BytesIO())
        nx.write_gexf(G, io.BytesIO())
        json.dumps(nx.node_link_data(G, edges="edges"))
        assert all(isinstance(v, str | int | float | bool) for v in G.graph.values())


def test_snapshot_networkx_snapshot_round_trip(tmp_path: Path) -> None:
    g = typed_graph()
    write_snapshot(g, tmp_path / "a")
    G = to_networkx(read_snapshot(tmp_path / "a"))
    write_snapshot(from_networkx(G), tmp_path / "b")
    back = read_snapshot(tmp_path / "b")
    assert_same_graph(back, g)
    assert back.meta["indexes"] == g.meta["indexes"]


def test_from_networkx_keeps_attributes_added_by_hand() -> None:
    G = to_networkx(lineage_graph())
    node = next(n for n, a in G.nodes(data=True) if a["type"] == "Session")
    G.nodes[node]["note"] = "mine"
    table = from_networkx(G).nodes["Session"].table
    assert table.column("note").to_pylist().count("mine") == 1


# --- Cypher literals -------------------------------------------------------------


@pytest.mark.parametrize("value", [*HOSTILE, CONTROL, "\u2028\u2029\x85\x0b\x0c"])
def test_string_literal_is_one_line_and_reads_back(value: str) -> None:
    lit = string_literal(value)
    assert len(lit.splitlines()) == 1
    assert lit[0] == lit[-1] == "'"
    # Undo the escapes the way Cypher's lexer does.
    assert _unescape(lit[1:-1]) == value


def _unescape(body: str) -> str:
    out, i = [], 0
    simple = {"\\": "\\", "'": "'", "n": "\n", "r": "\r", "t": "\t"}
    while i < len(body):
        c = body[i]
        assert c != "'", "an unescaped quote would end the literal"
        if c == "\\":
            nxt = body[i + 1]
            if nxt == "u":
                out.append(chr(int(body[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(simple[nxt])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def test_float_literals() -> None:
    assert float_literal(1e-7) == "1.0E-7"
    assert float_literal(2.5e300) == "2.5E300"
    assert float_literal(float("-inf")) == "(-1.0/0.0)"
    assert float(float_literal(1 / 3)) == 1 / 3


def test_cypher_script_escapes_hostile_values(tmp_path: Path) -> None:
    export_graph(typed_graph(neo4j_safe=True), "cypher", tmp_path / "g.cypher")
    lines = (tmp_path / "g.cypher").read_text(encoding="utf-8").split("\n")
    statements = [s for s in lines if s and not s.startswith("//")]
    assert statements[0].startswith("CREATE CONSTRAINT")
    assert sum(s.startswith("UNWIND") for s in statements) == 4
    assert all(s.endswith(";") for s in statements)
    assert string_literal("'); MATCH (n) DETACH DELETE n; //") in "\n".join(statements)


# --- Neo4j folders, without a server (the imports are in test_neo4j.py) -------------


def test_neo4j_csv_folder(tmp_path: Path) -> None:
    g = typed_graph(neo4j_safe=True)
    export_graph(g, "neo4j-csv", tmp_path / "out")
    out = tmp_path / "out"
    header = (out / "nodes" / "Doc.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header.split(",") == [
        '"id:ID(Doc)"', '"name:string"', '"title:string"', '"tags:string[]"',
        '"scores:long[]"', '"when:datetime"', '"day:date"', '"local:localdatetime"',
        '"n:int"', '"big:long"', '"ratio:double"', '"flag:boolean"']
    rel = (out / "relationships" / "WROTE.csv").read_text(encoding="utf-8").splitlines()[0]
    assert rel.startswith('":START_ID(Person)",":END_ID(Doc)",":TYPE"')
    readme = (out / "README.md").read_text(encoding="utf-8")
    # "x;y" is a list element, so ";" cannot split the arrays; values hold newlines.
    assert "--array-delimiter=U+001F" in readme and "--multiline-fields=true" in readme
    assert "--nodes=Doc=nodes/Doc.csv" in readme
    assert "--relationships=relationships/WROTE.csv" in readme
    marker = json.loads((out / "graphkit-export.json").read_text())
    assert marker["nodes"] == g.node_counts()
    table = pd.read_csv(out / "nodes" / "Doc.csv", keep_default_na=False)
    assert sorted(table["name:string"]) == sorted(g.nodes["Doc"].table.column("name")
                                                 .to_pylist())


def test_neo4j_folders_set_aside_relationships_to_missing_nodes(tmp_path: Path) -> None:
    g = typed_graph(neo4j_safe=True)
    et = g.edges["CITES"]
    extra = pa.table({"source": ["no-such-node"], "target": [et.table.column("target")[0]]})
    g.edges["CITES"] = EdgeTable("CITES", "Doc", "Doc", pa.concat_tables([et.table, extra]))
    for fmt in ("neo4j-csv", "neo4j-parquet"):
        report = export_graph(g, fmt, tmp_path / fmt)
        assert report.edges["CITES"] == et.table.num_rows
        assert any("1 CITES relationship" in n for n in report.notes)
        skipped = pd.read_csv(tmp_path / fmt / "skipped" / "CITES.csv")
        assert skipped["source"].tolist() == ["no-such-node"]
        assert "1 CITES relationship" in (tmp_path / fmt / "README.md").read_text()


def test_neo4j_parquet_folder_keeps_types(tmp_path: Path) -> None:
    export_graph(typed_graph(neo4j_safe=True), "neo4j-parquet", tmp_path / "out")
    schema = pq.read_schema(tmp_path / "out" / "nodes" / "Doc.parquet")
    assert str(schema.field("when:datetime").type) == "timestamp[us, tz=UTC]"
    assert pa.types.is_list(schema.field("tags:string[]").type)
    assert "--input-type=parquet" in (tmp_path / "out" / "README.md").read_text()


def test_structs_become_json_text_for_neo4j(tmp_path: Path) -> None:
    report = export_graph(typed_graph(), "neo4j-csv", tmp_path / "out")
    assert "encoded as text: Doc.meta (json)" in report.notes
    table = pd.read_csv(tmp_path / "out" / "nodes" / "Doc.csv", keep_default_na=False)
    first = json.loads(table["meta:string"][0])
    assert set(first) == {"a", "b"}


# --- edges, read back by pandas ----------------------------------------------------


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_edges_table(suffix: str, tmp_path: Path) -> None:
    g = lineage_graph()
    export_graph(g, "edges", tmp_path / f"e{suffix}")
    df = (pd.read_parquet(tmp_path / "e.parquet") if suffix == ".parquet"
          else pd.read_csv(tmp_path / "e.csv", keep_default_na=False, na_values=[""]))
    assert len(df) == sum(g.edge_counts().values())
    assert list(df.columns[:5]) == ["type", "source_type", "source_key", "target_type",
                                    "target_key"]
    sessions = g.nodes["Session"].table.to_pylist()
    key_of = {s["id"]: s["session_id"] for s in sessions}
    has_thread = df[df["type"] == "HAS_THREAD"]
    assert len(has_thread) == g.edge_counts()["HAS_THREAD"]
    for row in has_thread.itertuples():
        assert row.source_key == key_of[row.source_id] == row.source_session_id
        assert json.loads(row.target_key)[0] == row.target_thread_scope
    calls = df[df["type"] == "CALLED_TOOL"]
    assert calls["calls"].sum() == sum(g.edges["CALLED_TOOL"].table.column("calls")
                                       .to_pylist())


def test_edges_refuses_other_suffixes(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"\.parquet or \.csv"):
        export_graph(lineage_graph(), "edges", tmp_path / "e.xlsx")


# --- the command line --------------------------------------------------------------


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    write_snapshot(lineage_graph(), tmp_path / "snap")
    return tmp_path / "snap"


@pytest.mark.parametrize("fmt,name", [
    ("node-link", "g.json"), ("graphml", "g.graphml"), ("gexf", "g.gexf"),
    ("cypher", "g.cypher"), ("edges", "e.parquet"), ("neo4j-csv", "csv"),
    ("neo4j-parquet", "pq")])
def test_cli_export(fmt: str, name: str, snapshot: Path, tmp_path: Path) -> None:
    out = tmp_path / name
    result = graphkit("export", snapshot, "--format", fmt, out, "--json")
    assert result.returncode == 0, result.output
    report = json.loads(result.output)
    assert report["format"] == fmt and report["out"] == str(out)
    assert out.exists()
    again = graphkit("export", snapshot, "--format", fmt, out)
    assert again.returncode == 0, again.output  # a rerun replaces its own output
    assert f"as {fmt} to {out}" in again.output


@pytest.mark.slow
def test_cli_export_to_stdout(snapshot: Path) -> None:
    result = graphkit("export", snapshot, "--format", "node-link", "-")
    assert result.returncode == 0, result.output
    data = json.loads(result.stdout)
    assert len(data["nodes"]) == sum(read_snapshot(snapshot).node_counts().values())
    csv = graphkit("export", snapshot, "--format", "edges", "-")
    assert csv.stdout.splitlines()[0].startswith('"type","source_type"')


@pytest.mark.parametrize("args,message", [
    (["--format", "neo4j-csv", "-"], "writes a folder and cannot go to stdout"),
    (["--format", "node-link", "-", "--json"], "--json prints to stdout"),
    (["--format", "dot", "x"], "Invalid value for '--format'"),
])
def test_cli_export_mistakes(args: list[str], message: str, snapshot: Path) -> None:
    result = graphkit("export", snapshot, *args)
    assert result.returncode == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_cli_export_will_not_replace_a_foreign_folder(snapshot: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    result = graphkit("export", snapshot, "--format", "neo4j-csv", mine)
    assert result.returncode == 2 and "not a graphkit export" in result.output
    assert (mine / "notes.txt").read_text() == "keep me"


def test_cli_export_of_a_missing_snapshot(tmp_path: Path) -> None:
    result = graphkit("export", tmp_path / "nope", "--format", "gexf", tmp_path / "g.gexf")
    assert result.returncode == 2 and "not a graphkit snapshot" in result.output
    assert not (tmp_path / "g.gexf").exists()


def test_progress_reports_each_step(snapshot: Path, tmp_path: Path) -> None:
    from graphkit.export import export_snapshot

    seen: list[str] = []
    export_snapshot(snapshot, "neo4j-csv", tmp_path / "out", progress=seen.append)
    assert seen[0].startswith("reading snapshot")
    assert any(s.startswith("writing nodes/Thread.csv") for s in seen)


def test_a_folder_export_under_a_file_is_one_line(tmp_path: Path) -> None:
    # Was: FileExistsError traceback (neo4j-csv, neo4j-parquet: mkdir of the parent).
    snap = tmp_path / "snap"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", snap).returncode == 0
    (tmp_path / "file").write_text("x")
    for fmt in ("neo4j-csv", "neo4j-parquet"):
        proc = graphkit("export", snap, "--format", fmt, tmp_path / "file" / "out")
        one_line_error(proc, str(tmp_path / "file" / "out"), "cannot write")
