"""The one pattern for names that reach query text: node labels,
relationship types and property names.

Cypher cannot take labels, types or property names as parameters, so they are
spliced into query text; the contract (at load time) and the Cypher builders
(at query time) both refuse anything that does not match, with the same
pattern. ``fullmatch``, never ``match`` with ``$``: ``$`` also matches before a
trailing newline, which let ``"Tool\\n"`` through.
"""

from __future__ import annotations

import re

NAME_RULE = "[A-Za-z][A-Za-z0-9_]{0,63}"
NAME_PATTERN = re.compile(NAME_RULE, re.ASCII)


def is_name(value: object) -> bool:
    """True if ``value`` is a plain identifier: an ASCII letter, then up to 63
    letters, digits or underscores.

    >>> is_name("Thread"), is_name("Tool\\n"), is_name("1st"), is_name("a" * 65)
    (True, False, False, False)
    """
    return isinstance(value, str) and NAME_PATTERN.fullmatch(value) is not None
