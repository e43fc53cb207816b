"""What the command line's start costs: it imports only the module of the command it runs
(graphkit.cli.app's COMMAND_MODULES) while every command is still there for --help,
suggestions and readers of ``cli.commands``; pyarrow loads without pandas and cloudpickle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import graphkit
from tests.helpers.paths import REPO

_PROBE = """
import json, sys
from graphkit.cli.app import COMMAND_MODULES, cli
before = sorted(m for m in sys.modules if m.startswith("graphkit.cli."))
cmd = cli.get_command(None, sys.argv[1])
after = sorted(m for m in sys.modules if m.startswith("graphkit.cli."))
every = sorted(cli.commands)
print(json.dumps({"before": before, "after": after, "command": cmd.name, "every": every,
                  "modules": {n: cli.commands[n].callback.__module__ for n in every},
                  "table": COMMAND_MODULES}))
"""


def _probe(name: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", _PROBE, name], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=120, check=True)
    out: dict[str, object] = json.loads(done.stdout)
    return out


def _command_modules(loaded: object, table: object) -> list[str]:
    """The modules of commands among ``loaded`` (the rest are what commands share)."""
    assert isinstance(loaded, list) and isinstance(table, dict)
    return [m for m in loaded if m.removeprefix("graphkit.cli.") in set(table.values())]


@pytest.mark.slow
def test_a_command_loads_its_own_module_alone() -> None:
    got = _probe("build")
    # The group loads the small modules every command shares (errors, options, the
    # process hooks), no command's own.
    assert "graphkit.cli.app" in got["before"]  # type: ignore[operator]
    assert _command_modules(got["before"], got["table"]) == []
    assert _command_modules(got["after"], got["table"]) == ["graphkit.cli.build"]
    got = _probe("lineage")
    assert _command_modules(got["after"], got["table"]) == ["graphkit.cli.query"]
    # Rendering rich tables and progress bars is left until a command draws one.
    assert "graphkit.cli.bars" not in got["after"]  # type: ignore[operator]


@pytest.mark.slow
def test_the_table_names_the_module_of_every_command() -> None:
    got = _probe("view")
    table = got["table"]
    assert isinstance(table, dict)
    assert got["every"] == sorted(table)  # no command missing from the table, none extra
    assert got["modules"] == {n: f"graphkit.cli.{m}" for n, m in table.items()}


def test_help_and_suggestions_see_every_command() -> None:
    from graphkit.cli import cli
    from graphkit.cli.app import COMMAND_MODULES

    shown = graphkit("--help").output
    assert all(f"  {name} " in shown for name in COMMAND_MODULES)
    wrong = graphkit("sesions")
    assert wrong.returncode == 2 and "Did you mean 'sessions'" in wrong.output
    assert len(cli.commands) == len(COMMAND_MODULES) and "tree" in cli.commands
    assert "nope" not in cli.commands


def test_the_package_still_offers_its_command_modules() -> None:
    import graphkit.cli

    assert graphkit.cli.usage.__name__ == "graphkit.cli.usage"
    try:
        graphkit.cli.nope  # noqa: B018
    except AttributeError as exc:
        assert "nope" in str(exc)
    else:
        raise AssertionError("graphkit.cli.nope should not exist")


_HOOKED = """
import json, pickle, sys
from graphkit.cli.process import NotForPyarrow
sys.meta_path.insert(0, NotForPyarrow())
import pyarrow as pa, pyarrow.dataset, pyarrow.acero
loaded = sorted(m for m in ("pandas", "cloudpickle") if m in sys.modules)
t = pa.table({"a": [1, 2, None]})
same = pickle.loads(pickle.dumps(t)).equals(t)
later = []
for name in ("cloudpickle", "pandas"):  # asked for by anything else: imported as ever
    try:
        __import__(name)
        later.append(name)
    except ImportError:
        pass
print(json.dumps({"loaded": loaded, "same": same, "later": later}))
"""


@pytest.mark.slow
def test_pyarrow_loads_without_pandas_and_cloudpickle_under_the_command_line() -> None:
    import importlib.util

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", _HOOKED], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=120, check=True)
    got = json.loads(done.stdout)
    assert got["loaded"] == [] and got["same"]
    assert got["later"] == [n for n in ("cloudpickle", "pandas") if importlib.util.find_spec(n)]


_REMOTE = ("pyarrow._azurefs", "pyarrow._gcsfs", "pyarrow._hdfs", "pyarrow._s3fs",
           "pyarrow._dataset_orc", "pyarrow._dataset_parquet_encryption")
_HOOKED_FS = """
import json, sys, tempfile, os
from graphkit.cli.process import NotForPyarrow
sys.meta_path.insert(0, NotForPyarrow())
import pyarrow as pa, pyarrow.parquet as pq, pyarrow.dataset as ds, pyarrow.acero
import pyarrow.fs
names = NAMES
loaded = sorted(m for m in names if m in sys.modules)
t = pa.table({"a": [1, 2, None], "b": ["x", None, "z"]})
with tempfile.TemporaryDirectory() as d:
    pq.write_table(t, os.path.join(d, "t.parquet"), compression="zstd")
    back = ds.dataset(d, format="parquet").to_table()
    local = pyarrow.fs.LocalFileSystem().get_file_info(d).type == pyarrow.fs.FileType.Directory
