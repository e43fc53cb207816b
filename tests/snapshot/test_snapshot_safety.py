"""Snapshot writing and reading under hostile conditions: foreign folders in the
way, bad targets, concurrent and killed writers, changed files, bad manifests."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from graphkit.builds.run import graph_from_records
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.snapshot import SnapshotError, read_manifest, read_snapshot, write_snapshot
from graphkit.snapshot import format as snapformat
from graphkit.snapshot import read as snapverify
from graphkit.snapshot import swap as snapswap
from tests.helpers.cli import graphkit
from tests.helpers.paths import REPO
from tests.helpers.rows import identity_cases, row, write_parquet

# The console script, run the way the entry point runs it.
GRAPHKIT = [sys.executable, "-c", "from graphkit.cli import main; main()"]


def small(session: str = "s1") -> object:
    return graph_from_records([row(session, message_id=f"{session}-m")])


def only_entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def cli_run(*args: object) -> tuple[int, str]:
    r = graphkit(*args)  # raises what the command raised other than its exit
    return r.returncode, r.output


# --- what may be replaced ----------------------------------------------------------


def test_a_web_app_folder_with_a_manifest_is_not_deleted(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "manifest.json").write_text('{"name": "my app", "start_url": "/"}')
    (site / "index.html").write_text("<h1>mine</h1>")
    with pytest.raises(SnapshotError, match="graphkit did not write") as info:
        write_snapshot(small(), site)
    assert "\n" not in str(info.value) and str(site) in str(info.value)
    assert (site / "index.html").read_text() == "<h1>mine</h1>"
    assert only_entries(tmp_path) == ["site"]


@pytest.mark.slow
def test_a_snapshot_with_a_users_file_added_is_not_deleted(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    write_snapshot(small(), snap)
    (snap / "NOTES.md").write_text("my notes")
    with pytest.raises(SnapshotError, match=r"NOTES\.md"):
        write_snapshot(small("s2"), snap)
    assert (snap / "NOTES.md").read_text() == "my notes"
    assert read_snapshot(snap).nodes["Session"].table.column("session_id").to_pylist() == ["s1"]


def test_a_copied_graphkit_manifest_alone_does_not_make_a_folder_ours(tmp_path: Path) -> None:
    write_snapshot(small(), tmp_path / "snap")
    other = tmp_path / "other"
    other.mkdir()
    (other / "manifest.json").write_bytes((tmp_path / "snap" / "manifest.json").read_bytes())
    (other / "data.csv").write_text("a,b\n")
    with pytest.raises(SnapshotError, match=r"data\.csv"):
        write_snapshot(small(), other)
    assert (other / "data.csv").exists()


@pytest.mark.slow
def test_an_empty_folder_and_a_format_1_snapshot_are_replaced(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    write_snapshot(small(), tmp_path / "empty")
    assert read_snapshot(tmp_path / "empty").node_counts()["Session"] == 1
    # A snapshot an older graphkit wrote (format 1, no marker) is still ours.
    old = tmp_path / "old"
    write_snapshot(small(), old)
    m = json.loads((old / "manifest.json").read_text())
    m["format"] = 1
    del m["kind"]
    (old / "manifest.json").write_text(json.dumps(m))
    assert read_snapshot(old).node_counts()["Session"] == 1
    write_snapshot(small("s2"), old)
    assert read_manifest(old)["format"] == snapformat.FORMAT_VERSION


# --- bad targets -----------------------------------------------------------------


@pytest.mark.parametrize("case", ["file", "under-file", "unwritable", "dangling-link"])
def test_bad_snapshot_targets_are_one_line_errors(tmp_path: Path, case: str) -> None:
    (tmp_path / "a-file").write_text("x")
    target = {"file": tmp_path / "a-file",
              "under-file": tmp_path / "a-file" / "snap",
              # /sys refuses new entries even to root (the CI user).
              "unwritable": Path("/sys/graphkit-test-snapshot"),
              "dangling-link": tmp_path / "link"}[case]
    if case == "dangling-link":
        target.symlink_to(tmp_path / "nowhere")
    with pytest.raises(SnapshotError) as info:
        write_snapshot(small(), target)
    msg = str(info.value)
    assert "\n" not in msg and str(target) in msg, msg
    assert (tmp_path / "a-file").read_text() == "x"
    # The CLI says the same in one line with exit 2, and before the build.
    src = write_parquet(identity_cases(), tmp_path / "rows.parquet")
    code, out = cli_run("build", src, "--snapshot", target)
    assert code == 2, out
    assert "Traceback" not in out and str(target) in out
    assert not (tmp_path / ".a-file.cache").exists() or case != "file"


def test_symlink_to_a_snapshot_folder_writes_through_it(tmp_path: Path) -> None:
    real = tmp_path / "real"
    write_snapshot(small(), real)
    (tmp_path / "link").symlink_to(real)
    write_snapshot(small("s2"), tmp_path / "link")
    assert (tmp_path / "link").is_symlink()
    assert read_snapshot(real).nodes["Session"].table.column("session_id").to_pylist() == ["s2"]


# --- permissions -----------------------------------------------------------------


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o277])
def test_snapshot_is_private_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        write_snapshot(graph_from_records(identity_cases()), tmp_path / "snap")
    finally:
        os.umask(old)
    snap = tmp_path / "snap"
    for p in [snap, *snap.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), (p, oct(mode))


# --- integrity -------------------------------------------------------------------


@pytest.fixture()
def snap(tmp_path: Path) -> Path:
    d = tmp_path / "snap"
    write_snapshot(graph_from_records(identity_cases()), d)
    return d


def test_manifest_records_checksums_and_rows(snap: Path) -> None:
    import hashlib

    m = read_manifest(snap)
    assert m["kind"] == "graphkit-snapshot" and m["format"] == snapformat.FORMAT_VERSION
    for part in ("nodes", "edges"):
        for entry in m[part].values():
            data = (snap / entry["file"]).read_bytes()
            assert entry["sha256"] == hashlib.sha256(data).hexdigest()
            assert entry["bytes"] == len(data)
    assert m["nodes"]["Thread"]["count"] == read_snapshot(snap).nodes["Thread"].table.num_rows


def damage(snap: Path, how: str) -> Path:
    f = snap / "nodes" / "Thread.parquet"
    data = bytearray(f.read_bytes())
    if how == "changed":  # same size, one byte in the middle flipped
        data[len(data) // 2] ^= 0xFF
        f.write_bytes(bytes(data))
    elif how == "truncated":
        f.write_bytes(bytes(data[: len(data) // 2]))
    elif how == "missing":
        f.unlink()
    return f


@pytest.mark.parametrize("how", ["changed", "truncated", "missing"])
def test_damaged_files_are_refused_naming_the_file(snap: Path, how: str) -> None:
    f = damage(snap, how)
    with pytest.raises(SnapshotError) as info:
        read_snapshot(snap)
    msg = str(info.value)
    assert str(f) in msg and "\n" not in msg, msg
    assert {"changed": "sha256", "truncated": "bytes", "missing": "missing"}[how] in msg
    # Every read command says the same, one line, exit 2.
    for args in (["sessions", "--snapshot", snap], ["lineage", "x", "--snapshot", snap],
                 ["tree", "x", "--snapshot", snap]):
        code, out = cli_run(*args)
        assert code == 2 and str(f) in out and "Traceback" not in out, out


def test_a_damaged_file_not_read_is_still_noticed_when_its_size_changed(snap: Path) -> None:
    (snap / "nodes" / "Tool.parquet").write_bytes(b"PAR1")
    with pytest.raises(SnapshotError, match=r"Tool\.parquet"):
        SnapshotReader(snap)  # reads Thread/Session/PARENT_THREAD only


def test_same_size_change_in_a_file_the_reader_uses(snap: Path) -> None:
    damage(snap, "changed")
    with pytest.raises(SnapshotError, match=r"Thread\.parquet.*sha256"):
        SnapshotReader(snap)


def test_row_count_must_match(snap: Path) -> None:
    # A consistent hash but a wrong count: a manifest edited by hand.
    m = json.loads((snap / "manifest.json").read_text())
    m["nodes"]["Thread"]["count"] += 1
    (snap / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(SnapshotError, match="rows, the manifest says"):
        read_snapshot(snap)


def test_newer_format_is_refused_with_its_number(snap: Path) -> None:
    m = json.loads((snap / "manifest.json").read_text())
    m["format"] = 99
    (snap / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(SnapshotError, match="format 99 was written by a newer graphkit"):
        read_snapshot(snap)
    code, out = cli_run("sessions", "--snapshot", snap)
    assert code == 2 and "format 99" in out


@pytest.mark.parametrize("text", [
    "{not json", "", "[1, 2]", '{"format": "2"}', "\xff\xfe",
    '{"format": 2, "kind": "graphkit-snapshot"}',
    "[" * 100000 + "]" * 100000,
])
def test_malformed_manifest_is_one_line(snap: Path, text: str) -> None:
    (snap / "manifest.json").write_bytes(text.encode("latin-1"))
    with pytest.raises(SnapshotError, match="manifest") as info:
        read_snapshot(snap)
    assert "\n" not in str(info.value)
    for args in (["sessions", "--snapshot", snap], ["load", snap]):
        code, out = cli_run(*args)
        assert code == 2 and "manifest" in out and "Traceback" not in out, out


def test_manifest_cannot_point_outside_the_snapshot(snap: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.parquet").write_bytes(b"x")
    m = json.loads((snap / "manifest.json").read_text())
    m["nodes"]["Thread"]["file"] = "../secret.parquet"
    (snap / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(SnapshotError, match=r"file is not nodes/Thread\.parquet"):
        read_snapshot(snap)


# --- concurrency and kills ---------------------------------------------------------

WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from graphkit.builds.run import graph_from_records
    from graphkit.snapshot import write_snapshot
    from tests.helpers.rows import identity_cases, row
    target, tag, loops = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    rows = identity_cases() + [row(f"writer-{tag}-{i}", message_id=f"{tag}-{i}")
                               for i in range(int(sys.argv[4]))]
    graph = graph_from_records(rows)
    for _ in range(loops):
        write_snapshot(graph, target)
""")


