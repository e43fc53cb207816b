"""Project contract-shaped rows into node and edge tables, all in Arrow.

The pipeline, each step one or a few pyarrow compute calls over the whole
table: derive columns → reject unusable rows → drop duplicate parts → order
rows → group by node key (aggregating properties) → build edge keys (joins and
chains included) → map keys to node ids. Only the id hashing loops in Python,
once per distinct node key. Which rows are used (rejects, duplicates, order) is
:mod:`graphkit.projection.verdict`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from graphkit.contract.expr import JsonPath, any_valid, json_paths
from graphkit.contract.loader import LoadedContract, lineage_vocabulary
from graphkit.contract.spec import Aggregation, EdgeRule, Filter, NodeRule, Unnest
from graphkit.core.content import reads_content
from graphkit.core.graph import NODE_ID, EdgeTable, GraphTables, NodeTable
from graphkit.core.ids import NODE_ID_RECIPE, hash_key_texts, key_texts
from graphkit.core.schema import CONTENT_COLUMNS, FILE_COL, ROW_COL
from graphkit.projection import verdict as verdicts
from graphkit.projection.conform import combine_dictionaries, has_unique_dictionary
from graphkit.projection.edges import (
    NodeIndex,
    edge_groups,
    groups_without_nodes,
    narrow,
    project_edges,
    texts_tell_apart,
)
from graphkit.projection.groups import (
    aggregate,
    dictionary_sizes,
    drop_absent,
    encode,
    key_codes,
    single,
)
from graphkit.projection.unnest import Parsed, unnest_rows

#: Called with (graph, "nodes" or "edges", type, table) as each table is finished.
TableSink = Callable[[GraphTables, str, str, pa.Table], None]


@dataclass(frozen=True)
class Shortcuts:
    """Shortcuts the projection takes where they give the same tables as the
    plain way. Each can be turned off: the tests build both ways and compare,
    and a benchmark can measure what a shortcut buys."""

    #: Parse JSON-path columns on a second thread while rejects, dedupe and
    #: order are worked out (possible when those read no JSON-derived column).
    overlap_json: bool = True
    #: Dedupe on a dictionary-coded key by its indices, not a hash group-by of rows.
    dedupe_on_dictionary: bool = True
    #: Group node and edge rows by their key columns and build key texts per
    #: group, where that provably equals grouping by key text per row.
    group_by_key_columns: bool = True
    #: Dictionary-encode the text columns the rules read (``message_id``: a hash
    #: of ~1M ids) on a second thread while dedupe and order are worked out,
    #: where no row is rejected (the columns are then the very ones encoded later).
    encode_early: bool = True
    #: Start each edge type as soon as its two node types are projected (and group
    #: the rows of joined and chained edge rules, which need no node, beside the
    #: first node rules), rather than all node rules first, then all edge rules.
    rules_as_ready: bool = True


SHORTCUTS = Shortcuts()


@dataclass
class Projection:
    """The graph a contract made of some rows, and the account of those rows."""

    graph: GraphTables
    rows_read: int
    rows_used: int
    duplicates: int
    rejects: pa.Table
    dropped_edges: dict[str, dict[str, int]] = field(default_factory=dict)
    #: With ``project(..., unresolved=True)``: per edge type, the edges an end of which
    #: is no node of these rows (see :func:`graphkit.projection.edges.project_edges`).
    unresolved: dict[str, pa.Table] = field(default_factory=dict)

    @property
    def rows_rejected(self) -> int:
        """Rows that went to the rejects file."""
        return self.rejects.num_rows


def _project_nodes(rule: NodeRule, rows: pa.Table,
                   by_columns: bool = True) -> tuple[NodeTable, NodeIndex]:
    """The nodes of ``rule``, sorted by id, and their index for the edges.

    Rows are grouped by the key columns (dictionary indices, no text per row)
    and key texts built per group. Two different keys can share a key text,
    and so a node id, when a value holds the separator or is the null marker
    (:mod:`graphkit.core.ids`); then the rows are grouped by key text instead,
    making such keys one node, whose key columns hold each part's first value.
    """
    key = list(rule.key)
    used = set(key) | {a.column for a in rule.properties.values() if a.column != "*"}
    t = narrow(rows, used, rule.where).select([c for c in rows.column_names if c in used])
    valid = any_valid(t, key)
    if not pc.all(valid).as_py():  # a key of a never-null column: no copy of 1M rows
        t = t.filter(valid)
    grouped = None
    codes = None
    sizes = dictionary_sizes(t, key)
    if by_columns:
        grouped = aggregate(t, key, rule.properties, key_indices=True)
        ktext = key_texts([grouped.column(k) for k in key], grouped.num_rows)
        if not texts_tell_apart(t, grouped, key) and \
                pc.count_distinct(ktext).as_py() != grouped.num_rows:
            grouped = None
        elif sizes is not None:
            codes = key_codes(grouped, key, sizes)
    if grouped is None:
        grouped, ktext = _group_by_key_text(t, key, rule.properties)
    grouped = drop_absent(grouped.select([*key, *rule.properties]), rule.properties)
    ids = hash_key_texts(rule.type, ktext)
    table = grouped.add_column(0, NODE_ID, ids)
    order = pc.sort_indices(table, sort_keys=[(NODE_ID, "ascending")])
    table = table.take(order)
    import numpy as np

    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order.to_numpy()] = np.arange(len(order))
    coded = codes is not None and sizes is not None
    index = NodeIndex(ktext, pa.array(ranks), single(table.column(NODE_ID)),
                      tuple(key) if coded else (),
                      (sizes or ()) if coded else (), codes)
    return NodeTable(rule.type, tuple(key), table), index


def _group_by_key_text(t: pa.Table, key: list[str],
                       props: dict[str, Aggregation]) -> tuple[pa.Table, pa.Array]:
    """(key columns + properties per key text, the key texts): the per-row way."""
    text = "__key_text"
    keyed = t.append_column(text, key_texts([t.column(k) for k in key], t.num_rows))
    parts = {f"__key_{i}": Aggregation(first=k) for i, k in enumerate(key)}
    g = aggregate(keyed, [text], {**parts, **props})
    names = [*key, *props]
    return pa.Table.from_arrays(g.columns[1:], names=names), single(g.column(text))


def derive(contract: LoadedContract, rows: pa.Table) -> pa.Table:
    """``rows`` with the contract's derived columns appended, in contract order."""
    for name, expr in contract.derived.items():
        rows = rows.append_column(name, expr.evaluate(rows))
    return rows


