"""The Cypher builders alone (no server): names are checked, values are parameters."""

from __future__ import annotations

import re

import pytest

from graphkit.core.errors import StoreError
from graphkit.core.graph import LineageVocabulary
from graphkit.enrich.neo4j import cypher

BAD_NAMES = [
    "Thread`) DETACH DELETE n //",
    "Thread` {id: 1}) MATCH (m) DETACH DELETE m //",
    "a b",
    "",
    "1Thread",
    "_Thread",
    "Thread\n",
    "Thread;",
    "Thread-x",
    "Thr`ead",
    "Thread:Admin",
    "Thréad",  # non-ASCII letter
    "Τhread",  # Greek capital tau, looks like T
    "Thread\u200b",  # zero-width space
    "Ｔhread",  # fullwidth T
    "Thread\u0000",
    "x" * 65,
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_labels_are_refused_by_every_builder(name: str) -> None:
    builders = [
        lambda: cypher.quote_name(name),
        lambda: cypher.merge_nodes(name),
        lambda: cypher.merge_nodes("Thread", ["ok", name]),
        lambda: cypher.merge_relationships(name, "Thread", "Thread"),
        lambda: cypher.merge_relationships("NEXT", "Thread", "Thread", [name]),
        lambda: cypher.merge_relationships("PARENT_THREAD", name, "Thread"),
        lambda: cypher.merge_relationships("PARENT_THREAD", "Thread", name),
        lambda: cypher.unique_id_constraint(name),
        lambda: cypher.property_index(name, "thread_id"),
        lambda: cypher.property_index("Thread", name),
        lambda: cypher.count_nodes(["Thread", name]),
        lambda: cypher.count_relationships([name]),
        lambda: cypher.delete_nodes_batch(name),
    ]
    for build in builders:
        with pytest.raises(StoreError, match="refusing"):
            build()


def test_non_string_names_are_refused() -> None:
    with pytest.raises(StoreError):
        cypher.quote_name(None)  # type: ignore[arg-type]
    with pytest.raises(StoreError):
        cypher.quote_name(7)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["Thread", "PARENT_THREAD", "a", "Match", "x" * 64, "T1_2"])
def test_good_names_are_backtick_quoted(name: str) -> None:
    assert cypher.quote_name(name) == f"`{name}`"


def test_merge_nodes_takes_values_only_as_parameters() -> None:
    q = cypher.merge_nodes("Thread", ["thread_id", "messages"])
    assert q == (
        "UNWIND range(0, size($ids) - 1) AS i MERGE (n:`Thread` {id: $ids[i]})"
        " SET n += {`thread_id`: $c0[i], `messages`: $c1[i]} RETURN count(n) AS written"
    )
    assert _literals(q) == []
    assert "SET n += {}" in cypher.merge_nodes("Thread")


def test_merge_relationships_matches_both_ends_by_label_and_id() -> None:
    q = cypher.merge_relationships("PARENT_THREAD", "Thread", "Session", ["calls"])
    assert "MATCH (a:`Thread` {id: $sources[i]})" in q
    assert "MATCH (b:`Session` {id: $targets[i]})" in q
    assert "MERGE (a)-[r:`PARENT_THREAD`]->(b)" in q
    assert "SET r += {`calls`: $c0[i]}" in q
    assert _literals(q) == []


def test_schema_statements_are_idempotent_and_named() -> None:
    c = cypher.unique_id_constraint("Thread")
    assert c == (
        "CREATE CONSTRAINT `graphkit_Thread_id` IF NOT EXISTS"
        " FOR (n:`Thread`) REQUIRE n.`id` IS UNIQUE"
    )
    i = cypher.property_index("Thread", "agent_id")
    assert i == (
        "CREATE INDEX `graphkit_Thread_agent_id` IF NOT EXISTS FOR (n:`Thread`) ON (n.`agent_id`)"
    )


def test_long_names_keep_schema_names_valid() -> None:
    label = "L" * 64
    assert "IF NOT EXISTS" in cypher.unique_id_constraint(label)
    assert "IF NOT EXISTS" in cypher.property_index(label, "p" * 64)


def test_counts_and_deletes() -> None:
    q = cypher.count_nodes(["Session", "Thread"])
    assert q.count("UNION ALL") == 1
    assert "'Session' AS label" in q and "COUNT { (:`Thread`) }" in q
    assert "$limit" in cypher.delete_nodes_batch("Thread")
    with pytest.raises(StoreError):
        cypher.count_nodes([])


def test_read_queries_take_the_id_as_a_parameter() -> None:
    v = LineageVocabulary()
    for q in (cypher.resolve(v), cypher.parent_edges(v), cypher.child_edges(v),
              cypher.session_threads(v)):
        assert "$id" in q
    # The only string literals in read queries are the fixed type names.
    assert set(_literals(cypher.resolve(v))) == {"Thread", "Session"}
    for q in (cypher.parent_edges(v), cypher.child_edges(v), cypher.session_threads(v),
              cypher.sessions(v)):
        assert _literals(q) == []


def test_read_queries_take_their_names_from_the_vocabulary() -> None:
    v = LineageVocabulary(session="Run", session_key="run_id", thread="Step",
                          thread_key="step_id", thread_aliases=(), thread_session="run_id",
                          has_thread="HAS_STEP", parent="AFTER", agent=None, has_agent=None)
    q = cypher.resolve(v) + cypher.parent_edges(v) + cypher.session_threads(v) + \
        cypher.sessions(v)
    assert "`Step`" in q and "`AFTER`" in q and "`HAS_STEP`" in q and "`run_id`" in q
    assert "Thread" not in q and "PARENT_THREAD" not in q and "Agent" not in q


@pytest.mark.parametrize("field", ["thread", "parent", "thread_key"])
def test_read_queries_refuse_a_hostile_vocabulary(field: str) -> None:
    v = LineageVocabulary(**{field: "Thread`) DETACH DELETE n //"})
    with pytest.raises(StoreError):
        cypher.resolve(v) + cypher.parent_edges(v)


def _literals(query: str) -> list[str]:
    return re.findall(r"'([^']*)'", query) + re.findall(r'"([^"]*)"', query)
