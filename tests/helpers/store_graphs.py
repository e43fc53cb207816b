"""Small hand-built GraphTables for the Neo4j tests (no contract needed).

Shaped like the default contract's output: ``id`` first, then the key, then
properties; edges ``source``, ``target``, then properties.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from graphkit.core.graph import EdgeTable, GraphTables, LineageVocabulary, NodeTable

_NS = uuid.UUID("6f1d2c1e-0000-4000-8000-000000000000")


def nid(label: str, key: str) -> str:
    """A deterministic node id, like the contract's."""
    return str(uuid.uuid5(_NS, f"{label}:{key}"))


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


TS = pa.timestamp("us", tz="UTC")


def _nodes(
    label: str, key: tuple[str, ...], rows: list[dict[str, Any]], schema: pa.Schema
) -> NodeTable:
    return NodeTable(label, key, pa.Table.from_pylist(rows, schema=schema))


def _edges(
    rel: str, src: str, dst: str, pairs: list[tuple[str, str]], **props: list[Any]
) -> EdgeTable:
    data: dict[str, list[Any]] = {"source": [p[0] for p in pairs], "target": [p[1] for p in pairs]}
    data.update(props)
    return EdgeTable(
        rel,
        src,
        dst,
        pa.table(data)
        if pairs
        else pa.table({"source": pa.array([], pa.string()), "target": pa.array([], pa.string())}),
    )


def lineage_graph() -> GraphTables:
    """Two sessions.

    ``s-claude``: main thread ``s-claude`` → subagent ``agent-a`` → nested
    ``agent-b`` → ``agent-c`` (depth 3), plus a second direct subagent ``agent-d``.
    ``codex-root``: root thread ``codex-root`` and child thread ``codex-child``.
    Also a Workspace and a Model with edge properties.
    """
    T = "Thread"
    threads = [
        # thread_id, thread_scope, agent_id, session_id, kind, messages
        ("s-claude", "s-claude", None, "s-claude", "main", 40),
        ("agent-a", "s-claude", "agent-a", "s-claude", "subagent", 12),
        ("agent-b", "s-claude", "agent-b", "s-claude", "subagent", 7),
        ("agent-c", "s-claude", "agent-c", "s-claude", "subagent", 3),
        ("agent-d", "s-claude", "agent-d", "s-claude", "subagent", 5),
        ("codex-root", "codex-root", None, "codex-root", "codex", 20),
        ("codex-child", "codex-child", None, "codex-root", "codex", 9),
    ]
    thread_schema = pa.schema(
        [
            ("id", pa.string()),
            ("thread_id", pa.string()),
            ("thread_scope", pa.string()),
            ("agent_id", pa.string()),
            ("session_id", pa.string()),
            ("kind", pa.string()),
            ("messages", pa.int64()),
        ]
    )
    thread_rows = [
        dict(
            id=nid(T, f"{s}/{a or ''}/{t}"),
            thread_id=t,
            thread_scope=sc,
            agent_id=a,
            session_id=s,
            kind=k,
            messages=m,
        )
        for t, sc, a, s, k, m in threads
    ]
    tid = {r["thread_id"]: r["id"] for r in thread_rows}

    session_schema = pa.schema(
        [
            ("id", pa.string()),
            ("session_id", pa.string()),
            ("first_seen", TS),
            ("last_seen", TS),
            ("messages", pa.int64()),
            ("rows", pa.int64()),
            ("title", pa.string()),
        ]
    )
    sessions = [
        dict(
            id=nid("Session", "s-claude"),
            session_id="s-claude",
            first_seen=ts("2025-01-02T03:04:05.123456"),
            last_seen=ts("2025-01-02T04:00:00"),
            messages=67,
            rows=90,
            title="fix the parser",
        ),
        dict(
            id=nid("Session", "codex-root"),
            session_id="codex-root",
            first_seen=ts("2025-02-01T10:00:00"),
            last_seen=ts("2025-02-01T11:30:00.5"),
            messages=29,
            rows=29,
            title=None,
        ),
    ]
    sid = {r["session_id"]: r["id"] for r in sessions}

    agent_schema = pa.schema(
        [
            ("id", pa.string()),
            ("agent_id", pa.string()),
            ("agent_type", pa.string()),
            ("description", pa.string()),
        ]
    )
    agents = [
        dict(id=nid("Agent", a), agent_id=a, agent_type=at, description=d)
        for a, at, d in [
            ("agent-a", "general-purpose", "Explore the repo"),
            ("agent-b", "Explore", "Find the parser"),
            ("agent-c", "general-purpose", None),
            ("agent-d", None, None),
        ]
    ]
    aid = {r["agent_id"]: r["id"] for r in agents}

    ws_schema = pa.schema([("id", pa.string()), ("cwd", pa.string())])
    workspaces = [dict(id=nid("Workspace", "/repo"), cwd="/repo")]
    model_schema = pa.schema([("id", pa.string()), ("model", pa.string())])
    models = [dict(id=nid("Model", "claude-x"), model="claude-x")]

    return GraphTables(
        contract_name="test",
        contract_version=1,
        id_recipe=1,
        granularity="thread",
        lineage=LineageVocabulary(),
        nodes={
            "Session": _nodes("Session", ("session_id",), sessions, session_schema),
            "Thread": _nodes("Thread", ("thread_scope", "agent_id"), thread_rows, thread_schema),
            "Agent": _nodes("Agent", ("agent_id",), agents, agent_schema),
            "Workspace": _nodes("Workspace", ("cwd",), workspaces, ws_schema),
            "Model": _nodes("Model", ("model",), models, model_schema),
        },
        edges={
            "HAS_THREAD": _edges(
                "HAS_THREAD",
                "Session",
                "Thread",
                [(sid[r["session_id"]], r["id"]) for r in thread_rows],
            ),
            "HAS_AGENT": _edges("HAS_AGENT", "Thread", "Agent", [(tid[a], aid[a]) for a in aid]),
            "PARENT_THREAD": _edges(
                "PARENT_THREAD",
                "Thread",
                "Thread",
                [
                    (tid["agent-a"], tid["s-claude"]),
                    (tid["agent-b"], tid["agent-a"]),
                    (tid["agent-c"], tid["agent-b"]),
                    (tid["agent-d"], tid["s-claude"]),
                    (tid["codex-child"], tid["codex-root"]),
                ],
            ),
            "IN_WORKSPACE": _edges(
                "IN_WORKSPACE",
                "Session",
                "Workspace",
                [(sid["s-claude"], workspaces[0]["id"])],
            ),
            "USED_MODEL": _edges(
                "USED_MODEL",
                "Thread",
                "Model",
                [(tid["s-claude"], models[0]["id"]), (tid["agent-a"], models[0]["id"])],
                calls=[30, 6],
                first_used=pa.array([ts("2025-01-02T03:04:05"), None], TS),
            ),
        },
    )


