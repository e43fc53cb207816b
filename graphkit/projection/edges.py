"""Edge rules: rows → (source key, target key) groups → node ids.

An edge's ends are functions of a few key columns, so the rows are grouped by
those (dictionary-coded) columns first and key texts are built per group, not
per row. That equals grouping by key text whenever the texts of different
groups differ, which is checked; if two groups share a text (a value holding
the key separator), the rule takes the per-row path instead.
"""

from __future__ import annotations

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.contract.expr import any_valid, filter_mask
from graphkit.contract.spec import Aggregation, EdgeRule, Filter
from graphkit.core.graph import EDGE_SOURCE, EDGE_TARGET, EdgeTable
from graphkit.core.ids import hash_key_texts, key_texts, parts_split_back
from graphkit.projection.groups import (
    aggregate,
    decoded,
    dictionary_sizes,
    drop_absent,
    key_codes,
    single,
)

_ROWS = "__rows"
_SRC_RANK = "__src_rank"
_DST_RANK = "__dst_rank"
# Columns of an edge group holding its end key columns' values (see ``ends`` below).
_END = "__end_"
#: The row-count column of an unresolved edge group (:func:`project_edges`' ``unresolved``).
UNRESOLVED_ROWS = "rows"


class NodeIndex(msgspec.Struct):
    """Key text → id of every node of one type."""

    keys: pa.Array  # key text per node
    # Position of each node in the node table (sorted by id), aligned with
    # keys: sorting edges by these int ranks gives the order sorting by the id
    # texts would, and the table's ids taken at a rank are the node's id.
    ranks: pa.Array
    sorted_ids: pa.Array
    # Where the nodes were grouped by dictionary-coded key columns whose texts
    # tell keys apart: those columns, their dictionary sizes and each node's
    # key code (groups.key_codes). An edge end grouped by the same columns of
    # the same rows is looked up by code (int64), not by key text.
    code_columns: tuple[str, ...] = ()
    code_sizes: tuple[int, ...] = ()
    codes: pa.Array | None = None

    def codes_of(self, end: list[str | None], groups: pa.Table,
                 sizes: tuple[int, ...] | None) -> pa.Array | None:
        """The key codes of an edge end's groups, where they compare with the
        nodes' codes (the same key columns, dictionaries of the same sizes)."""
        if self.codes is None or tuple(end) != self.code_columns or sizes != self.code_sizes:
            return None
        return key_codes(groups, self.code_columns, self.code_sizes)


def _end_text(table: pa.Table, cols: list[str | None]) -> pa.Array:
    return key_texts([None if k is None else table.column(k) for k in cols], table.num_rows)


def _joined_target(rule: EdgeRule) -> list[str | None]:
    """The columns of a joined table holding the target key: the right row's
    (``__r_`` + name), except for the join's own keys, which Arrow's join
    keeps only on the left, where they hold the same values."""
    assert rule.join is not None
    j = rule.join
    on_left = {j.matches: j.column, **{s: s for s in j.same}}
    return [None if k is None else on_left.get(k, "__r_" + k) for k in rule.to.key]


def narrow(rows: pa.Table, cols: set[str], where: Filter | None) -> pa.Table:
    """``rows`` cut to ``cols`` (and the filter's columns), filtered by ``where``.

    Cutting first matters: a filter copies every column it keeps.
    """
    keep = cols | (where.columns() if where is not None else set())
    t = rows.select([c for c in rows.column_names if c in keep])
    return t.filter(filter_mask(t, where)) if where is not None else t


def _prop_cols(rule: EdgeRule) -> list[str]:
    return sorted({a.column for a in rule.properties.values() if a.column != "*"})


