"""A bounded fuzz run over the transcript parsers, through the build call.

Each example takes one real line from ``tests/fixtures/transcripts`` (Claude
Code sessions with subagents, Codex rollouts), mutates it (truncated, bytes
inserted or flipped, invalid UTF-8, a value of another type, a key dropped,
a value nested thousands deep, a very long value) and builds the folder it
lives in. The build must not crash, and a line that is no longer a JSON object
must be reported as skipped with its file and line number.

Derandomized with a fixed number of examples: CI runs the same inputs every time.

Crash classes the fuzz run found in the parsers (graphkit/sources, being
restructured by its owners) are listed in :data:`KNOWN_CRASHES`, each with a
minimal reproduction below marked ``xfail(strict=True)``: the fuzz run treats
exactly those as known, anything else fails it, and when a fix lands the
reproduction passes, fails as XPASS, and its entry must be removed here. The
classes found so far are fixed: the list is empty, their reproductions below are
plain tests that the lines are reported as skipped.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import traceback
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from graphkit.builds.run import build
from graphkit.core.errors import GraphkitError
from tests.helpers.paths import FIXTURES

ROOT = FIXTURES / "transcripts"
# No explain phase: it only annotates failures, and writes .hypothesis/patches.
FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                phases=[Phase.explicit, Phase.generate, Phase.shrink],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _unit(path: Path) -> Path:
    """The smallest folder that still reads as a whole: a Claude session with its
    subagents folder, or the file itself."""
    for up in path.parents:
        if up.name == "subagents":
            return up.parent  # <session>/ ; its main file is <session>.jsonl beside it
    return path


# Transcripts only: a workflow's journal.jsonl is not one, and graphkit does not read it.
FILES = sorted(p for p in ROOT.rglob("*.jsonl")
               if p.name != "journal.jsonl" and p.stat().st_size < 200_000
               and p.read_bytes().strip())

# (exception type, text in its message, parser file in the traceback): crash
# classes found by this run and not yet fixed (none now; their reproductions
# below are plain tests that the lines are reported as skipped).
KNOWN_CRASHES: list[tuple[str, str, str]] = []


def _known(exc: BaseException) -> bool:
    frames = "".join(traceback.format_tb(exc.__traceback__))
    return any(type(exc).__name__ == name and text in str(exc) and where in frames
               for name, text, where in KNOWN_CRASHES)
CASES = [(f, i) for f in FILES for i, line in enumerate(f.read_bytes().split(b"\n"))
         if line.strip()]

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=3),
    max_leaves=8)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[Path, int, bytes]:
    """(file, 0-based line, the line's new bytes)."""
    path, index = draw(st.sampled_from(CASES))
    line = path.read_bytes().split(b"\n")[index]
    how = draw(st.sampled_from(["truncate", "insert", "delete", "flip", "bad-utf8",
                                "retype", "drop-key", "deep", "long"]))
    if how == "truncate":
        return path, index, line[: draw(st.integers(1, len(line) - 1))]
    if how in ("insert", "bad-utf8"):
        at = draw(st.integers(0, len(line)))
        junk = b"\xff\xfe\xc3" if how == "bad-utf8" else draw(st.binary(min_size=1, max_size=8))
        return path, index, line[:at] + junk + line[at:]
    if how == "delete":
        a = draw(st.integers(0, len(line) - 1))
        return path, index, line[:a] + line[a + draw(st.integers(1, 16)):]
    if how == "flip":
        a = draw(st.integers(0, len(line) - 1))
        return path, index, line[:a] + bytes([line[a] ^ draw(st.integers(1, 255))]) + line[a + 1:]
    if not _is_object_line(line):  # a fixture's own malformed line: mutate its bytes
        a = draw(st.integers(0, len(line) - 1))
        return path, index, line[:a] + line[a + 1:]
    obj = json.loads(line)
    holder, key = _pick(draw, obj)
    if how == "drop-key" and isinstance(holder, dict) and holder:
        del holder[key]
        return path, index, json.dumps(obj).encode()
    marker = "\u2063DEEP\u2063"
    if how == "deep":
        new_value: Any = marker
    elif how == "long":
        new_value = "x" * draw(st.integers(100_000, 400_000))
    else:
        new_value = draw(JSON_VALUES)
    if isinstance(holder, dict | list) and len(holder):
        holder[key] = new_value
    else:
        obj = new_value
    text = json.dumps(obj)
    # 5,000 levels of nesting: written by hand (json.dumps would itself recurse).
    text = text.replace(json.dumps(marker), "[" * 5000 + "]" * 5000)
    return path, index, text.encode()


def _pick(draw: st.DrawFn, obj: Any) -> tuple[Any, Any]:
    """A (container, key) somewhere in ``obj``, walking down a few levels at random."""
    holder: Any = obj
    key: Any = None
    for _ in range(draw(st.integers(1, 4))):
        if isinstance(holder, dict) and holder:
            key = draw(st.sampled_from(sorted(holder)))
        elif isinstance(holder, list) and holder:
            key = draw(st.integers(0, len(holder) - 1))
        else:
            break
        child = holder[key]
        if not isinstance(child, dict | list) or not child:
            break
        holder = child
    if key is None or (isinstance(holder, dict) and key not in holder) or (
            isinstance(holder, list) and not isinstance(key, int)):
        key = next(iter(holder), None) if isinstance(holder, dict) else 0
    return holder, key


def _is_object_line(data: bytes) -> bool:
    try:
        return isinstance(json.loads(data.decode("utf-8")), dict)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False


@pytest.mark.slow
@FUZZ
@given(mutated())
def test_mutated_transcript_lines_never_crash_a_build(case: tuple[Path, int, bytes]) -> None:
    path, index, new_line = case
    with tempfile.TemporaryDirectory() as tmp:
        unit = _unit(path)
        target = Path(tmp) / "in" / unit.relative_to(ROOT)
        target.parent.mkdir(parents=True)
        if unit.is_dir():
            shutil.copytree(unit, target)
            main = unit.with_suffix(".jsonl")
            if main.is_file():
                shutil.copy(main, target.with_suffix(".jsonl"))
        else:
            shutil.copy(unit, target)
        victim = Path(tmp) / "in" / path.relative_to(ROOT)
        lines = victim.read_bytes().split(b"\n")
        lines[index] = new_line
        victim.write_bytes(b"\n".join(lines))

        try:
            result = build([Path(tmp) / "in"], cache_dir=Path(tmp) / "cache")
        except GraphkitError as exc:
            # A whole-file refusal is a report too, if it names the line (exit 2, one line).
            assert f"{victim}:{index + 1}" in str(exc) and "\n" not in str(exc), str(exc)
            return
        except Exception as exc:
            if _known(exc):
                return  # a listed crash class (see KNOWN_CRASHES), reproduced below
            raise

        skipped = {(s["path"], s["line"]) for s in result.sources.skipped}
        if new_line.strip() and not _is_object_line(new_line):
            assert (str(victim), index + 1) in skipped, (
                f"{victim.name}:{index + 1} is not a JSON object but was not reported; "
                f"skipped: {sorted(skipped)}")
        for s in result.sources.skipped:
            assert s["reason"] and "\n" not in s["reason"] and "Traceback" not in s["reason"]


# --- the crash classes found, one minimal reproduction each --------------------------

CLAUDE = ('{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s-1",'
          '"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}')
CODEX = ('{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta",'
         '"payload":{"id":"019a-1","cwd":"/w"}}\n'
         '{"timestamp":"2026-01-01T00:00:01Z","type":"event_msg",'
         '"payload":{"type":"user_message","message":"hi"}}')


def _build_one(tmp_path: Path, name: str, text: str) -> list[dict[str, Any]]:
    f = tmp_path / "in" / name
    f.parent.mkdir(exist_ok=True)
    f.write_text(text, encoding="utf-8")
    return build([f], cache_dir=tmp_path / "cache").sources.skipped


def test_the_reproductions_are_real_transcripts(tmp_path: Path) -> None:
    assert _build_one(tmp_path, "11111111-2222-4333-8444-555555555555.jsonl", CLAUDE) == []
    assert _build_one(tmp_path, "rollout-2026-01-01T00-00-00-019a-1.jsonl", CODEX) == []


def test_deeply_nested_value_is_reported_with_file_and_line(tmp_path: Path) -> None:
    # Found by this run as a RecursionError; now a skipped line or one line naming it.
    deep = CLAUDE.replace('"hi"', "[" * 5000 + "]" * 5000)
    name = "11111111-2222-4333-8444-555555555555.jsonl"
    try:
        skipped = _build_one(tmp_path, name, deep)
    except GraphkitError as exc:
        assert f"{tmp_path / 'in' / name}:1" in str(exc) and "\n" not in str(exc)
    else:
        assert [s["line"] for s in skipped] == [1]


def test_known_claude_id_of_another_type_is_a_skipped_line(tmp_path: Path) -> None:
    odd = CLAUDE.replace('"parentUuid":null', '"parentUuid":true')
    skipped = _build_one(tmp_path, "11111111-2222-4333-8444-555555555555.jsonl", odd)
    assert [s["line"] for s in skipped] == [1]


def test_known_codex_id_of_another_type_is_a_skipped_line(tmp_path: Path) -> None:
    odd = CODEX.replace('"id":"019a-1"', '"id":5')
    skipped = _build_one(tmp_path, "rollout-2026-01-01T00-00-00-019a-1.jsonl", odd)
    assert [s["line"] for s in skipped] == [1]


def test_known_unhashable_type_field_is_a_skipped_line(tmp_path: Path) -> None:
    odd = CLAUDE.replace('"type":"user"', '"type":["user"]')
    skipped = _build_one(tmp_path, "11111111-2222-4333-8444-555555555555.jsonl", odd)
    assert [s["line"] for s in skipped] == [1]
