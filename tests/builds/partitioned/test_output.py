"""Streaming a table into a snapshot file in pieces writes write_snapshot's bytes."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphkit.builds.partitioned.output import TableWriter
from graphkit.snapshot.format import COMPRESSION, ROW_GROUP_ROWS


@pytest.mark.slow
def test_pieces_of_any_size_write_the_whole_table_bytes(tmp_path: Path) -> None:
    n = 2 * ROW_GROUP_ROWS + 1234
    rng = np.random.default_rng(3)
    table = pa.table({"id": pa.array([f"{i:08x}-x" for i in rng.permutation(n)]),
                      "n": pa.array(rng.integers(0, 50, n)),
                      "kind": pa.array(rng.choice(["a", "b", None], n))})
    pq.write_table(table, tmp_path / "whole.parquet", row_group_size=ROW_GROUP_ROWS,
                   compression=COMPRESSION)
    w = TableWriter(tmp_path / "pieces.parquet", table.schema)
    cuts = [0, 7, 50_000, ROW_GROUP_ROWS + 3, n - 1, n]
    for lo, hi in itertools.pairwise(cuts):
        w.add(table.slice(lo, hi - lo))
    w.close()
    assert w.rows == n
    assert pq.ParquetFile(tmp_path / "pieces.parquet").metadata.num_row_groups == 3
    digest = [hashlib.sha256((tmp_path / f).read_bytes()).hexdigest()
              for f in ("whole.parquet", "pieces.parquet")]
    assert digest[0] == digest[1]


def test_an_empty_table_writes_what_write_table_writes(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.string()), ("n", pa.int64())])
    pq.write_table(schema.empty_table(), tmp_path / "a.parquet", row_group_size=ROW_GROUP_ROWS,
                   compression=COMPRESSION)
    w = TableWriter(tmp_path / "b.parquet", schema)
    w.close()
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
