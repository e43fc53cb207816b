"""The graph contract as typed data: what a contract file may say.

A contract is YAML; this module validates it (pydantic) and turns every
problem into a :class:`~graphkit.core.errors.ContractError` that points at the
line of the contract file, before any row is read.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from graphkit.core.names import NAME_RULE, is_name

# Labels and relationship types reach Cypher as identifiers, so the contract
# refuses anything but a plain identifier here, at load time, with the very
# pattern the Cypher builders use (graphkit.core.names).
# Column names: fullmatch (a "$" would let a trailing newline through).
COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}", re.ASCII)

ColumnType = Literal["string", "int", "float", "bool", "timestamp", "json"]
Granularity = Literal["thread", "message"]
AGGREGATIONS = ("first", "last", "min", "max", "count", "count_distinct", "sum")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InputColumn(_Strict):
    """A column the contract reads, its kind, and whether rows must have it."""

    type: ColumnType
    required: bool = False
    # Empty or whitespace-only text read as null: writers spell "no agent" or
    # "no parent" as "" as often as null, and a blank id is no id.
    blank_is_null: bool = False
    # Values that mean "none" in this column as some writer spells it: Claude Code's
    # "<synthetic>" model on the messages it made itself (no model answered).
    null_values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _blank_only_for_text(self) -> InputColumn:
        if self.blank_is_null and self.type != "string":
            raise ValueError("blank_is_null applies to string columns only")
        if self.null_values and self.type != "string":
            raise ValueError("null_values applies to string columns only")
        return self


class Filter(_Strict):
    """Row filter; all given conditions must hold."""

    not_null: list[str] = Field(default_factory=list)
    is_null: list[str] = Field(default_factory=list)
    # Null, empty or only whitespace: how writers spell "none" in an id column.
    blank: list[str] = Field(default_factory=list)
    equals: dict[str, str | int | bool] = Field(default_factory=dict)
    not_equals: dict[str, str | int | bool] = Field(default_factory=dict)
    in_: dict[str, list[str | int]] = Field(default_factory=dict, alias="in")
    less_than: dict[str, int | float] = Field(default_factory=dict)

    def columns(self) -> set[str]:
        """Every column the filter reads."""
        return {
            *self.not_null, *self.is_null, *self.blank, *self.equals, *self.not_equals,
            *self.in_, *self.less_than,
        }


class Aggregation(_Strict):
    """One property of a node or edge: an aggregation over the group's rows."""

    first: str | None = None
    last: str | None = None
    min: str | None = None
    max: str | None = None
    count: str | None = None  # a column (non-null values) or "*" (rows)
    count_distinct: str | None = None
    sum: str | None = None  # numbers, or text holding them (a JSON path's value)

    @model_validator(mode="after")
    def _one(self) -> Aggregation:
        given = [a for a in AGGREGATIONS if getattr(self, a) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(AGGREGATIONS)}")
        if given[0] != "count" and getattr(self, given[0]) == "*":
            # "*" is every row: only counting means anything on it (the others were a
            # KeyError traceback from the projection, looking for a column named "*").
            raise ValueError(f"{given[0]} needs a column; \"*\" (the rows) only with count")
        return self

    @property
    def op(self) -> str:
        """The aggregation name."""
        return next(a for a in AGGREGATIONS if getattr(self, a) is not None)

    @property
    def column(self) -> str:
        """The column aggregated (``*`` for a row count)."""
        return str(getattr(self, self.op))


class Unnest(_Strict):
    """A rule that sees one row per element of a JSON array: ``column`` holds the
    array (JSON text, e.g. ``[{"path": "/a", "reads": 1}]``), and each entry of
    ``fields`` names a new column and the element key it takes (as text; null
    where the element lacks it). Rows whose column is null or not an array give
    no rows to the rule."""

    column: str
    fields: dict[str, str]

    @field_validator("fields")
    @classmethod
    def _fields(cls, v: dict[str, str]) -> dict[str, str]:
        if not v:
            raise ValueError("`unnest.fields` names at least one column")
        for name in v:
            if not COLUMN.match(name):
                raise ValueError(f"unnest field {name!r} is not a plain column name")
        return v