def content_columns(contract: LoadedContract) -> set[str]:
    """Columns (input or derived) that carry message content: the content columns,
    JSON paths that reach model-written text (a subagent's description:
    :data:`~graphkit.core.schema.CONTENT_PATHS`), and what is derived from either."""
    out = {c for c in CONTENT_COLUMNS if c in contract.spec.input}
    for name, expr in contract.derived.items():
        if expr.columns() & out or (isinstance(expr, JsonPath)
                                    and reads_content(expr.column, expr.path)):
            out.add(name)
    return out


def _coded(table: pa.Table, positions: pa.Array | None, plain: set[str],
           ready: dict[str, Future[pa.Array]] | None = None) -> pa.Table:
    """``table`` (taken at ``positions``) with its text columns dictionary-encoded,
    except ``plain`` ones; ``ready``: columns of ``table`` already being encoded
    (:func:`_encode_early`).

    Encoding before the take means the take copies int32 indices, not strings.
    """
    early = ready or {}

    def one(f: pa.Field) -> pa.Array | pa.ChunkedArray:
        col = table.column(f.name)
        if f.name in early:
            col = early[f.name].result()
        elif f.name not in plain:
            col = encode(col, unique=has_unique_dictionary(f))
        if positions is None:
            return col
        if len(col) and col.null_count == len(col):
            # A column no source filled (resumes, forks, token counts in many rows): the
            # take is all nulls whatever the positions, so none is read (nor its pages).
            return _nulls_like(col, len(positions))
        return pc.take(col, positions)

    # Columns on two threads: with the text already encoded, the work is
    # Arrow's take of int32 indices, which runs without the GIL.
    with _pool(table.num_rows) as pool:
        cols = list(pool.map(one, table.schema))
    return pa.Table.from_arrays(cols, names=table.column_names)