def texts_tell_apart(rows: pa.Table, groups: pa.Table, cols: list[str]) -> bool:
    """Whether key texts built from ``cols`` of ``groups`` (groups of ``rows``)
    surely differ between groups: every value splits back out of its text
    (:func:`graphkit.core.ids.parts_split_back`). ``False`` means "not known".
    A dictionary column of ``rows`` is tested on its dictionary (each value
    once), not on the groups."""
    for c in cols:
        col = rows.column(c)
        if pa.types.is_dictionary(col.type) and col.num_chunks == 1:
            values = col.chunk(0).dictionary
        else:
            values = groups.column(c)
        if not parts_split_back(values):
            return False
    return True


def _end_key(groups: pa.Table, end: list[str | None], index: NodeIndex,
             rows: pa.Table) -> pa.Array:
    """Per group, the key code of an edge end (int64) if ``index`` takes codes
    for it, else its key text."""
    cols = [k for k in end if k is not None]
    codes = index.codes_of(end, groups, dictionary_sizes(rows, cols)
                           if len(cols) == len(end) else None)
    return codes if codes is not None else _end_text(groups, end)


def _grouped_fast(rule: EdgeRule, rows: pa.Table, indexes: dict[str, NodeIndex],
                  ends: bool = False) -> pa.Table | None:
    """(``__src``, ``__dst``, properties..., ``__rows``) per edge, grouping rows by
    their end key columns first; ``None`` where that would not equal grouping by
    key text. ``ends``: where an end is named by key code, the groups also carry
    the end key columns (``__end_<column>``), so its key text can be made later."""
    from_cols = [k for k in rule.from_.key if k is not None]
    to_cols = [k for k in rule.to.key if k is not None]
    if rule.join is None:
        ends_cols = sorted({*from_cols, *to_cols})
        t = narrow(rows, {*ends_cols, *_prop_cols(rule)}, rule.where)
        g = aggregate(t, ends_cols, {**rule.properties, _ROWS: Aggregation(count="*")},
                      key_indices=True)
        g = g.filter(pc.and_(any_valid(g, list(rule.from_.key)),
                             any_valid(g, list(rule.to.key))))
        # An end is named by its key code where the node type allows, else by
        # key text; groups then map to distinct (source, target) pairs unless
        # two groups share a key text.
        src = _end_key(g, rule.from_.key, indexes[rule.from_.type], t)
        dst = _end_key(g, rule.to.key, indexes[rule.to.type], t)
        pairs = pa.table({"__src": src, "__dst": dst})
        texts = pa.types.is_string(src.type) or pa.types.is_string(dst.type)
        if texts and not texts_tell_apart(t, g, ends_cols) and pairs.group_by(
                ["__src", "__dst"], use_threads=False).aggregate([]).num_rows != pairs.num_rows:
            return None
        out = pairs
        for name in [*rule.properties, _ROWS]:
            out = out.append_column(name, g.column(name))
        if ends and not (pa.types.is_string(src.type) and pa.types.is_string(dst.type)):
            for c in ends_cols:
                out = out.append_column(_END + c, g.column(c))
        return out
    if rule.properties:
        # Properties of joined rows would need re-aggregating per joined group.
        return None
    j = rule.join
    left_cols = sorted({j.column, *j.same, *from_cols})
    t = narrow(rows, set(left_cols), rule.where)
    left = t.select(left_cols).filter(pc.is_valid(t.column(j.column)))
    # Each left group stands for its rows: their count rides along as __rows.
    left = aggregate(left, left_cols, {_ROWS: Aggregation(count="*")})
    right_cols = sorted({j.matches, *j.same, *to_cols})
    right = narrow(rows, set(right_cols), j.where)
    # An inner join keeps only right rows whose value some left row names, so
    # the rest are dropped before grouping (e.g. of all tool calls, only those
    # that spawned a subagent).
    right = right.select(right_cols).filter(
        _named_by(right.column(j.matches), left.column(j.column)))
    right = aggregate(right, right_cols, {})
    right = right.rename_columns(["__r_" + c for c in right.column_names])
    joined = left.join(right, keys=[j.column, *j.same],
                       right_keys=["__r_" + j.matches, *["__r_" + s for s in j.same]],
                       join_type="inner", use_threads=False)
    target = _joined_target(rule)
    ok = pc.and_(any_valid(joined, list(rule.from_.key)), any_valid(joined, target))
    joined = joined.filter(ok)
    keyed = pa.table({"__src": _end_text(joined, rule.from_.key),
                      "__dst": _end_text(joined, target),
                      _ROWS: joined.column(_ROWS)})
    g = keyed.group_by(["__src", "__dst"], use_threads=False).aggregate([(_ROWS, "sum")])
    return g.rename_columns(["__src", "__dst", _ROWS])


