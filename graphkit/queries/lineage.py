"""Subagent lineage: up to the session, down to every descendant, and whole
session trees — the same answers from any store.

Every function takes a :class:`~graphkit.enrich.base.LineageReader` (the
NetworkX store or the Neo4j store) and the id a user holds: an ``agent_id``,
a thread id (``conversation_id``) or a ``session_id``.

>>> from graphkit.builds.run import example_graph
>>> from graphkit.enrich.networkx_store import NetworkXStore
>>> store = NetworkXStore()
>>> _ = store.load(example_graph())
>>> [r.id for r in ancestors(store, "ag-2")]
['ag-1', 'sess-1', 'sess-1']
>>> [r.id for r in descendants(store, "sess-1")]
['ag-1', 'ag-2']
"""

from __future__ import annotations

from collections.abc import Iterable

from graphkit.core.errors import QueryError
from graphkit.core.graph import LineageVocabulary
from graphkit.enrich.base import (
    Hit,
    LineageReader,
    LineageWalkReader,
    SessionSummary,
    ThreadInfo,
    ThreadWalk,
    ThreadWalkReader,
)
from graphkit.queries.continuations import continued_by, continues, walk_edges
from graphkit.queries.model import Lineage, Ref, SessionTree, TreeNode
from graphkit.sources.captures import OTEL_KIND, WHAT_TO_DO


def _describe(h: Hit) -> str:
    return f"{h.type} {h.id} (session {h.session_id})"


def twin_hint(reader: LineageReader, user_id: str, types: Iterable[str]) -> str | None:
    """For an id that names nothing: "did you mean" the same text in the other Unicode
    normalization form (NFC ``é`` or NFD ``e`` + U+0301), where that form names a node
    of one of ``types``.

    Ids are compared as written, so the two are different ids (both may exist, two
    sessions whose ids only look alike); guessing which one was meant would answer
    for the wrong one without a word. The form that exists is named with its
    characters escaped, as they look the same on screen."""
    import json
    import unicodedata

    wanted = set(types)
    for form in ("NFC", "NFD"):
        other = unicodedata.normalize(form, user_id)
        if other != user_id and any(h.type in wanted for h in reader.resolve(other)):
            return (f"did you mean {json.dumps(other)}? It is the same text in Unicode "
                    f"{form} form, and a different id (ids are compared as written; in "
                    f"bash type it as $'{json.dumps(other)[1:-1]}')")
    return None


def resolve(reader: LineageReader, user_id: str) -> Hit:
    """The one thread (or, failing that, session) a user's id names.

    A Claude session id names both the Session and its main-loop thread; the
    thread wins, since it is what has ancestors and descendants. An id that
    names several threads is ambiguous and an error, as is an unknown id.

    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> resolve(store, "th-child").session_id
    'th-root'
    >>> resolve(store, "nope")
    Traceback (most recent call last):
    ...
    graphkit.core.errors.QueryError: no thread, agent or session has the id 'nope'; ...
    """
    return _pick(reader.vocabulary, user_id, reader.resolve(user_id), reader)


def _pick(v: LineageVocabulary, user_id: str, hits: list[Hit],
          reader: LineageReader | None = None) -> Hit:
    """:func:`resolve`'s choice among the hits of ``user_id``."""
    threads = {h.node_id: h for h in hits if h.type == v.thread}
    if len(threads) == 1:
        return next(iter(threads.values()))
    if len(threads) > 1:
        cands = "; ".join(sorted(_describe(h) for h in threads.values()))
        raise QueryError(f"the id {user_id!r} is ambiguous: {cands}",
                         hint="the same id appears in several sessions; check them with "
                              "`graphkit check`")
    sessions = {h.node_id: h for h in hits if h.type == v.session}
    if len(sessions) == 1:
        return next(iter(sessions.values()))
    if len(sessions) > 1:  # pragma: no cover - node ids are unique per session id
        raise QueryError(f"the id {user_id!r} is ambiguous: "
                         + "; ".join(sorted(_describe(h) for h in sessions.values())))
    twin = None if reader is None else twin_hint(reader, user_id, (v.thread, v.session))
    raise QueryError(f"no thread, agent or session has the id {user_id!r}",
                     hint=twin or "list ids with `graphkit sessions` or `graphkit tree "
                                  "SESSION_ID`")


