"""The stores' Neo4j tests: every test here is marked ``neo4j`` and gets a ``store``
on the session's shared server (``neo4j_config``, tests/conftest.py; the server
helpers are in tests/helpers/neo4j_server.py).

(No ``__init__.py`` in this folder: as a package it would be named ``neo4j``
and shadow the driver.)
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from graphkit.enrich.neo4j.store import Neo4jConfig, Neo4jStore
from tests.helpers.neo4j_server import wipe


@pytest.fixture
def store(neo4j_config: Neo4jConfig) -> Iterator[Neo4jStore]:
    """A store on an empty database (everything but the test marker deleted first)."""
    with Neo4jStore(neo4j_config, batch_size=1000) as s:
        wipe(s)
        yield s
