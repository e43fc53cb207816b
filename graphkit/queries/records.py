"""Every question's answer as JSON-able records: what ``graphkit … --json`` prints,
one record a line, and what any other front end (a server for agents, a page) returns
for the same question, so that all of them say the same.

Each record is a dict whose first key, ``record``, names its kind (``session``,
``lineage``, ``tree``, ``continuation``, ``usage``, ``usage_group``, ``file``), so a
pipe can mix and filter them by one key. Costs are in USD; a cost is ``None`` where a
model has no price, with ``cost_note`` saying why (unknown, never zero).

>>> from graphkit.builds.run import example_graph
>>> from graphkit.enrich.networkx_store import NetworkXStore
>>> from graphkit.queries.sessions import sessions
>>> store = NetworkXStore(); _ = store.load(example_graph())
>>> [r["session_id"] for r in session_records(sessions(store))]
['sess-1', 'th-root']
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from graphkit.queries.files import FileTouch
from graphkit.queries.model import Lineage, SessionTree, TreeNode
from graphkit.queries.prices import ClaudeCost, Cost, UsageGroup
from graphkit.queries.sessions import SessionRow
from graphkit.queries.usage import SessionUsage
from graphkit.queries.usage_report import SessionCosts, UsageReport

Record = dict[str, Any]


def _cost(cost: Cost) -> Record:
    """``{"cost_usd", "cost_note"}``: the cost, or None and why."""
    return {"cost_usd": cost.known, "cost_note": cost.note}


def session_records(rows: Sequence[SessionRow]) -> list[Record]:
    """Return ``graphkit sessions --json``'s records, one per session: ``{"record":
    "session", "session_id", "threads", "agents", "messages", "first_seen",
    "last_seen", "workspaces", "models", "tokens": {<four counts>}, "total_tokens",
    "cost_usd", "cost_note", "unpriced_models"}``.

    Parameters
    ----------
    rows : sequence of SessionRow
        :func:`graphkit.queries.sessions.sessions`' answer.

    Returns
    -------
    list of dict

    Examples
    --------
    >>> from graphkit.queries.sessions import SessionRow
    >>> session_records([SessionRow("s", 1, 0, 2)])[0]["cost_usd"]
    0.0
    """
    return [{"record": "session", "session_id": r.session_id, "threads": r.threads,
             "agents": r.agents, "messages": r.messages, "first_seen": r.first_seen,
             "last_seen": r.last_seen, "workspaces": r.workspaces, "models": r.models,
             "tokens": r.tokens.to_json(), "total_tokens": r.tokens.total(),
             **_cost(r.cost), "unpriced_models": sorted(r.cost.unpriced)} for r in rows]


def lineage_records(answers: Sequence[Lineage]) -> list[Record]:
    """Return ``graphkit lineage --json``'s records, one per id asked: ``{"record":
    "lineage", "id", "session_id", "ancestors", "descendants", "continues"}``.

    Parameters
    ----------
    answers : sequence of Lineage
        :func:`graphkit.queries.lineage.lineage_many`'s answer.

    Returns
    -------
    list of dict

    Examples
    --------
    >>> from graphkit.queries.model import Lineage, Ref
    >>> lineage_records([Lineage("a", "s", [Ref("Session", "s")], [])])[0]["ancestors"]
    [{'type': 'Session', 'id': 's'}]
    """
    return [{"record": "lineage", **a.to_json()} for a in answers]


def tree_records(tree: SessionTree) -> list[Record]:
    """Return ``graphkit tree --json``'s records: one ``{"record": "tree", "type",
    "id", "depth", "parent_type", "parent_id", "kind", "agent_type", "description",
    "messages", "first_seen", "cycle"}`` per node in drawing order (the session at
    depth 0), then one ``{"record": "continuation", "session_id", "direction", "type",
    "id", "how", "depth"}`` per session it continues (``continues``) or that continues
    it (``continued_by``).

    Parameters
    ----------
    tree : SessionTree
        :func:`graphkit.queries.lineage.tree`'s answer.

    Returns
    -------
    list of dict

    Examples
    --------
    >>> from graphkit.queries.model import Ref, SessionTree, TreeNode
    >>> [r["id"] for r in tree_records(SessionTree("s", TreeNode(Ref("Session", "s"))))]
    ['s']
    """
    out = list(tree_nodes(tree.root))
    out += [{"record": "continuation", "session_id": tree.session_id, "direction": d,
             **c.to_json(), "depth": c.depth}
            for d, chain in (("continues", tree.continues),
                             ("continued_by", tree.continued_by)) for c in chain]
    return out


def tree_nodes(root: TreeNode) -> Iterator[Record]:
    """The tree flattened in drawing order: one ``{"record": "tree", ...}`` per node
    with its depth (the session is 0) and its parent's type and id."""
    stack: list[tuple[TreeNode, TreeNode | None, int]] = [(root, None, 0)]
    while stack:  # a loop, not recursion: a tree may be thousands deep
        node, parent, depth = stack.pop()
        info = node.info
        yield {"record": "tree", "type": node.ref.type, "id": node.ref.id, "depth": depth,
               "parent_type": parent.ref.type if parent else None,
               "parent_id": parent.ref.id if parent else None,
               "kind": info.kind if info else None,
               "agent_type": info.agent_type if info else None,
               "description": info.description if info else None,
               "messages": info.messages if info else None,
               "first_seen": info.first_seen if info else None,
               "cycle": node.cycle}
        stack.extend((c, node, depth + 1) for c in reversed(node.children))


