"""The ``graphkit`` command group and what its commands share.

Each command parses its options, calls one library function and prints the
result. Errors a user can cause (:class:`~graphkit.core.errors.GraphkitError`)
become one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import ast
import errno
import gc
import json
import os
import re
import sys
from collections.abc import Callable, Collection, Iterable, Iterator, MutableMapping, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from graphkit.core.errors import GraphkitError, first_line, printable

if TYPE_CHECKING:
    from rich.console import Console

    from graphkit.core.progress import Progress
    from graphkit.enrich.base import LineageReader
    from graphkit.enrich.neo4j.store import Neo4jStore


class UserError(click.ClickException):
    """A :class:`GraphkitError` shown as one line, exit code 2."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        # One line whatever a path or value in it holds (GRAPHKIT_HOME="\n" split it).
        super().__init__(printable(message))


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


_QUIET = "graphkit.quiet"


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:
        ctx.meta[_QUIET] = True  # meta is shared by the group's and the command's context
    return value


def quiet_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``-q/--quiet``: no progress on stderr. The group and every command that shows
    progress take it, so ``graphkit -q build`` and ``graphkit build -q`` agree."""
    return click.option("-q", "--quiet", is_flag=True, expose_value=False, is_eager=True,
                        callback=_set_quiet,
                        help="Show no progress on stderr (it is shown only on a "
                             "terminal anyway).")(f)


@click.group(cls=_Group, commands=_Commands(dict(COMMAND_MODULES)))
@click.version_option(package_name="graphkit")
@quiet_option
def cli() -> None:
    """Build and query context graphs of AI agent sessions.

    Progress of long work (reading, checking, loading, exporting) goes to stderr
    when it is a terminal; -q/--quiet turns it off.

    Example: graphkit build samples/rows --snapshot out/graph
    """


# Every path argument and option. Not `readable=True`: graphkit says itself, in one
# line naming the path and the fix, what it cannot read; click's own check printed its
# three-line usage message instead.
PATH = click.Path(path_type=Path, readable=False)

_REFUSED_WHILE = {
    "pandas": "pyarrow._dataset", "cloudpickle": "pyarrow.lib",
    # pyarrow.fs binds each remote filesystem it was built with; graphkit reads and
    # writes local paths only (its sources are paths, never URIs).
    "pyarrow._azurefs": "pyarrow.fs", "pyarrow._gcsfs": "pyarrow.fs",
    "pyarrow._hdfs": "pyarrow.fs", "pyarrow._s3fs": "pyarrow.fs",
    # pyarrow.dataset binds ORC and Parquet encryption; graphkit reads neither.
    "pyarrow._dataset_orc": "pyarrow.dataset",
    "pyarrow._dataset_parquet_encryption": "pyarrow.dataset",
}


class _NotForPyarrow:
    """An import hook: while pyarrow loads, it imports modules no graphkit command uses,
    and this refuses those imports, as if they were not installed (pyarrow supports that
    for each: it guards them all with ``except ImportError``): pandas, which
    ``pyarrow.dataset`` imports (0.3-2 s, a third of a command's start); cloudpickle,
    which ``pyarrow.lib`` binds as ``pickle`` for pickling Python extension types and
    else falls back to the standard pickle (~6-7 ms of an incremental build's imports);
    the Azure, GCS, HDFS and S3 filesystems ``pyarrow.fs`` binds and the ORC and Parquet
    encryption formats ``pyarrow.dataset`` binds (~5 CPU-ms of every build, which
    loads both for Parquet and ``group_by``). Any other import of them is left alone;
    pyarrow's later question about pandas objects is :class:`NoPandas`'s
    (graphkit.core.lazy), outside Spark."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        loader = _REFUSED_WHILE.get(name)
        if loader is not None:
            loading = sys.modules.get(loader)
            if loading is not None and getattr(loading.__spec__, "_initializing", False):
                raise ModuleNotFoundError(f"graphkit: {name} not loaded for {loader}",
                                          name=name)


def main() -> None:
    """Console-script entry point (and ``python -m graphkit``'s). As the program, it ends
    the process itself after a command that said :func:`all_written` succeeded."""
    # jemalloc hands freed memory back to the OS where the system allocator
    # keeps it: a 1M-row build peaks ~20% lower. Set before pyarrow loads,
    # and only for the command line; a library caller keeps its own choice.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
    # numpy's OpenBLAS starts a thread per core when numpy is imported (pyarrow imports
    # it), and they spin-wait for work that never comes: graphkit calls no BLAS routine.
    # ~0.05 CPU-s and wall on every command that loads pyarrow; read when OpenBLAS loads.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # A closed stdout or stderr (`graphkit … >&-`) discards, as /dev/null would, rather
    # than failing where a command asks it isatty().
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115 (lives as long as we do)
    sys.meta_path.insert(0, _NotForPyarrow())
    if not any(arg.startswith("--engine") for arg in sys.argv[1:]):
        # Only Spark (--engine spark) uses pandas; without it pyarrow's question whether
        # a list is a pandas object cost ~0.2 s of every command's start (NoPandas).
        from graphkit.core.lazy import NoPandas

        sys.meta_path.insert(0, NoPandas())
    # The cyclic collector ran every 700 allocations and rescanned what a command keeps
    # (its modules' objects, the walk of 9k transcript files, decoded records): ~0.09 of an
    # incremental build's 1.3 CPU-s. Reference counting frees what commands allocate;
    # the collector still runs, every 100k (as the transcript parser's threshold).
    gc.set_threshold(100_000, 50, 100)
    _written.clear()
    program = _is_program(sys._getframe(1))
    try:
        cli(prog_name="graphkit")
    except SystemExit as exc:
        if program and exc.code in (0, None) and _written:
            _leave_now()
        raise


# Set by a command whose work is all written and closed (see all_written()).
_written: list[bool] = []


def all_written() -> None:
    """Say that the running command's outputs are all written, flushed and closed and
    nothing of it runs on: when it then ends with exit code 0, :func:`main` ends the
    process at once (:func:`_leave_now`) rather than by the interpreter's teardown.
    Only :func:`main` reads it, and only when it is the program (:func:`_is_program`):
    a command invoked by a test runner or a script returns as ever."""
    _written.append(True)


def _is_program(caller: Any) -> bool:
    """Whether :func:`main` was called as the program itself: by the ``graphkit`` console
    script or ``python -m graphkit`` (``graphkit.cli``), which end the process when it
    returns. A script of one's own that calls it and goes on is not ended early."""
    if caller.f_globals.get("__name__") != "__main__" or caller.f_code.co_name != "<module>":
        return False
    spec = caller.f_globals.get("__spec__")
    if spec is not None:
        return spec.name in ("graphkit.__main__", "graphkit.cli.__main__")
    script = caller.f_code.co_filename
    return script == sys.argv[0] and Path(script).name == "graphkit"


def _leave_now() -> None:
    """End a finished command's process with ``os._exit(0)``, skipping the rest of
    Python's finalization (freeing every module and object one by one; see
    bench/PROFILE_NOTES.md, build pass 11, for what it costs a 1M-row build). What a
    normal exit does before that is done first, in its order: the threading module's
    shutdown (its exit callbacks, and a wait for any thread other than a daemon), the
    exit handlers, a flush of stdout and stderr. Where stdout or stderr cannot be
    flushed (a reader that left) it returns, and the normal exit goes on."""
    import atexit
    import threading

    shutdown = getattr(threading, "_shutdown", None)  # what finalization calls first
    try:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except (OSError, ValueError):
        return
    if shutdown is None:
        return
    shutdown()
    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except (OSError, ValueError):
        os._exit(120)  # Python's own exit status when its last flush fails
    os._exit(0)


def err(message: str) -> None:
    """A line on stderr (progress notes and warnings; stdout stays data), one line
    whatever a file name or id in it holds."""
    click.echo(printable(message), err=True)


def quiet() -> bool:
    """Whether -q/--quiet was given (to the group or the command)."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(_QUIET))


@contextmanager
def progress(enabled: bool = True, console: Console | None = None) -> Iterator[Progress]:
    """Progress bars and notes (:mod:`graphkit.cli.bars`) while the block runs, on
    ``console`` or else on stderr when it is a terminal; nothing with ``--quiet``, when
    stderr is piped, or when not ``enabled``. Yields what library calls take as
    ``progress=`` (also callable with a string, as the older callbacks were)."""
    from graphkit.core.progress import NO_PROGRESS

    if not enabled or quiet() or (console is None and not is_terminal()):
        yield NO_PROGRESS
        return
    from graphkit.cli.bars import RichProgress

    with RichProgress(console) as shown:
        yield shown


def echo_json(obj: Any) -> None:
    """One JSON document on one line of stdout."""
    click.echo(json.dumps(obj, default=str))


# Read commands print JSON Lines: one object per line, every object shaped
# {"record": KIND, ...that record's fields} (KIND is session, lineage, tree,
# node, edge or diff), so a pipe can mix and filter them by one key.
def format_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--json`` (JSON Lines) and ``--csv`` (a header row, then one row per record)."""
    f = click.option("--csv", "as_csv", is_flag=True,
                     help="Print CSV: a header row, then one row per record.")(f)
    return click.option("--json", "as_json", is_flag=True,
                        help='Print JSON Lines: one {"record": KIND, ...} object per line.')(f)


def output_format(as_json: bool, as_csv: bool) -> str:
    """``json``, ``csv`` or ``text`` from the two flags (never both)."""
    if as_json and as_csv:
        raise UserError("give --json or --csv, not both")
    return "json" if as_json else "csv" if as_csv else "text"


def echo_records(records: Iterable[dict[str, Any]]) -> None:
    """JSON Lines on stdout, one record per line."""
    # One encoder for all: json.dumps with `default` makes one per record.
    encode = json.JSONEncoder(default=str).encode
    echo_lines(encode(rec) for rec in records)


def echo_lines(lines: Iterable[str], chunk: int = 4096) -> None:
    """Lines on stdout, written a few thousand at a time: one write per line costs
    more than making the line, and one write of all would hold a large answer back."""
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= chunk:
            click.echo("\n".join(batch))
            batch.clear()
    if batch:
        click.echo("\n".join(batch))


def shown(value: object) -> str:
    """``value`` as text for a person's screen: control characters as escapes
    (``\\x1b``, ``\\n``), so an id or path holding ESC cannot drive the terminal
    (set its title, clear it, recolour what follows) nor a newline split a line."""
    return printable(str(value))


def tsv_line(cells: Sequence[object]) -> str:
    """One line of the TSV piped commands print: tabs and newlines inside a value
    become spaces (they would break the columns a pipe reads), other control
    characters escapes (:func:`shown`)."""
    return "\t".join(shown(str(c).replace("\t", " ").replace("\n", " ")) if c is not None
                     else "" for c in cells)


def _cell(value: object) -> str:
    # Tabs, newlines and other control characters would break the columns.
    text = "" if value is None else str(value)
    return text if text.isprintable() else "".join(c if c.isprintable() else " " for c in text)


def _width(text: str) -> int:
    if text.isascii():
        return len(text)
    from rich.cells import cell_len  # wide (CJK) and zero-width characters

    return cell_len(text)


def table_lines(columns: Sequence[str], rows: Iterable[Sequence[object]], *,
                right: Collection[str] = (), bold: bool = False) -> list[str]:
    """An aligned text table: the header, a rule, then one line per row, columns two
    spaces apart, ``right`` columns right-aligned, nothing cut. Time grows with the
    cells alone (a rich Table over 24k sessions took 7-8× the CPU of ``--json``).

    >>> for line in table_lines(["id", "n"], [["a", 1], ["bcd", 22]], right={"n"}):
    ...     print(line)
    id    n
    ───  ──
    a     1
    bcd  22
    """
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([_width(c)] + [_width(r[i]) for r in cells]) for i, c in enumerate(columns)]
    flags = [c in right for c in columns]

    def line(values: Sequence[str]) -> str:
        return "  ".join((" " * (w - _width(v)) + v) if r else (v + " " * (w - _width(v)))
                         for v, w, r in zip(values, widths, flags, strict=True)).rstrip()

    head = line(list(columns))
    out = [f"\x1b[1m{head}\x1b[0m" if bold else head, "  ".join("─" * w for w in widths)]
    out += [line(r) for r in cells]
    return out


def echo_table(columns: Sequence[str], rows: Iterable[Sequence[object]], *,
               right: Collection[str] = ()) -> None:
    """:func:`table_lines` on stdout (the header bold on a terminal)."""
    echo_lines(table_lines(columns, rows, right=right, bold=sys.stdout.isatty()))


def echo_csv(columns: Sequence[str], rows: Iterable[dict[str, Any]]) -> None:
    """CSV on stdout: ``columns`` as the header, then each row's values (lists and
    maps as JSON text, missing values empty; text that starts like a spreadsheet
    formula quoted as OWASP says, :func:`~graphkit.core.text.csv_cell`)."""
    import csv
    import io

    from graphkit.core.text import csv_cell

    def cell(value: Any) -> Any:
        if value is None:
            return ""
        if isinstance(value, dict | list):
            value = json.dumps(value, default=str)
        return csv_cell(value) if isinstance(value, str) else value

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")

    def flush() -> None:  # in chunks, so a large answer streams
        click.echo(buf.getvalue(), nl=False)
        buf.seek(0)
        buf.truncate()

    w.writerow([csv_cell(c) for c in columns])
    flush()
    for i, r in enumerate(rows, 1):
        w.writerow([cell(r.get(c)) for c in columns])
        if i % 4096 == 0:
            flush()
    flush()


_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400}
_AGO = re.compile(r"^(\d+|an?|one)\s*(second|minute|hour|day|week)s?\s+ago$")