def spawn(target: Path, tag: str, loops: int, extra_rows: int = 20) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-c", WRITER, str(target), tag, str(loops),
                             str(extra_rows)], env=env, cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def writer_sessions(snap: Path) -> set[str]:
    ids = read_snapshot(snap).nodes["Session"].table.column("session_id").to_pylist()
    return {i.split("-")[1] for i in ids if i.startswith("writer-")}


@pytest.mark.slow
def test_concurrent_writers_never_fail_and_leave_a_whole_snapshot(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    procs = [spawn(snap, tag, loops=15) for tag in ("a", "b", "c")]
    reads = 0
    while any(p.poll() is None for p in procs):
        if snap.exists():
            assert len(writer_sessions(snap)) == 1  # never a mix of two writers
            reads += 1
    for p in procs:
        _, err = p.communicate()
        assert p.returncode == 0, err
    assert len(writer_sessions(snap)) == 1
    assert only_entries(tmp_path) == ["snap"]
    assert reads > 0


@pytest.mark.slow
def test_a_reader_gets_through_however_often_writers_swap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer swaps a new snapshot in under every optimistic try of a read (so
    the tables it opened are deleted under it); the last try holds a shared
    lock: the reader gets the snapshot then in place, whole, and the writer
    waiting at the swap goes on after it."""
    snap = tmp_path / "snap"
    write_snapshot(small("v0"), snap)
    real_load = snapverify._load_manifest
    tries: list[int] = []
    late: list[threading.Thread] = []

    def load_then_swap(opened: object) -> dict[str, object]:
        manifest = real_load(opened)  # type: ignore[arg-type]
        tries.append(1)
        if len(tries) < snapverify._ATTEMPTS:
            write_snapshot(small(f"v{len(tries)}"), snap)
        else:
            writer = threading.Thread(target=write_snapshot, args=(small("late"), snap))
            writer.start()
            writer.join(0.5)
            assert writer.is_alive()  # held at the swap while we read
            late.append(writer)
        return manifest

    monkeypatch.setattr(snapverify, "_load_manifest", load_then_swap)
    got = read_snapshot(snap)
    last = f"v{snapverify._ATTEMPTS - 1}"
    assert got.nodes["Session"].table.column("session_id").to_pylist() == [last]
    late[0].join(30)
    assert not late[0].is_alive()
    monkeypatch.setattr(snapverify, "_load_manifest", real_load)
    assert read_snapshot(snap).nodes["Session"].table.column("session_id").to_pylist() == ["late"]


@pytest.mark.slow
def test_two_concurrent_cli_builds(tmp_path: Path) -> None:
    src = write_parquet(identity_cases(), tmp_path / "rows.parquet")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for _ in range(2):
        procs = [subprocess.Popen([*GRAPHKIT, "build", str(src),
                                   "--snapshot", str(tmp_path / "snap")],
                                  env=env, cwd=REPO, text=True, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE) for _ in range(2)]
        for p in procs:
            _, err = p.communicate()
            assert p.returncode == 0 and "Traceback" not in err, err
        assert read_snapshot(tmp_path / "snap").node_counts()["Thread"] == 5


@pytest.mark.slow
def test_kill_9_during_writes_never_leaves_a_broken_snapshot(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    write_snapshot(small("first"), snap)
    left_behind = 0
    for i in range(6):
        p = spawn(snap, f"k{i}", loops=1000, extra_rows=2000)
        time.sleep(1.5 + 0.3 * i)
        p.send_signal(signal.SIGKILL)
        p.wait()
        # Whatever moment the kill hit, a whole snapshot is at the path.
        read_snapshot(snap)
        left_behind += len(only_entries(tmp_path)) - 1
    print(f"kills that left a temp folder behind: {left_behind} of 6")
    # The next write cleans what the killed writers left behind.
    write_snapshot(small("last"), snap)
    assert only_entries(tmp_path) == ["snap"]


def test_left_overs_of_dead_writers_are_cleaned_live_ones_kept(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    write_snapshot(small(), snap)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = snapswap.HOST
    names = {
        "dead": f".snap.graphkit-tmp-{host}-{dead.pid}-abcd1234",
        "live": f".snap.graphkit-tmp-{host}-{os.getpid()}-abcd1234",
        "foreign-old": ".snap.graphkit-tmp-00000000-1-abcd1234",
        "foreign-new": ".snap.graphkit-tmp-00000000-2-abcd1234",
        "users-own": ".snap.backup01",
    }
    for name in names.values():
        (tmp_path / name / "nodes").mkdir(parents=True)
    hour_ago = time.time() - 2 * snapswap.STALE_SECONDS
    for key in ("foreign-old", "users-own"):
        os.utime(tmp_path / names[key], (hour_ago, hour_ago))
    write_snapshot(small("s2"), snap)
    left = set(only_entries(tmp_path))
    assert left == {"snap", names["live"], names["foreign-new"], names["users-own"]}


def test_a_kill_between_the_two_renames_is_recovered(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Where renameat2 cannot exchange, the old snapshot goes to a trash name
    first; a writer killed right then leaves no snapshot at the path, and the
    next reader (or writer) puts the old one back."""
    snap = tmp_path / "snap"
    write_snapshot(small("old"), snap)
    monkeypatch.setattr(snapswap, "exchange", lambda a, b: False)
    real_rename = os.rename
    calls = []

    def dying_rename(a: object, b: object) -> None:
        calls.append((a, b))
        real_rename(a, b)  # type: ignore[arg-type]
        if len(calls) == 1:
            raise KeyboardInterrupt  # "killed" right after the first rename

    monkeypatch.setattr(snapswap.os, "rename", dying_rename)
    with pytest.raises(KeyboardInterrupt):
        write_snapshot(small("new"), snap)
    monkeypatch.setattr(snapswap.os, "rename", real_rename)
    assert not snap.exists()
    trash = [p for p in tmp_path.iterdir() if ".graphkit-old-" in p.name]
    assert len(trash) == 1
    # The trash carries our pid, which is alive: pretend the writer is gone.
    monkeypatch.setattr("graphkit.core.files.alive", lambda pid: False)
    got = read_snapshot(snap)
    assert got.nodes["Session"].table.column("session_id").to_pylist() == ["old"]
    assert only_entries(tmp_path) == ["snap"]


@pytest.mark.slow
def test_readers_during_rewrites_see_one_whole_snapshot(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    write_snapshot(small(), snap)
    p = spawn(snap, "w", loops=40)
    seen = replaced = 0
    while p.poll() is None:
        writer_sessions(snap)  # one call: retried until whole, never mixed
        # A reader kept open across a rewrite reads its tables lazily: it gets
        # its own snapshot whole, or one line saying it was replaced, nothing else.
        try:
            SnapshotReader(snap).sessions()
        except SnapshotError as exc:
            assert "replaced while it was being read" in str(exc), exc
            replaced += 1
        seen += 1
    assert p.returncode == 0, p.stderr.read() if p.stderr else ""
    assert seen > replaced
