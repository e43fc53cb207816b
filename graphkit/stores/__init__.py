"""The enrich stage's stores: where a projected graph is loaded and queried.

``base`` is the interface every store implements; ``networkx_store`` is the
embedded default; ``neo4j`` talks to a real server. A snapshot read in place
(:mod:`graphkit.snapshot.reader`) implements the same interface.
"""
