"""Hostile contract files: names that are not plain identifiers, YAML alias
bombs, absurd nesting. Each is refused with one ContractError naming the line."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from graphkit.builds.run import build
from graphkit.contract.loader import load_contract
from graphkit.core.errors import ContractError
from graphkit.core.names import NAME_PATTERN, is_name
from graphkit.enrich.neo4j.cypher import quote_name
from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.contracts import FILES_CONTRACT, refused, write_contract
from tests.helpers.paths import REPO, SAMPLE_ROWS
from tests.helpers.rows import (
    identity_cases,
    table,
)

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


@pytest.mark.slow
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


_CONTRACT = """contract: t
version: 1
input:
  session_id: {type: string, required: true}
  model: {type: string}
nodes:
  - type: Session
    key: [session_id]
    properties: {SESSION_PROPS}
  - type: Model
    key: [model]
    properties: {MODEL_PROPS}
edges:
  - type: USED
    from: {type: Session, key: [session_id]}
    to: {type: Model, key: [model]}
    properties: {EDGE_PROPS}
"""


@pytest.mark.parametrize("part,name", [("SESSION", "id"), ("MODEL", "model"),
                                       ("EDGE", "source"), ("EDGE", "target")])
def test_a_property_named_like_a_tables_own_column_is_refused(
        tmp_path: Path, part: str, name: str) -> None:
    # Was: a node property `id` or one named like the node's key column: a build
    # traceback (ArrowInvalid / 'Field exists 2 times'); an edge property `source` or
    # `target`: a snapshot written with two columns of that name, which no reader opens.
    text = _CONTRACT
    for p in ("SESSION", "MODEL", "EDGE"):
        text = text.replace(f"{p}_PROPS", f"{name}: {{first: model}}" if p == part else "")
    path = tmp_path / "c.yaml"
    path.write_text(text)
    proc = graphkit("build", REPO / "samples" / "rows", "--contract", path,
                    "--snapshot", tmp_path / "snap")
    line = one_line_error(proc, f"{path}:", f"{name!r} is already a column")
    assert not (tmp_path / "snap").exists(), line


@pytest.mark.parametrize("op", ["sum", "first", "min", "count_distinct"])
def test_an_aggregation_of_the_rows_star_other_than_count_is_refused(
        tmp_path: Path, op: str) -> None:
    # Was: a KeyError traceback from the projection ('Field "*" does not exist').
    from graphkit.contract.loader import load_contract
    from graphkit.core.errors import ContractError

    path = tmp_path / "c.yaml"
    path.write_text(_CONTRACT.replace("SESSION_PROPS", f'p: {{{op}: "*"}}')
                    .replace("MODEL_PROPS", "").replace("EDGE_PROPS", ""))
    with pytest.raises(ContractError, match=rf'{op} needs a column; "\*" \(the rows\) only'):
        load_contract(str(path))


@pytest.mark.parametrize("key", ["session_id", "p"])
def test_a_sum_of_an_id_column_is_a_contract_error(tmp_path: Path, key: str) -> None:
    # Was: the contract loaded, and every row of the data was rejected as holding
    # "text that is no number": the contract's mistake reported as the data's.
    text = FILES_CONTRACT.replace("writes: {sum: w}, rows", f"writes: {{sum: {key}}}, rows")
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(ContractError) as info:
        load_contract(str(tmp_path / "c.yaml"))
    msg = str(info.value)
    assert msg.startswith(f"{tmp_path / 'c.yaml'}:21: edges[0].properties.writes sums "
                          f"column {key!r}"), msg
    assert "holds no counts" in msg


def test_a_sum_of_a_time_is_a_contract_error_through_the_cli(tmp_path: Path) -> None:
    text = FILES_CONTRACT.replace("n: {type: string}", "n: {type: timestamp}")
    (tmp_path / "c.yaml").write_text(text)
    proc = graphkit("build", tmp_path / "missing.parquet", "--contract", tmp_path / "c.yaml",
                    "--snapshot", tmp_path / "snap")
    one_line_error(proc, str(tmp_path / "c.yaml") + ":11", "'n'", "a time")


@pytest.mark.parametrize(("data", "words"), [
    (lambda text: text.encode() + "# caf\xe9\n".encode("latin-1"),
     [":{last}: contract is not UTF-8 text (byte 0xE9 at column 6)", "save it as UTF-8"]),
    (lambda text: text.encode("utf-16"), [":1: contract is not UTF-8 text", "it is UTF-16"]),
    (lambda text: text.encode()[:100] + b"\x00" + text.encode()[100:],
     [":{nul}: not valid YAML: the character U+0000 is not allowed"]),
])
def test_a_contract_of_bytes_yaml_refuses_is_named_by_line(
        tmp_path: Path, data: Callable[[str], bytes], words: list[str]) -> None:
    # Was: "contract is not UTF-8 text (byte 12782)" — a byte offset, no line; and a NUL
    # "unacceptable character #x0000: … \n in "<unicode string>", position 100", no line.
    text = (REPO / "contracts" / "ai-gateway-graph.yaml").read_text()
    contract = tmp_path / "c.yaml"
    contract.write_bytes(data(text))
    last = text.count("\n") + 1
    nul = text[:100].count("\n") + 1
    proc = graphkit("check", REPO / "samples" / "rows", "--contract", contract)
    one_line_error(proc, *[f"{contract}" + w.format(last=last, nul=nul) if w.startswith(":")
                           else w for w in words])


TINY = """\
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
edges:
  - type: USED
    from: {type: Session, key: [session_id]}
    to: {type: Tool, key: [tool_name]}
