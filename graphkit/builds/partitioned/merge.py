"""Merge the partial tables of one node or edge type, one bucket at a time.

A node (or edge) found by one partition only is taken as that partition made
it. One found by several — a shared context node such as a Model, Tool or
Workspace — has its properties merged: ``min``/``max`` of the partitions'
answers, ``count`` summed, ``first``/``last`` from the partition whose
contributing row comes first/last in the build's row order (the order keys the
partitions carry). A ``count_distinct`` over rows of more than one partition
key value cannot be merged from partial answers and is refused.

An edge a partition could not resolve (an end is no node of its rows: a session
continuing one that fell in another partition) comes marked
(:data:`~graphkit.builds.partitioned.plan.UNRESOLVED`); once every node type is
merged, :class:`Resolver` keeps it if both its ends are nodes of some partition and
counts its rows as dropped otherwise — the in-memory build's edges and counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from graphkit.builds.partitioned.plan import HIDDEN, UNRESOLVED, PartitionError, Plan, TypePlan
from graphkit.core.graph import EDGE_SOURCE, EDGE_TARGET, NODE_ID
from graphkit.projection.groups import check_sums

_K = "__gk_k"


def key_columns(kind: str) -> list[str]:
    """The columns that identify one node or edge."""
    return [NODE_ID] if kind == "node" else [EDGE_SOURCE, EDGE_TARGET]


def final_schema(partial: pa.Schema) -> pa.Schema:
    """The snapshot schema of a type: the partial schema without helper columns."""
    return pa.schema([f for f in partial if not f.name.startswith(HIDDEN)])


def unify(schemas: list[pa.Schema], order: Sequence[str] = ()) -> pa.Schema:
    """One schema for a type's partial tables from all partitions, its columns in
    ``order`` (the in-memory build's: a ``sparse`` property some partition left out
    comes where the contract puts it, not last), any other after them as found."""
    whole = pa.unify_schemas(schemas, promote_options="permissive").remove_metadata()
    if not order:
        return whole
    at = {name: i for i, name in enumerate(order)}
    names = sorted(whole.names, key=lambda n: (at.get(n, len(at)), whole.names.index(n)))
    return pa.schema([whole.field(n) for n in names])


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with ``schema``'s columns in its order: one a partition left out (a
    ``sparse`` property none of its rows had) null."""
    if table.schema == schema:
        return table
    for f in schema:
        if f.name not in table.column_names:
            table = table.append_column(f.name, pa.nulls(table.num_rows, f.type))
    return table.select(schema.names).cast(schema)


def row_keys(kind: str, t: pa.Table) -> pa.Array | pa.ChunkedArray:
    """What identifies each row of a node (its id) or edge (source and target) table."""
    return _key(kind, t)


def _key(kind: str, t: pa.Table) -> pa.Array | pa.ChunkedArray:
    if kind == "node":
        return t.column(NODE_ID)
    return pc.binary_join_element_wise(t.column(EDGE_SOURCE), t.column(EDGE_TARGET), "\x1f")


def _describe(plan: Plan, tp: TypePlan, row: dict[str, Any]) -> str:
    what = tp.type if tp.kind == "node" else f"edge {tp.type}"
    keys = {k: v for k, v in row.items() if not k.startswith(HIDDEN)}
    distinct = [p.name for p in tp.props if p.op == "count_distinct"]
    return (f"{what} {keys} counts distinct values ({', '.join(distinct)}) over rows of more "
            f"than one {plan.partition_key} (e.g. {row.get('__gk_pkmin')!r} and "
            f"{row.get('__gk_pkmax')!r})")


def _refuse(plan: Plan, tp: TypePlan, row: dict[str, Any]) -> PartitionError:
    return PartitionError(
        _describe(plan, tp, row) + "; a distinct count cannot be merged from partitions",
        path=str(plan.contract.path),
        hint=f"run `graphkit check` (an id under two {plan.partition_key}s breaks the identity "
             "rules), use `count` for this property, or build without --partitions")


def check_spans(plan: Plan, tp: TypePlan, t: pa.Table) -> None:
    """Refuse groups with a distinct count whose rows span partition key values."""
    if not tp.span_check or t.num_rows == 0:
        return
    lo, hi = t.column("__gk_pkmin"), t.column("__gk_pkmax")
    n, nk = t.column("__gk_n"), t.column("__gk_pkn")
    differ = pc.fill_null(pc.not_equal(lo, hi), False)
    mixed = pc.and_(pc.greater(nk, 0), pc.less(nk, n))
    bad = pc.or_(differ, mixed)
    if pc.any(bad).as_py():
        raise _refuse(plan, tp, t.filter(bad).slice(0, 1).to_pylist()[0])