def parse_when(value: str | None, option: str = "--since", *, end: bool = False,
               now: datetime | None = None) -> datetime | None:
    """A ``--since``/``--until`` value as a UTC instant: an ISO date or timestamp
    (UTC when no zone is given), ``now``, ``today``, ``yesterday`` or ``N
    minutes|hours|days|weeks ago``. A bare day (a date, today, yesterday) means
    its start, or with ``end`` its last microsecond, so ``--until 2026-11-20``
    keeps that whole day.

    >>> n = datetime(2026, 12, 1, 15, 30, tzinfo=UTC)
    >>> parse_when("yesterday", now=n).isoformat()
    '2026-11-30T00:00:00+00:00'
    >>> parse_when("7 days ago", now=n).isoformat()
    '2026-11-24T15:30:00+00:00'
    >>> parse_when("2026-11-20", "--until", end=True).isoformat()
    '2026-11-20T23:59:59.999999+00:00'
    """
    if value is None:
        return None
    now = now or datetime.now(UTC)
    text = " ".join(value.strip().lower().split())
    day: datetime | None = None
    if text == "now":
        return now
    if text in ("today", "yesterday"):
        day = now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(
            days=text == "yesterday")
    elif m := _AGO.match(text):
        # Twelve digits of weeks already reach before year 1; int() refuses past 4,300.
        digits = m.group(1).lstrip("0") or "0"
        n = 1 if m.group(1) in ("a", "an", "one") else int(digits) if len(digits) <= 30 \
            else 10 ** 30
        try:
            return now - timedelta(seconds=n * _UNITS[m.group(2)])
        except OverflowError:  # before year 1
            raise UserError(f"{option} {value!r} is before year 1") from None
    else:
        base, zone_name = value.strip(), None
        try:
            when = datetime.fromisoformat(base)
        except ValueError:
            from graphkit.core.zones import split_zone

            parts = split_zone(base)
            if parts is None:
                raise UserError(f"{option} {value!r} is not a time; use YYYY-MM-DD, an ISO "
                                "timestamp (with an offset or an IANA zone name: "
                                "2026-11-20T10:00 Europe/Berlin), today, yesterday or "
                                "'7 days ago'") from None
            base, zone_name = parts
            try:
                when = datetime.fromisoformat(base)
            except ValueError:
                raise UserError(f"{option} {value!r} is not a time; use YYYY-MM-DD or an "
                                f"ISO timestamp before the zone {zone_name!r}") from None
        if zone_name is not None:
            return _zoned(when, zone_name, len(base) <= 10, end, option, value)
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
        if len(base) > 10:
            return when
        day = when
    return day + timedelta(days=1, microseconds=-1) if end else day


