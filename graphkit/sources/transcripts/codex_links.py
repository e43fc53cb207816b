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

    table = _drop_replayed(table, facts_of)
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


def _drop_replayed(table: pa.Table, facts_of: dict[str, dict[str, Any]]) -> pa.Table:
    """A forked or spawned thread without the messages it replayed from its source thread.

    Codex writes a fork's copy of the source's history into the new rollout, stamped at
    fork time; when no ordinal or spawn call marks where it ends, the copy is found by
    content: the fork's leading messages (role and text) that run in step with a stretch
    of the source's messages belong to the source, which has them already.
    """
    sources = {}
    for thread, facts in facts_of.items():
        source = (facts.get("attributes") or {}).get("forked_from_id") or facts.get(
            "parent_thread_id")
        if source and source != thread and source in facts_of:
            sources[thread] = source
    if not sources:
        return table
    convs = table["conversation_id"].to_pylist()
    mids = table["message_id"].to_pylist()
    said = list(zip(table["role"].to_pylist(), table["content_text"].to_pylist(), strict=True))
    messages: dict[str, list[tuple[str, Any]]] = {}
    seen: set[tuple[str, str]] = set()
    for conv, mid, what in zip(convs, mids, said, strict=True):
        if (conv, mid) not in seen:  # a message once, by its first part
            seen.add((conv, mid))
            messages.setdefault(conv, []).append((mid, what))
    drop: set[tuple[str, str]] = set()
    for thread, source in sources.items():
        mine = [what for _, what in messages.get(thread, [])]
        theirs = [what for _, what in messages.get(source, [])]
        replayed = max((_run(mine, theirs, j) for j, what in enumerate(theirs)
                        if mine and what == mine[0]), default=0)
        drop.update((thread, mid) for mid, _ in messages.get(thread, [])[:replayed])
    if not drop:
        return table
    return table.filter(pa.array([(c, m) not in drop for c, m in zip(convs, mids,
                                                                      strict=True)]))


def _run(mine: list[Any], theirs: list[Any], at: int) -> int:
    """How many of ``mine`` match ``theirs`` from position ``at`` on, in step."""
    n = 0
    while n < len(mine) and at + n < len(theirs) and mine[n] == theirs[at + n]:
        n += 1
    return n
