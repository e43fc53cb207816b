"""Tables written while the build runs (``graphkit.snapshot.write``) give the snapshot
``write_snapshot`` writes after it: the same files, byte for byte, and the same manifest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import graphkit.projection.project as proj
from graphkit.builds.run import build
from graphkit.builds.snapshot import build_snapshot
from graphkit.core.graph import EdgeTable, GraphTables, NodeTable
from graphkit.snapshot import read_snapshot, write_snapshot
from graphkit.snapshot.write import EarlyTables
from tests.helpers.paths import SAMPLE_ROWS

SAMPLES = SAMPLE_ROWS


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != "manifest.json"}


def _manifest(folder: Path) -> dict[str, Any]:
    m = json.loads((folder / "manifest.json").read_text())
    m.pop("created_at")
    return m


@pytest.mark.parametrize("include_content", [False, True])
@pytest.mark.parametrize("granularity", ["thread", "message"])
def test_tables_written_early_are_the_tables_written_after(
        tmp_path: Path, include_content: bool, granularity: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proj, "_THREADED_ROWS", 0)  # the rules on threads, as in a big build
    taken: list[str] = []
    real_take = EarlyTables.take

    def take(self: EarlyTables, rel: str, table: pa.Table) -> dict[str, Any] | None:
        got = real_take(self, rel, table)
        if got is not None:
            taken.append(rel)
        return got

    monkeypatch.setattr(EarlyTables, "take", take)
    opts = {"granularity": granularity, "include_content": include_content}
    result, _ = build_snapshot(SAMPLES, tmp_path / "early", **opts)
    files = _files(tmp_path / "early")
    assert sorted(taken) == sorted(files)  # every table file was written early
    assert any(f.startswith("edges/") for f in taken)
    # The same graph written after the build, the plain way.
    manifest = json.loads((tmp_path / "early" / "manifest.json").read_text())
    write_snapshot(result.graph, tmp_path / "after", inputs=manifest["inputs"],
                   summary=manifest["summary"], include_content=include_content)
    assert _files(tmp_path / "after") == files
    assert _manifest(tmp_path / "after") == _manifest(tmp_path / "early")
    # No hidden folder left (the build's cache folder stays, as always).
    assert sorted(p.name for p in tmp_path.iterdir()) == [".early.cache", "after", "early"]


def test_a_table_changed_after_its_early_write_is_written_again(tmp_path: Path) -> None:
    g = GraphTables("t", 1, 1, "thread")
    g.meta["content_properties"] = {"N": ["text"]}
    first = pa.table({"id": ["a", "b"], "k": ["x", "y"], "text": ["t1", "t2"]})
    early = EarlyTables(tmp_path / "snap", include_content=False)
    early.add(g, "nodes", "N", first)
    early.add(g, "edges", "Gone", pa.table({"source": ["a"], "target": ["b"]}))
    early.add(g, "nodes", "../x", first)  # no file name: left to write_snapshot
    g.nodes = {"N": NodeTable("N", ("k",), pa.table({"id": ["a"], "k": ["z"], "text": ["t"]}))}
    g.edges = {"E": EdgeTable("E", "N", "N", pa.table({"source": ["a"], "target": ["a"]}))}
    write_snapshot(g, tmp_path / "snap", early=early)
    back = read_snapshot(tmp_path / "snap")
    assert back.nodes["N"].table.to_pylist() == [{"id": "a", "k": "z"}]  # text left out
    assert sorted(_files(tmp_path / "snap")) == ["edges/E.parquet", "nodes/N.parquet"]
    assert not (tmp_path / "x").exists()
    write_snapshot(g, tmp_path / "plain")
    assert _files(tmp_path / "plain") == _files(tmp_path / "snap")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain", "snap"]


def test_a_failed_build_leaves_no_folder_behind(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proj, "_THREADED_ROWS", 0)
    real = proj.project_edges

    def failing(rules: Any, *a: Any, **kw: Any) -> Any:
        if rules[0].type == "USED_MODEL":
            raise RuntimeError("edge rule failed")
        return real(rules, *a, **kw)

    added: list[str] = []
    real_add = EarlyTables.add

    def add(self: EarlyTables, g: GraphTables, kind: str, name: str, t: pa.Table) -> None:
        added.append(name)
        real_add(self, g, kind, name, t)

    monkeypatch.setattr(proj, "project_edges", failing)
    monkeypatch.setattr(EarlyTables, "add", add)
    with pytest.raises(RuntimeError, match="edge rule failed"):
        build_snapshot(SAMPLES, tmp_path / "snap")
    assert "Thread" in added  # written before the edge rule failed
    # All of it went with the failed build: no hidden folder, no snapshot.
    assert list(tmp_path.iterdir()) == []


def test_build_without_a_sink_is_the_build_with_one() -> None:
    seen: list[tuple[str, str]] = []
    plain = build(SAMPLES, fingerprints=False)
    sunk = build(SAMPLES, fingerprints=False,
                 table_sink=lambda g, kind, name, t: seen.append((kind, name)))
    assert sorted(seen) == sorted([("nodes", t) for t in plain.graph.nodes]
                                  + [("edges", t) for t in plain.graph.edges])
    for t, n in plain.graph.nodes.items():
        assert sunk.graph.nodes[t].table.equals(n.table)
    for t, e in plain.graph.edges.items():
        assert sunk.graph.edges[t].table.equals(e.table)
