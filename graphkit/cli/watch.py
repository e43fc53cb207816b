"""``graphkit build --watch``: build, then rebuild in the same process whenever the sources
change, until Ctrl-C or SIGTERM.

Why a resident process: after one appended line, a transcript rebuild's own work is a
fraction of what a new ``graphkit build`` process pays to start (the interpreter, numpy
and pyarrow's imports: about half of an append, bench/PROFILE_NOTES.md at d9272aa "Incremental pass
9"). Here the imports, the contract and the caches stay warm between rebuilds.

Changes come from the OS's file events through ``watchfiles`` (Rust ``notify``: inotify,
FSEvents, ReadDirectoryChangesW), imported only here. An event only says *that* something
changed: each rebuild is an ordinary incremental build, which walks the sources' stat
itself and decides what to parse again, so a missed or extra event can cost a rebuild but
never make a wrong snapshot. Events that arrive while a rebuild runs wait in the watcher and
start the next rebuild. When the OS cannot watch that many folders (Linux's
``fs.inotify.max_user_watches``), or with ``--poll``, ``notify``'s polling watcher walks
the sources instead (network filesystems send no events from other machines either).
The contract is watched too (an edit of it rebuilds), and a source folder deleted and made
again is watched again: see :class:`_Watches`.

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
# While nothing changes, the folders above (the contract's, the sources' parents) are
# asked every this many of the tree's steps (~200 ms; a contract saved is a person's
# edit): asked every step they cost ~40% more idle CPU (0.16 against 0.11 CPU-s a minute,
# bench/PROFILE_NOTES.md at d9272aa "Watch mode, pass 11"). With the tree's changes they are asked
# at once, so that a source deleted is one batch with what the tree saw of it.
ABOVE_EVERY = 4
# notify's polling watcher compares mtimes in whole seconds, so a file changed again within
# the second of the change it last saw looks unchanged to it (a transcript being written
# does that all the time), until something changes in a later second. So when polling,
# each build is followed by one more, this long after it: the build's own walk compares
# sizes and mtimes in nanoseconds; one that finds nothing new prints nothing.
LOOK_AGAIN_S = 1.1


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


class _Watches:
    """The OS watches of one ``--watch`` and the batches of changes they report.

    The sources are watched recursively. Besides them, non-recursively, the folder
    holding each of ``files`` (the other files the build reads: the contract) and the
    nearest existing folder above each source. Why folders: an editor saves a file by
    writing a new one and renaming it over the old, and inotify watches inodes, so a
    watch of the file itself would go deaf after the first save; the same way a source
    folder deleted and made again takes its watch with it. A source (or a folder above
    it) appearing or vanishing re-arms every watch, so a folder made again is watched
    again without a restart.
    """

    def __init__(self, roots: list[str], files: list[str], ignore: Callable[[str], bool],
                 stop: threading.Event, poll: float | None) -> None:
        self.roots, self.files = roots, set(files)
        self.targets = [*roots, *self.files]
        self.ignore, self.stop = ignore, stop
        self.polling, self.delay = poll is not None, poll or 1.0
        self.tree: Generator[set[Any], None, None] | None = None
        self.above: Generator[set[Any], None, None] | None = None

    @property
    def how(self) -> str:
        return f"polling every {self.delay:g} s" if self.polling else "file events"

    def arm(self) -> None:
        """Start the watches of what exists now (a source made again since the last arm
        included, one deleted left to the folder above it)."""
        gone = ""
        for _ in range(5):  # a folder can vanish between the look and its watch
            live = [r for r in self.roots if os.path.exists(r)]
            above = sorted({_existing_above(t) for t in self.targets})
            try:
                self.tree = self._start(live, True, STEP_MS, lambda p: not self.ignore(p))
                # A 1 ms step: asked after the tree's steps, which did the waiting (and
                # held until a quiet check by batches(): a save can be several changes).
                self.above = self._start(above, False, 1, None)
                return
            except FileNotFoundError as exc:
                self.close()
                gone = exc.filename or ""
        raise GraphkitError("no such file or folder", path=gone or self.roots[0],
                            hint="the folders watched keep vanishing")

    def _start(self, paths: list[str], recursive: bool, step: int,
               keep: Callable[[str], bool] | None) -> Generator[set[Any], None, None]:
        """watchfiles' change sets for ``paths``, started: the OS watches are in place when
        this returns. Polling when asked, or when the OS refuses that many watches."""
        from watchfiles import watch

        def start() -> Generator[set[Any], None, None]:
            events = watch(*paths, watch_filter=(lambda c, p: keep(p)) if keep else self._about,
                           debounce=DEBOUNCE_MS, step=step, stop_event=self.stop,
                           rust_timeout=1, yield_on_timeout=True, raise_interrupt=False,
                           force_polling=self.polling, poll_delay_ms=int(self.delay * 1000),
                           recursive=recursive)
            next(events, None)  # the first (timeout) answer: the watcher exists now
            return events

        try:
            return start()
        except FileNotFoundError:
            raise
        except OSError as exc:
            if self.polling:
                raise
            # inotify's watch limit (fs.inotify.max_user_watches, 8192 on older kernels; a
            # watch per folder) or an instance limit: walk the sources instead.
            why = str(exc).split(". ")[0]  # notify's first sentence; then its debug dump
            click.echo(f"note: cannot watch the sources with file events ({printable(why)}); "
                       "polling every 1 s instead (raise fs.inotify.max_user_watches, or "
                       "give --poll SECONDS)", err=True)
            self.polling, self.delay = True, 1.0
            return start()

    def _about(self, change: int, path: str) -> bool:
        """Whether a change seen in a folder above is one the build reads: one of the
        files, or a source or a folder above one appearing or vanishing (its content's
        changes are the tree's)."""
        if path in self.files:
            return True
        if change == _MODIFIED:
            return False
        return any(t == path or t.startswith(path.rstrip(os.sep) + os.sep)
                   for t in self.targets)

    def batches(self) -> Iterator[set[Any]]:
        """Each batch of changes to rebuild for (an empty set every STEP_MS or so while
        nothing changed), until the stop event."""
        held: set[Any] = set()
        moved = False  # a source or a folder above one appeared or vanished
        steps = 0
        while self.tree is not None and self.above is not None:
            got = next(self.tree, None)
            if got is None:
                return
            steps += 1
            if steps % ABOVE_EVERY and not held and not got:
                yield got  # nothing: ask the folders above on every ABOVE_EVERY-th step
                continue
            above = next(self.above, None)
            if above is None:
                return
            if above:  # a file saved or a source moved: wait for a quiet check
                held |= got | above
                moved = moved or any(c != _MODIFIED and p not in self.files
                                     for c, p in above)
                continue
            if moved:
                self.close()
                self.arm()
            got, held, moved = got | held, set(), False
            yield got

    def close(self) -> None:
        """Stop the watcher threads."""
        for events in (self.tree, self.above):
            if events is not None:
                events.close()
        self.tree = self.above = None


_MODIFIED = 2  # watchfiles.Change.modified, without importing watchfiles at module load


def _existing_above(path: str) -> str:
    """The nearest existing folder above ``path``.

    >>> _existing_above("/no/such/folder/here")
    '/'
    """
    parent = os.path.dirname(path)
    while not os.path.isdir(parent) and os.path.dirname(parent) != parent:
        parent = os.path.dirname(parent)
    return parent


def failed(exc: BaseException) -> str:
    """A failed rebuild's error as the one line ``graphkit build`` prints for it."""
    if isinstance(exc, click.ClickException):
        return exc.format_message()
    if isinstance(exc, OSError) and exc.filename is not None:
        return printable(f"{exc.filename}: {exc.strerror or exc}")
    return printable(str(exc))


def watch_builds(sources: Sequence[Path], ignore: Callable[[str], bool],
                 build: Callable[[], tuple[dict[str, Any], list[dict[str, Any]]]],
                 report: Callable[[int, int, Rebuild], None], poll: float | None,
                 files: Sequence[Path] = ()) -> int:
    """Run ``build`` now and again after each batch of changes under ``sources`` or to
    ``files`` (the other files it reads) until a signal; ``report(n, changed_paths,
    rebuild)`` after each. A rebuild that fails with an error a user can cause is
    reported and the watch goes on (the snapshot stays the last one written); the first
    build's error ends it, as a plain build's would. Returns the process's exit code."""
    roots = [str(Path(p).expanduser().resolve()) for p in sources]
    for root in roots:  # what a build says of it, before any watch is armed
        if not os.path.exists(root):
            raise GraphkitError("no such file or folder", path=root, hint="check the path")
    signals = _Signals()
    watches = _Watches(roots, [str(Path(p).expanduser().resolve()) for p in files], ignore,
                       signals.stop, poll)
    with signals.installed():
        watches.arm()
        try:
            report(0, 0, _timed(build, signals))
            if not signals.stop.is_set():
                click.echo(f"watching {len(roots)} source(s) for changes ({watches.how}); "
                           "Ctrl-C to stop", err=True)
            n, last_error, last_late = 0, None, False
            look_again: float | None = time.monotonic() + LOOK_AGAIN_S
            for changes in watches.batches():
                if signals.stop.is_set():
                    break
                late = not changes
                if late and (not watches.polling or look_again is None
                             or time.monotonic() < look_again):
                    continue
                try:
                    got = _timed(build, signals)
                except (GraphkitError, click.ClickException, OSError) as exc:
                    got = Rebuild(None, [], 0.0, 0.0, failed(exc))
                # A look again that found nothing the last rebuild missed says nothing
                # (and needs no look after it); nor does the poll's own batch for a
                # change a look again has already built (they race).
                nothing = (late or last_late) and (
                    (got.error is not None and got.error == last_error)
                    or (got.summary is not None and bool(got.summary.get("snapshot_reused"))))
                look_again = None if nothing and late else time.monotonic() + LOOK_AGAIN_S
                if nothing:
                    continue
                n += 1
                last_error, last_late = got.error, late
                report(n, len({path for _c, path in changes}), got)
                if signals.stop.is_set():
                    break
        except KeyboardInterrupt:  # the second signal during a rebuild
            click.echo("stopped during a rebuild; the snapshot is the last one written",
                       err=True)
            return 130
        finally:
            watches.close()  # watchfiles stops its watcher threads
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
