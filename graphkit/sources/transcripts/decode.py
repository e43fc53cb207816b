"""Typed decoding of transcript lines: only the fields the readers use become Python objects.

A Claude Code line holds far more than graphkit reads: ``toolUseResult`` repeats a tool's
whole output (a file read, a command's stdout, an edit's old and new file), an image block
carries its picture as base64, and every message has keys no reader asks for. msgspec's
generic decoder turns all of it into Python strings and dicts that are thrown away.
Decoding into the ``TypedDict``\\ s below builds only the listed keys (plain dicts, so the
readers see what they always saw, less keys they never read); every other value is
checked as JSON and skipped.

The typed decoding gives the same answer as the generic one or none at all:

- It is used for ``user`` and ``assistant`` lines (nearly all of a transcript); a line of
  any other type is decoded again generically, so a reader of a rarer record sees every
  key of it.
- A line whose values do not fit the types (a ``message`` that is no object, a content
  block that is a string, ...) raises; it is then decoded generically, and what the
  generic decoder refuses goes on to ``json.loads`` as before
  (:func:`graphkit.sources.transcripts.buffer.json_lines`).
- The one thing msgspec checks in a value it builds but not in one it skips is UTF-8: a
  file that is not UTF-8 throughout is decoded generically, line by line, as before.

**Keep the lists whole**: a key a Claude reader reads from a user or assistant line must be
listed here, or it reads as missing. ``tests/sources/transcripts/test_typed_decode.py``
parses every transcript fixture both ways and compares the results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

import msgspec


class _Source(TypedDict, total=False):
    media_type: Any  # an image's or document's data (base64) is skipped


class _Block(TypedDict, total=False):
    type: Any
    text: Any
    thinking: Any
    signature: Any
    id: Any
    name: Any
    input: Any
    server_name: Any
    tool_use_id: Any
    content: Any
    is_error: Any
    source: _Source


class _Message(TypedDict, total=False):
    id: Any
    role: Any
    model: Any
    content: list[_Block] | str | None
    usage: Any


class _ToolUseResult(TypedDict, total=False):
    agentId: Any
    runId: Any
    prompt: Any
    searchCount: Any


class _ClaudeLine(TypedDict, total=False):
    type: Any
    timestamp: Any
    sessionId: Any
    uuid: Any
    parentUuid: Any
    logicalParentUuid: Any
    isSidechain: Any
    agentId: Any
    agentName: Any
    teamName: Any
    forkedFrom: Any
    sessionKind: Any
    cwd: Any
    gitBranch: Any
    version: Any
    entrypoint: Any
    userType: Any
    permissionMode: Any
    sourceToolAssistantUUID: Any
    requestId: Any
    promptId: Any
    hookEvent: Any
    isCompactSummary: Any
    compactMetadata: Any
    subtype: Any
    content: Any
    message: _Message
    # A tool's result is often text (an error): every JSON type but an object is kept whole.
    toolUseResult: _ToolUseResult | str | list[Any] | bool | int | float | None


# float_hook: floats as the generic decoder (and json.loads) make them.
_TYPED = msgspec.json.Decoder(_ClaudeLine, float_hook=float).decode
_GENERIC = msgspec.json.Decoder(float_hook=float).decode


def claude_line(raw: bytes) -> Any:
    """One line of a Claude transcript: a user or assistant entry as a dict of the keys
    the readers use, any other line as the generic decoder reads it; raises what the
    generic decoder raises."""
    try:
        obj = _TYPED(raw)
    except Exception:  # values of other types than listed: the generic decoder decides
        return _GENERIC(raw)
    kind = obj.get("type")
    if kind == "assistant" or kind == "user":
        return obj
    return _GENERIC(raw)


def claude_decoder(data: bytes) -> Callable[[bytes], Any]:
    """The line decoder for a Claude transcript's bytes: :func:`claude_line`, or the
    generic decoder when the file is not UTF-8 throughout (a skipped value is not checked
    for UTF-8, and such a line must fail as it always did)."""
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return _GENERIC
    return claude_line