def _named_by(col: pa.ChunkedArray, refs: pa.ChunkedArray) -> pa.Array:
    """Rows of ``col`` (not null) whose value is among the values of ``refs``;
    for dictionary columns the test runs once per dictionary entry."""
    ref = single(refs)
    if pa.types.is_dictionary(ref.type):
        values = ref.dictionary.take(pc.unique(ref.indices).drop_null())
    else:
        values = pc.unique(ref)
    values = values.drop_null()
    arr = single(col)
    if pa.types.is_dictionary(arr.type):
        answers = pc.is_in(arr.dictionary, value_set=values.cast(arr.dictionary.type))
        return pc.fill_null(pc.take(answers, arr.indices), False)
    return pc.fill_null(pc.is_in(arr, value_set=values.cast(arr.type)), False)


def _edge_keys(rule: EdgeRule, rows: pa.Table) -> pa.Table:
    """Rows of (``__src``, ``__dst``, property columns...) before grouping: the
    per-row path."""
    prop_cols = _prop_cols(rule)
    ends = {k for k in (*rule.from_.key, *rule.to.key) if k is not None}
    join_cols = {rule.join.column, *rule.join.same} if rule.join is not None else set()
    t = decoded(narrow(rows, ends | set(prop_cols) | join_cols, rule.where))
    if rule.join is not None:
        j = rule.join
        left_cols = sorted({j.column, *j.same, *[k for k in rule.from_.key if k], *prop_cols})
        left = t.select(left_cols).filter(pc.is_valid(t.column(j.column)))
        right_cols = sorted({j.matches, *j.same, *[k for k in rule.to.key if k]})
        right = decoded(narrow(rows, set(right_cols), j.where))
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
        target = _joined_target(rule)
        src = _end_text(joined, rule.from_.key)
        src_valid = any_valid(joined, list(rule.from_.key))
        dst = _end_text(joined, target)
        dst_valid = any_valid(joined, target)
        base = joined
    else:
        src = _end_text(t, rule.from_.key)
        dst = _end_text(t, rule.to.key)
        src_valid = any_valid(t, list(rule.from_.key))
        dst_valid = any_valid(t, list(rule.to.key))
        base = t
    out = pa.table({"__src": src, "__dst": dst})
    for c in prop_cols:
        out = out.append_column(c, base.column(c))
    return out.filter(pc.and_(src_valid, dst_valid))


def _chain_keys(rule: EdgeRule, rows: pa.Table) -> pa.Table:
    assert rule.chain is not None
    cols = {k for k in rule.from_.key if k is not None}
    t = narrow(rows, cols | {*rule.chain.within, *rule.chain.order_by}, rule.where)
    t = t.filter(any_valid(t, list(rule.from_.key)))
    node = _end_text(t, rule.from_.key)
    within = key_texts([t.column(c) for c in rule.chain.within], t.num_rows)
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


def _rank(keys: pa.ChunkedArray | pa.Array, index: NodeIndex) -> pa.Array:
    """The rank of the node each of ``keys`` names (key texts, or key codes where
    the index has them), null where there is no such node."""
    by_code = pa.types.is_int64(keys.type)
    pos = pc.index_in(keys, value_set=index.codes if by_code else index.keys)
    return pc.take(index.ranks, pos)


