"""Drift as a number: the record types a build met and did not know.

Claude Code and Codex add record types release by release. A line of a type no reader
knows is a skipped line naming its type (:mod:`.claude`, :mod:`.codex`); this module
counts them per type, with the first place each was seen, so the next format change is
seen the day it lands: in the build summary (``unknown_records``), its ``--json`` and
``graphkit check`` (``unknown-record-types``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# The skipped-line reasons the readers give a line of an unknown type (their words are
# kept as they were: the skipped-lines file of a build does not change).
CLAUDE_ENTRY = "claude"
CODEX_LINE = "codex"
CODEX_ITEM = "codex:response_item"
# How a reader names a type it does not read: core.errors.excerpt's form, the text
# between single quotes as written (control characters escaped), and a long one cut,
# followed by its length.
_NAMED = r"'(.*)'(?: \(\d+ characters\))?"
_REASONS = (
    (re.compile(rf"^entry type {_NAMED} is not read$"), CLAUDE_ENTRY),
    (re.compile(rf"^rollout line type {_NAMED} is not read$"), CODEX_LINE),
    (re.compile(rf"^response_item of type {_NAMED} is not read$"), CODEX_ITEM),
)
CHECK = "unknown-record-types"


def unknown_type(reason: str) -> str | None:
    """The ``<reader>:<type>`` a skipped line's reason names as unknown, or None.

    >>> unknown_type("entry type 'frame-link' is not read")
    'claude:frame-link'
    >>> unknown_type("response_item of type 'thread_goal_update' is not read")
    'codex:response_item:thread_goal_update'
    >>> unknown_type("entry type 'a-very-long-record-type-n…' (40 characters) is not read")
    'claude:a-very-long-record-type-n…'
    >>> unknown_type("not valid JSON") is None
    True
    """
    for pattern, reader in _REASONS:
        found = pattern.match(reason)
        if found is not None:
            return f"{reader}:{found.group(1)}"
    return None


def unknown_records(skipped: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``<reader>:<type>`` → ``{"count", "first"}`` (``first``: ``file:line`` of the first
    line of it, in the order the build read them) of the skipped lines whose type no
    reader knows; sorted by type.

    >>> unknown_records([{"path": "a.jsonl", "line": 3,
    ...                   "reason": "entry type 'x' is not read"},
    ...                  {"path": "b.jsonl", "line": 1, "reason": "not valid JSON"},
    ...                  {"path": "a.jsonl", "line": 9,
    ...                   "reason": "entry type 'x' is not read"}])
    {'claude:x': {'count': 2, 'first': 'a.jsonl:3'}}
    """
    out: dict[str, dict[str, Any]] = {}
    for s in skipped:
        reason = s.get("reason")
        name = unknown_type(reason) if isinstance(reason, str) else None
        if name is None:
            continue
        seen = out.get(name)
        if seen is None:
            out[name] = {"count": 1, "first": f"{s.get('path')}:{s.get('line')}"}
        else:
            seen["count"] += 1
    return dict(sorted(out.items()))


def drift_finding(records: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The ``check`` finding naming the unknown record types (None: there were none)."""
    if not records:
        return None
    listed = "; ".join(f"{name} ({r['count']}, first at {r['first']})"
                       for name, r in list(records.items())[:10])
    more = f"; and {len(records) - 10} more" if len(records) > 10 else ""
    message = (f"{len(records)} record type(s) no reader knows were skipped: {listed}{more}. "
               "A newer Claude Code or Codex may write them; the rest of each file was read")
    return {"check": CHECK, "count": len(records), "message": message,
            "examples": [{"type": k, **v} for k, v in list(records.items())[:5]]}
