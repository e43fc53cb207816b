"""Cypher text for the Neo4j store, built by pure functions.

Labels, relationship types and property names cannot be Cypher parameters, so
they are the only names spliced into query text: each is checked against
:data:`~graphkit.core.names.NAME_PATTERN` (the contract's own pattern) and
backtick-quoted. Every value travels as a parameter
(``$ids``, ``$c0``, ``$id``, ``$limit``). Keeping the builders free of I/O lets the
tests check injection attempts without a server.

Loads use one ``UNWIND`` statement per batch: a round trip and a
transaction per thousands of rows instead of one per row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from graphkit.core.errors import StoreError
from graphkit.core.graph import LineageVocabulary
from graphkit.core.names import NAME_PATTERN as NAME_PATTERN  # re-exported
from graphkit.core.names import NAME_RULE, is_name


def quote_name(name: str, what: str = "label") -> str:
    """``name`` backtick-quoted, or :class:`StoreError` if it is not a plain identifier.

    >>> quote_name("Thread")
    '`Thread`'
    """
    if not is_name(name):
        raise StoreError(f"refusing {what} {name!r} for Neo4j",
                         hint=f"names must match {NAME_RULE}")
    # The pattern already excludes backticks; quoting still keeps reserved
    # words (e.g. a label called `Match`) from being parsed as keywords.
    return f"`{name}`"


# --- schema -----------------------------------------------------------------


def unique_id_constraint(label: str, key: str = "id") -> str:
    """``CREATE CONSTRAINT … IF NOT EXISTS`` making ``key`` unique on ``label``.

    The constraint is also the index every ``MERGE``/``MATCH`` by id uses.
    """
    q_label, q_key = quote_name(label), quote_name(key, "property")
    return (
        f"CREATE CONSTRAINT {quote_name(f'graphkit_{label}_{key}'[:64], 'constraint')}"
        f" IF NOT EXISTS FOR (n:{q_label}) REQUIRE n.{q_key} IS UNIQUE"
    )


def property_index(label: str, prop: str) -> str:
    """``CREATE INDEX … IF NOT EXISTS`` on one property of a label (range index)."""
    q_label, q_prop = quote_name(label), quote_name(prop, "property")
    return (
        f"CREATE INDEX {quote_name(f'graphkit_{label}_{prop}'[:64], 'index')}"
        f" IF NOT EXISTS FOR (n:{q_label}) ON (n.{q_prop})"
    )


AWAIT_INDEXES = "CALL db.awaitIndexes($seconds)"


# --- loads ------------------------------------------------------------------


def merge_nodes(label: str, props: Sequence[str] = (),
                epoch: Mapping[str, int] | None = None, *, node_ids: bool = False) -> str:
    """Upsert a batch of ``label`` nodes sent column-wise.

    Parameters: ``$ids`` (the node ids) and ``$c0``, ``$c1``, … (one list per
    property in ``props``, same order and length). Columns instead of one map
    per row: the driver packs ~3× less, and the client shares 2 cores with the
    server. ``SET n += {…}`` with a null value removes that property, so nulls
    are never stored and a rerun after a value became null converges.

    It returns the count written (``written``); with ``node_ids``, instead, each
    written row's position in the batch (``rows``) and its node's internal id
    (``node_ids``), so relationships can find their ends by id
    (:func:`relationships_by_node_id`) instead of by an index seek.
    """
    return _node_batch("MERGE", label, props, epoch, node_ids)


def create_nodes(label: str, props: Sequence[str] = (),
                 epoch: Mapping[str, int] | None = None, *, node_ids: bool = False) -> str:
    """Create a batch of ``label`` nodes sent column-wise (parameters and
    results as in :func:`merge_nodes`), for a database holding none of the
    graph's labels.

    No lookup before the write: the uniqueness constraint still refuses a
    second node with the same id, so a race with another load fails instead
    of duplicating. ``SET n += {…}`` skips null values as :func:`merge_nodes` does.
    """
    return _node_batch("CREATE", label, props, epoch, node_ids)


def _node_batch(verb: str, label: str, props: Sequence[str],
                epoch: Mapping[str, int] | None, node_ids: bool) -> str:
    returning = ("RETURN collect(i) AS rows, collect(id(n)) AS node_ids" if node_ids
                 else "RETURN count(n) AS written")
    return (
        "UNWIND range(0, size($ids) - 1) AS i"
        f" {verb} (n:{quote_name(label)} {{id: $ids[i]}})"
        f" SET n += {_props_map(props, epoch)} {returning}"
    )


def merge_relationships(
    rel_type: str, source_label: str, target_label: str, props: Sequence[str] = (),
    epoch: Mapping[str, int] | None = None,
) -> str:
    """Upsert a batch of typed relationships sent column-wise.

    Parameters: ``$sources``, ``$targets`` (node ids) and ``$c0``, … as in
    :func:`merge_nodes`. Both ends are matched by label and id (the constraint
    index); a row whose end is missing matches nothing and is not counted.
    """
    return _relationship_batch("MERGE", rel_type, source_label, target_label, props, epoch)


def create_relationships(
    rel_type: str, source_label: str, target_label: str, props: Sequence[str] = (),
    epoch: Mapping[str, int] | None = None,
) -> str:
    """Create a batch of typed relationships (parameters as in
    :func:`merge_relationships`), for a database where none of their ends existed
    before the load: no relationship between them can exist yet."""
    return _relationship_batch("CREATE", rel_type, source_label, target_label, props, epoch)


def _relationship_batch(verb: str, rel_type: str, source_label: str, target_label: str,
                        props: Sequence[str], epoch: Mapping[str, int] | None) -> str:
    return (
        "UNWIND range(0, size($sources) - 1) AS i"
        f" MATCH (a:{quote_name(source_label)} {{id: $sources[i]}})"
        f" MATCH (b:{quote_name(target_label)} {{id: $targets[i]}})"
        f" {verb} (a)-[r:{quote_name(rel_type, 'relationship type')}]->(b)"
        f" SET r += {_props_map(props, epoch)} RETURN count(r) AS written"
    )


def relationships_by_node_id(
    rel_type: str, source_label: str, target_label: str, props: Sequence[str] = (),
    epoch: Mapping[str, int] | None = None, *, create: bool = True,
) -> str:
    """Create (or with ``create=False`` merge) a batch of typed relationships
    whose ends are found by the internal ids this load's node batches returned.

    Parameters: ``$s``, ``$t`` (internal node ids), ``$sources``, ``$targets``
    (graphkit ids) and ``$c0``, … as in :func:`merge_relationships`. A seek by
    internal id reads one record; the label and ``id`` checks after it make a
    node that another client deleted (its id reused) match nothing, as a
    missing end does in :func:`merge_relationships`, never the wrong node.
    """
    verb = "CREATE" if create else "MERGE"
    # The ids are compared after a projection: written as `a.id = $sources[i]`
    # the planner turns that into a (locking) unique-index seek and only
    # filters on id(a), the very seek this query exists to avoid (PROFILE).
    return (
        "UNWIND range(0, size($s) - 1) AS i"
        f" MATCH (a) WHERE id(a) = $s[i] AND a:{quote_name(source_label)}"
        f" MATCH (b) WHERE id(b) = $t[i] AND b:{quote_name(target_label)}"
        " WITH i, a, b, a.id AS a_id, b.id AS b_id"
        " WHERE a_id = $sources[i] AND b_id = $targets[i]"
        f" {verb} (a)-[r:{quote_name(rel_type, 'relationship type')}]->(b)"
        f" SET r += {_props_map(props, epoch)} RETURN count(r) AS written"
    )


def _props_map(props: Sequence[str], epoch: Mapping[str, int] | None = None) -> str:
    # Property names are spliced (quoted); their values are parameters $c<n>.
    # A property in `epoch` arrives as an integer count of 1/epoch[p] seconds
    # since 1970 and is made a DateTime in zone UTC here (see utc_from_epoch).
    entries = []
    for i, p in enumerate(props):
        value = f"$c{i}[i]"
        if epoch and p in epoch:
            value = utc_from_epoch(value, epoch[p])
        entries.append(f"{quote_name(p, 'property')}: {value}")
    return "{" + ", ".join(entries) + "}"


def utc_from_epoch(value: str, per_second: int) -> str:
    """Cypher for a zoned DateTime (zone ``UTC``, as the driver stores a
    Python datetime whose tzinfo is ``ZoneInfo("UTC")``) from ``value``, a
    non-negative integer count of ``1/per_second`` seconds since 1970, or null.

    The driver packs a datetime in pure Python (~100 µs each, most of a load's
    client time); an integer packs in well under 1 µs.

    >>> utc_from_epoch("$c0[i]", 1_000_000)[:60]
    'CASE WHEN $c0[i] IS NULL THEN null ELSE datetime({datetime: '
    """
    if per_second not in (1, 1_000, 1_000_000, 1_000_000_000):
        raise StoreError(f"no epoch unit of 1/{per_second} s")
    nanos = 1_000_000_000 // per_second
    return (f"CASE WHEN {value} IS NULL THEN null ELSE datetime({{datetime: "
            f"datetime.fromepoch({value} / {per_second}, {value} % {per_second} * {nanos}), "
            f"timezone: 'UTC'}}) END")


def count_nodes(labels: Iterable[str]) -> str:
    """One row ``{label, count}`` per label, 0 for an absent one (a bare
    ``MATCH … count()`` grouped by the label literal would return no row)."""
    parts = [
        f"RETURN {_string_literal(lab)} AS label, COUNT {{ (:{quote_name(lab)}) }} AS count"
        for lab in labels
    ]
    if not parts:
        raise StoreError("no labels to count")
    return " UNION ALL ".join(parts)


def count_relationships(rel_types: Iterable[str]) -> str:
    """One row ``{type, count}`` per relationship type."""
    parts = [
        f"RETURN {_string_literal(t)} AS type,"
        f" COUNT {{ ()-[:{quote_name(t, 'relationship type')}]->() }} AS count"
        for t in rel_types
    ]
    if not parts:
        raise StoreError("no relationship types to count")
    return " UNION ALL ".join(parts)


def delete_nodes_batch(label: str) -> str:
    """Detach-delete up to ``$limit`` nodes of ``label``; returns ``deleted``.

    Run repeatedly until it deletes fewer than ``$limit``: one transaction per
    batch keeps the transaction state (and the heap) bounded.
    """
    return (
        f"MATCH (n:{quote_name(label)}) WITH n LIMIT $limit"
        " DETACH DELETE n RETURN count(*) AS deleted"
    )


def create_load_marker(label: str) -> str:
    """One marker node saying a load of ``$labels`` in mode ``$mode`` is under way
    (``$token`` is that load's, ``$host``/``$pid`` its client's): it is committed
    first, so a load that does not finish leaves it."""
    return (f"CREATE (m:{quote_name(label)} {{labels: $labels, mode: $mode, token: $token, "
            "host: $host, pid: $pid, started_at: datetime()}) RETURN count(m) AS written")


def delete_load_markers(label: str) -> str:
    """Remove the markers a finished load makes stale: its own (``$token``); with
    ``$replace`` every one (a replace rewrote the whole of its labels); else those of
    unfinished merges of labels among ``$labels`` (merging the graph again converges
    them). A killed replace's marker stays until a replace finishes: labels it had
    not yet cleared still hold the old graph's nodes."""
    return (f"MATCH (m:{quote_name(label)}) WHERE $replace OR m.token = $token "
            "OR (m.mode IN ['merge', 'fail'] AND all(l IN coalesce(m.labels, []) "
            "WHERE l IN $labels)) DELETE m RETURN count(*) AS deleted")


