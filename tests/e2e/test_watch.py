"""``graphkit build --watch`` as a real process: each rebuild after an append, a deletion
or a new session writes the snapshot a cold ``graphkit build`` of the same files writes
(byte for byte); a rebuild that fails is reported and the watch goes on; changes made while
a rebuild runs are not lost; SIGINT and SIGTERM end it with exit code 0."""

from __future__ import annotations

import json
import os
import queue
import random
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import graphkit, spawn
from tests.helpers.paths import FIXTURES, REPO
from tests.helpers.transcripts import assistant, text

TIMEOUT = 60.0  # a rebuild takes well under a second; the machine may be loaded
SESSION = "claude-code-log/session_id_steering_order.jsonl"


class Watcher:
    """A ``graphkit build --watch --json`` process and the JSON lines it prints."""

    def __init__(self, src: Path, snap: Path, *extra: str, prefix: tuple[str, ...] = ()
                 ) -> None:
        self.proc = spawn("build", src, "--snapshot", snap, "--watch", "--json", *extra,
                          prefix=prefix, cwd=REPO)
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()
        self.last = -1

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        self.stderr.extend(self.proc.stderr)

    def next_build(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next build's JSON line (the first build's, then each rebuild's)."""
        try:
            got = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no build line in {timeout} s; stderr: "
                                 f"{''.join(self.stderr)}") from None
        assert got["watch"]["rebuild"] == self.last + 1
        self.last = got["watch"]["rebuild"]
        return got

    def next_written(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next rebuild that wrote a snapshot, past any that found nothing changed:
        a poll may report one change twice (a file replaced by a rename is seen in two
        passes under load), and the second rebuild rightly says the snapshot was kept."""
        end = time.monotonic() + timeout
        while True:
            got = self.next_build(max(end - time.monotonic(), 0.1))
            if not got.get("snapshot_reused"):
                return got

    def settle(self, quiet: float = 2.0) -> dict[str, Any] | None:
        """The last build line once none came for ``quiet`` seconds (failing if they
        keep coming for TIMEOUT)."""
        last = None
        end = time.monotonic() + TIMEOUT
        while time.monotonic() < end:
            try:
                last = self.lines.get(timeout=quiet)
                self.last = last["watch"]["rebuild"]
            except queue.Empty:
                return last
        raise AssertionError(f"still rebuilding after {TIMEOUT} s")

    def stop(self, sig: int = signal.SIGINT) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def src(tmp_path: Path) -> Path:
    root = tmp_path / "transcripts"
    shutil.copytree(FIXTURES / "transcripts", root)
    return root


@pytest.fixture
def watcher(src: Path, tmp_path: Path) -> Any:
    w = Watcher(src, tmp_path / "out" / "snap")
    yield w
    w.stop()


def _cold(src: Path, tmp_path: Path, *extra: str) -> Path:
    """A cold build of ``src`` as a new process, into a snapshot of its own."""
    snap = tmp_path / f"cold-{len(list(tmp_path.glob('cold-*')))}" / "snap"
    built = graphkit("build", src, "--snapshot", snap, "-q", *extra, cwd=REPO, process=True)
    assert built.returncode == 0, built.stderr
    return snap


def _assert_same_snapshot(mine: Path, cold: Path) -> None:
    """Every table file byte for byte, and the manifest but for its creation time and the
    snapshot's own folder (the summary names its skipped-lines file beside it)."""
    names = sorted(p.relative_to(cold).as_posix() for p in cold.rglob("*") if p.is_file())
    assert sorted(p.relative_to(mine).as_posix() for p in mine.rglob("*")
                  if p.is_file()) == names
    for name in names:
        if name == "manifest.json":
            a, b = (json.loads((s / name).read_text().replace(str(s.parent), "<dir>"))
                    for s in (mine, cold))
            a.pop("created_at"), b.pop("created_at")
            assert a == b
        else:
            assert (mine / name).read_bytes() == (cold / name).read_bytes(), name


def _line(n: int) -> str:
    return json.dumps(assistant(f"a-watch-{n}", "00000000-0295-4000-8000-000000000001",
                                "2026-07-11T07:00:09Z", [text(f"line {n}")], "a2")) + "\n"


def _append(path: Path, n: int) -> None:
    with path.open("a") as fh:
        fh.write(_line(n))


def test_each_rebuild_writes_what_a_cold_build_writes(watcher: Watcher, src: Path,
                                                      tmp_path: Path) -> None:
    first = watcher.next_build()
    assert first["transcripts"]["files_reused"] == 0
    snap = tmp_path / "out" / "snap"
    # One line appended to one session.
    _append(src / SESSION, 1)
    got = watcher.next_build()
    assert not got.get("snapshot_reused")
    assert 1 <= got["transcripts"]["files_parsed"] < first["transcripts"]["files_parsed"]
    assert got["watch"]["changed_paths"] == 1
    _assert_same_snapshot(snap, _cold(src, tmp_path))
    # A session deleted.
    (src / "claude-code-log" / "sidechain_integrated.jsonl").unlink()
    got = watcher.next_build()
    assert got["nodes"]["Session"] == first["nodes"]["Session"] - 1
    _assert_same_snapshot(snap, _cold(src, tmp_path))
    # A new session: a copy of one under a new session id.
    old = (src / SESSION).read_text()
    sid = json.loads(old.splitlines()[0]).get("sessionId")
    assert sid
    new = "12345678-aaaa-4bbb-8ccc-123456789abc"
    (src / "claude-code-log" / f"{new}.jsonl").write_text(old.replace(sid, new))
    got = watcher.next_build()
    assert got["nodes"]["Session"] == first["nodes"]["Session"]
    _assert_same_snapshot(snap, _cold(src, tmp_path))
    assert watcher.settle(1.0) is None  # nothing more: its own writes start no rebuild


def test_a_burst_of_appends_is_one_rebuild(watcher: Watcher, src: Path,
                                           tmp_path: Path) -> None:
    watcher.next_build()
    with (src / SESSION).open("a") as fh:
        for n in range(20):
            fh.write(_line(n))
            fh.flush()
    got = watcher.next_build()
    assert got["rows_read"] > 0
    assert watcher.settle(1.5) is None
    _assert_same_snapshot(tmp_path / "out" / "snap", _cold(src, tmp_path))


def test_changes_made_while_a_rebuild_runs_are_not_lost(watcher: Watcher, src: Path,
                                                        tmp_path: Path) -> None:
    watcher.next_build()
    rng = random.Random(11)
    sessions = [src / SESSION, src / "claude-code-log" / "sidechain_integrated.jsonl"]
    end = time.monotonic() + 4.0
    n = 0
    while time.monotonic() < end:  # appends at random gaps, many during rebuilds
        _append(rng.choice(sessions), n)
        n += 1
        time.sleep(rng.uniform(0.01, 0.3))
    last = watcher.settle(3.0)
    assert last is not None and watcher.last >= 2
    _assert_same_snapshot(tmp_path / "out" / "snap", _cold(src, tmp_path))


def test_a_bad_line_appended_is_skipped_and_said_once(watcher: Watcher, src: Path,
                                                      tmp_path: Path) -> None:
    first = watcher.next_build()
    with (src / SESSION).open("a") as fh:
        fh.write("{not json\n")
    got = watcher.next_build()
    assert got["lines_skipped"] == first["lines_skipped"] + 1
    _append(src / SESSION, 2)
    got = watcher.next_build()
    assert "error" not in got["watch"]
    _assert_same_snapshot(tmp_path / "out" / "snap", _cold(src, tmp_path))
    assert watcher.stop() == 0
    said = [line for line in watcher.stderr if line.startswith("skipped ")]
    assert len(said) == 1 and "session_id_steering_order.jsonl:" in said[0]
    assert said[0].endswith(": not valid JSON\n")


def test_files_vanishing_while_rebuilds_read_them(watcher: Watcher, src: Path,
                                                 tmp_path: Path) -> None:
    # New sessions created and removed at random gaps for 5 s: some vanish between a
    # rebuild's walk and its read (skipped as unreadable, never a traceback); once all are
    # gone the snapshot is the cold build's.
    watcher.next_build()
    body = (src / SESSION).read_text()
    sid = json.loads(body.splitlines()[0])["sessionId"]
    rng = random.Random(5)
    end = time.monotonic() + 5.0
    n = 0
    while time.monotonic() < end:
        new = f"{n:08d}-aaaa-4bbb-8ccc-123456789abc"
        path = src / "claude-code-log" / f"{new}.jsonl"
        path.write_text(body.replace(sid, new))
        time.sleep(rng.uniform(0, 0.2))
        path.unlink()
        time.sleep(rng.uniform(0, 0.05))
        n += 1
    assert watcher.settle(3.0) is not None and watcher.proc.poll() is None
    _assert_same_snapshot(tmp_path / "out" / "snap", _cold(src, tmp_path))
    assert watcher.stop() == 0
    assert not any("Traceback" in line for line in watcher.stderr)


def test_a_failed_rebuild_is_reported_and_the_watch_goes_on(tmp_path: Path) -> None:
    src = tmp_path / "transcripts"
    shutil.copytree(FIXTURES / "transcripts" / "claude-code-log", src)
    shutil.rmtree(src / "codex" / "malformed")  # --strict: every line must be readable
    # ... and of a known type (a line of an unknown type is a skipped line)
    for rollout in src.rglob("rollout-*.jsonl"):
        lines = rollout.read_text().splitlines(keepends=True)
        rollout.write_text("".join(x for x in lines if "future_synthetic_record" not in x))
    snap = tmp_path / "out" / "snap"
    w = Watcher(src, snap, "--strict")
    try:
        w.next_build()
        before = (snap / "manifest.json").read_bytes()
        session = src / "session_id_steering_order.jsonl"
        good = session.read_text()
        with session.open("a") as fh:
            fh.write("{not json\n")
        got = w.next_build()
        assert "not valid JSON" in got["watch"]["error"]
        assert (snap / "manifest.json").read_bytes() == before  # the previous snapshot
        session.write_text(good + _line(1))
        got = w.next_build()
        assert "error" not in got["watch"] and got["rows_read"] > 0
        _assert_same_snapshot(snap, _cold(src, tmp_path, "--strict"))
    finally:
        assert w.stop() == 0
    errors = [line for line in w.stderr if line.startswith("Error: ")]
    assert len(errors) == 1 and "session_id_steering_order.jsonl:" in errors[0]


def test_a_contract_error_is_reported_and_the_watch_goes_on(src: Path,
                                                            tmp_path: Path) -> None:
    contract = tmp_path / "mine.yaml"
    good = (REPO / "contracts" / "ai-gateway-graph.yaml").read_text()
    contract.write_text(good)
    snap = tmp_path / "out" / "snap"
    w = Watcher(src, snap, "--contract", str(contract))
    try:
        w.next_build()
        contract.write_text(good + "\nnodes: [oops\n")  # edited into broken YAML
        _append(src / SESSION, 1)
        got = w.next_build()
        assert "mine.yaml" in got["watch"]["error"]
        contract.write_text(good)
        _append(src / SESSION, 2)
        got = w.next_build()
        assert "error" not in got["watch"]
        _assert_same_snapshot(snap, _cold(src, tmp_path, "--contract", str(contract)))
    finally:
        assert w.stop() == 0
    assert sum(line.startswith("Error: ") for line in w.stderr) == 1


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_watch_with_exit_code_0(watcher: Watcher, sig: int) -> None:
    watcher.next_build()
    assert watcher.stop(sig) == 0
    assert not any("Traceback" in line for line in watcher.stderr)


def _same(mine: Path, cold: Path) -> bool:
    try:
        _assert_same_snapshot(mine, cold)
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize("delay", [0.02, 0.08, 0.15, 0.3])
def test_a_signal_at_any_point_of_a_rebuild_exits_0_with_a_whole_snapshot(
        src: Path, tmp_path: Path, delay: float) -> None:
    # SIGINT soon after an append: while the watcher waits out the burst, during the
    # rebuild, or after it. The first signal lets a running rebuild finish: exit 0, and
    # the snapshot is whole, the one before the append or the one after it.
    snap = tmp_path / "out" / "snap"
    w = Watcher(src, snap)
    w.next_build()
    before = _cold(src, tmp_path)
    _append(src / SESSION, 1)
    time.sleep(delay)
    assert w.stop(signal.SIGINT) == 0
    assert not any("Traceback" in line for line in w.stderr)
    assert _same(snap, before) or _same(snap, _cold(src, tmp_path))


def test_polling_sees_an_append(src: Path, tmp_path: Path) -> None:
    w = Watcher(src, tmp_path / "out" / "snap", "--poll", "0.2")
    try:
        w.next_build()
        _append(src / SESSION, 1)
        got = w.next_build()
        assert got["transcripts"]["files_parsed"] >= 1
        _assert_same_snapshot(tmp_path / "out" / "snap", _cold(src, tmp_path))
    finally:
        assert w.stop(signal.SIGTERM) == 0
    assert any("polling every 0.2 s" in line for line in w.stderr)


def test_polling_sees_a_change_in_the_second_of_the_last_one(src: Path,
                                                            tmp_path: Path) -> None:
    # notify's polling watcher compares mtimes in whole seconds: a file written again in
    # the second of the write it last saw looks unchanged to it. The mtimes are set here
    # (one second in the past, .2 then .7) so that it happens every run; the watcher's
    # look again after each build finds it, and a look that finds nothing prints nothing.
    w = Watcher(src, tmp_path / "out" / "snap", "--poll", "0.2")
    second = int(time.time()) - 100
    try:
        w.next_build()
        _append(src / SESSION, 1)
        os.utime(src / SESSION, (second + 0.2, second + 0.2))
        assert w.next_build()["transcripts"]["files_parsed"] >= 1
        _append(src / SESSION, 2)
        os.utime(src / SESSION, (second + 0.7, second + 0.7))
        got = w.next_build(timeout=20)
        assert got["transcripts"]["files_parsed"] >= 1 and "error" not in got["watch"]
        assert w.settle(2.5) is None
        _assert_same_snapshot(tmp_path / "out" / "snap", _cold(src, tmp_path))
    finally:
        assert w.stop(signal.SIGTERM) == 0


def test_more_folders_than_the_os_watches_falls_back_to_polling(src: Path,
                                                               tmp_path: Path) -> None:
    # inotify's limit lowered to 3 watches (the fixtures have 19 folders) in a user
    # namespace of this test's own (Linux >= 5.11 keeps the limit per namespace).
    limit = "echo 3 > /proc/sys/user/max_inotify_watches"
    if shutil.which("unshare") is None or subprocess.run(
            ["unshare", "-Ur", "sh", "-c", limit], capture_output=True).returncode != 0:
        pytest.skip("needs unshare -Ur and per-namespace inotify limits")
    snap = tmp_path / "out" / "snap"
    w = Watcher(src, snap, prefix=("unshare", "-Ur", "sh", "-c", f'{limit} && exec "$@"', "-"))
    try:
        w.next_build()
        _append(src / SESSION, 1)
        got = w.next_build()
        assert got["transcripts"]["files_parsed"] >= 1
        _assert_same_snapshot(snap, _cold(src, tmp_path))
    finally:
        assert w.stop() == 0
    assert any("cannot watch the sources with file events (OS file watch limit reached)"
               in line for line in w.stderr)
    assert any("(polling every 1 s)" in line for line in w.stderr)


def test_a_snapshot_inside_a_watched_folder_starts_no_rebuild(src: Path,
                                                              tmp_path: Path) -> None:
    # The snapshot and its skipped-lines file inside the watched folder (the cache may not
    # be: graphkit refuses that): writing them must not start the next rebuild, which would
    # write them again, and so on for ever.
    w = Watcher(src, src / "graph", "--cache-dir", str(tmp_path / "cache"))
    try:
        w.next_build()
        assert w.settle(2.0) is None
    finally:
        assert w.stop() == 0


@pytest.mark.parametrize("args", [["--store", "networkx"], ["--engine", "spark"],
                                  ["--partitions", "2"]])
def test_what_watch_cannot_do_is_refused(src: Path, tmp_path: Path, args: list[str]) -> None:
    done = graphkit("build", src, "--snapshot", tmp_path / "s", "--watch", *args)
    assert done.returncode == 2
    assert "--watch" in done.stderr and args[0] in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "s").exists()


