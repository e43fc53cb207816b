"""Spark sessions (``agent-graphkit[spark]``): found or started the one way, for the partitioned
build on Spark and the Neo4j load through Spark alike. PySpark is imported only here,
only when called."""

from __future__ import annotations

import re
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphkit._version import __version__
from graphkit.core.errors import GraphkitError


class SparkEngineError(GraphkitError):
    """Spark could not be started or failed for a reason that is not graphkit's."""


def start_session(master: str | None, app_name: str = "graphkit build",
                  packages: Sequence[str] = ()) -> Any:
    """A Spark session: the running one (spark-submit), or one on ``master``
    (with the Maven ``packages`` on its classpath, fetched by Spark)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkEngineError("--engine spark needs PySpark",
                               hint="pip install 'agent-graphkit[spark]' (PySpark 4 and Java 17)"
                               ) from None
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    if packages:
        builder = builder.config("spark.jars.packages", ",".join(packages))
    local = (master or "local").startswith("local")
    builder = builder.config("spark.sql.session.timeZone", "UTC") \
        .config("spark.ui.showConsoleProgress", "false")
    if local:
        builder = builder.config("spark.pyspark.python", worker_python()) \
            .config("spark.pyspark.driver.python", sys.executable) \
            .config("spark.ui.enabled", "false")
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # the JVM or master could not be reached
        raise SparkEngineError(f"cannot start Spark: {str(exc).splitlines()[0]}",
                               hint="check JAVA_HOME (Java 17) and --spark-master") from None
    # Off, not ERROR: a failed task logged its whole Java and Python stack on stderr
    # before graphkit's own one line said what failed (spark_failure).
    session.sparkContext.setLogLevel("OFF")
    if local:
        use_worker_python(session)
    return session


def worker_python() -> str:
    """The Python local Spark workers run: ``PYSPARK_PYTHON`` if the user set it, else
    the interpreter running graphkit (``venv/bin/graphkit`` run without an activated
    venv, as pipx and most launchers run it, left PySpark's default ``python3``: the
    system's, without graphkit)."""
    import os

    return os.environ.get("PYSPARK_PYTHON") or sys.executable


def use_worker_python(session: Any) -> None:
    """Make a local session's Python workers run :func:`worker_python`. PySpark takes
    the workers' interpreter from ``PYSPARK_PYTHON`` or ``python3`` when its context
    starts, not from ``spark.pyspark.python``: set on the context itself."""
    context = session.sparkContext
    if getattr(context, "pythonExec", None) != worker_python():
        context.pythonExec = worker_python()


def spark_failure(exc: BaseException, session: Any = None) -> SparkEngineError | None:
    """A failure raised by Spark (a Python worker's exception, a failed job) as one line
    naming what went wrong in the worker; None if ``exc`` is not Spark's.

    >>> class PythonException(Exception): pass
    >>> PythonException.__module__ = "pyspark.errors.exceptions.captured"
    >>> str(spark_failure(PythonException("[PYTHON_EXCEPTION] An exception was thrown from "
    ...     "the Python worker: Traceback (most recent call last):\\n  File x\\n"
    ...     "ModuleNotFoundError: No module named 'graphkit'\\n\\tat org.x"))).split(";")[0]
    "a Spark worker failed: ModuleNotFoundError: No module named 'graphkit'"
    """
    module = type(exc).__module__ or ""
    if not module.startswith(("pyspark", "py4j")):
        return None
    text = str(exc)
    python = [ln.strip() for ln in text.splitlines()
              if _EXCEPTION_LINE.match(ln.strip()) and not ln.startswith("\t")]
    if "Python worker" in text and python:
        found = python[-1]
        executable = getattr(getattr(session, "sparkContext", None), "pythonExec", None)
        hint = ("the workers run " + (executable or "python3") + ": set PYSPARK_PYTHON to "
                "a Python with graphkit installed" if "No module named" in found else None)
        return SparkEngineError(f"a Spark worker failed: {found[:300]}", hint=hint)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return SparkEngineError(f"Spark failed: {(lines[0] if lines else type(exc).__name__)[:300]}")


# A Python traceback's last line: "SomeError: what", "pkg.mod.SomeException: what".
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b:?")


def active_session() -> Any:
    """The running Spark session (spark-submit, a notebook), or None."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    return SparkSession.getActiveSession()


def ship_graphkit(spark: Any, folder: Path) -> Path | None:
    """Zip this graphkit and add it to the executors' Python path (cluster masters
    only: local workers already import it)."""
    master = spark.sparkContext.master
    if master.startswith("local"):
        return None
    pkg = Path(__file__).resolve().parents[1]  # the graphkit package folder
    target = folder / f"graphkit-{__version__}.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(pkg.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                z.write(f, Path("graphkit") / f.relative_to(pkg))
    spark.sparkContext.addPyFile(str(target))
    return target
