"""The naive baseline: what a user scripts without graphkit.

Rows become Python dicts (``pq.read_table(...).to_pylist()``), then the
NetworkX graph is built one row at a time with the default contract's identity
rules, written out by hand: the same Session/Thread/Agent/Workspace/Model/Tool
nodes with the same deterministic ids (:func:`graphkit.core.ids.node_id`), the same
properties (token sums included), File nodes, and the same HAS_THREAD/HAS_AGENT/
PARENT_THREAD/IN_WORKSPACE/USED_MODEL/CALLED_TOOL/TOUCHED/CONTINUES edges. Which
files a tool call touched comes from graphkit's per-call function
(:func:`graphkit.sources.touched.touched`), called once per file-tool call row,
as a script would. :func:`compare` checks that it equals graphkit's
graph, so the benchmark compares two builds of one graph.

To keep the baseline honest rather than a straw man it reads only the columns
graphkit reads (no content but ``tool_args``, which the file paths come from) and
memoizes node ids per key.

``python -m bench.naive DIR`` runs it as a whole process (what the benchmark times
beside ``graphkit build``) and prints the node and edge counts.

For Neo4j, :func:`neo4j_per_row` sends one ``MERGE`` per node and per
relationship, each its own auto-commit transaction.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import networkx as nx
import pyarrow.parquet as pq

from graphkit.core.ids import node_id
from graphkit.sources.touched import PATCHES, READS, SEARCHES, SHELLS, WRITES, touched

# The non-content input columns of the default contract (what graphkit reads).
COLUMNS = ["session_id", "conversation_id", "agent_id", "parent_thread_id", "is_sidechain",
           "message_id", "part_id", "message_created_at", "message_index", "part_type",
           "provider", "model", "client_name", "cwd", "repo_root", "git_branch", "tool_name",
           "tool_call_id", "attributes", "schema_version", "tool_args"]
TYPE = "type"
# Columns the contract reads "" or whitespace in as no value.
BLANK_IS_NULL = ("conversation_id", "agent_id", "parent_thread_id", "part_id", "provider",
                 "model", "client_name", "cwd", "repo_root", "git_branch", "tool_name",
                 "tool_call_id")
FILE_TOOLS = frozenset({*READS, *WRITES, *SEARCHES, *PATCHES})
TOKENS = (("input_tokens", ("input_tokens",)), ("output_tokens", ("output_tokens",)),
          ("cache_creation_input_tokens", ("cache_creation_input_tokens",
                                           "cache_write_tokens")),
          ("cache_read_input_tokens", ("cache_read_input_tokens", "cache_read_tokens")))


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Every row as a dict (files starting with ``_``/``.`` are ignored, as graphkit does)."""
    return pq.read_table(path, columns=COLUMNS).to_pylist()


def _first(d: dict[str, Any], prop: str, value: Any) -> None:
    if value is not None and d.get(prop) is None:
        d[prop] = value


def _max(d: dict[str, Any], prop: str, value: Any) -> None:
    if value is not None and (d.get(prop) is None or value > d[prop]):
        d[prop] = value


def _min(d: dict[str, Any], prop: str, value: Any) -> None:
    if value is not None and (d.get(prop) is None or value < d[prop]):
        d[prop] = value


