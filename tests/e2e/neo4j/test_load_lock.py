"""The database's load lock under concurrency and interruption, against the test
session's real Neo4j server:

- a load behind a hung one waits a bounded time, then fails naming the holder and what
  to do (notes while waiting, none when piped);
- a load killed midway (SIGINT, SIGTERM, SIGKILL; create, merge, replace) leaves the
  database marked incomplete, which reads say, and the lock free: the same command run
  again, with no cleanup, completes the graph;
- ``load --engine spark`` holds the same lock while its executors write.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphkit.core.graph import GraphTables
from graphkit.enrich.neo4j.load import LOAD_MARKER
from graphkit.enrich.neo4j.lock import LOCK_LABEL, LoadLockTimeout
from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
from graphkit.export.from_neo4j import read_neo4j_graph
from graphkit.snapshot import write_snapshot
from tests.helpers.cli import AS_SCRIPT, Ran, graphkit, no_neo4j_env, spawn
from tests.helpers.neo4j_server import neo4j_env, wipe
from tests.helpers.paths import REPO
from tests.helpers.store_graphs import chain_graph


@pytest.fixture
def store(neo4j_config: Neo4jConfig) -> Iterator[Neo4jStore]:
    with Neo4jStore(neo4j_config, batch_size=1000) as s:
        wipe(s)
        yield s


def cli_env(cfg: Neo4jConfig, **extra: str) -> dict[str, str | None]:
    return no_neo4j_env(GRAPHKIT_LOAD_LOCK_WAIT=None, **neo4j_env(cfg), **extra)


def run_script(env: dict[str, str | None], *args: object, timeout: float = 300) -> Ran:
    return graphkit(*args, env=env, cwd=REPO, process=True, entry=AS_SCRIPT, timeout=timeout)


def start_load(env: dict[str, str | None], snap: Path, *args: str) -> subprocess.Popen[str]:
    return spawn("load", snap, *args, env=env, cwd=REPO, entry=AS_SCRIPT)


def wait_midway(store: Neo4jStore, proc: subprocess.Popen[str], low: int, high: int,
                before: int = -1) -> int:
    """Poll until the database holds more than ``low`` and fewer than ``high`` Thread
    nodes, and not ``before`` (what it held before the load began): the load is
    midway. The count seen then (0: never, the load ended first)."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        threads = store.node_counts(["Thread"])["Thread"]
        if low < threads < high and threads != before:
            return threads
        time.sleep(0.02)
    return 0


def snapshot_of(graph: GraphTables, folder: Path) -> Path:
    write_snapshot(graph, folder)
    return folder


def assert_whole(store: Neo4jStore, graph: GraphTables) -> None:
    """Exactly ``graph`` in the database, no marker, no lock node."""
    assert store.node_counts(sorted(graph.nodes)) == graph.node_counts()
    assert store.relationship_counts(sorted(graph.edges)) == graph.edge_counts()
    assert not store.interrupted_load()
    assert store.read(f"MATCH (l:{LOCK_LABEL}) RETURN count(l) AS c")[0]["c"] == 0


# --- 1. a bounded wait behind a hung load ----------------------------------------------


def test_a_load_behind_a_hung_one_gives_up_naming_it_and_its_death_frees_the_lock(
        store: Neo4jStore, neo4j_config: Neo4jConfig, tmp_path: Path) -> None:
    # Was: the second load waited for ever behind a load whose client hung (stopped
    # here with SIGSTOP: its connection stays open, so the server keeps its lock).
    graph = chain_graph(sessions=300, threads_per_session=4)
    snap = snapshot_of(graph, tmp_path / "snap")
    env = cli_env(neo4j_config)
    hung = start_load(env, snap, "--batch-size", "20", "--workers", "1")
    try:
        assert wait_midway(store, hung, 0, 1200), hung.communicate()
        hung.send_signal(signal.SIGSTOP)
        started = time.monotonic()
        behind = run_script({**env, "GRAPHKIT_LOAD_LOCK_WAIT": "4"}, "load", snap)
        waited = time.monotonic() - started
        assert behind.returncode != 0, behind.stdout
        line = behind.stderr.strip()
        assert "\n" not in line, line  # one line, and no progress notes: stderr is piped
        assert "the database's load lock is held by graphkit load (engine driver, " \
               f"pid {hung.pid} on " in line, line
        assert "gave up after waiting 4 s" in line and "TERMINATE TRANSACTION '" in line
        assert "--lock-wait SECONDS or GRAPHKIT_LOAD_LOCK_WAIT" in line
        assert 4 <= waited < 60, waited
        # The option wins over the variable; 0: do not wait at all.
        now = run_script({**env, "GRAPHKIT_LOAD_LOCK_WAIT": "600"}, "load", snap,
                         "--lock-wait", "0", timeout=60)
        assert now.returncode != 0 and "gave up after waiting 0 s" in now.stderr
        # Killed while stopped: its connection closes and the server rolls its lock
        # transaction back, so the next load needs no cleanup.
        hung.send_signal(signal.SIGKILL)
        hung.wait(30)
        after = run_script(env, "load", snap, "--lock-wait", "60", "--json")
        assert after.returncode == 0, after.stderr
        assert_whole(store, graph)
    finally:
        if hung.poll() is None:
            hung.kill()
            hung.wait(30)


