"""Ninth hostile round (tests/HOSTILE.md, "# Ninth round"): the leftovers of round eight
and what the round's driver found. Each test failed before its fix unless it says it
pins what held."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.paths import SAMPLE_ROWS
from tests.helpers.transcripts import (
    assistant,
    codex_message,
    codex_meta,
    text,
    user,
    write_jsonl,
)

# --- 1. transcripts' lone surrogates are counted and named -----------------------------

SESSION = "11111111-0000-4000-8000-000000000001"
THREAD = "22222222-2222-4222-8222-222222222222"


def _transcripts_with_lone_surrogates(root: Path) -> tuple[Path, Path]:
    """A Claude project (lines 2 and 4 hold half a pair; line 3 a whole pair) and a
    Codex rollout (line 2 holds one): three lines changed in all."""
    claude = write_jsonl(root / "projects" / "-w" / f"{SESSION}.jsonl", [
        user("u1", SESSION, "2026-11-20T10:00:00Z", "hello"),
        assistant("a1", SESSION, "2026-11-20T10:00:01Z", [text("cut \ud83d here")], "u1"),
        user("u2", SESSION, "2026-11-20T10:00:02Z", "pair \U0001f600 ok", "a1"),
        user("u3", SESSION, "2026-11-20T10:00:03Z", "again \udc00", "u2"),
    ])
    codex = write_jsonl(root / "codex" / f"rollout-2026-11-20T10-00-00-{THREAD}.jsonl", [
        codex_meta("2026-11-20T10:00:00Z", THREAD),
        codex_message("2026-11-20T10:00:01Z", "user", "x\ud800y"),
    ])
    return claude, codex


def _lone_note(stderr: str) -> str:
    found = [line for line in stderr.splitlines() if "lone surrogate" in line]
    assert len(found) == 1, stderr
    return found[0]


@pytest.mark.parametrize("splice", ["1", "0"])
def test_lone_surrogates_in_transcripts_are_counted_and_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, splice: str) -> None:
    # Was: replaced by U+FFFD without a word (round eight's row files say how many and
    # where). Now counted per line, with the first file:line, in build (spliced and
    # whole, cold and over kept state), check and rows.
    monkeypatch.setenv("GRAPHKIT_SPLICE", splice)
    claude, codex = _transcripts_with_lone_surrogates(tmp_path)
    first = f"the first at {codex}:2"
    snap = tmp_path / "snap"
    proc = graphkit("build", claude.parent.parent, codex.parent, "--snapshot", snap)
    assert proc.returncode == 0, proc.stderr
    note = _lone_note(proc.stderr)
    assert "3 transcript line(s) held an escaped lone surrogate" in note and first in note

    # One more line: the file is parsed again (or its group kept), the others reused.
    with claude.open("a") as f:
        f.write(json.dumps(user("u4", SESSION, "2026-11-20T10:00:04Z", "more", "u3")) + "\n")
    again = graphkit("build", claude.parent.parent, codex.parent, "--snapshot", snap)
    assert again.returncode == 0, again.stderr
    assert _lone_note(again.stderr) == note

    check = graphkit("check", claude.parent.parent, codex.parent, "--json")
    found = [f for f in json.loads(check.stdout) if f["check"] == "lone-surrogate"]
    assert [(f["count"], f["examples"]) for f in found] == [(3, [
        {"file": str(codex), "line": 2}, {"file": str(claude), "line": 2},
        {"file": str(claude), "line": 4}])]

    rows = graphkit("rows", claude.parent.parent, codex.parent, "--out", tmp_path / "r.parquet")
    assert rows.returncode == 0, rows.stderr
    assert first in _lone_note(rows.stderr)


def test_a_loglines_document_names_the_logline_of_its_lone_surrogate(tmp_path: Path) -> None:
    from graphkit.sources.transcripts.claude import parse_claude

    doc = tmp_path / f"{SESSION}.json"
    doc.write_text(json.dumps({"loglines": [
        user("u1", SESSION, "2026-11-20T10:00:00Z", "fine \U0001f600"),
        user("u2", SESSION, "2026-11-20T10:00:01Z", "half \ud800", "u1")]}))
    parse = parse_claude(doc, doc.read_bytes())
    assert parse.facts["lone_surrogate_lines"] == [2]
    assert parse.num_rows == 2


def test_a_transcript_without_lone_surrogates_keeps_its_facts_as_they_were(
        tmp_path: Path) -> None:
    """Pins what held: other files' facts (and so the index) gain no key."""
    from graphkit.sources.transcripts.claude import parse_claude

    claude, _ = _transcripts_with_lone_surrogates(tmp_path)
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(b"\n".join(ln for ln in claude.read_bytes().splitlines()
                                 if b"\\ud" not in ln) + b"\n")
    assert "lone_surrogate_lines" not in parse_claude(plain, plain.read_bytes()).facts
    assert os.path.getsize(plain) > 0


