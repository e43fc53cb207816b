"""Tenth hostile round (tests/HOSTILE.md, "# Tenth round"): the leftover of round nine
and what the round's driver found. Each test failed before its fix unless it says it
pins what held."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers.cli import built_samples, graphkit, one_line_error
from tests.helpers.paths import SAMPLE_ROWS
from tests.helpers.transcripts import assistant, tool_use, user, write_jsonl

# --- 1. a subagent's sidecar's lone surrogate is counted and named ----------------------

SESSION = "11111111-0000-4000-8000-000000000001"


def _session_with_a_sidecar(root: Path, sidecar: str) -> Path:
    """A Claude project: a session that spawns one subagent, whose ``.meta.json`` sidecar
    is ``sidecar``; returns the sidecar's path."""
    project = root / "projects" / "-w"
    write_jsonl(project / f"{SESSION}.jsonl", [
        user("u1", SESSION, "2026-11-20T10:00:00Z", "hello"),
        assistant("a1", SESSION, "2026-11-20T10:00:01Z",
                  [tool_use("toolu_1", "Task", description="x", prompt="p")], "u1"),
    ])
    line = user("s1", SESSION, "2026-11-20T10:00:02Z", "sub")
    line.update(isSidechain=True, agentId="abc123")
    agents = project / SESSION / "subagents"
    write_jsonl(agents / "agent-abc123.jsonl", [line])
    meta = agents / "agent-abc123.meta.json"
    meta.write_text(sidecar)
    return meta


def _lone_notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "lone surrogate" in line]


@pytest.mark.parametrize("splice", ["1", "0"])
def test_a_sidecars_lone_surrogate_is_counted_and_named_by_its_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, splice: str) -> None:
    # Was: the sidecar's description was made U+FFFD without a word (round nine counted
    # the transcripts' lines only). Now it is a line of the lone-surrogate finding, named
    # FILE:LINE, in build (cold and after an append, whose sidecar comes from the index),
    # check and rows.
    monkeypatch.setenv("GRAPHKIT_SPLICE", splice)
    meta = _session_with_a_sidecar(tmp_path, '{"agentType": "Explore",\n'
                                             ' "description": "pair \\ud83d\\ude00 ok",\n'
                                             ' "toolUseId": "toolu_1", "x": "\\\\ud800",\n'
                                             ' "y": "cut \\ud83d here"}')
    projects = meta.parents[3]
    named = "1 transcript line(s) held an escaped lone surrogate"
    snap = tmp_path / "snap"
    proc = graphkit("build", projects, "--snapshot", snap)
    assert proc.returncode == 0, proc.stderr
    notes = _lone_notes(proc.stderr)
    assert len(notes) == 1 and named in notes[0] and notes[0].endswith(f"{meta}:4"), notes

    with (meta.parents[2] / f"{SESSION}.jsonl").open("a") as f:
        f.write(json.dumps(user("u9", SESSION, "2026-11-20T10:00:09Z", "more", "a1")) + "\n")
    again = graphkit("build", projects, "--snapshot", snap)
    assert again.returncode == 0, again.stderr
    assert _lone_notes(again.stderr) == notes

    check = graphkit("check", projects, "--json")
    found = [f for f in json.loads(check.stdout) if f["check"] == "lone-surrogate"]
    assert [(f["count"], f["examples"]) for f in found] == [
        (1, [{"file": str(meta), "line": 4}])]
    rows = graphkit("rows", projects, "--out", tmp_path / "r.parquet")
    assert rows.returncode == 0 and _lone_notes(rows.stderr) == notes, rows.stderr


def test_a_whole_sidecar_says_nothing(tmp_path: Path) -> None:
    """Pins what held: a whole pair and an escaped backslash before ``ud800`` are no
    repair."""
    meta = _session_with_a_sidecar(
        tmp_path, '{"description": "pair \\ud83d\\ude00", "x": "\\\\ud800"}')
    proc = graphkit("build", meta.parents[3], "--snapshot", tmp_path / "snap")
    assert proc.returncode == 0, proc.stderr
    assert _lone_notes(proc.stderr) == []


