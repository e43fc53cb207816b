"""What a terminal is shown: ids holding terminal escapes, bidi controls, line
separators or newlines are shown escaped, never obeyed, on a terminal or piped; an id
given in the other Unicode form (NFC/NFD) says which one is stored."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.helpers.cli import graphkit, on_a_terminal, one_line_error
from tests.helpers.paths import REPO
from tests.helpers.rows import (
    CLAUDE,
    identity_cases_renamed,
    json_lines,
    table,
)

EVIL_SESSION = CLAUDE + "\x1b[31mEVIL\x1b[0m\nX"
EVIL_AGENT = "agentA\x1b]0;pwned\x07\x1b[2J[link=https://evil.example]x[/link]"


@pytest.fixture(scope="module")
def evil_snapshot(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Rows whose ids, model and cwd hold terminal escapes, a newline and rich markup."""
    tmp = tmp_path_factory.mktemp("evil")
    rows = []
    for r in identity_cases_renamed(EVIL_SESSION, EVIL_AGENT):
        if r.get("model"):
            r["model"] = r["model"] + "\x1b[31mEVIL"
        if r.get("attributes"):
            attrs = json.loads(r["attributes"])
            attrs["usage"] = {"input_tokens": 3}
            attrs.setdefault("claude", {})["agent_type"] = "Ex\x1b]0;t\x07plore"
            r["attributes"] = json.dumps(attrs)
        rows.append(r)
    src = tmp / "rows.parquet"
    pq.write_table(table(rows), src)
    proc = graphkit("build", src, "--snapshot", tmp / "snap")
    assert proc.returncode == 0, proc.stderr
    return src, tmp / "snap"


def _no_escapes(text: str) -> None:
    for seq in ("\x1b]", "\x1b[2J", "\x1b[31mEVIL", "\x07"):
        assert seq not in text, (seq, text)
    assert "evil.example" not in text or "[link=" in text  # shown, never made a link


@pytest.mark.slow
@pytest.mark.parametrize("terminal", [False, True])
def test_ids_holding_terminal_escapes_are_shown_never_obeyed(
        evil_snapshot: tuple[Path, Path], terminal: bool) -> None:
    # Was: piped, `tree`, `lineage`, `usage`, `files`, `check` wrote an id's OSC
    # sequences (set the window title, ring the bell) and `\x1b[2J` raw; on a terminal
    # click kept every escape, and rich took `[link=…]` in an agent id as markup; an
    # id's newline split `tree` and `lineage` lines in two.
    src, snap = evil_snapshot
    good = snap.parent / "good"
    assert graphkit("build", REPO / "samples" / "rows", "--snapshot", good).returncode == 0
    for args in (["sessions"], ["tree", EVIL_SESSION], ["lineage", EVIL_SESSION, EVIL_AGENT],
                 ["usage", EVIL_SESSION], ["usage", EVIL_SESSION, "--by", "model"],
                 ["usage", EVIL_SESSION, "--by", "agent-type"], ["files"]):
        out, err, code = on_a_terminal([*args, "--snapshot", str(snap)], stderr_tty=False,
                                   stdout_tty=terminal)
        assert code == 0, (args, err)
        _no_escapes(out)
        if args[0] in ("tree", "lineage"):
            assert "EVIL\\x1b[0m\\nX" in out, out
    out, err, code = on_a_terminal(["diff", str(good), str(snap)], stderr_tty=False,
                               stdout_tty=terminal)
    assert code == 0, err
    _no_escapes(out)
    out, err, code = on_a_terminal(["check", str(src)], stderr_tty=False, stdout_tty=terminal)
    _no_escapes(out)


BIDI_SESSION = "sess\u202eevil\u202c-c1a0"
LINE_SEP_AGENT = "agent\u2028A\u2066x\u2069"