def _number(v: Any) -> Any:
    """A token count as the contract's ``sum`` reads it (text of a number too)."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return v
    text = str(v)
    try:
        return int(text)
    except ValueError:
        return float(text)


def _sums(d: dict[str, Any], values: dict[str, Any]) -> None:
    for prop, v in values.items():
        if v is not None:
            d[prop] = (d.get(prop) or 0) + v


def build_graph(rows: list[dict[str, Any]]) -> nx.MultiDiGraph:
    """The default contract's thread-granularity graph, one row at a time."""
    # rejects, then dedupe on part_id (first seen wins; rows without one are all
    # kept), then time order with nulls last
    seen: set[str] = set()
    kept = []
    for r in rows:
        if r["session_id"] is None or not r["session_id"].strip() or r["message_id"] is None:
            continue
        if r["schema_version"] is not None and r["schema_version"] < 6:
            continue
        # the files a tool call touched, from the row as read (cwd not yet blanked)
        name, args = r["tool_name"], r["tool_args"]
        r["files"] = (touched(name, args, r["cwd"]) if args is not None
                      and r["part_type"] != "tool_result" and (
                          name in FILE_TOOLS or (name in SHELLS and "apply_patch" in args))
                      else ())
        for c in BLANK_IS_NULL:
            v = r[c]
            if v is not None and not v.strip():
                r[c] = None
        if r["part_id"] is not None:
            if r["part_id"] in seen:
                continue
            seen.add(r["part_id"])
        kept.append(r)
    kept.sort(key=lambda r: (r["message_created_at"] is None, r["message_created_at"] or 0,
                             r["part_id"] is None, r["part_id"] or ""))

    G = nx.MultiDiGraph()
    ids: dict[tuple[Any, ...], str] = {}

    def nid(ntype: str, *key: Any) -> str:
        k = (ntype, *key)
        v = ids.get(k)
        if v is None:
            v = ids[k] = node_id(ntype, key)
        return v

    def node(ntype: str, keys: dict[str, Any], props: Iterable[str]) -> dict[str, Any]:
        i = nid(ntype, *keys.values())
        if i not in G:
            G.add_node(i, **{TYPE: ntype}, **keys, **dict.fromkeys(props))
        attrs: dict[str, Any] = G.nodes[i]
        return attrs

    distinct: dict[tuple[str, str], set[str]] = {}
    edge_props: dict[tuple[str, str, str], dict[str, Any]] = {}
    calls_by: dict[tuple[str, str], set[tuple[str, str | None]]] = {}  # (session, call) -> threads
    spawned: list[tuple[str, str, tuple[str, str | None]]] = []
    codex_parents: list[tuple[tuple[str, str | None], str]] = []
    # CONTINUES, per rule: (session, origin) -> how, first row wins
    continues: tuple[dict[tuple[str, str], Any], ...] = ({}, {}, {})

    def edge(etype: str, u: str, v: str) -> dict[str, Any]:
        return edge_props.setdefault((u, v, etype), {})

    for r in kept:
        sid = r["session_id"]
        conv, agent = r["conversation_id"], r["agent_id"]
        scope = conv if conv is not None else sid
        thread_id = agent if agent is not None else scope
        claude: dict[str, Any] = {}
        usage: dict[str, Any] = {}
        cont: dict[str, Any] = {}
        codex: dict[str, Any] = {}
        if r["attributes"]:
            try:
                doc = json.loads(r["attributes"])
            except ValueError:
                doc = None
            if isinstance(doc, dict):
                claude, usage, cont, codex = (
                    d if isinstance(d := doc.get(k), dict) else {}
                    for k in ("claude", "usage", "continues", "codex"))
        tokens = {p: next((_number(usage[k]) for k in keys if usage.get(k) is not None), None)
                  for p, keys in TOKENS}
        spawned_by = claude.get("spawned_by_tool_use_id")
        workspace = r["repo_root"] if r["repo_root"] is not None else r["cwd"]
        kind = ("subagent" if agent is not None else "child-thread"
                if r["parent_thread_id"] is not None else "thread" if conv is not None
                else "main")
        ts, mid = r["message_created_at"], r["message_id"]

        s = node("Session", {"session_id": sid},
                 ["provider", "client_name", "first_seen", "last_seen", "messages", "rows",
                  "resumed_from"])
        _first(s, "provider", r["provider"])
        _first(s, "client_name", r["client_name"])
        _min(s, "first_seen", ts)
        _max(s, "last_seen", ts)
        s_id = nid("Session", sid)
        distinct.setdefault((s_id, "messages"), set()).add(mid)
        s["rows"] = (s["rows"] or 0) + 1
        _first(s, "resumed_from", claude.get("resumed_from"))
        _sums(s, tokens)
        for rule, (origin, how) in enumerate((
                (cont.get("session_id"), cont.get("how")),
                (claude.get("resumed_from"), "resume"),
                (codex.get("forked_from_id") if r["parent_thread_id"] is None else None,
                 "fork"))):
            if origin is not None:
                continues[rule].setdefault((sid, origin), how)

        t = node("Thread", {"thread_scope": scope, "agent_id": agent},
                 ["thread_id", "session_id", "conversation_id", "kind", "is_sidechain",
                  "model", "first_seen", "last_seen", "messages", "rows"])
        t_id = nid("Thread", scope, agent)
        _first(t, "thread_id", thread_id)
        _first(t, "session_id", sid)
        _first(t, "conversation_id", conv)
        _first(t, "kind", kind)
        _max(t, "is_sidechain", r["is_sidechain"])
        _first(t, "model", r["model"])
        _min(t, "first_seen", ts)
        _max(t, "last_seen", ts)
        distinct.setdefault((t_id, "messages"), set()).add(mid)
        t["rows"] = (t["rows"] or 0) + 1
        _sums(t, tokens)
        edge("HAS_THREAD", s_id, t_id)
        for op, path in r["files"]:
            f = node("File", {"file_path": path}, ["reads", "writes", "first_seen",
                                                   "last_seen"])
            e = edge("TOUCHED", t_id, nid("File", path))
            for d in (f, e):
                d["reads"] = (d.get("reads") or 0) + (op == "read")
                d["writes"] = (d.get("writes") or 0) + (op == "write")
                _min(d, "first_seen", ts)
                _max(d, "last_seen", ts)

        if agent is not None:
            a = node("Agent", {"agent_id": agent}, ["agent_type", "description", "session_id"])
            _first(a, "agent_type", claude.get("agent_type"))
            _first(a, "description", claude.get("description"))
            _first(a, "session_id", sid)
            edge("HAS_AGENT", t_id, nid("Agent", agent))
        if workspace is not None:
            w = node("Workspace", {"workspace": workspace}, ["cwd", "repo_root", "git_branch"])
            _first(w, "cwd", r["cwd"])
            _first(w, "repo_root", r["repo_root"])
            if r["git_branch"] is not None:
                w["git_branch"] = r["git_branch"]
            edge("IN_WORKSPACE", s_id, nid("Workspace", workspace))
        if r["model"] is not None:
            m = node("Model", {"model": r["model"]}, ["provider"])
            _first(m, "provider", r["provider"])
            m_id = nid("Model", r["model"])
            _sums(edge("USED_MODEL", t_id, m_id), tokens)
            distinct.setdefault((f"{t_id}>{m_id}", "messages"), set()).add(mid)
        if r["tool_name"] is not None:
            tool = node("Tool", {"tool_name": r["tool_name"]}, ["calls"])
            tool["calls"] = (tool["calls"] or 0) + (r["tool_call_id"] is not None)
            if r["part_type"] == "tool_call":
                e = edge("CALLED_TOOL", t_id, nid("Tool", r["tool_name"]))
                e["calls"] = e.get("calls", 0) + 1
        if r["tool_call_id"] is not None:
            calls_by.setdefault((sid, r["tool_call_id"]), set()).add((scope, agent))
        if spawned_by is not None:
            spawned.append((sid, spawned_by, (scope, agent)))
        if r["parent_thread_id"] is not None:
            codex_parents.append(((scope, agent), r["parent_thread_id"]))

    # lineage: Claude spawns (join on the spawning call), Codex parent threads
    for sid, call, child in spawned:
        for parent in calls_by.get((sid, call), ()):
            if parent != child:
                edge("PARENT_THREAD", nid("Thread", *child), nid("Thread", *parent))
    for child, parent_tid in codex_parents:
        p = nid("Thread", parent_tid, None)
        c = nid("Thread", *child)
        if p in G and p != c:
            edge("PARENT_THREAD", c, p)

    origins: dict[tuple[str, str], Any] = {}
    for by_rule in continues:
        for (sid, origin), how in by_rule.items():
            origins.setdefault((nid("Session", sid), nid("Session", origin)), how)
    for (u, v), how in origins.items():
        if v in G and u != v:
            edge("CONTINUES", u, v)["how"] = how

    for (i, prop), values in distinct.items():
        if ">" in i:
            u, v = i.split(">")
            edge_props[(u, v, "USED_MODEL")][prop] = len(values)
        else:
            G.nodes[i][prop] = len(values)
    for (u, v, etype), props in edge_props.items():
        G.add_edge(u, v, key=etype, **{TYPE: etype}, **props)
    return G


