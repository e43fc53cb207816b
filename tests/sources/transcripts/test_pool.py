"""The two-process transcript parse (graphkit/sources/transcripts/pool.py): who parses
which run, the child's imports, and the parent's joining of run tables."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import graphkit.sources.transcripts.pool as pool
from graphkit.sources.transcripts.buffer import FileParse
from graphkit.sources.transcripts.links import Combiner
from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.paths import REPO
from tests.helpers.transcripts import fixtures

TRANSCRIPTS = fixtures() / "transcripts"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    dest = tmp_path / "transcripts"
    shutil.copytree(TRANSCRIPTS, dest)
    return dest


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.jsonl") if "subagents" not in p.parts)


def test_each_run_is_claimed_once(tmp_path: Path) -> None:
    a, b = pool._Claims(str(tmp_path)), pool._Claims(str(tmp_path))
    assert a.take(0) and b.take(3)
    assert not b.take(0) and not a.take(3)
    assert a.take(1) and not b.take(1)


def test_a_child_that_never_claims_is_not_waited_for(work: Path, tmp_path: Path,
                                                     monkeypatch: Any) -> None:
    """This process takes every run when the child has claimed none: it does not wait
    for the child to end (a fixed half did, for however long the child took)."""
    slow = tmp_path / "slow-python"
    slow.write_text("#!/bin/sh\nsleep 60\n")
    slow.chmod(0o755)
    monkeypatch.setattr(pool.sys, "executable", str(slow))
    monkeypatch.setattr(pool, "_RUN_BYTES", 1024)
    paths = _files(work)
    sizes = [p.stat().st_size for p in paths]
    assert len(pool._runs(paths, sizes)) > 2
    started = time.perf_counter()
    got = list(pool.parse_in_workers(paths, sizes))
    assert time.perf_counter() - started < 30
    assert [o.path for o in got] == [str(p) for p in paths]
    assert all(o.parse is not None for o in got)


def test_the_child_parses_runs_from_the_back(work: Path, tmp_path: Path) -> None:
    """The child, run on its own, claims runs from the last one back until a claim
    fails, and writes them in file order with the first run it took."""
    paths = _files(work)
    runs = pool._runs(paths, [1024 * 1024] * len(paths))  # one file per run
    folder = tmp_path / "claims"
    folder.mkdir()
    (folder / "runs.json").write_text(json.dumps(runs))
    assert pool._Claims(str(folder)).take(1)  # "this process" holds runs 0 and 1
    assert pool._Claims(str(folder)).take(0)
    root = str(Path(pool.__file__).resolve().parents[3])
    subprocess.run([sys.executable, "-m", "graphkit.sources.transcripts.pool", str(folder)],
                   check=True, env=dict(os.environ, PYTHONPATH=root))
    first, got = pool.pickle.loads((folder / "out.pickle").read_bytes())
    assert first == 2 and len(got) == len(runs) - 2
    assert [o.path for outcomes, _ in got for o in outcomes] == [
        p for run in runs[2:] for p in run]


def test_the_child_refuses_pandas_and_converts_the_same() -> None:
    """pyarrow's first pa.array imports pandas only to ask whether the input is a pandas
    object; the child's finder makes that import fail (None in sys.modules does not:
    pyarrow's compiled import takes the None), and the conversion is unchanged."""
    code = (
        "import sys, pyarrow as pa\n"
        "from graphkit.core.lazy import NoPandas\n"
        "sys.meta_path.insert(0, NoPandas())\n"
        "t = pa.struct([('a', pa.string()), ('b', pa.int64()), ('c', pa.bool_())])\n"
        "arr = pa.array([('x', 1, True), (None, 2**40, None)], type=t)\n"
        "assert 'pandas' not in sys.modules, 'pandas imported'\n"
        "print(arr.to_pylist())\n"
    )
    root = str(Path(pool.__file__).resolve().parents[3])
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=root)).stdout
    assert out.strip() == str([{"a": "x", "b": 1, "c": True},
                               {"a": None, "b": 2**40, "c": None}])


def _parse(table: pa.Table, run: tuple[pa.Table, int] | None) -> FileParse:
    return FileParse("claude", table=table, run=run)


def test_files_of_one_run_are_joined_as_one_slice() -> None:
    """Files parsed in one run come back as slices of the run's table; the combiner
    gives the same rows and ``_file`` as for separate tables."""
    base = pa.table({"x": list(range(10)), "y": [str(i) for i in range(10)]})
    other = pa.table({"x": [100, 101], "y": ["a", "b"]})
    cuts = [(0, 3), (3, 0), (3, 4), (7, 3)]
    joined, apart = Combiner(), Combiner()
    for start, count in cuts:
        joined.add(_parse(base.slice(start, count), (base, start)))
        apart.add(_parse(pa.table({"x": base["x"].to_pylist()[start:start + count],
                                   "y": base["y"].to_pylist()[start:start + count]}), None))
    joined.add(_parse(other, (other, 0)))
    apart.add(_parse(other, None))
    a, b = joined.table("claude"), apart.table("claude")
    assert a is not None and b is not None
    assert a.equals(b)
    assert a["_file"].to_pylist() == [0, 0, 0, 2, 2, 2, 2, 3, 3, 3, 4, 4]


@pytest.mark.parametrize("value", ["x", "2.5", "\x1b[2J"])
def test_junk_in_graphkit_parse_workers_is_one_line(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   value: str) -> None:
    # Was: ValueError traceback (int() of the variable) on every transcript build.
    monkeypatch.setenv("GRAPHKIT_PARSE_WORKERS", value)
    monkeypatch.setenv("GRAPHKIT_HOME", str(tmp_path / "home"))
    proc = graphkit("build", REPO / "tests" / "fixtures" / "shaped", "--snapshot",
                    tmp_path / "snap")
    line = one_line_error(proc, "GRAPHKIT_PARSE_WORKERS", "no whole number")
    assert "\x1b" not in line
