"""Neo4j load throughput: the batched store vs a naive per-row MERGE loop, and batch sizes.

Each run gets a fresh database: a new launcher (enrich/neo4j-launcher) on a new
temp data dir, so no run warms the page cache or the schema for the next.
Both loaders get the same schema (id uniqueness constraints + lookup indexes)
first, so the comparison isolates batching, not indexing.

    python -m bench.neo4j_load --repeat 2 --naive-rows 30000   # ~10 min on 2 cores
    python -m bench.neo4j_load --sessions 600 --batch-sizes 1000,5000 --naive-rows 5000

The graph mimics the default contract: Sessions, Threads (main loop + nested
subagents with PARENT_THREAD chains, or Codex root + child threads), Agents,
Workspaces, Models, with string/int/timestamp properties and some nulls.
"""

from __future__ import annotations

import argparse
import random
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa

from graphkit.core.graph import EdgeTable, GraphTables, NodeTable
from graphkit.stores.neo4j import cypher
from graphkit.stores.neo4j.server import start_local_neo4j
from graphkit.stores.neo4j.store import DEFAULT_BATCH_SIZE, Neo4jConfig, Neo4jStore

TS = pa.timestamp("us", tz="UTC")
_NS = uuid.UUID("0c6c1f7e-5b1a-4d38-9d7e-6a1b4c2d9e01")


def _id(label: str, key: str) -> str:
    return str(uuid.uuid5(_NS, f"{label}\x1f{key}"))


