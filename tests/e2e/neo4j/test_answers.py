"""`usage`, `files` and `lineage` checked against answers
worked out by hand on crafted rows, through a snapshot, the NetworkX store and a real
Neo4j server, in the table, --json and --csv forms. Each test here failed before its fix."""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphkit.builds.run import build
from graphkit.core.graph import GraphTables
from graphkit.enrich.base import LineageReader
from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
from graphkit.enrich.networkx_store import NetworkXStore
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.queries.files import touches
from graphkit.queries.lineage import lineage
from graphkit.snapshot import write_snapshot
from tests.helpers.cli import graphkit
from tests.helpers.neo4j_server import neo4j_env, wipe
from tests.helpers.paths import CAFE_NFC, CAFE_NFD
from tests.helpers.rows import row, spawned, table


@pytest.fixture
def neo(neo4j_config: Neo4jConfig) -> Iterator[Neo4jStore]:
    """A real Neo4j store on an empty database (everything but the test marker deleted)."""
    with Neo4jStore(neo4j_config, batch_size=1000) as s:
        wipe(s)
        yield s


def _three(rows: list[dict[str, Any]], tmp: Path,
           neo: Neo4jStore) -> tuple[GraphTables, list[LineageReader], Path]:
    """The graph of ``rows``, the three stores holding it, and its snapshot folder."""
    graph = build(table(rows)).graph
    nx = NetworkXStore()
    nx.load(graph)
    write_snapshot(graph, tmp / "snap")
    neo.load(graph, if_exists="replace")
    return graph, [nx, SnapshotReader(tmp / "snap"), neo], tmp / "snap"


def _outputs(config: Neo4jConfig, snap: Path, args: list[str]) -> list[str]:
    """``graphkit ARGS`` over the snapshot and over Neo4j (each must succeed)."""
    out = []
    for where in (["--snapshot", str(snap)], ["--neo4j"]):
        got = graphkit(*args, *where, env=neo4j_env(config))
        assert got.returncode == 0, got.output
        out.append(got.output)
    return out


# --- lineage: steps and levels of branching answers -------------------------------

def _continuing_rows() -> list[dict[str, Any]]:
    """Session J continues A (resume) and B (fork) directly; B itself resumes A. In
    session A the main loop spawns subagents X and Y (siblings), and X spawns Z."""
    def cont(sid: str, origin: str, how: str, mid: str) -> dict[str, Any]:
        return row(sid, message_id=mid, attributes=json.dumps(
            {"continues": {"session_id": origin, "how": how}}))
    return [
        row("A", message_id="a1", part_type="tool_call", tool_name="Task", tool_call_id="tX"),
        row("A", message_id="a2", part_type="tool_call", tool_name="Task", tool_call_id="tY"),
        row("A", agent_id="X", message_id="x1", part_type="tool_call", tool_name="Task",
            tool_call_id="tZ", attributes=spawned("tX")),
        row("A", agent_id="Y", message_id="y1", attributes=spawned("tY")),
        row("A", agent_id="Z", message_id="z1", attributes=spawned("tZ")),
        cont("B", "A", "resume", "b1"),
        cont("J", "A", "resume", "j1"),
        cont("J", "B", "fork", "j2"),
    ]


def test_lineage_csv_step_is_how_far_and_siblings_share_one(
        neo: Neo4jStore, neo4j_config: Neo4jConfig, tmp_path: Path) -> None:
    # Before: `step` was the row's place in its list ("step from 1 nearest" said the
    # help): J's two direct origins were steps 1 and 2, A's sibling subagents X and Y
    # steps 1 and 2 and the grandchild Z step 3.
    _, stores, snap = _three(_continuing_rows(), tmp_path, neo)
    want_json = {"id": "J", "session_id": "J", "ancestors": [{"type": "Session", "id": "J"}],
                 "descendants": [], "continues": [
                     {"type": "Session", "id": "A", "how": "resume"},
                     {"type": "Session", "id": "B", "how": "fork"}]}
    for reader in stores:
        assert lineage(reader, "J").to_json() == want_json
        assert [r.id for r in lineage(reader, "A").descendants] == ["X", "Y", "Z"]
        assert lineage(reader, "A").descendant_depths == [1, 1, 2]
    for out in _outputs(neo4j_config, snap, ["lineage", "J", "A", "--csv"]):
        assert list(csv.reader(io.StringIO(out))) == [
            ["id", "session_id", "relation", "step", "type", "node"],
            ["J", "J", "ancestor", "1", "Session", "J"],
            ["J", "J", "continues", "1", "Session", "A"],
            ["J", "J", "continues", "1", "Session", "B"],
            ["A", "A", "ancestor", "1", "Session", "A"],
            ["A", "A", "descendant", "1", "Thread", "X"],
            ["A", "A", "descendant", "1", "Thread", "Y"],
            ["A", "A", "descendant", "2", "Thread", "Z"],
        ]


