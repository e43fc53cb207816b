"""A Neo4j load reports records written of the total, batch by batch, with the label or
relationship type being written (against the real server)."""

from __future__ import annotations

from graphkit.enrich.neo4j.store import Neo4jStore
from tests.helpers.recording import RecordingProgress
from tests.helpers.store_graphs import lineage_graph

LOADING = "loading Neo4j"


def test_load_counts_every_record_batch_by_batch(store: Neo4jStore) -> None:
    g = lineage_graph()
    rec = RecordingProgress()
    store.load(g, batch_size=2, progress=rec)
    total = sum(g.node_counts().values()) + sum(g.edge_counts().values())
    assert rec.total(LOADING) == total
    assert rec.advanced(LOADING) == total
    steps = [e[2] for e in rec.of(LOADING) if e[0] == "advance"]
    assert max(steps) <= 2 and len(steps) >= total // 2  # one step per batch
    sources = [e[2] for e in rec.of(LOADING) if e[0] == "source"]
    # Batches run in parallel sessions, each naming its label or type; every node
    # batch is written before the first relationship batch.
    n_node_batches = sum(-(-n // 2) for n in g.node_counts().values())
    assert set(sources[:n_node_batches]) == set(g.nodes)
    assert set(sources[n_node_batches:]) == set(g.edges)
    assert rec.of(LOADING)[-1] == ("done", LOADING)
