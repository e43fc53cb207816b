"""The graph contract's schema, defined once: what a contract file may say, as plain
frozen classes (msgspec Structs) that the projection reads.

Each class's fields (their types, defaults, the file's name for a field where it is a
Python keyword: ``from``, ``in``) and :data:`CHECKS` (what a field or a rule must hold
beyond its type) are the whole schema. :mod:`graphkit.contract.model` derives the
pydantic models that check a contract file from them, so the file's errors are
pydantic's, each pointing at its line; once a file is valid, the loader turns the
model into these classes and caches their data (:mod:`graphkit.contract.cache`). A
build whose contract is cached neither imports pydantic nor builds its models (~0.3
CPU-s of every build and every transcript append). Each class has the few model
methods graphkit calls (``model_copy``, ``model_dump``, ``model_dump_json``), so code
written against either works with both.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from graphkit.core.names import NAME_RULE, is_name

AGGREGATIONS = ("first", "last", "min", "max", "count", "count_distinct", "sum")
# Column names: fullmatch (a "$" would let a trailing newline through).
COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}", re.ASCII)

ColumnType = Literal["string", "int", "float", "bool", "timestamp", "json"]
Granularity = Literal["thread", "message"]
# Stored as an int64 wherever a snapshot or Neo4j keeps it; snapshots refuse < 0.
Version = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]
CheckName = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9-]{0,63}$")]

_T = TypeVar("_T", bound="_Plain")


class _Plain:
    """The model methods graphkit uses, for the classes below."""

    __slots__ = ()

    def model_copy(self: _T, *, update: dict[str, Any] | None = None) -> _T:
        """A copy with ``update``'s fields replaced (as pydantic's, not validated)."""
        return msgspec.structs.replace(self, **(update or {}))  # type: ignore[type-var]

    def model_dump(self) -> dict[str, Any]:
        """The fields as plain dicts and lists (field names, not aliases)."""
        return _dumped(self)


def _dumped(value: Any) -> Any:
    """``dataclasses.asdict`` for these classes: their fields, and the lists, dicts and
    rules in them, as new plain lists and dicts."""
    if isinstance(value, msgspec.Struct):
        return {name: _dumped(getattr(value, name)) for name in value.__struct_fields__}
    if isinstance(value, list):
        return [_dumped(v) for v in value]
    if isinstance(value, dict):
        return {k: _dumped(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_dumped(v) for v in value)
    return value


# The rules are msgspec Structs, not dataclasses: a dataclass compiles its generated
# methods from source when its module loads (``exec``, 5-6 per frozen class), ~0.5 ms a
# class and ~10% of an incremental build's instructions over all of graphkit's; a Struct's
# methods are msgspec's own C, made in microseconds. Frozen, compared and hashed by their
# fields, positional in field order, as the dataclasses were.
class _Rule(_Plain, msgspec.Struct, frozen=True):
    pass


def _d(value: Any) -> dict[str, Any]:
    return dict(value or {})


def _l(value: Any) -> list[Any]:
    return list(value or [])


class InputColumn(_Rule, frozen=True):
    """A column the contract reads, its kind, and whether rows must have it."""

    type: ColumnType
    required: bool = False
    # Empty or whitespace-only text read as null: writers spell "no agent" or
    # "no parent" as "" as often as null, and a blank id is no id.
    blank_is_null: bool = False
    # Values that mean "none" in this column as some writer spells it: Claude Code's
    # "<synthetic>" model on the messages it made itself (no model answered).
    null_values: list[str] = msgspec.field(default_factory=list)

    @classmethod
    def from_dump(cls, d: dict[str, Any]) -> InputColumn:
        """From a validated model's ``model_dump()``."""
        return cls(d["type"], d["required"], d["blank_is_null"], list(d["null_values"]))


class Filter(_Rule, frozen=True):
    """Row filter; all given conditions must hold."""

    not_null: list[str] = msgspec.field(default_factory=list)
    is_null: list[str] = msgspec.field(default_factory=list)
    # Null, empty or only whitespace: how writers spell "none" in an id column.
    blank: list[str] = msgspec.field(default_factory=list)
    equals: dict[str, str | int | bool] = msgspec.field(default_factory=dict)
    not_equals: dict[str, str | int | bool] = msgspec.field(default_factory=dict)
    in_: dict[str, list[str | int]] = msgspec.field(default_factory=dict, name="in")
    less_than: dict[str, int | float] = msgspec.field(default_factory=dict)

    def columns(self) -> set[str]:
        """Every column the filter reads."""
        return {
            *self.not_null, *self.is_null, *self.blank, *self.equals, *self.not_equals,
            *self.in_, *self.less_than,
        }

    @classmethod
    def from_dump(cls, d: dict[str, Any]) -> Filter:
        """From a validated model's ``model_dump()``."""
        return cls(_l(d["not_null"]), _l(d["is_null"]), _l(d["blank"]), _d(d["equals"]),
                   _d(d["not_equals"]), {k: list(v) for k, v in d["in_"].items()},
                   _d(d["less_than"]))


