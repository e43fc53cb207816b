"""``python -m graphkit.cli``: the same as the ``graphkit`` command."""

from graphkit.cli import main

main()
