"""The package reads in one direction (README, "Architecture"): every import,
including those inside functions, goes from a later layer to an earlier one;
no module imports another's private names; no function runs past 100 lines."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

PACKAGE = REPO / "graphkit"

# The layers in pipeline order; a module may import its own layer and earlier ones.
# ``_version`` is the leaf under everything: inner modules read ``__version__`` there, never
# from the package root.
LAYERS = ["_version", "core", "sources", "contract", "projection", "snapshot", "enrich",
          "queries", "builds", "export", "view", "serve", "cli"]
MAX_FUNCTION_LINES = 100


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "graphkit" or len(parts) < 2:
        return None
    return parts[1]


# Parsed once per test process: every check below reads the same trees (none changes them).
@functools.cache
def _modules() -> tuple[tuple[str, Path, ast.Module], ...]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        out.append((name, path, ast.parse(path.read_text(encoding="utf-8"))))
    return tuple(out)


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
                doc = node.body[0]  # a numpydoc docstring is read, not scrolled past
                if ast.get_docstring(node) is not None:
                    n -= (doc.end_lineno or doc.lineno) - doc.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({n} lines)")
    assert long == []


@pytest.mark.parametrize("name", ["build", "load_contract", "write_snapshot", "read_snapshot",
                                  "to_networkx", "lineage", "ancestors", "descendants"])
def test_the_front_door_names_the_public_api(name: str) -> None:
    import graphkit

    assert name in graphkit.__all__ and callable(getattr(graphkit, name))


def _module_names() -> set[str]:
    return {name for name, _, _ in _modules()}


def _targets(module: str, names: list[str], known: set[str]) -> list[str]:
    """The graphkit modules an import reaches: ``from a.b import c`` is ``a.b.c`` where
    that is a module (a submodule, not the package's ``__init__``), else ``a.b``."""
    if not names:
        return [module] if module in known else []
    subs = [f"{module}.{n}" for n in names if f"{module}.{n}" in known]
    rest = [n for n in names if f"{module}.{n}" not in known]
    return subs + ([module] if rest and module in known else [])


def test_no_import_cycle() -> None:
    # Every import counts, also those inside functions and under TYPE_CHECKING: a cycle
    # there is still two modules that cannot be read (or moved) one without the other.
    known = _module_names()
    graph: dict[str, set[str]] = {n: set() for n in known}
    for name, _, tree in _modules():
        for _, module, names in _imports(tree):
            graph[name].update(t for t in _targets(module, names, known) if t != name)
    cycles = _strongly_connected(graph)
    assert cycles == [], "import cycles: " + "; ".join(" ↔ ".join(c) for c in cycles)


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The components of more than one module (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


# The command line is a thin layer over the public API: it may import the package root
# (graphkit), its own modules and the leaf graphkit.core, nothing inside the library.
CLI_MAY_IMPORT = ("graphkit.cli", "graphkit.core")


def test_the_cli_imports_only_the_public_api_and_core() -> None:
    wrong = []
    for name, path, tree in _modules():
        rel = str(path.relative_to(REPO))
        if _layer(name) != "cli":
            continue
        for line, module, _ in _imports(tree):
            if not module.startswith("graphkit"):
                continue
            if module not in ("graphkit", "graphkit._version") and not any(
                    module == ok or module.startswith(ok + ".") for ok in CLI_MAY_IMPORT):
                wrong.append(f"{rel}:{line} imports {module}")
    assert wrong == []


def _defined(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The underscore names a module defines as functions or methods, and every name it
    defines or assigns (functions, classes, attributes, variables)."""
    private, own = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            own.add(node.name)
            if node.name.startswith("_") and not node.name.startswith("__"):
                private.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            own.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            own.add(node.id)
    return private, own


# A named tuple's public API, underscored only so as not to clash with its fields.
NAMEDTUPLE_API = {"_asdict", "_field_defaults", "_fields", "_make", "_replace"}


def test_no_module_calls_another_modules_private_functions() -> None:
    # `x._name` where _name is a function or method another graphkit module defines and
    # this one does not: reaching past a module's (or an object's) public face.
    mods = _modules()
    defined = {name: _defined(tree) for name, _, tree in mods}
    private_somewhere = {n for p, _ in defined.values() for n in p} - NAMEDTUPLE_API
    wrong = []
    for name, path, tree in mods:
        own = defined[name][1]
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or node.attr not in private_somewhere:
                continue
            if node.attr in own or (isinstance(node.value, ast.Name)
                                    and node.value.id in ("self", "cls")):
                continue
            wrong.append(f"{path.relative_to(REPO)}:{node.lineno} uses .{node.attr}")
    assert wrong == []