def _filter(d: dict[str, Any] | None) -> Filter | None:
    return None if d is None else Filter.from_dump(d)


class Aggregation(_Rule, frozen=True):
    """One property of a node or edge: an aggregation over the group's rows."""

    first: str | None = None
    last: str | None = None
    min: str | None = None
    max: str | None = None
    count: str | None = None  # a column (non-null values) or "*" (rows)
    count_distinct: str | None = None
    sum: str | None = None  # numbers, or text holding them (a JSON path's value)
    # Left out of the table when no node or edge has a value: a property newer data
    # carries (Claude's 1-hour cache writes, its own cost) changes nothing, not even a
    # column of nulls, in the graph of data without it.
    sparse: bool = False

    @property
    def op(self) -> str:
        """The aggregation name."""
        # A plain loop: ~0.2 µs where next() over a generator took ~1 µs, and the
        # projection asks ~2.4k times per group (the rules' columns, widening, plans).
        for a in AGGREGATIONS:
            if getattr(self, a) is not None:
                return a
        raise StopIteration  # none set, as next() raised before (validation forbids it)

    @property
    def column(self) -> str:
        """The column aggregated (``*`` for a row count)."""
        return str(getattr(self, self.op))

    @classmethod
    def from_dump(cls, d: dict[str, Any]) -> Aggregation:
        """From a validated model's ``model_dump()``."""
        first, last, low, high, count, distinct, total = (d[a] for a in AGGREGATIONS)
        return cls(first, last, low, high, count, distinct, total, bool(d.get("sparse")))


def _props(d: dict[str, Any]) -> dict[str, Aggregation]:
    return {k: Aggregation.from_dump(v) for k, v in d.items()}


class Unnest(_Rule, frozen=True):
    """A rule that sees one row per element of a JSON array: ``column`` holds the
    array (JSON text, e.g. ``[{"path": "/a", "reads": 1}]``), and each entry of
    ``fields`` names a new column and the element key it takes (as text; null
    where the element lacks it). Rows whose column is null or not an array give
    no rows to the rule."""

    column: str
    fields: dict[str, str]

    @classmethod
    def from_dump(cls, d: dict[str, Any] | None) -> Unnest | None:
        """From a validated model's ``model_dump()`` (None stays None)."""
        return None if d is None else cls(d["column"], dict(d["fields"]))


class NodeRule(_Rule, frozen=True):
    """Nodes of one type: grouped by key, properties aggregated per group."""

    type: str
    key: list[str]
    where: Filter | None = None
    granularity: Granularity = "thread"
    index: list[str] = msgspec.field(default_factory=list)
    properties: dict[str, Aggregation] = msgspec.field(default_factory=dict)
    description: str | None = None
    unnest: Unnest | None = None

    @classmethod
    def from_dump(cls, d: dict[str, Any]) -> NodeRule:
        """From a validated model's ``model_dump()``."""
        return cls(d["type"], list(d["key"]), _filter(d["where"]), d["granularity"],
                   list(d["index"]), _props(d["properties"]), d["description"],
                   Unnest.from_dump(d["unnest"]))


class EndRef(_Rule, frozen=True):
    """One end of an edge: a node type and the columns that make its key.

    ``null`` in the key list stands for a key part that is always null (for
    example a Codex parent thread, which has no ``agent_id``).
    """

    type: str
    key: list[str | None]

    @classmethod
    def from_dump(cls, d: dict[str, Any]) -> EndRef:
        """From a validated model's ``model_dump()``."""
        return cls(d["type"], list(d["key"]))


class Join(_Rule, frozen=True):
    """Find the edge's target on another row: ``column`` of this row equals
    ``matches`` of that row (and, if given, the ``same`` columns are equal).

    (Not ``on``: YAML 1.1 reads a bare ``on`` key as the boolean true.)
    """

    column: str
    matches: str
    same: list[str] = msgspec.field(default_factory=list)
    where: Filter | None = None

    @classmethod
    def from_dump(cls, d: dict[str, Any] | None) -> Join | None:
        """From a validated model's ``model_dump()`` (None stays None)."""
        if d is None:
            return None
        return cls(d["column"], d["matches"], list(d["same"]), _filter(d["where"]))


