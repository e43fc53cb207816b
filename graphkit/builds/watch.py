"""Build, then rebuild in the same process whenever the sources change, until a signal:
:func:`watch_builds`, what ``graphkit build --watch`` runs (the command line renders each
:class:`Rebuild` it reports).

Why a resident process: after one appended line, a transcript rebuild's own work is a
fraction of what a new ``graphkit build`` process pays to start (the interpreter, numpy
and pyarrow's imports: about half of an append, bench/PROFILE_NOTES.md at d9272aa "Incremental pass
9"). Here the imports, the contract and the caches stay warm between rebuilds.

Changes come from the OS's file events through ``watchfiles`` (Rust ``notify``: inotify,
FSEvents, ReadDirectoryChangesW), imported only here. An event only says *that* something
changed: each rebuild is an ordinary incremental build
(:func:`graphkit.builds.snapshot.build_snapshot`), which walks the sources' stat itself
and decides what to parse again, so a missed or extra event can cost a rebuild but never
make a wrong snapshot. What the build writes itself (:class:`~graphkit.builds.outputs.BuildOutputs`)
is no change. Events that arrive while a rebuild runs wait in the watcher and start the
next rebuild. When the OS cannot watch that many folders (Linux's
``fs.inotify.max_user_watches``), or with ``poll``, ``notify``'s polling watcher walks
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
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphkit.builds.options import BuildOptions, as_paths
from graphkit.builds.outputs import BuildOutputs
from graphkit.builds.result import BuildResult
from graphkit.builds.snapshot import build_snapshot
from graphkit.contract.search import contract_candidates
from graphkit.core.errors import GraphkitError, printable
from graphkit.core.progress import Progress

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


@dataclass
class Rebuild:
    """What one build of a :func:`watch_builds` did: what its ``report`` is handed.

    ``n`` is 0 for the first build, then counts the rebuilds, each after ``changed``
    changed paths. ``summary`` is the build's summary (as :func:`build_snapshot` returns
    it) and ``skipped`` every skipped transcript line; None and [] when the build failed
    with ``error`` (its one line). ``notes`` and ``new_skipped`` are the lines not
    reported by an earlier build; ``seconds`` and ``cpu`` its wall and CPU time.

    >>> Rebuild({"snapshot_reused": True}, [], 0.1, 0.1, n=2, changed=1).kept
    True
    >>> Rebuild(None, [], 0.0, 0.0, "no such file or folder").kept
    False
    """

    summary: dict[str, Any] | None
    skipped: list[dict[str, Any]]
    seconds: float
    cpu: float
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    new_skipped: list[dict[str, Any]] = field(default_factory=list)
    n: int = 0
    changed: int = 0

    @property
    def kept(self) -> bool:
        """Whether the build found nothing changed and kept the snapshot."""
        return self.summary is not None and bool(self.summary.get("snapshot_reused"))


class _Signals:
    """SIGINT/SIGTERM: stop waiting at once; during a rebuild, stop after it (a second
    signal then interrupts it)."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.stop = threading.Event()
        self.busy = False
        self.say = say

    def __call__(self, signum: int, _frame: Any) -> None:
        if self.busy and self.stop.is_set():
            raise KeyboardInterrupt
        self.stop.set()
        if self.busy:
            self.say("stopping after this rebuild (again to stop now)")

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
                 stop: threading.Event, poll: float | None,
                 say: Callable[[str], None]) -> None:
        self.roots, self.files, self.say = roots, set(files), say
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
            self.say(f"note: cannot watch the sources with file events ({printable(why)}); "
                     "polling every 1 s instead (raise fs.inotify.max_user_watches, or "
                     "give --poll SECONDS)")
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
    if isinstance(exc, OSError) and exc.filename is not None:
        return printable(f"{exc.filename}: {exc.strerror or exc}")
    return printable(str(exc))


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


OptionsNow = BuildOptions | Callable[[], BuildOptions]
ProgressShown = Callable[[], AbstractContextManager[Progress]]


class _Builder:
    """Each build of a watch, and what its reports have said already (notes, and
    skipped lines after the first build's summary listed them), so each is said once."""

    def __init__(self, sources: Sequence[Path], snapshot_dir: str | Path | None,
                 options: OptionsNow,
                 progress: ProgressShown | None) -> None:
        self.sources, self.snapshot_dir, self.options = list(sources), snapshot_dir, options
        self.progress = progress
        self.seen: set[str] = set()
        self.builds = 0

    def options_now(self) -> BuildOptions:
        """The options of the next build: made anew each time, so a relative time
        ("2 hours ago") is now's, as a new build's would be."""
        return self.options() if callable(self.options) else self.options

    def __call__(self) -> tuple[BuildResult, dict[str, Any], list[str], list[dict[str, Any]]]:
        options = self.options_now()
        with self.progress() if self.progress is not None else nullcontext(None) as shown:
            result, summary = build_snapshot(self.sources, self.snapshot_dir, options,
                                             progress=shown)
        self.builds += 1
        notes = [m for m in result.notes if m not in self.seen]
        self.seen.update(result.notes)
        new: list[dict[str, Any]] = []
        for line in result.skipped:  # a bad line appended since: each once
            mark = f"{line['path']}:{line['line']}: {line['reason']}"
            if mark not in self.seen and self.builds > 1:
                new.append(line)
            self.seen.add(mark)
        return result, summary, notes, new