# --- 2. row files of one folder whose types drift -----------------------------------------

SAMPLE = SAMPLE_ROWS / "date=2026-11-20" \
    / "part-0.parquet"


def _with(table: pa.Table, column: str, values: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(column),
                            pa.field(column, values.type), values)


def _folder(root: Path, *tables: pa.Table) -> Path:
    root.mkdir(parents=True)
    for i, t in enumerate(tables):
        pq.write_table(t, root / f"part-{i}.parquet")
    return root


def _tables(snap: Path) -> dict[str, pa.Table]:
    return {f"{p.parent.name}/{p.name}": pq.read_table(p)
            for p in sorted(snap.glob("*/*.parquet"))}


def test_a_folder_whose_files_write_times_in_other_units_and_zones_builds(
        tmp_path: Path) -> None:
    # Was: exit 2 "files disagree on column types: … Cannot merge timestamps with
    # differing timezones; give the files separately", naming the folder, while each file
    # built alone (a writer's new version, or another tool, writing ns in Asia/Tokyo or
    # naive seconds). Now each file is made the contract's types on its own: the same
    # graph as the files written alike.
    rows = pq.read_table(SAMPLE)
    half = rows.num_rows // 2
    first, second = rows.slice(0, half), rows.slice(half)
    drifted = _with(second, "message_created_at",
                    second["message_created_at"].cast(pa.timestamp("ns", "Asia/Tokyo")))
    drifted = _with(drifted, "conversation_started_at",
                    drifted["conversation_started_at"].cast(pa.timestamp("s")))
    alike = _folder(tmp_path / "alike", first, second)
    mixed = _folder(tmp_path / "mixed", first, drifted)
    for src in (alike, mixed):
        proc = graphkit("build", src, "--snapshot", tmp_path / f"{src.name}.snap")
        assert proc.returncode == 0, proc.stderr
    want, got = _tables(tmp_path / "alike.snap"), _tables(tmp_path / "mixed.snap")
    assert want.keys() == got.keys() and all(want[k].equals(got[k]) for k in want)
    assert graphkit("check", mixed).returncode == 0


@pytest.mark.parametrize("command", ["build", "check"])
def test_a_folder_file_of_another_kind_is_named_with_its_contract_line(
        tmp_path: Path, command: str) -> None:
    # Was: "SRC: files disagree on column types: Unable to merge: Field cwd has
    # incompatible types: dictionary<…> vs list<element: string>; give the files
    # separately to see which one differs" — the folder, not the file.
    rows = pq.read_table(SAMPLE)
    bad = _with(rows.slice(30), "cwd", pa.array([[v] for v in rows.slice(30)["cwd"]
                                                 .to_pylist()]))
    src = _folder(tmp_path / "src", rows.slice(0, 30), bad)
    args = ["--snapshot", tmp_path / "snap"] if command == "build" else []
    line = one_line_error(graphkit(command, src, *args), f"{src / 'part-1.parquet'}:",
                          "column 'cwd' has type list<element: string>",
                          "ai-gateway-graph.yaml:")
    assert "disagree" not in line


# --- 3. JSON Lines: Arrow's refusals of a column, named by line --------------------------

def _json_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _sample_lines() -> list[dict[str, object]]:
    return [{k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in r.items()}
            for r in pq.read_table(SAMPLE).to_pylist()]


