"""One local Spark (``local[2]``) for every Spark test in this folder.

It carries the Neo4j Connector for Apache Spark (fetched from Maven Central by
Spark): a JVM's classpath is fixed when it starts, so a later session in the
same process could not add it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from graphkit.core.spark import start_session
    from graphkit.enrich.neo4j.spark import CONNECTOR

    session = start_session("local[2]", packages=[CONNECTOR])
    yield session
    session.stop()
