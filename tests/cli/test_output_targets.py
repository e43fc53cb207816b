"""Outputs never eat their inputs (issue 31): an output that resolves to a source, a
transcript or a file of a snapshot is refused naming both; a symbolic link stands for
its target, which is written atomically with the link kept; `rows` writes the format
its suffix names."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from graphkit.cli import cli
from graphkit.snapshot import read_snapshot
from tests.helpers.rows import identity_cases, write_parquet

SHOWCASE = (Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
            / "claude-code-log" / "minimal_showcase")
SESSION = "55550000-0000-4000-8000-000000000001"


def invoke(*args: object) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def refused(r: Result, *names: object) -> None:
    """Exit 2, one line, no traceback, naming every one of ``names``."""
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    line = r.output.strip()
    assert len(line.splitlines()) == 1, line
    for name in names:
        assert str(name) in line, (name, line)


@pytest.fixture
def claude(tmp_path: Path) -> Path:
    folder = tmp_path / "claude"
    shutil.copytree(SHOWCASE, folder)
    return folder


@pytest.fixture
def snap(tmp_path: Path, claude: Path) -> Path:
    out = tmp_path / "snap"
    r = invoke("build", claude, "--snapshot", out)
    assert r.exit_code == 0, r.output
    return out


def test_rows_refuses_to_write_over_its_own_source(tmp_path: Path) -> None:
    src = write_parquet(identity_cases(), tmp_path / "src.parquet")
    before = src.read_bytes()
    r = invoke("rows", src, "--out", src)
    refused(r, src, "source")
    assert src.read_bytes() == before


def test_rows_refuses_a_file_of_a_source_folder(tmp_path: Path) -> None:
    folder = tmp_path / "rows"
    part = write_parquet(identity_cases(), folder / "part-0.parquet")
    before = part.read_bytes()
    refused(invoke("rows", folder, "--out", part), part, folder)
    assert part.read_bytes() == before


def test_rows_refuses_a_transcript_it_reads(claude: Path) -> None:
    transcript = claude / f"{SESSION}.jsonl"
    before = transcript.read_bytes()
    refused(invoke("rows", claude, "--out", transcript), transcript)
    assert transcript.read_bytes() == before


@pytest.mark.slow
def test_view_refuses_a_transcript_it_does_not_even_read(snap: Path, claude: Path) -> None:
    transcript = claude / f"{SESSION}.jsonl"
    before = transcript.read_bytes()
    r = invoke("view", SESSION, "--snapshot", snap, "--out", transcript)
    refused(r, transcript, "Claude Code transcript")
    assert transcript.read_bytes() == before


@pytest.mark.slow
def test_a_codex_rollout_is_refused_too(snap: Path, tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text(json.dumps({"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta",
                                   "payload": {"id": "t1"}}) + "\n")
    r = invoke("export", snap, "--format", "node-link", rollout)
    refused(r, rollout, "Codex transcript")


@pytest.mark.slow
@pytest.mark.parametrize("command", ["view", "export", "rows"])
def test_no_output_may_replace_a_file_of_a_snapshot(snap: Path, claude: Path,
                                                    command: str) -> None:
    table = snap / "nodes" / "Agent.parquet"
    args = {"view": ["view", SESSION, "--snapshot", snap, "--out", table],
            "export": ["export", snap, "--format", "graphml", table],
            "rows": ["rows", claude, "--out", table]}[command]
    refused(invoke(*args), table, snap)
    read_snapshot(snap)  # still whole


@pytest.mark.slow
def test_no_output_goes_into_a_snapshot_folder(snap: Path) -> None:
    # A new file or folder there left the snapshot one graphkit refuses to replace.
    refused(invoke("export", snap, "--format", "neo4j-csv", snap / "csv"), snap)
    refused(invoke("export", snap, "--format", "gexf", snap / "g.gexf"), snap)
    assert sorted(p.name for p in snap.iterdir()) == ["edges", "manifest.json", "nodes"]


@pytest.mark.slow
def test_rejects_may_not_go_into_a_snapshot(tmp_path: Path, snap: Path) -> None:
    src = write_parquet(identity_cases(), tmp_path / "rows.parquet")  # one row is rejected
    r = invoke("build", src, "--snapshot", tmp_path / "other", "--rejects",
               snap / "rejects.jsonl")
    refused(r, snap)
    assert not (tmp_path / "other").exists()


# --- symbolic links: the target is written, the link kept ---------------------------

@pytest.mark.slow
@pytest.mark.parametrize("command", ["view", "export", "rows"])
def test_a_link_output_writes_its_target(tmp_path: Path, snap: Path, claude: Path,
                                         command: str) -> None:
    suffix = {"view": ".html", "export": ".gexf", "rows": ".parquet"}[command]
    real = tmp_path / "elsewhere" / f"real{suffix}"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / f"link{suffix}"
    link.symlink_to(real)
    args = {"view": ["view", SESSION, "--snapshot", snap, "--out", link],
            "export": ["export", snap, "--format", "gexf", link],
            "rows": ["rows", claude, "--out", link]}[command]
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert real.stat().st_size > 100
    assert [p.name for p in real.parent.iterdir()] == [real.name]  # no temporary left


@pytest.mark.slow
def test_a_link_to_a_folder_export_writes_the_folder(tmp_path: Path, snap: Path) -> None:
    real = tmp_path / "real-csv"
    link = tmp_path / "csv"
    link.symlink_to(real, target_is_directory=True)
    r = invoke("export", snap, "--format", "neo4j-csv", link)
    assert r.exit_code == 0, r.output
    assert link.is_symlink() and (real / "graphkit-export.json").is_file()


@pytest.mark.slow
def test_a_link_to_a_transcript_is_refused_naming_both(tmp_path: Path, snap: Path,
                                                       claude: Path) -> None:
    transcript = claude / f"{SESSION}.jsonl"
    before = transcript.read_bytes()
    link = tmp_path / "page.html"
    link.symlink_to(transcript)
    refused(invoke("view", SESSION, "--snapshot", snap, "--out", link), link, transcript)
    assert transcript.read_bytes() == before and link.is_symlink()


@pytest.mark.slow
def test_a_dangling_link_output_creates_its_target(tmp_path: Path, snap: Path) -> None:
    link = tmp_path / "g.graphml"
    link.symlink_to(tmp_path / "made.graphml")
    assert invoke("export", snap, "--format", "graphml", link).exit_code == 0
    assert link.is_symlink() and (tmp_path / "made.graphml").stat().st_size > 100


@pytest.mark.slow
def test_a_looping_link_is_one_line(tmp_path: Path, snap: Path) -> None:
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    a.symlink_to(b)
    b.symlink_to(a)
    refused(invoke("view", SESSION, "--snapshot", snap, "--out", a), a, "loops")


# --- rows: the format the suffix names ----------------------------------------------

@pytest.mark.slow
def test_rows_jsonl_is_json_lines_a_build_reads_back(tmp_path: Path, claude: Path) -> None:
    as_parquet, as_jsonl = tmp_path / "r.parquet", tmp_path / "r.jsonl"
    assert invoke("rows", claude, "--out", as_parquet).exit_code == 0
    assert invoke("rows", claude, "--out", as_jsonl).exit_code == 0
    lines = as_jsonl.read_text().splitlines()
    assert len(lines) == pq.read_metadata(as_parquet).num_rows
    assert json.loads(lines[0])["session_id"]
    for name, src in (("a", as_parquet), ("b", as_jsonl)):
        assert invoke("build", src, "--snapshot", tmp_path / name).exit_code == 0
    one, two = (json.loads((tmp_path / n / "manifest.json").read_text()) for n in "ab")
    for part in ("nodes", "edges"):
        assert {t: e["sha256"] for t, e in one[part].items()} == \
            {t: e["sha256"] for t, e in two[part].items()}


def test_rows_refuses_a_suffix_it_does_not_write(tmp_path: Path, claude: Path) -> None:
    refused(invoke("rows", claude, "--out", tmp_path / "r.csv"), "r.csv", ".parquet",
            ".jsonl")
    assert not (tmp_path / "r.csv").exists()


# --- a folder export replaces only what an export wrote ------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["neo4j-csv", "neo4j-parquet"])
def test_a_users_file_in_an_export_folder_is_not_deleted(tmp_path: Path, snap: Path,
                                                         fmt: str) -> None:
    out = tmp_path / "export"
    assert invoke("export", snap, "--format", fmt, out).exit_code == 0
    assert invoke("export", snap, "--format", fmt, out).exit_code == 0  # its own: replaced
    notes = out / "my-notes.txt"
    notes.write_text("mine")
    refused(invoke("export", snap, "--format", fmt, out), out, "my-notes.txt")
    assert notes.read_text() == "mine"
    notes.unlink()
    (out / "nodes" / "extra.txt").write_text("mine")
    refused(invoke("export", snap, "--format", fmt, out), "nodes/extra.txt")