def _nulls_like(col: pa.Array | pa.ChunkedArray, n: int) -> pa.Array:
    """``n`` nulls of ``col``'s type (a dictionary column keeps its dictionary)."""
    if pa.types.is_dictionary(col.type):
        dictionary = (col.chunk(0) if isinstance(col, pa.ChunkedArray) else col).dictionary
        return pa.DictionaryArray.from_arrays(pa.nulls(n, col.type.index_type), dictionary,
                                              ordered=col.type.ordered)
    return pa.nulls(n, col.type)


# Below this many rows Arrow's kernels are too short for a second thread to win: starting
# threads and handing the GIL back and forth cost more (an incremental build projects a
# few hundred rows of the sessions written to).
_THREADED_ROWS = 2_000


class _InThisThread:
    """An executor's ``submit``/``map`` run right away in the calling thread."""

    def __enter__(self) -> _InThisThread:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]:
        done: Future[Any] = Future()
        try:
            done.set_result(fn(*args))
        except BaseException as exc:  # raised by result(), as a thread's would be
            done.set_exception(exc)
        return done

    def map(self, fn: Callable[..., Any], *items: Iterable[Any]) -> Iterator[Any]:
        return iter([fn(*args) for args in zip(*items, strict=True)])


_Pool = ThreadPoolExecutor | _InThisThread


def _pool(rows: int) -> _Pool:
    """Threads for independent node (then edge) rules: their group-bys run in
    Arrow with the GIL released. Results are taken in rule order, so the graph
    is the same as built one rule after another (as it is for a table of fewer than
    ``_THREADED_ROWS`` rows, whose rules run one after another in this thread)."""
    if rows < _THREADED_ROWS:
        return _InThisThread()
    return ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1))


def _json_plan(contract: LoadedContract,
               rows: pa.Table) -> dict[str, list[tuple[str, JsonPath]]]:
    """The derived JSON-path columns of input columns, by the column they read."""
    by_column: dict[str, list[tuple[str, JsonPath]]] = {}
    for name, expr in contract.derived.items():
        if (isinstance(expr, JsonPath) and expr.column in rows.column_names
                and expr.column not in contract.derived):
            by_column.setdefault(expr.column, []).append((name, expr))
    return by_column


def _json_derived(contract: LoadedContract, rows: pa.Table) -> dict[str, pa.Array]:
    """Derived JSON-path columns of input columns, each column's documents parsed once."""
    out: dict[str, pa.Array] = {}
    for column, exprs in _json_plan(contract, rows).items():
        values = json_paths(rows.column(column), [e.path for _, e in exprs])
        out.update({name: v for (name, _), v in zip(exprs, values, strict=True)})
    return out


def _used_columns(contract: LoadedContract) -> set[str]:
    """Every column a node or edge rule reads (keys, properties, filters, joins, chains)."""
    used: set[str] = set()

    def props(p: dict[str, Aggregation]) -> None:
        used.update(a.column for a in p.values() if a.column != "*")

    for n in contract.spec.nodes:
        if n.unnest is not None:
            used.add(n.unnest.column)
        used.update(n.key)
        props(n.properties)
        if n.where is not None:
            used |= n.where.columns()
    for e in contract.spec.edges:
        if e.unnest is not None:
            used.add(e.unnest.column)
        used.update(k for k in (*e.from_.key, *e.to.key) if k is not None)
        props(e.properties)
        if e.where is not None:
            used |= e.where.columns()
        if e.join is not None:
            used.update([e.join.column, e.join.matches, *e.join.same])
            if e.join.where is not None:
                used |= e.join.where.columns()
        if e.chain is not None:
            used.update([*e.chain.within, *e.chain.order_by])
    return used


