"""The enrich stage's stores: where a projected graph is loaded and queried.

``networkx_store`` is the embedded default; ``neo4j_store`` talks to a real
server. Both answer the same lineage questions (see :mod:`graphkit.queries`).
"""
