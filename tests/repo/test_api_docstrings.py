"""Every public function of graphkit (a name in ``graphkit.__all__``) has a numpydoc
docstring a user can rely on, in the shape of networkx's ``dag.py``: a Parameters
section naming each parameter, Returns (or Yields), Raises where a user's mistake raises
a :class:`graphkit.GraphkitError` — shown here by making that mistake — and Examples
that run (pytest runs them with ``--doctest-modules``). Public paths take ``str`` as
well as ``Path``.

Classes and constants are exempt from the sections (a class's fields are its
signature, a constant has no docstring of its own); each class still shows itself in a
doctest, and every name has a runnable section in docs/python-api.md (tests/repo/test_docs.py).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import graphkit
from tests.helpers.paths import REPO

_SECTION = re.compile(r"^([A-Z][A-Za-z ]+)\n-{3,}\n", re.M)

# Public names that are neither a function nor a class, and why they need no docstring.
CONSTANTS = {
    "GROUPINGS": "a tuple of the usage groupings; documented in docs/python-api.md",
    "MCP_PAGE_SIZE": "an int, the MCP sessions tool's page size; documented in "
                     "docs/python-api.md and serve_mcp's Parameters",
}


def _public() -> dict[str, Any]:
    return {name: getattr(graphkit, name) for name in graphkit.__all__}


def _functions() -> list[str]:
    return sorted(n for n, o in _public().items()
                  if inspect.isfunction(inspect.unwrap(o)))


def _classes() -> list[str]:
    return sorted(n for n, o in _public().items() if inspect.isclass(o))


def sections(doc: str) -> dict[str, str]:
    """A numpydoc docstring's sections: title → body."""
    parts = _SECTION.split(doc)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def documented_parameters(body: str) -> set[str]:
    """The names a Parameters section documents: its unindented lines, before `` :``,
    split at commas (``since, until : …``)."""
    names: set[str] = set()
    for line in body.splitlines():
        if line and not line[0].isspace():
            names.update(n.strip() for n in line.split(" :")[0].split(","))
    return names


def _signature_names(fn: Callable[..., Any]) -> set[str]:
    star = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    return {star.get(p.kind, "") + p.name for p in inspect.signature(fn).parameters.values()}


def test_every_public_name_is_a_function_a_class_or_a_known_constant() -> None:
    others = set(_public()) - set(_functions()) - set(_classes())
    assert others == set(CONSTANTS)


def test_the_checks_see_every_public_function() -> None:
    assert len(_functions()) > 40 and "build" in _functions() and "open_store" in _functions()


@pytest.mark.parametrize("name", _functions())
def test_a_public_function_has_numpydoc_sections(name: str) -> None:
    fn = getattr(graphkit, name)
    doc = inspect.getdoc(fn) or ""
    first = doc.split("\n\n", 1)[0]
    assert first and first[0].isupper() and first.rstrip().endswith((".", ")")), first
    found = sections(doc)
    params = _signature_names(inspect.unwrap(fn))
    if params:
        assert "Parameters" in found, f"{name}: no Parameters section"
        assert documented_parameters(found["Parameters"]) == params, name
    returns = inspect.signature(inspect.unwrap(fn)).return_annotation
    if returns not in ("None", None):
        assert {"Returns", "Yields"} & set(found), f"{name}: no Returns (or Yields) section"
    assert ">>> " in found.get("Examples", ""), f"{name}: no Examples section with a doctest"


@pytest.mark.parametrize("name", _classes())
def test_a_public_class_has_a_docstring_with_an_example(name: str) -> None:
    doc = inspect.getdoc(getattr(graphkit, name)) or ""
    assert len(doc.split("\n\n", 1)[0]) > 20, name
    # The example may be the class's own or its module's (GraphTables, LineageReader).
    module = inspect.getmodule(getattr(graphkit, name))
    assert ">>> " in doc or ">>> " in (inspect.getdoc(module) or ""), name


# --- Raises: each user mistake a public function raises on, made here ---------------------

def _graph() -> graphkit.GraphTables:
    from graphkit.builds.run import example_graph

    return example_graph()


def _store() -> graphkit.NetworkXStore:
    store = graphkit.NetworkXStore()
    store.load(_graph())
    return store


def _not_a_site(tmp: Path) -> Path:
    (tmp / "mine").mkdir()
    (tmp / "mine" / "notes.txt").write_text("keep", encoding="utf-8")
    return tmp / "mine"


def _unreachable() -> Any:
    return graphkit.Neo4jStore(graphkit.Neo4jConfig(uri="bolt://127.0.0.1:1", password="x"))


