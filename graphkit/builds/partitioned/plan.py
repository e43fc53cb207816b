"""What a partitioned build adds to a contract so partial graphs can be merged exactly.

Each partition is projected by the unchanged :func:`graphkit.projection.project.project`,
with the contract widened by hidden properties (names starting ``__gk_``):

- for every ``first``/``last`` property, the rank (in the build's row order) of the
  row that gave the value, so partitions' answers can be compared: the rank is
  turned into the row's order key (the contract's ``order_by`` values and the row's
  input position) before the partial graph leaves the partition;
- for every rule with a ``count_distinct`` property, the smallest and largest
  partition key of its rows, so a group whose rows span more than one partition
  key value is refused (its distinct count cannot be merged) — whatever the number
  of partitions, so the answer never depends on it.

``min``/``max``/``count`` merge as they are. An edge whose end is a node of
another partition's rows (a session continuing one in another partition) is
carried unresolved to the merge (:data:`UNRESOLVED`), which finds its ends
among all partitions' nodes, as the in-memory build finds them among all nodes.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from graphkit.contract.expr import Expr
from graphkit.contract.loader import LoadedContract
from graphkit.contract.spec import Aggregation
from graphkit.core.errors import ContractError
from graphkit.core.graph import EDGE_SOURCE, EDGE_TARGET, NODE_ID

# Input position of a row across all sources, in the order the sources are read.
ORD = "__gk_ord"
# Position of a row in the build's order within its partition.
RANK = "__gk_rank"
HIDDEN = "__gk_"
DEFAULT_PARTITION_KEY = "session_id"
# On an edge a partition could not resolve (an end is no node of its rows), the rows
# behind it (null on the edges it resolved): the merge looks its ends up among the
# nodes of every partition, and keeps it or counts those rows as dropped.
UNRESOLVED = "__gk_unresolved"


class PartitionError(ContractError):
    """The contract cannot be built partition by partition as it stands."""


class RankWhere(Expr, msgspec.Struct, frozen=True):
    """The row's rank where ``column`` is not null; null elsewhere."""

    column: str

    def columns(self) -> set[str]:
        return {self.column, RANK}

    def evaluate(self, table: pa.Table) -> pa.ChunkedArray | pa.Array:
        return pc.if_else(pc.is_valid(table.column(self.column)), table.column(RANK),
                          pa.scalar(None, pa.int64()))


class PropPlan(msgspec.Struct, frozen=True):
    """How one visible property of a node or edge type merges."""

    name: str
    op: str  # first, last, min, max, count, count_distinct
    rank: str | None = None  # hidden property holding the contributing row's rank


class TypePlan(msgspec.Struct):
    """Merge plan of one node type or edge type."""

    kind: str  # "node" or "edge"
    type: str
    props: list[PropPlan]
    span_check: bool  # has count_distinct: groups must stay within one partition key
    rules: int = 1
    ends: tuple[str, str] = ("", "")  # an edge type's source and target node types
    # The columns of its in-memory table in order (id or ends, key, properties with
    # the hidden ones): where partitions' tables differ (a ``sparse`` property one of
    # them left out), the merge puts them in this order.
    columns: list[str] = msgspec.field(default_factory=list)


class Plan(msgspec.Struct):
    """The widened contract and how to merge what its partitions produce."""

    contract: LoadedContract
    widened: LoadedContract
    partition_key: str
    order_by: list[str]
    types: dict[tuple[str, str], TypePlan] = msgspec.field(default_factory=dict)

    def hidden_columns(self, table: pa.Table) -> list[str]:
        """The helper columns of a partial table."""
        return [c for c in table.column_names if c.startswith(HIDDEN)]


def _pk_props(pk: str) -> dict[str, Aggregation]:
    return {"__gk_pkmin": Aggregation(min=pk), "__gk_pkmax": Aggregation(max=pk),
            "__gk_pkn": Aggregation(count=pk), "__gk_n": Aggregation(count="*")}


def _widen(props: dict[str, Aggregation], pk: str,
           derived: dict[str, Expr]) -> tuple[dict[str, Aggregation], list[PropPlan], bool]:
    out = dict(props)
    plans = []
    span = False
    for name, agg in props.items():
        rank = None
        if agg.op in ("first", "last"):
            col = f"__gk_where_{agg.column}"
            derived.setdefault(col, RankWhere(agg.column))
            rank = f"__gk_{agg.op}_{name}"
            out[rank] = Aggregation(min=col) if agg.op == "first" else Aggregation(max=col)
        elif agg.op == "count_distinct":
            span = True
        plans.append(PropPlan(name, agg.op, rank))
    if span:
        out.update(_pk_props(pk))
    return out, plans, span


def make_plan(contract: LoadedContract, partition_key: str | None = None) -> Plan:
    """The contract widened for partitioned projection, and the merge plan."""
    spec = contract.spec
    pk = partition_key or DEFAULT_PARTITION_KEY
    if pk not in spec.input:
        raise PartitionError(
            f"partition key {pk!r} is not an input column of contract {contract.name}",
            path=str(contract.path),
            hint="partition by an input column that keeps a session's rows together "
                 "(session_id for ai_gateway_messages)")
    missing = [c for c in spec.order_by if c not in spec.input]
    if missing:
        raise PartitionError(
            f"order_by column {missing[0]!r} is derived; a partitioned build orders rows "
            "by input columns only", path=str(contract.path),
            line=contract.line_of("order_by"),
            hint="order by input columns, or build without --partitions")
    derived: dict[str, Expr] = {}
    plan_types: dict[tuple[str, str], TypePlan] = {}
    nodes = []
    for rule in spec.nodes:
        props, plans, span = _widen(rule.properties, pk, derived)
        nodes.append(rule.model_copy(update={"properties": props}))
        plan_types[("node", rule.type)] = TypePlan(
            "node", rule.type, plans, span, columns=[NODE_ID, *rule.key, *props])
    edges = []
    for i, erule in enumerate(spec.edges):
        if erule.join is not None and pk not in erule.join.same:
            # A partition holds one partition key's rows whole, and only those: a join
            # across keys would miss the rows another partition holds.
            raise PartitionError(
                f"edge {erule.type} joins {erule.join.column} to {erule.join.matches} across "
                f"{pk}s; a partitioned build matches rows within one {pk}",
                path=str(contract.path), line=contract.line_of("edges", i, "join"),
                hint=f"add {pk} to the join's `same:`, or build without --partitions")
        props, plans, span = _widen(erule.properties, pk, derived)
        edges.append(erule.model_copy(update={"properties": props}))
        key = ("edge", erule.type)
        if key in plan_types:
            prev = plan_types[key]
            prev.rules += 1
            prev.span_check = prev.span_check or span
            prev.columns += [p for p in props if p not in prev.columns]
        else:
            plan_types[key] = TypePlan("edge", erule.type, plans, span,
                                       ends=(erule.from_.type, erule.to.type),
                                       columns=[EDGE_SOURCE, EDGE_TARGET, *props])
    widened = LoadedContract(spec.model_copy(update={"nodes": nodes, "edges": edges}),
                             contract.path, {**contract.derived, **derived}, contract.lines)
    return Plan(contract, widened, pk, list(spec.order_by), plan_types)


def describe(plan: Plan) -> dict[str, Any]:
    """A short account of the plan for the manifest and ``--json``."""
    return {"partition_key": plan.partition_key, "order_by": plan.order_by,
            "span_checked": sorted(f"{k}:{t}" for (k, t), p in plan.types.items()
                                   if p.span_check)}