def load_markers(label: str) -> str:
    """Every load marker, oldest first (a marker from before modes were kept was a
    replace's)."""
    return (f"MATCH (m:{quote_name(label)}) RETURN coalesce(m.mode, 'replace') AS mode, "
            "m.labels AS labels, toString(m.started_at) AS started_at, m.host AS host, "
            "m.pid AS pid ORDER BY m.started_at")


def _string_literal(name: str) -> str:
    # Only ever called on names quote_name accepted: no quotes or backslashes.
    quote_name(name)
    return f"'{name}'"


# --- lineage reads: names from the contract's lineage vocabulary -------------


def resolve(v: LineageVocabulary) -> str:
    """Thread hits by user-facing id or an alias, Session hits by session id.

    UNION (not UNION ALL) drops a thread matched by two of its ids; one branch
    per property instead of an OR so each one is an index seek.

    >>> print(resolve(LineageVocabulary()).splitlines()[1])
    MATCH (t:`Thread`) WHERE t.`thread_id` = $id
    """
    thread, session = quote_name(v.thread), quote_name(v.session)
    tid, tsess = quote_name(v.thread_key, "property"), quote_name(v.thread_session, "property")
    skey = quote_name(v.session_key, "property")
    branches = [
        f"MATCH (t:{thread}) WHERE t.{quote_name(prop, 'property')} = $id\n"
        f"RETURN {_string_literal(v.thread)} AS type, t.id AS node_id, t.{tid} AS id, "
        f"t.{tsess} AS session_id"
        for prop in (v.thread_key, *v.thread_aliases)
    ]
    branches.append(
        f"MATCH (s:{session}) WHERE s.{skey} = $id\n"
        f"RETURN {_string_literal(v.session)} AS type, s.id AS node_id, s.{skey} AS id, "
        f"s.{skey} AS session_id")
    return "\n" + "\nUNION\n".join(branches) + "\n"


