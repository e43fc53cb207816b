"""Cypher text for the Neo4j store, built by pure functions.

Labels, relationship types and property names cannot be Cypher parameters, so
they are the only names spliced into query text: each is checked against
:data:`~graphkit.core.names.NAME_PATTERN` (the contract's own pattern) and
backtick-quoted. Every value travels as a parameter
(``$ids``, ``$c0``, ``$id``, ``$limit``). Keeping the builders free of I/O lets the
tests check injection attempts without a server.

Loads use one ``UNWIND`` statement per batch: a round trip and a
transaction per thousands of rows instead of one per row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from graphkit.core.errors import StoreError
from graphkit.core.names import NAME_PATTERN as NAME_PATTERN  # re-exported
from graphkit.core.names import NAME_RULE, is_name


def quote_name(name: str, what: str = "label") -> str:
    """``name`` backtick-quoted, or :class:`StoreError` if it is not a plain identifier.

    >>> quote_name("Thread")
    '`Thread`'
    """
    if not is_name(name):
        raise StoreError(f"refusing {what} {name!r} for Neo4j",
                         hint=f"names must match {NAME_RULE}")
    # The pattern already excludes backticks; quoting still keeps reserved
    # words (e.g. a label called `Match`) from being parsed as keywords.
    return f"`{name}`"


# --- schema -----------------------------------------------------------------


def unique_id_constraint(label: str, key: str = "id") -> str:
    """``CREATE CONSTRAINT … IF NOT EXISTS`` making ``key`` unique on ``label``.

    The constraint is also the index every ``MERGE``/``MATCH`` by id uses.
    """
    q_label, q_key = quote_name(label), quote_name(key, "property")
    return (
        f"CREATE CONSTRAINT {quote_name(f'graphkit_{label}_{key}'[:64], 'constraint')}"
        f" IF NOT EXISTS FOR (n:{q_label}) REQUIRE n.{q_key} IS UNIQUE"
    )


def property_index(label: str, prop: str) -> str:
    """``CREATE INDEX … IF NOT EXISTS`` on one property of a label (range index)."""
    q_label, q_prop = quote_name(label), quote_name(prop, "property")
    return (
        f"CREATE INDEX {quote_name(f'graphkit_{label}_{prop}'[:64], 'index')}"
        f" IF NOT EXISTS FOR (n:{q_label}) ON (n.{q_prop})"
    )


AWAIT_INDEXES = "CALL db.awaitIndexes($seconds)"


# --- loads ------------------------------------------------------------------


def merge_nodes(label: str, props: Sequence[str] = ()) -> str:
    """Upsert a batch of ``label`` nodes sent column-wise.

    Parameters: ``$ids`` (the node ids) and ``$c0``, ``$c1``, … (one list per
    property in ``props``, same order and length). Columns instead of one map
    per row: the driver packs ~3× less, and the client shares 2 cores with the
    server. ``SET n += {…}`` with a null value removes that property, so nulls
    are never stored and a rerun after a value became null converges.
    """
    return (
        "UNWIND range(0, size($ids) - 1) AS i"
        f" MERGE (n:{quote_name(label)} {{id: $ids[i]}})"
        f" SET n += {_props_map(props)} RETURN count(n) AS written"
    )


def merge_relationships(
    rel_type: str, source_label: str, target_label: str, props: Sequence[str] = ()
) -> str:
    """Upsert a batch of typed relationships sent column-wise.

    Parameters: ``$sources``, ``$targets`` (node ids) and ``$c0``, … as in
    :func:`merge_nodes`. Both ends are matched by label and id (the constraint
    index); a row whose end is missing matches nothing and is not counted.
    """
    return (
        "UNWIND range(0, size($sources) - 1) AS i"
        f" MATCH (a:{quote_name(source_label)} {{id: $sources[i]}})"
        f" MATCH (b:{quote_name(target_label)} {{id: $targets[i]}})"
        f" MERGE (a)-[r:{quote_name(rel_type, 'relationship type')}]->(b)"
        f" SET r += {_props_map(props)} RETURN count(r) AS written"
    )


def _props_map(props: Sequence[str]) -> str:
    # Property names are spliced (quoted); their values are parameters $c<n>.
    entries = ", ".join(f"{quote_name(p, 'property')}: $c{i}[i]" for i, p in enumerate(props))
    return "{" + entries + "}"


def count_nodes(labels: Iterable[str]) -> str:
    """One row ``{label, count}`` per label, 0 for an absent one (a bare
    ``MATCH … count()`` grouped by the label literal would return no row)."""
    parts = [
        f"RETURN {_string_literal(lab)} AS label, COUNT {{ (:{quote_name(lab)}) }} AS count"
        for lab in labels
    ]
    if not parts:
        raise StoreError("no labels to count")
    return " UNION ALL ".join(parts)


def count_relationships(rel_types: Iterable[str]) -> str:
    """One row ``{type, count}`` per relationship type."""
    parts = [
        f"RETURN {_string_literal(t)} AS type,"
        f" COUNT {{ ()-[:{quote_name(t, 'relationship type')}]->() }} AS count"
        for t in rel_types
    ]
    if not parts:
        raise StoreError("no relationship types to count")
    return " UNION ALL ".join(parts)


def delete_nodes_batch(label: str) -> str:
    """Detach-delete up to ``$limit`` nodes of ``label``; returns ``deleted``.

    Run repeatedly until it deletes fewer than ``$limit``: one transaction per
    batch keeps the transaction state (and the heap) bounded.
    """
    return (
        f"MATCH (n:{quote_name(label)}) WITH n LIMIT $limit"
        " DETACH DELETE n RETURN count(*) AS deleted"
    )


def create_load_marker(label: str) -> str:
    """One marker node saying a replace-load of ``$labels`` is under way."""
    return (f"CREATE (m:{quote_name(label)} {{labels: $labels, started_at: datetime()}})"
            " RETURN count(m) AS written")


def delete_load_markers(label: str) -> str:
    """Remove every load marker: the load they announced is complete."""
    return f"MATCH (m:{quote_name(label)}) DELETE m RETURN count(*) AS deleted"


def _string_literal(name: str) -> str:
    # Only ever called on names quote_name accepted: no quotes or backslashes.
    quote_name(name)
    return f"'{name}'"


# --- lineage reads (default contract: Session, Thread, Agent) ----------------

# Thread hits by user-facing id or agent id, Session hits by session id.
# UNION (not UNION ALL) drops a thread matched by both its ids; three
# branches instead of an OR so each one is an index seek.
RESOLVE = """
MATCH (t:Thread) WHERE t.thread_id = $id
RETURN 'Thread' AS type, t.id AS node_id, t.thread_id AS id, t.session_id AS session_id
UNION
MATCH (t:Thread) WHERE t.agent_id = $id
RETURN 'Thread' AS type, t.id AS node_id, t.thread_id AS id, t.session_id AS session_id
UNION
MATCH (s:Session) WHERE s.session_id = $id
RETURN 'Session' AS type, s.id AS node_id, s.session_id AS id, s.session_id AS session_id
"""

# The PARENT_THREAD edges above (or below) a thread, in one round trip; the
# store walks them in Python with exactly the NetworkX store's rules (nearest
# first, smallest parent id on a fork, stop before a node already seen).
# Variable-length patterns never reuse a relationship, so they end even on a
# cycle, and DISTINCT on the end nodes lets the planner prune to one visit per
# node instead of enumerating every path.
PARENT_EDGES = """
MATCH (:Thread {id: $id})-[:PARENT_THREAD*0..]->(c)-[:PARENT_THREAD]->(p)
RETURN DISTINCT c.id AS child, p.id AS node_id, p.thread_id AS id, p.session_id AS session_id
"""

CHILD_EDGES = """
MATCH (:Thread {id: $id})<-[:PARENT_THREAD*0..]-(c)<-[:PARENT_THREAD]-(d)
RETURN DISTINCT c.id AS parent, d.id AS node_id, d.thread_id AS id, d.session_id AS session_id
"""

# min()/head(collect()) keep one row per thread even if a thread had two
# parents or two agents; ordering makes the pick deterministic.
SESSION_THREADS = """
MATCH (:Session {session_id: $id})-[:HAS_THREAD]->(t:Thread)
OPTIONAL MATCH (t)-[:PARENT_THREAD]->(p)
WITH DISTINCT t, min(p.id) AS parent
OPTIONAL MATCH (t)-[:HAS_AGENT]->(a:Agent)
WITH t, parent, a ORDER BY a.id
WITH t, parent, head(collect(a)) AS a
RETURN t.id AS node_id, t.thread_id AS id, parent AS parent_node_id, t.kind AS kind,
       a.agent_type AS agent_type, a.description AS description, t.messages AS messages
ORDER BY id, node_id
"""

SESSIONS = """
MATCH (s:Session)
RETURN s.session_id AS session_id,
       COUNT { (s)-[:HAS_THREAD]->() } AS threads,
       size(COLLECT { MATCH (s)-[:HAS_THREAD]->()-[:HAS_AGENT]->(a:Agent) RETURN DISTINCT a })
           AS agents,
       coalesce(s.messages, 0) AS messages,
       s.first_seen AS first_seen, s.last_seen AS last_seen
ORDER BY session_id
"""
