"""The contract's rule classes, expressions and merge plans load without compiling code.

A dataclass compiles each generated method from source (``exec``) when its module loads:
5-6 per frozen class, ~10% of an incremental transcript build's instructions over the
classes graphkit loads. These modules' classes are msgspec Structs instead; the rules
still behave as the dataclasses did (frozen, compared by fields, dumped as plain data)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from graphkit.contract.loader import load_contract
from graphkit.contract.spec import Aggregation, Filter, NodeRule
from tests.helpers.paths import REPO

_PROBE = """
import builtins, json, sys
import graphkit.core.errors, graphkit.core.schema, graphkit.core.text, pyarrow.compute
compiled = []
_exec = builtins.exec
def exec_(source, *args, **kwargs):
    if isinstance(source, str):
        compiled.append(sys._getframe(1).f_globals.get("__name__"))
    return _exec(source, *args, **kwargs)
builtins.exec = exec_
import graphkit.contract.spec, graphkit.contract.expr, graphkit.builds.partitioned.plan
import graphkit.builds.partitioned.partition, graphkit.projection.edges, graphkit.projection.verdict
print(json.dumps(compiled))
"""


@pytest.mark.slow
def test_rule_expression_and_plan_modules_compile_no_methods_as_they_load() -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          cwd=REPO, check=True)
    compiled = json.loads(done.stdout)
    # The public classes (Contract, Shortcuts, LoadedContract, the graph's tables, ...)
    # imported on the way stay dataclasses: 58 methods compiled, where the rule,
    # expression and plan classes as dataclasses made it 193.
    assert compiled.count("dataclasses") < 90, compiled


def test_rules_stay_frozen_compared_by_fields_and_dump_as_plain_data() -> None:
    rule = NodeRule("Session", ["session_id"], Filter(not_null=["session_id"]),
                    properties={"n": Aggregation(count="*")})
    with pytest.raises(AttributeError):
        rule.type = "Other"  # type: ignore[misc]
    assert rule == NodeRule("Session", ["session_id"], Filter(not_null=["session_id"]),
                            properties={"n": Aggregation(count="*")})
    assert rule != rule.model_copy(update={"type": "Other"})
    assert rule.model_copy(update={"type": "Other"}).type == "Other"
    dumped = rule.model_dump()
    assert dumped["where"]["not_null"] == ["session_id"]
    assert dumped["properties"] == {"n": {"first": None, "last": None, "min": None,
                                          "max": None, "count": "*", "count_distinct": None,
                                          "sum": None, "sparse": False}}
    dumped["key"].append("x")  # a copy, as dataclasses.asdict gave
    assert rule.key == ["session_id"]


def test_a_contract_dumps_to_the_json_it_was_loaded_from() -> None:
    spec = load_contract("ai-gateway-graph").spec
    assert spec.json_text is not None
    assert json.loads(spec.json_text) == spec.model_dump()
    copied = spec.model_copy(update={"nodes": spec.nodes})
    assert copied.json_text is None
    assert json.loads(copied.model_dump_json()) == json.loads(spec.json_text)
