"""Edge rules (``graphkit.projection.edges``) and node keys on their less-travelled
paths: key values holding the id recipe's separator or null marker, the per-row
fallback, joins with properties, chains, and the rows an edge drops."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import graphkit.projection.edges as edges_module
from graphkit.core.ids import KEY_SEP, NULL_MARKER, node_id
from graphkit.projection.project import Projection, Shortcuts
from tests.helpers.contracts import ALL_SHORTCUTS, assert_same, contract_from, run

PER_ROW = Shortcuts(group_by_key_columns=False)

# Two-part keys whose values may hold the separator or be the null marker.
KEYS = """\
contract: odd-keys
version: 1
input:
  a: {type: string}
  b: {type: string}
  t: {type: string}
  n: {type: int}
nodes:
  - type: K
    key: [a, b]
    properties:
      rows: {count: "*"}
      first_n: {first: n}
  - type: T
    key: [t]
edges:
  - type: TO_T
    from: {type: K, key: [a, b]}
    to: {type: T, key: [t]}
    properties:
      rows: {count: "*"}
      max_n: {max: n}
"""


def odd(a: list[str | None], b: list[str | None], t: list[str]) -> pa.Table:
    return pa.table({"a": pa.array(a, pa.string()), "b": pa.array(b, pa.string()),
                     "t": pa.array(t, pa.string()), "n": list(range(1, len(a) + 1))})


@pytest.fixture
def per_row_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The edge types that took the per-row path in the test."""
    calls: list[str] = []
    real = edges_module._edge_keys

    def spy(rule: Any, rows: pa.Table) -> pa.Table:
        calls.append(rule.type)
        return real(rule, rows)

    monkeypatch.setattr(edges_module, "_edge_keys", spy)
    return calls


def rows_of(p: Projection, kind: str, t: str) -> list[dict[str, Any]]:
    g = p.graph.nodes if kind == "node" else p.graph.edges
    return g[t].table.to_pylist()


def test_keys_sharing_a_key_text_are_one_node_and_edges_fall_back_to_rows(
        tmp_path: Path, per_row_calls: list[str]) -> None:
    c = contract_from(tmp_path, KEYS)
    rows = odd(a=[f"x{KEY_SEP}y", "x", None, NULL_MARKER, "p"],
               b=["z", f"y{KEY_SEP}z", "q", "q", None],
               t=["t1", "t1", "t2", "t2", "t3"])
    p = run(c, rows)
    assert per_row_calls == ["TO_T"]
    ks = rows_of(p, "node", "K")
    assert len({k["id"] for k in ks}) == len(ks) == 3
    merged = {k["id"]: k for k in ks}[node_id("K", ["x", f"y{KEY_SEP}z"])]
    assert (merged["a"], merged["b"], merged["rows"], merged["first_n"]) == (
        f"x{KEY_SEP}y", "z", 2, 1)  # each key part's first value
    assert {k["id"] for k in ks} == {node_id("K", [f"x{KEY_SEP}y", "z"]),
                                     node_id("K", [None, "q"]), node_id("K", ["p", None])}
    to_t = {e["source"]: (e["rows"], e["max_n"]) for e in rows_of(p, "edge", "TO_T")}
    assert to_t == {node_id("K", ["x", f"y{KEY_SEP}z"]): (2, 2),
                    node_id("K", [NULL_MARKER, "q"]): (2, 4),
                    node_id("K", ["p", None]): (1, 5)}
    for shortcuts in ALL_SHORTCUTS[1:]:
        assert_same(p, run(c, rows, shortcuts=shortcuts))


def test_separator_in_values_that_do_not_collide_keeps_the_fast_path(
        tmp_path: Path, per_row_calls: list[str]) -> None:
    c = contract_from(tmp_path, KEYS)
    rows = odd(a=[f"x{KEY_SEP}y", "p", "p", f"x{KEY_SEP}y"], b=["z", "q", None, "z"],
               t=["t1", "t1", "t2", "t2"])
    fast = run(c, rows)
    assert per_row_calls == []
    plain = run(c, rows, shortcuts=PER_ROW)
    assert per_row_calls == ["TO_T"]
    assert_same(fast, plain)
    assert fast.graph.edge_counts() == {"TO_T": 4}


def test_plain_keys_take_the_fast_path_and_agree_with_the_per_row_one(
        tmp_path: Path, per_row_calls: list[str]) -> None:
    c = contract_from(tmp_path, KEYS)
    rows = odd(a=["a", "a", "b", None, "c"], b=["1", "1", None, "2", "3"],
               t=["t1", "t2", "t1", "t1", "t3"])
    fast = run(c, rows)
    assert per_row_calls == []
    assert_same(fast, run(c, rows, shortcuts=PER_ROW))