def ancestors(reader: LineageReader, user_id: str) -> list[Ref]:
    """Return the threads above ``user_id``, nearest first, ending with its Session.

    A thread is not its own ancestor; a Session has no ancestors. A Claude session id
    names the session's main thread, whose only ancestor is the Session.

    Parameters
    ----------
    reader : LineageReader
        The graph (a snapshot reader, the NetworkX or the Neo4j store).
    user_id : str
        An agent id, a thread id or a session id.

    Returns
    -------
    list of Ref
        ``Ref(type, id)`` of each parent thread, then of the Session.

    Raises
    ------
    QueryError
        ``user_id`` names nothing, or several threads.

    See Also
    --------
    descendants, lineage

    Examples
    --------
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> [(r.type, r.id) for r in ancestors(store, "ag-2")]
    [('Thread', 'ag-1'), ('Thread', 'sess-1'), ('Session', 'sess-1')]
    >>> [r.id for r in ancestors(store, "ag-1")]  # not its own ancestor
    ['sess-1', 'sess-1']
    """
    return lineage(reader, user_id).ancestors


def descendants(reader: LineageReader, user_id: str) -> list[Ref]:
    """Return every thread below ``user_id``, nearest first (by depth, then id).

    A thread is not its own descendant. For a session id that names no thread, every
    thread of the session.

    Parameters
    ----------
    reader : LineageReader
        The graph (a snapshot reader, the NetworkX or the Neo4j store).
    user_id : str
        An agent id, a thread id or a session id.

    Returns
    -------
    list of Ref
        ``Ref(type, id)`` of each thread spawned below it, at any depth.

    Raises
    ------
    QueryError
        ``user_id`` names nothing, or several threads.

    See Also
    --------
    ancestors, lineage

    Examples
    --------
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> [r.id for r in descendants(store, "sess-1")]
    ['ag-1', 'ag-2']
    >>> descendants(store, "ag-2")
    []
    """
    return lineage(reader, user_id).descendants


def lineage(reader: LineageReader, user_id: str) -> Lineage:
    """Return the ancestors and descendants of the thread (or session) named by
    ``user_id``, and the sessions its session continues.

    Parameters
    ----------
    reader : LineageReader
        The graph (a snapshot reader, the NetworkX or the Neo4j store).
    user_id : str
        An agent id, a thread id or a session id. A Claude session id names both the
        Session and its main thread; the thread is meant.

    Returns
    -------
    Lineage
        ``ancestors`` (as :func:`ancestors`), ``descendants`` (as :func:`descendants`)
        with their ``descendant_depths``, and ``continues``: the sessions it resumes,
        forks or compacts, nearest first.

    Raises
    ------
    QueryError
        ``user_id`` names nothing, or several threads.

    See Also
    --------
    lineage_many : several ids, with notes on threads whose parents are unknown.

    Examples
    --------
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> answer = lineage(store, "ag-1")
    >>> answer.session_id, [r.id for r in answer.ancestors], [r.id for r in answer.descendants]
    ('sess-1', ['sess-1', 'sess-1'], ['ag-2'])
    """
    v = reader.vocabulary
    walk: ThreadWalk | None = None
    if isinstance(reader, LineageWalkReader):
        # A server: resolving and walking in one round trip.
        hits, walk = reader.lineage_walk(user_id)
        hit = _pick(v, user_id, hits, reader)
    else:
        hit = resolve(reader, user_id)
    if hit.type == v.session:
        chain = continues(reader, hit.session_id)
        threads = reader.session_threads(hit.session_id)
        depth = _depths(threads)
        desc = sorted(threads, key=lambda t: (depth[t.node_id], t.id))
        return Lineage(user_id, hit.session_id, [],
                       [Ref(v.thread, t.id) for t in desc], chain,
                       [depth[t.node_id] for t in desc])
    if walk is None and isinstance(reader, ThreadWalkReader):
        walk = reader.thread_walk(hit.node_id, hit.session_id)
    if walk is not None:
        parents, below = walk.parents, walk.descendants
        chain = walk_edges(reader, walk.continuations, up=True)
    else:
        parents, below = reader.parent_chain(hit.node_id), reader.descendant_threads(hit.node_id)
        chain = continues(reader, hit.session_id)
    up = [Ref(v.thread, h.id) for h in parents]
    up.append(Ref(v.session, hit.session_id))
    down = sorted(below, key=lambda hd: (hd[1], hd[0].id))
    return Lineage(user_id, hit.session_id, up, [Ref(v.thread, h.id) for h, _ in down],
                   chain, [d for _, d in down])