class Chain(_Rule, frozen=True):
    """Link consecutive nodes within each group, in ``order_by`` order."""

    within: list[str]
    order_by: list[str]

    @classmethod
    def from_dump(cls, d: dict[str, Any] | None) -> Chain | None:
        """From a validated model's ``model_dump()`` (None stays None)."""
        return None if d is None else cls(list(d["within"]), list(d["order_by"]))


class EdgeRule(_Rule, frozen=True):
    """Edges of one type, from one node reference to another."""

    type: str
    from_: EndRef = msgspec.field(name="from")
    to: EndRef
    where: Filter | None = None
    join: Join | None = None
    chain: Chain | None = None
    granularity: Granularity = "thread"
    properties: dict[str, Aggregation] = msgspec.field(default_factory=dict)
    description: str | None = None
    unnest: Unnest | None = None

    @classmethod
    def from_dump(cls, d: dict[str, Any]) -> EdgeRule:
        """From a validated model's ``model_dump()``."""
        return cls(d["type"], EndRef.from_dump(d["from_"]), EndRef.from_dump(d["to"]),
                   _filter(d["where"]), Join.from_dump(d["join"]), Chain.from_dump(d["chain"]),
                   d["granularity"], _props(d["properties"]), d["description"],
                   Unnest.from_dump(d["unnest"]))


class RejectRule(_Rule, frozen=True):
    """Rows matching ``when`` cannot be used: they go to the rejects file.

    A row meets the rules in order and is rejected for the first it matches.
    ``check`` names the finding under which ``graphkit check`` reports the rows
    this rule matches (no name: ``check`` leaves them to the rejects file).
    """

    when: Filter
    reason: str
    column: str | None = None
    check: CheckName | None = None

    @classmethod
    def from_dump(cls, d: dict[str, Any]) -> RejectRule:
        """From a validated model's ``model_dump()``."""
        return cls(Filter.from_dump(d["when"]), d["reason"], d["column"], d["check"])


class LineageSpec(_Rule, frozen=True, kw_only=True):
    """The contract's lineage vocabulary: which node is the session anchor,
    which the thread, which edges link them, which properties a user types.

    Without it, ``sessions``/``lineage``/``tree`` refuse the graph clearly.
    """

    session: str
    session_key: str
    thread: str
    thread_key: str
    thread_aliases: list[str] = msgspec.field(default_factory=list)
    thread_session: str
    has_thread: str
    parent: str
    agent: str | None = None
    has_agent: str | None = None
    continues: str | None = None  # Session -> Session it continues

    @classmethod
    def from_dump(cls, d: dict[str, Any] | None) -> LineageSpec | None:
        """From a validated model's ``model_dump()`` (None stays None)."""
        if d is None:
            return None
        return cls(**{**d, "thread_aliases": list(d["thread_aliases"])})


# Not in a contract file: what the loader keeps beside the file's fields.
NOT_IN_FILE = {"in_file": False}


@dataclass(frozen=True, kw_only=True)
class Contract(_Plain):
    """A whole graph contract: name, version, inputs, derived columns, rules."""

    contract: str
    version: Version
    description: str | None = None
    input: dict[str, InputColumn]
    derive: dict[str, dict[str, Any] | str] = field(default_factory=dict)
    dedupe: str | None = None
    order_by: list[str] = field(default_factory=list)
    reject: list[RejectRule] = field(default_factory=list)
    nodes: list[NodeRule]
    edges: list[EdgeRule] = field(default_factory=list)
    lineage: LineageSpec | None = None
    # The validated model's own model_dump_json(), where this came from one (or
    # from the cache of one): build keys hash it, and pydantic's JSON is not
    # json.dumps' for every float. A model_copy drops it (the copy is another contract).
    json_text: str | None = field(default=None, compare=False, repr=False,
                                  metadata=NOT_IN_FILE)

    def model_dump(self) -> dict[str, Any]:
        """The fields as plain dicts and lists (field names, not aliases)."""
        return {f.name: _dumped(getattr(self, f.name)) for f in dataclasses.fields(self)
                if f.metadata != NOT_IN_FILE}

    def model_dump_json(self) -> str:
        """The contract as compact JSON, as the pydantic model writes it."""
        if self.json_text is not None:
            return self.json_text
        return json.dumps(self.model_dump(), separators=(",", ":"), ensure_ascii=False)

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Contract:
        """A copy with ``update``'s fields replaced; its JSON is computed afresh."""
        return dataclasses.replace(self, **{"json_text": None, **(update or {})})

    @classmethod
    def from_dump(cls, d: dict[str, Any], json_text: str | None = None) -> Contract:
        """From a validated model's ``model_dump()`` (and its ``model_dump_json()``)."""
        return cls(
            contract=d["contract"], version=d["version"], description=d["description"],
            input={k: InputColumn.from_dump(v) for k, v in d["input"].items()},
            derive=dict(d["derive"]), dedupe=d["dedupe"], order_by=list(d["order_by"]),
            reject=[RejectRule.from_dump(r) for r in d["reject"]],
            nodes=[NodeRule.from_dump(n) for n in d["nodes"]],
            edges=[EdgeRule.from_dump(e) for e in d["edges"]],
            lineage=LineageSpec.from_dump(d["lineage"]), json_text=json_text)


