"""The command line's one kind of error: one line on stderr, exit code 2."""

from __future__ import annotations

import click

from graphkit.core.errors import printable


class UserError(click.ClickException):
    """A mistake the user can fix (a :class:`~graphkit.core.errors.GraphkitError`, or a
    wrong combination of options) shown as one line, exit code 2."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        # One line whatever a path or value in it holds (GRAPHKIT_HOME="\n" split it).
        super().__init__(printable(message))