def parent_edges(v: LineageVocabulary) -> str:
    """The parent edges above a thread, in one round trip.

    The store walks them in Python with exactly the NetworkX store's rules
    (nearest first, smallest parent id on a fork, stop before a node already
    seen). ``WITH DISTINCT`` on the reachable nodes, before the last hop, lets
    the planner use its pruning breadth-first expand (each node visited once)
    instead of enumerating every path, which grows exponentially with the
    diamonds of a hostile graph; a plan test pins it.

    >>> print(parent_edges(LineageVocabulary()).splitlines()[1])
    WITH DISTINCT c
    """
    start = f"(:{quote_name(v.thread)} {{id: $id}})"
    return _reachable_edges(start, v.parent, "->", "", "c.id AS child, p.id AS node_id, "
                            + _hit_columns(v))


def child_edges(v: LineageVocabulary) -> str:
    """The parent edges below a thread (see :func:`parent_edges`)."""
    start = f"(:{quote_name(v.thread)} {{id: $id}})"
    return _reachable_edges(start, v.parent, "<-", "", "c.id AS parent, p.id AS node_id, "
                            + _hit_columns(v))


def continuation_edges(v: LineageVocabulary, continues: str, *, up: bool) -> str:
    """The ``continues`` edges reachable from the session whose key is ``$id``
    (``up``: to what it continues; else from what continues it), in one round
    trip: ``start`` (the session's node id), ``near``/``far`` (the edge's end
    nearer to and farther from the session), ``how``, and ``key`` (the far
    end's session key). Every reachable Session-to-Session edge comes back and
    the caller walks them breadth first (:mod:`graphkit.queries.continuations`),
    so an edge reached only through another label is fetched but never walked.

    >>> print(continuation_edges(LineageVocabulary(), "CONTINUES", up=True).splitlines()[0])
    MATCH (s:`Session`) WHERE s.`session_id` = $id
    """
    skey = quote_name(v.session_key, "property")
    return _session_edges(v, continues, "$id", "->" if up else "<-",
                          f"s.id AS start, c.id AS near, p.id AS far, r.`how` AS how, "
                          f"p.{skey} AS key")


