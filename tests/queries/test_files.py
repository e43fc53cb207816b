"""Files touched: which tool calls name which files, File nodes and TOUCHED edges,
``graphkit files`` and ``--path``; tool arguments never leave the build."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphkit.builds.run import build
from graphkit.enrich.networkx_store import NetworkXStore
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.queries.files import matches, touches
from graphkit.snapshot import write_snapshot
from graphkit.sources.touched import normalise, touched, with_touched_files
from tests.helpers.cli import graphkit
from tests.helpers.generated_transcripts import generate as generate_transcripts
from tests.helpers.paths import CACHE, CAFE_NFC, CAFE_NFD, FIXTURES
from tests.helpers.rows import row, table
from tests.helpers.usage_rows import generate


@pytest.mark.parametrize(("tool", "args", "cwd", "expected"), [
    ("Read", {"file_path": "src/a.py"}, "/w", [("read", "/w/src/a.py")]),
    ("Edit", {"file_path": "/abs/b.py", "old_string": "x"}, "/w", [("write", "/abs/b.py")]),
    ("Write", {"file_path": "./docs/../README.md", "content": "…"}, "/w",
     [("write", "/w/README.md")]),
    ("MultiEdit", {"file_path": "m.ts", "edits": []}, "/w", [("write", "/w/m.ts")]),
    ("NotebookEdit", {"notebook_path": "/n/a.ipynb", "new_source": "x"}, None,
     [("write", "/n/a.ipynb")]),
    ("NotebookRead", {"notebook_path": "a.ipynb"}, "/w", [("read", "/w/a.ipynb")]),
    ("Grep", {"pattern": "todo", "path": "src"}, "/w", []),  # a folder searched
    ("Grep", {"pattern": "todo", "path": "src/app.py"}, "/w", [("read", "/w/src/app.py")]),
    ("Glob", {"pattern": "**/*.py"}, "/w", []),
    ("Glob", {"pattern": "setup.cfg", "path": "/w/pkg"}, "/w", [("read", "/w/pkg/setup.cfg")]),
    ("Bash", {"command": "cat a.py"}, "/w", []),
    ("Task", {"prompt": "read src/a.py"}, "/w", []),
    ("apply_patch", {"input": "*** Begin Patch\n*** Add File: new.py\n+x\n*** Update File: "
                              "src/old.py\n*** Move to: src/moved.py\n@@\n-a\n+b\n*** Delete "
                              "File: gone.txt\n*** End Patch"}, "/w",
     [("write", "/w/new.py"), ("write", "/w/src/old.py"), ("write", "/w/src/moved.py"),
      ("write", "/w/gone.txt")]),
    ("shell", {"command": ["apply_patch", "*** Begin Patch\n*** Update File: x.rs\n*** End "
                                          "Patch"]}, "/w", [("write", "/w/x.rs")]),
    ("shell", {"command": ["bash", "-lc", "apply_patch <<'EOF'\n*** Begin Patch\n*** Add "
                                          "File: y.go\n+x\n*** End Patch\nEOF"]}, "/w",
     [("write", "/w/y.go")]),
    ("shell", {"command": ["bash", "-lc", "rg -n foo src"]}, "/w", []),
    ("Edit", {"file_path": "src\\main.rs"}, "C:\\work\\app", [("write",
                                                               "C:\\work\\app\\src\\main.rs")]),
    ("Read", {"file_path": "rel.py"}, None, [("read", "rel.py")]),
])
def test_which_calls_touch_which_files(tool: str, args: dict[str, object], cwd: str | None,
                                       expected: list[tuple[str, str]]) -> None:
    assert touched(tool, json.dumps(args), cwd) == expected


def test_a_codex_custom_tool_patch_is_plain_text() -> None:
    patch = "*** Begin Patch\n*** Add File: gamma.txt\n+synthetic\n*** End Patch"
    assert touched("apply_patch", patch, "/repo") == [("write", "/repo/gamma.txt")]


def test_normalise_keeps_windows_rules() -> None:
    assert normalise("C:\\a\\..\\b.txt", None) == "C:\\b.txt"
    assert normalise("../x.py", "/home/dev/app") == "/home/dev/x.py"


def test_tool_args_are_read_for_paths_and_then_dropped() -> None:
    t = table([row("s", part_type="tool_call", tool_name="Write", cwd="/w",
                   tool_args=json.dumps({"file_path": "a.py", "content": "SECRET"})),
               row("s", part_type="tool_result", tool_name="Write", cwd="/w",
                   tool_args=json.dumps({"file_path": "a.py"}))])
    out = with_touched_files(t, keep_args=False)
    assert "tool_args" not in out.column_names
    assert [json.loads(v) if v else v for v in out.column("touched_files").to_pylist()] == [
        [{"path": "/w/a.py", "reads": 0, "writes": 1}], None]  # the result is no touch


@pytest.mark.slow
def test_generated_files_are_exact_on_both_stores(tmp_path: Path) -> None:
    rows, truth = generate()
    graph = build(table(rows)).graph
    nx = NetworkXStore()
    nx.load(graph)
    write_snapshot(graph, tmp_path / "snap")
    expected = sorted(
        (t.session_id, tid, path, rw[0], rw[1])
        for tid, t in truth.threads.items() for path, rw in t.files.items())
    assert expected
    for store in (nx, SnapshotReader(tmp_path / "snap")):
        got = [(f.session_id, f.thread, f.path, f.reads, f.writes) for f in touches(store)]
        assert got == expected
        sid = expected[0][0]
        assert [g for g in got if g[0] == sid] == [
            (f.session_id, f.thread, f.path, f.reads, f.writes) for f in touches(store, [sid])]
    # File nodes add up every thread's touches of them.
    files = {r["file_path"]: (r["reads"], r["writes"]) for r in graph.nodes["File"].table
             .select(["file_path", "reads", "writes"]).to_pylist()}
    for path, (reads, writes) in files.items():
        assert reads == sum(e[3] for e in expected if e[2] == path)
        assert writes == sum(e[4] for e in expected if e[2] == path)
    # Only paths went in: no tool argument text in any snapshot file.
    for f in (tmp_path / "snap").rglob("*.parquet"):
        assert "SECRET FILE BODY" not in pq.read_table(f).to_pandas().to_string()


def test_path_pattern_answers_which_agents_changed_a_file(tmp_path: Path) -> None:
    rows, truth = generate()
    write_snapshot(build(table(rows)).graph, tmp_path / "snap")
    r = graphkit("files", "--snapshot", tmp_path / "snap", "--path", "src/util.py", "--json")
    assert r.returncode == 0, r.output
    got = [json.loads(x) for x in r.output.splitlines()]
    assert got and all(list(o) == ["record", "session_id", "thread", "path", "reads",
                                   "writes"] and o["record"] == "file" for o in got)
    writers = {(t.session_id, tid) for tid, t in truth.threads.items()
               if t.files.get("/home/dev/src/app/src/util.py", [0, 0])[1]}
    assert {(o["session_id"], o["thread"]) for o in got if o["writes"]} == writers
    glob = graphkit("files", "--snapshot", tmp_path / "snap", "--path", "*/docs/*.md", "--json")
    assert {json.loads(x)["path"] for x in glob.output.splitlines()} == {
        "/home/dev/src/app/docs/guide.md"}


def test_hypaware_fixture_files(tmp_path: Path) -> None:
    write_snapshot(build(CACHE).graph, tmp_path / "snap")
    r = graphkit("files", "--snapshot", tmp_path / "snap", "--json")
    assert [json.loads(x) for x in r.output.splitlines()] == [{
        "record": "file", "session_id": "019a7b10-2c3d-7e4f-8a9b-0c1d2e3f4a01",
        "thread": "019a7b10-5f6e-7d8c-9b0a-1f2e3d4c5b02",
        "path": "/home/dev/src/webapp/tests/test_export_stream.py", "reads": 0, "writes": 1}]
    # Grep over the folder src named no file.
    piped = graphkit("files", "--snapshot", tmp_path / "snap")
    assert piped.output.splitlines()[0].startswith("session_id\tthread\tpath")
    csv_out = graphkit("files", "--snapshot", tmp_path / "snap", "--csv")
    assert csv_out.output.splitlines() == [
        "session_id,thread,path,reads,writes,first_seen,last_seen",
        "019a7b10-2c3d-7e4f-8a9b-0c1d2e3f4a01,019a7b10-5f6e-7d8c-9b0a-1f2e3d4c5b02,"
        "/home/dev/src/webapp/tests/test_export_stream.py,0,1,2026-11-23T16:00:14+00:00,"
        "2026-11-23T16:00:14+00:00"]


def test_matches() -> None:
    assert matches("/a/src/app.py", "/a/src/app.py")
    assert matches("C:\\w\\src\\app.py", "src\\app.py")
    assert not matches("/a/src/app.py", "app.p")


# --- from transcripts -------------------------------------------------------------------

TRANSCRIPTS = FIXTURES / "transcripts"


def test_transcript_files_are_exact(tmp_path: Path) -> None:
    truth = generate_transcripts(tmp_path)
    store = NetworkXStore()
    store.load(build([tmp_path / "claude", tmp_path / "codex"], fingerprints=False).graph)
    got = [(f.session_id, f.thread, f.path, f.reads, f.writes) for f in touches(store)]
    assert got == sorted((s, t, p, rw[0], rw[1]) for (s, t, p), rw in truth.files.items())


def test_real_transcript_fixtures(tmp_path: Path) -> None:
    # claude-code-transcripts' sample: Write and Edit of one file, Glob and Grep over
    # patterns and folders (no file); claude-code-log's Codex rollout: a custom apply_patch.
    graph = build([TRANSCRIPTS / "claude-code-transcripts" / "sample_session.json",
                   TRANSCRIPTS / "claude-code-log" / "codex" / "sessions" / "2026" / "01"
                   / "02"], fingerprints=False).graph
    store = NetworkXStore()
    store.load(graph)
    got = [(f.session_id, f.thread, f.path, f.reads, f.writes) for f in touches(store)]
    codex = "11111111-1111-4111-8111-111111111111"
    assert got == [
        (codex, codex, "/workspace/synthetic-project/gamma.txt", 0, 1),  # cwd + patch header
        ("sample_session", "sample_session", "/project/math_utils.py", 0, 3),  # Write, 2 Edits
        ("sample_session", "sample_session", "/project/tests/test_math.py", 0, 1)]


@pytest.mark.slow
def test_a_partitioned_build_adds_file_counts_across_partitions(tmp_path: Path) -> None:
    # One file touched by threads of several sessions: its File node's reads and writes
    # are sums over partitions, as the in-memory build counts them.
    from graphkit.builds.partitioned import build_local
    from graphkit.snapshot import read_snapshot
    from tests.helpers.rows import write_parquet

    rows, _ = generate()
    src = write_parquet(rows, tmp_path / "in" / "rows.parquet")
    want = build([src], fingerprints=False).graph.nodes["File"].table
    build_local([src.parent], tmp_path / "p3", partitions=3, fingerprints=False)
    got = read_snapshot(tmp_path / "p3").nodes["File"].table
    cols = ["file_path", "reads", "writes"]
    assert got.select(cols).to_pylist() == want.select(cols).to_pylist()
    assert sum(r["writes"] for r in want.select(cols).to_pylist()) > 0


def test_a_sources_own_nfd_paths_are_found_by_either_form(tmp_path: Path) -> None:
    # A source's own touched_files column is kept as written (here NFD): a pattern
    # typed in either form finds it, as an NFD pattern did before the pattern was made
    # NFC (a guard on the fix above).
    t = table([row("own", message_id="m1")])
    t = t.append_column("touched_files", pa.array(
        [json.dumps([{"path": CAFE_NFD, "reads": 1, "writes": 0}])]))
    graph = build(t).graph
    nx = NetworkXStore()
    nx.load(graph)
    write_snapshot(graph, tmp_path / "snap")
    for reader in (nx, SnapshotReader(tmp_path / "snap")):
        for typed in (CAFE_NFC[3:], CAFE_NFD[3:]):
            assert [(f.path, f.reads) for f in touches(reader, pattern=typed)] == [(CAFE_NFD, 1)]
