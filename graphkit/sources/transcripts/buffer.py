"""The row buffer shared by the Claude and Codex transcript parsers, and their helpers.

A parser emits one :class:`Message` (the columns every part of it shares) and then its
:class:`Part` records. Both are ``NamedTuple``s, fields named after the schema columns:
readable by name, and still tuples, so the buffer joins each pair into one row tuple;
rows of many files are then converted to Arrow in one call (:func:`rows_table`), far
cheaper than a dict per row or a conversion per small file.

The per-file table ("pre-rows", :data:`PRE_SCHEMA`) is not yet schema rows: cross-file
facts (which session a replayed message belongs to, a subagent's spawning tool call, a
Codex thread's root) and the per-thread numbering are filled in by
:mod:`graphkit.sources.transcripts.links` over all files.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any, NamedTuple

import msgspec
import pyarrow as pa

from graphkit.sources.transcripts.files import json_document

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_ONE_US = dt.timedelta(microseconds=1)


class Message(NamedTuple):
    """The columns a message shares with all its parts (``line``: where it starts)."""

    session_id: str
    conversation_id: str | None
    model: str | None
    cwd: str | None
    git_branch: str | None
    git_remote: str | None
    head_sha: str | None
    client_version: str | None
    entrypoint: str | None
    user_type: str | None
    permission_mode: str | None
    is_sidechain: bool | None
    agent_id: str | None
    parent_thread_id: str | None
    message_id: str
    previous_message_id: str
    provider_uuid: str | None
    parent_uuid: str | None
    logical_parent_uuid: str | None
    source_tool_assistant_uuid: str | None
    request_id: str | None
    prompt_id: str | None
    message_created_at: int
    role: str
    hook_event: str | None
    is_compact_summary: bool | None
    compact_metadata: str | None
    line: int


class Part(NamedTuple):
    """The columns of one part of a message."""

    part_index: int
    part_type: str
    provider_type: str | None
    provider_subtype: str | None
    content_text: str | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_args: str | None = None
    tool_result_for: str | None = None
    thinking_signature: str | None = None
    attachment_type: str | None = None
    is_error: bool | None = None
    status: str | None = None


MESSAGE_COLUMNS: tuple[str, ...] = Message._fields
PART_COLUMNS: tuple[str, ...] = Part._fields

_TS = pa.timestamp("us", tz="UTC")
_TYPES: dict[str, pa.DataType] = {
    "is_sidechain": pa.bool_(), "is_compact_summary": pa.bool_(), "is_error": pa.bool_(),
    "message_created_at": _TS, "part_index": pa.int32(), "line": pa.int32(),
}
PRE_SCHEMA = pa.schema(
    [pa.field(name, _TYPES.get(name, pa.string())) for name in MESSAGE_COLUMNS + PART_COLUMNS]
)

_STRUCT = pa.struct(list(PRE_SCHEMA))
_AGENT_AT = MESSAGE_COLUMNS.index("agent_id")

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


def _encoder() -> Any:
    import msgspec

    return msgspec.json.Encoder()


_ENCODE = _encoder().encode


def _sorted_encoder() -> Any:
    import msgspec

    return msgspec.json.Encoder(order="sorted")


_ENCODE_SORTED = _sorted_encoder().encode


def dumps_decoded(value: Any) -> str:
    """:func:`dumps` of a decoded JSON value, by msgspec when that writes the same text.

    msgspec writes floats differently (``1e16``, not ``1e+16``), so a value holding a float
    goes to json.dumps; so does one msgspec refuses (a lone surrogate). Strings, ints of any
    size, lists and objects come out byte for byte as json.dumps writes them.
    """
    try:
        if _has_float(value):
            return dumps(value)
        return _ENCODE(value).decode()
    except Exception:  # json.dumps writes or raises as before
        return dumps(value)


def json_roundtrip(value: Any) -> Any:
    """``json.loads(json.dumps(value, sort_keys=True))``: a parse's facts as the cache gives
    them back.

    msgspec writes and reads them when that gives back an equal value (3x faster): it
    writes NaN and infinities as null, turns tuples into lists and refuses keys that are
    not text and lone surrogates; each of those makes the result unequal (or raises), and
    json's round trip is taken as before. Equal values are the same types here: JSON
    keeps bools, ints and floats apart, and dict keys come back sorted in both.
    """
    try:
        got = _DECODE(_ENCODE_SORTED(value))
        if got == value:
            return got
    except Exception:  # json's round trip below raises or answers as before
        pass
    return loads(json.dumps(value, sort_keys=True))


def _has_float(value: Any) -> bool:
    kind = type(value)
    if kind is float:
        return True
    if kind is dict:
        value = value.values()
    elif kind is not list:
        return False
    for v in value:  # a loop, not any(<generator>): most arguments are a few strings
        kind = type(v)
        if kind is float or ((kind is dict or kind is list) and _has_float(v)):
            return True
    return False



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


def _decoder() -> Any:
    """msgspec's JSON decoder, floats parsed by ``float`` as :func:`json.loads` does."""
    import msgspec

    return msgspec.json.Decoder(float_hook=float)


