"""Work spread over forked processes (graphkit/core/workers.py): the same results in the
same order whatever the number of processes, failures taken back, nothing left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from graphkit.core import workers
from graphkit.core.errors import SourceError

REPO = Path(__file__).resolve().parents[2]
LINUX = sys.platform == "linux"


def _in_a_fresh_process(scenario: str, tmp_path: Path) -> None:
    """Run ``scenario`` (a function of this file) in a new interpreter: whether children
    may be forked depends on the threads of the process, and a test run's may hold some
    an earlier test left."""
    code = ("import runpy, sys; from pathlib import Path; "
            f"runpy.run_path(sys.argv[1])[{scenario!r}](Path(sys.argv[2]))")
    done = subprocess.run([sys.executable, "-c", code, __file__, str(tmp_path)],
                          capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def _square_and_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_results_come_in_item_order_whatever_the_workers(n: int) -> None:
    items = list(range(23))
    got = workers.run_all(_square_and_pid, items, n, weights=[(i * 7) % 5 for i in items])
    assert [r for r, _ in got] == [i * i for i in items]


def _wait_for(folder: Path, pattern: str) -> None:
    """Hold this process's first item until a child has left a mark: else this process
    may claim every item before a child is first scheduled (nothing would be tested)."""
    for _ in range(6000):
        if list(folder.glob(pattern)):
            return
        threading.Event().wait(0.01)
    raise AssertionError("no child ran")


def scenario_other_processes_do_part_of_the_work(tmp_path: Path) -> None:
    assert workers.can_fork()
    me = os.getpid()

    def fn(x: int) -> tuple[int, int]:
        if os.getpid() == me:
            _wait_for(tmp_path, "ran-*")
        else:
            (tmp_path / f"ran-{os.getpid()}").touch()
        return x, os.getpid()

    got = workers.run_all(fn, list(range(40)), 3)
    assert [x for x, _ in got] == list(range(40))
    assert len({pid for _, pid in got}) >= 2  # a child computed some


def scenario_a_failing_child_leaves_its_items_to_this_process(tmp_path: Path) -> None:
    me = os.getpid()

    def fn(x: int) -> int:
        if os.getpid() != me:
            (tmp_path / f"failed-{os.getpid()}").touch()
            raise RuntimeError("child")
        _wait_for(tmp_path, "failed-*")
        return x + 1

    assert workers.run_all(fn, list(range(12)), 3) == list(range(1, 13))


def scenario_an_error_here_stops_the_children_and_cleans_up(tmp_path: Path) -> None:
    tempfile.tempdir = str(tmp_path)
    me = os.getpid()

    def fn(x: int) -> int:
        if os.getpid() == me:
            raise ValueError("here")
        threading.Event().wait(120)  # a child holds its first item: this process gets one
        return x

    with pytest.raises(ValueError, match="here"):
        workers.run_all(fn, list(range(8)), 3)
    assert not list(tmp_path.iterdir())  # the claims folder is gone
    assert not workers._busy


def scenario_nested_work_runs_in_one_process(_tmp: Path) -> None:
    assert workers.can_fork()

    def inner(x: int) -> list[int]:
        return [pid for _, pid in workers.run_all(_square_and_pid, [x, x + 1, x + 2], 3)]

    for pids in workers.run_all(inner, list(range(6)), 3):
        assert len(set(pids)) == 1  # each nested run_all stayed in its process


def test_no_children_while_another_thread_runs() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not workers.can_fork()
        got = workers.run_all(_square_and_pid, list(range(10)), 4)
        assert {pid for _, pid in got} == {os.getpid()}
    finally:
        stop.set()
        other.join()


@pytest.mark.parametrize(("value", "expected"), [("1", 1), ("3", 3), ("-3", 1), ("0", 1),
                                                 ("9" * 30, 4 * workers.MAX_WORKERS)])
def test_the_variable_sets_the_processes(value: str, expected: int,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(workers.ENV, value)
    assert workers.wanted_workers() == expected


@pytest.mark.parametrize(("cores", "load", "expected"), [(2, 0.4, 2), (2, 1.2, 1), (2, 12.0, 1),
                                                     (16, 3.9, 13), (64, 0.0, 16)])
def test_unset_means_every_idle_core(cores: int, load: float, expected: int,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "usable_cores", lambda: cores)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    for unset in (None, "  "):
        if unset is None:
            monkeypatch.delenv(workers.ENV, raising=False)
        else:
            monkeypatch.setenv(workers.ENV, unset)
        assert workers.wanted_workers() == expected


def test_junk_in_the_variable_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(workers.ENV, "2.5")
    with pytest.raises(SourceError, match=r"GRAPHKIT_PARSE_WORKERS is '2\.5'"):
        workers.wanted_workers()


@pytest.mark.skipif(not LINUX, reason="children are forked on Linux only")
def test_other_processes_do_part_of_the_work(tmp_path: Path) -> None:
    _in_a_fresh_process("scenario_other_processes_do_part_of_the_work", tmp_path)


@pytest.mark.skipif(not LINUX, reason="children are forked on Linux only")
def test_a_failing_child_leaves_its_items_to_this_process(tmp_path: Path) -> None:
    _in_a_fresh_process("scenario_a_failing_child_leaves_its_items_to_this_process", tmp_path)


@pytest.mark.skipif(not LINUX, reason="children are forked on Linux only")
def test_an_error_here_stops_the_children_and_cleans_up(tmp_path: Path) -> None:
    _in_a_fresh_process("scenario_an_error_here_stops_the_children_and_cleans_up", tmp_path)


@pytest.mark.skipif(not LINUX, reason="children are forked on Linux only")
def test_nested_work_runs_in_one_process(tmp_path: Path) -> None:
    _in_a_fresh_process("scenario_nested_work_runs_in_one_process", tmp_path)
