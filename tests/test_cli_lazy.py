"""What the command line's start costs: it imports only the module of the command it runs
(graphkit.cli.app's COMMAND_MODULES) while every command is still there for --help,
suggestions and readers of ``cli.commands``; pyarrow loads without pandas and cloudpickle;
a spliced rebuild runs on the system allocator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from tests.conftest import REPO

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


def test_a_command_loads_its_own_module_alone() -> None:
    got = _probe("build")
    assert got["before"] == ["graphkit.cli.app"]
    assert got["after"] == ["graphkit.cli.app", "graphkit.cli.build"]
    got = _probe("lineage")
    assert got["after"] == ["graphkit.cli.app", "graphkit.cli.query"]


def test_the_table_names_the_module_of_every_command() -> None:
    got = _probe("view")
    table = got["table"]
    assert isinstance(table, dict)
    assert got["every"] == sorted(table)  # no command missing from the table, none extra
    assert got["modules"] == {n: f"graphkit.cli.{m}" for n, m in table.items()}


def test_help_and_suggestions_see_every_command() -> None:
    from graphkit.cli import cli
    from graphkit.cli.app import COMMAND_MODULES

    shown = CliRunner().invoke(cli, ["--help"]).output
    assert all(f"  {name} " in shown for name in COMMAND_MODULES)
    wrong = CliRunner().invoke(cli, ["sesions"])
    assert wrong.exit_code == 2 and "Did you mean 'sessions'" in wrong.output
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
from graphkit.cli.app import _NotForPyarrow
sys.meta_path.insert(0, _NotForPyarrow())
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


def test_pyarrow_loads_without_pandas_and_cloudpickle_under_the_command_line() -> None:
    import importlib.util

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", _HOOKED], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=120, check=True)
    got = json.loads(done.stdout)
    assert got["loaded"] == [] and got["same"]
    assert got["later"] == [n for n in ("cloudpickle", "pandas") if importlib.util.find_spec(n)]


_POOL_PROBE = """
import sys
sys.argv = ["graphkit", "build", sys.argv[1], "--snapshot", sys.argv[2], "--json", *sys.argv[3:]]
from graphkit.cli import main
try:
    main()
except SystemExit:
    pass
import pyarrow as pa
print(pa.default_memory_pool().backend_name, file=sys.stderr)
"""


def _pool_of(tmp_path: Path, source: Path, *args: str, snapshot: Path | None = None,
             **env: str) -> str:
    run_env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    snap = snapshot or tmp_path / f"snap-{len(list(tmp_path.iterdir()))}"
    done = subprocess.run([sys.executable, "-c", _POOL_PROBE, str(source), str(snap), *args],
                          capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={**run_env, "PYTHONPATH": str(REPO), **env})
    assert done.returncode == 0, done.stderr
    return done.stderr.strip().splitlines()[-1]


def test_a_spliced_rebuild_runs_on_the_system_allocator(tmp_path: Path) -> None:
    """The command line picks jemalloc (big builds peak lower), but a spliced transcript
    rebuild, which reads and projects only the changed link groups, runs on the system
    allocator (cheaper to start and without a purging thread); a pool the user chose
    stays theirs."""
    import shutil

    transcripts = tmp_path / "t"
    shutil.copytree(REPO / "tests" / "fixtures" / "transcripts", transcripts)
    snap, cache = tmp_path / "snap", tmp_path / "cache"
    given = ("--cache-dir", str(cache))
    first = _pool_of(tmp_path, transcripts, *given, snapshot=snap)  # cold: no state yet
    assert first != "system" or not _jemalloc()
    session = next(transcripts.rglob("*.jsonl"))
    with session.open("a") as fh:
        fh.write("{}\n")
    assert _pool_of(tmp_path, transcripts, *given, snapshot=snap) == "system"
    with session.open("a") as fh:
        fh.write("{}\n")
    assert _pool_of(tmp_path, transcripts, "--strict", *given, snapshot=snap) != "system" \
        or not _jemalloc()  # a whole build
    if not _jemalloc():
        return  # this pyarrow has no jemalloc: nothing to choose between
    assert _pool_of(tmp_path, REPO / "samples" / "rows") == "jemalloc"
    with session.open("a") as fh:
        fh.write("{}\n")
    assert _pool_of(tmp_path, transcripts, *given, snapshot=snap,
                    ARROW_DEFAULT_MEMORY_POOL="jemalloc") == "jemalloc"


def _jemalloc() -> bool:
    import pyarrow as pa

    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        return False
    return True
