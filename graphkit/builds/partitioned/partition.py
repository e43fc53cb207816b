"""One partition's rows → its partial graph: the engine's one implementation.

The local engine calls :func:`project_partition` for each partition it read
back from disk; the Spark engine calls the same function inside
``groupBy(...).applyInArrow``. Either way the partial tables are cut into
*buckets* by id range (:func:`split_buckets`), and :mod:`graphkit.builds.partitioned.merge`
merges one bucket of one type at a time.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.builds.partitioned.plan import HIDDEN, ORD, RANK, UNRESOLVED, Plan
from graphkit.core.graph import EDGE_SOURCE, EDGE_TARGET, NODE_ID, EdgeTable
from graphkit.projection.edges import UNRESOLVED_ROWS
from graphkit.projection.groups import decoded
from graphkit.projection.project import project

# Node ids are UUID text: the first three hex digits spread ids evenly over 4096 ranges.
_PREFIX = 3
_RANGES = 16 ** _PREFIX


class PartOutput(msgspec.Struct):
    """A partition's partial graph tables, rejects and row counts."""

    tables: dict[tuple[str, str], pa.Table]
    rejects: pa.Table
    counts: dict[str, Any] = msgspec.field(default_factory=dict)


def in_input_order(rows: pa.Table) -> pa.Table:
    """``rows`` sorted by input position (a shuffle may have mixed them)."""
    pos = rows.column(ORD).to_numpy()
    if len(pos) < 2 or bool(np.all(pos[1:] > pos[:-1])):
        return rows
    return rows.take(pa.array(np.argsort(pos, kind="stable")))


