"""Codex rows across files: each thread's session and parent.

``session_id`` = the thread's own ``session_id``, else the root reached through
``parent_thread_id`` links, else the thread itself. ``conversation_started_at`` is the
``session_meta`` time.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from graphkit.core.schema import MESSAGES_SCHEMA
from graphkit.sources.transcripts.buffer import dumps
from graphkit.sources.transcripts.links import (
    LinkReport,
    ParsedFile,
    finish_rows,
    number_messages,
)


def link_codex(files: list[ParsedFile], table: pa.Table | None,
               report: LinkReport) -> pa.Table:
    if table is None:
        return MESSAGES_SCHEMA.empty_table()
    facts_of: dict[str, dict[str, Any]] = {}
    for f in files:
        facts_of.setdefault(f.parse.facts["thread_id"], f.parse.facts)

    def root(thread: str) -> str:
        seen: set[str] = set()
        current = thread
        while True:
            facts = facts_of.get(current)
            if facts is not None and facts.get("session_id"):
                return str(facts["session_id"])
            parent = facts.get("parent_thread_id") if facts else None
            if not parent or parent in seen:
                return current
            seen.add(current)
            current = parent

    convs = table["conversation_id"].to_pylist()
    ts = table["message_created_at"].cast(pa.int64()).to_pylist()
    index, start = number_messages(convs, table["message_id"].to_pylist(), ts)
    session_of = {c: root(c) for c in start}
    attrs_of = {}
    for conv in start:
        facts = facts_of.get(conv, {})
        if facts.get("started_at") is not None:
            start[conv] = min(start[conv], facts["started_at"])
        attrs = facts.get("attributes") or {}
        attrs_of[conv] = dumps({"codex": attrs}) if attrs else None
    table = table.set_column(table.schema.get_field_index("session_id"), "session_id",
                             pa.array([session_of[c] for c in convs], pa.string()))
    return finish_rows(table, "openai", "codex", index,
                   [start[c] for c in convs], [attrs_of[c] for c in convs])
