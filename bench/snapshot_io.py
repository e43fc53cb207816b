"""Snapshot write/read timings (checksums included), best and median of N.

    python -m bench.snapshot_io --rows 300k --granularity message

Prints one line: snapshot size, write_snapshot, read_snapshot (every table,
each hashed) and SnapshotReader open (what `graphkit lineage` pays). Run it
from two checkouts to compare versions; the machine's noise is the median's
spread, so compare medians of several runs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq

from bench.generate import generate_rows, parse_size


def _times(f: Callable[[], object], n: int) -> tuple[float, float]:
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts) * 1000, statistics.median(ts) * 1000


def main() -> None:
    from graphkit.builds.run import build
    from graphkit.enrich.snapshot_store import SnapshotReader
    from graphkit.snapshot import read_snapshot, write_snapshot

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="300k")
    ap.add_argument("--granularity", default="message")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        gen = generate_rows(parse_size(args.rows))
        pq.write_table(gen[0] if isinstance(gen, tuple) else gen, out / "rows.parquet")
        graph = build([out / "rows.parquet"], granularity=args.granularity).graph
        snap = out / "snap"
        w = _times(lambda: write_snapshot(graph, snap), args.repeat)
        size = sum(p.stat().st_size for p in snap.rglob("*") if p.is_file()) / 1e6
        r = _times(lambda: read_snapshot(snap), args.repeat)
        o = _times(lambda: SnapshotReader(snap), args.repeat)
    print(f"rows={args.rows} nodes={sum(graph.node_counts().values())} snapshot={size:.1f} MB | "
          f"ms best/median: write {w[0]:.0f}/{w[1]:.0f}, read_snapshot {r[0]:.0f}/{r[1]:.0f}, "
          f"SnapshotReader open {o[0]:.0f}/{o[1]:.0f}")


if __name__ == "__main__":
    main()
