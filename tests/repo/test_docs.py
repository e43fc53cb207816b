"""The docs say what the code does: every command documents itself and is in the README
and the generated docs/cli.md, the Python API page's examples run, and the docs stay
small enough to read (sqlite-utils style)."""

from __future__ import annotations

import doctest
import re
import subprocess

import pytest

from graphkit.cli import cli
from tests.helpers.cli import graphkit
from tests.helpers.paths import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = REPO / "docs"
COMMANDS = sorted(cli.commands)


@pytest.mark.parametrize("name", COMMANDS)
def test_command_has_help_with_an_example(name: str) -> None:
    cmd = cli.commands[name]
    assert cmd.help and len(cmd.help.strip()) > 20, name
    assert "Example:" in cmd.help, name


@pytest.mark.parametrize("name", COMMANDS)
def test_command_is_in_readme(name: str) -> None:
    assert re.search(rf"graphkit {re.escape(name)}\b", README), name


def _quick_start() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(?:sh|bash)\n(.*?)```", section, re.S)
    return [line for b in blocks for line in b.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_quick_start_has_exactly_two_commands() -> None:
    commands = _quick_start()
    assert len(commands) == 2, commands
    assert commands[0].startswith("python -m pip install -e . && graphkit build samples/rows")
    assert "--store networkx" in commands[0]


def test_ci_runs_the_readme_test_command() -> None:
    """.ci/run runs exactly the README's second quick-start command."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == _quick_start()[1]


def test_readme_names_the_distribution_that_installs_it() -> None:
    import tomllib

    name = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["name"]
    assert name != "graphkit"  # PyPI's graphkit is another project
    install = README.split("## Install", 1)[1].split("\n## ", 1)[0]
    assert f"`{name}`" in install and "pip install -e ." in install


def test_readme_contract_example_builds(tmp_path, sample_rows) -> None:  # type: ignore[no-untyped-def]
    from graphkit.builds.run import build

    section = (DOCS / "contracts.md").read_text(encoding="utf-8").split(
        "## Writing a contract", 1)[1]
    (tmp_path / "repos.yaml").write_text(re.findall(r"```yaml\n(.*?)```", section, re.S)[0])
    graph = build([sample_rows], contract=str(tmp_path / "repos.yaml")).graph
    assert set(graph.nodes) == {"Session", "Repo"}
    assert graph.edge_counts()["TOUCHED"] == graph.node_counts()["Session"]


READ_COMMANDS = ("sessions", "lineage", "tree", "diff")


@pytest.mark.parametrize("name", READ_COMMANDS)
def test_read_commands_offer_json_lines_and_csv(name: str) -> None:
    """Every read command takes --json (JSON Lines in one envelope) and --csv, and
    its help says what a record holds."""
    opts = {o for p in cli.commands[name].params for o in getattr(p, "opts", [])}
    assert {"--json", "--csv"} <= opts, name
    help_text = {p.name: getattr(p, "help", "") for p in cli.commands[name].params}
    assert '"record"' in (help_text["as_json"] or ""), name


def _examples() -> dict[str, str]:
    """Each command's ``Example:`` paragraph from its help, as one line."""
    out = {}
    for name in COMMANDS:
        text = cli.commands[name].help or ""
        para = text.split("Example:", 1)[1].split("\n\n", 1)[0]
        out[name] = " ".join(para.split())
    return out


# Examples that need what a fresh clone lacks: a Neo4j server (load, snapshot,
# neo4j-server) or the user's own ~/.claude history (rows); or that serve until their
# client leaves (mcp: tests/cli/test_mcp.py runs it under an MCP client).
_NOT_ON_THE_SAMPLE = {"load", "snapshot", "neo4j-server", "rows", "mcp"}


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


def test_the_cli_reference_is_current() -> None:
    """docs/cli.md is every command's --help as `python -m graphkit.cli.docs` writes it."""
    from graphkit.cli.docs import reference

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert text == reference(), "docs/cli.md is out of date: run python -m graphkit.cli.docs"
    missing = [f"{name} {opt}" for name in COMMANDS for p in cli.commands[name].params
               for opt in getattr(p, "opts", []) if opt.startswith("--")
               and opt not in text.split(f"## graphkit {name}\n", 1)[1].split("\n## ", 1)[0]]
    assert not missing


def test_the_python_api_page_covers_every_public_name() -> None:
    import graphkit

    page = (DOCS / "python-api.md").read_text(encoding="utf-8")
    headings = [h for h in re.findall(r"^### (.+)$", page, re.M)]
    named = {n for h in headings for n in re.findall(r"`graphkit\.(\w+)`", h)}
    assert set(graphkit.__all__) - named == set(), "add a section with an example"
    assert named - set(graphkit.__all__) == set()
    sections = re.split(r"^### ", page, flags=re.M)[1:]
    assert all(">>> " in s for s in sections), [s.splitlines()[0] for s in sections
                                                if ">>> " not in s]


def test_the_python_api_page_runs(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Its examples, run from a folder holding the repo's samples/ (as after the quick start)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "samples").symlink_to(REPO / "samples")
    result = doctest.testfile(str(DOCS / "python-api.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                              raise_on_error=False, report=True)
    assert result.attempted > 30 and result.failed == 0, result


def test_the_readme_is_short() -> None:
    assert len(README.encode("utf-8")) <= 12 * 1024


def test_no_markdown_file_over_40_kb() -> None:
    files = subprocess.run(["git", "ls-files", "*.md"], cwd=REPO, capture_output=True,
                           text=True, check=True).stdout.split()
    assert files
    assert {f: (REPO / f).stat().st_size for f in files
            if (REPO / f).exists() and (REPO / f).stat().st_size > 40_000} == {}


@pytest.mark.parametrize("doc", ["README.md", "CONTRIBUTING.md", "bench/README.md",
                                 *(f"docs/{p.name}" for p in sorted(DOCS.glob("*.md")))])
def test_local_links_resolve(doc: str) -> None:
    path = REPO / doc
    text = path.read_text(encoding="utf-8")
    broken = [link for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
              if "://" not in link and not (path.parent / link).exists()]
    assert broken == []


def test_contributing_names_every_package() -> None:
    """CONTRIBUTING.md's layout has a line for every package folder, so a newcomer finds
    the room for a change from it."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    packages = sorted(p.parent.relative_to(REPO).as_posix()
                      for p in (REPO / "graphkit").glob("*/__init__.py"))
    assert packages and [p for p in packages if f"`{p}/`" not in text] == []


def _section(name: str) -> str:
    return README.split(f"## {name}\n", 1)[1].split("\n## ", 1)[0]


@pytest.mark.slow
def test_readme_export_and_python_snippets_run(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The Export section's commands and the From Python snippet, after the quick start."""
    import shlex

    from click.testing import CliRunner

    monkeypatch.chdir(tmp_path)
    (tmp_path / "samples").symlink_to(REPO / "samples")
    runner = CliRunner()
    assert runner.invoke(cli, ["build", "samples/rows", "--snapshot", "out/graph"]).exit_code == 0
    (block,) = re.findall(r"```sh\n(.*?)```", _section("Export"), re.S)
    for line in block.splitlines():
        argv = shlex.split(line, comments=True)
        res = runner.invoke(cli, argv[1:])
        assert res.exit_code == 0 and (tmp_path / argv[-1]).exists(), (line, res.output)
    (code,) = re.findall(r"```python\n(.*?)```", _section("From Python"), re.S)
    exec(compile(code, "README.md", "exec"), {})  # raises if the snippet does not run
