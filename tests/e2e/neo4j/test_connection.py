"""Neo4j under hostile settings and faults: bad URIs, credentials in the URI, a
missing driver, driver noise, a replace-load killed midway, test-database safety."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from graphkit.core.errors import StoreError
from graphkit.enrich.neo4j.store import LOAD_MARKER, Neo4jConfig, Neo4jStore
from graphkit.snapshot import write_snapshot
from tests.helpers.cli import AS_SCRIPT, Ran, graphkit, no_neo4j_env, spawn
from tests.helpers.neo4j_server import named_test_server, neo4j_env
from tests.helpers.paths import REPO
from tests.helpers.rows import identity_cases, write_parquet
from tests.helpers.store_graphs import chain_graph

SECRET = "Sup3r-Secret-Pw"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_script(*args: object, env: dict[str, str] | None = None) -> Ran:
    """The CLI in its own process, started by a script: real stderr, logging's last-resort
    handler included; none of the session's NEO4J_* variables."""
    return graphkit(*args, env=no_neo4j_env(**(env or {})), cwd=REPO, process=True,
                    entry=AS_SCRIPT)


def assert_one_clean_line(done: Ran, *secrets: str) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    text = done.stdout + done.stderr
    assert "Traceback" not in text
    assert len(text.strip().splitlines()) == 1, text
    for s in secrets:
        assert s not in text, text
    return text


# --- URIs and credentials ---------------------------------------------------------


@pytest.mark.parametrize(("uri", "expect"), [
    ("bolt://h:notaport", "port 'notaport'"),
    ("bolt://h:99999", "port '99999'"),
    (f"bolt://neo4j:{SECRET}@h:notaport", "port 'notaport'"),
    ("bolt://[::1", "not scheme://host"),
    (f"http://neo4j:{SECRET}@127.0.0.1:7474", "graphkit speaks Bolt"),
    (f"neo4j:{SECRET}@localhost", "not scheme://host"),
    ("bolt://", "names no host"),
])
def test_bad_uris_are_one_line_without_secrets(uri: str, expect: str) -> None:
    with pytest.raises(StoreError, match=expect) as info:
        Neo4jStore(Neo4jConfig.from_env(uri=uri))
    assert SECRET not in str(info.value) and "\n" not in str(info.value)
    done = run_script("sessions", "--neo4j", env={"NEO4J_URI": uri})
    assert expect in assert_one_clean_line(done, SECRET)


def test_credentials_in_the_uri_are_used_and_never_shown(
    neo4j_config: Neo4jConfig, store: Neo4jStore
) -> None:
    host = neo4j_config.uri.split("://", 1)[1]
    with_creds = f"bolt://{neo4j_config.user}:{neo4j_config.password}@{host}"
    cfg = Neo4jConfig.from_env(uri=with_creds)
    assert neo4j_config.password and neo4j_config.password not in cfg.uri
    assert (cfg.user, cfg.password) == (neo4j_config.user, neo4j_config.password)
    ok = run_script("sessions", "--neo4j", "--json", env={"NEO4J_URI": with_creds})
    assert ok.returncode == 0 and ok.stdout.strip() == "", ok.stderr  # JSON Lines: none
    # Wrong password in the URI: refused, and neither password is printed.
    wrong = run_script("sessions", "--neo4j", env={"NEO4J_URI": f"bolt://neo4j:{SECRET}@{host}"})
    assert "refused the credentials" in assert_one_clean_line(wrong, SECRET)
    # Unreachable, with the password percent-encoded in the URI.
    gone = run_script("lineage", "x", "--neo4j",
                    env={"NEO4J_URI": f"bolt://neo4j:{SECRET}%21@127.0.0.1:{free_port()}"})
    assert "cannot reach Neo4j at bolt://127.0.0.1:" in assert_one_clean_line(
        gone, SECRET, "%21")


def test_redact_covers_driver_text() -> None:
    cfg = Neo4jConfig(uri="bolt://u:p@h:1", password=SECRET)
    text = f"failed for 'bolt://alice:{SECRET}@h:1' and {SECRET}"
    assert SECRET not in cfg.redact(text) and "alice" not in cfg.redact(text)


def test_missing_driver_is_one_line_naming_pip_install(tmp_path: Path) -> None:
    # A driver that cannot be imported, as in an environment without it.
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text("import sys\nsys.modules['neo4j'] = None\n")
    done = run_script("sessions", "--neo4j",
                    env={"PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}",
                         "NEO4J_URI": "bolt://127.0.0.1:7687"})
    text = assert_one_clean_line(done)
    assert "pip install" in text and "neo4j" in text


# --- driver noise -------------------------------------------------------------------


