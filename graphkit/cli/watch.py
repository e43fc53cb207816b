"""``graphkit build --watch``: build, then rebuild in the same process whenever the sources
change, until Ctrl-C or SIGTERM.

Why a resident process: after one appended line, a transcript rebuild's own work is a
fraction of what a new ``graphkit build`` process pays to start (the interpreter, numpy
and pyarrow's imports: about half of an append, bench/PROFILE_NOTES.md "Incremental pass
9"). Here the imports, the contract and the caches stay warm between rebuilds.

Changes come from the OS's file events through ``watchfiles`` (Rust ``notify``: inotify,
FSEvents, ReadDirectoryChangesW), imported only here. An event only says *that* something
changed: each rebuild is an ordinary incremental build, which walks the sources' stat
itself and decides what to parse again, so a missed or extra event can cost a rebuild but
never make a wrong snapshot. Events that arrive while a rebuild runs wait in the watcher and
start the next rebuild. When the OS cannot watch that many folders (Linux's
``fs.inotify.max_user_watches``), or with ``--poll``, ``notify``'s polling watcher walks
the sources instead (network filesystems send no events from other machines either).

Signals: the first SIGINT/SIGTERM while waiting stops at once; during a rebuild it lets the
rebuild finish (its snapshot is written whole or not at all either way) and then stops,
exit code 0; a second one during a rebuild stops it at once (exit 130, the previous
snapshot left in place by the atomic swap).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from graphkit.core.errors import GraphkitError, printable
from graphkit.core.files import temp_prefix

# watchfiles' own grouping: once a change is seen, the watcher waits until no new change
# came for STEP_MS (a burst of appends is one rebuild), but never longer than DEBOUNCE_MS.
STEP_MS = 50
DEBOUNCE_MS = 1600


class Rebuild:
    """What one build told the watcher: its summary (None when it failed) and times."""

    __slots__ = ("cpu", "error", "seconds", "skipped", "summary")

    def __init__(self, summary: dict[str, Any] | None, skipped: list[dict[str, Any]],
                 seconds: float, cpu: float, error: str | None = None) -> None:
        self.summary, self.skipped, self.error = summary, skipped, error
        self.seconds, self.cpu = seconds, cpu


def own_outputs(paths: Sequence[Path | None]) -> Callable[[str], bool]:
    """A test of whether an event's path is something the build writes itself (the
    snapshot, its cache, rejects and skipped-lines files, the snapshot index, and their
    temporary ``.NAME.…`` siblings): a snapshot inside a watched folder must not start
    the next rebuild.

    >>> mine = own_outputs([Path("/t/out/graph")])
    >>> [mine(p) for p in ("/t/out/graph/nodes/x.parquet", "/t/out/.graph.cache/s",
    ...                    "/t/out/graphs.jsonl", "/t/out/.graph.graphkit-tmp-1/m")]
    [True, True, False, True]
    """
    outs = [os.path.abspath(p) for p in paths if p is not None]

    def mine(path: str) -> bool:
        for out in outs:
            if path == out or path.startswith(out + os.sep):
                return True
            parent, name = os.path.split(out)
            if path.startswith((os.path.join(parent, f".{name}."),
                                os.path.join(parent, temp_prefix(name)))):
                return True
        return False

    return mine


class _Signals:
    """SIGINT/SIGTERM: stop waiting at once; during a rebuild, stop after it (a second
    signal then interrupts it)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.busy = False

    def __call__(self, signum: int, _frame: Any) -> None:
        if self.busy and self.stop.is_set():
            raise KeyboardInterrupt
        self.stop.set()
        if self.busy:
            click.echo("stopping after this rebuild (again to stop now)", err=True)

    @contextmanager
    def installed(self) -> Iterator[None]:
        old = {s: signal.signal(s, self) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)


def _events(roots: list[str], ignore: Callable[[str], bool], stop: threading.Event,
            poll: float | None) -> tuple[Generator[set[Any], None, None], str]:
    """watchfiles' change sets for ``roots`` (an empty set every STEP_MS while nothing
    changes), started: the OS watches are in place when this returns. Polling when asked,
    or when the OS refuses that many watches."""
    from watchfiles import watch

    def start(polling: bool) -> Generator[set[Any], None, None]:
        events = watch(*roots, watch_filter=lambda _c, p: not ignore(p), debounce=DEBOUNCE_MS,
                       step=STEP_MS, stop_event=stop, rust_timeout=1, yield_on_timeout=True,
                       raise_interrupt=False, force_polling=polling,
                       poll_delay_ms=int((poll or 1.0) * 1000), recursive=True)
        next(events, None)  # the first (timeout) answer: the watcher exists now
        return events

    for root in roots:  # what a build says of it (watchfiles would raise first)
        if not os.path.exists(root):
            raise GraphkitError("no such file or folder", path=root, hint="check the path")
    if poll is not None:
        return start(True), f"polling every {poll:g} s"
    try:
        return start(False), "file events"
    except FileNotFoundError as exc:  # gone since the check above
        raise GraphkitError("no such file or folder", path=exc.filename or roots[0],
                            hint="check the path") from None
    except OSError as exc:
        # inotify's watch limit (fs.inotify.max_user_watches, 8192 on older kernels; a
        # watch per folder) or an instance limit: walk the sources instead.
        why = str(exc).split(". ")[0]  # notify's first sentence; then its debug dump
        click.echo(f"note: cannot watch the sources with file events ({printable(why)}); "
                   "polling every 1 s instead (raise fs.inotify.max_user_watches, or give "
                   "--poll SECONDS)", err=True)
        return start(True), "polling every 1 s"


