from pathlib import Path

import pytest

from graphkit.contract.loader import available_contracts, load_contract
from graphkit.core.errors import ContractError

GOOD = """\
contract: tiny
version: 3
input:
  session_id: {type: string, required: true}
  agent_id: {type: string}
nodes:
  - type: Session
    key: [session_id]
  - type: Agent
    key: [agent_id]
    where: {not_null: [agent_id]}
edges:
  - type: RAN
    from: {type: Session, key: [session_id]}
    to: {type: Agent, key: [agent_id]}
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


def test_default_contract_loads() -> None:
    c = load_contract()
    assert c.name == "ai-gateway-graph"
    assert c.version == 1
    assert {n.type for n in c.spec.nodes} >= {"Session", "Thread", "Agent", "Workspace",
                                              "Model", "Tool", "Message"}
    assert {e.type for e in c.spec.edges} >= {"HAS_THREAD", "HAS_AGENT", "PARENT_THREAD"}
    assert "ai-gateway-graph" in available_contracts()


def test_good_contract_by_path(tmp_path: Path) -> None:
    c = load_contract(str(write(tmp_path, GOOD)))
    assert (c.name, c.version) == ("tiny", 3)


@pytest.mark.parametrize(
    ("mutation", "message", "line"),
    [
        (("    key: [agent_id]\n", "    key: [nope]\n"), "unknown column(s) ['nope']", 10),
        (("  - type: Agent\n", "  - type: 'Agent`) DELETE n //'\n"), "must match", 9),
        (("    to: {type: Agent, key: [agent_id]}\n", "    to: {type: Robot, key: [agent_id]}\n"),
         "names node type 'Robot'", 15),
        (("    to: {type: Agent, key: [agent_id]}\n",
          "    to: {type: Agent, key: [agent_id, session_id]}\n"),
         "has 2 part(s) but Agent nodes have a key of 1", 15),
        (("version: 3\n", "version: three\n"), "version", 2),
        (("  agent_id: {type: string}\n", "  agent_id: {type: strin}\n"), "input.agent_id.type", 5),
        (("    where: {not_null: [agent_id]}\n", "    where: {not_null: [agent_id]\n"),
         "not valid YAML", None),
        (("    key: [session_id]\n", "    key: []\n"), "at least one column", 8),
    ],
)
def test_broken_contracts_point_at_the_line(
    tmp_path: Path, mutation: tuple[str, str], message: str, line: int | None
) -> None:
    text = GOOD.replace(*mutation, 1)
    assert text != GOOD
    path = write(tmp_path, text)
    with pytest.raises(ContractError) as info:
        load_contract(str(path))
    err = info.value
    assert message in str(err)
    assert err.path == str(path)
    if line is not None:
        assert err.line == line


def test_unknown_extra_field_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + "colour: blue\n")
    with pytest.raises(ContractError, match="colour"):
        load_contract(str(path))


def test_duplicate_node_type(tmp_path: Path) -> None:
    text = GOOD.replace("edges:", "  - type: Session\n    key: [session_id]\nedges:")
    with pytest.raises(ContractError, match="defined twice"):
        load_contract(str(write(tmp_path, text)))


def test_unknown_contract_name_lists_shipped() -> None:
    with pytest.raises(ContractError, match="ai-gateway-graph"):
        load_contract("no-such-contract")


def test_derived_column_must_use_known_columns(tmp_path: Path) -> None:
    text = GOOD.replace("nodes:", "derive:\n  x: {coalesce: [agent_id, missing]}\nnodes:")
    with pytest.raises(ContractError, match=r"derive\.x reads") as info:
        load_contract(str(write(tmp_path, text)))
    assert info.value.line == 7
