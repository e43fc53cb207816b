"""The graph contract's checker: pydantic models derived from the one schema in
:mod:`graphkit.contract.spec`.

A contract is YAML; these models validate it and the loader turns every problem into
a :class:`~graphkit.core.errors.ContractError` that points at the line of the contract
file, before any row is read. Nothing here says what a contract holds: each model has
its spec class's fields (types, defaults, constraints, the file's names ``from`` and
``in``), docstring and methods, and runs the spec's :data:`~graphkit.contract.spec.CHECKS`
as validators. Imported only where a contract file is checked afresh: a cached contract
needs no pydantic (:mod:`graphkit.contract.cache`).

>>> Aggregation(count="*").op
'count'
>>> NodeRule.model_validate({"type": "Session", "key": []})
Traceback (most recent call last):
...
pydantic_core._pydantic_core.ValidationError: 1 validation error for NodeRule
key
  Value error, a node key needs at least one column ...
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import types
import typing
from typing import Annotated, Any, Literal, Union

import msgspec
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from graphkit.contract import spec
from graphkit.contract.spec import AGGREGATIONS as AGGREGATIONS
from graphkit.contract.spec import COLUMN as COLUMN
from graphkit.contract.spec import Check
from graphkit.core.names import is_name as is_name


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_MODELS: dict[type, type[BaseModel]] = {}


def _pydantic_type(hint: Any) -> Any:
    """A spec field's type as the model's: spec classes become their models, and a
    msgspec constraint (``Meta(ge=…, pattern=…)``) the same pydantic constraint."""
    if hint in _MODELS:
        return _MODELS[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        base, *extra = args
        meta = [m for m in extra if isinstance(m, msgspec.Meta)]
        limits = {k: getattr(m, k) for m in meta for k in ("ge", "le", "pattern")
                  if getattr(m, k) is not None}
        return Annotated[_pydantic_type(base), Field(**limits)]
    if origin in (Union, types.UnionType):
        return functools.reduce(operator.or_, [_pydantic_type(a) for a in args])
    if origin is Literal or not args:
        return hint
    return origin[tuple(_pydantic_type(a) for a in args)]


def _fields(cls: type) -> list[tuple[str, str, Any, Any]]:
    """(name, name in the file, default, default factory) of each field of a spec class,
    in order; ``...`` where there is none."""
    if dataclasses.is_dataclass(cls):
        return [(f.name, f.name,
                 ... if f.default is dataclasses.MISSING else f.default,
                 ... if f.default_factory is dataclasses.MISSING else f.default_factory)
                for f in dataclasses.fields(cls) if f.metadata != spec.NOT_IN_FILE]
    return [(f.name, f.encode_name,
             ... if f.default is msgspec.NODEFAULT else f.default,
             ... if f.default_factory is msgspec.NODEFAULT else f.default_factory)
            for f in msgspec.structs.fields(cls)]


def _field_check(check: Check) -> Any:
    def run(cls: type, value: Any) -> Any:
        check(value)
        return value

    return run


def _rule_check(check: Check) -> Any:
    def run(self: BaseModel) -> BaseModel:
        check(self)
        return self

    return run


def _derive(cls: type) -> type[BaseModel]:
    """The pydantic model checking what ``cls`` holds."""
    hints = typing.get_type_hints(cls, include_extras=True)
    annotations: dict[str, Any] = {}
    body: dict[str, Any] = {"__module__": __name__, "__qualname__": cls.__name__,
                            "__doc__": cls.__doc__, "__annotations__": annotations}
    for name, in_file, default, factory in _fields(cls):
        annotations[name] = _pydantic_type(hints[name])
        given: dict[str, Any] = {} if in_file == name else {"alias": in_file}
        if factory is not ...:
            given["default_factory"] = factory
        elif default is not ...:
            given["default"] = default
        if given:
            body[name] = Field(**given)
    # The spec class's own questions (Filter.columns, Aggregation.op, …), not its
    # stand-ins for pydantic's methods (model_dump, …).
    for name, value in vars(cls).items():
        if isinstance(value, property | types.FunctionType) and not name.startswith("_") \
                and not hasattr(BaseModel, name):
            body[name] = value
    for i, (names, check) in enumerate(spec.CHECKS.get(cls, [])):
        body[f"check_{i}"] = (field_validator(*names)(_field_check(check)) if names
                              else model_validator(mode="after")(_rule_check(check)))
    model = type(cls.__name__, (_Strict,), body)
    _MODELS[cls] = model
    return model


InputColumn = _derive(spec.InputColumn)
Filter = _derive(spec.Filter)
Aggregation = _derive(spec.Aggregation)
Unnest = _derive(spec.Unnest)
NodeRule = _derive(spec.NodeRule)
EndRef = _derive(spec.EndRef)
Join = _derive(spec.Join)
Chain = _derive(spec.Chain)
EdgeRule = _derive(spec.EdgeRule)
RejectRule = _derive(spec.RejectRule)
LineageSpec = _derive(spec.LineageSpec)
Contract = _derive(spec.Contract)
assert tuple(_MODELS) == spec.SCHEMA, "a spec class has no model"