def watch_builds(sources: str | Path | Sequence[str | Path], snapshot_dir: str | Path | None,
                 options: OptionsNow, report: Callable[[Rebuild], None], *,
                 progress: ProgressShown | None = None,
                 say: Callable[[str], None] = _stderr) -> int:
    """Build ``sources`` into ``snapshot_dir`` now and again after each batch of changes,
    until SIGINT or SIGTERM, and return the exit code (``graphkit build --watch``).

    Changes under the sources and to the contract's file start a rebuild; the
    snapshot, its cache and the files beside it do not. A rebuild that fails with an
    error a user can cause is reported and the watch goes on (the snapshot stays the
    last one written); the first build's error ends it, as a plain build's would.

    Parameters
    ----------
    sources : str, Path or sequence of them
        Transcript folders or row files (not a table in memory: it cannot change).
    snapshot_dir : str, Path or None
        The snapshot folder kept up to date.
    options : BuildOptions or callable
        The build's options, or a function making them for each build (so a relative
        ``since`` such as "2 hours ago" is counted from each build's now). Made with
        ``watch=True`` if they were not: a watch works with the default engine and the
        snapshot store only.
    report : callable
        Called with each build's :class:`Rebuild`: the first (``n`` 0), then one per
        batch of changes.
    progress : callable, optional
        Makes each build's progress display (a context manager giving a progress
        callable).
    say : callable, optional
        Hears the watch's own one-line messages (default: standard error).

    Returns
    -------
    int
        0, or 130 when a second signal stopped a rebuild.

    Raises
    ------
    GraphkitError
        A source does not exist, the options cannot work with a watch, or the first
        build fails.

    Examples
    --------
    A watch stops at SIGINT; this one sends it to itself after the first build:

    >>> import signal, tempfile
    >>> out = Path(tempfile.mkdtemp()) / "graph"
    >>> def report(rebuild: Rebuild) -> None:
    ...     print(rebuild.n, rebuild.summary["nodes"]["Session"], rebuild.kept)
    ...     signal.raise_signal(signal.SIGINT)
    >>> watch_builds("samples/rows", out, BuildOptions(watch=True), report, say=print)
    0 14 False
    0
    """
    paths = as_paths(sources)
    build = _Builder(paths, snapshot_dir, options, progress)
    first = build.options_now()
    if not first.watch:
        first = BuildOptions.of(first, watch=True)  # its checks: what a watch cannot do
    outputs = BuildOutputs.of(snapshot_dir, first)
    roots = [str(Path(p).expanduser().resolve()) for p in paths]
    for root in roots:  # what a build says of it, before any watch is armed
        if not os.path.exists(root):
            raise GraphkitError("no such file or folder", path=root, hint="check the path")
    signals = _Signals(say)
    # Watched too: an edit of the contract rebuilds (every file that could be it: the
    # build key's, so a contract file appearing earlier in the search rebuilds as well).
    named = first.contract
    files = contract_candidates(named) if isinstance(named, str) else [named.path]
    watches = _Watches(roots, [str(Path(p).expanduser().resolve()) for p in files],
                       outputs.owns(), signals.stop, first.poll, say)
    with signals.installed():
        watches.arm()
        try:
            return _loop(build, report, watches, signals, say, len(roots))
        except KeyboardInterrupt:  # the second signal during a rebuild
            say("stopped during a rebuild; the snapshot is the last one written")
            return 130
        finally:
            watches.close()  # watchfiles stops its watcher threads


def _loop(build: _Builder, report: Callable[[Rebuild], None], watches: _Watches,
          signals: _Signals, say: Callable[[str], None], roots: int) -> int:
    """The first build, then a rebuild for each batch of changes (see
    :func:`watch_builds`)."""
    report(_timed(build, signals))
    if not signals.stop.is_set():
        say(f"watching {roots} source(s) for changes ({watches.how}); Ctrl-C to stop")
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
        except (GraphkitError, OSError) as exc:
            got = Rebuild(None, [], 0.0, 0.0, failed(exc))
        # A look again that found nothing the last rebuild missed says nothing (and needs
        # no look after it); nor does the poll's own batch for a change a look again has
        # already built (they race).
        nothing = (late or last_late) and (
            (got.error is not None and got.error == last_error) or got.kept)
        look_again = None if nothing and late else time.monotonic() + LOOK_AGAIN_S
        if nothing:
            continue
        n += 1
        last_error, last_late = got.error, late
        got.n, got.changed = n, len({path for _c, path in changes})
        report(got)
        if signals.stop.is_set():
            break
    return 0


def _timed(build: _Builder, signals: _Signals) -> Rebuild:
    t0, c0 = time.perf_counter(), time.process_time()
    signals.busy = True
    try:
        result, summary, notes, new = build()
    finally:
        signals.busy = False
    return Rebuild(summary, result.skipped, time.perf_counter() - t0,
                   time.process_time() - c0, notes=notes, new_skipped=new)
