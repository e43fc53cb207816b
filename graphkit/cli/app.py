"""The ``graphkit`` command group: which module holds each command, how a user's
mistake becomes one line, and the program's entry point.

Each command parses its options, makes one call to the public API (:mod:`graphkit`)
and prints the result (:mod:`graphkit.cli.render`). Errors a user can cause
(:class:`~graphkit.core.errors.GraphkitError`) become one line on stderr and exit
code 2, never a traceback. The module imports only click and the leaf modules of
graphkit.cli: ``graphkit --help`` and a query pay for nothing else.
"""

from __future__ import annotations

import ast
import errno
import os
import re
import sys
from collections.abc import Iterator, MutableMapping
from contextlib import suppress
from importlib import import_module
from typing import Any

import click

from graphkit import __version__
from graphkit.cli import process
from graphkit.cli.errors import UserError
from graphkit.cli.options import quiet_option
from graphkit.core.errors import GraphkitError, first_line, printable

# What a link loop is, and what to do about it.
_LOOP = ("a symbolic link that leads back to itself (a link loop); point it at a file or "
         "folder, or leave it out")


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GraphkitError as exc:
            # One line whatever a file name or id holds (newlines, terminal escapes).
            raise UserError(printable(str(exc))) from None
        except UnicodeEncodeError as exc:
            # A name given in bytes that are not UTF-8 (Python holds them as lone
            # surrogates): Arrow's file system takes only UTF-8 paths, so a snapshot, a
            # folder export or a transcript folder so named stopped with a traceback.
            if not isinstance(exc.object, str) or exc.reason != "surrogates not allowed":
                raise
            raise UserError(printable(
                f"{os.fsencode(exc.object).decode('utf-8', 'replace')}: this name is not "
                "valid UTF-8 (bytes of another encoding); rename it, or choose a name "
                "in UTF-8")) from None
        except RuntimeError as exc:
            # Python 3.11's Path.resolve() says a link loop so (no OSError): a source
            # that is a link to itself was a traceback from the build's input check.
            found = re.fullmatch(r"Symlink loop from ('.*'|\".*\")", str(exc))
            if found is None:
                raise
            raise UserError(printable(f"{ast.literal_eval(found.group(1))}: {_LOOP}")) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP and exc.filename:
                raise UserError(printable(f"{os.fsdecode(exc.filename)}: {_LOOP}")) from None
            if exc.errno == errno.EPIPE:
                _reader_left()
            if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG):
                # Files graphkit writes say so themselves; what is left is stdout, or
                # a write whose error names no file (Arrow's): said as such, not
                # blamed on stdout (round eight: a full cache folder read "stdout").
                reason = exc.strerror or first_line(exc)
                if exc.filename:
                    raise UserError(printable(f"{exc.filename}: cannot write: {reason}; "
                                              "free some space")) from None
                raise UserError(printable(f"cannot write: {reason}; free some space where "
                                          "the output goes (stdout, or the file or folder "
                                          "being written)")) from None
            if exc.errno == errno.ENAMETOOLONG and exc.filename:
                # Python 3.11's Path.exists()/is_dir() raise it (they pass over only
                # "no such file"): a path argument past 255 bytes a name or 4096 in all
                # was a traceback wherever it was first looked at.
                name = os.fsdecode(exc.filename)
                shown_name = name if len(name) <= 120 else f"{name[:60]}…{name[-40:]}"
                raise UserError(printable(
                    f"{shown_name}: {exc.strerror} (a file name may have at most "
                    "255 bytes, a path 4,096); choose a shorter name")) from None
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and exc.filename:
                # A file or folder the user may not read or write, met where no reader
                # says so in words of its own: still one line naming it.
                raise UserError(printable(
                    f"{exc.filename}: {exc.strerror}; check the permissions of the path "
                    "and the folders above it")) from None
            raise


# The module of graphkit.cli that registers each command. A command line imports only the
# module of the command it runs: `graphkit build` need not load the export formats' registry,
# the query, usage, view and Neo4j commands (~30 ms of `-X importtime` at load 3).
COMMAND_MODULES = {
    "build": "build", "check": "build", "rows": "build",
    "export": "export", "snapshot": "export",
    "load": "neo4j", "neo4j-server": "neo4j",
    "lineage": "query", "sessions": "query", "tree": "query",
    "files": "usage", "usage": "usage",
    "diff": "view", "view": "view",
    "mcp": "mcp",
}


class _Commands(MutableMapping[str, click.Command]):
    """The group's ``commands``: a command whose module is not imported yet is imported
    when it is asked for by name; iterating or counting imports them all first (``--help``,
    a misspelt command's suggestions, and readers of ``cli.commands``, which so always see
    every command)."""

    def __init__(self, modules: dict[str, str]) -> None:
        self._modules = modules
        self._known: dict[str, click.Command] = {}

    def _load(self, module: str) -> None:
        import_module(f"graphkit.cli.{module}")  # its @cli.command()s register themselves

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._known and name in self._modules:
            self._load(self._modules[name])
        return self._known[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._known[name] = command

    def __delitem__(self, name: str) -> None:
        del self._known[name]
        self._modules.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        for module in sorted(set(self._modules.values())):
            self._load(module)
        return iter(self._known)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _reader_left() -> None:
    """The reader of our stdout closed it (``graphkit … | head``): its choice, not an
    error. Stop quietly with exit 0; stdout goes to /dev/null so the final flush at exit
    cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    with suppress(OSError, ValueError):
        os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(0)


@click.group(cls=_Group, commands=_Commands(dict(COMMAND_MODULES)))
# The version from the package itself, not the installed distribution's metadata: the
# distribution is `agent-graphkit`, and a checkout on PYTHONPATH has none.
@click.version_option(version=__version__)
@quiet_option
def cli() -> None:
    """Build and query context graphs of AI agent sessions.

    Progress of long work (reading, checking, loading, exporting) goes to stderr
    when it is a terminal; -q/--quiet turns it off.

    Example: graphkit build samples/rows --snapshot out/graph
    """


def main() -> None:
    """Console-script entry point (and ``python -m graphkit``'s). As the program, it ends
    the process itself after a command that said
    :func:`~graphkit.cli.process.all_written` succeeded."""
    process.prepare(sys.argv[1:])
    program = process.is_program(sys._getframe(1))
    try:
        cli(prog_name="graphkit")
    except SystemExit as exc:
        if program and exc.code in (0, None) and process.finished():
            process.leave_now()
        raise
