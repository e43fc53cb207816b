"""The ``graphkit`` process around a command: settings made before anything loads,
import hooks that keep unused modules out of pyarrow's start, and ending a finished
command's process at once (``os._exit``) rather than through the interpreter's teardown.

None of it applies to a library caller or a test runner invoking a command: only
:func:`~graphkit.cli.app.main`, the program's entry point, calls :func:`prepare`.
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import Any


def prepare(args: list[str]) -> None:
    """Set up the process for a command line ``args`` (``sys.argv[1:]``)."""
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
    sys.meta_path.insert(0, NotForPyarrow())
    if not any(arg.startswith("--engine") for arg in args):
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


class NotForPyarrow:
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


# Set by a command whose work is all written and closed (see all_written()).
_written: list[bool] = []


def all_written() -> None:
    """Say that the running command's outputs are all written, flushed and closed and
    nothing of it runs on: when it then ends with exit code 0,
    :func:`~graphkit.cli.app.main` ends the process at once (:func:`leave_now`) rather
    than by the interpreter's teardown. Only ``main`` reads it (:func:`finished`), and
    only when it is the program (:func:`is_program`): a command invoked by a test
    runner or a script returns as ever."""
    _written.append(True)


def is_program(caller: Any) -> bool:
    """Whether :func:`~graphkit.cli.app.main` was called as the program itself: by the
    ``graphkit`` console script or ``python -m graphkit`` (``graphkit.cli``), which end
    the process when it returns. A script of one's own that calls it and goes on is
    not ended early."""
    if caller.f_globals.get("__name__") != "__main__" or caller.f_code.co_name != "<module>":
        return False
    spec = caller.f_globals.get("__spec__")
    if spec is not None:
        return spec.name in ("graphkit.__main__", "graphkit.cli.__main__")
    script = caller.f_code.co_filename
    return script == sys.argv[0] and Path(script).name == "graphkit"


def leave_now() -> None:
    """End a finished command's process with ``os._exit(0)``, skipping the rest of
    Python's finalization (freeing every module and object one by one; see
    bench/PROFILE_NOTES.md at d9272aa, build pass 11, for what it costs a 1M-row build). What a
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


def finished() -> bool:
    """Whether the running command said :func:`all_written`."""
    return bool(_written)