def _order(plan: Plan, rows: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """The rows' order keys sorted in the build's order, and each row's rank in it.

    The projection sorts by ``order_by`` stably, ties kept in input order; with
    the input position as the last key, the rank is that order.
    """
    keys = decoded(rows.select([*plan.order_by, ORD]))
    idx = pc.sort_indices(keys, sort_keys=[(c, "ascending") for c in keys.column_names])
    rank = np.empty(len(idx), dtype=np.int64)
    rank[idx.to_numpy()] = np.arange(len(idx), dtype=np.int64)
    return keys.take(idx), rank


def _ranks_to_keys(table: pa.Table, sorted_keys: pa.Table) -> pa.Table:
    """Each hidden rank column replaced by the order key of the row it names
    (``<name>__0``, ``<name>__1``...), comparable across partitions."""
    for name in [c for c in table.column_names if c.startswith(("__gk_first_", "__gk_last_"))]:
        at = table.column_names.index(name)
        rank = table.column(name)
        table = table.remove_column(at)
        for i, col in enumerate(sorted_keys.columns):
            table = table.append_column(f"{name}__{i}", pc.take(col, rank))
    return table


def _with_unresolved(et: EdgeTable, lost: pa.Table | None,
                     ends: dict[str, list[pa.Array]]) -> pa.Table:
    """An edge type's partial table: its edges (:data:`UNRESOLVED` null) and, sorted
    in among them, those whose end is no node of the partition (:data:`UNRESOLVED`:
    their rows), whose end ids are added to ``ends`` by node type."""
    table = et.table.append_column(UNRESOLVED, pa.nulls(et.table.num_rows, pa.int64()))
    if lost is None or lost.num_rows == 0:
        return table
    ends.setdefault(et.source_type, []).append(lost.column(EDGE_SOURCE))
    ends.setdefault(et.target_type, []).append(lost.column(EDGE_TARGET))
    at = lost.schema.get_field_index(UNRESOLVED_ROWS)
    lost = lost.set_column(at, UNRESOLVED, lost.column(at).cast(pa.int64()))
    both = pa.concat_tables([table, lost], promote_options="permissive")
    order = [(EDGE_SOURCE, "ascending"), (EDGE_TARGET, "ascending")]
    return both.take(pc.sort_indices(both.select([EDGE_SOURCE, EDGE_TARGET]), sort_keys=order))


def project_partition(plan: Plan, rows: pa.Table, *, granularity: str = "thread",
                      include_content: bool = False, unresolved: bool = True) -> PartOutput:
    """Project one partition's rows with the widened contract.

    ``unresolved``: an edge an end of which is no node of these rows is kept (marked
    :data:`UNRESOLVED`) for the merge to look up among all partitions' nodes, its
    end ids listed in ``counts["unresolved_ends"]``. Otherwise it is counted as
    dropped here, which is right only where no edge leaves a partition (the
    incremental build's link groups).
    """
    rows = in_input_order(rows)
    sorted_keys, rank = _order(plan, rows)
    rows = rows.append_column(RANK, pa.array(rank))
    proj = project(plan.widened, rows, granularity=granularity, include_content=include_content,
                   unresolved=unresolved)
    del rows
    tables: dict[tuple[str, str], pa.Table] = {}
    for ntype, nt in proj.graph.nodes.items():
        tables[("node", ntype)] = _ranks_to_keys(nt.table, sorted_keys)
    ends: dict[str, list[pa.Array]] = {}
    for etype, et in proj.graph.edges.items():
        table = (_with_unresolved(et, proj.unresolved.get(etype), ends) if unresolved
                 else et.table)
        tables[("edge", etype)] = _ranks_to_keys(table, sorted_keys)
    rejects = proj.rejects
    drop = [c for c in rejects.column_names if c.startswith(HIDDEN) and c != ORD]
    counts = {"rows_read": proj.rows_read, "rows_used": proj.rows_used,
              "duplicates": proj.duplicates, "dropped_edges": proj.dropped_edges,
              "content_properties": proj.graph.meta.get("content_properties", {}),
              "edge_ends": {t: [e.source_type, e.target_type]
                            for t, e in proj.graph.edges.items()},
              "keys": {t: list(n.key) for t, n in proj.graph.nodes.items()},
              "lineage": proj.graph.lineage.to_json() if proj.graph.lineage else None}
    if unresolved:
        counts["unresolved_ends"] = {
            t: pc.unique(pa.chunked_array(ids)).to_pylist() for t, ids in sorted(ends.items())}
    return PartOutput(tables, rejects.drop_columns(drop), counts)


def bucket_of(ids: pa.Array | pa.ChunkedArray, buckets: int) -> np.ndarray:
    """The bucket of each id: contiguous id ranges, so buckets in order are ids in order."""
    if buckets == 1 or len(ids) == 0:
        return np.zeros(len(ids), dtype=np.int64)
    prefix = pc.utf8_slice_codeunits(ids, 0, _PREFIX)
    if isinstance(prefix, pa.ChunkedArray):
        prefix = prefix.combine_chunks()
    coded = prefix.dictionary_encode()
    # ids start with a lowercase hex digit; anything else sorts by its text
    # among the ranges (kept deterministic, if uneven).
    starts = np.array([_range_of(v) for v in coded.dictionary.to_pylist()], dtype=np.int64)
    return (starts[coded.indices.to_numpy()] * buckets) // _RANGES


def _range_of(prefix: str) -> int:
    try:
        return min(int(prefix.ljust(_PREFIX, "0"), 16), _RANGES - 1)
    except ValueError:
        return _RANGES - 1


def bucket_column(kind: str) -> str:
    """The column a partial table of ``kind`` is bucketed (and sorted) by first."""
    return NODE_ID if kind == "node" else EDGE_SOURCE


def split_buckets(kind: str, table: pa.Table, buckets: int) -> list[tuple[int, pa.Table]]:
    """``table`` cut into its non-empty buckets, in bucket order, rows in table order."""
    if table.num_rows == 0:
        return []
    b = bucket_of(table.column(bucket_column(kind)), buckets)
    if len(b) > 1 and bool(np.all(b[1:] >= b[:-1])):
        # Partial tables come sorted by id (or source), so buckets are runs.
        cuts = np.flatnonzero(np.diff(b)) + 1
        starts = np.concatenate([[0], cuts])
        ends = np.concatenate([cuts, [len(b)]])
        return [(int(b[s]), table.slice(int(s), int(e - s))) for s, e in zip(starts, ends,
                                                                           strict=True)]
    order = np.argsort(b, kind="stable")
    sorted_b = b[order]
    table = table.take(pa.array(order))
    out = []
    for value in np.unique(sorted_b):
        lo, hi = np.searchsorted(sorted_b, [value, value + 1])
        out.append((int(value), table.slice(int(lo), int(hi - lo))))
    return out
