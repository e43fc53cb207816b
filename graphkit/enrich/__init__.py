"""The enrich stage: where a projected graph is loaded, and walked.

:mod:`.base` is the interface every store implements; :mod:`.networkx_store` is the
embedded default; :mod:`.snapshot_store` answers from a snapshot's files in place (what
the query commands use by default); :mod:`.neo4j` loads into a real server and asks it.
:mod:`.walk` holds the lineage walking rules every store shares.
"""