def _no_own_history(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"HOME": str(tmp), "GRAPHKIT_HOME": str(tmp / "gk"),
                        "CLAUDE_CONFIG_DIR": "", "CODEX_HOME": ""}.items():
        monkeypatch.setenv(name, value)
    graphkit.latest_own_snapshot()


def _in_neo4j_block() -> None:
    with graphkit.open_neo4j():
        pass


def _bad_prices(tmp: Path) -> None:
    (tmp / "prices.json").write_text('{"models": {"m": {"input": "cheap"}}}', encoding="utf-8")
    graphkit.load_prices(tmp / "prices.json")


def _no_java(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    graphkit.start_local_neo4j()


Mistake = Callable[[Path, pytest.MonkeyPatch], object]
MISTAKES: dict[str, Mistake] = {
    "ancestors": lambda t, m: graphkit.ancestors(_store(), "no-such-id"),
    "descendants": lambda t, m: graphkit.descendants(_store(), "no-such-id"),
    "lineage": lambda t, m: graphkit.lineage(_store(), "no-such-id"),
    "lineage_many": lambda t, m: graphkit.lineage_many(_store(), ["sess-1", "no-such-id"]),
    "session_tree": lambda t, m: graphkit.session_tree(_store(), "ag-1"),
    "tree": lambda t, m: graphkit.tree(_store(), "no-such-id"),
    "sessions": lambda t, m: graphkit.sessions(_store(), since="not a time"),
    "usage": lambda t, m: graphkit.usage(_store(), by="colour"),
    "files": lambda t, m: graphkit.files(_store(), until="not a time"),
    "session_page": lambda t, m: graphkit.session_page(_store(), "no-such-id"),
    "build": lambda t, m: graphkit.build(str(t / "no-such-folder")),
    "build_snapshot": lambda t, m: graphkit.build_snapshot(REPO / "samples" / "rows", None),
    "check": lambda t, m: graphkit.check(str(t / "no-such-folder")),
    "write_rows": lambda t, m: graphkit.write_rows(REPO / "samples" / "rows", t),
    "watch_builds": lambda t, m: graphkit.watch_builds(
        str(t / "no-such-folder"), t / "graph", graphkit.BuildOptions(watch=True), print),
    "load_contract": lambda t, m: graphkit.load_contract("no-such-contract"),
    "load_prices": lambda t, m: _bad_prices(t),
    "read_manifest": lambda t, m: graphkit.read_manifest(t),
    "read_snapshot": lambda t, m: graphkit.read_snapshot(str(t)),
    "write_snapshot": lambda t, m: graphkit.write_snapshot(_graph(), _not_a_site(t)),
    "diff_snapshots": lambda t, m: graphkit.diff_snapshots(t, t),
    "export_snapshot": lambda t, m: graphkit.export_snapshot(t, "json", t / "out.json"),
    "send_traces": lambda t, m: graphkit.send_traces(t, "ftp://example.org"),
    "write_site": lambda t, m: graphkit.write_site(_store(), _not_a_site(t)),
    "write_html": lambda t, m: graphkit.write_html("<p>", t),
    "latest_own_snapshot": _no_own_history,
    "open_store": lambda t, m: graphkit.open_store(t, neo4j=True).__enter__(),
    "open_neo4j": lambda t, m: (m.setenv("NEO4J_URI", "bolt://127.0.0.1:1"),
                                m.setenv("NEO4J_PASSWORD", "x"), _in_neo4j_block()),
    "load_snapshot": lambda t, m: graphkit.load_snapshot(t, engine="cypher"),
    "snapshot_neo4j": lambda t, m: graphkit.snapshot_neo4j(_unreachable(), t / "out"),
    "start_local_neo4j": lambda t, m: _no_java(m),
    "serve_mcp": lambda t, m: graphkit.serve_mcp(lambda: graphkit.open_store(t), t),
}

# Public functions no user mistake makes raise a GraphkitError, and why.
NO_USER_ERROR = {
    "default_transcript_roots": "lists the folders that exist; none is no error",
    "export_formats": "lists the format modules shipped with graphkit",
    "history_snapshot": "names a path, reads and makes nothing",
    "skipped_lines_summary": "reshapes records a build made",
    "unchecked": "reads a contract already loaded and checked",
    "session_records": "turns an answer into records",
    "lineage_records": "turns an answer into records",
    "tree_records": "turns an answer into records",
    "usage_records": "turns an answer into records",
    "file_records": "turns an answer into records",
    "to_networkx": "copies tables already checked into a networkx graph",
    "from_networkx": "reads a networkx graph; one lacking graphkit's `type` attributes "
                     "is a KeyError today, not a one-line error",
    "records_table": "a value of the wrong type is pyarrow's ArrowInvalid (in its Raises)",
}


def test_every_public_function_is_either_made_to_fail_or_says_why_not() -> None:
    assert set(MISTAKES) | set(NO_USER_ERROR) == set(_functions())
    assert not set(MISTAKES) & set(NO_USER_ERROR)


@pytest.mark.parametrize("name", sorted(NO_USER_ERROR))
def test_a_function_said_not_to_raise_raises_no_graphkit_error_itself(name: str) -> None:
    """Its own code raises no GraphkitError (what it calls is covered by the reason)."""
    fn = inspect.unwrap(getattr(graphkit, name))
    raised = re.findall(r"raise (\w+)\(", inspect.getsource(fn))
    ours = [r for r in raised if isinstance(fn.__globals__.get(r), type)
            and issubclass(fn.__globals__[r], graphkit.GraphkitError)]
    assert ours == [], f"{name} raises {ours}: add its mistake to MISTAKES and a Raises section"


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_a_users_mistake_raises_what_the_docstring_says(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(graphkit.GraphkitError) as caught:
        MISTAKES[name](tmp_path, monkeypatch)
    raises = sections(inspect.getdoc(getattr(graphkit, name)) or "").get("Raises", "")
    said = {c.__name__ for c in type(caught.value).__mro__
            if issubclass(c, graphkit.GraphkitError)}
    assert said & set(re.findall(r"\w+", raises)), (
        f"{name} raised {type(caught.value).__name__}; its Raises section names none of "
        f"{sorted(said)}")
    assert "\n" not in str(caught.value)  # one line, as the command line prints it


# --- str or Path -------------------------------------------------------------------------

# Public parameters typed Path alone, and why.
PATH_ONLY = {
    ("BuildOptions", "cache_dir"): "a frozen dataclass field: a str is made a Path when the "
                                   "options are made (tested below), so readers get a Path",
    ("BuildOptions", "rejects_path"): "as cache_dir",
    ("SiteReport", "out"): "a report graphkit makes, not an input",
}


def test_public_paths_are_typed_str_or_path() -> None:
    bare = set()
    for name, obj in _public().items():
        if not callable(obj):
            continue
        fn = obj.__init__ if inspect.isclass(obj) else inspect.unwrap(obj)
        for p in inspect.signature(fn).parameters.values():
            annotation = str(p.annotation)
            if re.search(r"\bPath\b", annotation) and not re.search(r"\bstr\b", annotation):
                bare.add((name, p.name))
    assert bare == set(PATH_ONLY)


def test_str_paths_work_where_path_is_taken(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The docs helper's crash: build_snapshot with a str snapshot folder, and the rest."""
    monkeypatch.chdir(tmp_path)  # relative str paths, as a notebook user types them
    if True:
        (tmp_path / "samples").symlink_to(REPO / "samples")
        result, summary = graphkit.build_snapshot("samples/rows", "out/graph",
                                                  cache_dir="out/cache",
                                                  rejects_path="out/rejects.jsonl")
        assert summary["snapshot"] == "out/graph" and Path("out/graph/manifest.json").exists()
        assert graphkit.read_manifest("out/graph")["counts"] == graphkit.read_manifest(
            Path("out/graph"))["counts"]
        graph = graphkit.read_snapshot("out/graph")
        assert graph.node_counts() == result.graph.node_counts()
        graphkit.write_snapshot(graph, "out/copy")
        assert graphkit.diff_snapshots("out/graph", "out/copy").is_empty()
        reader = graphkit.SnapshotReader("out/graph")
        assert reader.directory == Path("out/graph")
        assert graphkit.export_snapshot("out/graph", "graphml", "out/g.graphml").nodes
        assert graphkit.write_site(reader, "out/site").sessions == summary["nodes"]["Session"]
        graphkit.write_html("<p>", "out/page.html")
        assert graphkit.write_rows("samples/rows", "out/rows.parquet").rows == \
            summary["rows_read"]
        assert graphkit.load_contract(str(REPO / "contracts" / "ai-gateway-graph.yaml")
                                      ).name == "ai-gateway-graph"
        assert graphkit.load_prices(str(REPO / "graphkit" / "queries" / "prices.json")
                                    ).models
        with graphkit.open_store("out/graph") as store:
            assert graphkit.sessions(store)
