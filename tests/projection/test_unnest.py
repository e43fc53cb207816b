"""The ``sum`` aggregation and ``unnest`` rules of the contract engine; an unnested count
that is no whole number rejects its row, naming file, row and column."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphkit.contract.loader import load_contract
from graphkit.contract.model import Unnest
from graphkit.core.errors import ContractError
from graphkit.projection.conform import conform_table
from graphkit.projection.project import Projection, project
from graphkit.projection.unnest import unnest_rows
from tests.helpers.cli import graphkit
from tests.helpers.contracts import FILES_CONTRACT
from tests.helpers.rows import (
    identity_cases,
    read_rejects,
    with_touched_files,
)


def _build(tmp_path: Path, rows: list[dict[str, object]], text: str = FILES_CONTRACT) -> object:
    (tmp_path / "c.yaml").write_text(text)
    c = load_contract(str(tmp_path / "c.yaml"))
    table = pa.Table.from_pylist(rows, schema=pa.schema(
        [("session_id", pa.string()), ("n", pa.string()), ("touched", pa.string())]))
    return project(c, conform_table(c, table, "t")).graph


def test_sum_and_unnest_build_nodes_and_edges(tmp_path: Path) -> None:
    two = json.dumps([{"path": "/a", "writes": 1}, {"path": "/b", "writes": 2}])
    graph = _build(tmp_path, [
        {"session_id": "s", "n": "5", "touched": two},
        {"session_id": "s", "n": None, "touched": json.dumps([{"path": "/a", "writes": 3}])},
        {"session_id": "t", "n": "7", "touched": "not json"},  # no elements: no rows
        {"session_id": "t", "n": "1", "touched": None},
    ])
    sessions = {r["session_id"]: r["total"] for r in
                graph.nodes["Session"].table.to_pylist()}  # type: ignore[attr-defined]
    assert sessions == {"s": 5, "t": 8}
    files = {r["p"]: r["writes"] for r in
             graph.nodes["F"].table.to_pylist()}  # type: ignore[attr-defined]
    assert files == {"/a": 4, "/b": 2}
    edges = graph.edges["T"].table.to_pylist()  # type: ignore[attr-defined]
    assert sorted((e["writes"], e["rows"]) for e in edges) == [(2, 1), (4, 2)]


def _project(tmp_path: Path, rows: list[dict[str, object]]) -> Projection:
    (tmp_path / "c.yaml").write_text(FILES_CONTRACT)
    c = load_contract(str(tmp_path / "c.yaml"))
    table = pa.Table.from_pylist(rows, schema=pa.schema(
        [("session_id", pa.string()), ("n", pa.string()), ("touched", pa.string())]))
    return project(c, conform_table(c, table, "t"))


def test_a_row_summing_text_that_is_no_number_is_rejected_not_the_build(
        tmp_path: Path) -> None:
    # " 6" is what Python's float() takes and Arrow's cast (the sum's) refuses.
    rows: list[dict[str, object]] = [
        {"session_id": "s", "n": "2", "touched": None},
        {"session_id": "s", "n": "lots", "touched": None},
        {"session_id": "t", "n": "1.5", "touched": None},
        {"session_id": "t", "n": " 6", "touched": None},
        {"session_id": "u", "n": None, "touched": None}]
    proj = _project(tmp_path, rows)
    rejected = proj.rejects.to_pylist()
    assert [(r["n"], r["__column"]) for r in rejected] == [("lots", "n"), (" 6", "n")]
    assert all("no number" in r["__reason"] for r in rejected)
    totals = {r["session_id"]: r["total"] for r in proj.graph.nodes["Session"].table.to_pylist()}
    assert totals == {"s": 2.0, "t": 1.5, "u": None}
    # The same graph as the rows without the two.
    kept = _project(tmp_path, [r for r in rows if r["n"] not in ("lots", " 6")])
    assert kept.rows_rejected == 0
    assert proj.graph.nodes["Session"].table.equals(kept.graph.nodes["Session"].table)


def test_a_row_whose_unnested_element_sums_text_that_is_no_number_is_rejected(
        tmp_path: Path) -> None:
    # Was: a ContractError stopping the whole build, naming the field 'w' but no file
    # or row. Now the row holding the array goes to the rejects, named by its column
    # and the element's key, and the rest is the graph of the other rows.
    good = {"session_id": "s", "n": "1", "touched": json.dumps([{"path": "/a", "writes": 2}])}
    rows: list[dict[str, object]] = [
        good,
        {"session_id": "s", "n": "2",
         "touched": json.dumps([{"path": "/a", "writes": 1}, {"path": "/b", "writes": "lots"}])},
        {"session_id": "t", "n": "3", "touched": json.dumps([{"path": "/c", "writes": True}])}]
    proj = _project(tmp_path, rows)
    rejected = proj.rejects.to_pylist()
    assert [(r["n"], r["__column"]) for r in rejected] == [("2", "touched"), ("3", "touched")]
    assert all("w (touched → [].writes) holds text that is no number" in r["__reason"]
               for r in rejected)
    kept = _project(tmp_path, [good])
    for t in ("Session", "F"):
        assert proj.graph.nodes[t].table.equals(kept.graph.nodes[t].table)
    assert proj.graph.edges["T"].table.equals(kept.graph.edges["T"].table)


@pytest.mark.parametrize("number", ["1" + "0" * 400, "1" + "0" * 5000, "1e400", '"Infinity"'])
def test_a_count_past_a_floats_range_is_no_number_and_its_file_still_counts(
        tmp_path: Path, number: str) -> None:
    # Was: 400 digits summed to an infinite count (`graphkit files` then failed with
    # OverflowError); more than 4,300 digits (Python's int-string limit) made json.loads
    # refuse the document, so none of its files counted. Such a number is no count,
    # as 1e400 and Infinity in attributes are: the file counts, the value not.
    doc = '[{"path": "/a", "writes": ' + number + '}, {"path": "/b", "writes": 2}]'
    graph = _build(tmp_path, [{"session_id": "s", "n": "1", "touched": doc},
                              {"session_id": "s", "n": "1",
                               "touched": '[{"path": "/a", "writes": 3}]'}])
    files = {r["p"]: r["writes"] for r in
             graph.nodes["F"].table.to_pylist()}  # type: ignore[attr-defined]
    assert files == {"/a": 3, "/b": 2}


def test_unnest_fields_must_be_new_and_one_edge_type_unnests_one_way(tmp_path: Path) -> None:
    clash = FILES_CONTRACT.replace(
        "fields: {p: path, w: writes}}\n    properties: {writes: {sum: w}}",
        "fields: {n: path, w: writes}}\n    properties: {writes: {sum: w}}")
    (tmp_path / "a.yaml").write_text(clash)
    with pytest.raises(ContractError, match="already columns"):
        load_contract(str(tmp_path / "a.yaml"))
    mixed = FILES_CONTRACT + """
  - type: T
    from: {type: Session, key: [session_id]}
    to: {type: F, key: [session_id]}
