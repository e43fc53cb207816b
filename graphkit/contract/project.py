"""Project contract-shaped rows into node and edge tables, all in Arrow.

The pipeline, each step one or a few pyarrow compute calls over the whole
table: derive columns → reject unusable rows → drop duplicate parts → order
rows → group by node key (aggregating properties) → build edge keys (joins and
chains included) → map keys to node ids. Only the id hashing loops in Python,
once per distinct node key.
"""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from graphkit.contract.expr import JsonPath, filter_mask, json_paths
from graphkit.contract.loader import LoadedContract
from graphkit.contract.model import Aggregation, EdgeRule, EndRef, Filter, NodeRule
from graphkit.graph import EDGE_SOURCE, EDGE_TARGET, NODE_ID, EdgeTable, GraphTables, NodeTable
from graphkit.ids import _NULL, _SEP, NODE_ID_RECIPE
from graphkit.schema import CONTENT_COLUMNS
from graphkit.sources.rows import FILE_COL, ROW_COL, arange

_ORDER = "__order"
_ROWS = "__rows"


@dataclass
class Projection:
    """The graph a contract made of some rows, and the account of those rows."""

    graph: GraphTables
    rows_read: int
    rows_used: int
    duplicates: int
    rejects: pa.Table
    dropped_edges: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def rows_rejected(self) -> int:
        """Rows that went to the rejects file."""
        return self.rejects.num_rows


def key_text(parts: list[pa.Array | pa.ChunkedArray | None], n: int) -> pa.Array:
    """One text per row joining the key parts the way :func:`graphkit.ids.node_id` does.

    ``None`` in ``parts`` is a key part that is always null.
    """
    arrays = []
    for p in parts:
        if p is None:
            arrays.append(pa.nulls(n, pa.string()))
        else:
            arr = p.combine_chunks() if isinstance(p, pa.ChunkedArray) else p
            arrays.append(arr if pa.types.is_string(arr.type) else arr.cast(pa.string()))
    return pc.binary_join_element_wise(*arrays, _SEP, null_handling="replace",
                                       null_replacement=_NULL)


