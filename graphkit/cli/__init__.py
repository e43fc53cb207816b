"""The ``graphkit`` command line: a thin layer over the library.

One module per group of commands; each registers its commands on
:data:`graphkit.cli.app.cli` when imported here.
"""

from graphkit.cli import build, export, neo4j, query, usage, view
from graphkit.cli.app import cli, main

__all__ = ["build", "cli", "export", "main", "neo4j", "query", "usage", "view"]