def thread_walk(v: LineageVocabulary, node: str = "$id", session: str = "$session") -> str:
    """A thread's parent edges above (``dir`` = ``up``) and below (``down``)
    and, when the vocabulary names continuation edges, those its session
    (``$session``) continues (``continues``): what ``graphkit lineage`` walks,
    in one round trip instead of three. Columns: ``dir``, ``near``, ``far``,
    ``id`` and ``session_id`` (of a far thread; ``id`` is a far session's key),
    ``how`` and ``start`` (the session's node id) of a continuation.

    >>> [line.split(" AS dir")[0] for line in thread_walk(LineageVocabulary()).splitlines()
    ...  if " AS dir" in line]
    ["RETURN DISTINCT 'up'", "RETURN DISTINCT 'down'", "RETURN DISTINCT 'continues'"]
    """
    start = f"(:{quote_name(v.thread)} {{id: {node}}})"
    branches = [
        _reachable_edges(start, v.parent, arrow, "",
                         f"'{d}' AS dir, c.id AS near, p.id AS far, {_hit_columns(v)}, "
                         "null AS how, null AS start")
        for d, arrow in (("up", "->"), ("down", "<-"))]
    if v.continues:
        skey = quote_name(v.session_key, "property")
        branches.append(_session_edges(
            v, v.continues, session, "->",
            f"'continues' AS dir, c.id AS near, p.id AS far, p.{skey} AS id, "
            "null AS session_id, r.`how` AS how, s.id AS start"))
    return "\nUNION ALL\n".join(branches)