def lineage_many(reader: LineageReader, user_ids: Iterable[str]) -> list[Lineage]:
    """Return :func:`lineage` of each id, in order (``graphkit lineage ID...``).

    Parameters
    ----------
    reader : LineageReader
        The graph.
    user_ids : iterable of str
        Agent ids, thread ids or session ids.

    Returns
    -------
    list of Lineage

    Raises
    ------
    QueryError
        An id names nothing, or several threads.

    Examples
    --------
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> [a.session_id for a in lineage_many(store, ["ag-2", "th-child"])]
    ['sess-1', 'th-root']
    """
    answers = [lineage(reader, u) for u in user_ids]
    for a in answers:
        a.notes = capture_notes(reader, [a.id, *(r.id for r in a.descendants)])
    return answers


def _depths(threads: list[ThreadInfo]) -> dict[str, int]:
    by_id = {t.node_id: t for t in threads}
    depth: dict[str, int] = {}
    # In a fixed order, not the store's: where parent links loop there is no
    # true depth, and the one given is where the walk entered the loop, which
    # must not differ between stores (Neo4j returns the threads sorted).
    for t in sorted(threads, key=lambda t: (t.id or "", t.node_id)):
        chain = []
        cur: ThreadInfo | None = t
        while cur is not None and cur.node_id not in depth and cur.node_id not in chain:
            chain.append(cur.node_id)
            cur = by_id.get(cur.parent_node_id) if cur.parent_node_id else None
        base = depth.get(cur.node_id, 0) if cur is not None else 0
        for i, nid in enumerate(reversed(chain)):
            depth[nid] = base + i + 1
    return depth


def session_tree(reader: LineageReader, session_id: str) -> TreeNode:
    """Return the session's threads as a tree under the Session.

    Roots are threads without a parent in the session, the main thread first, then
    children by start time (then id). Threads whose parent links form a loop hang
    under the session, flagged (``cycle``), so none is lost.

    Parameters
    ----------
    reader : LineageReader
        The graph (a snapshot reader, the NetworkX or the Neo4j store).
    session_id : str
        The session's id.

    Returns
    -------
    TreeNode
        The Session's node: ``ref``, ``children`` (each a :class:`TreeNode` with its
        thread's ``info``) and ``to_json()``.

    Raises
    ------
    QueryError
        ``session_id`` names no session (the message says if it names a thread).

    See Also
    --------
    tree : the same tree with the sessions it continues and that continue it.

    Examples
    --------
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> tree = session_tree(store, "sess-1")
    >>> [c.ref.id for c in tree.children], [c.ref.id for c in tree.children[0].children]
    (['sess-1'], ['ag-1'])
    """
    v = reader.vocabulary
    hits = [h for h in reader.resolve(session_id) if h.type == v.session]
    if not hits:
        known = [h for h in reader.resolve(session_id) if h.type == v.thread]
        hint = (f"{session_id!r} is a thread of session {known[0].session_id}" if known
                else twin_hint(reader, session_id, (v.session,))
                or "list sessions with `graphkit sessions`")
        raise QueryError(f"no session has the id {session_id!r}", hint=hint)
    return thread_tree(v, session_id, reader.session_threads(session_id))


def tree(reader: LineageReader, session_id: str) -> SessionTree:
    """Return a session's tree (:func:`session_tree`) with the sessions it continues
    and those that continue it.

    Parameters
    ----------
    reader : LineageReader
        The graph.
    session_id : str
        The session's id.

    Returns
    -------
    SessionTree

    Raises
    ------
    QueryError
        ``session_id`` names no session (the message says if it names a thread).

    Examples
    --------
    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> t = tree(store, "sess-1")
    >>> t.root.ref.id, len(t.root.children), t.continues, t.continued_by
    ('sess-1', 1, [], [])
    """
    root = session_tree(reader, session_id)
    otel, stack = [], [root]
    while stack:  # no recursion: a tree may be thousands of threads deep
        node = stack.pop()
        if node.info is not None and node.info.kind == OTEL_KIND:
            otel.append(node.ref.id)
        stack.extend(node.children)
    return SessionTree(session_id, root, continues(reader, session_id),
                       continued_by(reader, session_id),
                       notes=capture_notes(reader, otel) if otel else [])