@pytest.fixture(scope="module")
def bidi_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rows whose session id holds a right-to-left override and whose agent id holds
    a line separator and a bidi isolate."""
    tmp = tmp_path_factory.mktemp("bidi")
    rows = identity_cases_renamed(BIDI_SESSION, LINE_SEP_AGENT)
    src = tmp / "rows.jsonl"
    src.write_text(json_lines(rows))
    assert graphkit("build", src, "--snapshot", tmp / "snap").returncode == 0
    return tmp / "snap"


def test_bidi_controls_and_line_separators_in_ids_are_shown_escaped(
        bidi_snapshot: Path, tmp_path: Path) -> None:
    # Was: U+202E reached the terminal raw in tree, lineage, usage, files and view's
    # "wrote" line (the rest of the line shown reversed: one id passing for another),
    # and U+2028 split lines for every reader that splits as Python does; view's line
    # also carried ESC raw (the other commands were escaped first).
    snap = bidi_snapshot
    for args in (["sessions"], ["tree", BIDI_SESSION], ["lineage", BIDI_SESSION],
                 ["lineage", LINE_SEP_AGENT], ["usage", BIDI_SESSION], ["files"],
                 ["view", BIDI_SESSION, "--out", tmp_path / "v.html"]):
        proc = graphkit(*args, "--snapshot", snap)
        assert proc.returncode == 0, (args, proc.stderr)
        for raw in ("\u202e", "\u2028", "\u2066"):
            assert raw not in proc.stdout and raw not in proc.stderr, (args, proc.stdout)
        if args[0] in ("tree", "view"):
            assert "sess\\u202eevil\\u202c-c1a0" in proc.stdout, proc.stdout
    # Data is exact where it is data: --json escapes as JSON does, --csv keeps the id.
    exact = graphkit("lineage", LINE_SEP_AGENT, "--snapshot", snap, "--json")
    assert json.loads(exact.stdout)["id"] == LINE_SEP_AGENT
    missing = graphkit("tree", "x\u202ey", "--snapshot", snap)
    one_line_error(missing, "x\\u202ey")


NFD_SESSION = "sess-cafe\u0301"      # "sess-café" as macOS writes a file name
NFC_SESSION = "sess-caf\u00e9"
NFD_AGENT = "agent-A\u030a"          # "agent-Å"


@pytest.mark.slow
def test_an_id_given_in_the_other_unicode_form_says_did_you_mean(tmp_path: Path) -> None:
    # Was: "no session has the id 'sess-café'" with nothing to tell it from the stored
    # 'sess-café' (NFD): both print the same. Ids stay distinct (compared as written;
    # twins may both exist), and a miss names the other form, escaped.
    rows = identity_cases_renamed(NFD_SESSION, NFD_AGENT)
    src = tmp_path / "rows.jsonl"
    src.write_text(json_lines(rows))
    snap = tmp_path / "snap"
    assert graphkit("build", src, "--snapshot", snap).returncode == 0
    escaped = json.dumps(NFD_SESSION)
    for args in (["tree", NFC_SESSION], ["lineage", NFC_SESSION], ["usage", NFC_SESSION],
                 ["view", NFC_SESSION, "--out", tmp_path / "v.html"]):
        one_line_error(graphkit(*args, "--snapshot", snap), f"did you mean {escaped}?",
                       "NFD form", "$'sess-cafe\\u0301'")
    one_line_error(graphkit("lineage", "agent-\u00c5", "--snapshot", snap),
                   f"did you mean {json.dumps(NFD_AGENT)}?")
    # Given as stored, each is found; an id of no form at all keeps the old hint.
    assert graphkit("tree", NFD_SESSION, "--snapshot", snap).returncode == 0
    assert graphkit("lineage", NFD_AGENT, "--snapshot", snap).returncode == 0
    one_line_error(graphkit("tree", "sess-tea", "--snapshot", snap), "graphkit sessions")
    # Twins both stored: each id answers for itself, never for its twin.
    twin = dict(rows[0], session_id=NFC_SESSION, message_id="twin", part_id="twin:0")
    src.write_text(json_lines([*rows, twin]))
    assert graphkit("build", src, "--snapshot", snap).returncode == 0
    for sid in (NFC_SESSION, NFD_SESSION):
        got = graphkit("tree", sid, "--snapshot", snap, "--json")
        assert got.returncode == 0, got.stderr
        session = json.loads(got.stdout.splitlines()[0])
        assert session["id"] == sid, session
