"""graphkit view from Neo4j: the same page data as from the snapshot it was loaded from."""

from __future__ import annotations

from pathlib import Path

from graphkit.builds.run import build
from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.snapshot import write_snapshot
from graphkit.view import session_view
from tests.helpers.cli import graphkit

DEEP = "8299ed6e-811c-4fa7-b124-c205cd625a7f"  # depth-4 Claude subagents
CODEX = "b40de56d-1cd8-4fc1-a309-66194791c2e9"  # Codex child threads


def test_view_data_is_the_same_from_neo4j(store: Neo4jStore, neo4j_config: Neo4jConfig,
                                          sample_rows: Path, tmp_path: Path) -> None:
    graph = build(sample_rows).graph
    write_snapshot(graph, tmp_path / "snap")
    store.load(graph)
    for session in (DEEP, CODEX):
        a = session_view(SnapshotReader(tmp_path / "snap"), session)
        b = session_view(store, session)
        assert a["threads"] == b["threads"], session
        assert a["session"] == b["session"], session
        assert all(t["model"] and t["last_seen"] for t in b["threads"])
    env = {"NEO4J_URI": neo4j_config.uri, "NEO4J_USERNAME": neo4j_config.user,
           "NEO4J_PASSWORD": neo4j_config.password or ""}
    if neo4j_config.database:
        env["NEO4J_DATABASE"] = neo4j_config.database
    out = tmp_path / "v.html"
    r = graphkit("view", DEEP, "--neo4j", "--out", out, env=env)
    assert r.returncode == 0, r.output
    assert "818d8962058765a6" in out.read_text()
    r = graphkit("view", DEEP, "--neo4j", "--include-content", "--out", out, env=env)
    assert r.returncode == 2 and "--snapshot DIR" in r.output
