"""The checked contract as plain frozen classes (msgspec Structs): what the projection reads.

:mod:`graphkit.contract.model` (pydantic) decides whether a contract file is valid
and says where it is not; once it is, the loader turns the model into these
classes, and caches their data (:mod:`graphkit.contract.cache`). A build whose
contract is cached neither imports pydantic nor builds its models (~0.3 CPU-s
of every build and every transcript append). Each class has the attributes of
its model namesake (``from_``, ``in_`` included) and the few model methods graphkit
calls (``model_copy``, ``model_dump``, ``model_dump_json``), so code written against
either works with both.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

AGGREGATIONS = ("first", "last", "min", "max", "count", "count_distinct", "sum")

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

    type: str
    required: bool = False
    blank_is_null: bool = False
    null_values: list[str] = msgspec.field(default_factory=list)

    @classmethod
    def from_dump(cls, d: dict[str, Any]) -> InputColumn:
        """From a validated model's ``model_dump()``."""
        return cls(d["type"], d["required"], d["blank_is_null"], list(d["null_values"]))


class Filter(_Rule, frozen=True):
    """Row filter; all given conditions must hold."""

    not_null: list[str] = msgspec.field(default_factory=list)
    is_null: list[str] = msgspec.field(default_factory=list)
    blank: list[str] = msgspec.field(default_factory=list)
    equals: dict[str, str | int | bool] = msgspec.field(default_factory=dict)
    not_equals: dict[str, str | int | bool] = msgspec.field(default_factory=dict)
    in_: dict[str, list[str | int]] = msgspec.field(default_factory=dict)
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
    count: str | None = None
    count_distinct: str | None = None
    sum: str | None = None

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
        return cls(*(d[a] for a in AGGREGATIONS))


def _props(d: dict[str, Any]) -> dict[str, Aggregation]:
    return {k: Aggregation.from_dump(v) for k, v in d.items()}


class Unnest(_Rule, frozen=True):
    """A rule that sees one row per element of a JSON array (see the model's doc)."""

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
    granularity: str = "thread"
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
    """One end of an edge: a node type and the columns that make its key."""

    type: str
    key: list[str | None]

    @classmethod
    def from_dump(cls, d: dict[str, Any]) -> EndRef:
        """From a validated model's ``model_dump()``."""
        return cls(d["type"], list(d["key"]))


class Join(_Rule, frozen=True):
    """Find the edge's target on another row (see the model's doc)."""

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
    from_: EndRef
    to: EndRef
    where: Filter | None = None
    join: Join | None = None
    chain: Chain | None = None
    granularity: str = "thread"
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
    """Rows matching ``when`` cannot be used: they go to the rejects file."""

    when: Filter
    reason: str
    column: str | None = None
    check: str | None = None

    @classmethod
    def from_dump(cls, d: dict[str, Any]) -> RejectRule:
        """From a validated model's ``model_dump()``."""
        return cls(Filter.from_dump(d["when"]), d["reason"], d["column"], d["check"])


class LineageSpec(_Rule, frozen=True):
    """The contract's lineage vocabulary (see the model's doc)."""

    session: str
    session_key: str
    thread: str
    thread_key: str
    thread_aliases: list[str] = msgspec.field(default_factory=list)
    thread_session: str = ""
    has_thread: str = ""
    parent: str = ""
    agent: str | None = None
    has_agent: str | None = None
    continues: str | None = None

    @classmethod
    def from_dump(cls, d: dict[str, Any] | None) -> LineageSpec | None:
        """From a validated model's ``model_dump()`` (None stays None)."""
        if d is None:
            return None
        return cls(**{**d, "thread_aliases": list(d["thread_aliases"])})


@dataclass(frozen=True)
class Contract(_Plain):
    """A whole graph contract: name, version, inputs, derived columns, rules."""

    contract: str
    version: int
    description: str | None
    input: dict[str, InputColumn]
    derive: dict[str, dict[str, Any] | str] = field(default_factory=dict)
    dedupe: str | None = None
    order_by: list[str] = field(default_factory=list)
    reject: list[RejectRule] = field(default_factory=list)
    nodes: list[NodeRule] = field(default_factory=list)
    edges: list[EdgeRule] = field(default_factory=list)
    lineage: LineageSpec | None = None
    # The validated model's own model_dump_json(), where this came from one (or
    # from the cache of one): build keys hash it, and pydantic's JSON is not
    # json.dumps' for every float. A model_copy drops it (the copy is another contract).
    json_text: str | None = field(default=None, compare=False, repr=False)

    def model_dump(self) -> dict[str, Any]:
        """The fields as plain dicts and lists (field names, not aliases)."""
        return {f.name: _dumped(getattr(self, f.name)) for f in dataclasses.fields(self)
                if f.name != "json_text"}

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
            d["contract"], d["version"], d["description"],
            {k: InputColumn.from_dump(v) for k, v in d["input"].items()},
            dict(d["derive"]), d["dedupe"], list(d["order_by"]),
            [RejectRule.from_dump(r) for r in d["reject"]],
            [NodeRule.from_dump(n) for n in d["nodes"]],
            [EdgeRule.from_dump(e) for e in d["edges"]],
            LineageSpec.from_dump(d["lineage"]), json_text)
