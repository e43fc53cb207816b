"""How a ``graphkit build`` process ends (build pass 11): once the build is written and its
summary printed, the command-line program leaves by ``os._exit`` after the exit handlers
and a flush, without the rest of the interpreter's finalization; every output is complete,
errors and scripts calling ``main()`` end as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.helpers.cli import graphkit
from tests.helpers.paths import REPO

# Marks, on stderr, the steps of the interpreter's end: the threading module's shutdown
# callbacks and the exit handlers (both ways out run them), and an end by os._exit (only
# the way out that skips the rest of the finalization).
_MARKS = """
import atexit, os, threading
threading._register_atexit(lambda: os.write(2, b"mark: threading shutdown\\n"))
atexit.register(lambda: os.write(2, b"mark: exit handlers\\n"))
_exit = os._exit
def _marked_exit(code):
    os.write(2, b"mark: os._exit %d\\n" % code)
    _exit(code)
os._exit = _marked_exit
"""

_NORMAL_END = ["mark: threading shutdown", "mark: exit handlers"]
_EARLY_END = [*_NORMAL_END, "mark: os._exit 0"]


# What pip writes as the ``graphkit`` console script.
_CONSOLE_SCRIPT = """import re
import sys
from graphkit.cli import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""


def _env(tmp_path: Path) -> dict[str, str]:
    marks = tmp_path / "marks"
    marks.mkdir(exist_ok=True)
    (marks / "sitecustomize.py").write_text(_MARKS)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(marks), str(REPO)])}


def _run(tmp_path: Path, how: str, *args: str, code: str | None = None
         ) -> subprocess.CompletedProcess[str]:
    if how == "module":
        cmd = [sys.executable, "-m", "graphkit", *args]
    elif how == "console script":
        script = tmp_path / "bin" / "graphkit"
        script.parent.mkdir(exist_ok=True)
        script.write_text(_CONSOLE_SCRIPT)
        cmd = [sys.executable, str(script), *args]
    else:
        assert code is not None
        cmd = [sys.executable, "-c", code, *args]
    # From the tests' temporary folder: not the repo, whose graphkit would be found first.
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path,
                          env=_env(tmp_path), timeout=300)


def _tables(snapshot: Path) -> dict[str, object]:
    return {str(f.relative_to(snapshot)): pq.read_table(f)
            for f in sorted(snapshot.rglob("*.parquet"))}


@pytest.mark.slow
@pytest.mark.parametrize("how", ["module", "console script"])
def test_a_finished_build_leaves_without_the_interpreters_teardown(
        tmp_path: Path, sample_rows: Path, how: str) -> None:
    snap = tmp_path / "snap"
    done = _run(tmp_path, how, "build", str(sample_rows), "--snapshot", str(snap), "--json")
    assert done.returncode == 0, done.stderr
    # The exit steps ran in a normal exit's order, then os._exit ended the process.
    assert done.stderr.splitlines()[-3:] == _EARLY_END
    summary = json.loads(done.stdout)  # the whole summary, flushed before the exit
    # Every file is complete: the same graph as a build in this process, which returns.
    again = tmp_path / "again"
    ran = graphkit("build", sample_rows, "--snapshot", again, "--json")
    assert ran.returncode == 0, ran.output
    assert summary["nodes"] == json.loads(ran.output)["nodes"]
    assert summary["edges"] == json.loads(ran.output)["edges"]
    ours, theirs = _tables(snap), _tables(again)
    assert list(ours) == list(theirs) and ours
    assert all(ours[k].equals(theirs[k]) for k in ours)
    manifests = [json.loads((d / "manifest.json").read_text()) for d in (snap, again)]
    assert manifests[0]["counts"] == manifests[1]["counts"] and manifests[0]["nodes"]
    # The build's record and cache were written too: the next build keeps the snapshot.
    kept = _run(tmp_path, how, "build", str(sample_rows), "--snapshot", str(snap))
    assert kept.returncode == 0, kept.stderr
    assert "snapshot kept" in kept.stdout.splitlines()[-1]


_SCRIPT = """
import sys
sys.argv = ["graphkit", *sys.argv[1:]]
from graphkit.cli import main
try:
    main()
except SystemExit as exc:
    print("main returned", exc.code)
"""


@pytest.mark.slow
def test_a_script_calling_main_goes_on_after_it(tmp_path: Path, sample_rows: Path) -> None:
    # Only the program itself leaves early: a script that calls main() runs on, and ends
    # through the whole finalization.
    done = _run(tmp_path, "script", "build", str(sample_rows), "--snapshot",
                str(tmp_path / "snap"), "--json", code=_SCRIPT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "main returned 0"
    assert done.stderr.splitlines()[-2:] == _NORMAL_END


@pytest.mark.slow
def test_a_failed_build_still_says_why_and_exits_2(tmp_path: Path) -> None:
    done = _run(tmp_path, "module", "build", str(tmp_path / "missing"), "--snapshot",
                str(tmp_path / "snap"))
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0].startswith("Error: ") and "missing" in lines[0]
    assert lines[1:] == _NORMAL_END
    assert not (tmp_path / "snap").exists()


_THREAD = """
import os, sys, threading, time
from graphkit.cli import process

def late():
    time.sleep(0.3)
    os.write(1, b"thread finished\\n")

threading.Thread(target=late).start()  # not a daemon: a normal exit waits for it
print("leaving", flush=True)
process.leave_now()
print("not reached")
"""


@pytest.mark.slow
def test_leaving_waits_for_a_running_thread_and_runs_the_exit_handlers(tmp_path: Path) -> None:
    done = _run(tmp_path, "script", code=_THREAD)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["leaving", "thread finished"]
    assert done.stderr.splitlines() == _EARLY_END


_UNFLUSHED = """
import sys
from graphkit.cli import process

sys.stdout.write("held in the buffer")  # no newline, no flush
process.leave_now()
"""


def test_leaving_flushes_what_stdout_holds(tmp_path: Path) -> None:
    done = _run(tmp_path, "script", code=_UNFLUSHED)
    assert done.returncode == 0 and done.stdout == "held in the buffer"
    assert done.stderr.splitlines() == _EARLY_END