def naive_build(path: Path) -> tuple[nx.MultiDiGraph, dict[str, float]]:
    """Read and build, with the time of each step."""
    t0 = time.perf_counter()
    rows = read_rows(path)
    t1 = time.perf_counter()
    G = build_graph(rows)
    t2 = time.perf_counter()
    return G, {"read": t1 - t0, "build": t2 - t1, "total": t2 - t0}


# ---------------------------------------------------------------------------


def compare(ours: nx.MultiDiGraph, theirs: nx.MultiDiGraph) -> dict[str, Any]:
    """Compare two graphs node type by node type and edge type by edge type.

    Returns counts; raises ``AssertionError`` naming the first difference.
    """
    # graphkit's NetworkX graph holds timestamps as ISO-8601 text (what GraphML
    # and GEXF accept); the naive graph holds datetimes.
    def plain(a: dict[str, Any]) -> dict[str, Any]:
        return {k: v.isoformat() if isinstance(v, datetime) else v
                for k, v in a.items() if v is not None}

    def by_type(G: nx.MultiDiGraph) -> dict[str, dict[str, dict[str, Any]]]:
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for n, a in G.nodes(data=True):
            out.setdefault(a[TYPE], {})[n] = plain(a)
        return out

    def edges(G: nx.MultiDiGraph) -> dict[str, dict[tuple[str, str], dict[str, Any]]]:
        out: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        for u, v, k, a in G.edges(keys=True, data=True):
            out.setdefault(k, {})[(u, v)] = plain(a)
        return out

    report: dict[str, Any] = {"nodes": {}, "edges": {}}
    a_nodes, b_nodes = by_type(ours), by_type(theirs)
    assert set(a_nodes) == set(b_nodes), f"node types differ: {set(a_nodes) ^ set(b_nodes)}"
    for t in sorted(a_nodes):
        a, b = a_nodes[t], b_nodes[t]
        missing, extra = set(b) - set(a), set(a) - set(b)
        assert not missing and not extra, (
            f"{t} node ids differ: {len(missing)} only in graphkit, {len(extra)} only in naive")
        for n in a:
            assert a[n] == b[n], f"{t} node {n} properties differ:\n naive {a[n]}\n gk    {b[n]}"
        report["nodes"][t] = len(a)
    a_edges, b_edges = edges(ours), edges(theirs)
    assert set(a_edges) == set(b_edges), f"edge types differ: {set(a_edges) ^ set(b_edges)}"
    for t in sorted(a_edges):
        ea, eb = a_edges[t], b_edges[t]
        assert set(ea) == set(eb), (
            f"{t} edges differ: {len(set(eb) - set(ea))} only in graphkit, "
            f"{len(set(ea) - set(eb))} only in naive")
        for e in ea:
            assert ea[e] == eb[e], f"{t} edge {e} properties differ: {ea[e]} vs {eb[e]}"
        report["edges"][t] = len(ea)
    return report