def failed(exc: BaseException) -> str:
    """A failed rebuild's error as the one line ``graphkit build`` prints for it."""
    if isinstance(exc, click.ClickException):
        return exc.format_message()
    if isinstance(exc, OSError) and exc.filename is not None:
        return printable(f"{exc.filename}: {exc.strerror or exc}")
    return printable(str(exc))


def watch_builds(sources: Sequence[Path], ignore: Callable[[str], bool],
                 build: Callable[[], tuple[dict[str, Any], list[dict[str, Any]]]],
                 report: Callable[[int, int, Rebuild], None], poll: float | None) -> int:
    """Run ``build`` now and again after each batch of changes under ``sources`` until a
    signal; ``report(n, changed_paths, rebuild)`` after each. A rebuild that fails with an
    error a user can cause is reported and the watch goes on (the snapshot stays the last
    one written); the first build's error ends it, as a plain build's would. Returns the
    process's exit code."""
    roots = [str(Path(p).expanduser().resolve()) for p in sources]
    signals = _Signals()
    with signals.installed():
        events, how = _events(roots, ignore, signals.stop, poll)
        try:
            report(0, 0, _timed(build, signals))
            if not signals.stop.is_set():
                click.echo(f"watching {len(roots)} source(s) for changes ({how}); "
                           "Ctrl-C to stop", err=True)
            n = 0
            for changes in events:
                if signals.stop.is_set():
                    break
                if not changes:
                    continue
                n += 1
                try:
                    got = _timed(build, signals)
                except (GraphkitError, click.ClickException, OSError) as exc:
                    got = Rebuild(None, [], 0.0, 0.0, failed(exc))
                report(n, len({path for _c, path in changes}), got)
                if signals.stop.is_set():
                    break
        except KeyboardInterrupt:  # the second signal during a rebuild
            click.echo("stopped during a rebuild; the snapshot is the last one written",
                       err=True)
            return 130
        finally:
            events.close()  # watchfiles stops its watcher thread
    return 0


def _timed(build: Callable[[], tuple[dict[str, Any], list[dict[str, Any]]]],
           signals: _Signals) -> Rebuild:
    t0, c0 = time.perf_counter(), time.process_time()
    signals.busy = True
    try:
        summary, skipped = build()
    finally:
        signals.busy = False
    return Rebuild(summary, skipped, time.perf_counter() - t0, time.process_time() - c0)


def rebuild_line(n: int, changed: int, got: Rebuild) -> str:
    """One line for people: what a rebuild did and how long it took.

    >>> s = {"rows_read": 9, "nodes": {"A": 2}, "edges": {"E": 1}, "transcripts": {
    ...     "files_parsed": 1, "files_reused": 4, "groups_projected": 1, "groups_reused": 2,
    ...     "sessions_projected": 1, "sessions_reused": 5}}
    >>> rebuild_line(3, 1, Rebuild(s, [], 0.123, 0.1)).split("; ")
    ['rebuild 3 (1 changed path): 1 file parsed, 4 reused', '1 session projected, 5 kept', \
'2 nodes, 1 edge', 'snapshot written in 0.12 s']
    """
    head = f"rebuild {n} ({changed} changed path{'s' * (changed != 1)})"
    s = got.summary
    if s is None:
        return f"{head}: failed; the snapshot is the previous one"
    if s.get("snapshot_reused"):
        return f"{head}: nothing changed, snapshot kept in {got.seconds:.2f} s"
    parts = []
    tr = s.get("transcripts") or {}
    if tr:
        parts.append(f"{_n(tr['files_parsed'], 'file')} parsed, {tr['files_reused']} reused")
        if "sessions_projected" in tr:
            parts.append(f"{_n(tr['sessions_projected'], 'session')} projected, "
                         f"{tr['sessions_reused']} kept")
    else:
        parts.append(f"{_n(s['rows_read'], 'row')} read")
    parts.append(f"{_n(sum(s['nodes'].values()), 'node')}, "
                 f"{_n(sum(s['edges'].values()), 'edge')}")
    return f"{head}: " + "; ".join(parts) + f"; snapshot written in {got.seconds:.2f} s"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"
