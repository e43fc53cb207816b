"""Reading a whole graph back out of Neo4j as tables (``graphkit snapshot
--neo4j``): every node and relationship, whoever wrote them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from graphkit.core.errors import StoreError
from graphkit.core.graph import EDGE_SOURCE, EDGE_TARGET, NODE_ID, EdgeTable, GraphTables, NodeTable
from graphkit.enrich.neo4j import convert, cypher
from graphkit.enrich.neo4j.connection import Neo4jConnection
from graphkit.enrich.neo4j.load import LOAD_MARKER
from graphkit.enrich.neo4j.lock import LOCK_LABEL

# Labels of bookkeeping nodes that are no part of any graph, so never read back as one:
# the load marker and lock, and the node the test suite leaves in a database it may clear.
TEST_DATABASE_MARKER = "GraphkitTestDatabase"
BOOKKEEPING_LABELS = frozenset({LOAD_MARKER, LOCK_LABEL, TEST_DATABASE_MARKER})


def read_graph(db: Neo4jConnection, labels: Sequence[str] | None = None,
               rel_types: Sequence[str] | None = None) -> GraphTables:
    """What :meth:`Neo4jStore.read_graph <graphkit.enrich.neo4j.store.Neo4jStore.read_graph>`
    does (its docstring says what comes back)."""
    # The token lists keep names whose nodes were all deleted: keep those in use.
    if labels is None:
        labels = [r["label"] for r in db.read(
            "CALL db.labels() YIELD label RETURN label ORDER BY label")
            if r["label"] not in BOOKKEEPING_LABELS
            and db.read(f"MATCH (n:{cypher.quote_name(r['label'])}) RETURN 1 LIMIT 1")]
    if rel_types is None:
        rel_types = [r["t"] for r in db.read(
            "CALL db.relationshipTypes() YIELD relationshipType AS t RETURN t ORDER BY t")
            if db.read(f"MATCH ()-[:{cypher.quote_name(r['t'], 'relationship type')}]->()"
                          " RETURN 1 LIMIT 1")]
    for name in labels:
        cypher.quote_name(name)
    for name in rel_types:
        cypher.quote_name(name, "relationship type")
    graph = GraphTables("neo4j", 0, 0, "thread")
    for label in labels:
        graph.nodes[label] = NodeTable(label, (), _read_nodes(db, label))
    for rel_type in rel_types:
        graph.edges[rel_type] = _read_relationships(db, rel_type)
    return graph

def _read_nodes(db: Neo4jConnection, label: str) -> pa.Table:
    query = (f"MATCH (n:{cypher.quote_name(label)}) "
             "RETURN coalesce(n.id, elementId(n)) AS id, properties(n) AS p ORDER BY id")

    def work(tx: Any) -> tuple[list[str], list[dict[str, Any]]]:
        ids, props = [], []
        for r in tx.run(query):
            ids.append(r["id"])
            props.append({k: v for k, v in r["p"].items() if k != NODE_ID})
        return ids, props

    with db.driver_errors(), db.driver_session() as session:
        ids, props = session.execute_read(work)
    return convert.property_table({NODE_ID: pa.array(ids, pa.string())}, props)

def _read_relationships(db: Neo4jConnection, rel_type: str) -> EdgeTable:
    query = (f"MATCH (a)-[r:{cypher.quote_name(rel_type, 'relationship type')}]->(b) "
             "RETURN coalesce(a.id, elementId(a)) AS s, coalesce(b.id, elementId(b)) AS t, "
             "labels(a) AS sl, labels(b) AS tl, properties(r) AS p ORDER BY s, t")

    def work(tx: Any) -> tuple[list[str], list[str], set[tuple[str, str]],
                               list[dict[str, Any]]]:
        src, dst, ends, props = [], [], set(), []
        for r in tx.run(query):
            src.append(r["s"])
            dst.append(r["t"])
            ends.add((":".join(sorted(r["sl"])), ":".join(sorted(r["tl"]))))
            props.append(dict(r["p"]))
        return src, dst, ends, props

    with db.driver_errors(), db.driver_session() as session:
        src, dst, ends, props = session.execute_read(work)
    if len(ends) > 1:
        raise StoreError(
            f"relationships of type {rel_type} join several label pairs "
            f"({', '.join(f'{a}->{b}' for a, b in sorted(ends))}); a graphkit edge type "
            "joins one", hint="name the relationship types to read")
    source_type, target_type = next(iter(ends)) if ends else ("", "")
    table = convert.property_table({EDGE_SOURCE: pa.array(src, pa.string()),
                                    EDGE_TARGET: pa.array(dst, pa.string())}, props)
    return EdgeTable(rel_type, source_type, target_type, table)