def test_lineage_text_puts_an_arrow_only_between_levels(
        neo: Neo4jStore, neo4j_config: Neo4jConfig, tmp_path: Path) -> None:
    # Before: "continues:   A (resume) → B (fork)", read as J continuing A, which
    # continues B; J continues both, and B continues A.
    rows = [*_continuing_rows(), row("K", message_id="k1", attributes=json.dumps(
        {"continues": {"session_id": "J", "how": "compaction"}}))]
    _, _, snap = _three(rows, tmp_path, neo)
    for out in _outputs(neo4j_config, snap, ["lineage", "J", "K"]):
        assert out.splitlines() == [
            "J  (session J)", "  ancestors:   Session J", "  descendants: (none)",
            "  continues:   A (resume), B (fork)",
            "K  (session K)", "  ancestors:   Session K", "  descendants: (none)",
            "  continues:   J (compaction) → A (resume), B (fork)",
        ]


def test_tree_says_how_far_each_continued_session_is(
        neo: Neo4jStore, neo4j_config: Neo4jConfig, tmp_path: Path) -> None:
    # Before: one line per session, "continues A (resume)" of K, which compacted J; J
    # resumed A. Now a line per direction, a level at a time.
    rows = [*_continuing_rows(), row("K", message_id="k1", attributes=json.dumps(
        {"continues": {"session_id": "J", "how": "compaction"}}))]
    _, _, snap = _three(rows, tmp_path, neo)
    for out in _outputs(neo4j_config, snap, ["tree", "K"]):
        assert out.splitlines()[2:] == ["  continues J (compaction) → A (resume), B (fork)"]
    for out in _outputs(neo4j_config, snap, ["tree", "B"]):
        assert out.splitlines()[2:] == ["  continues A (resume)",
                                        "  continued by J (fork) → K (compaction)"]
    for out in _outputs(neo4j_config, snap, ["tree", "A"]):
        assert out.splitlines()[-1] == "  continued by B (resume), J (resume) → K (compaction)"


# --- files: one file, one spelling ----------------------------------------------



def _call(tool: str, args: dict[str, Any] | str, cwd: str = "/w") -> dict[str, Any]:
    return row("sf", part_type="tool_call", tool_name=tool, cwd=cwd,
               tool_args=args if isinstance(args, str) else json.dumps(args))


def _spelling_rows() -> list[dict[str, Any]]:
    return [
        _call("Read", {"file_path": "a.py"}),
        _call("Write", {"file_path": "//w/a.py", "content": "x"}),   # POSIX: one slash
        _call("Read", {"file_path": CAFE_NFC}),
        _call("Edit", {"file_path": CAFE_NFD, "old_string": "x"}),         # macOS's spelling
        _call("Read", {"file_path": "C:\\W\\b.py"}, cwd="C:\\W"),
        _call("Read", {"file_path": "c:\\W\\b.py"}, cwd="C:\\W"),    # the same drive
        _call("apply_patch", "*** Begin Patch\n*** Add File: " + CAFE_NFD[3:] + "x\n+1\n"
              "*** End Patch"),                                      # patch: the slow path
        # One patch naming a file twice, relative and absolute: one call, one write.
        _call("apply_patch", {"input": "*** Begin Patch\n*** Update File: dup.py\n@@\n"
                                       "*** Update File: /w/dup.py\n@@\n*** End Patch"}),
    ]


SPELLED = [  # (path, reads, writes), by hand
    ("/w/a.py", 1, 1),
    ("/w/café.py", 1, 1),
    ("/w/café.pyx", 0, 1),
    ("/w/dup.py", 0, 1),
    ("C:\\W\\b.py", 2, 0),
]