JOIN = """\
contract: join-props
version: 1
input:
  sess: {type: string}
  th: {type: string}
  call: {type: string}
  spawned: {type: string}
  kind: {type: string}
nodes:
  - type: Th
    key: [sess, th]
edges:
  - type: SPAWNED_BY
    where: {not_null: [spawned]}
    from: {type: Th, key: [sess, th]}
    to: {type: Th, key: [sess, th]}
    join:
      column: spawned
      matches: call
      same: [sess]
      where: {not_equals: {kind: result}}
    properties:
      rows: {count: "*"}
      calls: {count_distinct: spawned}
"""


@pytest.mark.parametrize("with_properties", [True, False])
def test_join_edges(tmp_path: Path, with_properties: bool, per_row_calls: list[str]) -> None:
    text = JOIN if with_properties else JOIN.split("    properties:")[0]
    c = contract_from(tmp_path, text)
    rows = pa.table({
        "sess": ["s", "s", "s", "s", "s", "s2", "s"],
        "th": ["main", "main", "sub", "sub", "sub2", "x", "sub3"],
        "call": ["c1", "c2", None, "c2", None, None, None],
        "spawned": [None, None, "c1", "c1", "c2", "c1", "nope"],
        "kind": ["call", "call", "text", "result", "text", "text", "text"],
    })
    p = run(c, rows)
    assert per_row_calls == (["SPAWNED_BY"] if with_properties else [])
    got = {(e["source"], e["target"]): e for e in rows_of(p, "edge", "SPAWNED_BY")}
    th = {name: node_id("Th", ["s", name]) for name in ("main", "sub", "sub2")}
    # sub2 was spawned by c2, made by main; the result row of sub carrying c2 is
    # not a spawner; s2 has no c1 of its own; "nope" names no call.
    assert set(got) == {(th["sub"], th["main"]), (th["sub2"], th["main"])}
    if with_properties:
        assert got[(th["sub"], th["main"])]["rows"] == 2
        assert got[(th["sub"], th["main"])]["calls"] == 1
    assert p.dropped_edges["SPAWNED_BY"] == {"missing_source": 0, "missing_target": 0,
                                             "self_loop": 0}
    assert_same(p, run(c, rows, shortcuts=PER_ROW))


CHAIN = """\
contract: chain
version: 1
input:
  g: {type: string}
  m: {type: string}
  at: {type: int}
nodes:
  - type: M
    key: [m]
edges:
  - type: NEXT
    from: {type: M, key: [m]}
    to: {type: M, key: [m]}
    chain:
      within: [g]
      order_by: [at]
"""


def test_chain_links_each_node_once_at_its_earliest_position(tmp_path: Path) -> None:
    c = contract_from(tmp_path, CHAIN)
    rows = pa.table({"g": ["a", "a", "a", "a", "b", "b", None],
                     "m": ["m2", "m1", "m3", "m1", "n1", "n2", "z"],
                     "at": [2, 1, 3, 4, 1, 1, 1]})
    p = run(c, rows)
    m = {k: node_id("M", [k]) for k in ("m1", "m2", "m3", "n1", "n2", "z")}
    pairs = {(e["source"], e["target"]) for e in rows_of(p, "edge", "NEXT")}
    # Ties in order_by fall back to the node key text: n1 before n2.
    assert pairs == {(m["m1"], m["m2"]), (m["m2"], m["m3"]), (m["n1"], m["n2"])}


DROPS = """\
contract: drops
version: 1
input:
  a: {type: string}
  b: {type: string}
nodes:
  - type: A
    key: [a]
    where: {not_equals: {a: hidden}}
  - type: B
    key: [b]
    where: {not_equals: {b: hidden}}
edges:
  - type: LINK
    from: {type: A, key: [a]}
    to: {type: B, key: [b]}
  - type: LINK
    where: {not_null: [b]}
    from: {type: A, key: [a]}
    to: {type: B, key: [b]}
  - type: SELF
    from: {type: A, key: [a]}
    to: {type: A, key: [b]}
"""


def test_dropped_edges_are_counted_in_rows_and_two_rules_give_one_edge(
        tmp_path: Path) -> None:
    c = contract_from(tmp_path, DROPS)
    rows = pa.table({"a": ["x", "x", "hidden", "y", "y", "y"],
                     "b": ["p", "p", "p", "hidden", "y", None]})
    for shortcuts in ALL_SHORTCUTS:
        p = run(c, rows, shortcuts=shortcuts)
        link = {(e["source"], e["target"]) for e in rows_of(p, "edge", "LINK")}
        # x->p found by both LINK rules: one edge. y->y (B) is an edge too.
        assert link == {(node_id("A", ["x"]), node_id("B", ["p"])),
                        (node_id("A", ["y"]), node_id("B", ["y"]))}
        # The first rule sees 6 rows, the second the 5 with b: hidden ends drop.
        assert p.dropped_edges["LINK"] == {"missing_source": 2, "missing_target": 2,
                                           "self_loop": 0}
        # SELF: x->p and x->hidden have no A target; y->y is a loop; b null drops.
        assert p.dropped_edges["SELF"] == {"missing_source": 1, "missing_target": 3,
                                           "self_loop": 1}
        assert p.graph.edge_counts()["SELF"] == 0