"""


@pytest.mark.parametrize(("twin", "line", "kind"), [
    ("  - type: tool\n    key: [tool_name]\n", 12, "node"),
    ("  - type: used\n    from: {type: Session, key: [session_id]}\n"
     "    to: {type: Tool, key: [tool_name]}\n", 16, "edge"),
])
def test_types_that_differ_only_in_case_are_refused(tmp_path: Path, twin: str, line: int,
                                                    kind: str) -> None:
    # Was: built, writing nodes/Tool.parquet beside nodes/tool.parquet (edges/USED and
    # edges/used): one file where names ignore case (macOS, Windows), so a snapshot or
    # export copied there lost a table without a word.
    from tests.helpers.contracts import refused

    doc = TINY.replace("edges:\n", twin + "edges:\n") if kind == "node" else TINY + twin
    err = refused(tmp_path, doc, line)
    assert f"{kind} types" in str(err) and "differ only in case" in str(err)


def test_a_type_and_an_edge_type_of_one_name_still_build(tmp_path: Path) -> None:
    """Pins what held: a node type and an edge type may share a name, and
    rules of one edge type may repeat: neither is a case twin."""
    from graphkit.builds.run import build
    from tests.helpers.contracts import write_contract

    doc = TINY.replace("  - type: USED\n", "  - type: Tool\n") + (
        "  - type: Tool\n    from: {type: Session, key: [session_id]}\n"
        "    to: {type: Tool, key: [tool_name]}\n")
    result = build(table(identity_cases()), contract=str(write_contract(tmp_path, doc)),
                   fingerprints=False)
    assert result.graph.node_counts()["Session"] == 2


@pytest.mark.parametrize("command", ["build", "check"])
def test_a_fifo_as_the_contract_is_refused_not_waited_on(tmp_path: Path,
                                                         command: str) -> None:
    # Was: `build` waited for a writer forever (the contract's digest, for the kept
    # snapshot, and the loader opened it blocking); "contract file not found" for one
    # that is there.
    fifo = tmp_path / "c.yaml"
    os.mkfifo(fifo)
    args = ["--snapshot", tmp_path / "snap"] if command == "build" else []
    one_line_error(graphkit(command, SAMPLE_ROWS, "--contract", fifo, *args),
                   f"{fifo}: is no regular file (a pipe or device)")


DERIVING = """\
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
    path = write_contract(tmp_path, DERIVING)
    result = build(table(identity_cases()), contract=str(path), fingerprints=False)
    assert result.graph.node_counts()["Session"] == 2


def test_a_derived_column_named_like_an_input_is_refused(tmp_path: Path) -> None:
    # Was: KeyError 'Field "cwd" exists 2 times in schema' traceback at build time.
    err = refused(tmp_path, DERIVING.replace("  workspace: {coalesce: [cwd, session_id]}",
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
        doc = DERIVING + "nodes:\n  - type: Other\n    key: [session_id]\n"
        line = doc.splitlines().index("nodes:", 9) + 1
    else:
        doc = DERIVING.replace("version: 3", text)
    err = refused(tmp_path, doc, line)
    assert repr(key) in str(err)


@pytest.mark.parametrize("version", ["-1", str(2**31), "9" * 40])
def test_a_version_out_of_range_is_refused(tmp_path: Path, version: str) -> None:
    # Was: -1 built a snapshot every reader then refused as malformed; 10**40 was kept.
    refused(tmp_path, DERIVING.replace("version: 3", f"version: {version}"), 2)
