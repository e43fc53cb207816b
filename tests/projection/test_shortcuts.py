"""Every shortcut of the projection gives the same tables as the plain way,
wherever both apply (``graphkit.projection.project.Shortcuts``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from graphkit.contract.loader import load_contract
from graphkit.projection.project import Shortcuts
from tests.helpers.contracts import (
    ALL_SHORTCUTS,
    assert_same,
    contract_from,
    dictionary_coded,
    run,
    session_rows,
)
from tests.helpers.rows import row, spawned, table

PLAIN = Shortcuts(overlap_json=False, dedupe_on_dictionary=False, group_by_key_columns=False,
                  encode_early=False)


@pytest.mark.slow
@pytest.mark.parametrize("granularity", ["thread", "message"])
@pytest.mark.parametrize("coded", [False, True], ids=["plain-text", "dictionary-text"])
@pytest.mark.parametrize("seed", [1, 2])
def test_default_contract_same_tables_every_way(granularity: str, coded: bool,
                                                seed: int) -> None:
    c = load_contract()
    rows = table(session_rows(seed))
    if coded:
        rows = dictionary_coded(rows)
    base = run(c, rows, granularity=granularity)
    assert base.rows_rejected == 2 and base.duplicates > 0
    assert base.graph.edges["PARENT_THREAD"].table.num_rows > 0
    for shortcuts in ALL_SHORTCUTS[1:]:
        assert_same(base, run(c, rows, granularity=granularity, shortcuts=shortcuts))


@pytest.mark.slow
@pytest.mark.parametrize("granularity", ["thread", "message"])
@pytest.mark.parametrize("coded", [False, True], ids=["plain-text", "dictionary-text"])
def test_rows_without_rejects_same_tables_every_way(granularity: str, coded: bool) -> None:
    # Early encoding (Shortcuts.encode_early) applies only where no row is rejected:
    # the generated sessions without their unusable rows.
    c = load_contract()
    rows = table([r for r in session_rows(3) if r["session_id"] not in (None, "old")])
    if coded:
        rows = dictionary_coded(rows)
    base = run(c, rows, granularity=granularity)
    assert base.rows_rejected == 0 and base.duplicates > 0
    assert base.graph.nodes["Thread"].table.num_rows > 0
    for shortcuts in ALL_SHORTCUTS[1:]:
        assert_same(base, run(c, rows, granularity=granularity, shortcuts=shortcuts))


def test_early_encoding_is_the_later_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # What encode_early hands _coded is what _coded would have made itself: the same
    # dictionaries in the same order (so every index the group-bys see is the same).
    from graphkit.projection import project as proj

    c = load_contract()
    rows = table([r for r in session_rows(4) if r["session_id"] not in (None, "old")])
    seen: dict[bool, dict[str, pa.Array]] = {True: {}, False: {}}
    real = proj._coded

    def spy(t: pa.Table, positions: pa.Array | None, plain: set[str],
            ready: dict | None = None) -> pa.Table:
        out = real(t, positions, plain, ready)
        seen[bool(ready)].update({n: out.column(n) for n in out.column_names})
        return out

    monkeypatch.setattr(proj, "_coded", spy)
    run(c, rows)
    run(c, rows, shortcuts=Shortcuts(encode_early=False))
    assert seen[True] and seen[True].keys() == seen[False].keys()
    for name, col in seen[True].items():
        assert col.equals(seen[False][name]), name
        if pa.types.is_dictionary(col.type):
            assert col.chunk(0).dictionary.equals(seen[False][name].chunk(0).dictionary)


def test_dedupe_keeps_every_row_without_a_key(tmp_path: Path) -> None:
    c = load_contract()
    rows = [row("s", message_id="m1", part_id="p"), row("s", message_id="m2", part_id="p"),
            row("s", message_id="m3", part_id=None), row("s", message_id="m4", part_id=None)]
    for coded in (False, True):
        t = dictionary_coded(table(rows)) if coded else table(rows)
        fast, plain = run(c, t), run(c, t, shortcuts=PLAIN)
        assert_same(fast, plain)
        assert (fast.rows_used, fast.duplicates) == (3, 1)


# A reject rule that reads a JSON-derived column: rejects, dedupe and order
# must wait for the JSON paths ("late"), however the shortcuts are set.
LATE = """\
contract: late-reject
version: 1
input:
  session_id: {type: string}
  message_id: {type: string}
  part_id: {type: string}
  attributes: {type: json}
  message_created_at: {type: timestamp}