grouped = t.group_by("b").aggregate([("a", "count")]).num_rows
later = []
for name in names:  # asked for by anything else: imported as ever
    try:
        __import__(name)
        later.append(name)
    except ImportError:
        pass
print(json.dumps({"loaded": loaded, "same": back.equals(t), "local": local,
                  "grouped": grouped, "later": later}))
""".replace("NAMES", repr(_REMOTE))


@pytest.mark.slow
def test_pyarrow_loads_no_remote_filesystem_under_the_command_line() -> None:
    # Incremental pass 9: pyarrow.fs binds Azure, GCS, HDFS and S3 and pyarrow.dataset
    # binds ORC and Parquet encryption as they load (~5 CPU-ms of every build); graphkit
    # uses local Parquet only. Refused while pyarrow loads them, as pandas is; Parquet,
    # datasets, local files and group_by work as before; an import of its own later loads.
    import importlib.util

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", _HOOKED_FS], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=120, check=True)
    got = json.loads(done.stdout)
    assert got["loaded"] == [] and got["same"] and got["local"] and got["grouped"] == 3
    assert got["later"] == [n for n in _REMOTE if importlib.util.find_spec(n)]


_BLAS_PROBE = """
import os, sys, threading
from graphkit.cli import app
app.cli = lambda prog_name: None  # the start-up settings alone, no command
app.main()
import numpy  # noqa: F401  (loads OpenBLAS, which reads the setting now)
print(os.environ.get("OPENBLAS_NUM_THREADS"), len(os.listdir("/proc/self/task")))
"""


def _blas(env_extra: dict[str, str]) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env.update({"PYTHONPATH": str(REPO), **env_extra})
    done = subprocess.run([sys.executable, "-c", _BLAS_PROBE], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=120, check=True)
    return done.stdout.split()


@pytest.mark.slow
def test_the_command_line_starts_no_blas_threads() -> None:
    # OpenBLAS's idle threads spin on the cores the build needs; graphkit calls no BLAS.
    setting, threads = _blas({})
    assert setting == "1"
    if os.path.isdir("/proc/self/task"):
        assert int(threads) == 1  # numpy loaded, and no thread started for it
    # A user's own choice stays.
    assert _blas({"OPENBLAS_NUM_THREADS": "3"})[0] == "3"


_PANDAS_PROBE = """
import json, sys
sys.argv = ["graphkit", *sys.argv[1:]]
from graphkit.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "pandas": "pandas" in sys.modules,
                  "refused": any(type(f).__name__ == "NoPandas" for f in sys.meta_path)}),
      file=sys.stderr)
"""


def _pandas(*args: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", _PANDAS_PROBE, *args], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=300)
    out: dict[str, object] = json.loads(done.stderr.strip().splitlines()[-1])
    return out


@pytest.mark.slow
def test_commands_without_spark_refuse_pandas_and_answer_the_same(tmp_path: Path) -> None:
    # pyarrow imported pandas at its first pa.table/pa.array of Python objects only to ask
    # whether they were pandas objects: ~0.2 s of `graphkit lineage`'s ~0.7 s.
    snap = tmp_path / "snap"
    built = _pandas("build", "samples/rows", "--snapshot", str(snap), "--json")
    assert built == {"code": 0, "pandas": False, "refused": True}
    asked = ["lineage", "818d8962058765a6", "--snapshot", str(snap), "--json"]
    assert _pandas(*asked) == {"code": 0, "pandas": False, "refused": True}
    # The answer is the one a process that may import pandas gives (a library caller's).

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cli_out = subprocess.run([sys.executable, "-m", "graphkit", *asked], capture_output=True,
                             text=True, cwd=REPO, env=env, timeout=300, check=True).stdout
    assert cli_out == graphkit(*asked).output
    # Spark uses pandas: with --engine the finder stays out (here an engine that fails
    # early: the option decides, not whether Spark runs).
    other = _pandas("build", "samples/rows", "--snapshot", str(tmp_path / "x"),
                    "--engine", "nope")
    assert other["refused"] is False and other["code"] == 2
