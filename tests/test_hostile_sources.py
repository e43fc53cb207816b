"""Hostile HypAware caches (issue 13, second round; the table is tests/HOSTILE.md): a
damaged Iceberg table is one ``SourceError`` naming its file, never a traceback, and a
table is never skipped without a word."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from graphkit.builds.run import build
from graphkit.core.errors import SourceError
from tests.helpers.paths import CACHE

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


@pytest.mark.parametrize("hint", ["9" * 5000, "../../../../etc/passwd", "", "99"])
def test_a_version_hint_that_names_no_file_reads_the_newest_version(tmp_path: Path,
                                                                    hint: str) -> None:
    # Was: a hint too long for a file name (ENAMETOOLONG) gave an OSError traceback.
    expected = _rows(CACHE)
    cache, meta = _cache(tmp_path)
    (meta / "version-hint.text").write_text(hint)
    assert _rows(cache) == expected


def test_a_hive_folder_key_that_is_also_a_column_is_one_error(tmp_path: Path) -> None:
    # Was: ArrowTypeError traceback ("Unable to merge: Field session_id has incompatible
    # types") for rows/session_id=zzz/r.parquet holding its own session_id column.
    import pyarrow.parquet as pq

    from tests.helpers.rows import identity_cases, table

    folder = tmp_path / "rows" / "session_id=zzz"
    folder.mkdir(parents=True)
    pq.write_table(table(identity_cases()), folder / "r.parquet")
    with pytest.raises(SourceError) as info:
        build(tmp_path / "rows", fingerprints=False)
    assert str(tmp_path / "rows") in str(info.value) and "session_id" in str(info.value)
