"""``read_dataset``'s ``finish`` (what makes ``touched_files`` as each row file is read)
runs on two threads, and what it notes still reads as one thread in file order."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from graphkit.sources.row_files import open_dataset, read_dataset


def _files(folder: Path, n: int, bad: set[int]) -> list[Path]:
    paths = []
    for p in range(n):
        cwd = pa.array([b"/w\xff" if p in bad else b"/w", f"/f{p}".encode()],
                       pa.binary()).view(pa.string())
        path = folder / f"part-{p}.parquet"
        pq.write_table(pa.table({"cwd": cwd, "n": [p, p]}), path)
        paths.append(path)
    return paths


def test_finish_runs_two_files_at_once_and_notes_repairs_in_file_order(
        tmp_path: Path) -> None:
    # The first file's finish waits until the second file's has ended: with one worker
    # (the files finished in turn) it would wait for nothing and time out. The second
    # file's repair is so noted before the first's, yet the notes come in file order.
    paths = _files(tmp_path, 4, bad={0, 1, 3})
    second_done = threading.Event()
    waited: list[bool] = []
    threads: set[int] = set()

    def finish(table: pa.Table) -> pa.Table:
        threads.add(threading.get_ident())
        n = table.column("n")[0].as_py()
        if n == 0:
            waited.append(second_done.wait(timeout=10))
        elif n == 1:
            second_done.set()
        return table.append_column("twice", pc.multiply(table.column("n"), 2))

    repaired: list[dict[str, Any]] = []
    pieces = read_dataset(open_dataset(paths, "parquet", None), {"cwd", "n"},
                          repaired, finish)
    assert waited == [True] and len(threads) == 2
    assert [Path(label).name for label, _ in pieces] == [p.name for p in paths]
    assert [t.column("twice").to_pylist() for _, t in pieces] == [[0, 0], [2, 2],
                                                                  [4, 4], [6, 6]]
    assert [t.column("cwd").to_pylist()[0] for _, t in pieces] == [
        "/w\ufffd", "/w\ufffd", "/w", "/w\ufffd"]
    assert [(Path(str(r["file"])).name, r["row"], r["column"]) for r in repaired] == [
        ("part-0.parquet", 1, "cwd"), ("part-1.parquet", 1, "cwd"),
        ("part-3.parquet", 1, "cwd")]
