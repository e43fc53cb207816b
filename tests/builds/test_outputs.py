"""BuildOutputs: every path a build writes, named once from the snapshot folder and the
options; the build writes exactly those, and a watch ignores them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from graphkit.builds.options import BuildOptions
from graphkit.builds.outputs import BuildOutputs
from graphkit.builds.snapshot import build_snapshot
from graphkit.snapshot.index import index_path
from tests.helpers.paths import FIXTURES
from tests.helpers.rows import identity_cases, write_parquet


def test_the_outputs_are_named_beside_the_snapshot_unless_given(tmp_path: Path) -> None:
    snap = tmp_path / "out" / "graph"
    out = BuildOutputs.of(snap, BuildOptions())
    assert out.rejects == tmp_path / "out" / "graph.rejects.jsonl"
    assert out.skipped_lines == tmp_path / "out" / "graph.skipped.jsonl"
    assert out.cache == tmp_path / "out" / ".graph.cache"
    assert out.index_file == index_path() and not out.rejects_given
    given = BuildOutputs.of(snap, BuildOptions(rejects_path=tmp_path / "r.rejects.jsonl",
                                               cache_dir=tmp_path / "c"))
    assert given.rejects_given and given.skipped_lines == tmp_path / "r.skipped.jsonl"
    assert given.cache == tmp_path / "c"
    only_neo4j = BuildOutputs.of(None, BuildOptions(store="neo4j"))
    assert only_neo4j.rejects == Path("graphkit.rejects.jsonl") and only_neo4j.cache is None


def test_a_watch_ignores_the_outputs_and_their_temporary_siblings(tmp_path: Path) -> None:
    snap = tmp_path / "graph"
    owns = BuildOutputs.of(snap, BuildOptions()).owns()
    mine = [snap / "nodes" / "Session.parquet", tmp_path / ".graph.cache" / "record",
            tmp_path / "graph.rejects.jsonl", tmp_path / "graph.skipped.jsonl",
            tmp_path / ".graph.graphkit-tmp-1" / "m", index_path()]
    assert all(owns(str(p)) for p in mine)
    assert not any(owns(str(p)) for p in (tmp_path / "graphs", tmp_path / "s.jsonl"))


def test_the_build_writes_what_the_outputs_name(tmp_path: Path) -> None:
    rows = write_parquet(identity_cases(), tmp_path / "src" / "rows.parquet")
    transcripts = tmp_path / "src" / "t"
    shutil.copytree(FIXTURES / "transcripts" / "claude-code-transcripts", transcripts)
    snap = tmp_path / "out" / "graph"
    options = BuildOptions(granularity="message")
    out = BuildOutputs.of(snap, options)
    _, summary = build_snapshot([rows, transcripts], snap, options)
    assert summary["rejects_file"] == str(out.rejects) and out.rejects.is_file()
    assert summary["skipped_lines_file"] == str(out.skipped_lines)
    assert out.skipped_lines.is_file() and out.cache is not None and out.cache.is_dir()
    assert summary["index"] == str(out.index_file)
    assert json.loads(out.index_file.read_text())["snapshots"]
    written = {p for p in tmp_path.joinpath("out").iterdir()}
    assert written == {snap, out.rejects, out.skipped_lines, out.cache}
