"""The database's one load lock: a graphkit load (driver or Spark) holds it while it
writes, so a second load waits for the first instead of interleaving with it.

The lock is a ``GraphkitLoadLock`` node MERGEd on a unique ``name`` in a transaction
left open for the whole load, then rolled back: a concurrent MERGE of the same key
waits on the uniqueness constraint's entry, and the node is never committed. What
stays in the database is the constraint ``graphkit_load_lock`` (a schema object, no
data: a MERGE waits on another's uncommitted node only through such a constraint,
and dropping it after a load would wait for every open transaction) and the label
token (Neo4j never forgets a label). Graph reads skip the label
(:data:`~graphkit.enrich.neo4j.read_back.BOOKKEEPING_LABELS`).

The wait is bounded. The MERGE runs in a helper thread; the caller watches it,
notes on ``progress`` who holds the lock (``SHOW TRANSACTIONS``: the holder's
transaction carries graphkit metadata, its host and pid), and when ``wait`` seconds
have passed ends its own waiting transaction (``TERMINATE TRANSACTION``: anyone may
end their own) and raises :class:`LoadLockTimeout` naming the holder and what to do.
A holder whose client dies loses the lock with its connection (the server rolls its
transaction back); one that hangs keeps it, which is what the bound is for.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from typing import Any

from graphkit.core.errors import StoreError
from graphkit.core.progress import ProgressLike, as_progress
from graphkit.enrich.neo4j import cypher
from graphkit.enrich.neo4j.connection import Neo4jConnection
from graphkit.enrich.neo4j.watch import seconds_from_env

LOCK_LABEL = "GraphkitLoadLock"
LOCK_CONSTRAINT = "graphkit_load_lock"
# Seconds a load waits for the lock. Loads measured here write ~25k records/s, so
# ten minutes is a queue of several multi-million-record loads, and still ends a
# wait behind a hung one within a coffee break rather than never.
DEFAULT_LOCK_WAIT = 600.0
LOCK_WAIT_ENV = "GRAPHKIT_LOAD_LOCK_WAIT"
# Transaction metadata that marks a graphkit lock transaction in SHOW TRANSACTIONS.
_TAG = "load-lock"
_BLOCKED_BY = re.compile(r"'?([\w.-]+-transaction-\d+)'?")


class LoadLockTimeout(StoreError):
    """Another load held the database's load lock for longer than the wait."""


def lock_wait_from_env(env: dict[str, str] | os._Environ[str] = os.environ) -> float:
    """``GRAPHKIT_LOAD_LOCK_WAIT`` (seconds, ``inf`` to wait for ever), else
    :data:`DEFAULT_LOCK_WAIT`; a bad value is a one-line :class:`StoreError`."""
    return seconds_from_env(LOCK_WAIT_ENV, DEFAULT_LOCK_WAIT, zero=True,
                            hint="e.g. 600, 0 (do not wait) or inf (wait for ever)", env=env)


def _seconds(value: float) -> str:
    if value == float("inf"):
        return "never (--lock-wait inf)"
    whole = int(value)
    return f"{whole // 60}m{whole % 60:02d}s" if whole >= 60 else f"{whole} s"


def describe(row: dict[str, Any] | None) -> str:
    """Who holds the lock, from its transaction's row of SHOW TRANSACTIONS."""
    if row is None:
        return "another load (its transaction is not visible to this user)"
    meta = row.get("metaData") or {}
    held = row.get("elapsedTime")
    since = f", for {_seconds(held.seconds)}" if held is not None else ""
    if meta.get("graphkit") != _TAG:
        return (f"transaction {row['transactionId']} (not a graphkit load; user "
                f"{row.get('username')!r}{since})")
    return (f"graphkit load (engine {meta.get('engine', '?')}, pid {meta.get('pid', '?')} "
            f"on {meta.get('host', '?')}{since}; transaction {row['transactionId']})")


def _transactions(conn: Neo4jConnection) -> list[dict[str, Any]]:
    """Every transaction this user may see (own ones always), or none if the
    server will not say."""
    try:
        return conn.read("SHOW TRANSACTIONS YIELD transactionId, metaData, status, "
                          "elapsedTime, username, database")
    except StoreError:
        return []


def _blockers(rows: list[dict[str, Any]], token: str) -> list[dict[str, Any] | None]:
    """The transactions our waiting one (metadata ``token``) waits for."""
    mine = next((r for r in rows if (r.get("metaData") or {}).get("token") == token), None)
    status = str((mine or {}).get("status") or "")
    if not status.startswith("Blocked"):
        return []
    by_id = {r["transactionId"]: r for r in rows}
    return [by_id.get(t) for t in _BLOCKED_BY.findall(status.partition(":")[2])]