def lineage_walk(v: LineageVocabulary) -> str:
    """:func:`resolve` of ``$id`` and, when it names exactly one thread, that
    thread's :func:`thread_walk`, in one round trip: a thread's lineage is then
    one query, not two (each round trip costs about as much as the walk itself
    on a warm server). The first row has ``dir`` = ``'hits'`` and the resolved
    hits in ``hits``; the others are :func:`thread_walk`'s rows (``hits`` null).
    An id naming no thread, or several, comes back with its hits alone and the
    caller falls back to the separate questions.

    The subqueries use the importing ``WITH`` (every Neo4j 5), not the scope
    clause ``CALL (x)`` of 5.23 and later.

    >>> q = lineage_walk(LineageVocabulary())
    >>> q.count("UNION ALL"), q.splitlines()[-1]
    (3, 'RETURN dir, found AS hits, near, far, id, session_id, how, start')
    """
    thread = _string_literal(v.thread)
    walk = thread_walk(v, node="hit.node_id", session="hit.session_id")
    branches = ["WITH hits\nRETURN hits AS found, 'hits' AS dir, null AS near, null AS far, "
                "null AS id, null AS session_id, null AS how, null AS start"]
    branches += [
        "WITH hit\n" + b.replace("RETURN DISTINCT ", "RETURN DISTINCT null AS found, ", 1)
        for b in walk.split("\nUNION ALL\n")]
    return ("CALL {" + resolve(v) + "}\n"
            "WITH collect({type: type, node_id: node_id, id: id, session_id: session_id})"
            " AS hits\n"
            f"WITH hits, [h IN hits WHERE h.type = {thread}] AS threads\n"
            # One thread node (two of its ids may both have matched): walk it.
            "WITH hits, CASE WHEN size(threads) > 0 AND all(h IN threads WHERE "
            "h.node_id = threads[0].node_id) THEN threads[0] END AS hit\n"
            "CALL {\n" + "\nUNION ALL\n".join(branches) + "\n}\n"
            "RETURN dir, found AS hits, near, far, id, session_id, how, start")


def _session_edges(v: LineageVocabulary, rel_type: str, param: str, arrow: str,
                   columns: str) -> str:
    """:func:`_reachable_edges` from the session ``s`` whose key is ``param``,
    Session to Session."""
    session, skey = quote_name(v.session), quote_name(v.session_key, "property")
    return (f"MATCH (s:{session}) WHERE s.{skey} = {param}\n"
            + _reachable_edges("(s)", rel_type, arrow, f":{session}", columns, keep="s, "))


def _hit_columns(v: LineageVocabulary) -> str:
    tid, tsess = quote_name(v.thread_key, "property"), quote_name(v.thread_session, "property")
    return f"p.{tid} AS id, p.{tsess} AS session_id"


def _reachable_edges(start: str, rel_type: str, arrow: str, label: str, columns: str,
                     keep: str = "") -> str:
    """The ``rel_type`` edges ``(c)-[r]-(p)`` whose near end ``c`` is reachable
    from ``start`` along ``arrow`` (``->`` or ``<-``), ``c`` and ``p`` with
    ``label`` (``""`` for any), returning ``columns``."""
    rel = quote_name(rel_type, "relationship type")
    head, tail = ("-", "->") if arrow == "->" else ("<-", "-")
    return (f"MATCH {start}{head}[:{rel}*0..]{tail}(c{label})\n"
            f"WITH DISTINCT {keep}c\n"
            f"MATCH (c){head}[r:{rel}]{tail}(p{label})\n"
            f"RETURN DISTINCT {columns}")


def session_threads(v: LineageVocabulary) -> str:
    """A session's threads with their parent and agent.

    min()/head(collect()) keep one row per thread even if a thread had two
    parents or two agents; ordering makes the pick deterministic.
    """
    session, thread = quote_name(v.session), quote_name(v.thread)
    has_thread = quote_name(v.has_thread, "relationship type")
    parent = quote_name(v.parent, "relationship type")
    skey, tid = quote_name(v.session_key, "property"), quote_name(v.thread_key, "property")
    if v.agent and v.has_agent:
        agent = (f"OPTIONAL MATCH (t)-[:{quote_name(v.has_agent, 'relationship type')}]->"
                 f"(a:{quote_name(v.agent)})\n"
                 "WITH t, parent, a ORDER BY a.id\n"
                 "WITH t, parent, head(collect(a)) AS a\n")
        agent_cols = "a.agent_type AS agent_type, a.description AS description"
    else:
        agent, agent_cols = "", "null AS agent_type, null AS description"
    return (f"MATCH (:{session} {{{skey}: $id}})-[:{has_thread}]->(t:{thread})\n"
            f"OPTIONAL MATCH (t)-[:{parent}]->(p)\n"
            "WITH DISTINCT t, min(p.id) AS parent\n"
            + agent +
            f"RETURN t.id AS node_id, t.{tid} AS id, parent AS parent_node_id, t.kind AS kind,\n"
            f"       {agent_cols}, t.messages AS messages, t.first_seen AS first_seen\n"
            "ORDER BY id, node_id")