def usage_records(report: UsageReport) -> list[Record]:
    """Return ``graphkit usage --json``'s records.

    Without ``by``: one per session, ``{"record": "usage", "session_id", "own",
    "total", "cost_usd", "cost_note", "unpriced_models", "claude_cost_usd",
    "cost_gap_usd", "cost_gap_cause", "threads": [{"id", "parent",
    "own", "subtree", "depth", "kind", "agent_type", "own_cost_usd", "subtree_cost_usd",
    "cost_note"}]}`` (threads in tree order, depth 0 at a root; token
    counts as ``{"input_tokens", "output_tokens", "cache_creation_input_tokens",
    "cache_read_input_tokens"}``, with ``cache_creation_1h_input_tokens`` and
    ``web_search_requests`` where there are some; a thread's ``cost_note`` says why its
    own or its subtree's cost is None; ``claude_cost_usd``, only where the session's
    data holds Claude Code's own figure: it, ``cost_gap_usd`` it less ``cost_usd``
    and ``cost_gap_cause`` why, where known). With ``by``: one per group, ``{"record":
    "usage_group", "session_id", "by", "key", <the four counts>, "cost_usd",
    "unpriced_models", "cost_note", "sessions"}`` (``session_id``: the session the group
    lies in, None for a group across sessions; a ``--by session`` group has the three
    ``claude_`` and ``cost_gap_`` fields where its session has Claude's figure).

    Parameters
    ----------
    report : UsageReport
        :func:`graphkit.queries.usage_report.usage`'s answer.

    Returns
    -------
    list of dict

    Examples
    --------
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> from graphkit.queries.usage_report import usage
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> rec = usage_records(usage(store, ["sess-1"]))[0]
    >>> rec["cost_usd"], [t["subtree_cost_usd"] for t in rec["threads"]]
    (0.0, [0.0, 0.0, 0.0])
    """
    if report.by is not None:
        claude = {u.session_id: c.claude for u, c in zip(report.sessions, report.costs,
                                                          strict=True)
                  if c.claude is not None} if report.by == "session" else {}
        return [group_record(g, report.by, claude.get(g.key)) for g in report.groups]
    return [session_usage_record(u, c) for u, c in zip(report.sessions, report.costs,
                                                        strict=True)]


def session_usage_record(u: SessionUsage, costs: SessionCosts) -> Record:
    """One session's ``{"record": "usage", ...}`` (see :func:`usage_records`)."""
    threads = []
    for t, own, below in zip(u.threads, costs.own, costs.subtree, strict=True):
        threads.append({**t.to_json(), "depth": t.depth, "kind": t.kind,
                        "agent_type": t.agent_type, "own_cost_usd": own.known,
                        "subtree_cost_usd": below.known, "cost_note": below.note})
    # Claude's figure only where the session's data holds one: records of data without
    # it keep their fields.
    claude = costs.claude.to_json() if costs.claude is not None else {}
    return {"record": "usage", "session_id": u.session_id, "own": u.own.to_json(),
            "total": u.total.to_json(), **_cost(costs.total),
            "unpriced_models": sorted(costs.total.unpriced), **claude, "threads": threads}


def group_record(g: UsageGroup, by: str, claude: ClaudeCost | None = None) -> Record:
    """One group's ``{"record": "usage_group", ...}`` (see :func:`usage_records`);
    ``claude``: Claude Code's own figure for a ``--by session`` group's session."""
    return {"record": "usage_group", "session_id": g.session_id, "by": by, "key": g.key,
            **g.tokens.to_json(), "cost_usd": g.cost.known,
            "unpriced_models": sorted(g.cost.unpriced), "cost_note": g.cost.note,
            "sessions": g.sessions, **(claude.to_json() if claude is not None else {})}


def file_records(found: Sequence[FileTouch]) -> list[Record]:
    """Return ``graphkit files --json``'s records, one per (thread, file): ``{"record":
    "file", "session_id", "thread", "path", "reads", "writes"}``.

    Parameters
    ----------
    found : sequence of FileTouch
        :func:`graphkit.queries.files.files`' answer.

    Returns
    -------
    list of dict

    Examples
    --------
    >>> from graphkit.queries.files import FileTouch
    >>> file_records([FileTouch("s", "t", "/w/a.py", 2, 1)])[0]["writes"]
    1
    """
    return [{"record": "file", **f.to_json()} for f in found]
