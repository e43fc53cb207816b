"""What one parsed transcript line says it is: Claude Code's, Codex's, or neither.

In the leaf because two layers ask: the transcript reader (which file is which) and the
output writer (:mod:`graphkit.core.files`), which refuses to write over a transcript.
"""

from __future__ import annotations

from typing import Any

CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context",
                         "compacted"})
CLAUDE_KEYS = ("sessionId", "parentUuid", "isSidechain", "leafUuid")
# Line types only Claude Code writes; files often open with many file-history-snapshot
# lines, which carry none of the keys above.
CLAUDE_TYPES = frozenset({"file-history-snapshot", "summary", "custom-title", "ai-title",
                          "queue-operation"})


def kind_of_object(obj: Any) -> str | None:
    """"claude", "codex" or None for one parsed JSON line (or a whole ``.json`` export).

    >>> kind_of_object({"type": "session_meta", "payload": {}}), kind_of_object([])
    ('codex', None)
    """
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("loglines"), list):
        return "claude"
    kind = obj.get("type") if isinstance(obj.get("type"), str) else None
    if kind in CODEX_TYPES and "payload" in obj:
        return "codex"
    if "type" not in obj and "id" in obj and "timestamp" in obj and len(obj) <= 4:
        return "codex"  # the bare {id, timestamp} header of very old rollouts
    if any(k in obj for k in CLAUDE_KEYS) or kind in CLAUDE_TYPES:
        return "claude"
    return None