@pytest.mark.parametrize("command", ["build", "rows", "check"])
def test_a_json_lines_column_that_changes_type_is_named_by_its_line(
        tmp_path: Path, command: str) -> None:
    # Was: "cannot read rows: JSON parse error: Column(/message_index) changed from number
    # to string in row 20; check that the file is complete and in a supported format":
    # Arrow's row counts from 0 and skips blank lines (here line 61), and the hint was
    # wrong. Now the line, the column, both kinds and what to write.
    rows = _sample_lines()
    rows[20]["message_index"] = "7"
    path = _json_lines(tmp_path / "src" / "r.jsonl", [json.dumps(r) for r in rows])
    path.write_text(path.read_text().replace("\n", "\n\n\n"))  # blank lines between rows
    out = {"build": ["--snapshot", tmp_path / "snap"],
           "rows": ["--out", tmp_path / "r.parquet"], "check": []}[command]
    line = one_line_error(graphkit(command, path.parent, *out), f"{path}:61:",
                          "column 'message_index' holds text on this line, a number on "
                          "line 1", "as one JSON type")
    assert "supported format" not in line


@pytest.mark.parametrize("nested", [False, True])
def test_a_key_twice_in_one_json_lines_object_is_named_by_its_line(
        tmp_path: Path, nested: bool) -> None:
    # Was: "SRC: cannot read rows: Error creating dataset. Could not read schema from
    # '…/r.jsonl'. Is this a 'json' file?: … Column(/session_id) was specified twice in
    # row 2; check that the file is complete …": the folder, no line, the wrong fix.
    lines = [json.dumps(r) for r in _sample_lines()]
    if nested:
        lines[2] = lines[2].replace('"attributes": null', '"attributes": {"a": 1, "a": 2}')
    else:
        lines[2] = lines[2][:-1] + ', "session_id": "other"}'
    path = _json_lines(tmp_path / "src" / "r.jsonl", lines)
    key = "'a'" if nested else "'session_id'"
    one_line_error(graphkit("build", path.parent, "--snapshot", tmp_path / "snap"),
                   f"{path}:3:", f"key {key} is written twice in one object on this line")


