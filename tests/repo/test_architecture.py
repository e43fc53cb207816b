"""The package reads in one direction (README, "Architecture"): every import,
including those inside functions, goes from a later layer to an earlier one;
no module imports another's private names; no function runs past 100 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

PACKAGE = REPO / "graphkit"

# The layers in pipeline order; a module may import its own layer and earlier ones.
# ``_version`` is the leaf under everything: inner modules read ``__version__`` there, never
# from the package root.
LAYERS = ["_version", "core", "sources", "contract", "projection", "snapshot", "enrich",
          "queries", "builds", "export", "view", "cli"]
MAX_FUNCTION_LINES = 100


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "graphkit" or len(parts) < 2:
        return None
    return parts[1]


def _modules() -> list[tuple[str, Path, ast.Module]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        out.append((name, path, ast.parse(path.read_text(encoding="utf-8"))))
    return out


def _imports(tree: ast.Module) -> list[tuple[int, str, list[str]]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name, []) for a in node.names)
    return found


def test_every_layer_is_known() -> None:
    own = {_layer(n) for n, _, _ in _modules()} - {None, "__main__"}
    assert own <= set(LAYERS), f"add {sorted(own - set(LAYERS))} to LAYERS and README"


def test_imports_run_one_way() -> None:
    wrong = []
    for name, path, tree in _modules():
        mine = _layer(name)
        if mine not in LAYERS:
            continue
        for line, module, _ in _imports(tree):
            theirs = _layer(module)
            if theirs in LAYERS and LAYERS.index(theirs) > LAYERS.index(mine):
                wrong.append(f"{path.relative_to(REPO)}:{line} ({mine}) imports {module}")
    assert wrong == []


def test_no_private_names_imported_across_modules() -> None:
    wrong = []
    for _, path, tree in _modules():
        for line, module, names in _imports(tree):
            if not module.startswith("graphkit"):
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            private += [p for p in module.split(".")
                        if p.startswith("_") and p not in ("__main__", "_version")]
            if private:
                wrong.append(f"{path.relative_to(REPO)}:{line} imports {private} from {module}")
    assert wrong == []


def test_functions_fit_on_a_screen_or_two() -> None:
    long = []
    for _, path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({n} lines)")
    assert long == []


@pytest.mark.parametrize("name", ["build", "load_contract", "write_snapshot", "read_snapshot",
                                  "to_networkx", "lineage", "ancestors", "descendants"])
def test_the_front_door_names_the_public_api(name: str) -> None:
    import graphkit

    assert name in graphkit.__all__ and callable(getattr(graphkit, name))