def test_a_waiting_load_notes_who_holds_the_lock_and_writes_nothing(
        store: Neo4jStore) -> None:
    graph = chain_graph(sessions=20, threads_per_session=2)
    notes: list[str] = []
    with store.load_lock():
        with pytest.raises(LoadLockTimeout) as timed_out:
            store.load(graph, lock_wait=2.5, progress=notes.append)
        assert store.node_counts(["Session", "Thread"]) == {"Session": 0, "Thread": 0}
        assert not store.interrupted_load()  # it never began writing
    waiting = [n for n in notes if n.startswith("waiting for the load lock of ")]
    assert waiting, notes
    assert f"held by graphkit load (engine driver, pid {os.getpid()} on " in waiting[-1]
    assert "giving up in " in waiting[0]
    assert "\n" not in str(timed_out.value)
    store.load(graph, lock_wait=5)  # released: taken at once
    assert_whole(store, graph)
    # inf: waits for ever (here until the holder lets go), noting it meanwhile.
    notes.clear()
    with store.load_lock():
        behind = threading.Thread(target=store.load, args=(graph,),
                                  kwargs={"lock_wait": float("inf"), "progress": notes.append,
                                          "if_exists": "replace"})
        behind.start()
        time.sleep(3)
        assert behind.is_alive()
    behind.join(120)
    assert not behind.is_alive()
    assert any("giving up in never" in n for n in notes), notes
    assert_whole(store, graph)


# --- 2. what the lock leaves, and what reads show -----------------------------------


def test_the_lock_leaves_only_its_constraint_and_reads_never_show_it(
        store: Neo4jStore, neo4j_config: Neo4jConfig, tmp_path: Path) -> None:
    graph = chain_graph(sessions=20, threads_per_session=2)
    with store.load_lock(), pytest.raises(LoadLockTimeout):
        store.load(graph, lock_wait=0)  # a wait given up: nothing of it stays
    store.load(graph)
    assert_whole(store, graph)
    # What stays: one uniqueness constraint (named graphkit_load_lock unless an
    # equal one was there) and the label token; no node.
    constraints = store.read("SHOW CONSTRAINTS YIELD type, labelsOrTypes, properties")
    mine = [c for c in constraints if LOCK_LABEL in (c["labelsOrTypes"] or [])]
    assert mine == [{"type": "UNIQUENESS", "labelsOrTypes": [LOCK_LABEL],
                     "properties": ["name"]}]
    found = read_neo4j_graph(store, contract=None)
    assert LOCK_LABEL not in found.nodes and LOAD_MARKER not in found.nodes
    env = cli_env(neo4j_config)
    snap = run_script(env, "snapshot", "--neo4j", tmp_path / "back", "--no-contract")
    assert snap.returncode == 0 and snap.stderr == "", snap.stderr
    assert not any(LOCK_LABEL in p.name or LOAD_MARKER in p.name
                   for p in (tmp_path / "back").rglob("*"))
    listed = run_script(env, "sessions", "--neo4j", "--json")
    assert listed.returncode == 0 and listed.stderr == "", listed.stderr
    assert LOCK_LABEL not in listed.stdout


# --- 4. a load killed midway ---------------------------------------------------------