def _unencoded(contract: LoadedContract) -> set[str]:
    """Columns the rules read only where their text serves as well as a dictionary:
    counted (``count``: non-null rows) or matched by a join (a hash lookup of the
    few names the left side holds). Encoding such a column (``tool_call_id``: an id
    per call) would hash every row's value for nothing."""
    counted: set[str] = set()
    other: set[str] = set()

    def tests(f: Filter | None) -> set[str]:
        # Null tests read only validity; any other test reads the values.
        return set() if f is None else f.columns() - {*f.not_null, *f.is_null}

    def props(p: dict[str, Aggregation]) -> None:
        for a in p.values():
            if a.column != "*":
                (counted if a.op == "count" else other).add(a.column)

    spec = contract.spec
    for n in spec.nodes:
        props(n.properties)
        other.update(n.key)
        other |= tests(n.where)
        if n.unnest is not None:
            other.add(n.unnest.column)
    for e in spec.edges:
        props(e.properties)
        other.update(k for k in (*e.from_.key, *e.to.key) if k is not None)
        other |= tests(e.where)
        if e.unnest is not None:
            other.add(e.unnest.column)
        if e.join is not None:
            counted.add(e.join.matches)
            other.update([e.join.column, *e.join.same])
            other |= tests(e.join.where)
        if e.chain is not None:
            other.update([*e.chain.within, *e.chain.order_by])
    return counted - other


def project(
    contract: LoadedContract,
    rows: pa.Table,
    *,
    granularity: str = "thread",
    include_content: bool = False,
    shortcuts: Shortcuts = SHORTCUTS,
    sink: TableSink | None = None,
    unresolved: bool = False,
) -> Projection:
    """Turn contract-shaped rows (see :func:`graphkit.projection.conform.conform_sources`)
    into a :class:`~graphkit.core.graph.GraphTables`.

    Properties computed from message content are left out unless
    ``include_content`` is set. ``sink`` is called with the graph, ``"nodes"`` or
    ``"edges"``, the type and its table as each table is finished, before the others
    are (where the rules run as they become ready: :attr:`Shortcuts.rules_as_ready`);
    the snapshot writer starts on them then (:class:`graphkit.snapshot.write.EarlyTables`).
    ``unresolved``: an edge an end of which is no node of these rows is kept in
    :attr:`Projection.unresolved` rather than counted as dropped (a partition of the
    rows: its edge may end in another partition's node).
    """
    if granularity not in ("thread", "message"):
        raise ValueError(f"granularity must be 'thread' or 'message', not {granularity!r}")
    read = rows.num_rows
    # Group-bys over dictionary indices need one dictionary per column.
    parsed = Parsed()  # the unnested arrays' documents, for the check and the unnest
    rows, verdict = _derive_and_sort(contract, combine_dictionaries(rows), shortcuts, parsed)
    verdict = verdicts.reject_non_numbers(contract, rows, verdict,
                                          shortcuts.dedupe_on_dictionary, parsed)
    rows, rejects = verdicts.split_rejects(rows, verdict.bad, verdict.reason, verdict.column)
    used_rows = rows.num_rows if verdict.positions is None else len(verdict.positions)
    plain = _plain_columns(contract)
    keep = _coded_columns(contract) | plain
    rows = rows.select([c for c in rows.column_names if c in keep])
    rows = _coded(rows, verdict.positions, plain, verdict.encoded)
    content = content_columns(contract)
    # The unsorted copies are garbage now; hand their pages back to the OS so
    # the peak RSS of a large build stays near what Arrow actually holds.
    pa.default_memory_pool().release_unused()
    graph = GraphTables(contract.name, contract.version, NODE_ID_RECIPE, granularity,
                        lineage=lineage_vocabulary(contract))
    graph.meta["content_properties"] = {
        r.type: [p for p, a in r.properties.items() if a.column in content]
        for r in contract.spec.nodes}
    lost: dict[str, list[pa.Table]] | None = {} if unresolved else None
    dropped = _project_graph(contract, rows, graph, None if include_content else content,
                             shortcuts, sink, parsed, lost)
    graph.meta["indexes"] = {r.type: list(r.index) for r in contract.spec.nodes
                             if r.type in graph.nodes}
    return Projection(graph, read, used_rows, verdict.duplicates, rejects, dropped,
                      {t: ts[0] for t, ts in (lost or {}).items() if ts})