# --- what a contract must hold beyond its fields' types ---------------------------
# Each check raises ValueError saying what is wrong; the derived models run them (the
# file's error then names the field's place and line), a field check on the field's
# value once its type is checked, a rule check on the whole rule.

def _blank_only_for_text(c: InputColumn) -> None:
    if c.blank_is_null and c.type != "string":
        raise ValueError("blank_is_null applies to string columns only")
    if c.null_values and c.type != "string":
        raise ValueError("null_values applies to string columns only")


def _one_aggregation(a: Aggregation) -> None:
    given = [name for name in AGGREGATIONS if getattr(a, name) is not None]
    if len(given) != 1:
        raise ValueError(f"give exactly one of {', '.join(AGGREGATIONS)}")
    if given[0] != "count" and getattr(a, given[0]) == "*":
        # "*" is every row: only counting means anything on it (the others were a
        # KeyError traceback from the projection, looking for a column named "*").
        raise ValueError(f"{given[0]} needs a column; \"*\" (the rows) only with count")


def _unnest_fields(v: dict[str, str]) -> None:
    if not v:
        raise ValueError("`unnest.fields` names at least one column")
    for name in v:
        if not COLUMN.match(name):
            raise ValueError(f"unnest field {name!r} is not a plain column name")


# Labels and relationship types reach Cypher as identifiers, so the contract refuses
# anything but a plain identifier here, at load time, with the very pattern the Cypher
# builders use (graphkit.core.names).
def _node_type(v: str) -> None:
    if not is_name(v):
        raise ValueError(f"node type {v!r} must match {NAME_RULE}")


def _node_key(v: list[str]) -> None:
    if not v:
        raise ValueError("a node key needs at least one column")
    if len(set(v)) != len(v):
        raise ValueError("a node key names a column twice")


def _edge_type(v: str) -> None:
    if not is_name(v):
        raise ValueError(f"edge type {v!r} must match {NAME_RULE}")


def _edge_modes(e: EdgeRule) -> None:
    if e.join and e.chain:
        raise ValueError("an edge rule takes `join` or `chain`, not both")
    if e.unnest and (e.join or e.chain):
        raise ValueError("an edge rule with `unnest` takes no `join` or `chain`")
    if e.chain and (e.from_.type != e.to.type or e.from_.key != e.to.key):
        raise ValueError("a `chain` edge links nodes of one type and key")


def _vocabulary_name(v: str | None) -> None:
    if v is not None and not is_name(v):
        raise ValueError(f"{v!r} is not a valid label or relationship type "
                         f"(it must match {NAME_RULE})")


def _contract_name(v: str) -> None:
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", v):
        raise ValueError("a contract name is lower-case letters, digits, '.', '_' or '-'")


def _input_names(v: dict[str, InputColumn]) -> None:
    for name in v:
        if not COLUMN.fullmatch(name):
            raise ValueError(f"input column {name!r} is not a plain column name")


Check = Callable[[Any], None]

#: Per class, its checks in order: ``(fields, check)``, a check of those fields' values
#: (each alone), or with no fields a check of the whole rule.
CHECKS: dict[type, list[tuple[tuple[str, ...], Check]]] = {
    InputColumn: [((), _blank_only_for_text)],
    Aggregation: [((), _one_aggregation)],
    Unnest: [(("fields",), _unnest_fields)],
    NodeRule: [(("type",), _node_type), (("key",), _node_key)],
    EdgeRule: [(("type",), _edge_type), ((), _edge_modes)],
    LineageSpec: [(("session", "thread", "has_thread", "parent", "agent", "has_agent",
                    "continues"), _vocabulary_name)],
    Contract: [(("contract",), _contract_name), (("input",), _input_names)],
}

#: The schema's classes, each after the classes its fields name.
SCHEMA: tuple[type, ...] = (InputColumn, Filter, Aggregation, Unnest, NodeRule, EndRef, Join,
                            Chain, EdgeRule, RejectRule, LineageSpec, Contract)