def _zoned(when: datetime, name: str, bare_day: bool, end: bool, option: str,
           value: str) -> datetime:
    """``when`` in the IANA zone ``name`` as a UTC instant; a bare day is that day there
    (its start, or with ``end`` its last microsecond: 23 or 25 hours on a DST day)."""
    from graphkit.core.zones import ZoneError, in_zone, zone

    try:
        tz = zone(name)
        if not bare_day:
            return in_zone(when, tz)
        if end:
            return in_zone(when + timedelta(days=1), tz) - timedelta(microseconds=1)
        return in_zone(when, tz)
    except ZoneError as exc:
        raise UserError(f"{option} {value!r}: {exc}") from None
    except OverflowError:
        raise UserError(f"{option} {value!r} is outside the years 1 to 9999") from None


def parse_since(value: str | None) -> datetime | None:
    """``--since``'s value (see :func:`parse_when`)."""
    return parse_when(value, "--since")


def time_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--since`` and ``--until``: only records (or, of a built graph, nodes
    and edges active) in that time, on record timestamps."""
    f = click.option("--until", help="Only records at or before this time: YYYY-MM-DD (the "
                                     "whole day), an ISO timestamp (an offset or an IANA "
                                     "zone after it: 2026-11-20T18:00 Europe/Berlin), "
                                     "today, yesterday, '2 hours ago' (UTC).")(f)
    return click.option("--since", help="Only records at or after this time: YYYY-MM-DD, an "
                                        "ISO timestamp (an offset or an IANA zone after "
                                        "it: 2026-11-20T10:00 Europe/Berlin), today, "
                                        "yesterday, '7 days ago' (UTC).")(f)


def window(since: str | None, until: str | None) -> tuple[datetime | None, datetime | None]:
    """The (since, until) instants of the two options."""
    lo, hi = parse_when(since, "--since"), parse_when(until, "--until", end=True)
    if lo is not None and hi is not None and lo > hi:
        raise UserError(f"--since {since!r} is after --until {until!r}")
    return lo, hi


def password_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--ask-password``: prompt for the Neo4j password instead of NEO4J_PASSWORD."""
    return click.option("--ask-password", is_flag=True,
                        help="Prompt for the Neo4j password instead of reading "
                             "NEO4J_PASSWORD.")(f)


