"""Hostile inputs, fifth round (the table is tests/HOSTILE.md, "Fifth round"):
snapshots changed by hand, through the real command line. Each ends in exit 0, or
exit 2 and one line naming the file: no traceback."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers.cli import built_samples, graphkit, one_line_error
from tests.helpers.paths import CACHE, REPO

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
    # Was (before this round), for a table of another shape with its sha256 put in
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


CODEX_THREAD = "019b2c3d-4e5f-7a6b-8c9d-0e1f2a3b4c01"


@pytest.mark.parametrize("meta", [{"forked_from_id": {"id": "x"}},
                                  {"parent_thread_id": ["x"]},
                                  {"source": {"subagent": {"thread_spawn": {
                                      "parent_thread_id": {"id": "x"}, "depth": 1}}}}],
                         ids=["forked-from-object", "parent-list", "spawn-parent-object"])
def test_a_codex_rollout_naming_its_origin_with_no_text_builds(
        tmp_path: Path, meta: dict[str, object]) -> None:
    # Was: TypeError "unhashable type" tracebacks from `build` and `rows`: the ids a
    # rollout's session_meta gives for its fork origin and parent thread were used as
    # dictionary keys whatever their type. Only text is an id now.
    stamp = "2026-02-10T09:00:00.100Z"
    lines = [{"timestamp": stamp, "type": "session_meta",
              "payload": {"id": CODEX_THREAD, "timestamp": stamp, "cwd": "/w", **meta}},
             {"timestamp": stamp, "type": "response_item",
              "payload": {"type": "message", "role": "user",
                          "content": [{"type": "input_text", "text": "hi"}]}}]
    day = tmp_path / "sessions" / "2026" / "02" / "10"
    day.mkdir(parents=True)
    (day / f"rollout-2026-02-10T09-00-00-{CODEX_THREAD}.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines))
    proc = graphkit("build", tmp_path / "sessions", "--snapshot", tmp_path / "snap", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["nodes"]["Thread"] == 1
    rows = graphkit("rows", tmp_path / "sessions", "--out", tmp_path / "rows.parquet")
    assert rows.returncode == 0, rows.stderr




@pytest.mark.parametrize("column,values", [
    ("session_id", lambda n: pa.array(range(n), pa.int64())),
    ("message_created_at", lambda n: pa.array(["x"] * n)),
    ("session_id", lambda n: pa.array([{"a": "x"}] * n)),
], ids=["session-int", "time-text", "session-struct"])
def test_a_cache_data_file_whose_schema_drifted_is_one_line_naming_it(
        tmp_path: Path, column: str, values: Callable[[int], pa.Array]) -> None:
    # Was: int session ids cast to text without a word (sessions "0", "1", "2"… made up
    # from row numbers, exit 0); text where times belong an ArrowInvalid traceback; a
    # struct an ArrowNotImplementedError traceback.
    cache = tmp_path / "cache"
    shutil.copytree(CACHE, cache)
    data = sorted(cache.glob("datasets/ai_gateway_messages/source=claude/table/data/*.parquet"))[0]
    t = pq.read_table(data)
    pq.write_table(t.set_column(t.schema.get_field_index(column), column,
                                values(t.num_rows)), data)
    proc = graphkit("build", cache, "--snapshot", tmp_path / "snap")
    one_line_error(proc, str(data), repr(column))


_CONTRACT = """contract: t
version: 1
input:
  session_id: {type: string, required: true}
  model: {type: string}
nodes:
  - type: Session
    key: [session_id]
    properties: {SESSION_PROPS}
  - type: Model
    key: [model]
    properties: {MODEL_PROPS}
edges:
  - type: USED
    from: {type: Session, key: [session_id]}
    to: {type: Model, key: [model]}
    properties: {EDGE_PROPS}
"""


@pytest.mark.parametrize("part,name", [("SESSION", "id"), ("MODEL", "model"),
                                       ("EDGE", "source"), ("EDGE", "target")])
def test_a_property_named_like_a_tables_own_column_is_refused(
        tmp_path: Path, part: str, name: str) -> None:
    # Was: a node property `id` or one named like the node's key column: a build
    # traceback (ArrowInvalid / 'Field exists 2 times'); an edge property `source` or
    # `target`: a snapshot written with two columns of that name, which no reader opens.
    text = _CONTRACT
    for p in ("SESSION", "MODEL", "EDGE"):
        text = text.replace(f"{p}_PROPS", f"{name}: {{first: model}}" if p == part else "")
    path = tmp_path / "c.yaml"
    path.write_text(text)
    proc = graphkit("build", REPO / "samples" / "rows", "--contract", path,
                    "--snapshot", tmp_path / "snap")
    line = one_line_error(proc, f"{path}:", f"{name!r} is already a column")
    assert not (tmp_path / "snap").exists(), line


@pytest.mark.parametrize("op", ["sum", "first", "min", "count_distinct"])
def test_an_aggregation_of_the_rows_star_other_than_count_is_refused(
        tmp_path: Path, op: str) -> None:
    # Was: a KeyError traceback from the projection ('Field "*" does not exist').
    from graphkit.contract.loader import load_contract
    from graphkit.core.errors import ContractError

    path = tmp_path / "c.yaml"
    path.write_text(_CONTRACT.replace("SESSION_PROPS", f'p: {{{op}: "*"}}')
                    .replace("MODEL_PROPS", "").replace("EDGE_PROPS", ""))
    with pytest.raises(ContractError, match=rf'{op} needs a column; "\*" \(the rows\) only'):
        load_contract(str(path))