derive:
  spawned_by: {json: attributes, path: [claude, spawned_by_tool_use_id]}
reject:
  - when: {equals: {spawned_by: forbidden}}
    column: attributes
    reason: spawned by a forbidden call
  - when: {is_null: [session_id]}
    reason: no session
dedupe: part_id
order_by: [message_created_at, part_id]
nodes:
  - type: Session
    key: [session_id]
    properties:
      parts: {count: "*"}
      first_spawn: {first: spawned_by}
"""


def test_late_reject_on_a_json_derived_column(tmp_path: Path) -> None:
    c = contract_from(tmp_path, LATE)
    rows = table([row("s1", message_id="a", attributes=spawned("ok")),
                  row("s1", message_id="b", attributes=spawned("forbidden")),
                  row(None, message_id="c", attributes=spawned("forbidden")),
                  row(None, message_id="d"),
                  row("s2", message_id="e", part_id="dup"),
                  row("s2", message_id="f", part_id="dup")])
    base = run(c, rows)
    assert [(r["message_id"], r["__reason"]) for r in base.rejects.to_pylist()] == [
        ("b", "spawned by a forbidden call"), ("c", "spawned by a forbidden call"),
        ("d", "no session")]
    assert (base.rows_used, base.duplicates) == (2, 1)
    sessions = {r["session_id"]: r for r in base.graph.nodes["Session"].table.to_pylist()}
    assert sessions["s1"]["parts"] == 1 and sessions["s1"]["first_spawn"] == "ok"
    for shortcuts in ALL_SHORTCUTS[1:]:
        assert_same(base, run(c, rows, shortcuts=shortcuts))


def test_rejects_are_the_same_from_plain_and_dictionary_text() -> None:
    c = load_contract()
    rows = table(session_rows(5))
    a, b = run(c, rows), run(c, dictionary_coded(rows))
    assert a.rejects.equals(b.rejects)
    assert all(not pa.types.is_dictionary(f.type) for f in a.rejects.schema)


# A reject rule and the dedupe read a derived (not JSON) column: the derived columns
# are made before the verdict, not beside it, however the shortcuts are set.
DERIVED_KEYS = """\
contract: derived-keys
version: 1
input:
  session_id: {type: string}
  conversation_id: {type: string}
  message_id: {type: string}
  part_id: {type: string}
  attributes: {type: json}
  message_created_at: {type: timestamp}
derive:
  scope: {coalesce: [conversation_id, session_id]}
  part_key: {coalesce: [part_id, message_id]}
  spawned_by: {json: attributes, path: [claude, spawned_by_tool_use_id]}
reject:
  - when: {is_null: [scope]}
    reason: no scope
dedupe: part_key
order_by: [message_created_at, part_key]
nodes:
  - type: Scope
    key: [scope]
    properties:
      parts: {count: "*"}
      first_spawn: {first: spawned_by}
