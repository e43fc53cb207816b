"""Every command documents itself and appears in the README (sqlite-utils style)."""

from __future__ import annotations

import re

import pytest

from graphkit.cli import cli
from tests.helpers.cli import graphkit
from tests.helpers.paths import REPO

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
    from graphkit.builds.run import build

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


def _examples() -> dict[str, str]:
    """Each command's ``Example:`` paragraph from its help, as one line."""
    out = {}
    for name in COMMANDS:
        text = cli.commands[name].help or ""
        para = text.split("Example:", 1)[1].split("\n\n", 1)[0]
        out[name] = " ".join(para.split())
    return out


# Examples that need what a fresh clone lacks: a Neo4j server (load, snapshot,
# neo4j-server) or the user's own ~/.claude history (rows).
_NOT_ON_THE_SAMPLE = {"load", "snapshot", "neo4j-server", "rows"}


def test_help_examples_run_on_the_quick_start_snapshot(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A newcomer who ran the quick start can paste every command's help example: the
    ids it names are the sample's and every path is the quick start's (an example
    naming the HypAware fixture's ids failed with "no session has the id")."""
    import shlex

    monkeypatch.chdir(tmp_path)
    (tmp_path / "samples").symlink_to(REPO / "samples")
    examples = _examples()
    assert set(_NOT_ON_THE_SAMPLE) < set(examples)
    for name in ["build", *sorted(set(examples) - {"build"} - _NOT_ON_THE_SAMPLE)]:
        argv = shlex.split(examples[name])
        assert argv[0] == "graphkit" and argv[1] == name, examples[name]
        if name == "diff":  # an older snapshot of the same rows, as the example names
            res = graphkit("build", "samples/rows", "--snapshot", argv[2])
            assert res.returncode == 0, res.output
        res = graphkit(*(argv[1:]))
        assert res.returncode == 0, f"{examples[name]}: {res.output}"


def test_every_option_is_in_the_readme() -> None:
    missing = [f"{name} {opt}" for name in COMMANDS for p in cli.commands[name].params
               for opt in getattr(p, "opts", []) if opt.startswith("--") and opt != "--help"
               and opt not in README]
    assert not missing