def cycle_graph() -> GraphTables:
    """One session whose three threads form a PARENT_THREAD cycle x → y → z → x."""
    rows = [
        dict(id=nid("Thread", f"cyc/{t}"), thread_id=t, session_id="cyc", kind="codex", messages=1)
        for t in ("x", "y", "z")
    ]
    ids = {r["thread_id"]: r["id"] for r in rows}
    session = [dict(id=nid("Session", "cyc"), session_id="cyc", messages=3)]
    return GraphTables(
        "test",
        1,
        1,
        "thread",
        nodes={
            "Session": NodeTable("Session", ("session_id",), pa.Table.from_pylist(session)),
            "Thread": NodeTable("Thread", ("thread_id",), pa.Table.from_pylist(rows)),
        },
        edges={
            "HAS_THREAD": _edges(
                "HAS_THREAD", "Session", "Thread", [(session[0]["id"], r["id"]) for r in rows]
            ),
            "PARENT_THREAD": _edges(
                "PARENT_THREAD",
                "Thread",
                "Thread",
                [(ids["x"], ids["y"]), (ids["y"], ids["z"]), (ids["z"], ids["x"])],
            ),
        },
    )


def chain_graph(sessions: int, threads_per_session: int) -> GraphTables:
    """A bigger graph for the crash test: per session, a chain of threads."""
    srows, trows, has, parent = [], [], [], []
    for s in range(sessions):
        sid = f"s{s:05d}"
        sn = nid("Session", sid)
        srows.append(dict(id=sn, session_id=sid, messages=threads_per_session))
        prev = None
        for t in range(threads_per_session):
            tn = nid("Thread", f"{sid}/{t}")
            trows.append(
                dict(id=tn, thread_id=f"{sid}-t{t}", session_id=sid, kind="codex", messages=t)
            )
            has.append((sn, tn))
            if prev is not None:
                parent.append((tn, prev))
            prev = tn
    return GraphTables(
        "test",
        1,
        1,
        "thread",
        nodes={
            "Session": NodeTable("Session", ("session_id",), pa.Table.from_pylist(srows)),
            "Thread": NodeTable("Thread", ("thread_id",), pa.Table.from_pylist(trows)),
        },
        edges={
            "HAS_THREAD": _edges("HAS_THREAD", "Session", "Thread", has),
            "PARENT_THREAD": _edges("PARENT_THREAD", "Thread", "Thread", parent),
        },
    )