def _rows_where(counts: pa.Array | pa.ChunkedArray, mask: pa.Array) -> int:
    """The sum of ``counts`` where ``mask`` holds."""
    return int(pc.sum(counts.filter(mask)).as_py() or 0)


def edge_groups(rule: EdgeRule, rows: pa.Table, by_columns: bool,
                indexes: dict[str, NodeIndex], ends: bool = False) -> pa.Table:
    """(``__src``, ``__dst``, properties..., ``__rows``) of one rule, one row per
    key-text pair, as :func:`project_edges` uses them (``indexes`` may be empty
    where :func:`groups_without_nodes` holds). ``ends``: groups named by key code
    also carry their end key columns (for :func:`project_edges`' ``unresolved``)."""
    if rule.chain is not None:
        keyed = _chain_keys(rule, rows)
        props: dict[str, Aggregation] = {}
    else:
        fast = _grouped_fast(rule, rows, indexes, ends) if by_columns else None
        if fast is not None:
            return fast
        keyed = _edge_keys(rule, rows)
        props = rule.properties
    # Group by the two key texts first: a key text names one node id, so these
    # groups are the (source, target) groups, and only one row per edge is
    # looked up. ``__rows`` keeps the row count so drops are still counted in rows.
    return aggregate(keyed, ["__src", "__dst"], {**props, _ROWS: Aggregation(count="*")})


def groups_without_nodes(rule: EdgeRule, by_columns: bool) -> bool:
    """Whether :func:`edge_groups` of ``rule`` reads no node index: only a plain
    rule grouped by its end key columns names its ends by the nodes' key codes;
    joined and chained rules (and the per-row way) name them by key text. Such a
    rule's groups can be made before any node table is."""
    return not (by_columns and rule.chain is None and rule.join is None)


def _end_ids(grouped: pa.Table, column: str, node_type: str,
             key: list[str | None]) -> pa.Array:
    """The node ids (by the id recipe) an end of edge groups names, found or not."""
    names = grouped.column(column)
    if pa.types.is_string(names.type):
        return hash_key_texts(node_type, names)
    # Named by key code: the key text comes from the end key columns the groups carry.
    cols = pa.table({k: grouped.column(_END + k) for k in key if k is not None})
    return hash_key_texts(node_type, _end_text(cols, key))


def _unresolved(parts: list[pa.Table]) -> pa.Table:
    """One row per (source, target) of the unresolved groups of an edge type's rules
    (``parts``, in rule order), made one as found edges of several rules are: ``first``
    of each property; the rows added up."""
    t = pa.concat_tables(parts, promote_options="permissive") if len(parts) > 1 else parts[0]
    if len(parts) > 1:
        props = {c: Aggregation(first=c) for c in t.column_names
                 if c not in (EDGE_SOURCE, EDGE_TARGET, UNRESOLVED_ROWS)}
        t = aggregate(t, [EDGE_SOURCE, EDGE_TARGET],
                      {**props, UNRESOLVED_ROWS: Aggregation(sum=UNRESOLVED_ROWS)})
    order = [(EDGE_SOURCE, "ascending"), (EDGE_TARGET, "ascending")]
    return t.take(pc.sort_indices(t, sort_keys=order))


