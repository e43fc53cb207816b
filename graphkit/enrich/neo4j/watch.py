"""Noticing a Neo4j server that stopped answering: a load (or a read) waited for ever.

The driver sets no timeout on reading an answer, so a server that is stopped (``kill
-STOP``), frozen in a long GC pause past recovery, or cut off by a firewall that drops
packets kept ``graphkit load`` waiting for ever, holding the database's load lock.

:class:`AnswerWatch` is told when each driver call starts and ends. While a call is
under way and no call has ended for ``timeout`` seconds, it asks the server from a new
connection, in a thread of its own (a query may be long; a server that answers a
``RETURN 1`` is alive). If that gets no answer within the timeout, the server is
declared gone: every connection of the driver is closed (a blocked read returns at
once; the server rolls back the load lock's transaction when it sees them closed) and
every call then fails with one line naming the server and the wait.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from graphkit.core.errors import StoreError

TIMEOUT_ENV = "GRAPHKIT_NEO4J_TIMEOUT"
# Seconds without an answer before the server is asked whether it is alive. A batch
# takes seconds; the question is cheap, and a server that answers it is waited for.
DEFAULT_TIMEOUT = 60.0


def seconds_from_env(name: str, default: float, *, zero: bool, hint: str,
                     env: dict[str, str] | os._Environ[str] = os.environ) -> float:
    """The seconds environment variable ``name`` says (``inf`` allowed; 0 only if
    ``zero``), else ``default``; a bad value is a one-line :class:`StoreError`.

    >>> seconds_from_env("X", 5.0, zero=False, hint="", env={"X": "inf"})
    inf
    """
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (value >= 0 if zero else value > 0):  # also NaN
        what = "a number of seconds" if zero else "a positive number of seconds"
        raise StoreError(f"{name}={raw!r} is not {what}", hint=hint)
    return value


def timeout_from_env(env: dict[str, str] | os._Environ[str] = os.environ) -> float:
    """``GRAPHKIT_NEO4J_TIMEOUT`` (seconds; ``inf``: never give up), else
    :data:`DEFAULT_TIMEOUT`.

    >>> timeout_from_env({}), timeout_from_env({TIMEOUT_ENV: "inf"})
    (60.0, inf)
    """
    return seconds_from_env(TIMEOUT_ENV, DEFAULT_TIMEOUT, zero=False,
                            hint="e.g. 60, or inf to wait for ever", env=env)


class AnswerWatch:
    """Calls under way and the last answer; a daemon thread that asks the server when
    the answers stop (see the module's docstring)."""

    def __init__(self, timeout: float, where: str, probe: Callable[[], None],
                 kill: Callable[[], None]) -> None:
        self.timeout = timeout
        self.where = where
        self._probe, self._kill = probe, kill
        self._lock = threading.Lock()
        self._busy = 0
        self._last = time.monotonic()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.dead: str | None = None

    def error(self) -> StoreError:
        """The one line every call gives once the server is declared gone."""
        return StoreError(f"Neo4j at {self.where} stopped answering: {self.dead}",
                          hint=f"check the server (is it stopped, overloaded or cut off?), "
                               f"then run the command again; {TIMEOUT_ENV} sets the wait "
                               f"(seconds, inf: for ever)")

    def started(self) -> None:
        """A driver call begins (raises at once if the server is declared gone)."""
        if self.dead is not None:
            raise self.error()
        with self._lock:
            self._busy += 1
            self._last = time.monotonic()
            if self._thread is None and math.isfinite(self.timeout):
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="graphkit-neo4j-watch")
                self._thread.start()

    def ended(self) -> None:
        """A driver call ended (answered or failed)."""
        with self._lock:
            self._busy -= 1
            self._last = time.monotonic()

    def close(self) -> None:
        self._closed = True

    def _run(self) -> None:
        tick = min(1.0, self.timeout / 4)
        while not self._closed:
            time.sleep(tick)
            with self._lock:
                quiet = time.monotonic() - self._last
                busy = self._busy
            if self.dead is not None:
                if busy:
                    self._kill()  # what retries opened since: closed as well
                continue
            if not busy or quiet < self.timeout:
                continue
            if self._alive():
                with self._lock:
                    self._last = time.monotonic()  # a long query on a live server
                continue
            self.dead = (f"no answer for {quiet:.0f} s, nor to a new connection's "
                         f"RETURN 1 within {self.timeout:.0f} s more")
            self._kill()

    def _alive(self) -> bool:
        """Whether the server answers a new connection's question within the timeout
        (asked from a thread of its own: a frozen server never answers)."""
        done = threading.Event()
        outcome: dict[str, Any] = {}

        def ask() -> None:
            try:
                self._probe()
                outcome["ok"] = True
            except Exception:  # refused, reset: not an answer
                outcome["ok"] = False
            done.set()

        threading.Thread(target=ask, daemon=True, name="graphkit-neo4j-probe").start()
        return done.wait(self.timeout) and bool(outcome.get("ok"))