def test_nested_values_changing_type_in_a_folders_second_file_build(tmp_path: Path) -> None:
    # Was: exit 2 "…/b.jsonl: cannot read rows: … Column(/attributes/claude/tool_use_result)
    # changed from string to object in row 1": round six reads such a file line by line,
    # but not when the change sits in the first block of a folder's later file (met
    # while the folder's schemas were unified).
    rows = _sample_lines()
    later = [dict(r) for r in rows[30:]]
    later[0]["attributes"] = {"claude": {"tool_use_result": "text"}}
    later[1]["attributes"] = {"claude": {"tool_use_result": {"a": 1}}}
    src = tmp_path / "src"
    _json_lines(src / "a.jsonl", [json.dumps(r) for r in rows[:30]])
    _json_lines(src / "b.jsonl", [json.dumps(r) for r in later])
    proc = graphkit("build", src, "--snapshot", tmp_path / "snap", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows_read"] == len(rows)


@pytest.mark.parametrize("command", ["build", "rows", "check"])
def test_a_time_that_is_no_time_is_named_by_its_row(tmp_path: Path, command: str) -> None:
    # Was: "FILE: column 'message_created_at' cannot be read as timestamp: Failed to
    # parse string: '2026-W47-5' …": the file and the value, no row.
    rows = _sample_lines()
    rows[40]["message_created_at"] = "2026-W47-5"
    path = _json_lines(tmp_path / "src" / "r.jsonl", [json.dumps(r) for r in rows])
    out = {"build": ["--snapshot", tmp_path / "snap"],
           "rows": ["--out", tmp_path / "r.parquet"], "check": []}[command]
    one_line_error(graphkit(command, path.parent, *out), f"{path} row 41:",
                   "column 'message_created_at' cannot be read as timestamp", "2026-W47-5")


# --- 4. contract types that differ only in case -------------------------------------------

TINY = """\
contract: tiny
version: 3
input:
  session_id: {type: string, required: true}
  tool_name: {type: string}
nodes:
  - type: Session
    key: [session_id]
  - type: Tool
    key: [tool_name]
    where: {not_null: [tool_name]}
edges:
  - type: USED
    from: {type: Session, key: [session_id]}
    to: {type: Tool, key: [tool_name]}
"""


@pytest.mark.parametrize(("twin", "line", "kind"), [
    ("  - type: tool\n    key: [tool_name]\n", 12, "node"),
    ("  - type: used\n    from: {type: Session, key: [session_id]}\n"
     "    to: {type: Tool, key: [tool_name]}\n", 16, "edge"),
])
def test_types_that_differ_only_in_case_are_refused(tmp_path: Path, twin: str, line: int,
                                                    kind: str) -> None:
    # Was: built, writing nodes/Tool.parquet beside nodes/tool.parquet (edges/USED and
    # edges/used): one file where names ignore case (macOS, Windows), so a snapshot or
    # export copied there lost a table without a word.
    from tests.helpers.contracts import refused

    doc = TINY.replace("edges:\n", twin + "edges:\n") if kind == "node" else TINY + twin
    err = refused(tmp_path, doc, line)
    assert f"{kind} types" in str(err) and "differ only in case" in str(err)


def test_a_type_and_an_edge_type_of_one_name_still_build(tmp_path: Path) -> None:
    """Pins what held: a node type and an edge type may share a name (round two), and
    rules of one edge type may repeat: neither is a case twin."""
    from graphkit.builds.run import build
    from tests.helpers.contracts import write_contract
    from tests.helpers.rows import identity_cases, table

    doc = TINY.replace("  - type: USED\n", "  - type: Tool\n") + (
        "  - type: Tool\n    from: {type: Session, key: [session_id]}\n"
        "    to: {type: Tool, key: [tool_name]}\n")
    result = build(table(identity_cases()), contract=str(write_contract(tmp_path, doc)),
                   fingerprints=False)
    assert result.graph.node_counts()["Session"] == 2


# --- 5. a manifest's lineage edited by hand ------------------------------------------------

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


# --- 6. links that loop and FIFOs where files belong ------------------------------------------

@pytest.mark.parametrize("command", ["build", "check", "rows"])
def test_a_source_that_is_a_link_to_itself_is_one_line(tmp_path: Path, command: str) -> None:
    # Was (build): "RuntimeError: Symlink loop from '…/loop'" traceback (Python 3.11's
    # Path.resolve(), in the build's input check); check and rows said "no such file".
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    out = {"build": ["--snapshot", tmp_path / "snap"],
           "rows": ["--out", tmp_path / "r.parquet"], "check": []}[command]
    proc = graphkit(command, loop, *out)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and str(loop) in proc.stderr


def test_a_fifo_among_row_files_is_refused_not_waited_on(tmp_path: Path) -> None:
    # Was: the build waited for a writer forever (Arrow opens a file blocking).
    import os

    src = _folder(tmp_path / "src", pq.read_table(SAMPLE))
    for name in ("pipe.parquet", "pipe.jsonl"):
        os.mkfifo(src / name)
        one_line_error(graphkit("build", src, "--snapshot", tmp_path / "snap"),
                       f"{src / name}: cannot read this file: not a regular file",
                       "only regular files are read")
        (src / name).unlink()


@pytest.mark.parametrize("command", ["build", "check"])
def test_a_fifo_as_the_contract_is_refused_not_waited_on(tmp_path: Path,
                                                         command: str) -> None:
    # Was: `build` waited for a writer forever (the contract's digest, for the kept
    # snapshot, and the loader opened it blocking); "contract file not found" for one
    # that is there.
    import os

    fifo = tmp_path / "c.yaml"
    os.mkfifo(fifo)
    args = ["--snapshot", tmp_path / "snap"] if command == "build" else []
    one_line_error(graphkit(command, SAMPLE.parents[1], "--contract", fifo, *args),
                   f"{fifo}: is no regular file (a pipe or device)")