def project_edges(
    rules: list[EdgeRule], rows: pa.Table, indexes: dict[str, NodeIndex], *,
    by_columns: bool = True, groups: list[pa.Table | None] | None = None,
    unresolved: list[pa.Table] | None = None,
) -> tuple[EdgeTable, dict[str, int]]:
    """The edges of the rules (all of one type), and the rows dropped by reason.

    ``by_columns`` lets a rule group its rows by their end key columns first
    where that equals grouping by key text; ``False`` always takes the per-row way.
    ``groups``: per rule, its :func:`edge_groups` if already made (else None).
    ``unresolved``: where given, the edges an end of which is no node of ``indexes``
    are not counted as dropped but appended to it as one table (``source`` and
    ``target`` ids by the id recipe, the properties, and :data:`UNRESOLVED_ROWS`,
    the rows behind each): a caller that projects part of the rows (a partition)
    resolves them against the nodes of all the rows.
    """
    first = rules[0]
    parts = []
    lost_parts: list[pa.Table] = []
    dropped = {"missing_source": 0, "missing_target": 0, "self_loop": 0}
    made = groups or [None] * len(rules)
    for rule, ready in zip(rules, made, strict=True):
        grouped = ready if ready is not None else edge_groups(
            rule, rows, by_columns, indexes, ends=unresolved is not None)
        # Ends are carried as ranks (ints) and made id texts once, at the end.
        src_rank = _rank(grouped.column("__src"), indexes[rule.from_.type])
        dst_rank = _rank(grouped.column("__dst"), indexes[rule.to.type])
        n = grouped.column(_ROWS)
        extra = [c for c in grouped.column_names if c.startswith(_END)]
        keyed = grouped.drop_columns(["__src", "__dst", _ROWS, *extra]) \
            .append_column(_SRC_RANK, src_rank).append_column(_DST_RANK, dst_rank)
        src_ok = pc.is_valid(src_rank)
        dst_ok = pc.is_valid(dst_rank)
        both = pc.and_(src_ok, dst_ok)
        if unresolved is not None:
            lost = grouped.filter(pc.invert(both))
            if lost.num_rows:
                ids = pa.table({
                    EDGE_SOURCE: _end_ids(lost, "__src", rule.from_.type, rule.from_.key),
                    EDGE_TARGET: _end_ids(lost, "__dst", rule.to.type, rule.to.key)})
                for c in keyed.column_names[:-2]:
                    ids = ids.append_column(c, lost.column(c))
                lost_parts.append(ids.append_column(UNRESOLVED_ROWS, lost.column(_ROWS)))
        else:
            dropped["missing_source"] += _rows_where(n, pc.invert(src_ok))
            dropped["missing_target"] += _rows_where(n, pc.and_(src_ok, pc.invert(dst_ok)))
        keyed = keyed.filter(both)
        n = n.filter(both)
        if rule.from_.type == rule.to.type:
            # One node table: the same rank is the same node.
            loops = pc.equal(keyed.column(_SRC_RANK), keyed.column(_DST_RANK))
            dropped["self_loop"] += _rows_where(n, loops)
            keyed = keyed.filter(pc.invert(loops))
        parts.append(keyed)
    table = pa.concat_tables(parts, promote_options="permissive") if len(parts) > 1 else parts[0]
    if len(parts) > 1:
        # Two rules can find the same edge (e.g. both lineage rules); keep one.
        table = aggregate(table, [_SRC_RANK, _DST_RANK],
                          {c: Aggregation(first=c) for c in table.column_names[:-2]})
    # The same order as sorting by (source, target) text: ranks follow the id
    # order within each node type, and an edge type has one type per end.
    order = pc.sort_indices(table, sort_keys=[(_SRC_RANK, "ascending"),
                                              (_DST_RANK, "ascending")])
    table = table.take(order)
    source = pc.take(indexes[first.from_.type].sorted_ids, table.column(_SRC_RANK))
    target = pc.take(indexes[first.to.type].sorted_ids, table.column(_DST_RANK))
    table = table.drop_columns([_SRC_RANK, _DST_RANK]) \
        .add_column(0, EDGE_SOURCE, source).add_column(1, EDGE_TARGET, target)
    table = drop_absent(table, {p: a for r in rules for p, a in r.properties.items()})
    if unresolved is not None and lost_parts:
        unresolved.append(_unresolved(lost_parts))
    return EdgeTable(first.type, first.from_.type, first.to.type, table), dropped