# msgspec decodes a transcript line 3-4x faster than json.loads, to the same values
# (ints of any size, floats through ``float``); what it refuses (NaN, a BOM, lone
# surrogates, nesting past its limit) is read again by json.loads, which decides.
_DECODE = _decoder().decode


def loads(text: str | bytes) -> Any:
    """:func:`json.loads`, by msgspec where it reads the text (the same values)."""
    try:
        return _DECODE(text)
    except Exception:  # json.loads gives the verdict
        return json.loads(text)


def json_lines(data: bytes, skipped: list[tuple[int, str]], lone: list[int] | None = None
               ) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) per JSONL line; note lines that are not JSON objects
    (in ``skipped``) and lines whose lone surrogates were made U+FFFD (in ``lone``).

    Each line is decoded by msgspec; a line it refuses is read as before msgspec: by
    json.loads, on the line's text when the whole file is valid UTF-8 (json.loads on bytes
    re-detects the encoding every line), on its bytes when not, so only bad lines are lost.
    """
    decode = _DECODE
    text_lines: list[Any] | None = None
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw:
            continue
        try:
            obj = decode(raw)
        except Exception:  # json.loads below gives the verdict and reason
            if text_lines is None:
                text_lines = _old_lines(data)
            obj = _json_line(text_lines[number - 1], number, skipped, lone)
            if obj is None:
                continue
        if type(obj) is dict:
            yield number, obj
        else:
            skipped.append((number, "line is not a JSON object"))


def _old_lines(data: bytes) -> list[Any]:
    """The file's lines as json.loads read them: text if it is all UTF-8, else bytes."""
    try:
        return data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return data.split(b"\n")


def _json_line(raw: Any, number: int, skipped: list[tuple[int, str]],
               lone: list[int] | None) -> Any:
    """One line by json.loads: its value, or None (blank, or skipped with the reason)."""
    if not raw.strip():
        return None
    try:
        obj = json_document(raw, lone, number)
    except ValueError:
        skipped.append((number, "not valid JSON"))
        return None
    except RecursionError:
        skipped.append((number, "JSON nested too deeply to read"))
        return None
    if obj is None:
        skipped.append((number, "line is not a JSON object"))
    return obj




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
            except (ValueError, RecursionError):
                pass
        return dumps(value)
    return dumps(value)


def rows_table(rows: list[tuple[Any, ...]]) -> pa.Table:
    """Pre-rows (tuples in :data:`PRE_SCHEMA` order) as a table, in one conversion call: a
    call per column costs a fixed few microseconds each, which adds up over many files."""
    if not rows:
        return PRE_SCHEMA.empty_table()
    arrays = pa.array(rows, type=_STRUCT).flatten()
    # The shared schema object: a schema per table would be thousands of copies.
    return pa.Table.from_arrays(arrays, schema=PRE_SCHEMA)


