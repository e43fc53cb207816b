"""Row sources through pyarrow: Parquet, hive folders, Feather, JSON Lines."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

from graphkit.builds.run import build
from graphkit.contract.loader import load_contract
from graphkit.core.errors import SourceError
from graphkit.projection.conform import conform_sources, read_spec
from graphkit.sources.read import read_sources
from tests.helpers.rows import identity_cases, table, write_parquet


def test_parquet_file_feather_and_jsonl_give_the_same_graph(tmp_path: Path) -> None:
    rows = identity_cases()[:-1]
    write_parquet(rows, tmp_path / "a.parquet")
    feather.write_feather(table(rows), tmp_path / "a.feather")
    with (tmp_path / "a.jsonl").open("w") as f:
        for r in rows:
            f.write(json.dumps(r, default=str) + "\n")
    graphs = [build([tmp_path / name]).graph for name in ("a.parquet", "a.feather", "a.jsonl")]
    for g in graphs[1:]:
        for t in graphs[0].nodes:
            assert g.nodes[t].table.select(["id"]).equals(graphs[0].nodes[t].table.select(["id"]))
        for t in graphs[0].edges:
            assert g.edges[t].table.select(["source", "target"]).equals(
                graphs[0].edges[t].table.select(["source", "target"]))


def test_jsonl_with_nested_attributes_objects(tmp_path: Path) -> None:
    rows = identity_cases()[:-1]
    with (tmp_path / "rows.jsonl").open("w") as f:
        for r in rows:
            r = dict(r)
            if r.get("attributes"):
                r["attributes"] = json.loads(r["attributes"])  # an object, not text
            f.write(json.dumps(r, default=str) + "\n")
    g = build([tmp_path / "rows.jsonl"]).graph
    assert g.edge_counts()["PARENT_THREAD"] == 3


def test_hive_partitioned_folder_and_many_sources(tmp_path: Path, sample_rows: Path) -> None:
    rows = identity_cases()[:-1]
    write_parquet(rows[:3], tmp_path / "extra" / "date=2026-11-20" / "p.parquet")
    write_parquet(rows[3:], tmp_path / "more.parquet")
    result = build([sample_rows, tmp_path / "extra", tmp_path / "more.parquet"])
    assert result.projection.rows_read == pq.ParquetDataset(sample_rows).read().num_rows + len(rows)


def test_reads_only_the_columns_the_contract_needs(tmp_path: Path) -> None:
    path = write_parquet(identity_cases()[:2], tmp_path / "r.parquet")
    c = load_contract()
    read = read_sources([path], read_spec(c), fingerprints=False)
    # The sources layer reads no content column at all ...
    assert all("content_text" not in t.column_names for _, t in read.pieces)
    got = conform_sources(c, read)
    # ... and the contract layer makes it typed nulls.
    assert got.column("content_text").null_count == got.num_rows
    assert "raw_frame" not in got.column_names
    assert set(got.column_names) <= set(load_contract().spec.input) | {"__file", "__row"}


def test_missing_required_column_names_file_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    pq.write_table(table(identity_cases()).drop_columns(["session_id"]), path)
    with pytest.raises(SourceError) as info:
        build([path])
    msg = str(info.value)
    assert str(path) in msg and "'session_id'" in msg and "ai-gateway-graph.yaml:" in msg


def test_wrong_type_names_file_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    t = table(identity_cases())
    t = t.set_column(t.schema.get_field_index("message_id"), "message_id",
                     pa.array(range(t.num_rows), pa.int64()))
    pq.write_table(t, path)
    with pytest.raises(SourceError) as info:
        build([path])
    assert "'message_id' has type int64" in str(info.value)
    assert str(path) in str(info.value)


def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(SourceError, match="cannot read rows") as info:
        build([path])
    assert str(path) in str(info.value)


def test_missing_path_and_unknown_suffix(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such file"):
        build([tmp_path / "nope.parquet"])
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(SourceError, match="unsupported file type"):
        build([tmp_path / "x.csv"])


def test_folder_of_files_with_different_columns(tmp_path: Path) -> None:
    # The first file (sorted) lacks agent_id and attributes: the others' subagent
    # threads must not vanish with them.
    t = table(identity_cases()[:-1])
    folder = tmp_path / "mixed"
    folder.mkdir()
    pq.write_table(t.slice(4, 2).drop_columns(["agent_id", "attributes"]), folder / "a.parquet")
    pq.write_table(t.slice(0, 4), folder / "b.parquet")
    g = build([folder]).graph
    assert g.node_counts()["Thread"] == 5
    assert g.node_counts()["Agent"] == 2
    assert g.edge_counts()["PARENT_THREAD"] == 3


def test_bad_json_line_is_named_by_file_and_line(tmp_path: Path) -> None:
    good = json.dumps({"session_id": "s", "message_id": "m"})
    (tmp_path / "one.jsonl").write_text(good + "\n" + "{broken\n")
    with pytest.raises(SourceError) as info:
        build([tmp_path / "one.jsonl"])
    assert (info.value.path, info.value.line) == (str(tmp_path / "one.jsonl"), 2)
    folder = tmp_path / "many"
    folder.mkdir()
    (folder / "a.jsonl").write_text(good + "\n")
    (folder / "b.jsonl").write_text(good + "\n\n" + "[1, 2]\n")
    with pytest.raises(SourceError) as info:
        build([folder])
    assert (info.value.path, info.value.line) == (str(folder / "b.jsonl"), 3)


def test_id_columns_stored_without_a_dictionary_give_the_same_graph(tmp_path: Path) -> None:
    # A writer leaves ids (one per row) without a Parquet dictionary; those are read as
    # plain text, the others dictionary-encoded. Files stored either way, alone or
    # together, build the graph that the same rows give from memory.
    from graphkit.sources.row_files import stored_with_dictionary

    rows = table(identity_cases())
    ids = ["message_id", "part_id", "tool_call_id"]
    plain_ids = tmp_path / "plain" / "a.parquet"
    plain_ids.parent.mkdir()
    pq.write_table(rows, plain_ids, row_group_size=3,
                   use_dictionary=[c for c in rows.column_names if c not in ids])
    coded = tmp_path / "coded" / "a.parquet"
    coded.parent.mkdir()
    pq.write_table(rows, coded, row_group_size=3)
    assert set(stored_with_dictionary(plain_ids, ["session_id", *ids])) == {"session_id"}
    assert stored_with_dictionary(coded, ["session_id", *ids]) == ["session_id", *ids]
    want = build(rows).graph
    for source in (plain_ids, coded, [plain_ids, coded]):
        got = build(source).graph
        for name, nodes in want.nodes.items():
            assert got.nodes[name].table.equals(nodes.table), (source, name)
        for name, edges in want.edges.items():
            assert got.edges[name].table.equals(edges.table), (source, name)


def test_pieces_conformed_on_threads_equal_one_after_another(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # conform_sources conforms the pieces two at a time: the joined table is what
    # conforming them in turn gives, and of two bad pieces the first one's error is raised.
    import threading

    import graphkit.projection.conform as validate
    from graphkit.projection.conform import conform_table
    from graphkit.sources.read import SourceRows

    rows = identity_cases()[:-1]
    pieces = []
    for p in range(4):
        path = write_parquet([dict(r, session_id=f"{r['session_id']}-{p}") for r in rows],
                             tmp_path / f"p{p}.parquet")
        pieces.extend(read_sources([path], read_spec(load_contract()),
                                   fingerprints=False).pieces)
    c = load_contract()
    one_by_one = [conform_table(c, t, label) for label, t in pieces]
    threads: set[int] = set()
    conformed = validate.conform

    def conform(*args: object) -> pa.Table:
        threads.add(threading.get_ident())
        return conformed(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(validate, "conform", conform)
    got = conform_sources(c, SourceRows(pieces=list(pieces)))
    assert got.equals(validate.combine_dictionaries(pa.concat_tables(one_by_one)))
    assert threading.get_ident() not in threads
    bad = [pieces[0], (pieces[1][0], pieces[1][1].drop_columns(["session_id"])),
           (pieces[2][0], pieces[2][1].drop_columns(["session_id"])), pieces[3]]
    with pytest.raises(SourceError) as info:
        conform_sources(c, SourceRows(pieces=bad))
    assert pieces[1][0] in str(info.value) and pieces[2][0] not in str(info.value)
