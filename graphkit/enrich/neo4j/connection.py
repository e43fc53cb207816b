"""A connection to a Neo4j database: the driver's sessions, managed reads and
writes, and driver failures turned into one-line :class:`StoreError`s.

:class:`~graphkit.enrich.neo4j.store.Neo4jStore` builds on it; what it
writes and asks is :mod:`~graphkit.enrich.neo4j.load`'s and the store's. The methods
that run Cypher (:meth:`~Neo4jConnection.read`, :meth:`~Neo4jConnection.write`,
:meth:`~Neo4jConnection.write_ids`, :meth:`~Neo4jConnection.execute`) are public so
that the load, the lock and the read-back use one documented interface; they take a
query built by :mod:`~graphkit.enrich.neo4j.cypher` (names checked, values only as
parameters), never a query pasted together from values.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import TracebackType
from typing import Any, Self

import numpy as np

from graphkit.core.errors import StoreError, first_line
from graphkit.enrich.neo4j.config import Neo4jConfig, driver_module
from graphkit.enrich.neo4j.watch import AnswerWatch, timeout_from_env

# The driver logs routing retries and server notifications (16 lines of
# Cypher for a query on a database without graphkit's labels) through
# `logging`; with no handler, Python prints WARNINGs to stderr. graphkit turns
# every failure into one StoreError line, so the driver's log stays quiet
# unless the application configures logging itself.
logging.getLogger("neo4j").addHandler(logging.NullHandler())


class Neo4jConnection:
    """The driver for one configured database (credentials never shown)."""

    def __init__(self, config: Neo4jConfig | None = None, *,
                 max_retry_seconds: float = 30.0, answer_timeout: float | None = None
                 ) -> None:
        self.config = config if config is not None else Neo4jConfig.from_env()
        self.config.check()
        driver = driver_module()
        cfg = self.config
        auth = (cfg.user, cfg.password) if cfg.password is not None else None
        timeout = timeout_from_env() if answer_timeout is None else answer_timeout
        self._watch = AnswerWatch(timeout, cfg.display_uri,
                                  probe=lambda: self._probe(auth, timeout),
                                  kill=self._kill_connections)
        with self.driver_errors():
            # Notifications off at the server: a query on a database without
            # graphkit's labels is a normal question (answer: nothing), not a
            # warning with the query text printed. Connecting is bounded (what a
            # retry after a server stopped answering does first).
            self._driver = driver.GraphDatabase.driver(
                cfg.uri, auth=auth, max_transaction_retry_time=max_retry_seconds,
                notifications_min_severity="OFF", connection_timeout=min(15.0, timeout),
                connection_acquisition_timeout=min(60.0, 2 * timeout),
            )
            self._bookmarks = driver.GraphDatabase.bookmark_manager()

    def _probe(self, auth: tuple[str, str] | None, timeout: float) -> None:
        """Ask the server ``RETURN 1`` from a new driver (the watch's question)."""
        driver = driver_module()
        with driver.GraphDatabase.driver(self.config.uri, auth=auth,
                                         connection_timeout=min(15.0, timeout),
                                         notifications_min_severity="OFF") as probe:
            probe.execute_query("RETURN 1", database_=self.config.database)

    def _kill_connections(self) -> None:
        """Close every connection of the driver at once (no goodbye): a call blocked
        reading a server that stopped answering returns, and the server, once it
        runs again, sees them closed and rolls their transactions back (the load lock's
        too). The driver keeps them in its pool: the one place they are all found."""
        pool = getattr(getattr(self, "_driver", None), "_pool", None)
        held = getattr(pool, "connections", None)
        if not isinstance(held, dict):
            return
        for connections in list(held.values()):
            for connection in list(connections):
                with suppress(Exception):
                    connection.kill()

    def verify(self) -> None:
        """Fail now, with a one-line :class:`StoreError`, if the server, the
        credentials or the database are wrong."""
        # An auto-commit query, not a managed transaction: those retry an
        # unreachable server for max_retry_seconds, and a typo in NEO4J_URI
        # should fail at once.
        with self.driver_errors(), self.driver_session() as session:
            session.run("RETURN 1").consume()

    def close(self) -> None:
        """Close the driver and its connections."""
        self._watch.close()
        if self._watch.dead is not None:
            self._kill_connections()  # a goodbye to a server that does not answer waits
        self._driver.close()

    def __enter__(self) -> Self:
        try:
            self.verify()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- driver plumbing ----------------------------------------------------

    def write(self, query: str, **params: Any) -> int:
        """One managed write transaction (retried by the driver); returns its count."""

        def work(tx: Any) -> int:
            record = tx.run(query, params).single()
            return int(record[0]) if record is not None else 0

        with self.driver_errors(), self.driver_session() as session:
            return int(session.execute_write(work))

    def write_ids(self, query: str, **params: Any) -> tuple[np.ndarray, np.ndarray]:
        """One managed write of a node batch built with ``node_ids=True``
        (:func:`cypher.merge_nodes`): the rows it wrote (positions in the batch)
        and their nodes' internal ids."""

        def work(tx: Any) -> tuple[list[int], list[int]]:
            record = tx.run(query, params).single()
            return (list(record["rows"]), list(record["node_ids"])) if record else ([], [])

        with self.driver_errors(), self.driver_session() as session:
            rows, ids = session.execute_write(work)
        return np.asarray(rows, np.int64), np.asarray(ids, np.int64)

    def read(self, query: str, **params: Any) -> list[dict[str, Any]]:
        """One read query in an auto-commit transaction, retried on a transient
        failure (a read is safe to repeat). Not a managed transaction: its
        COMMIT is a second round trip per query, and lineage asks four or five
        short questions (measured 4.1 vs 1.6 ms a query on this machine)."""
        for attempt in range(_READ_ATTEMPTS):
            try:
                with self._watched(), self.driver_session(read=True) as session:
                    return [r.data() for r in session.run(query, params)]
            except Exception as exc:
                if attempt + 1 < _READ_ATTEMPTS and _retryable(exc) \
                        and self._watch.dead is None:
                    time.sleep(0.05 * 2 ** attempt)
                    continue
                with self.driver_errors():
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    @contextmanager
    def _watched(self) -> Iterator[None]:
        """A driver call the watch sees (:meth:`_errors` without the error turning)."""
        self._watch.started()
        try:
            yield
        finally:
            self._watch.ended()

    def execute(self, query: str, **params: Any) -> None:
        """Run one statement in an auto-commit transaction of its own and discard its
        result: schema commands and procedures (which may not run in a managed one)."""
        with self.driver_errors(), self.driver_session() as session:
            session.run(query, params).consume()

    def driver_session(self, *, read: bool = False) -> Any:
        """A driver session on the configured database (use it in a ``with``, inside
        :meth:`driver_errors`), for work of several queries in one transaction."""
        # One bookmark manager for every session: on a cluster a read follows
        # the writes of the same store (causal consistency) even when parallel
        # write sessions made them. Read sessions may go to a read replica.
        return self._driver.session(database=self.config.database,
                                    bookmark_manager=self._bookmarks,
                                    default_access_mode="READ" if read else "WRITE")

    @contextmanager
    def driver_errors(self) -> Iterator[None]:
        """Turn driver failures into one-line :class:`StoreError`s (never the password);
        the calls inside are watched (:mod:`.watch`): a server that stops answering is
        one line too, after the timeout, not a wait for ever."""
        watch = getattr(self, "_watch", None)
        if watch is not None:
            watch.started()
        try:
            yield
        except StoreError:
            if watch is not None and watch.dead is not None:
                raise watch.error() from None
            raise
        except Exception as exc:
            if watch is not None and watch.dead is not None:
                raise watch.error() from None
            error = self._classify(exc)
            if error is None:
                raise  # not the driver's: a bug, keep the traceback
            raise error from None
        finally:
            if watch is not None:
                watch.ended()

    def _classify(self, exc: Exception) -> StoreError | None:
        """The one-line error for a driver failure, credentials redacted; None if
        ``exc`` is not one."""
        from neo4j.exceptions import (
            AuthError,
            ConfigurationError,
            DriverError,
            Neo4jError,
            ServiceUnavailable,
            SessionExpired,
        )

        where = self.config.display_uri
        detail = self.config.redact(first_line(exc, 300))
        if isinstance(exc, AuthError):
            # No password at all is the likelier mistake (a variable not exported, or
            # exported empty): say so rather than send the user to check its value.
            hint = ("check NEO4J_USERNAME and NEO4J_PASSWORD" if self.config.password else
                    "NEO4J_PASSWORD is not set or empty: export it, or pass --ask-password")
            return StoreError(
                f"Neo4j at {where} refused the credentials of user {self.config.user!r}",
                hint=hint,
            )
        if isinstance(exc, ServiceUnavailable | SessionExpired):
            return StoreError(
                f"cannot reach Neo4j at {where} ({detail})",
                hint="is the server running? set NEO4J_URI, or start one: graphkit neo4j-server",
            )
        if isinstance(exc, Neo4jError):
            code = exc.code or ""
            if code.endswith("ConstraintValidationFailed") and _on_graphkit_id(exc):
                from graphkit.core.errors import WrittenMeanwhile

                return WrittenMeanwhile(
                    f"Neo4j at {where} already holds a node this load creates ({detail})",
                    hint="another load or writer changed the database meanwhile; load again")
            if code.endswith("ConstraintValidationFailed"):
                # A constraint of the user's own (not graphkit's id constraints): loading
                # again cannot help, so no WrittenMeanwhile and its retry in merge mode.
                return StoreError(
                    f"Neo4j at {where} failed: a constraint of the database refused a "
                    f"write ({detail})",
                    hint="drop or change that constraint, or change the values in the contract")
            if code.endswith("DatabaseNotFound"):
                return StoreError(
                    f"Neo4j at {where} has no database {self.config.database!r}",
                    hint="check NEO4J_DATABASE (Community has one user database, 'neo4j')",
                )
            return StoreError(f"Neo4j at {where} failed: {code}: {detail}")
        if isinstance(exc, ConfigurationError | ValueError):
            return StoreError(f"bad Neo4j settings for {where}: {detail}")
        if isinstance(exc, DriverError | OSError):
            return StoreError(f"Neo4j driver error for {where}: {detail}")
        return None


# Neo4j's words for a node-uniqueness violation; graphkit's own constraints are on `id`.
_ID_TAKEN = re.compile(r"Node\(\d+\) already exists with label `[^`]*` and property `id` =")


def _on_graphkit_id(exc: Exception) -> bool:
    """Whether a constraint violation is on a node's ``id`` (graphkit's constraint: a
    node written meanwhile), not on a constraint the user made."""
    return bool(_ID_TAKEN.search(str(getattr(exc, "message", "") or exc)))


# Tries of a read that failed transiently (a leader switch, a lock timeout).
_READ_ATTEMPTS = 3


def _retryable(exc: Exception) -> bool:
    """Whether the driver calls ``exc`` transient (worth running the read again)."""
    check = getattr(exc, "is_retryable", None)
    return bool(check()) if callable(check) else False
