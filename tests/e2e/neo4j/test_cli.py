"""The CLI against a real Neo4j: build --store neo4j, load, and --neo4j queries
that print exactly what the snapshot path prints."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
from tests.helpers.cli import Ran, graphkit
from tests.helpers.neo4j_server import neo4j_env
from tests.helpers.rows import CLAUDE, CODEX_CHILD, identity_cases, write_parquet


def run(cfg: Neo4jConfig, *args: str | Path) -> Ran:
    return graphkit(*args, env=neo4j_env(cfg))


def test_build_to_neo4j_then_same_answers_as_snapshot(
    store: Neo4jStore, neo4j_config: Neo4jConfig, tmp_path: Path, sample_rows: Path
) -> None:
    snap = tmp_path / "snap"
    r = run(neo4j_config, "build", sample_rows, "--snapshot", snap, "--store", "neo4j",
            "--if-exists", "replace", "--json")
    assert r.returncode == 0, r.output
    summary = json.loads(r.output)
    assert summary["neo4j"]["nodes"]["Thread"] == summary["nodes"]["Thread"]
    sessions_snap = run(neo4j_config, "sessions", "--snapshot", snap, "--json").output
    sessions_neo = run(neo4j_config, "sessions", "--neo4j", "--json").output
    assert sessions_neo == sessions_snap
    ids = [json.loads(line)["session_id"] for line in sessions_snap.splitlines()]
    threads = store.node_counts(["Thread"])["Thread"]
    assert threads == summary["nodes"]["Thread"]
    tid = "818d8962058765a6"  # the quick start's depth-4 subagent
    a = run(neo4j_config, "lineage", tid, *ids[:3], "--snapshot", snap, "--json")
    b = run(neo4j_config, "lineage", tid, *ids[:3], "--neo4j", "--json")
    assert a.returncode == 0 and a.output == b.output
    assert len(json.loads(a.output.splitlines()[0])["ancestors"]) == 5
    for sid in ids[:4]:
        assert run(neo4j_config, "tree", sid, "--neo4j", "--json").output == run(
            neo4j_config, "tree", sid, "--snapshot", snap, "--json").output


def test_load_snapshot_with_each_policy(
    store: Neo4jStore, neo4j_config: Neo4jConfig, tmp_path: Path
) -> None:
    src = write_parquet(identity_cases(), tmp_path / "rows.parquet")
    snap = tmp_path / "snap"
    assert graphkit("build", src, "--snapshot", snap).returncode == 0
    first = run(neo4j_config, "load", snap, "--json")
    assert first.returncode == 0, first.output
    assert json.loads(first.output.splitlines()[-1])["write_mode"] == "create"  # empty target
    counts = store.node_counts(["Session", "Thread", "Agent"])
    assert counts == {"Session": 2, "Thread": 5, "Agent": 2}
    again = run(neo4j_config, "load", snap)  # merge: a rerun converges
    assert again.returncode == 0 and "loaded" in again.output and "(merged," in again.output
    assert store.node_counts(["Session", "Thread", "Agent"]) == counts
    assert store.relationship_counts(["PARENT_THREAD"]) == {"PARENT_THREAD": 3}
    refused = run(neo4j_config, "load", snap, "--if-exists", "fail")
    assert refused.returncode == 2 and "Traceback" not in refused.output
    replaced = run(neo4j_config, "load", snap, "--if-exists", "replace", "--json")
    assert replaced.returncode == 0
    assert store.node_counts(["Session", "Thread", "Agent"]) == counts
    out = run(neo4j_config, "lineage", "agentB", CODEX_CHILD, "--neo4j", "--json").output
    first_line = json.loads(out.splitlines()[0])
    assert first_line["ancestors"][-1] == {"type": "Session", "id": CLAUDE}


def test_wrong_password_is_one_line_and_never_echoed(neo4j_config: Neo4jConfig) -> None:
    if neo4j_config.password is None:
        pytest.fail("the test server must have authentication on for this test")
    bad = Neo4jConfig(uri=neo4j_config.uri, user=neo4j_config.user,
                      password="not-the-Password-123", database=neo4j_config.database)
    r = run(bad, "sessions", "--neo4j")
    assert r.returncode == 2
    assert "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert "not-the-Password-123" not in r.output


def test_connection_refused_is_one_line() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = Neo4jConfig(uri=f"bolt://127.0.0.1:{port}", password="secret-pw-9")
    r = run(cfg, "lineage", "x", "--neo4j")
    assert r.returncode == 2
    assert "Traceback" not in r.output and "secret-pw-9" not in r.output
    assert len(r.output.strip().splitlines()) == 1
