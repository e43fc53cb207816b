"""Text that can be stored: what Arrow, Parquet and Neo4j take as UTF-8.

Standard library only: the transcript files' reader imports it on the path of a
rebuild that keeps its snapshot, which loads neither pyarrow nor numpy.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(text: str) -> str:
    """``text`` with every lone surrogate made U+FFFD. JSON may escape half a
    UTF-16 pair alone (``"\\ud800"``) and ``json.loads`` reads it as a lone
    surrogate, which no UTF-8 writer (Arrow, Parquet) accepts; as in transcripts,
    it becomes U+FFFD, like undecodable bytes elsewhere.

    >>> storable_text("a\\ud800b"), storable_text("ok")
    ('a\ufffdb', 'ok')
    """
    return text if text.isascii() else _LONE_SURROGATE.sub("\ufffd", text)


def storable_json(value: Any) -> Any:
    """``value`` (a parsed JSON document) with :func:`storable_text` of every string
    and key in it.

    >>> storable_json({"a\\ud800": ["\\udfff", 1]})
    {'a�': ['�', 1]}
    """
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, list):
        return [storable_json(v) for v in value]
    if isinstance(value, dict):
        return {storable_json(k): storable_json(v) for k, v in value.items()}
    return value


def is_text(value: str) -> bool:
    """Whether ``value`` can be stored text (UTF-8): no lone surrogate. An id typed
    with bytes that are not UTF-8 reaches Python as lone surrogates (``\\udcff``):
    Arrow refuses it with a TypeError and the Neo4j driver cannot send it, and no
    stored id can equal it, so every store takes it as naming nothing.

    >>> is_text("agent-1"), is_text("a\\udcff")
    (True, False)
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _int(digits: str) -> int | float:
    # Python refuses to turn more than sys.get_int_max_str_digits() digits into an
    # int (CVE-2020-10735); such a number is far past any count, and as a float it
    # is infinite, which every reader of a count takes as no number (like 1e400).
    limit = sys.get_int_max_str_digits()
    return float(digits) if limit and len(digits) > limit else int(digits)


def json_loads(doc: str | bytes) -> Any:
    """``json.loads``, except that an integer of more digits than Python converts
    (4,300) reads as an infinite float instead of failing the whole document, whose
    other values (a file's path, a subagent's parent) are then kept.

    >>> json_loads('{"n": 1%s, "path": "/a"}' % ("0" * 5000))
    {'n': inf, 'path': '/a'}
    """
    try:
        return json.loads(doc)
    except ValueError as e:
        if "integer string conversion" not in str(e):
            raise
        return json.loads(doc, parse_int=_int)
    except RecursionError:
        # Nested deeper than Python's parser goes (10,000 levels in an attribute): the
        # values a contract reads sit near the top, so the deep part is cut off.
        return json_loads(shallow_json(doc))


# Nesting kept by :func:`shallow_json`: far deeper than any path a contract reads, far
# shallower than Python's parser stops at (the recursion limit, ~1,000).
SHALLOW_DEPTH = 200


def shallow_json(doc: str | bytes, depth: int = SHALLOW_DEPTH) -> str:
    """A JSON text with every value nested deeper than ``depth`` replaced by ``null``,
    so Python can parse it; brackets inside strings are text. Invalid JSON stays
    invalid (the parse then fails as it would have).

    >>> shallow_json('{"a": [[["x]"]]], "b": 1}', 2)
    '{"a": [null], "b": 1}'
    """
    text = doc.decode("utf-8", "surrogatepass") if isinstance(doc, bytes) else doc
    out: list[str] = []
    level = 0
    cut_from = -1  # where the value being cut off starts (-1: not cutting)
    in_string = escaped = False
    start = 0  # the start of the text not yet copied
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            level += 1
            if level == depth + 1 and cut_from < 0:
                out.append(text[start:i])
                cut_from = i
        elif ch in "]}":
            if level == depth + 1 and cut_from >= 0:
                out.append("null")
                cut_from = -1
                start = i + 1
            level -= 1
    if cut_from >= 0:
        return text  # unbalanced: invalid however it is cut
    out.append(text[start:])
    return "".join(out)


# What a spreadsheet takes for a formula when a cell starts with it (OWASP, "CSV
# Injection"): =, +, -, @, tab and carriage return.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(text: str) -> str:
    """``text`` as a CSV cell a spreadsheet shows as text: one that starts like a formula
    gets a leading single quote, as OWASP's CSV-injection guidance says (a session id,
    tool name or file path is text a transcript chose; ``=HYPERLINK(...)`` ran when the
    CSV was opened). Only text cells: numbers are written as numbers.

    >>> csv_cell("=HYPERLINK(1)"), csv_cell("-rf"), csv_cell("ok")
    ("'=HYPERLINK(1)", "'-rf", 'ok')
    """
    return "'" + text if text.startswith(FORMULA_STARTS) else text
