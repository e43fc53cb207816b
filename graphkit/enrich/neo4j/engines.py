"""A snapshot into Neo4j by either engine: the Python driver's parallel sessions
(:mod:`.load`) or Spark's executors through the Neo4j Connector (:mod:`.spark`)."""

from __future__ import annotations

from pathlib import Path

from graphkit.core.errors import GraphkitError
from graphkit.core.progress import ProgressLike
from graphkit.enrich.base import IfExists, LoadReport
from graphkit.enrich.open import open_neo4j

ENGINES = ("driver", "spark")


def load_snapshot(snapshot_dir: str | Path, *, engine: str = "driver",
                  spark_master: str | None = None, password: str | None = None,
                  if_exists: IfExists = "merge", batch_size: int | None = None,
                  workers: int | None = None, lock_wait: float | None = None,
                  progress: ProgressLike = None) -> LoadReport:
    """Load the snapshot in ``snapshot_dir`` into the Neo4j server named by ``NEO4J_*``
    and return what was written (``graphkit load``).

    Parameters
    ----------
    snapshot_dir : str or Path
        The snapshot folder (read, and checked, before the server is asked with the
        driver engine).
    engine : {"driver", "spark"}
        Who writes: the driver's sessions, or Spark's executors (the ``spark``
        extra: ``pip install 'agent-graphkit[spark]'``).
    spark_master : str, optional
        The Spark master for ``engine="spark"`` (default: the spark-submit session,
        else ``local[*]``).
    password : str, optional
        The Neo4j password, instead of ``NEO4J_PASSWORD``.
    if_exists, batch_size, workers, lock_wait, progress
        As :meth:`graphkit.enrich.neo4j.store.Neo4jStore.load` takes them (with Spark,
        ``workers`` are its writers at once).

    Returns
    -------
    LoadReport
        With :attr:`~graphkit.enrich.base.LoadReport.target`, the server written to
        (credentials never shown).

    Raises
    ------
    GraphkitError
        The snapshot cannot be read, the engine or its options are wrong, the server
        cannot be reached, or it refuses the load.

    Examples
    --------
    Options are checked before anything is read or connected:

    >>> load_snapshot("out/graph", engine="cypher")
    Traceback (most recent call last):
    ...
    graphkit.core.errors.GraphkitError: unknown engine 'cypher'; use one of ('driver', 'spark')

    The load itself needs a server (``NEO4J_URI``, ``NEO4J_USERNAME``, ``NEO4J_PASSWORD``):

    >>> report = load_snapshot("out/graph", if_exists="replace")  # doctest: +SKIP
    >>> report.nodes["Session"]  # doctest: +SKIP
    14
    """
    if engine not in ENGINES:
        raise GraphkitError(f"unknown engine {engine!r}", hint=f"use one of {ENGINES}")
    if spark_master and engine != "spark":
        raise GraphkitError("--spark-master needs --engine spark")
    if engine == "spark":
        from graphkit.enrich.neo4j.spark import load_snapshot_spark

        with open_neo4j(password=password) as neo:
            report = load_snapshot_spark(Path(snapshot_dir), neo, master=spark_master,
                                         if_exists=if_exists, batch_size=batch_size,
                                         partitions=workers, lock_wait=lock_wait,
                                         progress=progress)
            report.target = neo.config.display_uri
            return report
    from graphkit.snapshot.read import read_snapshot

    graph = read_snapshot(Path(snapshot_dir))
    with open_neo4j(password=password) as neo:
        report = neo.load(graph, if_exists=if_exists, batch_size=batch_size, workers=workers,
                          progress=progress, lock_wait=lock_wait)
        report.target = neo.config.display_uri
        return report