def running_loads(conn: Neo4jConnection) -> list[dict[str, Any]]:
    """Lock transactions of graphkit loads that hold the lock now (not waiting)."""
    db = conn.config.database
    return [r for r in _transactions(conn)
            if (r.get("metaData") or {}).get("graphkit") == _TAG
            and not str(r.get("status") or "").startswith("Blocked")
            and (db is None or r.get("database") == db)]


def _terminate(conn: Neo4jConnection, token: str) -> None:
    """End our own waiting transaction (found by its metadata token)."""
    for r in _transactions(conn):
        if (r.get("metaData") or {}).get("token") == token:
            with suppress(StoreError):
                conn.execute("TERMINATE TRANSACTION $id", id=r["transactionId"])


@contextmanager
def load_lock(conn: Neo4jConnection, *, wait: float = DEFAULT_LOCK_WAIT,
              progress: ProgressLike = None, engine: str = "driver") -> Iterator[None]:
    """Hold the database's load lock while the body runs, waiting at most ``wait``
    seconds for it (:class:`LoadLockTimeout` after that); ``progress`` hears who
    holds it while waiting."""
    name = cypher.quote_name(LOCK_LABEL)
    # StoreError: made by another load at this moment; it exists either way.
    with suppress(StoreError):
        conn.execute(f"CREATE CONSTRAINT {LOCK_CONSTRAINT} IF NOT EXISTS FOR (l:{name}) "
                       "REQUIRE l.name IS UNIQUE")
    token = secrets.token_hex(8)
    meta = {"graphkit": _TAG, "token": token, "engine": engine, "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": datetime.now(UTC).isoformat(timespec="seconds")}
    outcome: dict[str, BaseException] = {}
    with conn.driver_errors(), conn.driver_session() as session:
        tx = session.begin_transaction(metadata=meta)
        taker = threading.Thread(target=_take, args=(tx, name, outcome), daemon=True,
                                 name="graphkit-load-lock")
        try:
            taker.start()
            _wait(conn, taker, outcome, token, wait, as_progress(progress))
            yield
        except BaseException:
            if taker.is_alive():  # interrupted while waiting: stop waiting server-side
                _terminate(conn, token)
                taker.join(5)
            raise
        finally:
            if not taker.is_alive():  # else the session is closed under it at exit
                with suppress(Exception):  # terminated: nothing to roll back
                    tx.rollback()  # releases the lock; nothing was ever committed


def _take(tx: Any, name: str, outcome: dict[str, BaseException]) -> None:
    try:
        tx.run(f"MERGE (l:{name} {{name: $key}})", key="load").consume()
    except BaseException as exc:  # handed to the waiting thread
        outcome["error"] = exc


def _wait(conn: Neo4jConnection, taker: threading.Thread, outcome: dict[str, BaseException],
          token: str, wait: float, progress: Any) -> None:
    """Until ``taker`` holds the lock, or ``wait`` seconds: then end it and raise."""
    start = time.monotonic()
    taker.join(min(0.5, wait))  # the usual case: nobody holds it
    holders: list[dict[str, Any] | None] = []
    while taker.is_alive():
        left = wait - (time.monotonic() - start)
        if left <= 0:
            # (Taken just as the wait ended: given up all the same, and rolled back.)
            _terminate(conn, token)
            taker.join(30)
            who = "; ".join(describe(h) for h in holders) or describe(None)
            ids = [h["transactionId"] for h in holders if h is not None]
            end = (f"end its transaction in cypher-shell (TERMINATE TRANSACTION "
                   f"'{ids[0]}'), " if ids else "")
            raise LoadLockTimeout(
                f"Neo4j at {conn.config.display_uri}: the database's load lock is held by "
                f"{who}; gave up after waiting {_seconds(wait)}",
                hint=f"if that load is hung, stop it (its lock goes when its connection "
                     f"closes) or {end}then load again; or wait longer: --lock-wait SECONDS "
                     f"or {LOCK_WAIT_ENV} (inf: for ever)")
        holders = _blockers(_transactions(conn), token) or holders
        who = "; ".join(describe(h) for h in holders) if holders else "another load"
        progress.note(f"waiting for the load lock of {conn.config.display_uri}: held by "
                      f"{who}; giving up in {_seconds(left)}")
        taker.join(min(1.0, max(left, 0.01)))
    if "error" in outcome:
        with conn.driver_errors():
            raise outcome["error"]

