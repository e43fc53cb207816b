"""What lineage queries return, the same for every store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphkit.enrich.base import ThreadInfo


@dataclass(frozen=True, order=True)
class Ref:
    """A node as a user names it: its type and the id a user would type.

    For a Thread the id is the ``agent_id`` of a Claude subagent, the
    ``conversation_id`` of a Codex thread, or the ``session_id`` of a Claude
    main loop; for a Session it is the ``session_id``. What :func:`graphkit.ancestors`
    and :func:`graphkit.descendants` list; refs sort by type, then id.

    >>> ref = Ref("Thread", "ag-1")
    >>> ref.to_json(), ref < Ref("Thread", "ag-2")
    ({'type': 'Thread', 'id': 'ag-1'}, True)
    """

    type: str
    id: str

    def to_json(self) -> dict[str, str]:
        """The ``{"type", "id"}`` object used in ``--json`` output."""
        return {"type": self.type, "id": self.id}
@dataclass(frozen=True)
class Continuation:
    """A session on a continuation chain (see :mod:`graphkit.queries.continuations`),
    ``depth`` steps away, and how it continues: resume, fork, branch, compaction
    or teammate. :attr:`Lineage.continues` and :class:`SessionTree` list them.

    >>> Continuation("Session", "s-0", "resume").to_json()
    {'type': 'Session', 'id': 's-0', 'how': 'resume'}
    """

    type: str
    id: str
    how: str | None
    depth: int = 1

    def to_json(self) -> dict[str, Any]:
        """``{"type", "id", "how"}``."""
        return {"type": self.type, "id": self.id, "how": self.how}


@dataclass
class Lineage:
    """The answer of ``graphkit lineage`` for one id: what :func:`graphkit.lineage`
    returns.

    ``id`` as asked and its ``session_id``; ``ancestors`` nearest first, ending with the
    Session; ``descendants`` nearest first, with their ``descendant_depths``;
    ``continues``: the sessions its session continues; ``notes``: what a user must
    hear of its threads (e.g. parents HypAware could not know).

    >>> from graphkit.queries.lineage import lineage
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> lineage(store, "th-child").to_json()["ancestors"]
    [{'type': 'Thread', 'id': 'th-root'}, {'type': 'Session', 'id': 'th-root'}]
    """

    id: str
    session_id: str
    ancestors: list[Ref]
    descendants: list[Ref]
    # The sessions this one's session continues, nearest first.
    continues: list[Continuation] = field(default_factory=list)
    # Each descendant's steps below the id (1: a child), in ``descendants``' order;
    # not in to_json (its shape is fixed), read by `lineage --csv`'s step column.
    descendant_depths: list[int] = field(default_factory=list)
    # What a user must hear of these threads (OTEL-captured subagent rows that carry no
    # spawn link): lines for stderr, not in to_json.
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The object printed per line by ``graphkit lineage --json``."""
        return {
            "id": self.id,
            "session_id": self.session_id,
            "ancestors": [r.to_json() for r in self.ancestors],
            "descendants": [r.to_json() for r in self.descendants],
            "continues": [c.to_json() for c in self.continues],
        }
@dataclass
class TreeNode:
    """A node of a session tree: the Session at the root, then its threads, the main
    thread first and children by start time.

    ``ref`` names it; ``info`` holds a thread's kind, agent type, message count and
    first time (None for the Session); ``children`` the threads it spawned; ``cycle``
    marks a thread whose parent links loop. ``to_json()`` is the nested tree.

    >>> from graphkit.queries.lineage import session_tree
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> root = session_tree(store, "th-root")
    >>> [(c.ref.id, c.info.kind) for c in root.children[0].children]
    [('th-child', 'child-thread')]
    """

    ref: Ref
    info: ThreadInfo | None = None
    children: list[TreeNode] = field(default_factory=list)
    cycle: bool = False  # its parent links loop; shown under the session, flagged

    def to_json(self) -> dict[str, Any]:
        """Nested ``{"type", "id", "children"}`` objects (built with a loop, not
        recursion: a tree may be thousands of threads deep)."""
        top: dict[str, Any] = {}
        stack: list[tuple[TreeNode, dict[str, Any]]] = [(self, top)]
        while stack:
            node, out = stack.pop()
            out.update(node.ref.to_json())
            if node.info is not None:
                if node.info.kind:
                    out["kind"] = node.info.kind
                if node.info.agent_type:
                    out["agent_type"] = node.info.agent_type
            if node.cycle:
                out["cycle"] = True
            out["children"] = [{} for _ in node.children]
            stack.extend(zip(node.children, out["children"], strict=True))
        return top


@dataclass
class SessionTree:
    """The answer of ``graphkit tree``: a session's threads as a tree (``root``), and
    the sessions it ``continues`` and that continue it (``continued_by``), nearest first.
    What :func:`graphkit.tree` returns.

    >>> from graphkit.queries.lineage import tree
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> answer = tree(store, "th-root")
    >>> answer.root.ref.id, answer.continues, answer.continued_by
    ('th-root', [], [])
    """

    session_id: str
    root: TreeNode
    continues: list[Continuation] = field(default_factory=list)
    continued_by: list[Continuation] = field(default_factory=list)
    # What a user must hear of its threads (see Lineage.notes); not in the records.
    notes: list[str] = field(default_factory=list)
