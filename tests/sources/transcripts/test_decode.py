"""The fast JSON paths of the transcript parsers give exactly what json gave before.

msgspec decodes transcript lines and writes tool arguments; whatever it refuses or would
write differently goes to json. These tests hold the two to the json reference, value
and type, on the awkward inputs: NaN, huge ints, floats json and msgspec print
differently, lone surrogates, a byte-order mark, invalid UTF-8, deep nesting.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphkit.sources.transcripts.buffer import dumps_decoded, json_lines, json_roundtrip, loads
from tests.helpers.transcripts import AWKWARD_LINES, typed

SETTINGS = settings(max_examples=300, deadline=None, derandomize=True, database=None)


def reference_lines(data: bytes) -> tuple[list[tuple[int, Any]], list[tuple[int, str]]]:
    """What json_lines yielded before msgspec: json.loads on each line of the file's text
    (its bytes if the file is not UTF-8 throughout), lone surrogates made U+FFFD as the
    parsers now do (a build used to crash on them)."""
    skipped: list[tuple[int, str]] = []
    out = []
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
        except RecursionError:
            skipped.append((number, "JSON nested too deeply to read"))
            continue
        text = raw if isinstance(raw, str) else raw.decode("latin-1")
        if "\\ud" in text.lower():  # an escaped UTF-16 half: lone ones become U+FFFD
            obj = without_lone_halves(obj)
        if isinstance(obj, dict):
            out.append((number, obj))
        else:
            skipped.append((number, "line is not a JSON object"))
    return out, skipped


def without_lone_halves(value: Any) -> Any:
    """``value`` with each lone UTF-16 surrogate replaced by U+FFFD (UTF-16's own decoder
    with errors="replace"; a whole pair is one character by then and stays)."""
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, list):
        return [without_lone_halves(v) for v in value]
    if isinstance(value, dict):
        return {without_lone_halves(k): without_lone_halves(v) for k, v in value.items()}
    return value


def fast_lines(data: bytes) -> tuple[list[tuple[int, Any]], list[tuple[int, str]]]:
    skipped: list[tuple[int, str]] = []
    return list(json_lines(data, skipped)), skipped


def test_awkward_lines_read_as_json_read_them() -> None:
    data = b"\n".join(AWKWARD_LINES)
    assert typed(fast_lines(data)) == typed(reference_lines(data))
    assert fast_lines(data)[1]  # the refused lines are reported, with their numbers


def test_a_file_with_invalid_utf8_falls_back_line_by_line() -> None:
    data = b'{"ok": 1}\n{"bad": "\xff\xfe"}\n{"n": NaN}\n\xef\xbb\xbf{"bom": 2}\n{"ok": 3}'
    assert typed(fast_lines(data)) == typed(reference_lines(data))


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True, allow_infinity=True)
    | st.integers(min_value=-(2**80), max_value=2**80) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@pytest.mark.slow
@SETTINGS
@given(json_values)
def test_tool_arguments_are_written_as_json_dumps_writes_them(value: Any) -> None:
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert dumps_decoded(value) == expected


@pytest.mark.slow
@SETTINGS
@given(st.dictionaries(st.text(), json_values, max_size=5))
def test_lines_decode_to_the_values_and_types_json_gives(value: dict[str, Any]) -> None:
    for ascii_only in (True, False):
        line = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
        data = line + b"\n\n" + line
        assert typed(fast_lines(data)) == typed(reference_lines(data))
        text = json.dumps(value, ensure_ascii=ascii_only)
        assert typed(loads(text)) == typed(json.loads(text))


@pytest.mark.slow
@SETTINGS
@given(st.dictionaries(st.text(), json_values, max_size=5))
def test_facts_round_trip_as_through_json(value: dict[str, Any]) -> None:
    assert typed(json_roundtrip(value)) == typed(json.loads(json.dumps(value, sort_keys=True)))


AWKWARD_FACTS: list[Any] = [
    {"spawns": {"t1": [float("nan"), "d"]}, "usage": [[1, "m|", {"b": 1, "a": 2}]]},
    {"x": [float("inf"), -float("inf"), -0.0, 1e16, 5e-324, 1.7976931348623157e308]},
    {"t": (1, "a", (2.5,)), "n": None, "b": [True, False, 1, 0, 1.0]},
    {"big": 2**70, "neg": -(2**90), "keys": {"\U00010000": 1, "\uffff": 2, "B": 3, "b": 4}},
    {"lone": "\ud800 x", "pair": "\U0001f600", "k\udc00": 1},
    {1: "int key", 2: {3: 4}},
    {"nested": [[[[{"z": 1, "a": [None, {"y": float("nan")}]}]]]]},
    {"f": 1.0, "i": 1, "s": "1", "bool": True},
    [], {}, None, "text", 3, 2.5,
]


def test_awkward_facts_round_trip_as_through_json() -> None:
    for value in AWKWARD_FACTS:
        expected = json.loads(json.dumps(value, sort_keys=True))
        assert typed(json_roundtrip(value)) == typed(expected), value


def test_facts_json_cannot_write_fail_as_before() -> None:
    for value in ({1: "a", "b": 2}, {"s": {1, 2}}, {"o": object()}):
        try:
            json.dumps(value, sort_keys=True)
        except TypeError:
            with pytest.raises(TypeError):
                json_roundtrip(value)
        else:  # pragma: no cover - each of these is refused by json
            raise AssertionError(value)
