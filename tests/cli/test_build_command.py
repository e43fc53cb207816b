"""``graphkit build``, ``rows``, ``check`` and ``--watch`` are a thin layer: their modules
import only the public API (``graphkit``), ``graphkit.cli`` and the leaf ``graphkit.core``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers.paths import REPO


@pytest.mark.parametrize("module", ["build", "watch"])
def test_the_build_commands_import_only_the_public_api(module: str) -> None:
    tree = ast.parse((REPO / "graphkit" / "cli" / f"{module}.py").read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom) and n.module and n.level == 0]
    inner = [m for m in names if m.startswith("graphkit.")
             and not m.startswith(("graphkit.cli.", "graphkit.core."))]
    assert inner == []
    assert module != "build" or "graphkit" in names  # the commands' one door


def test_the_front_door_names_what_the_build_command_uses() -> None:
    import graphkit

    used = set()
    for module in ("build", "watch"):
        tree = ast.parse((REPO / "graphkit" / "cli" / f"{module}.py").read_text())
        used |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                 and isinstance(n.value, ast.Name) and n.value.id == "graphkit"}
    assert used and used <= set(graphkit.__all__)
    assert all(getattr(graphkit, name) is not None for name in used)


def test_build_options_flags_are_checked_before_sources_are_read(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from graphkit.cli.app import cli

    r = CliRunner().invoke(cli, ["build", str(tmp_path / "nowhere"), "--snapshot",
                                 str(tmp_path / "s"), "--poll", "1"])
    assert r.exit_code == 2 and "--poll works with --watch only" in r.output
    assert not (tmp_path / "s").exists()