def checked_rows_table(rows: list[tuple[Any, ...]]) -> tuple[pa.Table, list[tuple[int, str]]]:
    """:func:`rows_table`, leaving out rows holding a value of the wrong type (a transcript
    line with, say, ``"parentUuid": true``): the table and ``(row index, reason)`` of each
    row left out. The check runs only when the fast conversion refuses the rows."""
    try:
        return rows_table(rows), []
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        pass
    kept, bad = [], []
    for i, row in enumerate(rows):
        reason = _wrong_type(row)
        if reason is None:
            kept.append(row)
        else:
            bad.append((i, reason))
    return rows_table(kept), bad


def _wrong_type(row: tuple[Any, ...]) -> str | None:
    """Why a pre-row cannot be converted (a field of the wrong type), or None."""
    for value, column in zip(row, PRE_SCHEMA, strict=True):
        if value is None:
            continue
        t = column.type
        ok = (isinstance(value, str) if pa.types.is_string(t)
              else isinstance(value, bool) if pa.types.is_boolean(t)
              else isinstance(value, int) and not isinstance(value, bool)
              and (not pa.types.is_int32(t) or -2**31 <= value < 2**31))
        if not ok:
            return f"{column.name} is a {type(value).__name__}, not {t}; line left out"
    return None


LINE_AT = MESSAGE_COLUMNS.index("line")


class FileParse(msgspec.Struct):
    """What one transcript file yields on its own, before cross-file linking.

    Its pre-rows are ``rows`` (tuples, as parsed) or ``table`` (as read back from the
    index); :meth:`to_table` gives a table either way.
    """

    kind: str
    rows: list[tuple[Any, ...]] = msgspec.field(default_factory=list)
    facts: dict[str, Any] = msgspec.field(default_factory=dict)
    skipped: list[tuple[int, str]] = msgspec.field(default_factory=list)
    table: pa.Table | None = None
    # ``table`` is rows ``start`` on of this larger table (a run of files parsed in one
    # go, :mod:`.pool`): files next to each other in it are joined again by one slice.
    run: tuple[pa.Table, int] | None = None

    @property
    def num_rows(self) -> int:
        return self.table.num_rows if self.table is not None else len(self.rows)

    def to_table(self) -> pa.Table:
        """The pre-rows as a table (converted once, then kept instead of the tuples)."""
        if self.table is None:
            table, bad = checked_rows_table(self.rows)
            self.skipped.extend((self.rows[i][LINE_AT], reason) for i, reason in bad)
            self.table, self.rows = table, []
        return self.table


# The facts key of the lines whose lone surrogates were made U+FFFD (absent when none:
# every other file's facts, and so the index, stay as they were).
LONE_SURROGATES = "lone_surrogate_lines"


def with_lone_surrogates(parse: FileParse, lines: list[int]) -> FileParse:
    """``parse`` noting the ``lines`` whose text held a lone surrogate, if any."""
    if lines:
        parse.facts[LONE_SURROGATES] = lines
    return parse


class RowBuffer:
    """Collects (message, part) pairs for one file as pre-row tuples."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    def add(self, message: Message, part: Part) -> None:
        # One plain tuple per row, message columns first: the shape Arrow converts fastest.
        self.rows.append(message + part)

    def __len__(self) -> int:
        return len(self.rows)

    def agent_ids(self) -> list[str | None]:
        """The ``agent_id`` of each row so far, in order."""
        return [row[_AGENT_AT] for row in self.rows]

    def take(self, agent_ids: list[str | None] | None = None) -> list[tuple[Any, ...]]:
        """The rows (emptying the buffer); ``agent_ids`` overrides their agents (late
        inference of inline sidechains)."""
        rows, self.rows = self.rows, []
        if agent_ids is None:
            return rows
        at = _AGENT_AT
        return [row if row[at] == agent else (*row[:at], agent, *row[at + 1:])
                for row, agent in zip(rows, agent_ids, strict=True)]