# ---------------------------------------------------------------------------
# Neo4j: one MERGE per node and per relationship


def _neo4j_value(v: Any) -> Any:
    return v.isoformat() if isinstance(v, datetime) else v


def neo4j_statements(G: nx.MultiDiGraph) -> list[tuple[str, dict[str, Any]]]:
    """One ``(cypher, params)`` per node, then one per relationship."""
    out: list[tuple[str, dict[str, Any]]] = []
    for n, a in G.nodes(data=True):
        props = {k: _neo4j_value(v) for k, v in a.items() if k != TYPE and v is not None}
        out.append((f"MERGE (n:`{a[TYPE]}` {{id: $id}}) SET n += $props",
                    {"id": n, "props": props}))
    for u, v, k, a in G.edges(keys=True, data=True):
        props = {x: _neo4j_value(y) for x, y in a.items() if x != TYPE and y is not None}
        su, sv = G.nodes[u][TYPE], G.nodes[v][TYPE]
        out.append((f"MATCH (a:`{su}` {{id: $s}}) MATCH (b:`{sv}` {{id: $t}}) "
                    f"MERGE (a)-[r:`{k}`]->(b) SET r += $props",
                    {"s": u, "t": v, "props": props}))
    return out


def neo4j_per_row(session: Any, statements: list[tuple[str, dict[str, Any]]]) -> float:
    """Run each statement as its own auto-commit transaction; return seconds."""
    t0 = time.perf_counter()
    for query, params in statements:
        session.run(query, **params).consume()
    return time.perf_counter() - t0


def main() -> None:
    """``python -m bench.naive DIR``: build, then print the counts and the seconds."""
    import sys
    from collections import Counter

    G, tm = naive_build(Path(sys.argv[1]))
    nodes = Counter(t for _, t in G.nodes(data=TYPE))
    edges = Counter(k for _, _, k in G.edges(keys=True))
    print(json.dumps({"nodes": dict(sorted(nodes.items())), "edges": dict(sorted(edges.items())),
                      **{f"{k}_s": round(v, 3) for k, v in tm.items()}}))


if __name__ == "__main__":
    main()
