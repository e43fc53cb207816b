"""A killed build's hand-over folder of worker processes (in the temporary folder) is
deleted by the next parse in worker processes (issue 31); a live build's is kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from graphkit.snapshot.swap import HOST

SHOWCASE = (Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
            / "claude-code-log" / "minimal_showcase")


# The parse runs in an interpreter of its own: graphkit forks workers only from a process
# with no other thread (graphkit.core.workers.can_fork), and a test worker may hold some.
_PARSE = """
import sys, tempfile
from pathlib import Path
import graphkit.sources.transcripts.pool as pool
from graphkit.core.workers import can_fork
tempfile.tempdir = sys.argv[1]
pool._RUN_BYTES = 1  # a run per file: more than one to share
pool.MIN_BYTES = 0
paths = [Path(p) for p in sys.argv[2:]]
assert can_fork()
print(len(list(pool.parse_in_workers(paths, [p.stat().st_size for p in paths]))))
"""


def test_a_dead_builds_parse_folder_goes_with_the_next_parse(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    dead = tmp_path / f".graphkit-parse.graphkit-tmp-{HOST}-{proc.pid}-abcd1234"
    live = tmp_path / f".graphkit-parse.graphkit-tmp-{HOST}-{os.getpid()}-abcd1234"
    for folder in (dead, live):
        folder.mkdir()
        (folder / "out.pickle").write_bytes(b"x" * 100)
    paths = sorted(SHOWCASE.glob("*.jsonl"))
    assert len(paths) > 1
    env = {**os.environ, "GRAPHKIT_PARSE_WORKERS": "2"}  # workers whatever the load
    done = subprocess.run([sys.executable, "-c", _PARSE, str(tmp_path), *map(str, paths)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == len(paths)
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name]
