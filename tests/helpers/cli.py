"""The one way the tests run the ``graphkit`` command.

:func:`graphkit` runs a command line in this process through click (fast: no interpreter
start, no imports again), or with ``process=True`` as a program of its own (``python -m
graphkit``), as a user's shell runs it; :func:`spawn` starts one and leaves it running;
:func:`on_a_terminal` runs one on a pseudo-terminal. A process is what a test needs when
the thing under test is the program itself: its exit (``os._exit``), signals, a closed
or full stdout, a terminal, what it imports, running as another user, or anything said
only by the interpreter (a traceback printed at exit, logging's last-resort handler).

In this process and in one of its own, :func:`graphkit` gives the same :class:`Ran`. In
this process an exception the command does not turn into its one-line error is raised in
the test, as it would have been a traceback: no test can mistake a crash for an exit
code.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
from collections.abc import Mapping
from contextlib import chdir
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.helpers.paths import REPO, SAMPLE_ROWS

# How a process of its own starts graphkit: as the program (``python -m graphkit``, which
# ends the process at once after a command that wrote everything: graphkit.cli.app.main),
# or by a script calling main(), which returns and lets the interpreter finish as usual
# (its teardown, where logging's last-resort handler and driver warnings would print).
AS_PROGRAM = ("-m", "graphkit")
AS_SCRIPT = ("-c", "from graphkit.cli import main; main()")


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
             process: bool = False, as_nobody: bool = False, timeout: float = 300,
             entry: tuple[str, ...] = AS_PROGRAM, **run: Any) -> Ran:
    """``graphkit ARGS``. ``env`` adds to (a value of None removes from) the environment;
    ``stdin`` is the text on its standard input; ``cwd`` its working folder. With
    ``process=True``, ``run`` goes to :func:`subprocess.run` (``stdout=`` a file of the
    test's, ``preexec_fn=`` a limit set in the child); what is not captured reads as "".
    ``entry`` is how the process starts graphkit (:data:`AS_PROGRAM` or :data:`AS_SCRIPT`).
    ``as_nobody=True`` runs the process as uid 65534 with ``cwd`` as its home
    (tests/helpers/unprivileged.py), so that permission bits hold even for root.
    """
    argv = [os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in args]
    if as_nobody:
        from tests.helpers.unprivileged import graphkit_as_nobody

        assert cwd is not None and not (env or run), "as nobody: only cwd is given"
        done = graphkit_as_nobody(*argv, cwd=Path(cwd))
        return Ran(done.returncode, done.stdout, done.stderr, done.stdout + done.stderr)
    if process:
        return _in_a_process(argv, env=env, stdin=stdin, cwd=cwd, timeout=timeout,
                             entry=entry, **run)
    assert not run, f"{sorted(run)} need a process of its own: process=True"
    from graphkit.cli import cli

    with chdir(cwd or os.getcwd()):
        result = CliRunner(env=dict(env or {})).invoke(cli, argv, input=stdin,
                                                       catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stdout, result.stderr, result.output)


def spawn(*args: object, env: Mapping[str, str | None] | None = None,
          cwd: Path | str | None = None, entry: tuple[str, ...] = AS_PROGRAM,
          prefix: tuple[str, ...] = (), **popen: Any) -> subprocess.Popen[str]:
    """``graphkit ARGS`` started as a program of its own and left running, for a test
    that talks to it while it runs (reads its lines, signals or kills it, closes its
    stdout). ``prefix`` runs it under another command (``unshare …``); ``popen`` goes to
    :class:`subprocess.Popen` (stdout and stderr are pipes unless given)."""
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    popen.setdefault("text", True)
    popen.setdefault("preexec_fn", _interruptible)
    return subprocess.Popen([*prefix, *_command(args, entry)], env=_environ(env), cwd=cwd,
                            **popen)


def _interruptible() -> None:
    """In the child: Ctrl-C (SIGINT) as at a terminal, whatever the test run inherited
    (a shell ignores it in commands it starts in the background, nohup or CI)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def on_a_terminal(args: list[str], *, stderr_tty: bool, stdout_tty: bool = False,
                  cwd: Path | None = None) -> tuple[str, str, int]:
    """Run a whole ``graphkit`` process with stderr, stdout or both on a pseudo-terminal
    (200 columns); what it wrote to stdout and stderr (the terminal's text for the one
    on it; both if both) and its exit code."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(_command(args), env=_environ({"COLUMNS": "200"}), cwd=cwd,
                            stdin=subprocess.DEVNULL,
                            stdout=slave if stdout_tty else subprocess.PIPE,
                            stderr=slave if stderr_tty else subprocess.PIPE)
    os.close(slave)
    captured = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # the process and its terminal are gone
            break
        if not chunk:
            break
        captured += chunk
    out, err = proc.communicate()
    os.close(master)
    text = captured.decode("utf-8", "replace")
    return (text if stdout_tty else out.decode(),
            text if stderr_tty else err.decode(), proc.returncode)


def _command(args: tuple[object, ...] | list[str],
             entry: tuple[str, ...] = AS_PROGRAM) -> list[str]:
    return [sys.executable, *entry,
            *(os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in args)]


def _environ(env: Mapping[str, str | None] | None) -> dict[str, str]:
    environ = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's graphkit
    for name, value in (env or {}).items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    return environ


def _in_a_process(argv: list[str], *, env: Mapping[str, str | None] | None,
                  stdin: str | None, cwd: Path | str | None, timeout: float,
                  entry: tuple[str, ...], **run: Any) -> Ran:
    if "stdout" not in run and "stderr" not in run:
        run["capture_output"] = True
    done = subprocess.run(_command(argv, entry), env=_environ(env), cwd=cwd, text=True,
                          errors="replace", input=stdin, timeout=timeout, check=False, **run)
    out, err = done.stdout or "", done.stderr or ""
    return Ran(done.returncode, out, err, out + err)


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


def no_neo4j_env(**more: str | None) -> dict[str, str | None]:
    """An ``env`` for :func:`graphkit` or :func:`spawn` that drops every ``NEO4J_*``
    variable of the test session (a user's own database is never touched), with ``more``."""
    return {**{k: None for k in os.environ if k.startswith("NEO4J_")}, **more}