def _plain_columns(contract: LoadedContract) -> set[str]:
    """Columns the rules read that stay as they are (content, and text only counted
    or matched: :func:`_unencoded`)."""
    used = _used_columns(contract) - {FILE_COL, ROW_COL}
    return used & (content_columns(contract) | _unencoded(contract))


def _coded_columns(contract: LoadedContract) -> set[str]:
    """Columns the rules read that :func:`_coded` dictionary-encodes (where text)."""
    return _used_columns(contract) - {FILE_COL, ROW_COL} - _plain_columns(contract)


def _derive_and_sort(contract: LoadedContract, rows: pa.Table, shortcuts: Shortcuts,
                     parsed: Parsed | None = None) -> tuple[pa.Table, verdicts.Verdict]:
    """``rows`` with the derived columns appended, and the verdict on them.

    JSON paths (the one step with Python per document) run on a second thread
    while rejects, dedupe and order are worked out without them, unless those
    read a JSON-derived column (then the verdict comes after, "late"). Where the
    verdict reads no derived column at all, the other derived columns are made
    on the second thread too.
    """
    spec = contract.spec
    deferred = {name for exprs in _json_plan(contract, rows).values() for name, _ in exprs}
    for name, expr in contract.derived.items():
        if name in deferred or expr.columns() & deferred:
            deferred.add(name)

    def plain_derived(table: pa.Table) -> pa.Table:
        # In contract order: a derived column may read one derived before it.
        for name, expr in contract.derived.items():
            if name not in deferred:
                table = table.append_column(name, expr.evaluate(table))
        return table

    keys = verdicts.reject_columns(contract) | set(verdicts.key_columns(spec))
    early = shortcuts.overlap_json and not (keys & deferred)
    aside = early and not (keys & set(contract.derived))
    source = rows  # what the jobs read (``rows`` is rebound to the result below)

    def appended(base: pa.Table, json_values: dict[str, pa.Array]) -> pa.Table:
        # Every derived column in contract order; those reading a JSON-derived one are
        # evaluated here (a derived column may read any derived before it).
        out = source
        for name, expr in contract.derived.items():
            if name not in deferred:
                out = out.append_column(name, base.column(name))
            else:
                value = json_values.get(name)
                out = out.append_column(name, expr.evaluate(out) if value is None else value)
        return out

    def with_derived(deriving: Future[pa.Table]) -> pa.Table:
        # On the pool: the columns reading JSON-derived ones (two coalesces of token
        # paths, ~0.02 s at 1M rows) are made right after the paths, beside the dedupe,
        # not after it on one core. The plain derived job was submitted before this one:
        # on a first-in-first-out pool a job may wait only for one submitted before it.
        json_values = _json_derived(contract, source)
        return appended(deriving.result(), json_values)

    verdict = None
    with _pool(rows.num_rows) as pool:
        if aside:
            pending = pool.submit(with_derived, pool.submit(plain_derived, rows))
            base = rows
        else:
            paths = pool.submit(_json_derived, contract, rows)
            base = plain_derived(rows)
        if early:
            verdict = _verdict(contract, base, shortcuts, pool, parsed)
        rows = pending.result() if aside else appended(base, paths.result())
    del base
    return rows, verdict or _verdict(contract, rows, shortcuts)