def merge_parts(plan: Plan, tp: TypePlan, parts: list[pa.Table],
                schema: pa.Schema, shared: list[pa.Array] | None = None) -> pa.Table:
    """The merged, sorted rows of one bucket of one type (snapshot columns only, and
    :data:`UNRESOLVED` where the partials have it: :meth:`Resolver.resolve` takes it).

    ``parts`` are the bucket's partial tables from every partition, cast to
    ``schema`` (the unified partial schema). ``shared``: the keys (:func:`row_keys`)
    found in more than one row of the partials are appended to it.
    """
    parts = [p for p in parts if p.num_rows]
    out_schema = final_schema(schema)
    if UNRESOLVED in schema.names:
        out_schema = out_schema.append(schema.field(UNRESOLVED))
    if not parts:
        if shared is not None:
            shared.append(pa.array([], pa.string()))
        return out_schema.empty_table()
    t = pa.concat_tables([conform(p, schema) for p in parts])
    check_spans(plan, tp, t)
    if len(parts) > 1 or shared is not None:
        k = _key(tp.kind, t)
        counts = pa.table({_K: k}).group_by(_K, use_threads=False).aggregate([(_K, "count")])
        multi = counts.filter(pc.greater(counts.column(f"{_K}_count"), 1)).column(_K)
        if shared is not None:
            shared.append(multi.combine_chunks().cast(pa.string()))
        if len(multi) and len(parts) > 1:
            mask = pc.is_in(k, value_set=multi.combine_chunks())
            t = pa.concat_tables([t.filter(pc.invert(mask)),
                                  _merge_groups(plan, tp, t.filter(mask), schema)])
    order = [(c, "ascending") for c in key_columns(tp.kind)]
    t = t.select(out_schema.names).take(pc.sort_indices(t.select(key_columns(tp.kind)),
                                                        sort_keys=order))
    return t.cast(out_schema) if t.schema != out_schema else t


def _merge_groups(plan: Plan, tp: TypePlan, t: pa.Table, schema: pa.Schema) -> pa.Table:
    """One row per key of ``t`` (rows of the same key from several partitions)."""
    if tp.span_check:
        # Several partitions, so several partition key values: each partition's row
        # holds only its own, so name the lowest and highest over the key's rows.
        k = _key(tp.kind, t)
        same = t.filter(pc.equal(k, k[0]))
        row = same.slice(0, 1).to_pylist()[0]
        row["__gk_pkmin"] = pc.min(same.column("__gk_pkmin")).as_py()
        row["__gk_pkmax"] = pc.max(same.column("__gk_pkmax")).as_py()
        raise _refuse(plan, tp, row)
    keys = key_columns(tp.kind)
    props = {p.name: p for p in tp.props}
    if tp.rules > 1 and props:
        raise PartitionError(
            f"edge {tp.type} has properties and several rules; its edges found by several "
            "partitions cannot be merged", path=str(plan.contract.path),
            hint="give the edge type's rules no properties, or build without --partitions")
    specs: list[tuple[str, str]] = []
    for name in schema.names:
        if name == UNRESOLVED:
            # Unresolved in some partition: the rows behind it in all (null if none).
            specs.append((name, "sum"))
        if name in keys or name.startswith(HIDDEN):
            continue
        p = props.get(name)
        op = "first" if p is None else {"min": "min", "max": "max", "count": "sum",
                                            "sum": "sum"}.get(p.op)
        if op is not None:
            specs.append((name, op))
    g = t.group_by(keys, use_threads=False).aggregate(specs)
    # Each partition's sums were checked; their total may still pass int64's range.
    check_sums(t, g, keys, [name for name, op in specs if op == "sum"])
    g = g.rename_columns([n if n in keys else n.rsplit("_", 1)[0] for n in g.column_names])
    for p in tp.props:
        if p.op in ("first", "last") and p.rank is not None:
            g = g.join(_pick(t, keys, p.name, p.rank, p.op), keys=keys, join_type="left outer",
                       use_threads=False)
    for f in schema:
        if f.name not in g.column_names:
            g = g.append_column(f.name, pa.nulls(g.num_rows, f.type))
    return g.select(schema.names).cast(schema)