class NodeRule(_Strict):
    """Nodes of one type: grouped by key, properties aggregated per group."""

    type: str
    key: list[str]
    where: Filter | None = None
    granularity: Granularity = "thread"
    index: list[str] = Field(default_factory=list)
    properties: dict[str, Aggregation] = Field(default_factory=dict)
    description: str | None = None
    unnest: Unnest | None = None

    @field_validator("type")
    @classmethod
    def _label(cls, v: str) -> str:
        if not is_name(v):
            raise ValueError(f"node type {v!r} must match {NAME_RULE}")
        return v

    @field_validator("key")
    @classmethod
    def _key(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("a node key needs at least one column")
        if len(set(v)) != len(v):
            raise ValueError("a node key names a column twice")
        return v


class EndRef(_Strict):
    """One end of an edge: a node type and the columns that make its key.

    ``null`` in the key list stands for a key part that is always null (for
    example a Codex parent thread, which has no ``agent_id``).
    """

    type: str
    key: list[str | None]


class Join(_Strict):
    """Find the edge's target on another row: ``column`` of this row equals
    ``matches`` of that row (and, if given, the ``same`` columns are equal).

    (Not ``on``: YAML 1.1 reads a bare ``on`` key as the boolean true.)
    """

    column: str
    matches: str
    same: list[str] = Field(default_factory=list)
    where: Filter | None = None


class Chain(_Strict):
    """Link consecutive nodes within each group, in ``order_by`` order."""

    within: list[str]
    order_by: list[str]


class EdgeRule(_Strict):
    """Edges of one type, from one node reference to another."""

    type: str
    from_: EndRef = Field(alias="from")
    to: EndRef
    where: Filter | None = None
    join: Join | None = None
    chain: Chain | None = None
    granularity: Granularity = "thread"
    properties: dict[str, Aggregation] = Field(default_factory=dict)
    description: str | None = None
    unnest: Unnest | None = None

    @field_validator("type")
    @classmethod
    def _rel(cls, v: str) -> str:
        if not is_name(v):
            raise ValueError(f"edge type {v!r} must match {NAME_RULE}")
        return v

    @model_validator(mode="after")
    def _modes(self) -> EdgeRule:
        if self.join and self.chain:
            raise ValueError("an edge rule takes `join` or `chain`, not both")
        if self.unnest and (self.join or self.chain):
            raise ValueError("an edge rule with `unnest` takes no `join` or `chain`")
        if self.chain and (self.from_.type != self.to.type or self.from_.key != self.to.key):
            raise ValueError("a `chain` edge links nodes of one type and key")
        return self


class RejectRule(_Strict):
    """Rows matching ``when`` cannot be used: they go to the rejects file.

    A row meets the rules in order and is rejected for the first it matches.
    ``check`` names the finding under which ``graphkit check`` reports the rows
    this rule matches (no name: ``check`` leaves them to the rejects file).
    """

    when: Filter
    reason: str
    column: str | None = None
    check: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9-]{0,63}$")


class LineageSpec(_Strict):
    """The contract's lineage vocabulary: which node is the session anchor,
    which the thread, which edges link them, which properties a user types.

    Without it, ``sessions``/``lineage``/``tree`` refuse the graph clearly.
    """

    session: str
    session_key: str
    thread: str
    thread_key: str
    thread_aliases: list[str] = Field(default_factory=list)
    thread_session: str
    has_thread: str
    parent: str
    agent: str | None = None
    has_agent: str | None = None
    continues: str | None = None  # Session -> Session it continues

    @field_validator("session", "thread", "has_thread", "parent", "agent", "has_agent",
                     "continues")
    @classmethod
    def _names(cls, v: str | None) -> str | None:
        if v is not None and not is_name(v):
            raise ValueError(f"{v!r} is not a valid label or relationship type "
                             f"(it must match {NAME_RULE})")
        return v


class Contract(_Strict):
    """A whole graph contract: name, version, inputs, derived columns, rules."""

    contract: str
    # Stored as an int64 wherever a snapshot or Neo4j keeps it; snapshots refuse < 0.
    version: int = Field(ge=0, le=2**31 - 1)
    description: str | None = None
    input: dict[str, InputColumn]
    derive: dict[str, dict[str, Any] | str] = Field(default_factory=dict)
    dedupe: str | None = None
    order_by: list[str] = Field(default_factory=list)
    reject: list[RejectRule] = Field(default_factory=list)
    nodes: list[NodeRule]
    edges: list[EdgeRule] = Field(default_factory=list)
    lineage: LineageSpec | None = None

    @field_validator("contract")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", v):
            raise ValueError("a contract name is lower-case letters, digits, '.', '_' or '-'")
        return v

    @field_validator("input")
    @classmethod
    def _inputs(cls, v: dict[str, InputColumn]) -> dict[str, InputColumn]:
        for name in v:
            if not COLUMN.fullmatch(name):
                raise ValueError(f"input column {name!r} is not a plain column name")
        return v