def _verdict(contract: LoadedContract, rows: pa.Table, shortcuts: Shortcuts,
             pool: _Pool | None = None, parsed: Parsed | None = None) -> verdicts.Verdict:
    bad, reason, column = verdicts.reject_mask(contract, rows)
    # The sort goes on the pool ahead of the encodes: queued behind them it ran last,
    # and the dedupe, which waits for it, ended alone on one core.
    sorting = verdicts.start_order(contract.spec, rows, bad, pool) if pool is not None else None
    encoded = (_encode_early(contract, rows, bad, pool)
               if pool is not None and shortcuts.encode_early else {})
    if parsed is not None and pool is not None:
        for array in verdicts.unnested_sums(contract):
            if array in encoded:
                # The documents the non-number check (then the unnest) reads, taken apart
                # on the pool beside the dedupe rather than after it. The job only waits
                # for the encoding, submitted before it: no deadlock on a FIFO pool.
                pool.submit(_parse_encoded, parsed, encoded[array])
    positions, duplicates = verdicts.positions_of(contract.spec, rows, bad,
                                                 shortcuts.dedupe_on_dictionary, pool,
                                                 sorting)
    return verdicts.Verdict(bad, reason, column, positions, duplicates, encoded)


def _parse_encoded(parsed: Parsed, encoding: Future[pa.Array]) -> None:
    parsed.parts(encoding.result().dictionary)


def _encode_early(contract: LoadedContract, rows: pa.Table, bad: pa.Array,
                  pool: _Pool) -> dict[str, Future[pa.Array]]:
    """The text columns of ``rows`` that :func:`_coded` will encode, submitted to
    ``pool`` now, so the hashing (Arrow, no GIL) runs beside dedupe and order.

    Only where no row is rejected: then :func:`~graphkit.projection.verdict.split_rejects`
    keeps ``rows`` as they are and each column encoded here is the very column
    ``_coded`` would encode, so the dictionaries are the same. Columns already
    holding a dictionary of unique values cost nothing there and are left to it."""
    if pc.any(bad).as_py():
        return {}
    wanted = _coded_columns(contract)
    return {f.name: pool.submit(encode, rows.column(f.name))
            for f in rows.schema
            if f.name in wanted and not has_unique_dictionary(f)
            and (pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
                 or pa.types.is_dictionary(f.type))}


def _rule_columns(rule: NodeRule | EdgeRule) -> set[str]:
    """The columns a node or edge rule reads (keys, properties, filters, join, chain)."""
    cols = {a.column for a in rule.properties.values() if a.column != "*"}
    filters = [rule.where]
    edge: Any = rule if hasattr(rule, "from_") else None  # plain or pydantic, either kind
    if edge is None:
        cols.update(rule.key)  # type: ignore[union-attr]
    else:
        cols.update(k for k in [*edge.from_.key, *edge.to.key] if k is not None)
        if edge.join is not None:
            cols.update([edge.join.column, edge.join.matches, *edge.join.same])
            filters.append(edge.join.where)
        if edge.chain is not None:
            cols.update([*edge.chain.within, *edge.chain.order_by])
    for f in filters:
        if f is not None:
            cols.update(f.columns())
    return cols


