"""Hostile contract files: names that are not plain identifiers, YAML alias
bombs, absurd nesting. Each is refused with one ContractError naming the line."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from graphkit.core.names import NAME_PATTERN, is_name
from graphkit.enrich.neo4j.cypher import quote_name
from tests.helpers.contracts import refused, write_contract

GOOD = """\
contract: tiny
version: 3
input:
  session_id: {type: string, required: true}
  tool_name: {type: string}
nodes:
  - type: Session
    key: [session_id]
  - type: Tool
    key: [tool_name]
    where: {not_null: [tool_name]}
    properties:
      name: {first: tool_name}
edges:
  - type: USED
    from: {type: Session, key: [session_id]}
    to: {type: Tool, key: [tool_name]}
"""


@pytest.mark.parametrize("bad", ["Tool\n", "Tool\r", "Tool ", " Tool", "Tóol", "1Tool",
                                 "_Tool", "To-ol", "T" * 65, "", "Tool`) DETACH DELETE n //"])
def test_one_name_pattern_for_contract_and_cypher(bad: str) -> None:
    assert not is_name(bad)
    with pytest.raises(Exception, match="refusing"):
        quote_name(bad)


def test_the_pattern_is_shared() -> None:
    from graphkit.contract import model
    from graphkit.enrich.neo4j import cypher

    assert cypher.NAME_PATTERN is NAME_PATTERN
    assert model.is_name is is_name
    assert is_name("T" * 64) and is_name("Tool_2")


@pytest.mark.parametrize(("old", "new", "line"), [
    ("  - type: Tool\n", '  - type: "Tool\\n"\n', 9),          # node type, trailing newline
    ("  - type: USED\n", '  - type: "USED\\n"\n', 15),          # relationship type
    ("      name: {first: tool_name}\n",
     '      "na me": {first: tool_name}\n', 13),                # property name
])
def test_bad_names_are_refused_at_their_line(tmp_path: Path, old: str, new: str,
                                            line: int) -> None:
    text = GOOD.replace(old, new, 1)
    assert text != GOOD
    err = refused(tmp_path, text)
    assert err.line == line, str(err)
    assert "[A-Za-z][A-Za-z0-9_]{0,63}" in str(err)


def test_a_key_column_that_cannot_be_a_property_is_refused(tmp_path: Path) -> None:
    # Key columns are stored on the node, so they are property names too.
    text = GOOD.replace("  tool_name: {type: string}\n",
                        "  tool_name: {type: string}\n  _t: {type: string}\n", 1)
    text = text.replace("    key: [tool_name]\n    where", "    key: [_t]\n    where", 1)
    err = refused(tmp_path, text)
    assert err.line == 11, str(err)
    assert "'_t'" in str(err)


BOMB = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def test_alias_bomb_is_refused_with_its_line(tmp_path: Path) -> None:
    assert len(BOMB.encode()) < 500
    err = refused(tmp_path, BOMB)
    assert err.line == 1
    assert "anchor" in str(err)


def test_alias_bomb_in_a_process_with_little_memory(tmp_path: Path) -> None:
    """The bomb under a 1 GiB address-space limit: exit 2 and one line, not an OOM kill."""
    path = write_contract(tmp_path, BOMB)
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
        "from graphkit.cli import main\n"
        "sys.argv = ['graphkit', 'check', '--contract', sys.argv[1], sys.argv[2]]\n"
        "main()\n"
    )
    assert resource.RLIMIT_AS  # Linux/macOS only, as the CI machine is
    done = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "anchor" in done.stderr and "Traceback" not in done.stderr
    assert f"{path}:1" in done.stderr


def test_alias_reuse_inside_a_real_contract_is_refused(tmp_path: Path) -> None:
    text = GOOD.replace("    key: [session_id]\n", "    key: &k [session_id]\n", 1)
    text = text.replace("    from: {type: Session, key: [session_id]}",
                        "    from: {type: Session, key: *k}")
    err = refused(tmp_path, text)
    assert err.line == 8


def test_deep_nesting_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    deep = GOOD + "description: " + "[" * 20000 + "]" * 20000 + "\n"
    err = refused(tmp_path, deep)
    assert "nest" in str(err)


def test_huge_contract_file_is_refused(tmp_path: Path) -> None:
    big = GOOD + "# " + "x" * (2 << 20) + "\n"
    err = refused(tmp_path, big)
    assert "large" in str(err)