def _pick(t: pa.Table, keys: list[str], name: str, rank: str, op: str) -> pa.Table:
    """The value of ``name`` from the row that comes first (or last) in the build's
    order among the partitions' contributing rows, per key."""
    parts = sorted((c for c in t.column_names if c.startswith(rank + "__")),
                   key=lambda c: int(c.rsplit("__", 1)[1]))
    have = t.filter(pc.is_valid(t.column(parts[-1])))
    have = have.take(pc.sort_indices(have, sort_keys=[(c, "ascending") for c in keys + parts]))
    g = have.group_by(keys, use_threads=False).aggregate([(name, op)])
    return g.rename_columns([n if n in keys else name for n in g.column_names])


_DROPS = ("missing_source", "missing_target", "self_loop")


class Resolver:
    """The merge's look-up of the edges partitions could not resolve.

    Partitions name those edges' end ids (``counts["unresolved_ends"]``: :meth:`need`);
    each node type's merged buckets pass :meth:`see` (all node types before any edge
    type), which keeps the named ids that are nodes; :meth:`resolve` then keeps an
    unresolved edge whose two ends are nodes and counts the rows of the others as the
    in-memory build does (:attr:`dropped`). Only named ids are held, never a node table.
    """

    def __init__(self) -> None:
        self._wanted: dict[str, list[pa.Array]] = {}
        self._found: dict[str, list[pa.Array]] = {}
        self.dropped: dict[str, dict[str, int]] = {}

    def need(self, ends: dict[str, list[str]]) -> None:
        """Take a partition's unresolved end ids, by node type."""
        for node_type, ids in ends.items():
            if ids:
                self._wanted.setdefault(node_type, []).append(pa.array(ids, pa.string()))

    def see(self, node_type: str, merged: pa.Table) -> None:
        """Note which named ids of ``node_type`` one merged bucket holds."""
        wanted = self._wanted.get(node_type)
        if not wanted or merged.num_rows == 0:
            return
        if len(wanted) > 1:  # once: several partitions may name the same end
            wanted[:] = [pc.unique(pa.chunked_array(wanted))]
        ids = merged.column(NODE_ID)
        self._found.setdefault(node_type, []).append(
            ids.filter(pc.is_in(ids, value_set=wanted[0])).combine_chunks())

    def _nodes(self, node_type: str) -> pa.Array:
        """The named ids of ``node_type`` that are nodes."""
        found = self._found.get(node_type)
        if not found:
            return pa.array([], pa.string())
        if len(found) > 1:
            found[:] = [pa.concat_arrays(found)]
        return found[0]

    def resolve(self, tp: TypePlan, merged: pa.Table) -> pa.Table:
        """One merged bucket of an edge type (from :func:`merge_parts`) in snapshot
        columns: its unresolved edges kept where both ends are nodes, their rows
        counted in :attr:`dropped` where not."""
        if UNRESOLVED not in merged.column_names:
            return merged
        rows = merged.column(UNRESOLVED)
        table = merged.drop_columns([UNRESOLVED])
        if rows.null_count == len(rows):
            return table
        pending = pc.is_valid(rows)
        n = pc.fill_null(rows, 0)
        source, target = table.column(EDGE_SOURCE), table.column(EDGE_TARGET)
        src_ok = pc.or_(pc.invert(pending), pc.is_in(source, value_set=self._nodes(tp.ends[0])))
        dst_ok = pc.or_(pc.invert(pending), pc.is_in(target, value_set=self._nodes(tp.ends[1])))
        keep = pc.and_(src_ok, dst_ok)
        # As in the in-memory build: a missing source is counted first, then a missing
        # target; a loop only between two found ends of one node type.
        lost = {"missing_source": pc.invert(src_ok),
                "missing_target": pc.and_(src_ok, pc.invert(dst_ok))}
        if tp.ends[0] == tp.ends[1]:
            loops = pc.and_(pc.and_(pending, keep), pc.equal(source, target))
            lost["self_loop"] = loops
            keep = pc.and_(keep, pc.invert(loops))
        mine = self.dropped.setdefault(tp.type, dict.fromkeys(_DROPS, 0))
        for reason, mask in lost.items():
            mine[reason] += int(pc.sum(n.filter(mask)).as_py() or 0)
        return table.filter(keep)
