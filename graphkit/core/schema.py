"""The ``ai_gateway_messages`` row schema (HypAware schema version 7).

Every source (Parquet rows, transcripts, Iceberg caches) produces rows in this
shape, so one contract builds the same graph from any of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from graphkit.core.errors import GraphkitError

SCHEMA_VERSION = 7
# LLP 0030 split session_id from conversation_id in schema 6; rows written
# before it put the Claude session id in conversation_id.
SESSION_SPLIT_SCHEMA_VERSION = 6

_TS = pa.timestamp("us", tz="UTC")

# Columns holding JSON documents. Sources store them as JSON text; HypAware's
# Iceberg cache stores them as Parquet variants, which the sources decode.
JSON_COLUMNS = (
    "tools",
    "tool_args",
    "previous_message_id",
    "compact_metadata",
    "status",
    "attributes",
    "raw_frame",
)

# Columns that carry what people typed or models wrote; never written to an
# output unless the user asks for content.
CONTENT_COLUMNS = ("system_text", "content_text", "tool_args", "tools", "raw_frame",
                   "thinking_signature", "compact_metadata")
MESSAGES_SCHEMA = pa.schema(
    [
        pa.field("gateway_id", pa.string(), nullable=False),
        pa.field("schema_version", pa.int32(), nullable=False),
        pa.field("session_id", pa.string(), nullable=False),
        pa.field("conversation_id", pa.string()),
        pa.field("user_id", pa.string()),
        pa.field("provider", pa.string(), nullable=False),
        pa.field("model", pa.string()),
        pa.field("system_text", pa.string()),
        pa.field("tools", pa.string()),
        pa.field("conversation_started_at", _TS, nullable=False),
        pa.field("conversation_source", pa.string()),
        pa.field("client_name", pa.string()),
        pa.field("cwd", pa.string()),
        pa.field("git_branch", pa.string()),
        pa.field("git_remote", pa.string()),
        pa.field("head_sha", pa.string()),
        pa.field("repo_root", pa.string()),
        pa.field("client_version", pa.string()),
        pa.field("entrypoint", pa.string()),
        pa.field("user_type", pa.string()),
        pa.field("permission_mode", pa.string()),
        pa.field("is_sidechain", pa.bool_()),
        pa.field("agent_id", pa.string()),
        pa.field("parent_thread_id", pa.string()),
        pa.field("message_id", pa.string(), nullable=False),
        pa.field("previous_message_id", pa.string()),
        pa.field("provider_uuid", pa.string()),
        pa.field("parent_uuid", pa.string()),
        pa.field("logical_parent_uuid", pa.string()),
        pa.field("source_tool_assistant_uuid", pa.string()),
        pa.field("request_id", pa.string()),
        pa.field("prompt_id", pa.string()),
        pa.field("message_index", pa.int32(), nullable=False),
        pa.field("message_created_at", _TS, nullable=False),
        pa.field("role", pa.string(), nullable=False),
        pa.field("part_id", pa.string(), nullable=False),
        pa.field("part_index", pa.int32(), nullable=False),
        pa.field("part_type", pa.string(), nullable=False),
        pa.field("provider_type", pa.string()),
        pa.field("provider_subtype", pa.string()),
        pa.field("content_text", pa.string()),
        pa.field("tool_name", pa.string()),
        pa.field("tool_call_id", pa.string()),
        pa.field("tool_args", pa.string()),
        pa.field("caller_type", pa.string()),
        pa.field("tool_result_for", pa.string()),
        pa.field("thinking_signature", pa.string()),
        pa.field("attachment_type", pa.string()),
        pa.field("hook_event", pa.string()),
        pa.field("is_error", pa.bool_()),
        pa.field("is_compact_summary", pa.bool_()),
        pa.field("compact_metadata", pa.string()),
        pa.field("status", pa.string()),
        pa.field("attributes", pa.string()),
        pa.field("raw_frame", pa.string()),
        pa.field("date", pa.string(), nullable=False),
    ]
)


# Row-locator columns: every row read from a source carries the source it came
# from and its 1-based row number there, so a reject or an error can point at
# it. The projection drops them from the graph.
FILE_COL = "__file"
ROW_COL = "__row"


def arange(start: int, stop: int) -> pa.Array:
    """``start, start + 1, ..., stop - 1`` as an int64 array, without a Python list.

    >>> arange(1, 4).to_pylist()
    [1, 2, 3]
    """
    return pa.array(np.arange(start, stop, dtype=np.int64))


def tag_rows(table: pa.Table, label: str) -> pa.Table:
    """``table`` with the row-locator columns: ``FILE_COL`` = ``label`` and ``ROW_COL`` = 1..n.

    >>> t = tag_rows(pa.table({"a": ["x", "y"]}), "rows.parquet")
    >>> t.column(FILE_COL).to_pylist(), t.column(ROW_COL).to_pylist()
    (['rows.parquet', 'rows.parquet'], [1, 2])
    """
    n = table.num_rows
    # One dictionary entry for the whole source: no string per row.
    files = pa.DictionaryArray.from_arrays(pa.repeat(pa.scalar(0, pa.int32()), n),
                                           pa.array([label]))
    return table.append_column(FILE_COL, files).append_column(ROW_COL, arange(1, n + 1))


def _holds_map(t: pa.DataType) -> bool:
    if pa.types.is_map(t):
        return True
    if pa.types.is_struct(t):
        return any(_holds_map(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _holds_map(t.value_type)
    return False


def _plain(value: Any, t: pa.DataType) -> Any:
    """A value of a type holding maps as the JSON document it stands for. A map is an
    object; a text value of a map that is a JSON object or array is that document (Spark's
    ``from_json(col, 'map<string,string>')`` and DuckDB's ``MAP(VARCHAR, VARCHAR)`` keep
    nested objects as their text), other text stays text.

    >>> _plain([("usage", '{"input_tokens": 3}'), ("kind", "x")],
    ...        pa.map_(pa.string(), pa.string()))
    {'usage': {'input_tokens': 3}, 'kind': 'x'}
    """
    if value is None:
        return None
    if pa.types.is_map(t):
        return {str(k): _map_value(_plain(v, t.item_type)) for k, v in value}
    if pa.types.is_struct(t):
        return {f.name: _plain(value.get(f.name), f.type) for f in t}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_plain(v, t.value_type) for v in value]
    return value


def _map_value(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def json_as_text(arr: pa.Array) -> pa.Array:
    """A JSON column as JSON text: structs and lists (JSON Lines sources infer nested
    objects as structs) become sorted-key JSON documents, other types are cast.

    >>> json_as_text(pa.array([{"b": 1, "a": None}, None])).to_pylist()
    ['{"a": null, "b": 1}', None]
    """
    if pa.types.is_string(arr.type):
        return arr
    if _holds_map(arr.type):
        return pa.array([None if v is None else json.dumps(_plain(v, arr.type), sort_keys=True,
                                                           default=str)
                         for v in arr.to_pylist()], pa.string())
    if pa.types.is_struct(arr.type) or pa.types.is_list(arr.type):
        return pa.array(
            [None if v is None else json.dumps(v, sort_keys=True, default=str)
             for v in arr.to_pylist()],
            pa.string(),
        )
    return arr.cast(pa.string())


def first_failing_row(arr: pa.Array | pa.ChunkedArray, read: Callable[[Any], Any]
                       ) -> int | None:
    """The 1-based row of the first value ``read`` refuses (Arrow's cast names the value,
    never its row), found by halving: a few casts of ever shorter slices, only once the
    whole column was refused. None if no single slice fails (a refusal of the column
    as a whole)."""
    low, high = 0, len(arr)
    while high - low > 1:
        middle = (low + high) // 2
        try:
            read(arr.slice(low, middle - low))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, GraphkitError):
            high = middle
        else:
            low = middle
    try:
        read(arr.slice(low, 1))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, GraphkitError):
        return low + 1
    return None
