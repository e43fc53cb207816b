"""``touched_files`` computed column-wise (Arrow's JSON reader and compute functions)
equals the row-by-row rule (:func:`touched_json`) for every kind of tool call and
every odd document: the fast way only decides which rows it may take."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import graphkit.sources.touched as touched_module
from graphkit.sources.touched import (
    PATCHES,
    READS,
    SEARCHES,
    SHELLS,
    WRITES,
    touched_json,
    with_touched_files,
)

PATHS = ["a.py", "/abs/b.rs", "src/./c.go", "../up.txt", "x//y.md", "dir/", ".", "..",
         "C:\\win\\f.txt", "d\\e.txt", 'q"uote.py', "back\\slash/x.py", "tab\there.py",
         "ünï/cödé.py", "", "no_ext", ".bashrc", "a.b.c", "*.py", "src/**/*.ts", "x.",
         "/", "//net/x.py", "a/b/..", "new\nline.py"]
CWDS = [None, "", "/w", "/w/", "C:\\work", "rel/dir", "/a/../b"]
TOOLS = sorted({*READS, *WRITES, *SEARCHES, *PATCHES, *SHELLS, "Bash", "Task"})


def _docs(path: str) -> list[str | None]:
    """Documents naming ``path`` every way a tool might, and some no parser agrees on."""
    return [
        json.dumps({"file_path": path, "content": "x" * 50}),
        json.dumps({"notebook_path": path, "file_path": "other.ipynb"}),
        json.dumps({"notebook_path": "", "file_path": path}),
        json.dumps({"path": path, "pattern": "*.py"}),
        json.dumps({"path": "src", "pattern": path}),
        json.dumps({"pattern": path}),
        json.dumps({"path": "", "pattern": path}, ensure_ascii=False),
        json.dumps({"file_path": path}, indent=2),           # newlines between tokens
        "\ufeff" + json.dumps({"file_path": path}),           # json.loads refuses a BOM
        json.dumps({"file_path": path}) + json.dumps({"file_path": "b.py"}),  # two objects
        '{"file_path": "first.py", "file_path": ' + json.dumps(path) + "}",  # twice
        '{"file_path": 5, "path": ' + json.dumps(path) + "}",
        '{"file_path": NaN, "x": ' + json.dumps(path) + "}",
        '{"file_path": "\\ud800' + path.replace('"', "") + '"}',  # a lone surrogate
        json.dumps([path]),
        json.dumps(path),
        "not json " + path,
        "*** Begin Patch\n*** Update File: " + path + "\n*** End Patch",
        json.dumps({"command": ["apply_patch", "*** Add File: " + path + "\n"]}),
        json.dumps({"cmd": "apply_patch <<'EOF'\n*** Delete File: " + path + "\nEOF"}),
        json.dumps({"input": "*** Begin Patch\n*** Move to: " + path + "\n"}),
        # A header spelled with JSON escapes only: a patch without a literal "***".
        '{"patch": "\\u002a\\u002a\\u002a Update File: ' + path.replace('"', "") + '"}',
        json.dumps({"input": "apply_patch without headers " + path}),
        '{"x": ' + "[" * 3000 + "]" * 3000 + ', "file_path": ' + json.dumps(path) + "}",
        None,
    ]


def _table(rows: list[tuple[str | None, str | None, str | None, str]],
           encode: bool) -> pa.Table:
    names, args, cwds, parts = (list(c) for c in zip(*rows, strict=True))
    t = pa.table({"tool_name": pa.array(names, pa.string()),
                  "tool_args": pa.array(args, pa.string()),
                  "cwd": pa.array(cwds, pa.string()),
                  "part_type": pa.array(parts, pa.string())})
    if encode:  # as Parquet gives them: dictionary-encoded, in several chunks
        half = t.num_rows // 2
        parts_ = [t.slice(0, half), t.slice(half)]
        t = pa.concat_tables([pa.table({
            n: p.column(n).dictionary_encode() if n != "tool_args" else p.column(n)
            for n in p.column_names}) for p in parts_])
    return t


def _expected(rows: list[tuple[str | None, str | None, str | None, str]]) -> list[str | None]:
    out: list[str | None] = []
    for name, args, cwd, part in rows:
        counted = name in {*READS, *WRITES, *SEARCHES, *PATCHES} or (
            name in SHELLS and args is not None and "apply_patch" in args)
        out.append(touched_json(name, args, cwd) if counted and part != "tool_result"
                   else None)
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("encode", "chunk"), [(False, 4096), (True, 4096), (False, 1),
                                               (True, 7)])
def test_column_wise_equals_row_by_row(encode: bool, chunk: int,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # Small chunks: the odd documents refuse only their own, so the good ones take
    # Arrow's way (with 4,096 one odd document sends all of these row by row).
    monkeypatch.setattr(touched_module, "CHUNK", chunk)
    rows = [(tool, doc, cwd, part)
            for i, path in enumerate(PATHS)
            for j, doc in enumerate(_docs(path))
            for k, tool in enumerate(TOOLS)
            if (i + j + k) % 3 == 0
            for cwd, part in [(CWDS[(i + j + k) % len(CWDS)],
                               "tool_result" if (i * j + k) % 11 == 0 else "tool_call")]]
    rows += [(None, json.dumps({"file_path": "a.py"}), "/w", "tool_call")]
    got = with_touched_files(_table(rows, encode), keep_args=False)
    assert "tool_args" not in got.column_names
    expected = _expected(rows)
    assert sum(v is not None for v in expected) > 300
    assert got.column("touched_files").to_pylist() == expected


def test_one_odd_document_among_thousands_costs_only_its_chunk() -> None:
    good = [("Read", json.dumps({"file_path": f"f{i}.py"}), "/w", "tool_call")
            for i in range(9000)]
    rows = [*good[:5000], ("Read", '{"file_path": 7}', "/w", "tool_call"), *good[5000:]]
    got = with_touched_files(_table(rows, False), keep_args=True)
    assert "tool_args" in got.column_names
    assert got.column("touched_files").to_pylist() == _expected(rows)


def test_a_source_with_its_own_column_keeps_it() -> None:
    t = pa.table({"tool_name": ["Read"], "tool_args": ['{"file_path": "a"}'],
                  "touched_files": ['[{"path": "kept", "reads": 1, "writes": 0}]']})
    out = with_touched_files(t, keep_args=False)
    assert out.column("touched_files").to_pylist() == [
        '[{"path": "kept", "reads": 1, "writes": 0}]']
    assert out.column_names == ["tool_name", "touched_files"]


def test_only_patches_and_no_tool_calls() -> None:
    rows = [("apply_patch", "*** Begin Patch\n*** Add File: n.txt\n*** End Patch", "/r",
             "tool_call"), ("Bash", '{"command": "ls"}', "/r", "tool_call")]
    got = with_touched_files(_table(rows, False), keep_args=False)
    assert got.column("touched_files").to_pylist() == _expected(rows)
    assert got.column("touched_files").to_pylist()[0] is not None


def test_searches_read_and_edits_write_the_arrow_way(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_row_by_row(*_args: object) -> None:
        raise AssertionError("these documents take Arrow's way")

    monkeypatch.setattr(touched_module, "touched_json", no_row_by_row)
    rows = [("Glob", '{"path": "src/a.py"}', "/w", "tool_call"),
            ("Glob", '{"path": "src", "pattern": "b.py"}', "/w", "tool_call"),
            ("Grep", '{"path": "/abs/c.py", "pattern": "x+"}', "/w", "tool_call"),
            ("Grep", '{"path": "src", "pattern": "d.py"}', "/w", "tool_call"),
            ("Read", '{"file_path": "e.py"}', "/w", "tool_call"),
            ("NotebookEdit", '{"notebook_path": "f.ipynb"}', None, "tool_call"),
            ("MultiEdit", '{"file_path": "g.py"}', "/w/", "tool_call")]
    got = with_touched_files(_table(rows, False), keep_args=False)
    assert [json.loads(v) if v else v for v in got.column("touched_files").to_pylist()] == [
        [{"path": "/w/src/a.py", "reads": 1, "writes": 0}],
        [{"path": "/w/src/b.py", "reads": 1, "writes": 0}],
        [{"path": "/abs/c.py", "reads": 1, "writes": 0}],
        None,
        [{"path": "/w/e.py", "reads": 1, "writes": 0}],
        [{"path": "f.ipynb", "reads": 0, "writes": 1}],
        [{"path": "/w/g.py", "reads": 0, "writes": 1}]]


def test_pieces_on_threads_equal_one_at_a_time() -> None:
    # read_sources computes touched_files two pieces at a time; each piece, its label and
    # the pieces' order must come out as computed_columns gives them one by one.
    from graphkit.sources.read import ReadSpec, computed_columns, computed_pieces

    spec = ReadSpec(("tool_name", "cwd", "part_type", "touched_files"))
    pieces = []
    for p, path in enumerate(PATHS[:7]):
        rows = [(tool, doc, CWDS[(p + j) % len(CWDS)], "tool_call")
                for j, doc in enumerate(_docs(path)) for tool in TOOLS[p % 3::3]]
        pieces.append((f"piece-{p}", _table(rows, encode=p % 2 == 1)))
    got = computed_pieces(pieces, spec)
    assert [label for label, _ in got] == [label for label, _ in pieces]
    for (_, t), (_, g) in zip(pieces, got, strict=True):
        want = computed_columns(t, spec)
        assert "tool_args" not in g.column_names
        assert g.equals(want, check_metadata=True)
        assert g.column("touched_files").null_count < g.num_rows


def test_row_files_get_touched_files_as_each_file_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # read_sources makes each row file's touched_files while the next file is read: the
    # pieces (labels, order, tables) are those read first and computed after, each piece
    # is computed once, and invalid UTF-8 is still repaired and noted in file order.
    import pyarrow.parquet as pq

    import graphkit.sources.read as read_module
    from graphkit.sources.read import ReadSpec, computed_columns, read_sources
    from graphkit.sources.row_files import read_row_files

    folder = tmp_path / "rows"
    folder.mkdir()
    for p, path in enumerate(PATHS[:5]):
        rows = [(tool, doc, CWDS[(p + j) % len(CWDS)], "tool_call")
                for j, doc in enumerate(_docs(path)) for tool in TOOLS[p % 3::3]]
        t = _table(rows, encode=False)
        if p in (1, 3):  # a byte that is no UTF-8 in one cwd of two files
            cwd = pa.array([b"/w\xff" if i == p else (v.as_py() or "").encode()
                            for i, v in enumerate(t.column("cwd"))], pa.binary())
            t = t.set_column(t.schema.get_field_index("cwd"), "cwd", cwd.view(pa.string()))
        pq.write_table(t, folder / f"part-{p}.parquet", row_group_size=50)
    spec = ReadSpec(("tool_name", "cwd", "part_type", "touched_files"),
                    text_columns=("tool_name", "cwd", "part_type"))
    plain_repairs: list[dict[str, object]] = []
    want = [(label, computed_columns(t, spec)) for label, t in read_row_files(
        folder, spec.wanted(), spec.dictionary_columns(), plain_repairs)]
    calls: list[str] = []
    made, gathered = read_module.with_touched_files, read_module.gather_sources

    def counted(table: pa.Table, **kw: bool) -> pa.Table:
        calls.append("touched")
        return made(table, **kw)

    def gather(*args: Any, **kw: Any) -> None:
        gathered(*args, **kw)
        calls.append("all read")

    monkeypatch.setattr(read_module, "with_touched_files", counted)
    monkeypatch.setattr(read_module, "gather_sources", gather)
    got = read_sources([folder], spec, fingerprints=False)
    # Each file's computed while the files are read, not after the last one.
    assert calls == ["touched"] * len(want) + ["all read"] and len(want) == 5
    assert [label for label, _ in got.pieces] == [label for label, _ in want]
    for (_, g), (_, w) in zip(got.pieces, want, strict=True):
        assert g.equals(w, check_metadata=True)
    assert [f["check"] for f in got.findings] == ["invalid-utf8"]
    assert got.findings[0]["examples"] == plain_repairs
    assert [Path(str(r["file"])).name for r in plain_repairs] == ["part-1.parquet",
                                                                 "part-3.parquet"]