def hash_ids(node_type: str, keys: pa.Array) -> pa.Array:
    """Node ids for distinct key texts (see :func:`graphkit.ids.node_id`)."""
    prefix = f"graphkit.node.v{NODE_ID_RECIPE}{_SEP}{node_type}{_SEP}".encode()
    sha = hashlib.sha256
    # The version-5 stamp sets hex digit 12 to "5"; the RFC 4122 variant sets the
    # top two bits of byte 8, i.e. maps hex digit 16 to one of "89ab". Building
    # the text directly gives what str(uuid.UUID(bytes=...)) gives, faster.
    variant = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}
    out = []
    for k in keys.to_pylist():
        h = sha(prefix + k.encode("utf-8")).hexdigest()
        out.append(f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{variant[h[16]]}{h[17:20]}-{h[20:32]}")
    return pa.array(out, pa.string())


def _all_valid(table: pa.Table, cols: list[str]) -> pa.Array:
    out = pc.is_valid(table.column(cols[0]))
    for c in cols[1:]:
        out = pc.and_(out, pc.is_valid(table.column(c)))
    return out


def _any_valid(table: pa.Table, cols: list[str | None]) -> pa.Array:
    masks = [pc.is_valid(table.column(c)) for c in cols if c is not None]
    if not masks:
        return pa.array([False] * table.num_rows)
    out = masks[0]
    for m in masks[1:]:
        out = pc.or_(out, m)
    return out


def _aggregate(
    table: pa.Table, keys: list[str], props: dict[str, Aggregation]
) -> pa.Table:
    """Group ``table`` by ``keys``; one output column per property, named for it."""
    specs: list[tuple[Any, str]] = []
    names: dict[tuple[str, str], str] = {}
    for agg in props.values():
        op = "count_all" if (agg.op == "count" and agg.column == "*") else agg.op
        col = "" if op == "count_all" else agg.column
        if (col, op) not in names:
            names[(col, op)] = "count_all" if op == "count_all" else f"{col}_{op}"
            specs.append(([] if op == "count_all" else col, op))
    grouped = table.group_by(keys, use_threads=False).aggregate(specs)
    cols = [grouped.column(k) for k in keys]
    out_names = list(keys)
    for prop, agg in props.items():
        op = "count_all" if (agg.op == "count" and agg.column == "*") else agg.op
        col = "" if op == "count_all" else agg.column
        cols.append(grouped.column(names[(col, op)]))
        out_names.append(prop)
    return pa.Table.from_arrays(cols, names=out_names)


@dataclass
class _NodeIndex:
    keys: pa.Array  # key text per node, aligned with ids
    ids: pa.Array


def _project_nodes(rule: NodeRule, rows: pa.Table) -> tuple[NodeTable, _NodeIndex]:
    used = set(rule.key) | {a.column for a in rule.properties.values() if a.column != "*"}
    t = rows
    if rule.where is not None:
        # Narrow to the columns the rule reads before filtering: filtering copies.
        t = t.select([c for c in t.column_names if c in used or c in rule.where.columns()])
        t = t.filter(filter_mask(t, rule.where))
    t = t.select([c for c in t.column_names if c in used])
    t = t.filter(_any_valid(t, list(rule.key)))
    grouped = _aggregate(t, list(rule.key), rule.properties)
    ktext = key_text([grouped.column(k) for k in rule.key], grouped.num_rows)
    ids = hash_ids(rule.type, ktext)
    table = grouped.add_column(0, NODE_ID, ids)
    order = pc.sort_indices(table, sort_keys=[(NODE_ID, "ascending")])
    table = table.take(order)
    return NodeTable(rule.type, tuple(rule.key), table), _NodeIndex(ktext, ids)


def _end_text(table: pa.Table, end: EndRef, prefix: str = "") -> pa.Array:
    return key_text([None if k is None else table.column(prefix + k) for k in end.key],
                    table.num_rows)


def _narrow(rows: pa.Table, cols: set[str], where: Filter | None) -> pa.Table:
    """``rows`` cut to ``cols`` (and the filter's columns), filtered by ``where``.

    Cutting first matters: a filter copies every column it keeps.
    """
    keep = cols | (where.columns() if where is not None else set())
    t = rows.select([c for c in rows.column_names if c in keep])
    return t.filter(filter_mask(t, where)) if where is not None else t


def _edge_keys(rule: EdgeRule, rows: pa.Table) -> tuple[pa.Table, list[str]]:
    """Rows of (``__src``, ``__dst``, property columns...) before grouping."""
    prop_cols = sorted({a.column for a in rule.properties.values() if a.column != "*"})
    ends = {k for k in (*rule.from_.key, *rule.to.key) if k is not None}
    join_cols = {rule.join.column, *rule.join.same} if rule.join is not None else set()
    t = _narrow(rows, ends | set(prop_cols) | join_cols, rule.where)
    if rule.join is not None:
        j = rule.join
        left_cols = sorted({j.column, *j.same, *[k for k in rule.from_.key if k], *prop_cols})
        left = t.select(left_cols).filter(pc.is_valid(t.column(j.column)))
        right_cols = sorted({j.matches, *j.same, *[k for k in rule.to.key if k]})
        right = _narrow(rows, set(right_cols), j.where)
        right = right.select(right_cols).filter(pc.is_valid(right.column(j.matches)))
        right = right.group_by(right_cols, use_threads=False).aggregate([])
        right = right.rename_columns(["__r_" + c for c in right.column_names])
        joined = left.join(
            right,
            keys=[j.column, *j.same],
            right_keys=["__r_" + j.matches, *["__r_" + s for s in j.same]],
            join_type="inner",
            use_threads=False,
        )
        src = _end_text(joined, rule.from_)
        src_valid = _any_valid(joined, list(rule.from_.key))
        dst = _end_text(joined, rule.to, prefix="__r_")
        dst_valid = _any_valid(joined, ["__r_" + k if k else None for k in rule.to.key])
        base = joined
    else:
        src = _end_text(t, rule.from_)
        dst = _end_text(t, rule.to)
        src_valid = _any_valid(t, list(rule.from_.key))
        dst_valid = _any_valid(t, list(rule.to.key))
        base = t
    out = pa.table({"__src": src, "__dst": dst})
    for c in prop_cols:
        out = out.append_column(c, base.column(c))
    return out.filter(pc.and_(src_valid, dst_valid)), prop_cols


def _chain_keys(rule: EdgeRule, rows: pa.Table) -> pa.Table:
    assert rule.chain is not None
    cols = {k for k in rule.from_.key if k is not None}
    t = _narrow(rows, cols | {*rule.chain.within, *rule.chain.order_by}, rule.where)
    t = t.filter(_any_valid(t, list(rule.from_.key)))
    node = _end_text(t, rule.from_)
    within = key_text([t.column(c) for c in rule.chain.within], t.num_rows)
    base = pa.table({"__node": node, "__within": within})
    for c in rule.chain.order_by:
        base = base.append_column("__o_" + c, t.column(c))
    # One entry per node within each group, at its earliest position.
    firsts = base.group_by(["__within", "__node"], use_threads=False).aggregate(
        [("__o_" + c, "min") for c in rule.chain.order_by])
    firsts = firsts.sort_by([("__within", "ascending")]
                            + [(f"__o_{c}_min", "ascending") for c in rule.chain.order_by]
                            + [("__node", "ascending")])
    n = firsts.num_rows
    if n < 2:
        return pa.table({"__src": pa.array([], pa.string()), "__dst": pa.array([], pa.string())})
    w = firsts.column("__within")
    nodes = firsts.column("__node")
    same = pc.equal(w.slice(0, n - 1), w.slice(1))
    return pa.table({"__src": nodes.slice(0, n - 1), "__dst": nodes.slice(1)}).filter(same)


def _lookup(keys: pa.ChunkedArray | pa.Array, index: _NodeIndex) -> pa.Array:
    pos = pc.index_in(keys, value_set=index.keys)
    return pc.take(index.ids, pos)


def _rows_where(counts: pa.Array, mask: pa.Array) -> int:
    """The sum of ``counts`` where ``mask`` holds."""
    return int(pc.sum(counts.filter(mask)).as_py() or 0)


def _project_edges(
    rules: list[EdgeRule], rows: pa.Table, indexes: dict[str, _NodeIndex]
) -> tuple[EdgeTable, dict[str, int]]:
    first = rules[0]
    parts = []
    dropped = {"missing_source": 0, "missing_target": 0, "self_loop": 0}
    for rule in rules:
        if rule.chain is not None:
            keyed = _chain_keys(rule, rows)
            props: dict[str, Aggregation] = {}
        else:
            keyed, _ = _edge_keys(rule, rows)
            props = rule.properties
        # Group by the two key texts first: a key text names one node id, so these
        # groups are the (source, target) groups, and only one row per edge is
        # looked up. ``__n`` keeps the row count so drops are still counted in rows.
        grouped = _aggregate(keyed, ["__src", "__dst"],
                             {**props, _ROWS: Aggregation(count="*")})
        src = _lookup(grouped.column("__src"), indexes[rule.from_.type])
        dst = _lookup(grouped.column("__dst"), indexes[rule.to.type])
        n = grouped.column(_ROWS)
        grouped = grouped.drop_columns(["__src", "__dst", _ROWS])
        keyed = grouped.add_column(0, EDGE_SOURCE, src).add_column(1, EDGE_TARGET, dst)
        src_ok = pc.is_valid(src)
        dst_ok = pc.is_valid(dst)
        dropped["missing_source"] += _rows_where(n, pc.invert(src_ok))
        dropped["missing_target"] += _rows_where(n, pc.and_(src_ok, pc.invert(dst_ok)))
        both = pc.and_(src_ok, dst_ok)
        keyed = keyed.filter(both)
        n = n.filter(both)
        loops = pc.equal(keyed.column(EDGE_SOURCE), keyed.column(EDGE_TARGET))
        dropped["self_loop"] += _rows_where(n, loops)
        parts.append(keyed.filter(pc.invert(loops)))
    table = pa.concat_tables(parts, promote_options="permissive") if len(parts) > 1 else parts[0]
    if len(parts) > 1:
        # Two rules can find the same edge (e.g. both lineage rules); keep one.
        table = _aggregate(table, [EDGE_SOURCE, EDGE_TARGET],
                           {c: Aggregation(first=c) for c in table.column_names[2:]})
    order = pc.sort_indices(table, sort_keys=[(EDGE_SOURCE, "ascending"),
                                              (EDGE_TARGET, "ascending")])
    table = table.take(order)
    return EdgeTable(first.type, first.from_.type, first.to.type, table), dropped


def _reject(contract: LoadedContract, rows: pa.Table) -> tuple[pa.Table, pa.Table]:
    n = rows.num_rows
    reason = pa.nulls(n, pa.string())
    column = pa.nulls(n, pa.string())
    rules = [(r.when, r.reason, r.column) for r in contract.spec.reject]
    for flt, why, col in rules:
        m = filter_mask(rows, flt)
        fresh = pc.and_(m, pc.is_null(reason))
        reason = pc.if_else(fresh, pa.scalar(why), reason)
        column = pc.if_else(fresh, pa.scalar(col, pa.string()), column)
    minv = contract.spec.min_schema_version
    if minv is not None and "schema_version" in rows.column_names:
        old = pc.fill_null(pc.less(rows.column("schema_version"), minv), False)
        fresh = pc.and_(old, pc.is_null(reason))
        reason = pc.if_else(
            fresh,
            pa.scalar(f"schema_version is older than {minv}: before LLP 0030 conversation_id "
                      "held the Claude session id, so these rows would be mis-read; "
                      "re-backfill them with a current writer"),
            reason)
        column = pc.if_else(fresh, pa.scalar("schema_version"), column)
    bad = pc.is_valid(reason)
    if not pc.any(bad).as_py():
        return rows, rows.slice(0, 0).append_column("__reason", pa.array([], pa.string())) \
            .append_column("__column", pa.array([], pa.string()))
    rejects = rows.filter(bad).append_column("__reason", reason.filter(bad)) \
        .append_column("__column", column.filter(bad))
    return rows.filter(pc.invert(bad)), rejects


def content_columns(contract: LoadedContract) -> set[str]:
    """Columns (input or derived) that carry message content."""
    out = {c for c in CONTENT_COLUMNS if c in contract.spec.input}
    for name, expr in contract.derived.items():
        if expr.columns() & out:
            out.add(name)
    return out


def _without_content(props: dict[str, Aggregation], content: set[str]) -> dict[str, Aggregation]:
    return {p: a for p, a in props.items() if a.column not in content}


def _take(table: pa.Table, positions: pa.Array) -> pa.Table:
    """``table.take(positions)``, a column per thread (each take releases the GIL)."""
    if table.num_columns < 2:
        return table.take(positions)
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        cols = list(pool.map(lambda c: pc.take(c, positions), table.columns))
    return pa.Table.from_arrays(cols, schema=table.schema)


def _json_derived(contract: LoadedContract, rows: pa.Table) -> dict[str, pa.Array]:
    """Derived JSON-path columns of input columns, each column's documents parsed once."""
    by_column: dict[str, list[tuple[str, JsonPath]]] = {}
    for name, expr in contract.derived.items():
        if (isinstance(expr, JsonPath) and expr.column in rows.column_names
                and expr.column not in contract.derived):
            by_column.setdefault(expr.column, []).append((name, expr))
    out: dict[str, pa.Array] = {}
    for column, exprs in by_column.items():
        values = json_paths(rows.column(column), [e.path for _, e in exprs])
        out.update({name: v for (name, _), v in zip(exprs, values, strict=True)})
    return out


def _used_columns(contract: LoadedContract) -> set[str]:
    """Every column a node or edge rule reads (keys, properties, filters, joins, chains)."""
    used: set[str] = set()

    def props(p: dict[str, Aggregation]) -> None:
        used.update(a.column for a in p.values() if a.column != "*")

    for n in contract.spec.nodes:
        used.update(n.key)
        props(n.properties)
        if n.where is not None:
            used |= n.where.columns()
    for e in contract.spec.edges:
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


def project(
    contract: LoadedContract,
    rows: pa.Table,
    *,
    granularity: str = "thread",
    include_content: bool = False,
) -> Projection:
    """Turn contract-shaped rows (see :func:`graphkit.sources.rows.read_sources`)
    into a :class:`~graphkit.graph.GraphTables`.

    Properties computed from message content are left out unless
    ``include_content`` is set.
    """
    if granularity not in ("thread", "message"):
        raise ValueError(f"granularity must be 'thread' or 'message', not {granularity!r}")
    spec = contract.spec
    read = rows.num_rows
    json_values = _json_derived(contract, rows)
    for name, expr in contract.derived.items():
        value = json_values.get(name)
        rows = rows.append_column(name, expr.evaluate(rows) if value is None else value)
    rows, rejects = _reject(contract, rows)
    # Dedupe and order by row positions, then take only the columns the rules
    # read, once: taking every column of a large table is the costly part.
    positions: pa.Array | None = None
    duplicates = 0
    if spec.dedupe:
        dedupe = [spec.dedupe] if isinstance(spec.dedupe, str) else list(spec.dedupe)
        keyed = rows.select(dedupe).append_column(
            _ORDER, arange(0, rows.num_rows))
        valid = _all_valid(keyed, dedupe)
        with_key = keyed.filter(valid) if not pc.all(valid).as_py() else keyed
        keep = with_key.group_by(dedupe, use_threads=False).aggregate([(_ORDER, "min")])
        if keep.num_rows != with_key.num_rows:
            duplicates = with_key.num_rows - keep.num_rows
            kept = keep.column(f"{_ORDER}_min").combine_chunks()
            if with_key.num_rows != keyed.num_rows:
                # Rows without a key cannot be told apart, so all of them stay.
                rest = keyed.filter(pc.invert(valid)).column(_ORDER).combine_chunks()
                kept = pa.concat_arrays([kept, rest])
            positions = pc.take(kept, pc.sort_indices(kept))
    if spec.order_by:
        keys = rows.select(spec.order_by)
        if positions is not None:
            keys = keys.take(positions)
        order = pc.sort_indices(keys, sort_keys=[(c, "ascending") for c in spec.order_by])
        positions = order if positions is None else pc.take(positions, order)
    used = _used_columns(contract) | set(spec.order_by)
    rows = rows.select([c for c in rows.column_names
                        if c in used and c not in (FILE_COL, ROW_COL)])
    if positions is not None:
        rows = _take(rows, positions)
    # The unsorted copies are garbage now; hand their pages back to the OS so
    # the peak RSS of a large build stays near what Arrow actually holds.
    pa.default_memory_pool().release_unused()

    graph = GraphTables(contract.name, contract.version, NODE_ID_RECIPE, granularity)
    indexes: dict[str, _NodeIndex] = {}
    active = ("thread",) if granularity == "thread" else ("thread", "message")
    content = content_columns(contract)
    graph.meta["content_properties"] = {
        r.type: [p for p, a in r.properties.items() if a.column in content] for r in spec.nodes}
    for rule in spec.nodes:
        if rule.granularity not in active:
            continue
        if not include_content:
            rule = rule.model_copy(update={"properties": _without_content(rule.properties,
                                                                          content)})
        table, index = _project_nodes(rule, rows)
        graph.nodes[rule.type] = table
        indexes[rule.type] = index
    dropped: dict[str, dict[str, int]] = {}
    by_type: dict[str, list[EdgeRule]] = {}
    for e in spec.edges:
        if e.granularity in active and e.from_.type in indexes and e.to.type in indexes:
            if not include_content:
                e = e.model_copy(update={"properties": _without_content(e.properties, content)})
            by_type.setdefault(e.type, []).append(e)
    for etype, rules in by_type.items():
        graph.edges[etype], dropped[etype] = _project_edges(rules, rows, indexes)
    graph.meta["indexes"] = {r.type: list(r.index) for r in spec.nodes if r.type in graph.nodes}
    return Projection(graph, read, rows.num_rows, duplicates, rejects, dropped)
