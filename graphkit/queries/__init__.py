"""Questions asked of a loaded graph: sessions, subagent lineage, session trees.

:mod:`graphkit.queries.lineage` holds the store-independent functions;
:mod:`graphkit.queries.cypher` the pure Cypher builders the Neo4j store uses.
"""
