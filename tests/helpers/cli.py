"""The one way the tests run the ``graphkit`` command.

:func:`graphkit` runs a command line in this process through click (fast: no interpreter
start, no imports again), or with ``process=True`` as a program of its own (``python -m
graphkit``), as a user's shell runs it. A process is what a test needs when the thing
under test is the program itself: its exit (``os._exit``), signals, a closed or full
stdout, a terminal, what it imports, running as another user, or anything said only by
the interpreter (a traceback printed at exit, logging's last-resort handler).

Both give the same :class:`Ran`. In this process an exception the command does not turn
into its one-line error is raised in the test, as it would have been a traceback: no
test can mistake a crash for an exit code.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from contextlib import chdir
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers.paths import REPO, SAMPLE_ROWS


@dataclass(frozen=True)
class Ran:
    """What a command line gave: its exit code, stdout and stderr (text), and ``output``,
    both as a user saw them (interleaved in this process; stdout then stderr from a
    process of its own)."""

    returncode: int
    stdout: str
    stderr: str
    output: str


def graphkit(*args: object, env: Mapping[str, str | None] | None = None,
             stdin: str | None = None, cwd: Path | str | None = None,
             process: bool = False, timeout: float = 300) -> Ran:
    """``graphkit ARGS``. ``env`` adds to (a value of None removes from) the environment;
    ``stdin`` is the text on its standard input; ``cwd`` its working folder."""
    argv = [os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in args]
    if process:
        return _in_a_process(argv, env=env, stdin=stdin, cwd=cwd, timeout=timeout)
    from graphkit.cli import cli

    with chdir(cwd or os.getcwd()):
        result = CliRunner(env=dict(env or {})).invoke(cli, argv, input=stdin,
                                                       catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stdout, result.stderr, result.output)


def _in_a_process(argv: list[str], *, env: Mapping[str, str | None] | None,
                  stdin: str | None, cwd: Path | str | None, timeout: float) -> Ran:
    environ = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's graphkit
    for name, value in (env or {}).items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    done = subprocess.run([sys.executable, "-m", "graphkit", *argv], env=environ, cwd=cwd,
                          capture_output=True, text=True, errors="replace", input=stdin,
                          timeout=timeout, check=False)
    return Ran(done.returncode, done.stdout, done.stderr, done.stdout + done.stderr)


def one_line_error(ran: Ran | subprocess.CompletedProcess[str], *names: str) -> str:
    """The single stderr line of an exit-2 refusal, checked to name each of ``names``."""
    assert ran.returncode == 2, ran.stderr
    assert "Traceback" not in ran.stderr
    lines = ran.stderr.splitlines()
    assert len(lines) == 1, lines
    for name in names:
        assert name in lines[0], lines[0]
    return lines[0]


def built_samples(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """The bundled sample rows built by the command into a new folder: a module's
    known-good snapshot to damage or query."""
    snap = tmp_path_factory.mktemp(name) / "snap"
    ran = graphkit("build", SAMPLE_ROWS, "--snapshot", snap)
    assert ran.returncode == 0, ran.stderr
    return snap
