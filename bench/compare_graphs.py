"""Check that a change to the projection keeps the graph byte-identical.

``python -m bench.compare_graphs save DIR [--sizes 10k,100k]`` builds the bench
rows at both granularities and writes every node and edge table, the rejects,
the summary and the meta to ``DIR``; ``python -m bench.compare_graphs check
DIR`` builds again and compares each table with ``Table.equals`` (schema,
order and values) and the JSON parts with ``==``. Exit status 1 on a
difference.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

from bench.generate import ensure_rows, parse_size, size_label

DATA = Path(__file__).resolve().parent / ".data"

GRANULARITIES = ("thread", "message")


def _tables(path: Path, granularity: str) -> tuple[dict[str, pa.Table], dict[str, Any]]:
    from graphkit.builds.run import build

    r = build([path], fingerprints=False, granularity=granularity)
    g = r.graph
    tables = {f"node-{t}": n.table for t, n in g.nodes.items()}
    tables.update({f"edge-{t}": e.table for t, e in g.edges.items()})
    tables["rejects"] = r.projection.rejects
    info = {"summary": r.summary(), "meta": g.meta, "rows_used": r.projection.rows_used,
            "dropped": r.projection.dropped_edges}
    return tables, json.loads(json.dumps(info, default=str))


def _write(table: pa.Table, path: Path) -> None:
    with ipc.new_file(str(path), table.schema) as w:
        w.write_table(table)


def _read(path: Path) -> pa.Table:
    with ipc.open_file(str(path)) as r:
        return r.read_all()


def save(out: Path, sizes: list[str]) -> None:
    for size in sizes:
        data, _ = ensure_rows(parse_size(size), DATA)
        for gran in GRANULARITIES:
            d = out / f"{size_label(parse_size(size))}-{gran}"
            d.mkdir(parents=True, exist_ok=True)
            tables, info = _tables(data, gran)
            for name, t in tables.items():
                _write(t, d / f"{name}.arrow")
            (d / "info.json").write_text(json.dumps(info, indent=1, sort_keys=True))
            print(f"saved {d} ({len(tables)} tables)")


def check(ref: Path, sizes: list[str]) -> bool:
    ok = True
    for size in sizes:
        data, _ = ensure_rows(parse_size(size), DATA)
        for gran in GRANULARITIES:
            d = ref / f"{size_label(parse_size(size))}-{gran}"
            tables, info = _tables(data, gran)
            want = {p.stem for p in d.glob("*.arrow")}
            if set(tables) != want:
                print(f"{d.name}: tables differ: {sorted(set(tables) ^ want)}")
                ok = False
            for name in sorted(set(tables) & want):
                if not tables[name].equals(_read(d / f"{name}.arrow"), check_metadata=True):
                    print(f"{d.name}: {name} differs")
                    ok = False
            if info != json.loads((d / "info.json").read_text()):
                print(f"{d.name}: summary/meta differ")
                ok = False
            print(f"checked {d.name}: {'same' if ok else 'DIFFERENT'}")
    return ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["save", "check"])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--sizes", default="10k,100k")
    a = ap.parse_args()
    sizes = a.sizes.split(",")
    if a.action == "save":
        save(a.dir, sizes)
    elif not check(a.dir, sizes):
        sys.exit(1)


if __name__ == "__main__":
    main()