def test_queries_on_a_database_without_the_graph_print_no_driver_warnings(
    neo4j_config: Neo4jConfig, store: Neo4jStore
) -> None:
    env = neo4j_env(neo4j_config)
    listed = run_script("sessions", "--neo4j", env=env)
    assert listed.returncode == 0 and listed.stderr == "", listed.stderr
    missing = run_script("lineage", "no-such-id", "--neo4j", env=env)
    assert "no thread, agent or session" in assert_one_clean_line(missing)
    tree = run_script("tree", "no-such-id", "--neo4j", env=env)
    assert "notification" not in tree.stderr.lower() and "MATCH" not in tree.stderr


# --- a replace-load killed midway ---------------------------------------------------


def test_replace_killed_midway_then_rerun_converges(
    neo4j_config: Neo4jConfig, store: Neo4jStore, tmp_path: Path
) -> None:
    """README: "`load --if-exists replace` killed midway leaves part of the new
    graph (and says so); run the same command again and it converges"."""
    graph = chain_graph(sessions=1000, threads_per_session=8)
    want_nodes, want_edges = graph.node_counts(), graph.edge_counts()
    snap = tmp_path / "snap"
    write_snapshot(graph, snap)
    store.load(graph)  # the old graph, as a user would have it
    env = no_neo4j_env(**neo4j_env(neo4j_config))
    proc = spawn("load", snap, "--if-exists", "replace", "--batch-size", "200", env=env,
                 cwd=REPO, entry=AS_SCRIPT)
    seen = 0
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        threads = store.node_counts(["Thread"])["Thread"]
        if store.interrupted_load() and 1000 < threads < want_nodes["Thread"]:
            seen = threads
            break  # deleted, and part of the new graph written
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert seen, "the kill did not land midway through the replace"
    assert store.interrupted_load()  # the database says it is incomplete
    assert sum(store.node_counts(sorted(want_nodes)).values()) < sum(want_nodes.values())

    rerun = graphkit("load", snap, "--if-exists", "replace", "--json", env=env, cwd=REPO,
                     process=True, entry=AS_SCRIPT)
    assert rerun.returncode == 0, rerun.stderr
    assert '"resumed_replace": true' in rerun.stdout
    assert store.node_counts(sorted(want_nodes)) == want_nodes
    assert store.relationship_counts(sorted(want_edges)) == want_edges
    assert not store.interrupted_load()


# --- the tests' own safety -----------------------------------------------------------


def test_the_tests_never_read_neo4j_uri() -> None:
    users_db = {"NEO4J_URI": "bolt://users-production-db:7687", "NEO4J_PASSWORD": "theirs"}
    assert named_test_server(users_db) is None  # so the tests start their own server
    named = named_test_server({**users_db, "GRAPHKIT_TEST_NEO4J_URI": "bolt://scratch:7687",
                               "GRAPHKIT_TEST_NEO4J_PASSWORD": "pw"})
    assert named is not None and (named.uri, named.password) == ("bolt://scratch:7687", "pw")


def test_neo4j_server_without_a_password_says_so_loudly() -> None:
    proc = spawn("neo4j-server", "--port", free_port(), env=no_neo4j_env(), cwd=REPO,
                 entry=AS_SCRIPT, stdout=subprocess.DEVNULL)
    assert proc.stderr is not None
    try:
        first = proc.stderr.readline()  # said before anything starts
        time.sleep(3)  # into the wait for the server, whose start Ctrl-C then undoes
        proc.send_signal(signal.SIGINT)
        proc.wait(120)
    finally:
        if proc.poll() is None:  # a failing test leaves no server behind
            proc.kill()
            proc.wait()
    assert "NO authentication" in first and "--password-env" in first, first


def test_neo4j_server_password_env_must_be_set() -> None:
    done = run_script("neo4j-server", "--password-env", "GRAPHKIT_TEST_UNSET_VARIABLE")
    assert "GRAPHKIT_TEST_UNSET_VARIABLE" in assert_one_clean_line(done)


def test_snapshot_load_marker_label_is_a_plain_name() -> None:
    from graphkit.core.names import is_name

    assert is_name(LOAD_MARKER)


def test_identity_rows_load_through_the_cli_with_credentials_only_in_the_uri(
    neo4j_config: Neo4jConfig, store: Neo4jStore, tmp_path: Path
) -> None:
    src = write_parquet(identity_cases(), tmp_path / "rows.parquet")
    host = neo4j_config.uri.split("://", 1)[1]
    uri = f"bolt://{neo4j_config.user}:{neo4j_config.password}@{host}"
    done = run_script("build", src, "--store", "neo4j", "--rejects", tmp_path / "rejects.jsonl",
                    "--json", env={"NEO4J_URI": uri})
    assert done.returncode == 0, done.stderr
    assert store.node_counts(["Thread"]) == {"Thread": 5}
    assert neo4j_config.password and neo4j_config.password not in done.stdout + done.stderr