def neo4j_store(ask_password: bool, **kwargs: Any) -> Neo4jStore:
    """A Neo4j store from NEO4J_* (the password optionally prompted, never echoed).

    Use it in a ``with``: entering checks the connection, leaving closes it.
    """
    from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore

    password = click.prompt("Neo4j password", hide_input=True) if ask_password else None
    return Neo4jStore(Neo4jConfig.from_env(password=password), **kwargs)


def store_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--snapshot DIR`` or ``--neo4j`` (with ``--ask-password``): which graph to ask."""
    f = password_option(f)
    f = click.option("--neo4j", is_flag=True,
                     help="Ask the Neo4j server named by NEO4J_URI/NEO4J_USERNAME/"
                          "NEO4J_PASSWORD/NEO4J_DATABASE instead of a snapshot.")(f)
    return click.option("--snapshot", "snapshot_dir",
                        type=PATH,
                        help="The snapshot folder to read (default: the latest snapshot "
                             "built from your own ~/.claude and ~/.codex history, from "
                             "the snapshot index).")(f)


def warn_unfinished_loads(neo: Neo4jStore) -> None:
    """A warning on stderr (even with --quiet: it is about the answer, not progress)
    while a load into the database has not finished: its graph is incomplete, and an
    answer read from it would otherwise look whole."""
    from graphkit.enrich.neo4j.lock import describe, running_loads

    unfinished = neo.unfinished_loads()
    if not unfinished:
        return
    first = unfinished[0]
    how = (f"`graphkit load --if-exists {first['mode']}` started {first['started_at']}"
           + (f" by pid {first['pid']} on {first['host']}" if first.get("host") else ""))
    running = running_loads(neo)
    state = (f"is running now ({describe(running[0])})" if running else
             "did not finish (killed or failed); run it again to complete the graph")
    more = f" (and {len(unfinished) - 1} more)" if len(unfinished) > 1 else ""
    err(f"warning: the graph in {neo.config.display_uri} is incomplete: {how}{more} {state}")


@contextmanager
def open_reader(snapshot_dir: Path | None, neo4j: bool,
                ask_password: bool = False) -> Iterator[LineageReader]:
    """The store a query command asks: a snapshot read in place, or Neo4j."""
    if neo4j and snapshot_dir is not None:
        raise UserError("give --snapshot DIR or --neo4j, not both")
    if neo4j:
        with neo4j_store(ask_password) as neo:
            warn_unfinished_loads(neo)
            yield neo
        return
    if snapshot_dir is None:
        snapshot_dir = latest_own_snapshot()
    from graphkit.enrich.snapshot_store import SnapshotReader

    # Straight from the Arrow tables, not through NetworkX: a user at the
    # prompt asking about one id should not wait for a whole graph to load.
    yield SnapshotReader(snapshot_dir)


def latest_own_snapshot() -> Path:
    """The latest snapshot built from the user's own transcript folders, from the
    snapshot index (named on stderr, so the answer's source is never a guess)."""
    from graphkit.snapshot.index import SnapshotIndex
    from graphkit.sources.transcripts import default_transcript_roots

    idx = SnapshotIndex.load()
    if idx.problem:
        err(idx.problem)
    roots = default_transcript_roots()
    entry = idx.latest(roots) if roots else None
    if entry is None:
        mine = ", ".join(str(p) for p in roots) or "~/.claude/projects, ~/.codex/sessions"
        raise UserError(f"give --snapshot DIR (or --neo4j): the snapshot index ({idx.path}) "
                        f"has no build of your own history ({mine}) yet; "
                        "`graphkit build --snapshot DIR` makes one")
    err(f"using {entry['snapshot']} (built {entry.get('built_at', '?')} from "
        + ", ".join(entry["sources"]) + ")")
    return Path(entry["snapshot"])


def default_sources() -> list[Path]:
    """The user's own transcript folders, for commands given no SOURCE."""
    from graphkit.sources.transcripts import default_transcript_roots

    paths = default_transcript_roots()
    if not paths:
        raise UserError("no SOURCE given and no ~/.claude/projects or ~/.codex/sessions "
                        "found; name a file or folder to read")
    err("reading " + ", ".join(str(p) for p in paths))
    return paths


def is_terminal() -> bool:
    """Whether stderr is a terminal (progress is shown only there)."""
    return sys.stderr.isatty()
