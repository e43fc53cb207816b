"""The transcript parse in worker processes (graphkit/sources/transcripts/pool.py): the
workers' conversion, and the parent's joining of run tables. Who computes which run is
graphkit/core/workers.py's (tests/core/test_workers.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import graphkit.sources.transcripts.pool as pool
from graphkit.sources.transcripts.buffer import FileParse
from graphkit.sources.transcripts.links import Combiner
from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.paths import REPO


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
