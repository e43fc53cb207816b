"""Bad input at the sources (issue 13): each case ends in rows, a counted skip or one
``SourceError`` naming the file — never a traceback, nothing silently lost."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphkit.builds.run import build
from graphkit.core.errors import SourceError
from graphkit.sources.transcripts import read_transcripts, transcript_kind
from tests.helpers.rows import identity_cases, row, table, write_parquet
from tests.helpers.transcripts import user, write_jsonl


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_jsonl_row_longer_than_the_reader_block(tmp_path: Path) -> None:
    # A pasted log: one 3 MiB content_text, longer than pyarrow's default JSON block.
    rows = [dict(r) for r in identity_cases()[:3]]
    rows[1]["content_text"] = "x" * (3 << 20)
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    result = build(path, include_content=True, fingerprints=False)
    assert result.projection.rows_read == 3


def test_deeply_nested_transcript_line_is_a_skipped_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p" / "s.jsonl", [user("u0", "s", "2026-01-01T00:00:00Z",
                                                         "hello")])
    with path.open("a") as f:
        f.write('{"type": "user", "sessionId": "s", "toolUseResult": ' + _deep(10_000) + "}\n")
    result = read_transcripts([tmp_path / "p"])
    assert result.table.num_rows == 1
    [skip] = result.skipped
    assert skip.line == 2 and "nested" in skip.reason


def test_deeply_nested_first_line_does_not_break_detection(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text('{"a": ' + _deep(10_000) + "}\n")
    assert transcript_kind(path) is None


def test_deeply_nested_json_lines_row_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    rows = identity_cases()[:2]
    text = "".join(json.dumps(r, default=str) + "\n" for r in rows)
    path.write_text(text + '{"session_id": "s", "attributes": ' + _deep(10_000) + "}\n")
    # pyarrow's reader would crash the process on it: refused first, by file and line.
    with pytest.raises(SourceError) as info:
        build(path, fingerprints=False)
    assert f"{path}:3" in str(info.value) and "nested" in str(info.value)


@pytest.mark.parametrize("kind", ["dangling", "loop"])
def test_broken_symlink_in_a_rows_folder_is_named(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "rows"
    write_parquet(identity_cases()[:2], folder / "a.parquet")
    link = folder / "b.parquet"
    if kind == "dangling":
        link.symlink_to(folder / "gone.parquet")
    else:
        link.symlink_to(link)
    with pytest.raises(SourceError) as info:
        build(folder, fingerprints=False)
    assert "b.parquet" in str(info.value) and "link" in str(info.value)


def test_file_name_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "rows"
    write_parquet(identity_cases()[:2], folder / "a.parquet")
    bad = os.fsencode(str(folder)) + b"/r\xe9sum\xe9.parquet"
    with open(bad, "wb") as f:
        pq.write_table(table(identity_cases()[:2]), f)
    with pytest.raises(SourceError) as info:
        build(folder, fingerprints=False)
    assert "UTF-8" in str(info.value)


@pytest.mark.parametrize("kind", ["rows", "transcripts"])
def test_unreadable_sub_folder_fails_the_build(tmp_path: Path, kind: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests may run as root, where chmod 000 still reads: refuse the listing instead.
    root = tmp_path / "rows"
    if kind == "rows":
        write_parquet(identity_cases()[:2], root / "date=2026-11-20" / "p.parquet")
        write_parquet(identity_cases()[2:4], root / "date=2026-11-21" / "p.parquet")
    else:
        for day in ("date=2026-11-20", "date=2026-11-21"):
            write_jsonl(root / day / "s.jsonl", [user("u", day, "2026-01-01T00:00:00Z", "hi")])
    real = os.scandir

    def scandir(path: object = ".") -> object:
        if str(path).endswith("date=2026-11-21"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(SourceError) as info:
        build(root, fingerprints=False)
    assert "date=2026-11-21" in str(info.value)


@pytest.mark.slow
def test_invalid_utf8_in_a_parquet_string_is_repaired_and_said(tmp_path: Path) -> None:
    rows = identity_cases()[:3]
    good = table(rows)
    sessions = pa.array([r["session_id"].encode() for r in rows[:2]] + [b"bad\xff\xfeid"],
                        pa.binary()).cast(pa.string(), safe=False)  # no UTF-8 check
    bad = good.set_column(good.schema.get_field_index("session_id"), "session_id", sessions)
    path = tmp_path / "rows.parquet"
    pq.write_table(bad, path)
    result = build(path, fingerprints=False)
    got = result.graph.nodes["Session"].table.column("session_id").to_pylist()
    assert "bad\ufffd\ufffdid" in got
    [finding] = [f for f in result.sources.findings if f["check"] == "invalid-utf8"]
    assert finding["count"] == 1 and finding["examples"][0]["column"] == "session_id"
    pa.table({"s": got}).validate(full=True)  # what a snapshot holds reads back


def test_row_builder_rows_still_build(tmp_path: Path) -> None:
    # The baseline the cases above break: the same rows, well formed, build.
    path = write_parquet([row("s1"), row("s1")], tmp_path / "ok.parquet")
    assert build(path, fingerprints=False).projection.rows_read == 2
