"""usage, files and continues: the NetworkX store, the snapshot reader and a real
Neo4j give identical answers (generated rows with known usage, files and
continuations, and the HypAware fixture), through the library and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphkit.builds.run import build
from graphkit.core.graph import GraphTables
from graphkit.enrich.base import LineageReader
from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
from graphkit.enrich.networkx_store import NetworkXStore
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.queries.continuations import continued_by, continues
from graphkit.queries.files import touches
from graphkit.queries.lineage import lineage
from graphkit.queries.usage import require_sessions, session_usage
from graphkit.queries.window import Window
from graphkit.snapshot import write_snapshot
from tests.helpers.cli import graphkit
from tests.helpers.paths import CACHE
from tests.helpers.rows import table
from tests.helpers.usage_rows import generate


def answers(reader: LineageReader) -> dict[str, Any]:
    sids = require_sessions(reader, [])
    usage = session_usage(reader, sids)
    some = sids[len(sids) // 3]
    return {
        "usage": [u.to_json() for u in usage],
        "by_model": [{t.id: {m: tok.to_json() for m, tok in t.by_model.items()}
                      for t in u.threads} for u in usage],
        "window": [u.to_json() for u in session_usage(reader, [some], Window(None, None))],
        "files": [(f.to_json(), f.first_seen, f.last_seen) for f in touches(reader)],
        "files_one": [f.to_json() for f in touches(reader, [some], "*.py")],
        "continues": {s: [c.to_json() for c in continues(reader, s)] for s in sids},
        "continued_by": {s: [c.to_json() for c in continued_by(reader, s)] for s in sids},
        "lineage": [lineage(reader, s).to_json() for s in sids],
    }


@pytest.mark.parametrize("source", ["generated", "hypaware"])
def test_same_usage_files_and_continues(source: str, store: Neo4jStore,
                                        tmp_path: Path) -> None:
    graph: GraphTables = (build(table(generate()[0])) if source == "generated"
                          else build(CACHE)).graph
    nx = NetworkXStore()
    nx.load(graph)
    write_snapshot(graph, tmp_path / "snap")
    store.load(graph, if_exists="replace")
    want = answers(nx)
    assert want["usage"] and (want["files"] or source == "hypaware")
    if source == "generated":
        assert any(want["continues"].values())
    assert answers(SnapshotReader(tmp_path / "snap")) == want
    assert answers(store) == want


def test_cli_usage_and_files_on_neo4j_print_what_the_snapshot_prints(
        store: Neo4jStore, neo4j_config: Neo4jConfig, tmp_path: Path) -> None:
    graph = build(table(generate()[0])).graph
    write_snapshot(graph, tmp_path / "snap")
    store.load(graph, if_exists="replace")
    env = {"NEO4J_URI": neo4j_config.uri, "NEO4J_USERNAME": neo4j_config.user,
           "NEO4J_PASSWORD": neo4j_config.password or ""}
    if neo4j_config.database:
        env["NEO4J_DATABASE"] = neo4j_config.database
    for args in (["usage", "--json"], ["usage", "--by", "model", "--json"],
                 ["files", "--json"], ["files", "--path", "src/app.py", "--json"]):
        snap = graphkit(*args, "--snapshot", tmp_path / "snap", env=env)
        neo = graphkit(*args, "--neo4j", env=env)
        assert snap.returncode == 0 and neo.returncode == 0, neo.output
        assert snap.output and neo.output == snap.output, args
    lin = graphkit("lineage", "c1a0de00-0000-4000-8000-000000000003", "--neo4j", "--json", env=env)
    assert [c["how"] for c in json.loads(lin.output)["continues"]] == [
        "compaction", "branch", "resume"]