def node_properties(label: str, key: str) -> str:
    """Every property of the ``label`` nodes whose ``key`` is in ``$values``.

    >>> node_properties("Thread", "id")
    'MATCH (n:`Thread`) WHERE n.`id` IN $values RETURN properties(n) AS p ORDER BY n.id'
    """
    return (f"MATCH (n:{quote_name(label)}) WHERE n.{quote_name(key, 'property')} IN $values "
            "RETURN properties(n) AS p ORDER BY n.id")


def sessions(v: LineageVocabulary) -> str:
    """One row per session: threads, agents (threads with a parent or an agent
    node: Claude subagents and Codex child threads), messages, first/last seen."""
    session = quote_name(v.session)
    has_thread = quote_name(v.has_thread, "relationship type")
    parent = quote_name(v.parent, "relationship type")
    skey = quote_name(v.session_key, "property")
    agent_rel = (f" OR EXISTS {{ (t)-[:{quote_name(v.has_agent, 'relationship type')}]->() }}"
                 if v.has_agent else "")
    return (f"MATCH (s:{session})\n"
            f"RETURN s.{skey} AS session_id,\n"
            f"       COUNT {{ (s)-[:{has_thread}]->() }} AS threads,\n"
            f"       COUNT {{ MATCH (s)-[:{has_thread}]->(t) WHERE EXISTS "
            f"{{ (t)-[:{parent}]->() }}{agent_rel} }} AS agents,\n"
            "       coalesce(s.messages, 0) AS messages,\n"
            "       s.first_seen AS first_seen, s.last_seen AS last_seen\n"
            "ORDER BY session_id")


# --- generic tables: a node type's or an edge type's properties ---------------


def node_rows(label: str, columns: Sequence[str], where: str | None = None) -> str:
    """Nodes of ``label`` as ``id`` plus ``vals`` (the ``columns``' values, in
    order); with ``where`` (a property name) only those whose value is in ``$values``.

    >>> print(node_rows("File", ["file_path"], where="id"))
    MATCH (n:`File`) WHERE n.`id` IN $values
    RETURN n.id AS id, [n.`file_path`] AS vals ORDER BY id
    """
    cond = f" WHERE n.{quote_name(where, 'property')} IN $values" if where else ""
    vals = ", ".join(f"n.{quote_name(c, 'property')}" for c in columns)
    return (f"MATCH (n:{quote_name(label)}){cond}\n"
            f"RETURN n.id AS id, [{vals}] AS vals ORDER BY id")


def edge_rows(rel_type: str, source_label: str, target_label: str, columns: Sequence[str],
              from_sources: bool = False, to_targets: bool = False) -> str:
    """Relationships of ``rel_type`` between the two labels as ``source``,
    ``target`` (node ids) and ``vals``; with ``from_sources`` only those from
    the node ids in ``$sources``, with ``to_targets`` only those to the ids in
    ``$targets`` (index seeks).

    >>> print(edge_rows("TOUCHED", "Thread", "File", ["reads"], from_sources=True))
    MATCH (a:`Thread`)-[r:`TOUCHED`]->(b:`File`) WHERE a.id IN $sources
    RETURN a.id AS source, b.id AS target, [r.`reads`] AS vals ORDER BY source, target
    """
    conds = (["a.id IN $sources"] if from_sources else []) + (
        ["b.id IN $targets"] if to_targets else [])
    cond = " WHERE " + " AND ".join(conds) if conds else ""
    vals = ", ".join(f"r.{quote_name(c, 'property')}" for c in columns)
    return (f"MATCH (a:{quote_name(source_label)})-[r:{quote_name(rel_type, 'relationship type')}]"
            f"->(b:{quote_name(target_label)}){cond}\n"
            f"RETURN a.id AS source, b.id AS target, [{vals}] AS vals ORDER BY source, target")
