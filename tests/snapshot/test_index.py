"""The snapshot index: the latest snapshot per build key, and the commands that
default to the latest snapshot of the user's own history."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from graphkit.snapshot.index import (
    INDEX_FORMAT,
    SnapshotIndex,
    index_key,
    index_path,
    record_snapshot,
    source_set,
)
from tests.helpers.cli import graphkit


@pytest.fixture()
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GRAPHKIT_HOME", str(tmp_path / "gk"))
    return tmp_path / "gk" / "index.json"


def test_the_index_lives_in_the_users_data_folder(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.delenv("GRAPHKIT_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert index_path() == tmp_path / ".local" / "share" / "graphkit" / "index.json"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")
    assert index_path() == tmp_path / ".local" / "share" / "graphkit" / "index.json"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert index_path() == tmp_path / "data" / "graphkit" / "index.json"
    monkeypatch.setenv("GRAPHKIT_HOME", str(tmp_path / "gk"))
    assert index_path() == tmp_path / "gk" / "index.json"


def test_a_rerun_overwrites_its_slot(index: Path, tmp_path: Path) -> None:
    src = [tmp_path / "b", tmp_path / "a"]
    record_snapshot(tmp_path / "snap1", src, "c", 1, "thread")
    record_snapshot(tmp_path / "snap2", list(reversed(src)), "c", 1, "thread")
    data = json.loads(index.read_text())
    assert data["format"] == INDEX_FORMAT
    (key, entry), = data["snapshots"].items()
    assert key == index_key(src, "c", 1, "thread")
    assert entry["snapshot"] == str((tmp_path / "snap2").resolve())
    assert entry["sources"] == source_set(src) == sorted(str(p.resolve()) for p in src)
    assert entry["contract"] == {"name": "c", "version": 1}
    assert SnapshotIndex.load().latest(src) == entry
    # Other granularities and contracts have slots of their own.
    record_snapshot(tmp_path / "snap3", src, "c", 1, "message")
    record_snapshot(tmp_path / "snap4", src, "c", 2, "thread")
    assert len(SnapshotIndex.load().entries) == 3
    assert not list(index.parent.glob(".index.json.*")), "a temporary file was left behind"


def test_a_folder_rebuilt_from_other_sources_leaves_its_old_slot(index: Path,
                                                                 tmp_path: Path) -> None:
    record_snapshot(tmp_path / "snap", [tmp_path / "a"], "c", 1, "thread")
    record_snapshot(tmp_path / "snap", [tmp_path / "b"], "c", 1, "thread")
    idx = SnapshotIndex.load()
    assert idx.latest([tmp_path / "a"]) is None
    assert idx.latest([tmp_path / "b"])["snapshot"] == str((tmp_path / "snap").resolve())


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"format": 1}',
                                     '{"format": 1, "snapshots": []}'])
def test_a_corrupt_index_reads_as_empty_and_says_so(index: Path, tmp_path: Path,
                                                    content: str) -> None:
    index.parent.mkdir(parents=True)
    index.write_text(content)
    idx = SnapshotIndex.load()
    assert idx.entries == {} and idx.problem is not None
    assert str(index) in idx.problem and "reading it as empty" in idx.problem
    written = record_snapshot(tmp_path / "snap", [tmp_path / "a"], "c", 1, "thread")
    assert written.problem is not None and "index.json.corrupt" in written.problem
    assert index.with_name("index.json.corrupt").read_text() == content
    again = SnapshotIndex.load()
    assert again.problem is None and len(again.entries) == 1


def test_malformed_entries_are_named_and_the_rest_used(index: Path, tmp_path: Path) -> None:
    record_snapshot(tmp_path / "snap", [tmp_path / "a"], "c", 1, "thread")
    data = json.loads(index.read_text())
    data["snapshots"]["junk"] = {"snapshot": 3}
    index.write_text(json.dumps(data))
    idx = SnapshotIndex.load()
    assert len(idx.entries) == 1
    assert idx.problem is not None and "1 malformed entry" in idx.problem


def test_a_newer_index_is_ignored_and_never_overwritten(index: Path, tmp_path: Path) -> None:
    index.parent.mkdir(parents=True)
    text = json.dumps({"format": INDEX_FORMAT + 1, "snapshots": {}})
    index.write_text(text)
    written = record_snapshot(tmp_path / "snap", [tmp_path / "a"], "c", 1, "thread")
    assert written.newer and "newer graphkit" in (written.problem or "")
    assert index.read_text() == text


def test_concurrent_builds_keep_every_slot(index: Path, tmp_path: Path) -> None:
    def work(n: int) -> None:
        for i in range(5):
            record_snapshot(tmp_path / f"s{n}-{i}", [tmp_path / f"src{n}-{i}"], "c", 1, "thread")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(SnapshotIndex.load().entries) == 30


@pytest.fixture()
def own_home(fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's home with Claude Code and Codex history (the HypAware fixture's)."""
    home = tmp_path / "home"
    shutil.copytree(fixtures / "hypaware-cache" / "home", home)
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.mark.slow
def test_read_commands_default_to_the_latest_build_of_own_history(
    own_home: Path, index: Path, tmp_path: Path, sample_rows: Path
) -> None:
    env = {"HOME": str(own_home), "GRAPHKIT_HOME": str(index.parent)}
    none_yet = graphkit("sessions", "--json", env=env)
    assert none_yet.returncode == 2 and "graphkit build --snapshot DIR" in none_yet.output
    assert len(none_yet.output.strip().splitlines()) == 1
    first = tmp_path / "first"
    assert graphkit("build", "--snapshot", first, env=env).returncode == 0
    # A build of other sources gets a slot of its own and does not become the default.
    built = graphkit("build", sample_rows, "--snapshot", tmp_path / "samples", env=env)
    assert built.returncode == 0
    r = graphkit("sessions", "--json", env=env)
    assert r.returncode == 0, r.output
    assert f"using {first.resolve()}" in r.stderr
    explicit = graphkit("sessions", "--snapshot", first, "--json", env=env).stdout
    assert r.stdout == explicit
    sid = json.loads(explicit.splitlines()[0])["session_id"]
    assert graphkit("tree", sid, env=env).returncode == 0
    assert graphkit("lineage", sid, "--json", env=env).returncode == 0
    page = tmp_path / "view.html"
    assert graphkit("view", sid, "--out", page, env=env).returncode == 0
    assert sid in page.read_text()
    # A rerun into another folder moves the default there.
    second = tmp_path / "second"
    assert graphkit("build", "--snapshot", second, env=env).returncode == 0
    assert f"using {second.resolve()}" in graphkit("sessions", env=env).stderr
    entries = SnapshotIndex.load().entries
    assert len(entries) == 2  # own history (one slot, rewritten) and the samples
    # A corrupt index reads as empty and says so on stderr.
    index.write_text("{oops")
    broken = graphkit("sessions", env=env)
    assert broken.returncode == 2
    assert "unreadable snapshot index" in broken.stderr and str(index) in broken.stderr
    built = graphkit("build", "--snapshot", second, "--json", env=env)
    assert built.returncode == 0 and "index.json.corrupt" in built.stderr
    assert json.loads(built.stdout)["index"] == str(index)
    assert graphkit("sessions", env=env).returncode == 0


def test_an_unwritable_index_does_not_fail_the_build(tmp_path: Path, sample_rows: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("GRAPHKIT_HOME", str(blocker / "sub"))  # under a file: cannot exist
    r = graphkit("build", sample_rows, "--snapshot", tmp_path / "s", "--json")
    assert r.returncode == 0, r.output
    summary = json.loads(r.stdout)
    assert "could not record" in summary["index_note"] and "index" not in summary
    assert os.path.isdir(tmp_path / "s")