def test_one_file_spelled_several_ways_is_one_file_in_every_store(
        neo: Neo4jStore, neo4j_config: Neo4jConfig, tmp_path: Path) -> None:
    # Before: `//w/a.py` and `/w/a.py`, NFC and NFD `café.py`, `c:\W` and `C:\W` were
    # two files each, and a patch naming dup.py twice wrote it twice.
    want = [unicodedata.normalize("NFC", p) for p, _, _ in SPELLED]
    _, stores, snap = _three(_spelling_rows(), tmp_path, neo)
    for reader in stores:
        assert [(f.path, f.reads, f.writes) for f in touches(reader)] == [
            (w, r, wr) for w, (_, r, wr) in zip(want, SPELLED, strict=True)]
    for out in _outputs(neo4j_config, snap, ["files", "--json"]):
        assert [(d["path"], d["reads"], d["writes"]) for d in map(
            json.loads, out.splitlines())] == [
            (w, r, wr) for w, (_, r, wr) in zip(want, SPELLED, strict=True)]
    for out in _outputs(neo4j_config, snap, ["files", "--csv"]):
        got = list(csv.DictReader(io.StringIO(out)))
        assert [(d["path"], d["reads"], d["writes"]) for d in got] == [
            (w, str(r), str(wr)) for w, (_, r, wr) in zip(want, SPELLED, strict=True)]
    for out in _outputs(neo4j_config, snap, ["files"]):
        assert [line.split("\t")[2:5] for line in out.splitlines()[1:]] == [
            [w, str(r), str(wr)] for w, (_, r, wr) in zip(want, SPELLED, strict=True)]


@pytest.mark.parametrize(("pattern", "found"), [
    ("./a.py", ["/w/a.py"]),                # a relative spelling
    ("/w//a.py", ["/w/a.py"]),
    ("src/../a.py", []),                    # `..` is no part of a path ending
    (CAFE_NFD[3:], [CAFE_NFC]),                       # typed NFD, stored NFC
    ("W/b.py", ["C:\\W\\b.py"]),            # a Windows path with the other slash
    ("C:/W/b.py", ["C:\\W\\b.py"]),
    ("*/W/*.py", ["C:\\W\\b.py"]),
])
def test_path_patterns_are_spelled_as_the_build_spells_paths(
        pattern: str, found: list[str], neo: Neo4jStore, neo4j_config: Neo4jConfig,
        tmp_path: Path) -> None:
    # Before: `--path ./a.py`, `/w//a.py`, an NFD name and `W/b.py` (for C:\W\b.py) found
    # nothing.
    _, stores, snap = _three(_spelling_rows(), tmp_path, neo)
    for reader in stores:
        assert [f.path for f in touches(reader, pattern=pattern)] == found
    for out in _outputs(neo4j_config, snap, ["files", "--path", pattern, "--json"]):
        assert [json.loads(line)["path"] for line in out.splitlines()] == found


def test_the_terminal_table_never_cuts_a_count(
        neo: Neo4jStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # Before, on an 80-column terminal: "12,345,…" in every column of the session and
    # its total, and the thread column squeezed to nothing (rich fits a table to the
    # terminal by cutting no_wrap cells). A session of 12 billion cache reads is large,
    # not absurd.
    from graphkit.cli.usage import print_groups, print_threads
    from graphkit.queries.prices import load_prices
    from graphkit.queries.usage_report import usage as usage_report

    def usage(i: int, o: int, cc: int, cr: int, **claude: str) -> str:
        return json.dumps({"usage": {"input_tokens": i, "output_tokens": o,
                                     "cache_creation_input_tokens": cc,
                                     "cache_read_input_tokens": cr},
                           **({"claude": claude} if claude else {})})
    sid = "5b0e7a52-1c7d-4c55-9a43-0f4a0c2d7a01"
    rows = [row(sid, message_id="m1", model="claude-sonnet-4-5",
                attributes=usage(12_345_678, 234_567_890, 3_456_789_012, 12_345_678_901)),
            row(sid, message_id="m2", part_type="tool_call", tool_name="Task", tool_call_id="t"),
            row(sid, agent_id="a1b2c3d4e5f6a7b8", message_id="a1", model="claude-haiku-4-5",
                attributes=usage(2_345, 34_567, 456_789, 12_345_678,
                                 spawned_by_tool_use_id="t", agent_type="general-purpose"))]
    _, stores, _ = _three(rows, tmp_path, neo)
    monkeypatch.setenv("COLUMNS", "80")
    prices = load_prices()
    want = ["12,345,678", "234,567,890", "3,456,789,012", "12,345,678,901",
            "16,062,220,860",                      # the main thread's subtree
            "2,345", "34,567", "456,789", "12,345,678", "12,839,379",  # the subagent
            "12,348,023", "234,602,457", "3,457,245,801", "12,358,024,579"]  # the total
    for reader in stores:
        print_threads(usage_report(reader, [sid], prices=prices))
        out = capsys.readouterr().out
        assert "…" not in out and "thread" in out and "(main)" in out
        for n in want:
            assert f" {n} " in out, n
        print_groups(usage_report(reader, [sid], by="model", prices=prices))
        out = capsys.readouterr().out
        assert "…" not in out and "model" in out
        for n in ("12,345,678", "234,567,890", "3,456,789,012", "12,345,678,901", "2,345",
                  "34,567", "456,789", "12,345,678"):
            assert f" {n} " in out, n
