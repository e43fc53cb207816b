"""Derived columns and filters (``graphkit.contract.expr``), each answer checked
against a plain per-row reading of the same values."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from graphkit.contract.expr import (
    Case,
    Coalesce,
    Column,
    Const,
    JsonPath,
    all_valid,
    any_valid,
    filter_mask,
    json_path,
    json_paths,
    parse_expr,
)
from graphkit.contract.model import Filter

TEXT = ["a", None, "b", "a", None, "c"]


def coded(values: list[Any]) -> pa.Array:
    return pa.array(values, pa.string()).dictionary_encode()


def values(arr: pa.Array | pa.ChunkedArray) -> list[Any]:
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    return arr.to_pylist()


# -- parse_expr -----------------------------------------------------------------

@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("session_id", Column("session_id")),
        ({"coalesce": ["a", "b"]}, Coalesce(("a", "b"))),
        ({"json": "attributes", "path": "claude.x"}, JsonPath("attributes", ("claude", "x"))),
        ({"json": "attributes", "path": ["claude", "x"]}, JsonPath("attributes", ("claude", "x"))),
        ({"const": "v"}, Const("v")),
    ],
)
def test_parse_expr(raw: Any, expected: Any) -> None:
    assert parse_expr(raw) == expected


def test_parse_case() -> None:
    e = parse_expr({"case": [{"when": {"not_null": ["a"]}, "then": "x"}], "else": "y"})
    assert isinstance(e, Case)
    assert e.columns() == {"a"}
    assert e.otherwise == "y"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (3, "column name or a mapping"),
        ({}, "column name or a mapping"),
        ({"coalesce": []}, "non-empty list"),
        ({"coalesce": "a"}, "non-empty list"),
        ({"json": "a"}, "needs a `path`"),
        ({"case": [{"when": {}}]}, "when: <filter>, then: <value>"),
        ({"upper": "a"}, "unknown expression"),
    ],
)
def test_parse_expr_refuses(raw: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_expr(raw)


# -- evaluate ---------------------------------------------------------------------

def test_column_and_const() -> None:
    t = pa.table({"a": TEXT})
    assert Column("a").evaluate(t).to_pylist() == TEXT
    assert Const("x").evaluate(t).to_pylist() == ["x"] * len(TEXT)
    assert Const(None).evaluate(t).type == pa.string()


@pytest.mark.parametrize("encode", [(False, False), (True, True), (True, False), (False, True)])
def test_coalesce_on_values_and_on_dictionary_indices(encode: tuple[bool, bool]) -> None:
    a = [None, "a1", None, "a3", None]
    b = ["b0", "b1", None, None, "a1"]
    cols = [coded(v) if e else pa.array(v, pa.string()) for v, e in zip((a, b), encode,
                                                                         strict=True)]
    out = Coalesce(("a", "b")).evaluate(pa.table({"a": cols[0], "b": cols[1]}))
    assert values(out) == [x if x is not None else y for x, y in zip(a, b, strict=True)]


def test_coalesce_with_a_column_the_source_lacks() -> None:
    t = pa.table({"a": pa.nulls(3, pa.null()), "b": coded(["x", None, "y"])})
    assert values(Coalesce(("a", "b")).evaluate(t)) == ["x", None, "y"]


def test_case_first_matching_when_wins_and_answers_are_coded() -> None:
    t = pa.table({"agent": ["ag", None, None, "ag"], "conv": ["c", "c", None, None]})
    e = parse_expr({"case": [{"when": {"not_null": ["agent"]}, "then": "subagent"},
                             {"when": {"not_null": ["conv"]}, "then": "thread"}],
                    "else": "main"})
    out = e.evaluate(t)
    assert pa.types.is_dictionary(out.type)
    assert values(out) == ["subagent", "thread", "main", "subagent"]
    assert len(out.dictionary) == 3  # each answer once


def test_case_null_answers() -> None:
    t = pa.table({"a": ["x", None]})
    e = parse_expr({"case": [{"when": {"not_null": ["a"]}, "then": None}]})
    assert values(e.evaluate(t)) == [None, None]


# -- filters ------------------------------------------------------------------------

FILTERS = [
    ({"not_null": ["s"]}, lambda s, n: s is not None),
    ({"is_null": ["s"]}, lambda s, n: s is None),
    ({"equals": {"s": "a"}}, lambda s, n: s == "a"),
    ({"not_equals": {"s": "a"}}, lambda s, n: s != "a"),
    ({"in": {"s": ["a", "c"]}}, lambda s, n: s in ("a", "c")),
    ({"less_than": {"n": 3}}, lambda s, n: n is not None and n < 3),
    ({"not_null": ["s"], "less_than": {"n": 5}}, lambda s, n: s is not None and n is not None
     and n < 5),
    ({}, lambda s, n: True),
]
NUMS = [1, 2, None, 4, 5, 2]


@pytest.mark.parametrize(("spec", "expected"), FILTERS)
@pytest.mark.parametrize("dictionary", [False, True])
def test_filter_mask_matches_a_plain_reading(spec: dict[str, Any], expected: Any,
                                             dictionary: bool) -> None:
    s = coded(TEXT) if dictionary else pa.array(TEXT, pa.string())
    t = pa.table({"s": s, "n": pa.array(NUMS, pa.int64())})
    mask = filter_mask(t, Filter.model_validate(spec))
    assert mask.null_count == 0
    assert mask.to_pylist() == [expected(x, n) for x, n in zip(TEXT, NUMS, strict=True)]


def test_filter_on_a_null_typed_column() -> None:
    t = pa.table({"s": pa.nulls(2, pa.null())})
    assert filter_mask(t, Filter.model_validate({"equals": {"s": "a"}})).to_pylist() == [
        False, False]
    assert filter_mask(t, Filter.model_validate({"not_equals": {"s": "a"}})).to_pylist() == [
        True, True]


def test_all_valid_and_any_valid() -> None:
    t = pa.table({"a": ["x", None, None, "y"], "b": ["x", "y", None, None]})
    assert all_valid(t, ["a", "b"]).to_pylist() == [True, False, False, False]
    assert any_valid(t, ["a", None, "b"]).to_pylist() == [True, True, False, True]
    assert any_valid(t, [None]).to_pylist() == [False] * 4


# -- JSON paths -----------------------------------------------------------------------

def reference(doc: str | None, path: tuple[str, ...]) -> str | None:
    """What a path reads, per document with json.loads (the documented meaning:
    a document where the last key is only written with escapes is not read)."""
    if doc is None or json.dumps(path[-1]) not in doc:
        return None
    try:
        cur = json.loads(doc)
    except ValueError:
        return None
    for key in path:
        if not isinstance(cur, dict) or key not in cur:
            return None
        cur = cur[key]
    if cur is None:
        return None
    return cur if isinstance(cur, str) else json.dumps(cur, sort_keys=True)


DOCS = [
    '{"c": {"x": "t1", "y": "u"}}',
    '{"c": {"x": "t1", "y": "u"}}',  # repeated documents are parsed once
    None,
    "{}",
    "not json",
    '{"c": {"x": 3, "y": [1, 2]}}',  # non-text values: JSON text
    '{"c": {"x": {"b": 1, "a": 2}}}',  # objects: sorted keys
    '{"c": {"x": null}}',
    '{"c": "flat"}',  # a non-object on the way
    '{"c": {"x": "first", "x": "second"}}',  # a key twice: the last wins, as in json.loads
    '{"c": {"x": "line\\nbreak"}}',
    '{\n "c": {"x": "multi-line document"}}',
    '{"c": {"\\u0078": "escaped key"}}',
    '[1, 2]',
    '{"c": {"x": "ünïcode ✓"}}',
]
PATHS = [("c", "x"), ("c", "y"), ("c",), ("missing", "x")]


@pytest.mark.parametrize("dictionary", [False, True])
def test_json_paths_match_json_loads(dictionary: bool) -> None:
    col = coded(DOCS) if dictionary else pa.array(DOCS, pa.string())
    got = json_paths(col, PATHS)
    for path, answer in zip(PATHS, got, strict=True):
        assert values(answer) == [reference(d, path) for d in DOCS], path


def test_json_paths_when_only_plain_documents_are_read_by_arrow() -> None:
    docs = ['{"c": {"x": "a"}}', '{"c": {"x": "b"}}', None, '{"c": {}}']
    (answer,) = json_paths(pa.array(docs), [("c", "x")])
    assert values(answer) == ["a", "b", None, None]


# Documents Arrow's reader takes (one object on a line, text leaves), mixed with
# ones it must not be trusted with (line breaks, \\u escapes, a non-object).
ARROW_DOCS = [
    '{"c": {"x": "a", "y": "b"}}',
    '{"c": {"x": "a", "y": "b"}}',
    '{"c": {}}',
    '{"d": {"x": "not under c"}}',
    '{"c": {"x": "only x"}, "x": "top"}',
    None,
    '{\n "c": {"x": "multi-line"}}',
    '{"c": {"\\u0078": "escaped key"}}',
    '{"c": {"x": "caf\\u00e9"}}',
    '{"c": {"a/b": "slash", "a\\/b": "escaped slash"}}',
    '  {"c": {"x": "leading blank"}}',
    "[1]",
]


@pytest.mark.parametrize("dictionary", [False, True])
@pytest.mark.parametrize("paths", [
    [("c", "x"), ("c", "y"), ("missing", "x")],
    [("c", "x"), ("c", "a/b")],  # a key with another spelling: searched per document
    [("x",), ("c", "y")],
])
def test_json_paths_read_by_arrow_match_json_loads(dictionary: bool,
                                                   paths: list[tuple[str, ...]]) -> None:
    docs = ARROW_DOCS * 3
    col = coded(docs) if dictionary else pa.array(docs, pa.string())
    got = json_paths(col, paths)
    for path, answer in zip(paths, got, strict=True):
        assert values(answer) == [reference(d, path) for d in docs], path
        assert answer.type == pa.dictionary(pa.int32(), pa.string())


def test_json_paths_where_one_path_runs_through_another() -> None:
    docs = ['{"c": {"x": "a"}}', '{"c": "b"}']
    got = json_paths(pa.array(docs), [("c", "x"), ("c",)])
    assert [values(a) for a in got] == [[reference(d, p) for d in docs]
                                        for p in [("c", "x"), ("c",)]]


def test_json_path_of_struct_columns() -> None:
    col = pa.array([{"c": {"x": "t1"}}, None, {"c": {"x": None}}])
    assert json_path(col, ("c", "x")).to_pylist() == ["t1", None, None]
    assert json_path(col, ("c", "nope")).to_pylist() == [None, None, None]
    assert json_path(col, ("c",)).to_pylist() == ['{"x": "t1"}', None, '{"x": null}']


def test_json_path_of_a_null_column_and_of_chunks() -> None:
    assert json_path(pa.nulls(2), ("a",)).to_pylist() == [None, None]
    col = pa.chunked_array([pa.array(['{"a": "1"}']), pa.array(['{"a": "2"}'])])
    assert json_path(col, ("a",)).to_pylist() == ["1", "2"]


def test_json_path_refuses_a_number_column() -> None:
    with pytest.raises(TypeError, match="cannot read a JSON path"):
        json_paths(pa.array([1, 2]), [("a",)])