def make_graph(sessions: int, seed: int = 7) -> GraphTables:
    """About 14 nodes and 29 relationships per session."""
    rnd = random.Random(seed)
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    models = [f"model-{i}" for i in range(8)]
    workspaces = [f"/home/dev/repo-{i}" for i in range(max(1, sessions // 20))]
    s_rows: list[dict[str, Any]] = []
    t_rows: list[dict[str, Any]] = []
    a_rows: list[dict[str, Any]] = []
    has_thread, has_agent, parent, in_ws, used = [], [], [], [], []
    for s in range(sessions):
        sid = str(uuid.UUID(int=rnd.getrandbits(128), version=4))
        codex = rnd.random() < 0.3
        first = t0 + timedelta(seconds=rnd.randrange(10_000_000))
        s_node = _id("Session", sid)
        n_threads = rnd.randint(4, 12)
        total = 0
        nodes: list[str] = []
        for t in range(n_threads):
            agent = None if codex or t == 0 else f"a{rnd.getrandbits(48):012x}"
            tid = sid if t == 0 else (f"{sid[:8]}-{t}" if codex else agent)
            t_node = _id("Thread", f"{sid}/{agent or ''}/{tid}")
            msgs = rnd.randint(1, 200)
            total += msgs
            kind = "codex" if codex else ("main" if t == 0 else "subagent")
            t_rows.append(
                dict(id=t_node, thread_id=tid, thread_scope=sid if not codex else tid,
                     agent_id=agent, session_id=sid, kind=kind, messages=msgs)
            )  # fmt: skip
            has_thread.append((s_node, t_node))
            used.append((t_node, _id("Model", rnd.choice(models)), rnd.randint(1, msgs)))
            if t > 0:  # a parent among earlier threads: chains of any depth
                parent.append((t_node, nodes[rnd.randrange(max(0, t - 3), t)]))
            if agent:
                a_node = _id("Agent", agent)
                a_rows.append(
                    dict(id=a_node, agent_id=agent, agent_type=rnd.choice(
                        ["general-purpose", "Explore", "Plan", None]),
                        description=f"task {s}/{t}" if rnd.random() < 0.8 else None)
                )  # fmt: skip
                has_agent.append((t_node, a_node))
            nodes.append(t_node)
        s_rows.append(
            dict(id=s_node, session_id=sid, first_seen=first,
                 last_seen=first + timedelta(seconds=rnd.randrange(1, 20_000)),
                 messages=total, rows=total + rnd.randrange(50))
        )  # fmt: skip
        in_ws.append((s_node, _id("Workspace", rnd.choice(workspaces))))

    def nodes_table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
        return pa.Table.from_pylist(rows, schema=schema)

    def edges(
        rel: str, src: str, dst: str, pairs: list[tuple[Any, ...]], **extra: str
    ) -> EdgeTable:
        cols: dict[str, Any] = {"source": [p[0] for p in pairs], "target": [p[1] for p in pairs]}
        for i, name in enumerate(extra, start=2):
            cols[name] = [p[i] for p in pairs]
        return EdgeTable(rel, src, dst, pa.table(cols))

    s_schema = pa.schema([("id", pa.string()), ("session_id", pa.string()),
                          ("first_seen", TS), ("last_seen", TS),
                          ("messages", pa.int64()), ("rows", pa.int64())])  # fmt: skip
    t_schema = pa.schema([("id", pa.string()), ("thread_id", pa.string()),
                          ("thread_scope", pa.string()), ("agent_id", pa.string()),
                          ("session_id", pa.string()), ("kind", pa.string()),
                          ("messages", pa.int64())])  # fmt: skip
    a_schema = pa.schema([("id", pa.string()), ("agent_id", pa.string()),
                          ("agent_type", pa.string()), ("description", pa.string())])  # fmt: skip
    return GraphTables(
        "bench", 1, 1, "thread",
        nodes={
            "Session": NodeTable("Session", ("session_id",), nodes_table(s_rows, s_schema)),
            "Thread": NodeTable("Thread", ("thread_scope", "agent_id"),
                                nodes_table(t_rows, t_schema)),
            "Agent": NodeTable("Agent", ("agent_id",), nodes_table(a_rows, a_schema)),
            "Workspace": NodeTable("Workspace", ("cwd",), pa.table(
                {"id": [_id("Workspace", w) for w in workspaces], "cwd": workspaces})),
            "Model": NodeTable("Model", ("model",), pa.table(
                {"id": [_id("Model", m) for m in models], "model": models})),
        },
        edges={
            "HAS_THREAD": edges("HAS_THREAD", "Session", "Thread", has_thread),
            "HAS_AGENT": edges("HAS_AGENT", "Thread", "Agent", has_agent),
            "PARENT_THREAD": edges("PARENT_THREAD", "Thread", "Thread", parent),
            "IN_WORKSPACE": edges("IN_WORKSPACE", "Session", "Workspace", in_ws),
            "USED_MODEL": edges("USED_MODEL", "Thread", "Model", used, calls="int"),
        },
    )  # fmt: skip


def naive_load(store: Neo4jStore, graph: GraphTables, limit: int | None) -> tuple[int, float]:
    """One auto-commit ``MERGE`` per node and per relationship, as a first attempt would.

    ``limit`` caps the rows written per table (same share of every table), so the
    slow loop can be sampled; returns (rows written, seconds).
    """
    share = 1.0
    total_rows = sum(graph.node_counts().values()) + sum(graph.edge_counts().values())
    if limit is not None and limit < total_rows:
        share = limit / total_rows
    store.ensure_schema(sorted(graph.nodes))
    written = 0
    started = time.perf_counter()
    with store._driver.session(database=store.config.database) as session:
        for label, nodes in sorted(graph.nodes.items()):
            q = f"MERGE (n:{cypher.quote_name(label)} {{id: $id}}) SET n += $props"
            for row in nodes.table.slice(0, _take(nodes.table, share)).to_pylist():
                node_id = row.pop("id")
                session.run(q, id=node_id, props=row).consume()
                written += 1
        for rel, e in sorted(graph.edges.items()):
            q = (
                f"MATCH (a:{cypher.quote_name(e.source_type)} {{id: $s}})"
                f" MATCH (b:{cypher.quote_name(e.target_type)} {{id: $t}})"
                f" MERGE (a)-[r:{cypher.quote_name(rel)}]->(b) SET r += $props"
            )
            for row in e.table.slice(0, _take(e.table, share)).to_pylist():
                s, t = row.pop("source"), row.pop("target")
                session.run(q, s=s, t=t, props=row).consume()
                written += 1
    return written, time.perf_counter() - started


def _take(table: pa.Table, share: float) -> int:
    return max(1, round(table.num_rows * share)) if table.num_rows else 0


def fresh_store(batch_size: int) -> tuple[Any, Neo4jStore]:
    server = start_local_neo4j()
    store = Neo4jStore(Neo4jConfig(uri=server.uri, password=server.password), batch_size=batch_size)
    store.verify()
    return server, store


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=7500, help="graph size (~14 nodes each)")
    p.add_argument("--batch-sizes", default="500,1000,2000,5000,10000,20000")
    p.add_argument("--repeat", type=int, default=1, help="runs per batch size; the best counts")
    p.add_argument(
        "--naive-rows", type=int, default=None,
        help="sample this many rows for the naive loop (default: the whole graph)",
    )  # fmt: skip
    args = p.parse_args()

    graph = make_graph(args.sessions)
    n_nodes = sum(graph.node_counts().values())
    n_rels = sum(graph.edge_counts().values())
    rows = n_nodes + n_rels
    print(f"graph: {n_nodes} nodes {graph.node_counts()}")
    print(f"       {n_rels} relationships {graph.edge_counts()}")

    rates: dict[int, float] = {}
    for size in [int(x) for x in args.batch_sizes.split(",")]:
        for _ in range(args.repeat):
            server, store = fresh_store(size)
            try:
                report = store.load(graph)
            finally:
                store.close()
                server.stop()
            assert report.nodes == graph.node_counts() and report.edges == graph.edge_counts()
            rate = rows / report.seconds
            rates[size] = max(rates.get(size, 0.0), rate)
            print(
                f"store   batch={size:>6}: {report.seconds:7.2f} s  {rate:9.0f} rows/s"
                f"  (nodes + relationships, schema included)",
                flush=True,
            )

    server, store = fresh_store(DEFAULT_BATCH_SIZE)
    try:
        written, seconds = naive_load(store, graph, args.naive_rows)
    finally:
        store.close()
        server.stop()
    naive_rate = written / seconds
    sample = "" if written >= rows else f" (sample of {written} of {rows} rows)"
    print(f"naive per-row MERGE: {seconds:7.2f} s  {naive_rate:9.0f} rows/s{sample}")
    for size, rate in rates.items():
        print(f"batch {size:>6}: best {rate:9.0f} rows/s = {rate / naive_rate:5.1f}x naive")
    best = max(rates, key=lambda k: rates[k])
    default = rates.get(DEFAULT_BATCH_SIZE)
    print(f"best batch size {best}: {rates[best] / naive_rate:.1f}x the naive loop")
    if default is not None:
        print(
            f"default batch size {DEFAULT_BATCH_SIZE}: {default / naive_rate:.1f}x the naive loop"
        )


if __name__ == "__main__":
    main()