def thread_tree(v: LineageVocabulary, session_id: str, threads: list[ThreadInfo]) -> TreeNode:
    """:func:`session_tree` of a session whose threads are ``threads``."""
    nodes = {t.node_id: TreeNode(Ref(v.thread, t.id), t) for t in threads}
    root = TreeNode(Ref(v.session, session_id))
    parent_of: dict[str, TreeNode] = {}
    for t in threads:
        parent = nodes.get(t.parent_node_id) if t.parent_node_id else None
        (parent or root).children.append(nodes[t.node_id])
        if parent is not None:
            parent_of[t.node_id] = parent
    _attach_cycles(root, nodes, parent_of)
    _sort(root)
    return root


def _attach_cycles(root: TreeNode, nodes: dict[str, TreeNode],
                   parent_of: dict[str, TreeNode]) -> None:
    """Threads whose parent links loop are unreachable from the session; hang
    each loop under the session at its smallest id, flagged, so none is lost."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        n = stack.pop()
        seen.add(id(n))
        stack.extend(n.children)
    for nid in sorted(nodes, key=lambda k: nodes[k].ref.id):
        node = nodes[nid]
        if id(node) in seen:
            continue
        # Cut the loop at this node: its parent's child list loses it. The
        # parent is known, not searched for: a scan of every node per loop
        # made 8,000 two-thread loops take 75 CPU-s. By identity, not ==
        # (a dataclass compares field by field, children included).
        parent = parent_of[nid]
        parent.children = [c for c in parent.children if c is not node]
        node.cycle = True
        root.children.append(node)
        stack = [node]
        while stack:
            n = stack.pop()
            seen.add(id(n))
            stack.extend(n.children)


def _order(node: TreeNode) -> tuple[int, str, str]:
    info = node.info
    main = 0 if info is not None and info.kind == "main" else 1
    return (main, (info.first_seen or "") if info else "", node.ref.id)


def _sort(root: TreeNode) -> None:
    # A loop, not recursion: a chain of subagents can be thousands deep
    # (a 10,000-deep one was a RecursionError).
    stack = [root]
    while stack:
        node = stack.pop()
        node.children.sort(key=_order)
        stack.extend(node.children)


def sessions(reader: LineageReader) -> list[SessionSummary]:
    """One summary per session, oldest first."""
    return sorted(reader.sessions(), key=lambda s: (s.first_seen or "", s.session_id))


def capture_notes(reader: LineageReader, thread_ids: Iterable[str]) -> list[str]:
    """What a user must hear of the threads ``thread_ids`` (ids as typed or shown):
    for each holding HypAware's OTEL rows of a subagent type (kind ``otel-agent-type``),
    that they carry no spawn link, how many sessions hold such threads, and what to do.

    >>> from graphkit.builds.run import example_graph
    >>> from graphkit.enrich.networkx_store import NetworkXStore
    >>> store = NetworkXStore(); _ = store.load(example_graph())
    >>> capture_notes(store, ["ag-1"])
    []
    """
    v = reader.vocabulary
    wanted = set(thread_ids)
    if not wanted:
        return []
    try:
        rows = reader.node_rows(v.thread, [v.thread_key, v.thread_session],
                                where=("kind", [OTEL_KIND]))
    except QueryError:  # a graph without such a property: no such thread either
        return []
    sessions = {r.get(v.thread_session) for r in rows}
    out = []
    for r in rows:
        name = r.get(v.thread_key)
        if name in wanted:
            out.append(
                f"thread {name} (session {r.get(v.thread_session)}) holds the rows HypAware "
                f"captured through OTEL for every {name!r} subagent run of its session: they "
                "carry no spawn link (agent_id is the subagent's type), so its runs are not "
                f"told apart and its parent is not known; {len(sessions)} session(s) of this "
                f"graph hold such threads. To link them, {WHAT_TO_DO}, and build again")
    return out