def test_a_missing_source_is_the_usual_one_line_error(tmp_path: Path) -> None:
    done = graphkit("build", tmp_path / "nope", "--snapshot", tmp_path / "s", "--watch")
    assert done.returncode == 2
    assert done.stderr == f"Error: {tmp_path / 'nope'}: no such file or folder; check the path\n"


def test_poll_without_watch_is_refused(src: Path, tmp_path: Path) -> None:
    done = graphkit("build", src, "--snapshot", tmp_path / "s", "--poll", "1")
    assert done.returncode == 2 and "--poll works with --watch only" in done.stderr


def _replace(path: Path, body: str) -> None:
    """Save ``path`` the way editors do: a new file renamed over the old one."""
    tmp = path.with_name(f".{path.name}.swp")
    tmp.write_text(body)
    os.replace(tmp, path)


@pytest.mark.parametrize("poll", [(), ("--poll", "0.2")])
def test_editing_the_contract_rebuilds(src: Path, tmp_path: Path, poll: tuple[str, ...]
                                       ) -> None:
    # The contract is read by every build besides the sources: saving it rebuilds, an
    # edit into an error is the usual one-line error with the previous snapshot kept,
    # and the next save rebuilds again. Other files beside it start nothing. With file
    # events and with polling.
    folder = tmp_path / "contracts"
    folder.mkdir()
    contract = folder / "mine.yaml"
    good = (REPO / "contracts" / "ai-gateway-graph.yaml").read_text()
    contract.write_text(good)
    snap = tmp_path / "out" / "snap"
    w = Watcher(src, snap, "--contract", str(contract), *poll)

    def save_turn() -> None:
        # notify's polling watcher compares mtimes in whole seconds: a second change in
        # the second of the last one it saw goes unseen (a limitation of --poll, sources
        # too; bench/PROFILE_NOTES.md at d9272aa "Watch mode, pass 11").
        if poll:
            time.sleep(1.05 - time.time() % 1)

    try:
        w.next_build()
        before = (snap / "manifest.json").read_bytes()
        (folder / "notes.txt").write_text("not the contract")
        _replace(folder / "other.yaml", good)
        assert w.settle(1.0) is None
        _replace(contract, good + "\nnodes: [oops\n")  # saved broken
        got = w.next_build()
        assert "mine.yaml" in got["watch"]["error"]
        assert (snap / "manifest.json").read_bytes() == before
        save_turn()
        _replace(contract, good + "\n# saved again, fixed\n")
        got = w.next_written()
        assert "error" not in got["watch"]
        _assert_same_snapshot(snap, _cold(src, tmp_path, "--contract", str(contract)))
        save_turn()
        with contract.open("a") as fh:  # written in place, too
            fh.write("# and once more\n")
        got = w.next_written()
        assert "error" not in got["watch"]
        assert w.settle(1.0) is None
    finally:
        assert w.stop() == 0
    assert sum(line.startswith("Error: ") for line in w.stderr) == 1


