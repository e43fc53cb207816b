"""Snapshots changed by hand since graphkit wrote them: a table of another shape with
its checksum put right, a manifest entry removed, a lineage edited, a FIFO in a
table's place. Every command reading one says so in one line naming the file."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers.cli import built_samples, graphkit, one_line_error
from tests.helpers.paths import REPO

SESSION = "8299ed6e-811c-4fa7-b124-c205cd625a7f"


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_samples(tmp_path_factory, "good")


def _resigned(snap: Path, part: str, name: str, table: pa.Table) -> None:
    """``table`` written in place of one of ``snap``'s, with the manifest's size,
    sha256 and count put right: damage no checksum sees."""
    path = snap / part / f"{name}.parquet"
    pq.write_table(table, path)
    manifest = json.loads((snap / "manifest.json").read_text())
    entry = manifest[part][name]
    entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    entry["bytes"] = path.stat().st_size
    entry["count"] = manifest["counts"][part][name] = table.num_rows
    (snap / "manifest.json").write_text(json.dumps(manifest))


def _read(snap: Path, part: str, name: str) -> pa.Table:
    return pq.read_table(snap / part / f"{name}.parquet")


def _ids_as_numbers(snap: Path) -> str:
    t = _read(snap, "nodes", "Thread")
    _resigned(snap, "nodes", "Thread", t.set_column(
        0, "id", pa.array(range(t.num_rows), pa.int64())))
    return "nodes/Thread.parquet"


def _no_id(snap: Path) -> str:
    _resigned(snap, "nodes", "Session", _read(snap, "nodes", "Session").drop_columns(["id"]))
    return "nodes/Session.parquet"


def _another_table(snap: Path) -> str:
    _resigned(snap, "nodes", "Thread", _read(snap, "nodes", "Model"))
    return "nodes/Thread.parquet"


def _null_ends(snap: Path) -> str:
    t = _read(snap, "edges", "PARENT_THREAD")
    _resigned(snap, "edges", "PARENT_THREAD",
              t.set_column(1, "target", pa.nulls(t.num_rows, pa.string())))
    return "edges/PARENT_THREAD.parquet"


def _no_threads(snap: Path) -> str:
    _resigned(snap, "nodes", "Thread", _read(snap, "nodes", "Thread").slice(0, 0))
    return "edges/"


def _no_agents(snap: Path) -> str:
    _resigned(snap, "nodes", "Agent", _read(snap, "nodes", "Agent").slice(0, 0))
    return "edges/HAS_AGENT.parquet"


def _entry_removed(snap: Path) -> str:
    manifest = json.loads((snap / "manifest.json").read_text())
    del manifest["nodes"]["Thread"]
    (snap / "manifest.json").write_text(json.dumps(manifest))
    return "manifest.json"


def _lineage_key_renamed(snap: Path) -> str:
    manifest = json.loads((snap / "manifest.json").read_text())
    manifest["lineage"]["thread_key"] = "nokey"
    (snap / "manifest.json").write_text(json.dumps(manifest))
    return ""  # the snapshot folder: the manifest's lineage names the column


DAMAGE: list[Callable[[Path], str]] = [_ids_as_numbers, _no_id, _another_table, _null_ends,
                                       _no_threads, _no_agents, _entry_removed,
                                       _lineage_key_renamed]
# The snapshot reader the queries use (tree, usage) and the whole-graph read (diff, export).
COMMANDS = [["tree", SESSION], ["usage"], ["diff", "{good}"],
            ["export", "--format", "graphml", "{out}/g.graphml"]]


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__)
def test_a_snapshot_changed_by_hand_is_one_line_naming_its_file(
        tmp_path: Path, good: Path, damage: Callable[[Path], str]) -> None:
    # Was, for a table of another shape with its sha256 put in
    # the manifest, or a table's entry removed: KeyError, ArrowNotImplementedError,
    # ArrowTypeError and "None cannot be a node" tracebacks from lineage, tree, usage,
    # view, diff and every export; the checksums only catch damage no one covered up.
    snap = tmp_path / "snap"
    shutil.copytree(good, snap)
    named = damage(snap)
    for command in COMMANDS:
        args = [a.format(out=tmp_path, good=good) for a in command]
        # Every command reads the snapshot as its first argument or with --snapshot.
        if args[0] in ("diff", "export"):
            args.insert(1, str(snap))
        else:
            args += ["--snapshot", str(snap)]
        proc = graphkit(*args)
        if proc.returncode == 0:
            continue  # a command that reads no damaged table
        line = one_line_error(proc, str(snap / named))
        assert "rebuild" in line or "malformed manifest" in line, line


@pytest.mark.slow
@pytest.mark.parametrize("part", ["manifest.json", "nodes/Session.parquet"])
def test_a_fifo_in_a_snapshot_is_refused_not_waited_on(tmp_path: Path, part: str) -> None:
    # Was: `sessions` (every reader) waited forever for a writer on a FIFO put in the
    # manifest's place, as did `build --snapshot` over that folder; a FIFO table too.
    snap = tmp_path / "snap"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", snap).returncode == 0
    (snap / part).unlink()
    os.mkfifo(snap / part)
    one_line_error(graphkit("sessions", "--snapshot", snap), f"{snap / part}")
    one_line_error(graphkit("tree", "8299ed6e-811c-4fa7-b124-c205cd625a7f", "--snapshot",
                            snap), f"{snap / part}")
    if part == "manifest.json":
        one_line_error(graphkit("build", REPO / "samples" / "rows", "--snapshot", snap),
                       "refusing to replace a folder graphkit did not write")


@pytest.mark.parametrize("aliases", [[1], "agent_id", [None]])
@pytest.mark.parametrize("command", ["sessions", "usage", "files", "tree"])
def test_a_manifests_lineage_aliases_of_no_names_is_one_line(
        tmp_path_factory: pytest.TempPathFactory, aliases: object, command: str) -> None:
    # Was: `thread_aliases: [1]` made every command reading the snapshot a TypeError
    # traceback ("expected bytes, int found", from Arrow); a text "agent_id" was read as
    # the aliases a, g, e, n, t, …
    snap = built_samples(tmp_path_factory, "lineage")
    manifest = json.loads((snap / "manifest.json").read_text())
    manifest["lineage"]["thread_aliases"] = aliases
    (snap / "manifest.json").write_text(json.dumps(manifest))
    args = [command, "--snapshot", snap]
    if command == "tree":
        args.insert(1, "6513270e-269e-4d37-b2a7-4de452e6b438")
    one_line_error(graphkit(*args), f"{snap / 'manifest.json'}:",
                   "malformed manifest: lineage.thread_aliases is not a list of names")


def test_a_manifests_lineage_naming_a_type_with_no_text_is_one_line(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    snap = built_samples(tmp_path_factory, "lineage-type")
    manifest = json.loads((snap / "manifest.json").read_text())
    manifest["lineage"]["thread"] = ["Thread"]
    (snap / "manifest.json").write_text(json.dumps(manifest))
    one_line_error(graphkit("sessions", "--snapshot", snap), "lineage.thread is not a name")
