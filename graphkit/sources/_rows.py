"""Column buffers shared by the Claude and Codex transcript parsers.

A parser emits one *message* (the columns every part of it shares) and then its *parts*.
Rows are kept as tuples (message tuple + part tuple) and transposed once per file with
``zip(*rows)``: far cheaper than a dict per row, and the per-file Arrow table frees the
Python strings as soon as the file is done, which keeps peak memory near one file's worth.

The per-file table ("pre-rows") is not yet schema rows: cross-file facts (which session a
replayed message belongs to, a subagent's spawning tool call, a Codex thread's root) and the
per-thread numbering are filled in by :mod:`graphkit.sources._resolve` over all files.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_ONE_US = dt.timedelta(microseconds=1)

# Columns a message shares with all its parts, in tuple order.
MESSAGE_COLUMNS: tuple[str, ...] = (
    "session_id", "conversation_id", "model", "cwd", "git_branch", "git_remote", "head_sha",
    "client_version", "entrypoint", "user_type", "permission_mode", "is_sidechain", "agent_id",
    "parent_thread_id", "message_id", "previous_message_id", "provider_uuid", "parent_uuid",
    "logical_parent_uuid", "source_tool_assistant_uuid", "request_id", "prompt_id",
    "message_created_at", "role", "hook_event", "is_compact_summary", "compact_metadata",
    "_line",
)
# Columns of one part, in tuple order.
PART_COLUMNS: tuple[str, ...] = (
    "part_index", "part_type", "provider_type", "provider_subtype", "content_text", "tool_name",
    "tool_call_id", "tool_args", "tool_result_for", "thinking_signature", "attachment_type",
    "is_error", "status",
)

_TS = pa.timestamp("us", tz="UTC")
_TYPES: dict[str, pa.DataType] = {
    "is_sidechain": pa.bool_(), "is_compact_summary": pa.bool_(), "is_error": pa.bool_(),
    "message_created_at": _TS, "part_index": pa.int32(), "_line": pa.int32(),
}
PRE_SCHEMA = pa.schema(
    [pa.field(name, _TYPES.get(name, pa.string())) for name in MESSAGE_COLUMNS + PART_COLUMNS]
)

_STRUCT = pa.struct(list(PRE_SCHEMA))

STATUS_SUCCESS = '{"tool_status":"success"}'
STATUS_ERROR = '{"tool_status":"error"}'


def parse_timestamp(value: Any) -> int | None:
    """Return microseconds since the epoch for an ISO 8601 string, or None if it is not one.

    Naive timestamps are taken as UTC (transcripts write ``Z``; a bare time is UTC there too).

    >>> parse_timestamp("1970-01-01T00:00:01.5Z")
    1500000
    >>> parse_timestamp("yesterday") is None
    True
    """
    if not isinstance(value, str):
        return None
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return (when - _EPOCH) // _ONE_US


def dumps(value: Any) -> str:
    """Return compact JSON text (UTF-8 kept as is) for a JSON column."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def id_list(message_id: str | None) -> str:
    r"""Return the JSON array text of ``previous_message_id``: ``[]`` or ``["<id>"]``.

    >>> id_list(None), id_list("a1"), id_list('odd"id')
    ('[]', '["a1"]', '["odd\\"id"]')
    """
    if not message_id:
        return "[]"
    if '"' in message_id or "\\" in message_id or not message_id.isprintable():
        return dumps([message_id])
    return f'["{message_id}"]'  # ids are plain tokens; skip json.dumps on the hot path


def json_lines(data: bytes, skipped: list[tuple[int, str]]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) per JSONL line; note lines that are not JSON objects.

    The file is decoded once (json.loads on bytes re-detects the encoding every line); a
    file that is not valid UTF-8 throughout falls back to line by line, so only the bad
    lines are lost.
    """
    try:
        lines: list[Any] = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        lines = data.split(b"\n")
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            skipped.append((number, "not valid JSON"))
            continue
        if isinstance(obj, dict):
            yield number, obj
        else:
            skipped.append((number, "line is not a JSON object"))


def json_text(value: Any) -> str | None:
    """Return ``value`` as JSON text; a string already holding a JSON document stays as is.

    >>> json_text('{"a": 1}'), json_text("plain words"), json_text(None)
    ('{"a": 1}', '"plain words"', None)
    """
    if value is None:
        return None
    if isinstance(value, str):
        head = value.lstrip()[:1]
        if head in ("{", "["):
            try:
                json.loads(value)
                return value
            except ValueError:
                pass
        return dumps(value)
    return dumps(value)


@dataclass
class FileParse:
    """What one transcript file yields on its own, before cross-file resolution."""

    kind: str
    table: pa.Table
    facts: dict[str, Any] = field(default_factory=dict)
    skipped: list[tuple[int, str]] = field(default_factory=list)


class RowBuffer:
    """Collects message and part tuples for one file and turns them into a pre-rows table."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    def add(self, message: tuple[Any, ...], part: tuple[Any, ...]) -> None:
        self.rows.append(message + part)

    def __len__(self) -> int:
        return len(self.rows)

    def table(self, agent_ids: list[str | None] | None = None) -> pa.Table:
        """Return the pre-rows table; ``agent_ids`` overrides the agent column (late inference)."""
        if not self.rows:
            return PRE_SCHEMA.empty_table()
        # One conversion call for the whole file: the rows as one struct array. A call
        # per column costs a fixed few microseconds each, which adds up over thousands
        # of small files.
        arrays = pa.array(self.rows, type=_STRUCT).flatten()
        self.rows = []
        if agent_ids is not None:
            at = MESSAGE_COLUMNS.index("agent_id")
            arrays[at] = pa.array(agent_ids, pa.string())
        # The shared schema object: a schema per file would be thousands of copies.
        return pa.Table.from_arrays(arrays, schema=PRE_SCHEMA)
