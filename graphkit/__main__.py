"""``python -m graphkit``: the same as the ``graphkit`` command."""

from graphkit.cli import main

main()
