"""Export time per format: ``python -m bench.export_formats [--rows 100k] [--repeat 2] [--import]``.

Builds a snapshot of generated rows (cached under ``bench/.data``), then times
``graphkit.export.export_snapshot`` (read the snapshot + write) for every
format, best of ``--repeat``, and the output's size. With ``--import``, also
times Neo4j's offline importer (enrich/neo4j-admin) on the neo4j-csv and
neo4j-parquet folders, running each README's command. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bench.generate import ensure_rows, parse_size, size_label

HERE = Path(__file__).resolve().parent
OUT_NAMES = {"node-link": "graph.json", "graphml": "graph.graphml", "gexf": "graph.gexf",
             "cypher": "graph.cypher", "edges": "edges.parquet", "neo4j-csv": "neo4j-csv",
             "neo4j-parquet": "neo4j-parquet"}


def snapshot_for(rows: int, root: Path) -> Path:
    """A snapshot of the generated rows, built once."""
    from graphkit.builds.run import build
    from graphkit.snapshot import write_snapshot

    rows_dir, _ = ensure_rows(rows, root)
    snap = root / f"snapshot-{size_label(rows)}"
    if not (snap / "manifest.json").is_file():
        result = build(rows_dir)
        write_snapshot(result.graph, snap, summary=result.summary())
    return snap


def size_of(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def neo4j_import(folder: Path) -> float:
    """Seconds neo4j-admin takes to import ``folder`` with its README's command."""
    admin = HERE.parent / "enrich" / "neo4j-admin"
    jar = admin / "target" / "neo4j-admin.jar"
    if not jar.is_file():
        subprocess.run(["mvn", "-q", "-B", "-f", str(admin / "pom.xml"), "package"], check=True)
    text = (folder / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block is not None
    command = shlex.split(block.group(1).replace("\\\n", " "))
    with tempfile.TemporaryDirectory(prefix="graphkit-import-") as home:
        env = {**os.environ, "NEO4J_HOME": home, "NEO4J_CONF": f"{home}/conf"}
        t0 = time.perf_counter()
        subprocess.run(["java", "-Xmx1g", "-jar", str(jar), *command[1:]], cwd=folder, env=env,
                       check=True, capture_output=True)
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="100k")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--root", type=Path, default=HERE / ".data")
    ap.add_argument("--import", dest="run_import", action="store_true",
                    help="also time neo4j-admin on the neo4j-csv and neo4j-parquet folders")
    args = ap.parse_args()
    from graphkit.export import export_snapshot, format_names
    from graphkit.snapshot import read_manifest

    n = parse_size(args.rows)
    snap = snapshot_for(n, args.root)
    counts = read_manifest(snap)["counts"]
    print(f"{size_label(n)} rows -> {sum(counts['nodes'].values())} nodes, "
          f"{sum(counts['edges'].values())} edges\n")
    print(f"| format | best of {args.repeat} (s) | output |"
          + (" neo4j-admin import (s) |" if args.run_import else ""))
    print("|---|---:|---:|" + ("---:|" if args.run_import else ""))
    work = Path(tempfile.mkdtemp(prefix="graphkit-export-bench-"))
    try:
        for fmt in format_names():
            out = work / OUT_NAMES.get(fmt, fmt)
            best = min(_timed(export_snapshot, snap, fmt, out) for _ in range(args.repeat))
            row = f"| {fmt} | {best:.2f} | {size_of(out) / 1e6:.1f} MB |"
            if args.run_import:
                row += (f" {neo4j_import(out):.1f} |" if fmt.startswith("neo4j-") else " |")
            print(row, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _timed(fn: object, *a: object) -> float:
    t0 = time.perf_counter()
    fn(*a)  # type: ignore[operator]
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
