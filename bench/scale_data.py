"""Generated rows at sizes one process could not generate at once (10M and up).

``rows-10m`` is ten 1M-row blocks from :func:`bench.generate.generate_rows`,
block ``i`` with seed ``11 + i``: block 0 is exactly ``rows-1m``, and the
seeds keep every id distinct between blocks (message, part and call numbers
are offset by ``seed * 10**9``; session, thread and agent ids are random per
seed). So 10× the rows are 10× the sessions of the same shape.

    python -m bench.scale_data --rows 10m
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from bench.generate import (
    GEN_VERSION,
    ensure_rows,
    generate_rows,
    parse_size,
    size_label,
    write_rows,
)

BLOCK = 1_000_000


def ensure_big_rows(target_rows: int, root: Path, *, seed: int = 11) -> tuple[Path, dict[str, Any]]:
    """``rows-<size>`` under ``root``: one block for sizes up to 1M, else 1M blocks."""
    if target_rows <= BLOCK:
        return ensure_rows(target_rows, root, seed=seed)
    out = root / f"rows-{size_label(target_rows)}"
    meta_path = out / "_meta.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        if meta.get("gen_version") == GEN_VERSION and meta.get("blocks_seed") == seed:
            meta["cached"] = True
            return out, meta
    t0 = time.perf_counter()
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    blocks = -(-target_rows // BLOCK)
    totals: dict[str, Any] = {"rows": 0, "unique_rows": 0, "sessions": 0, "threads": 0}
    for i in range(blocks):
        table, truth, info = generate_rows(BLOCK, seed=seed + i)
        block_dir = tmp / f"block={i:03d}"
        write_rows(table, truth, info, block_dir)
        # The truth and meta of a block are not rows: keep them out of the row files.
        (block_dir / "_truth.parquet").rename(tmp / f"_truth-{i:03d}.parquet")
        (block_dir / "_meta.json").unlink()
        for k in totals:
            totals[k] += getattr(info, k)
        del table, truth
    meta = {**totals, "gen_version": GEN_VERSION, "blocks": blocks, "blocks_seed": seed,
            "generate_seconds": round(time.perf_counter() - t0, 1),
            "bytes": sum(f.stat().st_size for f in tmp.rglob("part-*.parquet"))}
    (tmp / "_meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    meta["cached"] = False
    return out, meta


def row_count(path: Path) -> int:
    """Rows in the part files under ``path`` (from the Parquet footers)."""
    return sum(pq.ParquetFile(f).metadata.num_rows for f in path.rglob("part-*.parquet"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="10m")
    ap.add_argument("--root", type=Path, default=Path(__file__).parent / ".data")
    args = ap.parse_args()
    path, meta = ensure_big_rows(parse_size(args.rows), args.root)
    print(path, json.dumps(meta))


if __name__ == "__main__":
    main()
