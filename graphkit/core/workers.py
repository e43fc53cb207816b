"""Work spread over every core: this process and forked children, each claiming items.

Parsing transcripts and projecting link groups are pure Python for the most part (one
thread at a time under the GIL), so a cold build uses one core of the 8-16 a user's
machine has. :func:`run_all` computes ``fn(item)`` for every item in this process and in
``workers - 1`` children forked from it: a child starts with everything this process has
loaded and holds (the contract, the rows read so far), so nothing is imported again and
nothing is sent to it; it claims items one at a time (largest first, so the last item to
finish is a small one) and sends back each result, pickled, through a file. The results
come back in the order of ``items`` whoever computed them, so what a caller builds from
them does not depend on the number of workers.

By default every idle core works (the usable cores less the last minute's load):
``GRAPHKIT_PARSE_WORKERS`` sets the number of processes instead. Children are forked
only where that is safe: on Linux, and while this process runs no
other thread (a lock held by another thread at the fork stays held in the child for ever).
Anywhere else, or with ``GRAPHKIT_PARSE_WORKERS=1``, everything is computed here, in order.
A child that fails leaves its items to this process, which computes them itself (an
error then surfaces here, with its own message and traceback).
"""

from __future__ import annotations

import gc
import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from graphkit.core.errors import SourceError
from graphkit.core.files import work_folder

T = TypeVar("T")
R = TypeVar("R")

ENV = "GRAPHKIT_PARSE_WORKERS"
# More processes than this gain nothing measurable on the work given them (16 link groups,
# runs of ~1 MB of transcripts) and cost memory.
MAX_WORKERS = 16


def usable_cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def idle_cores() -> int:
    """The usable cores less those the last minute's load kept busy (at least 1): on a
    machine that other work keeps busy, more processes than cores only add CPU (measured:
    a cold build forked at load 10 on 2 cores took 10-30% more CPU, its wall no shorter)."""
    cores = usable_cores()
    try:
        busy = int(os.getloadavg()[0])
    except (AttributeError, OSError):  # no load average (Windows)
        busy = 0
    return max(1, cores - busy)


def wanted_workers() -> int:
    """How many processes share a build's parsing and projecting: ``GRAPHKIT_PARSE_WORKERS``
    when set (1: this process alone), else every idle core (:func:`idle_cores`), at most
    :data:`MAX_WORKERS`. Junk in the variable is one line naming it (it was a ValueError
    traceback on every build)."""
    raw = os.environ.get(ENV, "")
    if not raw.strip():
        return min(idle_cores(), MAX_WORKERS)
    try:
        n = int(raw)
    except ValueError:
        raise SourceError(f"{ENV} is {raw[:40]!r}, which is no whole number",
                          hint="set it to the number of processes that parse and project "
                               "transcripts (1: no others), or unset it") from None
    return max(1, min(n, 4 * MAX_WORKERS))


# Set while run_all runs (here, or in a child it forked): work it is given runs in one
# process, so two nested levels of workers do not multiply.
_busy = False


def can_fork() -> bool:
    """Whether children may be forked now: Linux, no other thread in this process, and not
    already inside :func:`run_all`."""
    return (sys.platform == "linux" and hasattr(os, "fork") and not _busy
            and threading.active_count() == 1)


def run_all(fn: Callable[[T], R], items: Sequence[T], workers: int,
            weights: Sequence[float] | None = None) -> list[R]:
    """``[fn(item) for item in items]``, computed by up to ``workers`` processes (this one
    and forked children; see the module doc). ``weights``: each item's expected cost, so
    the largest are claimed first. ``fn``'s results must pickle."""
    global _busy
    n = min(workers, len(items))
    if n < 2 or not can_fork():
        return [fn(item) for item in items]
    _busy = True
    try:
        return _run_all(fn, items, n, weights)
    finally:
        _busy = False


def _run_all(fn: Callable[[T], R], items: Sequence[T], n: int,
             weights: Sequence[float] | None) -> list[R]:
    order = sorted(range(len(items)), key=lambda i: -weights[i]) if weights is not None \
        else list(range(len(items)))
    # Named for this process (the dead ones' deleted first, core.files.work_folder): a
    # killed build's hand-over folder does not pile up in the temporary folder.
    folder = str(work_folder(Path(tempfile.gettempdir(), "graphkit-parse")))
    children: list[int] = []
    got: dict[int, R] = {}
    try:
        gc.freeze()  # the children's collector then leaves this process's objects (and pages) be
        try:
            for _ in range(n - 1):
                pid = os.fork()
                if pid == 0:  # pragma: no cover - runs in the child, which never returns
                    _child(fn, items, order, folder)
                children.append(pid)
        finally:
            gc.unfreeze()
        for i in _claimed(order, folder):
            got[i] = fn(items[i])
        for pid in children:
            os.waitpid(pid, 0)
        children = []
        out = []
        for i, item in enumerate(items):
            if i not in got:
                got[i] = _result(folder, i, fn, item)
            out.append(got.pop(i))
        return out
    finally:
        for pid in children:  # this process failed or was interrupted: stop them
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
        shutil.rmtree(folder, ignore_errors=True)


def _claimed(order: list[int], folder: str) -> Any:
    """The items this process claims, in ``order``: each by creating its marker file
    (``O_EXCL``: exactly one process creates it)."""
    for i in order:
        try:
            os.close(os.open(os.path.join(folder, f"{i}.claim"),
                             os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            continue
        yield i


def _child(fn: Callable[[Any], Any], items: Sequence[Any], order: list[int],
           folder: str) -> None:  # pragma: no cover - runs in a forked child
    """Claim and compute items, each result to ``<i>.out``; leave by ``os._exit`` (never
    back into the caller's stack, its ``finally`` blocks or its buffered output)."""
    code = 1
    try:
        # Ctrl-C reaches the whole process group: the parent decides, and stops children.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for i in _claimed(order, folder):
            data = pickle.dumps(fn(items[i]), protocol=pickle.HIGHEST_PROTOCOL)
            tmp = os.path.join(folder, f"{i}.tmp")
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, os.path.join(folder, f"{i}.out"))
        code = 0
    except BaseException:  # the parent computes what is missing itself
        pass
    finally:
        os._exit(code)


def _result(folder: str, i: int, fn: Callable[[Any], R], item: Any) -> R:
    """Item ``i``'s result as a child wrote it, or computed here if it did not."""
    try:
        with open(os.path.join(folder, f"{i}.out"), "rb") as fh:
            result: R = pickle.load(fh)
        return result
    except (OSError, pickle.UnpicklingError, EOFError):
        return fn(item)
