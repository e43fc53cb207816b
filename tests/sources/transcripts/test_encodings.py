"""Transcripts in BOM-marked UTF-8, UTF-16 or UTF-32 read as the UTF-8 they say (issue
31: a UTF-8 BOM lost the first line, a UTF-16 file became a one-message session of "not
valid JSON" lines); one that is not whole text in its encoding is skipped, naming it.
JSON Lines row files in UTF-16/32 are refused naming the encoding."""

from __future__ import annotations

import codecs
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from graphkit.cli import cli

SHOWCASE = (Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
            / "claude-code-log" / "minimal_showcase")
ROLLOUT = (Path(__file__).resolve().parents[2] / "fixtures" / "transcripts" / "claude-code-log"
           / "codex" / "sessions" / "2026" / "01" / "02"
           / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl")

ENCODINGS = {
    "utf-8-bom": lambda text: codecs.BOM_UTF8 + text.encode("utf-8"),
    "utf-16": lambda text: text.encode("utf-16"),  # with its BOM
    "utf-16-be": lambda text: codecs.BOM_UTF16_BE + text.encode("utf-16-be"),
    "utf-32": lambda text: text.encode("utf-32"),
    "utf-16-le-no-bom": lambda text: text.encode("utf-16-le"),
}


def build(folder: Path, snap: Path) -> Result:
    return CliRunner().invoke(cli, ["build", str(folder), "--snapshot", str(snap), "--json"])


def tables(snap: Path) -> dict[str, str]:
    m = json.loads((snap / "manifest.json").read_text())
    return {t: e["sha256"] for part in ("nodes", "edges") for t, e in m[part].items()}


@pytest.mark.slow
@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@pytest.mark.parametrize("source", ["claude", "codex"])
def test_an_encoded_transcript_builds_the_same_graph(tmp_path: Path, encoding: str,
                                                     source: str) -> None:
    plain, encoded = tmp_path / "plain", tmp_path / "encoded"
    if source == "claude":
        shutil.copytree(SHOWCASE, plain)
        shutil.copytree(SHOWCASE, encoded)
        files = [p for p in encoded.rglob("*.json*")]  # the sidecars too
    else:
        for folder in (plain, encoded):
            folder.mkdir()
            shutil.copy(ROLLOUT, folder / ROLLOUT.name)
        files = [encoded / ROLLOUT.name]
    for f in files:
        f.write_bytes(ENCODINGS[encoding](f.read_text(encoding="utf-8")))
    one, two = build(plain, tmp_path / "a"), build(encoded, tmp_path / "b")
    assert one.exit_code == 0 and two.exit_code == 0, two.output
    said = [[(s["line"], s["reason"]) for s in json.loads(
        r.output.strip().splitlines()[-1])["skipped_lines"]] for r in (one, two)]
    assert said[0] == said[1]
    assert tables(tmp_path / "a") == tables(tmp_path / "b")


def test_a_cut_utf16_transcript_is_skipped_naming_its_encoding(tmp_path: Path) -> None:
    folder = tmp_path / "claude"
    shutil.copytree(SHOWCASE, folder)
    victim = folder / "55550000-0000-4000-8000-000000000002.jsonl"
    victim.write_bytes(victim.read_text().encode("utf-16")[:-1])  # half a character
    r = build(folder, tmp_path / "s")
    assert r.exit_code == 0, r.output
    skipped = (tmp_path / "s.skipped.jsonl").read_text()
    reason = json.loads(skipped.splitlines()[0])
    assert reason["path"].endswith(victim.name) and "UTF-16" in reason["reason"]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32-be"])
def test_a_json_lines_row_file_in_utf16_is_one_line_naming_it(tmp_path: Path,
                                                              encoding: str) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(json.dumps({"session_id": "s", "message_id": "m"}).encode(encoding))
    r = build(rows, tmp_path / "s")
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert encoding.upper().split("-")[0] in r.output and "UTF-8" in r.output
    assert len(r.output.strip().splitlines()) == 1