# --- 2. names as long as the file system takes ------------------------------------------

LONG = "n" * 250  # a legal name (255 bytes at most), too long for "." + NAME + ".xxx.tmp…"


def test_a_name_of_250_bytes_is_written_by_every_writer(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # Was: "cannot write: File name too long; free some space…" from every writer (the
    # temporary sibling ".NAME.<random>.tmp" passed 255 bytes), for a name the file
    # system takes. Temporary names now cut a long name and add a digest of it.
    monkeypatch.chdir(tmp_path)
    snap = tmp_path / LONG
    built = graphkit("build", SAMPLE_ROWS, "--snapshot", snap, "--rejects", "r.jsonl",
                     "--cache-dir", "cache")
    assert built.returncode == 0, built.stderr
    assert (snap / "manifest.json").is_file()
    sid = graphkit("sessions", "--snapshot", snap, "--json").stdout.splitlines()[0]
    session = json.loads(sid)["session_id"]
    for args in (["rows", SAMPLE_ROWS, "--out", tmp_path / "o" / LONG],
                 ["view", session, "--snapshot", snap, "--out", tmp_path / "v" / LONG],
                 ["export", snap, "--format", "graphml", tmp_path / "g" / LONG],
                 ["export", snap, "--format", "neo4j-csv", tmp_path / "c" / LONG]):
        proc = graphkit(*args)
        assert proc.returncode == 0, (args[0], proc.stderr)
        out = Path(args[-1])
        assert out.exists() and [p.name for p in out.parent.iterdir()] == [LONG]


def test_a_snapshot_name_too_long_for_its_rejects_file_is_refused_before_the_build(
        tmp_path: Path) -> None:
    # Was: the build ran, then "cannot write the snapshot: File name too long (NAME's
    # temporary folder)"; with that fixed, the rejects file NAME.rejects.jsonl (264
    # bytes) would fail only the day a row is first rejected. Now refused up front.
    proc = graphkit("build", SAMPLE_ROWS, "--snapshot", tmp_path / LONG)
    line = one_line_error(proc, f"{LONG}.rejects.jsonl", "264 bytes", "--rejects")
    assert "choose a shorter --snapshot name" in line
    assert list(tmp_path.iterdir()) == []
    given = graphkit("build", SAMPLE_ROWS, "--snapshot", tmp_path / "s", "--rejects",
                     tmp_path / LONG)
    one_line_error(given, f"{LONG[:-10]}", "skipped-lines file")


@pytest.mark.parametrize("where", ["source", "snapshot", "contract", "out", "rejects",
                                   "prices", "middle"])
def test_a_path_past_what_the_file_system_takes_is_one_line(tmp_path: Path,
                                                              where: str) -> None:
    # Was: OSError "[Errno 36] File name too long" tracebacks (Python 3.11's
    # Path.exists() and is_dir() raise it) from build, rows and the option checks.
    too = str(tmp_path / ("x" * 300))
    args = {"source": ["build", too, "--snapshot", tmp_path / "s"],
            "snapshot": ["build", SAMPLE_ROWS, "--snapshot", too],
            "contract": ["build", SAMPLE_ROWS, "--snapshot", tmp_path / "s", "--contract",
                         too + ".yaml"],
            "out": ["rows", SAMPLE_ROWS, "--out", too],
            "rejects": ["build", SAMPLE_ROWS, "--snapshot", tmp_path / "s", "--rejects", too],
            "prices": ["usage", "--snapshot", tmp_path / "s", "--prices", too],  # held
            "middle": ["build", SAMPLE_ROWS, "--snapshot", too + "/snap"]}[where]
    proc = graphkit(*args)
    one_line_error(proc, "too long")
    assert not (tmp_path / "s").exists()


def test_temporary_folders_of_a_long_snapshot_name_are_known_as_its_own(tmp_path: Path) -> None:
    """The left-over cleaning and the watch find a long name's temporary siblings."""
    from graphkit.cli.watch import own_outputs
    from graphkit.snapshot.swap import leftovers, make_dir

    snap = tmp_path / LONG
    tmp = make_dir(snap, "tmp")
    assert len(tmp.name.encode()) <= 255
    assert [p for p, kind, _ in leftovers(snap)] == [tmp] and tmp.name.startswith(".n")
    assert own_outputs([snap])(str(tmp / "nodes" / "x.parquet"))
    assert not own_outputs([tmp_path / "other"])(str(tmp / "x"))


# --- 3. graphkit's own outputs are not rows ----------------------------------------------


def test_a_snapshot_built_into_its_source_folder_is_not_read_back_as_rows(
        tmp_path: Path) -> None:
    # Was: the next build read the snapshot's tables and its rejects file as row files:
    # exit 2 "graph.rejects.jsonl: required column 'session_id' is missing" (or the
    # tables' rows rejected one by one). Now they are left out, with a note.
    import shutil

    src = tmp_path / "src"
    shutil.copytree(SAMPLE_ROWS, src)
    write_jsonl(src / "bad.jsonl", [{"session_id": None, "message_id": "m-lost"}])
    first = graphkit("build", src, "--snapshot", src / "graph", "--json")
    assert first.returncode == 0, first.stderr
    assert (src / "graph.rejects.jsonl").is_file()
    assert graphkit("export", src / "graph", "--format", "neo4j-csv",
                    src / "csv").returncode == 0
    (src / "bad.jsonl").touch()  # something changed: built again, not kept
    again = graphkit("build", src, "--snapshot", src / "graph", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["rows_read"] == json.loads(first.stdout)["rows_read"]
    assert json.loads(again.stdout)["rows_rejected"] == 1
    assert "3 graphkit output(s) below it not read as rows" in again.stderr


@pytest.mark.parametrize("given", ["graph", "graph/nodes/Session.parquet",
                                   "graph.rejects.jsonl", "csv"])
@pytest.mark.parametrize("command", ["build", "rows", "check"])
def test_a_snapshot_export_or_rejects_file_given_as_a_source_is_one_line(
        tmp_path: Path, given: str, command: str) -> None:
    # Was: `rows` wrote a snapshot's tables as 368 rows of nulls, exit 0; `build` and
    # `check` said "required column 'message_id' is missing". Now one line saying what
    # the path is.
    write_jsonl(tmp_path / "rows" / "bad.jsonl", [{"session_id": None, "message_id": "m"}])
    import shutil

    shutil.copytree(SAMPLE_ROWS, tmp_path / "rows" / "s")
    assert graphkit("build", tmp_path / "rows", "--snapshot", tmp_path / "graph").returncode == 0
    assert graphkit("export", tmp_path / "graph", "--format", "neo4j-csv",
                    tmp_path / "csv").returncode == 0
    extra = {"build": ["--snapshot", tmp_path / "s2"], "rows": ["--out", tmp_path / "r.pq"],
             "check": []}[command]
    proc = graphkit(command, tmp_path / given, *extra)
    one_line_error(proc, "not message rows", "give the sources it was built from")
    assert not (tmp_path / "s2").exists() and not (tmp_path / "r.pq").exists()


# --- 4. neo4j-server's arguments and its end ---------------------------------------------


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_a_port_no_socket_can_have_is_refused_before_java_starts(port: str) -> None:
    # Was: 70000 started the JVM, which failed ("the launcher exited with code 1 … see
    # launcher.out"); -1 served on 7687 while the warning named "127.0.0.1:-1".
    proc = graphkit("neo4j-server", "--port", port)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "is not in the range 0<=x<=65535" in proc.stderr


@pytest.mark.parametrize("under", [False, True])
def test_a_data_folder_that_is_a_file_is_one_line(tmp_path: Path, under: bool) -> None:
    # Was: FileExistsError / NotADirectoryError tracebacks, exit 1.
    (tmp_path / "afile").write_text("x")
    data = tmp_path / "afile" / "db" if under else tmp_path / "afile"
    one_line_error(graphkit("neo4j-server", "--port", "0", "--data", data), str(tmp_path))


def test_sigterm_stops_the_server_and_removes_its_temporary_folder(tmp_path: Path) -> None:
    # Was: SIGTERM ended Python at once: the temporary data folder stayed in /tmp (and
    # once the JVM outlived it). Now it ends as Ctrl-C does: exit 0, nothing left.
    import signal
    import subprocess
    import sys
    import time

    from tests.helpers.paths import REPO

    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "graphkit", "neo4j-server", "--port", "0"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "Neo4j is up: …" once Bolt answers
        assert "Neo4j is up" in line, proc.stderr.read() if proc.stderr else line
        homes = [p for p in tmp_path.iterdir() if p.name.startswith("graphkit-neo4j-")]
        assert len(homes) == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=90) == 0
        deadline = time.monotonic() + 30
        while homes[0].exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not homes[0].exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("name", ["system", "System"])
def test_neo4j_database_system_is_one_line_saying_what_it_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    # Was: Neo4j's own words for every query there, on one long line: "failed:
    # Neo.ClientError.Statement.SemanticError: … Not a recognised system command or
    # procedure. This Cypher command can only be executed in a user database: RETURN 1"
    # (here, with no server, the check comes before any connection).
    assert graphkit("build", SAMPLE_ROWS, "--snapshot", tmp_path / "snap").returncode == 0
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:1")
    monkeypatch.setenv("NEO4J_DATABASE", name)
    for args in (["load", tmp_path / "snap"], ["sessions", "--neo4j"]):
        one_line_error(graphkit(*args), "NEO4J_DATABASE 'system' is Neo4j's own system "
                                        "database", "'neo4j'")
