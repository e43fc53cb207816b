"""The contract schema is written once (graphkit.contract.spec); the pydantic models that
check a contract file are derived from it, field for field, check for check."""

from __future__ import annotations

import dataclasses

import msgspec
import pytest
from pydantic import ValidationError

from graphkit.contract import model, spec


@pytest.mark.parametrize("cls", spec.SCHEMA, ids=lambda c: c.__name__)
def test_every_spec_class_has_its_model_field_for_field(cls: type) -> None:
    derived = getattr(model, cls.__name__)
    if dataclasses.is_dataclass(cls):
        want = [(f.name, f.name) for f in dataclasses.fields(cls)
                if f.metadata != spec.NOT_IN_FILE]
    else:
        want = [(f.name, f.encode_name) for f in msgspec.structs.fields(cls)]
    got = [(name, f.alias or name) for name, f in derived.model_fields.items()]
    assert got == want
    assert derived.__doc__ == cls.__doc__


def test_the_specs_checks_run_in_the_models() -> None:
    # A rule check, a field check and a constraint, each as the file's error says it.
    with pytest.raises(ValidationError, match="give exactly one of first"):
        model.Aggregation(first="a", last="b")
    with pytest.raises(ValidationError, match="a node key needs at least one column"):
        model.NodeRule(type="Session", key=[])
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        model.Contract.model_validate({"contract": "c", "version": -1, "input": {},
                                       "nodes": []})
    edge = model.EdgeRule.model_validate({"type": "E", "from": {"type": "A", "key": ["a"]},
                                          "to": {"type": "B", "key": ["b"]}})
    assert edge.from_.type == "A"  # the file's `from`, Python's from_
    assert spec.EdgeRule.from_dump(edge.model_dump()).from_ == spec.EndRef("A", ["a"])