"""
    (tmp_path / "b.yaml").write_text(mixed)
    with pytest.raises(ContractError, match="must unnest the same way"):
        load_contract(str(tmp_path / "b.yaml"))


def test_unnest_rows_keeps_order_and_repeats_each_row() -> None:
    t = pa.table({"k": pa.array(["a", "b", "a"]).dictionary_encode(),
                  "arr": ['["x", {"v": 1}]', '[{"v": 2}, {"v": 3}]', '[{"v": 4}]']})
    out = unnest_rows(t, Unnest(column="arr", fields={"v": "v"}))
    assert out.column("k").to_pylist() == ["a", "a", "b", "b", "a"]
    assert out.column("v").to_pylist() == [None, "1", "2", "3", "4"]  # "x" is no object


def test_unnest_of_no_rows() -> None:
    t = pa.table({"k": pa.array([], pa.string()), "arr": pa.array([], pa.string())})
    out = unnest_rows(t, Unnest(column="arr", fields={"v": "v"}))
    assert out.num_rows == 0 and out.column_names == ["k", "arr", "v"]


@pytest.mark.parametrize("values", [
    ["5", None, "7", "5"],            # integers: int64
    ["5", "2.5", None],               # a fraction among the rows: float64
    ["-3", "+4", " 6"],               # what Arrow's cast takes, or refuses, either way
])
def test_sum_numbers_of_a_dictionary_equal_the_rows_values(values: list[str | None]) -> None:
    from graphkit.projection.groups import numbers

    plain = pa.array(values, pa.string())
    coded = plain.dictionary_encode()
    try:
        expected = numbers(plain, "n")
    except ContractError:
        with pytest.raises(ContractError):
            numbers(coded, "n")
        return
    got = numbers(coded, "n")
    assert got.type == expected.type and got.to_pylist() == expected.to_pylist()


def test_sum_numbers_read_only_the_dictionary_entries_rows_use() -> None:
    from graphkit.projection.groups import numbers

    # Entries no row uses (left by a filter) change neither the type nor the outcome.
    coded = pa.DictionaryArray.from_arrays(pa.array([0, 2, None], pa.int32()),
                                           pa.array(["4", "x", "9"]))
    assert numbers(coded, "n").to_pylist() == [4, 9, None]
    assert numbers(coded, "n").type == pa.int64()
    frac = pa.DictionaryArray.from_arrays(pa.array([0, 0], pa.int32()),
                                          pa.array(["4", "1.5"]))
    assert numbers(frac, "n").type == pa.int64()


def _file_doc(numbers: list[str], path: str = "/p") -> str:
    return "[" + ", ".join(f'{{"path": "{path}", "reads": {n}, "writes": 0}}'
                           for n in numbers) + "]"


@pytest.mark.parametrize("docs", [
    [_file_doc(["1", "22"]), _file_doc([]), None],
    [_file_doc(["9" * 950])],                         # a long number in a short document
    [_file_doc(["1" + "0" * 999])],                   # 1000 digits: the bound, allowed
    [_file_doc(["1" + "0" * 1000])],                  # 1001 digits: past it, parsed in Python
    [_file_doc(["7"], path="x" * 940), _file_doc(["8"], path="y" * 1100)],
    [_file_doc(["07"])],                              # no JSON number: not the Arrow way
])
def test_file_elements_short_documents_match_the_bounded_pattern(
        docs: list[str | None], monkeypatch: pytest.MonkeyPatch) -> None:
    """The unbounded pattern (documents of at most 1000 bytes) accepts exactly what the
    bounded one does, and either way the elements are what json.loads reads."""
    import graphkit.projection.unnest as u

    arr = pa.array(docs, pa.string())
    keys = ["path", "reads", "writes", "other"]
    got = u._file_elements(arr, keys)
    monkeypatch.setattr(u, "_SHORT", -1)  # every document checked by the bounded pattern
    bounded = u._file_elements(arr, keys)
    assert (got is None) == (bounded is None)
    counts, values = u._python_elements(arr, keys)
    for found in (got, bounded):
        if found is not None:
            assert found[0].tolist() == counts.tolist()
            assert [v.to_pylist() for v in found[1]] == [v.to_pylist() for v in values]
    assert got is not None or any(d is not None and len(d) > 1000 for d in docs) \
        or docs == [_file_doc(["07"])]


def _files(rows: int) -> list[dict[str, object]]:
    # File documents as graphkit's sources write them (the Arrow way), 3 000+ rows so the
    # projection runs on threads and encodes columns early, as a large build does.
    return [{"session_id": f"s{i % 7}", "n": str(i % 5),
             "touched": None if i % 3 else json.dumps(
                 [{"path": f"/p/{i % 11}", "reads": 0, "writes": i % 4}],
                 separators=(", ", ": "))}
            for i in range(rows)]


def test_the_number_check_and_the_unnest_take_the_documents_apart_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import graphkit.projection.unnest as u

    rows = _files(3_000)
    calls: list[bool] = []
    made = u._file_parts

    def counted(docs: pa.Array) -> object:
        calls.append(threading.current_thread() is threading.main_thread())
        return made(docs)

    monkeypatch.setattr(u, "_file_parts", counted)
    shared = _project(tmp_path, rows)
    # Both read the early-encoded column's dictionary, taken apart once, on the pool
    # beside the dedupe (not in the main thread's check after it).
    assert calls == [False]
    # Each on its own parse (no sharing at all) makes the same graph.
    monkeypatch.setattr(u.Parsed, "parts", lambda self, docs: made(docs))
    alone = _project(tmp_path, rows)
    assert len(calls) == 1
    for kind in ("nodes", "edges"):
        mine, theirs = getattr(shared.graph, kind), getattr(alone.graph, kind)
        assert mine.keys() == theirs.keys()
        for t in mine:
            assert mine[t].table.equals(theirs[t].table, check_metadata=True)


def test_parsed_documents_are_shared_only_for_the_same_buffers() -> None:
    import graphkit.projection.unnest as u

    docs = pa.array(['[{"path": "/a", "reads": 1, "writes": 0}]', None])
    parsed = u.Parsed()
    first = parsed.parts(docs)
    assert first is not None and parsed.parts(docs) is first
    assert parsed.parts(docs.slice(1)) is not first  # another offset: other documents
    same_text = pa.array(['[{"path": "/b", "reads": 1, "writes": 0}]', None])
    other = parsed.parts(same_text)  # equal in shape, other bytes: taken apart afresh
    assert other is not None and other[1].field("path").to_pylist() == ["/b"]


def test_an_unnested_value_that_is_no_number_rejects_its_row_naming_file_and_row(
        tmp_path: Path) -> None:
    # Was: exit 2 for the whole build: "`sum` of column 'file_reads' met
    # 'x', which is no number", naming neither file nor row.
    rows = [dict(r) for r in identity_cases() if r["session_id"]]
    rows[0]["touched_files"] = '[{"path": "/b", "reads": 1, "writes": 0}]'
    rows[2]["touched_files"] = json.dumps([{"path": "/a", "reads": "x", "writes": 0}])
    src = tmp_path / "rows.parquet"
    pq.write_table(with_touched_files(rows), src)
    proc = graphkit("build", src, "--snapshot", tmp_path / "snap", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows_rejected"] == 1
    rejects = [json.loads(line) for line in
               (tmp_path / "snap.rejects.jsonl").read_text().splitlines()]
    assert [(r["source"], r["row"], r["column"]) for r in rejects] == [
        (str(src), 3, "touched_files")]
    assert "touched_files → [].reads" in rejects[0]["reason"]
    files = graphkit("files", "--snapshot", tmp_path / "snap", "--json")
    assert [f["path"] for f in map(json.loads, files.stdout.splitlines())] == ["/b"]


@pytest.mark.parametrize("value", ["-3", "1.5", "-0.5", "1e300"])
def test_a_negative_or_fractional_count_in_touched_files_rejects_its_row(
        tmp_path: Path, value: str) -> None:
    # Was: summed as given (`files` then showed -3 reads, or 1.5 writes as 1).
    from tests.helpers.rows import with_touched_files

    rows = [dict(r) for r in identity_cases() if r["session_id"]]
    rows[0]["touched_files"] = '[{"path": "/b", "reads": 1, "writes": 0}]'
    rows[2]["touched_files"] = '[{"path": "/a", "reads": 1, "writes": ' + value + "}]"
    src = tmp_path / "rows.parquet"
    pq.write_table(with_touched_files(rows), src)
    snap = tmp_path / "snap"
    proc = graphkit("build", src, "--snapshot", snap, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows_rejected"] == 1
    (reject,) = read_rejects(snap)
    assert (reject["source"], reject["row"], reject["column"]) == (str(src), 3,
                                                                   "touched_files")
    assert "touched_files → [].writes" in str(reject["reason"])
    files = graphkit("files", "--snapshot", snap, "--json")
    assert [json.loads(line)["path"] for line in files.stdout.splitlines()] == ["/b"]


def test_whole_counts_in_touched_files_are_summed(tmp_path: Path) -> None:
    # 2.0 and 0 are whole counts; only what is negative or has a fraction goes.
    doc = '[{"path": "/a", "writes": 2.0}, {"path": "/b", "writes": 0, "reads": 3}]'
    (tmp_path / "c.yaml").write_text(FILES_CONTRACT)
    c = load_contract(str(tmp_path / "c.yaml"))
    rows = pa.table({"session_id": ["s"], "n": ["1"], "touched": [doc]})
    graph = project(c, conform_table(c, rows, "t")).graph
    assert {r["p"]: r["writes"] for r in graph.nodes["F"].table.to_pylist()} == {
        "/a": 2, "/b": 0}
