"""Group-bys over dictionary-coded columns (``graphkit.projection.groups``): the
same answers as over plain values; sums that would pass int64's range are one error."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from graphkit.contract.loader import load_contract
from graphkit.contract.model import Aggregation
from graphkit.core.errors import GraphkitError
from graphkit.projection.conform import conform_table
from graphkit.projection.groups import (
    aggregate,
    decode,
    decoded,
    dictionary_sizes,
    encode,
    index_column,
    key_codes,
    single,
)
from graphkit.projection.project import project
from tests.helpers.contracts import FILES_CONTRACT

KEYS = ["k2", "k1", "k2", None, "k1", "k3", "k2"]
NAMES = ["b", "a", None, "c", "a", None, "d"]
NUMS = [5, 1, 7, 3, None, 2, 4]

PROPS = {
    "first": Aggregation(first="name"),
    "last": Aggregation(last="name"),
    "min": Aggregation(min="name"),
    "max": Aggregation(max="name"),
    "n": Aggregation(count="name"),
    "distinct": Aggregation(count_distinct="name"),
    "rows": Aggregation(count="*"),
    "num_max": Aggregation(max="num"),
    "key_again": Aggregation(first="key"),
}


def plain_groups() -> dict[Any, dict[str, Any]]:
    """The expected answer, by a plain loop over the rows (first/last skip nulls)."""
    out: dict[Any, dict[str, Any]] = {}
    for k, name, num in zip(KEYS, NAMES, NUMS, strict=True):
        g = out.setdefault(k, {"names": [], "nums": [], "rows": 0})
        g["rows"] += 1
        if name is not None:
            g["names"].append(name)
        if num is not None:
            g["nums"].append(num)
    return {k: {"key": k, "first": g["names"][0] if g["names"] else None,
                "last": g["names"][-1] if g["names"] else None,
                "min": min(g["names"], default=None), "max": max(g["names"], default=None),
                "n": len(g["names"]), "distinct": len(set(g["names"])), "rows": g["rows"],
                "num_max": max(g["nums"], default=None), "key_again": k}
            for k, g in out.items()}


def table(coded: bool, repeated_dictionary: bool = False) -> pa.Table:
    keys, names = pa.array(KEYS), pa.array(NAMES)
    if coded:
        keys, names = keys.dictionary_encode(), names.dictionary_encode()
    if repeated_dictionary:
        # A dictionary holding a value twice (as a coalesce of dictionaries makes).
        names = pa.DictionaryArray.from_arrays(
            pa.array([0, 1, None, 2, 3, None, 4], pa.int32()),
            pa.array(["b", "a", "c", "a", "d"]))
    return pa.table({"key": keys, "name": names, "num": NUMS})


@pytest.mark.parametrize(("coded", "repeated"), [(False, False), (True, False), (True, True)])
def test_aggregate_matches_a_plain_loop(coded: bool, repeated: bool) -> None:
    t = table(coded, repeated)
    t = pa.table({c: encode(t.column(c)) for c in t.column_names})
    got = aggregate(t, ["key"], PROPS)
    assert got.column_names == ["key", *PROPS]
    want = plain_groups()
    assert sorted(got.to_pylist(), key=repr) == sorted(want.values(), key=repr)
    # Groups with a key come in the order of their first row.
    assert [k for k in got.column("key").to_pylist() if k] == [k for k in want if k]
    assert not any(pa.types.is_dictionary(f.type) for f in got.schema)


def test_aggregate_by_two_keys_with_no_properties() -> None:
    t = pa.table({"a": encode(pa.array(["x", "x", "y", "x"])), "b": pa.array([1, 2, 1, 1])})
    assert aggregate(t, ["a", "b"], {}).to_pylist() == [
        {"a": "x", "b": 1}, {"a": "x", "b": 2}, {"a": "y", "b": 1}]


def test_encode() -> None:
    plain = pa.array(["a", "b", "a", None])
    e = encode(plain)
    assert pa.types.is_dictionary(e.type)
    assert e.dictionary.to_pylist() == ["a", "b"]
    assert decode(e).to_pylist() == plain.to_pylist()
    # A dictionary repeating a value is re-encoded: each value once.
    rep = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2]), pa.array(["a", "b", "a"]))
    r = encode(rep)
    assert r.dictionary.to_pylist() == ["a", "b"]
    assert decode(r).to_pylist() == ["a", "b", "a"]
    # ``unique`` trusts the caller: the dictionary is not looked at.
    assert encode(rep, unique=True) is not None
    assert encode(pa.chunked_array([pa.array(["x"]), pa.array(["y"])])).to_pylist() == [
        "x", "y"]
    nums = pa.array([1, 2])
    assert encode(nums) is nums


@pytest.mark.parametrize("seed", range(8))
def test_encode_chunk_by_chunk_is_encode_of_the_chunks_joined(seed: int) -> None:
    # A text column read from several files or row groups: encoded chunk by chunk, it
    # must give the very array (dictionary order included) that joining it first gives.
    rnd = random.Random(seed)
    kind = rnd.choice([pa.string(), pa.large_string()])
    chunks = [pa.array([rnd.choice(["a", "b", "ccc", "", "é"]) + str(rnd.randrange(9))
                        if rnd.random() > 0.2 else None for _ in range(rnd.randrange(0, 40))],
                       kind) for _ in range(rnd.randrange(2, 7))]
    col = pa.chunked_array(chunks, kind)
    got = encode(col)
    assert isinstance(got, pa.DictionaryArray)
    want = col.combine_chunks().dictionary_encode()
    assert got.equals(want) and got.type == want.type
    assert got.dictionary.to_pylist() == want.dictionary.to_pylist()


def test_decoded_and_single() -> None:
    t = pa.table({"a": encode(pa.array(["x", None])), "n": [1, 2]})
    d = decoded(t)
    assert d.schema.field("a").type == pa.string()
    assert d.to_pylist() == t.to_pylist()
    plain = pa.table({"n": [1]})
    assert decoded(plain) is plain
    assert single(pa.chunked_array([pa.array([1]), pa.array([2])])).to_pylist() == [1, 2]
    assert single(pa.chunked_array([], pa.int64())).to_pylist() == []


def test_key_codes_name_groups_by_their_dictionary_indices() -> None:
    a = encode(pa.array(["x", "y", "x", None, "y"]))
    b = encode(pa.array(["p", "p", "q", "p", "p"]))
    t = pa.table({"a": a, "b": b, "n": [1, 2, 3, 4, 5]})
    g = aggregate(t, ["a", "b"], {"rows": Aggregation(count="*")}, key_indices=True)
    assert g.column_names == ["a", "b", "rows", index_column("a"), index_column("b")]
    sizes = dictionary_sizes(t, ["a", "b"])
    assert sizes == (2, 2)
    codes = key_codes(g, ["a", "b"], sizes)
    assert codes is not None
    # Equal codes exactly for equal key parts (a null part has its own code).
    pairs = list(zip(g.column("a").to_pylist(), g.column("b").to_pylist(), strict=True))
    by_code = dict(zip(codes.to_pylist(), pairs, strict=True))
    assert len(by_code) == len(pairs) == 4
    assert by_code[codes.to_pylist()[pairs.index((None, "p"))]] == (None, "p")
    # Not every column coded: no sizes, no codes.
    assert dictionary_sizes(t, ["a", "n"]) is None
    assert key_codes(g, ["a", "n"], (2, 5)) is None


@pytest.mark.parametrize("seed", range(6))
def test_count_distinct_by_codes_equals_arrows(seed: int) -> None:
    """count_distinct over dictionary indices (counted from int64 codes) gives Arrow's
    hash_count_distinct of the values, per group, nulls in keys and values included."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = 3000 if seed else 0

    def text(k: int, nulls: float) -> pa.Array:
        vals = [None if rng.random() < nulls else f"v{int(x)}" for x in rng.integers(0, k, n)]
        return pa.array(vals, pa.string())

    a = text(40, 0.1)
    # Values that mostly belong to one group each (as message ids to a thread), a
    # few shared with another group.
    owned = pa.array([None if rng.random() < 0.1 else
                      f"{g}-{int(rng.integers(0, 30))}" if rng.random() < 0.95 else
                      f"shared-{int(rng.integers(0, 5))}" for g in a.to_pylist()], pa.string())
    plain = pa.table({"a": a, "b": text(3, 0.3), "m": text(500, 0.2), "o": owned,
                      "i": pa.array(rng.integers(0, 90, n), pa.int64())})
    coded = pa.table({c: plain.column(c).combine_chunks().dictionary_encode()
                      if c != "i" else plain.column(c) for c in plain.column_names})
    props = {"m": Aggregation(count_distinct="m"), "i": Aggregation(count_distinct="i"),
             "o": Aggregation(count_distinct="o"), "rows": Aggregation(count="*")}
    for keys in (["a"], ["a", "b"], ["b"]):
        expected = plain.group_by(keys, use_threads=False).aggregate(
            [("m", "count_distinct"), ("i", "count_distinct"), ("o", "count_distinct"),
             ([], "count_all")])
        want = {tuple(r[k] for k in keys): (r["m_count_distinct"], r["i_count_distinct"],
                                           r["o_count_distinct"], r["count_all"])
                for r in expected.to_pylist()}
        got = aggregate(coded, keys, props)
        assert got.column("m").type == pa.int64()
        assert {tuple(r[k] for k in keys): (r["m"], r["i"], r["o"], r["rows"])
                for r in got.to_pylist()} == want
        assert got.num_rows == len(want)


