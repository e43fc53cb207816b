"""The ``graphkit`` command line: a thin layer over the library.

One module per group of commands; each registers its commands on
:data:`graphkit.cli.app.cli` when imported, which happens the first time one of
them is asked for (:data:`graphkit.cli.app.COMMAND_MODULES`): a command line
loads only the module of the command it runs.
"""

from graphkit.cli.app import cli, main
from graphkit.core.lazy import lazy_modules

__all__ = ["build", "cli", "export", "main", "neo4j", "query", "usage", "view"]

__getattr__ = lazy_modules(__name__, ["build", "export", "neo4j", "query", "usage", "view"])
