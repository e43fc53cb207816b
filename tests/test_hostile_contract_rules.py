"""Hostile contract files, second round (issue 13; the table is tests/HOSTILE.md): each
mistake is one ``ContractError`` naming the file and line; none is dropped silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphkit.builds.run import build
from tests.helpers.contracts import refused, write_contract
from tests.helpers.rows import identity_cases, table

GOOD = """\
contract: tiny
version: 3
input:
  session_id: {type: string, required: true}
  cwd: {type: string}
  tool_name: {type: string}
derive:
  workspace: {coalesce: [cwd, session_id]}
nodes:
  - type: Session
    key: [session_id]
  - type: Tool
    key: [tool_name]
    where: {not_null: [tool_name]}
edges:
  - type: USED
    from: {type: Session, key: [session_id]}
    to: {type: Tool, key: [tool_name]}
"""


def test_the_good_contract_builds(tmp_path: Path) -> None:
    path = write_contract(tmp_path, GOOD)
    result = build(table(identity_cases()), contract=str(path), fingerprints=False)
    assert result.graph.node_counts()["Session"] == 2


def test_a_derived_column_named_like_an_input_is_refused(tmp_path: Path) -> None:
    # Was: KeyError 'Field "cwd" exists 2 times in schema' traceback at build time.
    err = refused(tmp_path, GOOD.replace("  workspace: {coalesce: [cwd, session_id]}",
                                         "  cwd: {coalesce: [cwd, session_id]}"), 8)
    assert "derive.cwd" in str(err)


@pytest.mark.parametrize(("key", "text", "line"), [
    ("version", "version: 3\nversion: 4", 3),
    ("nodes", "nodes:", 9),  # a second nodes: would drop every rule of the first
])
def test_a_key_twice_in_one_mapping_is_refused(tmp_path: Path, key: str, text: str,
                                               line: int) -> None:
    # Was: YAML kept the last value and dropped the first without a word.
    if key == "nodes":
        doc = GOOD + "nodes:\n  - type: Other\n    key: [session_id]\n"
        line = doc.splitlines().index("nodes:", 9) + 1
    else:
        doc = GOOD.replace("version: 3", text)
    err = refused(tmp_path, doc, line)
    assert repr(key) in str(err)


@pytest.mark.parametrize("version", ["-1", str(2**31), "9" * 40])
def test_a_version_out_of_range_is_refused(tmp_path: Path, version: str) -> None:
    # Was: -1 built a snapshot every reader then refused as malformed; 10**40 was kept.
    refused(tmp_path, GOOD.replace("version: 3", f"version: {version}"), 2)