"""


def test_verdict_on_a_plain_derived_column(tmp_path: Path) -> None:
    c = contract_from(tmp_path, DERIVED_KEYS)
    rows = table([row("s1", message_id="a", part_id=None, attributes=spawned("x")),
                  row("s1", message_id="a", part_id=None),
                  row(None, message_id="c"),
                  row("s2", conversation_id="c2", message_id="d", part_id="p"),
                  row("s2", conversation_id="c2", message_id="e", part_id="p")])
    base = run(c, rows)
    assert [r["message_id"] for r in base.rejects.to_pylist()] == ["c"]
    assert (base.rows_used, base.duplicates) == (2, 2)
    scopes = {r["scope"]: r for r in base.graph.nodes["Scope"].table.to_pylist()}
    assert scopes["s1"]["first_spawn"] == "x" and scopes["c2"]["parts"] == 1
    for shortcuts in ALL_SHORTCUTS[1:]:
        assert_same(base, run(c, rows, shortcuts=shortcuts))


IN_TURN = Shortcuts(rules_as_ready=False)


@pytest.mark.slow
@pytest.mark.parametrize("granularity", ["thread", "message"])
@pytest.mark.parametrize("coded", [False, True], ids=["plain-text", "dictionary-text"])
@pytest.mark.parametrize("workers", [1, 2])
def test_rules_as_ready_on_threads_build_what_rules_in_turn_do(
        granularity: str, coded: bool, workers: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Shortcuts.rules_as_ready on real threads (small tables run in the calling
    # thread): edge types start as their node types finish, joined rules are grouped
    # beside the node rules; one worker must not wait on a job queued behind it.
    import graphkit.projection.project as proj

    monkeypatch.setattr(proj, "_THREADED_ROWS", 0)
    monkeypatch.setattr(proj.os, "cpu_count", lambda: workers)
    c = load_contract()
    rows = table(session_rows(4))
    if coded:
        rows = dictionary_coded(rows)
    base = run(c, rows, granularity=granularity, shortcuts=IN_TURN)
    assert base.graph.edges["PARENT_THREAD"].table.num_rows > 0
    ready = run(c, rows, granularity=granularity)
    assert_same(base, ready)
    assert list(ready.graph.nodes) == list(base.graph.nodes)  # rule order, not finish order
    assert list(ready.graph.edges) == list(base.graph.edges)


def test_rules_as_ready_raise_the_first_failing_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    import graphkit.projection.project as proj

    monkeypatch.setattr(proj, "_THREADED_ROWS", 0)
    real = proj._project_nodes
    started: list[str] = []

    def failing(rule: Any, rows: pa.Table, by_columns: bool = True) -> Any:
        if rule.type in ("Agent", "File"):
            raise ValueError(f"no {rule.type}")
        return real(rule, rows, by_columns)

    real_edges = proj.project_edges

    def edges(rules: Any, *a: Any, **kw: Any) -> Any:
        started.append(rules[0].type)
        return real_edges(rules, *a, **kw)

    monkeypatch.setattr(proj, "_project_nodes", failing)
    monkeypatch.setattr(proj, "project_edges", edges)
    with pytest.raises(ValueError, match="no Agent"):  # Agent comes before File
        run(load_contract(), table(session_rows(5)))
    # Edge types needing a failed node type never start; the others ran.
    assert "HAS_AGENT" not in started and "TOUCHED" not in started
    assert "HAS_THREAD" in started


# The dedupe key a coalesce of dictionary-coded columns
# (as Parquet reads them), whose laid-end-to-end dictionary holds a value twice.
COALESCED_KEY = """\
contract: coalesced-key
version: 1
input:
  session_id: {type: string}
  conversation_id: {type: string}
  agent_id: {type: string}
  message_id: {type: string}
derive:
  who: {coalesce: [agent_id, conversation_id]}
dedupe: who
nodes:
  - type: Session
    key: [session_id]
    properties:
      parts: {count: "*"}
