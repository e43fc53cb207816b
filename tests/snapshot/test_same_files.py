"""A table marked equal to a file of the previous snapshot (``graph.meta[SAME_FILES]``, set
by the spliced transcript build) is hard-linked into the new snapshot, and only when the
file still has the digest named; otherwise it is written as any table is."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from graphkit.core.graph import EdgeTable, GraphTables, NodeTable
from graphkit.snapshot import read_snapshot, write_snapshot
from graphkit.snapshot.write import SAME_FILES


def _graph(names: list[str]) -> GraphTables:
    g = GraphTables("t", 1, 1, "thread")
    g.nodes = {"N": NodeTable("N", ("k",), pa.table({"id": ["a", "b"], "k": names}))}
    g.edges = {"E": EdgeTable("E", "N", "N", pa.table({"source": ["a"], "target": ["b"]}))}
    return g


def test_a_named_file_is_linked_only_with_its_digest(tmp_path: Path) -> None:
    snap, other = tmp_path / "snap", tmp_path / "other"
    first = write_snapshot(_graph(["x", "y"]), snap)
    write_snapshot(_graph(["p", "q"]), other)  # same table shape, other values
    node = snap / "nodes" / "N.parquet"
    inode = node.stat().st_ino
    g = _graph(["x", "y"])
    g.meta[SAME_FILES] = {"nodes/N.parquet": [str(node), first["nodes"]["N"]["sha256"]],
                          "edges/E.parquet": [str(other / "edges" / "E.parquet"), "0" * 64]}
    second = write_snapshot(g, snap)
    assert node.stat().st_ino == inode  # linked, not written
    assert second["nodes"]["N"] == first["nodes"]["N"]
    assert (snap / "edges" / "E.parquet").stat().st_ino != \
        (other / "edges" / "E.parquet").stat().st_ino  # wrong digest: written
    assert read_snapshot(snap).nodes["N"].table.column("k").to_pylist() == ["x", "y"]
    # A file whose bytes changed since (or that is gone) is written, never linked.
    node.write_bytes((other / "nodes" / "N.parquet").read_bytes())
    g.meta[SAME_FILES] = {"nodes/N.parquet": [str(node), first["nodes"]["N"]["sha256"]],
                          "edges/E.parquet": [str(tmp_path / "gone.parquet"), "0" * 64]}
    write_snapshot(g, snap)
    back = read_snapshot(snap)  # every digest checked
    assert back.nodes["N"].table.column("k").to_pylist() == ["x", "y"]
    assert back.edges["E"].table.num_rows == 1
    manifest = json.loads((snap / "manifest.json").read_text())
    assert manifest["nodes"]["N"]["sha256"] == first["nodes"]["N"]["sha256"]
    assert not list(tmp_path.glob(".snap.graphkit-*"))  # nothing left behind
