"""Spark sessions (``agent-graphkit[spark]``): found or started the one way, for the partitioned
build on Spark and the Neo4j load through Spark alike. PySpark is imported only here,
only when called."""

from __future__ import annotations

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
        # Local workers run this interpreter (and so this graphkit), not `python3`.
        builder = builder.config("spark.pyspark.python", sys.executable) \
            .config("spark.pyspark.driver.python", sys.executable) \
            .config("spark.ui.enabled", "false")
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # the JVM or master could not be reached
        raise SparkEngineError(f"cannot start Spark: {str(exc).splitlines()[0]}",
                               hint="check JAVA_HOME (Java 17) and --spark-master") from None
    session.sparkContext.setLogLevel("ERROR")
    return session


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
