"""Claude lines decoded typed (only the keys the parser reads) parse exactly as lines
decoded whole (msgspec's generic decoder, then json.loads for what it refuses).

Every Claude transcript among the fixtures is parsed both ways, and so are files of awkward
lines: values of unexpected types where the typed decoding has a type, invalid UTF-8 or a
lone surrogate in a key the parser never reads, huge numbers, NaN, duplicate keys, deep
nesting, a uuid written twice with other content in a key nobody reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from graphkit.sources.transcripts import claude
from graphkit.sources.transcripts.buffer import FileParse
from graphkit.sources.transcripts.decode import claude_decoder, claude_line
from graphkit.sources.transcripts.files import sniff_kind

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
GENERIC = msgspec.json.Decoder(float_hook=float).decode


def _claude_files() -> list[Path]:
    out = []
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        if sniff_kind(path.name, path.read_bytes()) == "claude":
            out.append(path)
    return out


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[FileParse, FileParse]:
    data = path.read_bytes()
    typed = claude.parse_claude(path, data)
    with monkeypatch.context() as m:
        m.setattr(claude, "claude_decoder", lambda _data: GENERIC)
        whole = claude.parse_claude(path, data)
    return typed, whole


def _same(a: FileParse, b: FileParse) -> None:
    assert a.kind == b.kind
    assert a.rows == b.rows
    assert a.skipped == b.skipped
    assert json.dumps(a.facts, sort_keys=True, default=repr) == \
        json.dumps(b.facts, sort_keys=True, default=repr)


def test_there_are_claude_fixtures() -> None:
    assert len(_claude_files()) >= 20


@pytest.mark.parametrize("path", _claude_files(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_parses_alike(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    typed, whole = _both(path, monkeypatch)
    _same(typed, whole)


def _entry(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "type": "assistant", "uuid": "a1", "parentUuid": None, "sessionId": "s1",
        "isSidechain": False, "cwd": "/w", "timestamp": "2026-01-02T10:00:01.000Z",
        "message": {"id": "m1", "role": "assistant", "model": "claude-x",
                    "content": [{"type": "text", "text": "hi"}],
                    "usage": {"input_tokens": 3, "output_tokens": 4}}}
    base.update(extra)
    return base


# Lines as bytes: some are no JSON json.dumps would write.
def _line(entry: dict[str, Any], **raw: str) -> bytes:
    text = json.dumps(entry)
    for key, value in raw.items():
        text = text[:-1] + f', "{key}": {value}}}'
    return text.encode()


_USER = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1", "cwd": "/w",
         "timestamp": "2026-01-02T10:00:00.000Z",
         "message": {"role": "user", "content": "go"}}

AWKWARD: dict[str, list[bytes]] = {
    "message a string": [_line(_entry(message="text"))],
    "content an object": [_line(_entry(message={"role": "assistant", "content": {"a": 1}}))],
    "a block a string": [_line(_entry(message={"id": "m", "role": "assistant",
                                               "content": ["x", {"type": "text", "text": "y"}]}))],
    "image source a string": [_line(_entry(message={
        "id": "m", "role": "assistant",
        "content": [{"type": "image", "source": "AAAA"}]}))],
    "image with its data": [_line(_entry(message={
        "id": "m", "role": "assistant", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBOR" * 50}}]}))],
    "tool result text and object": [
        _line(_USER | {"toolUseResult": "Error: no such file",
                       "message": {"role": "user", "content": [
                           {"type": "tool_result", "tool_use_id": "t1", "content": "no"}]}}),
        _line(_USER | {"uuid": "u2", "toolUseResult": {"agentId": "ag", "file": {
            "content": "x" * 500}, "prompt": "go"}, "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t2", "content": "done"}]}}),
        _line(_USER | {"uuid": "u3", "toolUseResult": [1, {"a": 2}]}),
        _line(_USER | {"uuid": "u4", "toolUseResult": 12.5}),
    ],
    "invalid UTF-8 in an unread key": [_line(_USER), _line(_entry())[:-1] + b', "x": "\xc3"}'],
    "encoded surrogate in an unread key": [_line(_entry())[:-1] + b', "x": "\xed\xa0\x80"}'],
    "escaped lone surrogate in an unread key": [_line(_entry(), x='"\\ud800 cut"')],
    "huge numbers": [_line(_entry(), x="123456789012345678901234567890",
                           y="1.5e400"),
                     _line(_entry(uuid="a2", isSidechain=10**30), z="-1e-400")],
    "NaN in an unread key": [_line(_entry(), x="NaN")],
    "duplicate keys": [_line(_entry(), type='"user"'),
                       _line(_entry(uuid="a3"), message='"late"'),
                       _line(_entry(uuid="a4", message="early"),
                             message='{"role": "assistant", "content": "x"}')],
    "deep nesting in an unread key": [_line(_entry(), x="[" * 995 + "]" * 995),
                                      _line(_entry(uuid="a5"), x="[" * 5000 + "]" * 5000)],
    "uuid again, other unread keys": [_line(_entry(), x='"one"'), _line(_entry(), x='"two"')],
    "uuid again, other block keys": [
        _line(_entry(message={"id": "m1", "role": "assistant",
                              "content": [{"type": "text", "text": "hi", "extra": 1}]})),
        _line(_entry(message={"id": "m1", "role": "assistant",
                              "content": [{"type": "text", "text": "hi"}]}))],
    "uuid again, the same block keys": [
        _line(_entry(message={"id": "m1", "role": "assistant",
                              "content": [{"type": "text", "text": "hi", "extra": 1}]}))] * 2,
    "wrong types in read keys": [_line(_entry(parentUuid=True, timestamp=5, sessionId=["s"],
                                              requestId={"a": 1}, cwd=3.5))],
    "other line types": [
        json.dumps({"type": "system", "subtype": "compact_boundary", "uuid": "b1",
                    "sessionId": "s1", "timestamp": "2026-01-02T10:00:02.000Z",
                    "compactMetadata": {"trigger": "auto", "preTokens": 5}}).encode(),
        json.dumps({"type": "attachment", "uuid": "q1", "sessionId": "s1",
                    "timestamp": "2026-01-02T10:00:03.000Z",
                    "attachment": {"type": "queued_command", "prompt": "more"}}).encode(),
        json.dumps({"role": "assistant", "model": "m", "content": [{"type": "text",
                                                                   "text": "flat"}]}).encode(),
        json.dumps({"type": "brand-new", "sessionId": "s1"}).encode(),
    ],
    "a flat line twice": [
        json.dumps({"role": "assistant", "uuid": "f1", "content": "x"}).encode(),
        json.dumps({"role": "assistant", "uuid": "f1", "content": "x"}).encode()],
}


@pytest.mark.parametrize("name", list(AWKWARD))
def test_awkward_lines_parse_alike(name: str, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "proj" / "s1.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\n".join([_line(_USER), *AWKWARD[name]]) + b"\n")
    typed, whole = _both(path, monkeypatch)
    _same(typed, whole)


def test_typed_decoding_leaves_out_what_no_reader_reads() -> None:
    # The test that the fast path is taken: a tool's whole output and an image's data are
    # not built, the keys the parser reads are.
    line = _line(_USER | {"toolUseResult": {"agentId": "ag", "file": {"content": "x" * 99}},
                          "message": {"role": "user", "content": [
                              {"type": "image", "source": {"media_type": "image/png",
                                                           "data": "AAAA"}}]}})
    got = claude_line(line)
    assert got["toolUseResult"] == {"agentId": "ag"}
    assert got["message"]["content"] == [{"type": "image",
                                          "source": {"media_type": "image/png"}}]
    assert got["sessionId"] == "s1" and got["uuid"] == "u1"
    # Other line types keep every key.
    other = {"type": "progress", "data": {"a": [1, 2]}, "sessionId": "s1"}
    assert claude_line(json.dumps(other).encode()) == other


def test_a_file_not_utf8_throughout_is_decoded_whole() -> None:
    assert claude_decoder(b'{"a": "\xc3\xa9"}\n') is claude_line
    assert claude_decoder(b'{"a": "\xc3"}\n') is not claude_line