def test_a_sum_that_would_wrap_int64_in_one_group_is_one_error(tmp_path: Path) -> None:
    # Each count is allowed (below 2^53), but 1,100 of them in one session pass 2^63:
    # Arrow's sum wrapped to a negative total without a word.
    (tmp_path / "c.yaml").write_text(FILES_CONTRACT)
    c = load_contract(str(tmp_path / "c.yaml"))
    rows = pa.table({"session_id": ["s"] * 1100, "n": [str(2**53 - 1)] * 1100,
                     "touched": pa.nulls(1100, pa.string())})
    with pytest.raises(GraphkitError, match="passes int64's range") as info:
        project(c, conform_table(c, rows, "t"))
    assert "'n'" in str(info.value)
    # The same counts over many sessions fit: each total is in range.
    spread = rows.set_column(0, "session_id", pa.array([f"s{i}" for i in range(1100)]))
    graph = project(c, conform_table(c, spread, "t")).graph
    assert set(graph.nodes["Session"].table.column("total").to_pylist()) == {2**53 - 1}


def test_no_counts_reads_integers_of_every_width() -> None:
    # A uint64 count of 2^64 - 1 compared with an int64 bound was an ArrowInvalid.
    from graphkit.projection.groups import LARGEST_COUNT, no_counts

    big = no_counts(pa.array([2**64 - 1, 5], pa.uint64()), whole=True)
    assert {k: m.to_pylist() for k, m in big.items()} == {"large": [True, False]}
    edge = no_counts(pa.array([LARGEST_COUNT, LARGEST_COUNT + 1, -3], pa.int64()), whole=False)
    assert {k: m.to_pylist() for k, m in edge.items()} == {"large": [False, True, False]}
    assert no_counts(pa.array([1, 2], pa.int8()), whole=True) == {}