def _project_graph(contract: LoadedContract, rows: pa.Table, graph: GraphTables,
                   content: set[str] | None, shortcuts: Shortcuts,
                   sink: TableSink | None = None,
                   parsed: Parsed | None = None,
                   lost: dict[str, list[pa.Table]] | None = None) -> dict[str, dict[str, int]]:
    """Fill ``graph`` with the node and edge tables of the rules active at its
    granularity (properties read from ``content`` columns left out); return
    the rows each edge type dropped, by reason. ``lost``: where given, each edge
    type's unresolved edges go there (``project_edges``' ``unresolved``)."""
    spec = contract.spec
    active = ("thread",) if graph.granularity == "thread" else ("thread", "message")

    def without_content(rule: NodeRule | EdgeRule) -> Any:
        if content is None:
            return rule
        props = {p: a for p, a in rule.properties.items() if a.column not in content}
        return rule.model_copy(update={"properties": props})

    node_rules = [without_content(r) for r in spec.nodes if r.granularity in active]
    indexes: dict[str, NodeIndex] = {}
    by_columns = shortcuts.group_by_key_columns

    def unnest_key(spec: Unnest) -> tuple[str, tuple[tuple[str, str], ...]]:
        return spec.column, tuple(sorted(spec.fields.items()))

    # The columns the rules of each unnest read: only these are repeated per element.
    reads: dict[tuple[str, tuple[tuple[str, str], ...]], set[str]] = {}
    for r in [*node_rules, *spec.edges]:
        if r.unnest is not None:
            reads.setdefault(unnest_key(r.unnest), {r.unnest.column}).update(_rule_columns(r))

    unnested: dict[tuple[str, tuple[tuple[str, str], ...]], Future[pa.Table]] = {}

    def start(specs: list[Unnest | None], pool: _Pool) -> None:
        # Rules that unnest the same array the same way share one repeated table. It
        # is made on the pool, submitted before the rules: it runs beside the first
        # rules (Arrow, no GIL), and a rule reading it waits for a job already running.
        for u in specs:
            if u is not None and (key := unnest_key(u)) not in unnested:
                unnested[key] = pool.submit(unnest_rows, rows.select(
                    [c for c in rows.column_names if c in reads[key]]), u, parsed)

    def rows_for(spec: Unnest | None) -> pa.Table:
        return rows if spec is None else unnested[unnest_key(spec)].result()

    by_type = _edge_rules(spec.edges, {r.type for r in node_rules}, active, without_content)
    if shortcuts.rules_as_ready:
        with _pool(rows.num_rows) as pool:
            start([r.unnest for r in [*node_rules, *(rs[0] for rs in by_type.values())]],
                  pool)
            return _rules_as_ready(node_rules, by_type, rows_for, graph, pool, by_columns,
                                   sink, lost)
    with _pool(rows.num_rows) as pool:
        start([r.unnest for r in node_rules], pool)
        for rule, (table, index) in zip(node_rules, pool.map(
                lambda r: _project_nodes(r, rows_for(r.unnest), by_columns), node_rules),
                strict=True):
            graph.nodes[rule.type] = table
            indexes[rule.type] = index
    dropped: dict[str, dict[str, int]] = {}
    with _pool(rows.num_rows) as pool:
        start([rs[0].unnest for rs in by_type.values()], pool)
        for etype, (etable, edrop) in zip(by_type, pool.map(
                lambda rs: project_edges(rs, rows_for(rs[0].unnest), indexes,
                                         by_columns=by_columns,
                                         unresolved=_lost_list(lost, rs[0].type)),
                by_type.values()), strict=True):
            graph.edges[etype], dropped[etype] = etable, edrop
    return dropped


def _lost_list(lost: dict[str, list[pa.Table]] | None, etype: str) -> list[pa.Table] | None:
    """The list an edge type's unresolved edges go to (made here, before the pool's
    threads append to it), or None where they are counted as dropped."""
    return None if lost is None else lost.setdefault(etype, [])


def _edge_rules(edges: Iterable[EdgeRule], node_types: set[str], active: tuple[str, ...],
                prepare: Callable[[EdgeRule], EdgeRule]) -> dict[str, list[EdgeRule]]:
    """The active edge rules whose two node types are projected, by edge type
    (in contract order)."""
    by_type: dict[str, list[EdgeRule]] = {}
    for e in edges:
        if e.granularity in active and e.from_.type in node_types and e.to.type in node_types:
            by_type.setdefault(e.type, []).append(prepare(e))
    return by_type


