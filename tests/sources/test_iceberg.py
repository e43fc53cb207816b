"""The Iceberg reader on the HypAware cache fixture (facts from its README), and its edges:
a damaged table, a version hint naming no file, a data file whose schema drifted."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphkit.builds.run import build
from graphkit.core.errors import SourceError
from graphkit.core.schema import JSON_COLUMNS, MESSAGES_SCHEMA
from graphkit.sources.iceberg import is_iceberg_source, read_iceberg
from tests.helpers.cli import graphkit, one_line_error
from tests.helpers.paths import CACHE
from tests.helpers.transcripts import fixtures

DATASET = CACHE / "datasets" / "ai_gateway_messages"
CLAUDE_TABLE = DATASET / "source=claude" / "table"


def test_cache_reads_39_rows_with_schema_types() -> None:
    table = read_iceberg(CACHE)
    assert table.num_rows == 39
    assert table.select(MESSAGES_SCHEMA.names).schema.equals(MESSAGES_SCHEMA)
    assert table.column_names[len(MESSAGES_SCHEMA):] == ["_hyp_ingest_seq"]
    assert Counter(table["provider"].to_pylist()) == {"anthropic": 28, "openai": 11}
    seq = sorted(table["_hyp_ingest_seq"].to_pylist())
    assert seq == list(range(1, 29)) + list(range(1025, 1036))
    for name in JSON_COLUMNS:
        assert pa.types.is_string(table.schema.field(name).type)
    # README: tools and compact_metadata are Variant null everywhere -> no JSON document.
    assert table["tools"].null_count == 39
    assert table["compact_metadata"].null_count == 39


def test_spawned_by_links_match_the_readme() -> None:
    table = read_iceberg(CACHE, columns=["agent_id", "attributes", "tool_call_id", "tool_name"])
    links = {}
    for agent, attrs in zip(table["agent_id"].to_pylist(), table["attributes"].to_pylist(),
                            strict=True):
        spawned = json.loads(attrs).get("claude", {}).get("spawned_by_tool_use_id")
        if agent is not None:
            links.setdefault(agent, set()).add(spawned)
        else:
            assert spawned is None  # only subagent rows carry it
    assert links == {
        "a1f0c3e2b4d5a6a7": {"toolu_01SpawnA1"}, "a2e9d8c7b6a5f4e3": {"toolu_01SpawnA2"},
        "c1aa11bb22cc33dd": {"toolu_03SpawnC1"}, "c2ee44ff55aa66bb": {"toolu_03SpawnC2"},
    }
    task_calls = {c for c, n in zip(table["tool_call_id"].to_pylist(),
                                    table["tool_name"].to_pylist(), strict=True) if n == "Task"}
    assert {"toolu_01SpawnA1", "toolu_01SpawnA2", "toolu_03SpawnC1",
            "toolu_03SpawnC2"} <= task_calls


def test_codex_rows_and_decoded_attributes() -> None:
    table = read_iceberg(DATASET / "source=codex")
    rows = table.to_pylist()
    assert len(rows) == 11
    assert {r["session_id"] for r in rows} == {"019a7b10-2c3d-7e4f-8a9b-0c1d2e3f4a01"}
    child = [r for r in rows if r["parent_thread_id"]]
    assert len(child) == 4 and all(r["is_sidechain"] for r in child)
    sources = Counter(json.loads(r["attributes"])["codex"]["identity_source"] for r in rows)
    assert sources == {"gateway_fallback": 7, "native": 4}
    spawn = next(r for r in rows if r["tool_result_for"] == "call_root_02")
    assert json.loads(spawn["content_text"])["thread_id"] == "019a7b10-5f6e-7d8c-9b0a-1f2e3d4c5b02"


def test_columns_limits_and_orders_the_read() -> None:
    table = read_iceberg(CLAUDE_TABLE, columns=["date", "session_id"])
    assert table.column_names == ["date", "session_id"]
    assert table.schema.field("session_id").nullable is False
    assert sorted(set(table["date"].to_pylist())) == ["2026-11-20", "2026-11-21", "2026-11-22"]


@pytest.mark.slow
def test_every_folder_from_cache_down_to_a_table_is_a_source() -> None:
    for path, rows in [(CACHE, 39), (CACHE / "datasets", 39), (DATASET, 39),
                       (DATASET / "source=claude", 28), (CLAUDE_TABLE, 28),
                       (CLAUDE_TABLE / "metadata", 28), (CLAUDE_TABLE / "data", 28),
                       (CLAUDE_TABLE / "metadata" / "v2.metadata.json", 28)]:
        assert is_iceberg_source(path), path
        assert read_iceberg(path).num_rows == rows, path
    assert not is_iceberg_source(fixtures() / "hypaware-cache" / "home")
    assert not is_iceberg_source(fixtures() / "transcripts")


def test_absolute_locations_of_the_writer_are_resolved_in_the_table_folder() -> None:
    meta = json.loads((CLAUDE_TABLE / "metadata" / "v2.metadata.json").read_text())
    assert meta["location"].startswith("file:///home/dev/.hypaware/")
    assert not Path("/home/dev/.hypaware").exists()  # so the reader must map the prefix
    assert read_iceberg(CLAUDE_TABLE).num_rows == 28


def _copy_table(tmp_path: Path) -> Path:
    table = tmp_path / "table"
    shutil.copytree(CLAUDE_TABLE, table)
    return table


def test_files_outside_the_current_snapshot_are_not_read(tmp_path: Path) -> None:
    table = _copy_table(tmp_path)
    # What a compaction leaves behind: a data file no manifest of the snapshot names.
    stale = pq.read_table(next((table / "data").glob("*.parquet")))
    pq.write_table(stale, table / "data" / "00000000-stale.parquet")
    assert read_iceberg(table).num_rows == 28


def test_version_hint_selects_the_metadata(tmp_path: Path) -> None:
    table = _copy_table(tmp_path)
    (table / "metadata" / "version-hint.text").write_text("1")
    empty = read_iceberg(table)  # v1: the table as created, no snapshot
    assert empty.num_rows == 0
    assert empty.schema.equals(MESSAGES_SCHEMA)
    (table / "metadata" / "version-hint.text").unlink()
    assert read_iceberg(table).num_rows == 28  # no hint: the highest version


def test_a_missing_data_file_names_the_metadata_and_the_place(tmp_path: Path) -> None:
    table = _copy_table(tmp_path)
    victim = next((table / "data").glob("4a2004f2*.parquet"))
    victim.unlink()
    with pytest.raises(SourceError) as err:
        read_iceberg(table)
    assert "v2.metadata.json" in str(err.value)
    assert "4a2004f2" in str(err.value)


def test_plain_parquet_export_with_variant_columns(tmp_path: Path) -> None:
    for f in (CLAUDE_TABLE / "data").glob("*.parquet"):
        shutil.copy(f, tmp_path / f.name)
    assert is_iceberg_source(tmp_path)
    table = read_iceberg(tmp_path)
    assert table.num_rows == 28
    assert pa.types.is_string(table.schema.field("attributes").type)
    plain = tmp_path / "plain"
    plain.mkdir()
    pq.write_table(pa.table({"session_id": ["s"]}), plain / "rows.parquet")
    assert not is_iceberg_source(plain)  # ordinary row files belong to the rows reader


def test_unknown_column_and_missing_path_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such column"):
        read_iceberg(CLAUDE_TABLE, columns=["session_id", "no_such_column"])
    with pytest.raises(SourceError, match="no such file"):
        read_iceberg(tmp_path / "nowhere")
    with pytest.raises(SourceError, match="no Iceberg table"):
        read_iceberg(tmp_path)


def _export_with(tmp_path: Path, column: str, value: object) -> Path:
    """A plain Parquet export of the Claude table with ``column`` of the first row
    of its first file replaced by ``value`` (written as the column's own type)."""
    export = tmp_path / "export"
    export.mkdir()
    files = sorted((CLAUDE_TABLE / "data").glob("*.parquet"))
    for f in files[1:]:
        shutil.copy(f, export / f.name)
    t = pq.read_table(files[0])
    col = t.column(column).to_pylist()
    col[0] = value
    i = t.schema.get_field_index(column)
    field = t.schema.field(i)
    if pa.types.is_string(field.type):
        arr = pa.array([v if v is None or isinstance(v, bytes) else str(v).encode()
                        for v in col], pa.binary()).cast(pa.string(), safe=False)
    else:
        arr = pa.array(col, field.type)
    pq.write_table(t.set_column(i, field, arr), export / files[0].name)
    return export


def test_invalid_utf8_in_an_iceberg_text_column_is_repaired_and_said(tmp_path: Path) -> None:
    from graphkit.builds.run import build

    export = _export_with(tmp_path, "model", b"claude\xff\xfe")
    result = build(export, fingerprints=False)
    [finding] = [f for f in result.sources.findings if f["check"] == "invalid-utf8"]
    assert finding["count"] == 1 and finding["examples"][0]["column"] == "model"
    models = result.graph.nodes["Model"].table.column("model").to_pylist()
    assert "claude\ufffd\ufffd" in models


def test_a_damaged_variant_cell_is_one_line_naming_file_column_and_row(tmp_path: Path) -> None:
    export = _export_with(tmp_path, "attributes",
                          {"metadata": b"\x01\x01\x00\x01\xff", "value": b"\x04"})
    r = graphkit("build", export, "--snapshot", tmp_path / "s")  # raises any other exception
    assert r.returncode == 2, r.output
    first = sorted((CLAUDE_TABLE / "data").glob("*.parquet"))[0].name
    assert first in r.output and "attributes" in r.output and "row 1" in r.output
    assert "Traceback" not in r.output


@pytest.mark.parametrize("column,values", [
    ("session_id", lambda n: pa.array(range(n), pa.int64())),
    ("message_created_at", lambda n: pa.array(["x"] * n)),
    ("session_id", lambda n: pa.array([{"a": "x"}] * n)),
], ids=["session-int", "time-text", "session-struct"])
def test_a_cache_data_file_whose_schema_drifted_is_one_line_naming_it(
        tmp_path: Path, column: str, values: Callable[[int], pa.Array]) -> None:
    # Was: int session ids cast to text without a word (sessions "0", "1", "2"… made up
    # from row numbers, exit 0); text where times belong an ArrowInvalid traceback; a
    # struct an ArrowNotImplementedError traceback.
    cache = tmp_path / "cache"
    shutil.copytree(CACHE, cache)
    data = sorted(cache.glob("datasets/ai_gateway_messages/source=claude/table/data/*.parquet"))[0]
    t = pq.read_table(data)
    pq.write_table(t.set_column(t.schema.get_field_index(column), column,
                                values(t.num_rows)), data)
    proc = graphkit("build", cache, "--snapshot", tmp_path / "snap")
    one_line_error(proc, str(data), repr(column))


CLAUDE = Path("datasets/ai_gateway_messages/source=claude/table")


def _cache(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the fixture cache, and its Claude table's metadata folder."""
    shutil.copytree(CACHE, tmp_path / "cache")
    return tmp_path / "cache", tmp_path / "cache" / CLAUDE / "metadata"


def _rows(path: Path) -> int:
    return build(path, fingerprints=False).projection.rows_read


def _metadata_array(meta: Path) -> None:
    (meta / "v2.metadata.json").write_text("[1, 2]")


def _metadata_deep(meta: Path) -> None:
    (meta / "v2.metadata.json").write_text("[" * 100_000 + "]" * 100_000)


def _manifest_list_cut(meta: Path) -> None:
    [avro] = meta.glob("snap-*.avro")
    avro.write_bytes(avro.read_bytes()[:50])


def _manifest_cut(meta: Path) -> None:
    [avro] = meta.glob("*-m0.avro")
    avro.write_bytes(avro.read_bytes()[:100])


def _snapshots_not_objects(meta: Path) -> None:
    doc = json.loads((meta / "v2.metadata.json").read_text())
    doc["snapshots"] = ["not", "objects"]
    (meta / "v2.metadata.json").write_text(json.dumps(doc))


def _metadata_gone(meta: Path) -> None:
    shutil.rmtree(meta)
    meta.mkdir()


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    # Was: AttributeError / RecursionError / "Aborted!" (an EOFError click took for ^D)
    # / UnicodeDecodeError tracebacks; and the empty metadata folder lost the table's
    # 28 rows with exit 0.
    "metadata-array": (_metadata_array, "v2.metadata.json"),
    "metadata-deep": (_metadata_deep, "v2.metadata.json"),
    "manifest-list-cut": (_manifest_list_cut, "v2.metadata.json"),
    "manifest-cut": (_manifest_cut, "v2.metadata.json"),
    "snapshots-not-objects": (_snapshots_not_objects, "v2.metadata.json"),
    "metadata-gone": (_metadata_gone, ""),  # the metadata folder itself
}


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_a_damaged_iceberg_table_is_one_error_naming_its_file(tmp_path: Path,
                                                              how: str) -> None:
    cache, meta = _cache(tmp_path)
    damage, names = DAMAGE[how]
    damage(meta)
    with pytest.raises(SourceError) as info:
        build(cache, fingerprints=False)
    assert str(meta / names) in str(info.value)


@pytest.mark.slow
@pytest.mark.parametrize("hint", ["9" * 5000, "../../../../etc/passwd", "", "99"])
def test_a_version_hint_that_names_no_file_reads_the_newest_version(tmp_path: Path,
                                                                    hint: str) -> None:
    # Was: a hint too long for a file name (ENAMETOOLONG) gave an OSError traceback.
    expected = _rows(CACHE)
    cache, meta = _cache(tmp_path)
    (meta / "version-hint.text").write_text(hint)
    assert _rows(cache) == expected