"""


def test_dedupe_on_a_coalesce_of_dictionaries_holding_a_value_twice(tmp_path: Path) -> None:
    # Was: with dedupe_on_dictionary off, Arrow grouped the key by dictionary index,
    # so "X" from agent_id and "X" from conversation_id were two keys: 2 rows used,
    # where every other way (and plain text) uses 1.
    c = contract_from(tmp_path, COALESCED_KEY)
    rows = table([row("s", agent_id="X", message_id="m1"),
                  row("s", conversation_id="X", message_id="m2"),
                  row("s", message_id="m3"), row("s", message_id="m4")])
    for t in (rows, dictionary_coded(rows)):
        for shortcuts in ALL_SHORTCUTS:
            p = run(c, t, shortcuts=shortcuts)
            assert (p.rows_used, p.duplicates) == (3, 1), shortcuts
            assert p.graph.nodes["Session"].table.column("parts").to_pylist() == [3]


@pytest.mark.slow
def test_a_lone_surrogate_escaped_in_json_becomes_u_fffd() -> None:
    # Was: UnicodeEncodeError traceback (JSON's "\ud800" parses
    # to a lone surrogate, which Arrow cannot hold) from the JSON paths and the unnest.
    c = load_contract()
    rows = table([
        row("s", message_id="m1", part_type="tool_call", tool_name="Task", tool_call_id="t1"),
        row("s", message_id="m2", agent_id="ag", is_sidechain=True,
            attributes='{"claude": {"spawned_by_tool_use_id": "t1", "agent_type": "\\udcffx"}}'),
        row("s", message_id="m3", agent_id="ag2", is_sidechain=True,
            attributes='{"claude": {"spawned_by_tool_use_id": "t\\udc80"}}')])
    rows = rows.append_column("touched_files", pa.array(
        ['[{"path": "/a\\ud800", "reads": 1, "writes": 0}]', None, None]))
    for t in (rows, dictionary_coded(rows)):
        base = run(c, t)
        assert base.graph.nodes["File"].table.column("file_path").to_pylist() == ["/a\ufffd"]
        agents = base.graph.nodes["Agent"].table.to_pylist()
        assert {a["agent_id"]: a["agent_type"] for a in agents} == {"ag": "\ufffdx", "ag2": None}
        assert base.graph.edges["PARENT_THREAD"].table.num_rows == 1
        for shortcuts in ALL_SHORTCUTS[1:]:
            assert_same(base, run(c, t, shortcuts=shortcuts))


# A token count that is no number ("input_tokens": "x" in a row's attributes) is
# summed by Session, Thread and USED_MODEL: its row is rejected (file, row, column),
# not the build, whichever shortcuts run and however the text is stored.
@pytest.mark.slow
@pytest.mark.parametrize("coded", [False, True], ids=["plain-text", "dictionary-text"])
def test_a_token_count_that_is_no_number_rejects_its_row_every_way(coded: bool) -> None:
    c = load_contract()
    good = [r for r in session_rows(3) if r["session_id"] not in (None, "old")]
    bad = dict(good[5], attributes='{"usage": {"input_tokens": "x", "output_tokens": 3}}')
    rows = table([*good[:5], bad, *good[6:]])
    if coded:
        rows = dictionary_coded(rows)
    base = run(c, rows)
    assert base.rejects.column("__column").to_pylist() == ["usage_input"]
    assert base.rejects.column("part_id").to_pylist() == [bad["part_id"]]
    assert "attributes → usage.input_tokens" in base.rejects.column("__reason")[0].as_py()
    without = run(c, table([*good[:5], *good[6:]]))
    assert base.graph.nodes["Thread"].table.equals(without.graph.nodes["Thread"].table)
    for shortcuts in ALL_SHORTCUTS[1:]:
        assert_same(base, run(c, rows, shortcuts=shortcuts))


def test_coded_makes_columns_without_values_without_a_take(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A column no row fills comes out of _coded as the take would give it (type,
    # dictionary, length), but without reading it at every kept position.
    import pyarrow.compute as pc

    from graphkit.projection import project as proj

    n = 3_000  # past _THREADED_ROWS: the columns go through the pool as in a large build
    blank = pa.DictionaryArray.from_arrays(pa.nulls(n, pa.int32()), pa.array(["", " "]))
    t = pa.table({
        "k": pa.array([f"v{i % 17}" for i in range(n)]),
        "none_text": pa.nulls(n, pa.string()),
        "none_coded": blank,
        "none_time": pa.nulls(n, pa.timestamp("us", tz="UTC")),
        "none_at_all": pa.nulls(n),
        "some": pa.array([None] * (n - 1) + ["x"]),
    })
    positions = pa.array(list(range(n - 1, -1, -3)), pa.int64())
    taken: list[int] = []
    real_take = pc.take

    def take(col: Any, at: Any, *args: Any, **kw: Any) -> Any:
        taken.append(col.null_count == len(col))
        return real_take(col, at, *args, **kw)

    monkeypatch.setattr(pc, "take", take)
    got = proj._coded(t, positions, plain={"none_text"})
    assert taken.count(True) == 0 and taken.count(False) == 2  # "k" and "some" only
    monkeypatch.setattr(pc, "take", real_take)
    for name in t.column_names:
        col = t.column(name)
        if name not in ("none_text",):
            col = proj.encode(col)
        want = pa.chunked_array([pc.take(col, positions)]).combine_chunks()
        mine = got.column(name).combine_chunks()
        assert mine.type == want.type and mine.equals(want), name
        if pa.types.is_dictionary(want.type):
            assert mine.dictionary.equals(want.dictionary), name
