"""The ``ai_gateway_messages`` row schema (HypAware schema version 7).

Every source (Parquet rows, transcripts, Iceberg caches) produces rows in this
shape, so one contract builds the same graph from any of them.
"""

from __future__ import annotations

import pyarrow as pa

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

COLUMNS = tuple(MESSAGES_SCHEMA.names)

# Row-locator columns every source adds to its rows (the file and the 1-based
# row or line each came from), so a reject or an error can point at it. The
# projection drops them.
FILE_COL = "__file"
ROW_COL = "__row"
