"""How a Neo4j load is cut into batches that can run at the same time.

Creating or merging a relationship locks both of its end nodes; two
transactions that lock the same nodes in a different order deadlock, and
Neo4j rolls one back (the driver retries it, but the work is lost). So the
relationships are split into ``parts`` partitions such that no node is an
end in two partitions, except *dense* nodes (more than
:data:`DENSE_DEGREE` relationships: Model, Tool, Workspace in the default
graph), which Neo4j links without a node lock (relationship-group locks since
4.3). A partition is a connected component of the graph without its dense
nodes (with the default contract: one session, its threads, agents and the
files only it touched), components being spread over partitions by a hash.
Inside a batch, rows are sorted by their dense end, so concurrent batches
take the dense nodes' locks in one order.

Everything here is pure Arrow/NumPy on the graph's tables: no server.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.core.graph import EDGE_SOURCE, EDGE_TARGET, NODE_ID, GraphTables

# Neo4j's default `db.relationship_grouping_threshold`(dense_node_threshold): 50.
DENSE_DEGREE = 50


@dataclass
class EdgeEnds:
    """Each relationship's end nodes as positions in one numbering of all nodes
    (-1: the end is not among the graph's nodes, so the row writes nothing)."""

    source: np.ndarray
    target: np.ndarray


def node_offsets(graph: GraphTables) -> tuple[dict[str, int], int]:
    """Where each label's nodes start in the one numbering, and the node count."""
    offsets, total = {}, 0
    for label in sorted(graph.nodes):
        offsets[label] = total
        total += graph.nodes[label].table.num_rows
    return offsets, total


def _fixed_width_hash(ids: pa.ChunkedArray | pa.Array) -> np.ndarray | None:
    """A 64-bit hash of each id if every id has the same byte length (graphkit's
    ids are UUID text), straight from the Arrow buffers; None otherwise.

    Callers check every hit against the ids themselves (see :func:`_positions`):
    a collision costs time, never a wrong end.
    """
    arr = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    if len(arr) == 0 or arr.null_count or not pa.types.is_string(arr.type):
        return None
    _, offs, data = arr.buffers()
    offsets = np.frombuffer(offs, np.int32, len(arr) + 1, arr.offset * 4)
    width = int(offsets[1] - offsets[0])
    if width == 0 or offsets[-1] - offsets[0] != width * len(arr):
        return None
    chars = np.frombuffer(data, np.uint8, width * len(arr), int(offsets[0]))
    words = -(-width // 8)
    padded = np.zeros((len(arr), words * 8), np.uint8)
    padded[:, :width] = chars.reshape(len(arr), width)
    packed = padded.view(np.uint64)  # (n, words): 8 bytes of text per word
    h = np.full(len(arr), 0xCBF29CE484222325, np.uint64)
    with np.errstate(over="ignore"):
        for col in range(words):  # FNV-style mixing, one 64-bit word at a time
            h = (h ^ packed[:, col]) * np.uint64(0x100000001B3)
            h ^= h >> np.uint64(29)
    return h


def _positions(ids: pa.ChunkedArray, nodes: _NodeLookup) -> np.ndarray:
    if nodes.count == 0:
        return np.full(len(ids), -1, np.int64)
    want = _fixed_width_hash(ids) if nodes.hashes is not None else None
    if want is not None and nodes.hashes is not None and nodes.order is not None:
        at = np.minimum(np.searchsorted(nodes.hashes, want), nodes.count - 1)
        pos = np.where(nodes.hashes[at] == want, nodes.order[at], -1).astype(np.int64)
        # Relationships are written between the nodes at these positions, so
        # a hash collision must not pass: keep only exact matches (the id
        # found equals the id wanted); a colliding row takes the exact path.
        want_ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
        found = nodes.ids.take(pa.array(np.maximum(pos, 0)))
        same = pc.fill_null(pc.equal(found, want_ids), False).to_numpy(zero_copy_only=False)
        if not same[pos >= 0].all():
            exact = pc.fill_null(pc.index_in(ids, value_set=nodes.ids), -1)
            pos = exact.to_numpy(zero_copy_only=False).astype(np.int64)
    else:  # ids of mixed lengths: Arrow's hash lookup (slower, exact)
        found = pc.fill_null(pc.index_in(ids, value_set=nodes.ids), -1)
        pos = found.to_numpy(zero_copy_only=False).astype(np.int64)
    return np.where(pos >= 0, pos + nodes.offset, -1)


@dataclass
class _NodeLookup:
    """One label's ids, their sorted hashes and the row of each (hashed once per load)."""

    offset: int
    ids: pa.Array
    hashes: np.ndarray | None = None
    order: np.ndarray | None = None

    @property
    def count(self) -> int:
        return len(self.ids)

    @classmethod
    def of(cls, graph: GraphTables, label: str, offsets: dict[str, int]) -> _NodeLookup:
        nodes = graph.nodes.get(label)
        if nodes is None:
            return cls(0, pa.array([], pa.string()))
        ids = nodes.table.column(NODE_ID).combine_chunks()
        h = _fixed_width_hash(ids)
        if h is None:
            return cls(offsets[label], ids)
        order = np.argsort(h)
        return cls(offsets[label], ids, h[order], order)


def edge_ends(graph: GraphTables) -> dict[str, EdgeEnds]:
    """Every edge type's end positions (see :class:`EdgeEnds`)."""
    offsets, _ = node_offsets(graph)
    lookups: dict[str, _NodeLookup] = {}

    def lookup(label: str) -> _NodeLookup:
        if label not in lookups:
            lookups[label] = _NodeLookup.of(graph, label, offsets)
        return lookups[label]

    return {
        etype: EdgeEnds(_positions(e.table.column(EDGE_SOURCE), lookup(e.source_type)),
                        _positions(e.table.column(EDGE_TARGET), lookup(e.target_type)))
        for etype, e in graph.edges.items()
    }


def components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each of ``n`` nodes the smallest node position in its connected
    component, the edges being ``a[i]``–``b[i]``: min-label propagation with
    pointer jumping, vectorised (a few passes for session-shaped graphs)."""
    label = np.arange(n, dtype=np.int64)
    while True:
        low = np.minimum(label[a], label[b])
        new = label.copy()
        np.minimum.at(new, a, low)
        np.minimum.at(new, b, low)
        while True:  # jump to the label's label: label[i] <= i, same component
            jumped = new[new]
            if np.array_equal(jumped, new):
                break
            new = jumped
        if np.array_equal(new, label):
            return label
        label = new


def _spread(keys: np.ndarray, parts: int) -> np.ndarray:
    # Component labels are node positions, which cluster by label; a
    # multiplicative hash spreads them evenly over the partitions.
    return ((keys.astype(np.uint64) * np.uint64(0x9E3779B1)) >> np.uint64(7)) % np.uint64(parts)


@dataclass
class LoadPlan:
    """The relationship rows each concurrent writer takes, and the edge types
    whose rows repeat a (source, target) pair (those must be merged)."""

    partitions: dict[str, list[np.ndarray]]
    repeated_pairs: set[str]
    # Each edge type's end positions (the numbering of :func:`node_offsets`).
    ends: dict[str, EdgeEnds] = field(default_factory=dict)


def edge_partitions(graph: GraphTables, parts: int, dense: int = DENSE_DEGREE) -> LoadPlan:
    """For each edge type, ``parts`` arrays of row numbers: rows in different
    partitions share no end node but dense ones. Each array is in lock order
    (sorted by the row's dense end, if it has one)."""
    ends = edge_ends(graph)
    _, n = node_offsets(graph)
    every = [x[x >= 0] for e in ends.values() for x in (e.source, e.target)]
    degree = np.bincount(np.concatenate(every), minlength=n) if every else np.zeros(n, np.int64)
    sparse = np.append(degree <= dense, False)  # index -1 (a missing end): not sparse
    pairs = [(e.source, e.target) for e in ends.values()]
    a = np.concatenate([s for s, _ in pairs]) if pairs else np.zeros(0, np.int64)
    b = np.concatenate([t for _, t in pairs]) if pairs else np.zeros(0, np.int64)
    keep = sparse[a] & sparse[b]
    comp = components(n, a[keep], b[keep])
    out: dict[str, list[np.ndarray]] = {}
    repeated: set[str] = set()
    for etype, e in ends.items():
        rows = np.arange(len(e.source), dtype=np.int64)
        # A row's partition follows its sparse end's component (a row of two
        # dense or missing ends may go anywhere: by its row number).
        key = np.where(sparse[e.source], comp[e.source],
                       np.where(sparse[e.target], comp[e.target], n + rows))
        part = _spread(key, parts) if parts > 1 else np.zeros(len(rows), np.uint64)
        lock = np.where(sparse[e.target], np.where(sparse[e.source], -1, e.source), e.target)
        order = np.argsort(lock, kind="stable")
        part = part[order]
        out[etype] = [order[part == p] for p in range(parts)]
        # Equal ids give equal positions, so no repeat is missed (a hash
        # collision could only report one that is not: then MERGE, still right).
        pair = e.source * (n + 1) + e.target
        if len(np.unique(pair)) != len(pair):
            repeated.add(etype)
    return LoadPlan(out, repeated, ends)


def has_duplicate_ids(table: pa.Table) -> bool:
    """True if two rows share a node id (then only MERGE gives one node)."""
    ids = table.column(NODE_ID)
    return len(pc.unique(ids)) != len(ids)