@pytest.mark.parametrize("gone", ["source", "its parent"])
def test_a_source_folder_deleted_and_made_again_is_watched_again(tmp_path: Path,
                                                                 gone: str) -> None:
    # inotify watches inodes: the folder made again is a new one. Deleted, a rebuild says
    # the source is missing and the watch goes on; made again, it rebuilds, and changes
    # in it rebuild, with no restart.
    src = tmp_path / "a" / "b" / "transcripts"
    shutil.copytree(FIXTURES / "transcripts", src)
    snap = tmp_path / "out" / "snap"
    w = Watcher(src, snap)
    try:
        w.next_build()
        shutil.rmtree(src if gone == "source" else src.parent)
        got = w.next_build()
        assert "no such file or folder" in got["watch"]["error"]
        assert w.settle(1.0) is None
        shutil.copytree(FIXTURES / "transcripts", src)
        last = w.settle(2.0)
        assert last is not None and "error" not in last["watch"]
        _append(src / SESSION, 1)
        got = w.next_build()
        assert "error" not in got["watch"] and got["transcripts"]["files_parsed"] >= 1
        _assert_same_snapshot(snap, _cold(src, tmp_path))
    finally:
        assert w.stop() == 0
    assert not any("Traceback" in line for line in w.stderr)


def _cpu_seconds(pid: int) -> float:
    """The CPU time ``pid`` has used (Linux: /proc/PID/stat's utime and stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _files(snap: Path) -> dict[str, bytes]:
    return {p.relative_to(snap).as_posix(): p.read_bytes() for p in snap.rglob("*")
            if p.is_file()}


def _many_sessions(folder: Path, sessions: int, lines: int) -> None:
    """``sessions`` new sessions of ``lines`` lines each: seconds of parsing."""
    folder.mkdir(parents=True)
    for s in range(sessions):
        sid = f"{s:08d}-bbbb-4ccc-8ddd-000000000000"
        entries, parent = [], None
        for i in range(lines):
            uuid = f"{s:08d}-{i:06d}"
            entries.append(json.dumps(assistant(uuid, sid, "2026-07-11T07:00:09Z",
                                                [text(f"line {i} " * 20)], parent)))
            parent = uuid
        (folder / f"{sid}.jsonl").write_text("\n".join(entries) + "\n")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc/PID/stat")
def test_a_second_signal_during_a_rebuild_exits_130_with_the_previous_snapshot(
        src: Path, tmp_path: Path) -> None:
    # A rebuild made long by its input (seconds of parsing: new sessions moved in at
    # once), no hook in graphkit: the first SIGINT is sent once the process has used CPU
    # time only a rebuild uses, and must say it stops after this rebuild; then the
    # process is frozen (SIGSTOP) while the test checks it is still in that rebuild
    # (running, the snapshot not yet replaced) and sends SIGTERM; thawed, it stops at
    # once: exit 130, the snapshot the one before, byte for byte.
    snap = tmp_path / "out" / "snap"
    w = Watcher(src, snap)
    try:
        w.next_build()
        before = _files(snap)
        _many_sessions(tmp_path / "incoming", 200, 400)
        cpu = _cpu_seconds(w.proc.pid)
        os.rename(tmp_path / "incoming", src / "incoming")
        end = time.monotonic() + TIMEOUT
        while _cpu_seconds(w.proc.pid) < cpu + 0.5:  # waiting costs ~ms a second
            assert time.monotonic() < end and w.proc.poll() is None, "no rebuild began"
            time.sleep(0.01)
        w.proc.send_signal(signal.SIGINT)
        while not any("stopping after this rebuild" in line for line in w.stderr):
            assert time.monotonic() < end and w.proc.poll() is None, "".join(w.stderr)
            time.sleep(0.01)
        w.proc.send_signal(signal.SIGSTOP)
        try:
            assert w.proc.poll() is None and _files(snap) == before, "the rebuild ended"
            w.proc.send_signal(signal.SIGTERM)
        finally:
            w.proc.send_signal(signal.SIGCONT)
        assert w.proc.wait(timeout=TIMEOUT) == 130
    finally:
        w.stop()
    assert _files(snap) == before
    assert any("stopped during a rebuild" in line for line in w.stderr)
    assert not any("Traceback" in line for line in w.stderr)
    assert not [p.name for p in snap.parent.iterdir() if "graphkit-tmp" in p.name]
    # What the stopped rebuild left in the cache misleads no later build.
    again = graphkit("build", src, "--snapshot", snap, "-q", cwd=REPO, process=True)
    assert again.returncode == 0, again.stderr
    _assert_same_snapshot(snap, _cold(src, tmp_path))
