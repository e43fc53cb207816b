"""Every command documents itself and appears in the README (sqlite-utils style)."""

from __future__ import annotations

import re

import pytest

from graphkit.cli import cli
from tests.conftest import REPO

README = (REPO / "README.md").read_text()
COMMANDS = sorted(cli.commands)


@pytest.mark.parametrize("name", COMMANDS)
def test_command_has_help_with_an_example(name: str) -> None:
    cmd = cli.commands[name]
    assert cmd.help and len(cmd.help.strip()) > 20, name
    assert "Example:" in cmd.help, name


@pytest.mark.parametrize("name", COMMANDS)
def test_command_is_in_readme(name: str) -> None:
    assert re.search(rf"graphkit {re.escape(name)}\b", README), name


def test_quick_start_has_exactly_two_commands() -> None:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(?:sh|bash)\n(.*?)```", section, re.S)
    commands = [line for b in blocks for line in b.splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    assert len(commands) == 2, commands


def test_readme_contract_example_builds(tmp_path, sample_rows) -> None:  # type: ignore[no-untyped-def]
    from graphkit.pipeline import build

    section = README.split("## Writing a contract", 1)[1]
    (tmp_path / "repos.yaml").write_text(re.findall(r"```yaml\n(.*?)```", section, re.S)[0])
    graph = build([sample_rows], contract=str(tmp_path / "repos.yaml")).graph
    assert set(graph.nodes) == {"Session", "Repo"}
    assert graph.edge_counts()["TOUCHED"] == graph.node_counts()["Session"]


READ_COMMANDS = ("sessions", "lineage", "tree", "diff")


@pytest.mark.parametrize("name", READ_COMMANDS)
def test_read_commands_offer_json_lines_and_csv(name: str) -> None:
    """Every read command takes --json (JSON Lines in one envelope) and --csv, and
    its README row says so."""
    opts = {o for p in cli.commands[name].params for o in getattr(p, "opts", [])}
    assert {"--json", "--csv"} <= opts, name
    help_text = {p.name: getattr(p, "help", "") for p in cli.commands[name].params}
    assert '"record"' in (help_text["as_json"] or ""), name
    row = next(line for line in README.splitlines()
               if line.startswith(f"| `graphkit {name} "))
    assert "--json\\|--csv" in row, name
