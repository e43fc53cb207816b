"""Graph snapshots: a folder of Parquet tables plus ``manifest.json``.

::

    SNAPSHOT/
      manifest.json            graphkit/contract/id-recipe versions, counts, inputs
      nodes/<Type>.parquet     id, key columns, properties
      edges/<TYPE>.parquet     source, target, properties

A snapshot loads back into either store. Writes go to a temporary sibling
folder that is renamed into place, so a reader never sees half a snapshot.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

import graphkit
from graphkit.core.errors import GraphkitError
from graphkit.core.graph import EdgeTable, GraphTables, LineageVocabulary, NodeTable
from graphkit.core.ids import NODE_ID_RECIPE

MANIFEST = "manifest.json"
FORMAT_VERSION = 1
# Rows per Parquet row group of a snapshot table. Fixed (not Parquet's 1 Mi
# default) so a writer that streams a table (graphkit.engine) holds at most
# this many rows of it and still writes the same bytes as a whole-table write.
ROW_GROUP_ROWS = 128 * 1024


class SnapshotError(GraphkitError):
    """A snapshot folder is missing, incomplete or from an incompatible graphkit."""


def write_snapshot(
    graph: GraphTables,
    directory: Path,
    *,
    inputs: Iterable[dict[str, Any]] = (),
    summary: dict[str, Any] | None = None,
    include_content: bool = False,
) -> dict[str, Any]:
    """Write ``graph`` to ``directory`` atomically and return the manifest.

    Properties the contract computes from message content are left out unless
    ``include_content`` is set.
    """
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    content = graph.meta.get("content_properties", {})
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    try:
        (tmp / "nodes").mkdir()
        (tmp / "edges").mkdir()
        nodes_meta = {}
        for ntype, nt in sorted(graph.nodes.items()):
            table = nt.table
            drop = [] if include_content else [c for c in content.get(ntype, [])
                                               if c in table.column_names]
            table = table.drop_columns(drop)
            pq.write_table(table, tmp / "nodes" / f"{ntype}.parquet",
                           row_group_size=ROW_GROUP_ROWS)
            nodes_meta[ntype] = {"file": f"nodes/{ntype}.parquet", "count": table.num_rows,
                                 "key": list(nt.key),
                                 "index": graph.meta.get("indexes", {}).get(ntype, [])}
        edges_meta = {}
        for etype, et in sorted(graph.edges.items()):
            pq.write_table(et.table, tmp / "edges" / f"{etype}.parquet",
                           row_group_size=ROW_GROUP_ROWS)
            edges_meta[etype] = {"file": f"edges/{etype}.parquet", "count": et.table.num_rows,
                                 "source_type": et.source_type, "target_type": et.target_type}
        manifest = {
            "format": FORMAT_VERSION,
            "graphkit_version": graphkit.__version__,
            "contract": {"name": graph.contract_name, "version": graph.contract_version},
            "id_recipe": graph.id_recipe,
            "granularity": graph.granularity,
            "lineage": graph.lineage.to_json() if graph.lineage else None,
            "include_content": include_content,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "counts": {"nodes": graph.node_counts(), "edges": graph.edge_counts()},
            "nodes": nodes_meta,
            "edges": edges_meta,
            "inputs": list(inputs),
            "summary": summary or {},
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n",
                                    encoding="utf-8")
        _swap_into_place(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def _swap_into_place(tmp: Path, directory: Path) -> None:
    if directory.exists():
        if not (directory / MANIFEST).is_file() and any(directory.iterdir()):
            raise SnapshotError("refusing to replace a folder that is not a graphkit snapshot",
                                path=str(directory), hint="choose an empty or new folder")
        old = Path(tempfile.mkdtemp(prefix=f".{directory.name}.old.", dir=directory.parent))
        os.rmdir(old)
        os.rename(directory, old)
        os.rename(tmp, directory)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, directory)


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of the snapshot in ``directory``."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        raise SnapshotError("not a graphkit snapshot (no manifest.json)", path=str(directory),
                            hint="build one with `graphkit build SOURCE --snapshot DIR`")
    try:
        manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SnapshotError(f"unreadable manifest: {exc}", path=str(path)) from None
    if manifest.get("format") != FORMAT_VERSION:
        raise SnapshotError(f"snapshot format {manifest.get('format')!r} is not supported",
                            path=str(path), hint=f"this graphkit reads format {FORMAT_VERSION}")
    return manifest


def manifest_lineage(manifest: dict[str, Any]) -> LineageVocabulary | None:
    """The lineage vocabulary a manifest records (snapshots written before it was
    recorded get the default contract's, if they are of that contract)."""
    if "lineage" not in manifest:
        name = manifest.get("contract", {}).get("name")
        return LineageVocabulary() if name == "ai-gateway-graph" else None
    data = manifest["lineage"]
    return LineageVocabulary.from_json(data) if isinstance(data, dict) else None


def read_snapshot(
    directory: Path,
    *,
    node_types: Iterable[str] | None = None,
    edge_types: Iterable[str] | None = None,
) -> GraphTables:
    """Read a snapshot (or only some of its node and edge types) into tables."""
    directory = Path(directory)
    m = read_manifest(directory)
    if m.get("id_recipe") != NODE_ID_RECIPE:
        raise SnapshotError(
            f"snapshot ids use recipe {m.get('id_recipe')}, this graphkit uses {NODE_ID_RECIPE}",
            path=str(directory), hint="rebuild the snapshot from its sources")
    graph = GraphTables(m["contract"]["name"], int(m["contract"]["version"]),
                        int(m["id_recipe"]), m.get("granularity", "thread"),
                        lineage=manifest_lineage(m))
    graph.meta["indexes"] = {t: n.get("index", []) for t, n in m["nodes"].items()}
    wanted_n = set(node_types) if node_types is not None else set(m["nodes"])
    wanted_e = set(edge_types) if edge_types is not None else set(m["edges"])
    try:
        for ntype, info in m["nodes"].items():
            if ntype in wanted_n:
                graph.nodes[ntype] = NodeTable(ntype, tuple(info["key"]),
                                               pq.read_table(directory / info["file"]))
        for etype, info in m["edges"].items():
            if etype in wanted_e:
                graph.edges[etype] = EdgeTable(etype, info["source_type"], info["target_type"],
                                               pq.read_table(directory / info["file"]))
    except (OSError, KeyError) as exc:
        raise SnapshotError(f"incomplete snapshot: {exc}", path=str(directory),
                            hint="rebuild it; snapshot folders are written whole") from None
    return graph