@pytest.mark.parametrize(("mode", "sig"), [
    ("create", signal.SIGINT), ("create", signal.SIGTERM), ("create", signal.SIGKILL),
    ("merge", signal.SIGINT), ("merge", signal.SIGTERM), ("merge", signal.SIGKILL),
    ("replace", signal.SIGINT), ("replace", signal.SIGTERM), ("replace", signal.SIGKILL),
])
def test_a_load_killed_midway_is_said_and_the_same_load_again_completes_it(
        store: Neo4jStore, neo4j_config: Neo4jConfig, tmp_path: Path, mode: str,
        sig: signal.Signals) -> None:
    # Was: a killed merge or create left half a graph that every read reported as
    # whole (only a replace left its marker, and no read said so).
    graph = chain_graph(sessions=300, threads_per_session=4)
    old = chain_graph(sessions=100, threads_per_session=4)  # ids a subset of graph's
    snap = snapshot_of(graph, tmp_path / "snap")
    want = graph.node_counts()["Thread"]
    low, before = 0, 0
    if mode != "create":
        store.load(old)
        before = old.node_counts()["Thread"]
        low = 0 if mode == "replace" else before  # replace: deleting counts too
    args = ["--if-exists", "replace" if mode == "replace" else "merge"]
    env = cli_env(neo4j_config)
    proc = start_load(env, snap, *args, "--batch-size", "20", "--workers", "1")
    seen = wait_midway(store, proc, low, want, before)
    proc.send_signal(sig)
    proc.wait(60)
    assert seen, f"the {sig.name} did not land midway: {proc.communicate()}"
    assert proc.returncode != 0
    # (b) the database says it is incomplete, and a plain read says so
    assert store.interrupted_load(), (seen, proc.communicate())
    assert store.node_counts(["Thread"])["Thread"] < want
    for read in (["sessions", "--neo4j", "--json"],
                 ["snapshot", "--neo4j", tmp_path / "back", "--no-contract"]):
        done = run_script(env, *read)
        assert done.returncode == 0, done.stderr
        assert "warning: the graph in " in done.stderr and " is incomplete: " in done.stderr
        assert "did not finish (killed or failed); run it again" in done.stderr, done.stderr
    # (a, c) the same command again: the lock was freed with the client, no cleanup
    again = run_script(env, "load", snap, *args, "--lock-wait", "60", "--json")
    assert again.returncode == 0, again.stderr
    assert_whole(store, graph)
    assert ('"resumed_replace": true' in again.stdout) == (mode == "replace")
    after = run_script(env, "sessions", "--neo4j", "--json")
    assert after.returncode == 0 and after.stderr == "", after.stderr


def test_a_load_running_now_is_said_as_running(
        store: Neo4jStore, neo4j_config: Neo4jConfig, tmp_path: Path) -> None:
    graph = chain_graph(sessions=300, threads_per_session=4)
    snap = snapshot_of(graph, tmp_path / "snap")
    env = cli_env(neo4j_config)
    proc = start_load(env, snap, "--batch-size", "20", "--workers", "1")
    try:
        assert wait_midway(store, proc, 0, graph.node_counts()["Thread"])
        proc.send_signal(signal.SIGSTOP)  # held midway, so the read below sees it
        done = run_script(env, "sessions", "--neo4j", "--json")
        assert "is incomplete: `graphkit load --if-exists merge` started " in done.stderr
        assert f"is running now (graphkit load (engine driver, pid {proc.pid} " \
               in done.stderr, done.stderr
    finally:
        proc.send_signal(signal.SIGCONT)
    _out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert_whole(store, graph)


# --- 3. Spark ------------------------------------------------------------------------


def test_a_spark_load_holds_the_load_lock(store: Neo4jStore, spark: Any) -> None:
    # Was: --engine spark took no lock: its executors wrote while another load held it.
    from graphkit.enrich.neo4j.spark import load_spark

    graph = chain_graph(sessions=50, threads_per_session=3)
    with store.load_lock():
        with pytest.raises(LoadLockTimeout, match="held by graphkit load"):
            load_spark(graph, store, spark, lock_wait=2)
        done: dict[str, Any] = {}

        def spark_load() -> None:
            try:
                done["report"] = load_spark(graph, store, spark, if_exists="replace")
            except BaseException as exc:
                done["error"] = exc

        behind = threading.Thread(target=spark_load)
        behind.start()
        time.sleep(4)
        assert behind.is_alive() and not done
        assert store.node_counts(["Session", "Thread"]) == {"Session": 0, "Thread": 0}
    behind.join(300)
    assert "error" not in done, done
    assert_whole(store, graph)
    # And while a Spark load holds it, a driver load waits (and gives up, here).
    notes: list[str] = []
    with store.load_lock(engine="spark"), pytest.raises(LoadLockTimeout):
        store.load(graph, lock_wait=1.5, progress=notes.append)
    assert any("held by graphkit load (engine spark" in n for n in notes), notes