def _rules_as_ready(node_rules: list[NodeRule], by_type: dict[str, list[EdgeRule]],
                    rows_for: Callable[[Unnest | None], pa.Table], graph: GraphTables,
                    pool: _Pool, by_columns: bool,
                    sink: TableSink | None,
                    lost: dict[str, list[pa.Table]] | None = None) -> dict[str, dict[str, int]]:
    """Project the node and edge rules on ``pool``, each edge type submitted as soon
    as its two node types are done; fill ``graph`` in rule order (as the rules one
    after another would) and return the rows each edge type dropped. Each table is
    handed to ``sink`` as soon as it is made (in the order they finish).

    Node rules go first, those more edge types wait for first (Thread: a long rule
    that nearly every edge needs); right after the first, the groups of joined and
    chained edge rules, which read no node (:func:`groups_without_nodes`), so they run
    beside it instead of after all node rules. A job only ever waits for one submitted
    before it (the unnests, the early groups): with the pool's FIFO queue that never
    blocks, also on one worker.
    """
    waits_on = {r.type: sum(1 for rs in by_type.values()
                            if any(r.type in (e.from_.type, e.to.type) for e in rs))
                for r in node_rules}
    order = sorted(node_rules, key=lambda r: -waits_on[r.type])  # stable: contract order

    def node(r: NodeRule) -> Future[tuple[NodeTable, NodeIndex]]:
        return pool.submit(lambda: _project_nodes(r, rows_for(r.unnest), by_columns))

    def group(e: EdgeRule) -> Future[pa.Table] | None:
        if not groups_without_nodes(e, by_columns):
            return None
        return pool.submit(lambda: edge_groups(e, rows_for(e.unnest), by_columns, {}))

    nodes = {r.type: node(r) for r in order[:1]}
    early = {etype: [group(e) for e in rs] for etype, rs in by_type.items()}
    nodes.update({r.type: node(r) for r in order[1:]})

    def edges(rs: list[EdgeRule], ready: list[Future[pa.Table] | None],
              indexes: dict[str, NodeIndex],
              out: list[pa.Table] | None) -> tuple[EdgeTable, dict[str, int]]:
        return project_edges(rs, rows_for(rs[0].unnest), indexes, by_columns=by_columns,
                             groups=[None if f is None else f.result() for f in ready],
                             unresolved=out)

    waiting = dict(by_type)
    edge_jobs: dict[str, Future[Any]] = {}
    kind_of: dict[Future[Any], tuple[str, str]] = {f: ("nodes", t) for t, f in nodes.items()}
    left: set[Future[Any]] = set(nodes.values())
    while left:
        finished, left = wait(left, return_when=FIRST_COMPLETED)
        for f in finished:
            if sink is not None and f.exception() is None:
                sink(graph, *kind_of[f], f.result()[0].table)
        done = {t for t, f in nodes.items() if f.done() and f.exception() is None}
        for etype, rs in list(waiting.items()):
            ends = {t for e in rs for t in (e.from_.type, e.to.type)}
            if ends <= done:
                indexes = {t: nodes[t].result()[1] for t in ends}
                edge_jobs[etype] = pool.submit(edges, rs, early[etype], indexes,
                                               _lost_list(lost, etype))
                kind_of[edge_jobs[etype]] = ("edges", etype)
                left.add(edge_jobs[etype])
                del waiting[etype]
    for rule in node_rules:  # a failed rule raises here, the first in rule order
        graph.nodes[rule.type] = nodes[rule.type].result()[0]
    dropped: dict[str, dict[str, int]] = {}
    for etype in by_type:
        graph.edges[etype], dropped[etype] = edge_jobs[etype].result()
    return dropped
