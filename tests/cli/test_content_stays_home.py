"""A subagent's description is content (issue 31): model-written text from the
conversation (the Agent/Task call's ``description``, the ``.meta.json`` sidecar's), so a
key placed there stays out of the snapshot, the build cache, `rows`, every export, the
HTML view and `tree` unless --include-content; with it, outputs that carry content are
private (0600) like the snapshot."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from graphkit.builds.incremental.merged import split_account
from graphkit.cli import cli
from graphkit.export.registry import format_names
from tests.helpers.rows import identity_cases, row, spawned, write_parquet

SHOWCASE = (Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
            / "claude-code-log" / "minimal_showcase")
SESSION = "55550000-0000-4000-8000-000000000001"
META_KEY = "sk-live-META-SIDECAR-SECRET"
CALL_KEY = "sk-live-TASK-CALL-SECRET"
ROW_KEY = "sk-live-ROW-ATTRIBUTE-SECRET"
KEYS = (META_KEY, CALL_KEY, ROW_KEY)


def invoke(*args: object) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def ok(*args: object) -> Result:
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    return r


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A Claude folder whose one subagent is described in its sidecar, another only in
    the spawning Agent call; and a row file whose attributes carry a description."""
    root = tmp_path_factory.mktemp("src")
    claude = root / "claude"
    shutil.copytree(SHOWCASE, claude)
    subagents = claude / SESSION / "subagents"
    meta = json.loads((subagents / "agent-showcol1.meta.json").read_text())
    (subagents / "agent-showcol1.meta.json").write_text(
        json.dumps({**meta, "description": f"use {META_KEY}"}))
    (subagents / "agent-showcol2.meta.json").unlink()  # described by its call only
    main = claude / f"{SESSION}.jsonl"
    text = main.read_text()
    calls = [json.loads(line) for line in text.splitlines()]
    for line in calls:
        for block in (line.get("message") or {}).get("content") or []:
            if isinstance(block, dict) and block.get("id") == "toolu_sc_showcol2":
                block["input"]["description"] = f"try {CALL_KEY}"
    main.write_text("".join(json.dumps(c) + "\n" for c in calls))
    assert CALL_KEY in main.read_text()
    rows = [*identity_cases(), row("s-rows", agent_id="agentZ", attributes=spawned(
        "toolu_A", agent_type="Explore", description=f"key {ROW_KEY}"))]
    return [claude, write_parquet(rows, root / "rows.parquet")]


def texts_of(path: Path) -> str:
    """Everything readable in ``path`` (a file or folder): Parquet and Arrow tables as
    their values (compression would hide a key from a byte search), the build cache's
    stored streams, other files as text."""
    out = []
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        data = f.read_bytes()
        if data[:4] == b"PAR1":
            out.append(str(pq.read_table(f).to_pylist()))
            continue
        try:
            info, buf = split_account(data, f.name)
        except ValueError:
            out.append(data.decode("utf-8", "replace"))
            continue
        for entry in [*info.get("tables", []), *info.get("shared", [])]:
            at, size = entry[-2], entry[-1]
            out.append(str(pa.ipc.open_stream(buf.slice(at, size)).read_all().to_pylist()))
        out.append(json.dumps(info))
    return "\n".join(out)


def leaked(text: str) -> list[str]:
    return [k for k in KEYS if k in text]


@pytest.fixture(scope="module")
def plain(sources: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plain") / "snap"
    ok("build", *sources, "--snapshot", out)
    return out


@pytest.mark.slow
def test_the_sources_do_hold_the_keys(sources: list[Path], tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    ok("build", *sources, "--snapshot", snap, "--include-content")
    assert sorted(leaked(texts_of(snap))) == sorted(KEYS)  # else the test shows nothing


def test_no_snapshot_or_cache_holds_a_description(plain: Path) -> None:
    assert leaked(texts_of(plain)) == []
    cache = plain.with_name(".snap.cache")
    assert cache.is_dir() and leaked(texts_of(cache)) == []
    agents = pq.read_table(plain / "nodes" / "Agent.parquet")
    assert "description" not in agents.column_names and agents.num_rows >= 3


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_rows_leave_descriptions_out(sources: list[Path], tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"rows{suffix}"
    ok("rows", *sources, "--out", out)
    assert leaked(texts_of(out)) == []
    with_content = tmp_path / f"all{suffix}"
    ok("rows", *sources, "--out", with_content, "--include-content")
    assert sorted(leaked(texts_of(with_content))) == sorted(KEYS)


@pytest.mark.parametrize("fmt", format_names())
def test_no_export_holds_a_description(plain: Path, tmp_path: Path, fmt: str) -> None:
    folder = fmt in ("neo4j-csv", "neo4j-parquet")
    out = tmp_path / (fmt if folder else f"g.{'parquet' if fmt == 'edges' else fmt}")
    ok("export", plain, "--format", fmt, out)
    assert leaked(texts_of(out)) == []


def test_the_view_and_tree_show_no_description(plain: Path, tmp_path: Path) -> None:
    page = tmp_path / "v.html"
    ok("view", SESSION, "--snapshot", plain, "--out", page)
    shown: list[Any] = [page.read_text()]
    for fmt in ([], ["--json"], ["--csv"]):
        shown.append(ok("tree", SESSION, "--snapshot", plain, *fmt).output)
        shown.append(ok("lineage", "showcol1", "--snapshot", plain, *fmt).output)
    assert leaked("\n".join(shown)) == []


# --- with --include-content: the snapshot's own privacy --------------------------

def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(scope="module")
def content(sources: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("content") / "snap"
    ok("build", *sources, "--snapshot", out, "--include-content", "--granularity", "message")
    return out


@pytest.mark.parametrize("fmt", format_names())
def test_exports_of_a_content_snapshot_are_private(content: Path, tmp_path: Path,
                                                   fmt: str) -> None:
    folder = fmt in ("neo4j-csv", "neo4j-parquet")
    out = tmp_path / (fmt if folder else f"g.{'csv' if fmt == 'edges' else fmt}")
    ok("export", content, "--format", fmt, out)
    files = [out] if not folder else [out, *out.rglob("*")]
    assert {oct(_mode(f)) for f in files} <= {oct(0o600), oct(0o700)}, fmt


def test_a_view_with_content_is_private_one_without_is_not(content: Path,
                                                           tmp_path: Path) -> None:
    with_text, without = tmp_path / "with.html", tmp_path / "without.html"
    ok("view", SESSION, "--snapshot", content, "--out", with_text, "--include-content")
    ok("view", SESSION, "--snapshot", content, "--out", without)
    assert _mode(with_text) == 0o600
    assert _mode(without) & 0o044  # the umask's usual mode: shareable, no content in it


def test_rows_with_content_are_private(sources: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "rows.parquet"
    ok("rows", *sources, "--out", out, "--include-content")
    assert _mode(out) == 0o600
