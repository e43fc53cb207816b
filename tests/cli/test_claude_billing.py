"""``graphkit usage`` on what Claude bills (issue 30): --json, --csv, piped TSV and the
terminal table say the same figures — the 1-hour cache writes and web searches, Claude
Code's own cost beside graphkit's and the gap — and their columns appear only where the
data has them. Fixture: ``tests/fixtures/shaped/claude-billing`` (its README row)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from graphkit.builds.run import build
from graphkit.cli.usage import GROUP_COLUMNS, THREAD_COLUMNS, print_groups, print_threads
from graphkit.enrich.snapshot_store import SnapshotReader
from graphkit.queries.usage_report import usage
from graphkit.snapshot import write_snapshot
from tests.helpers.cli import graphkit
from tests.helpers.paths import SHAPED

BILLING = SHAPED / "claude-billing"
SESSION = "b1110000-5555-4b00-8000-000000000005"


@pytest.fixture(scope="module")
def snaps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for name, source in (("billed", BILLING), ("plain", SHAPED / "claude-compaction")):
        out[name] = tmp_path_factory.mktemp(name) / "snap"
        write_snapshot(build([source], fingerprints=False).graph, out[name])
    return out


def _csv(snap: Path, *more: str) -> list[dict[str, str]]:
    r = graphkit("usage", "--snapshot", snap, "--csv", *more)
    assert r.returncode == 0, r.output
    return list(csv.DictReader(io.StringIO(r.stdout)))


def _json(snap: Path, *more: str) -> list[dict[str, object]]:
    r = graphkit("usage", "--snapshot", snap, "--json", *more)
    assert r.returncode == 0, r.output
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_json_csv_and_tsv_say_the_same_billed_counts_and_claudes_figure(
        snaps: dict[str, Path]) -> None:
    [rec] = _json(snaps["billed"])
    [row] = _csv(snaps["billed"])
    thread = rec["threads"][0]  # type: ignore[index]
    assert isinstance(thread, dict)
    for key, short in (("cache_creation_1h_input_tokens", "cache_write_1h"),
                       ("web_search_requests", "web_searches")):
        assert int(row[f"own_{short}"]) == thread["own"][key] > 0
        assert int(row[f"subtree_{short}"]) == thread["subtree"][key]
    for key in ("claude_cost_usd", "cost_gap_usd", "cost_gap_cause"):
        assert row[key] == str(rec[key])
    tsv = graphkit("usage", "--snapshot", snaps["billed"])
    assert tsv.returncode == 0, tsv.output
    lines = [line.split("\t") for line in tsv.stdout.splitlines()]
    assert dict(zip(lines[0], lines[1], strict=True)) == row


def test_grouped_outputs_carry_them_too(snaps: dict[str, Path]) -> None:
    by_model = {r["key"]: r for r in _csv(snaps["billed"], "--by", "model")}
    records = {r["key"]: r for r in _json(snaps["billed"], "--by", "model")}
    assert sorted(by_model) == sorted(records) == ["claude-opus-4-8", "claude-sonnet-4-6"]
    for key, rec in records.items():
        assert int(by_model[key]["web_search_requests"]) == rec["web_search_requests"]
        assert float(by_model[key]["cost_usd"]) == rec["cost_usd"]
    [session] = _json(snaps["billed"], "--by", "session")
    assert session["claude_cost_usd"] == 0.181191
    assert "claude_cost_usd" not in records["claude-opus-4-8"]  # a model's: no such figure


def test_data_without_them_keeps_its_columns_and_fields(snaps: dict[str, Path]) -> None:
    rows = _csv(snaps["plain"])
    assert rows and tuple(rows[0]) == THREAD_COLUMNS
    assert tuple(_csv(snaps["plain"], "--by", "model")[0]) == GROUP_COLUMNS
    for rec in _json(snaps["plain"]):
        assert "claude_cost_usd" not in rec
        assert "web_search_requests" not in rec["total"]  # type: ignore[operator]


def test_the_terminal_table_shows_them_and_a_note_on_the_gap(
        snaps: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    reader = SnapshotReader(snaps["billed"])
    grouped, threads = usage(reader, by="session"), usage(reader)
    print_groups(grouped)
    out, err = capsys.readouterr()
    heads = ("1h write", "searches", "claude $", "gap $")
    assert all(h in out for h in heads), out
    assert "$0.1812" in out and "+0.0039" in out and "4,000" in out
    assert err.startswith(f"note: session {SESSION}: Claude Code's own figure (cost-state) "
                          "is $0.1812, gap +0.0039 USD: Claude counted claude-haiku-4-5")
    print_threads(threads)
    out, err = capsys.readouterr()
    assert all(h in out for h in heads) and "note: session" in err
    print_groups(usage(SnapshotReader(snaps["plain"]), by="session"))
    out, err = capsys.readouterr()
    assert not any(h in out for h in heads) and not err
