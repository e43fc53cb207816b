"""A rebuild with nothing changed: the previous snapshot stands, nothing is read or projected.

After a build writes its snapshot, :func:`record_build` keeps, in the cache folder, what the
build depended on: a key of everything that shapes the output (contract, options, graphkit
and parser versions, the sources as given) and the size, mtime and inode of every file under
the sources (transcripts, sidecars, row files alike, so a file added, deleted, appended to or
replaced is seen) — plus the same of the snapshot's manifest and side files, so a snapshot
rewritten or removed since is not trusted. :func:`reusable_build` compares; only when all of
it is equal is the recorded summary returned and the build skipped. Any doubt (no record, a
damaged or foreign one) means a full build.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import graphkit
from graphkit.contract.loader import LoadedContract
from graphkit.snapshot.format import MANIFEST
from graphkit.sources.transcripts.index import PARSER_VERSION, atomic_write

RECORD = "build-record.json.gz"
_RECORD_VERSION = 1


def build_key(contract: LoadedContract, sources: Sequence[Path], snapshot_dir: Path,
              options: dict[str, Any]) -> str:
    """A digest of everything besides the input files that decides the snapshot's bytes."""
    doc = {
        "record": _RECORD_VERSION, "graphkit": graphkit.__version__, "parser": PARSER_VERSION,
        "contract": contract.spec.model_dump_json(), "contract_path": str(contract.path),
        "sources": [str(Path(p).expanduser().resolve()) for p in sources],
        "snapshot": str(Path(snapshot_dir).expanduser().resolve()),
        "options": {k: str(v) for k, v in sorted(options.items())},
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def input_state(sources: Sequence[Path]) -> list[list[Any]]:
    """``[path, size, mtime_ns, inode]`` of every file under ``sources``, sorted; folders
    contribute their files (all of them: a new sidecar changes links too)."""
    out: list[list[Any]] = []
    for given in sources:
        root = str(Path(given).expanduser().resolve())
        if not os.path.isdir(root):
            out.append([root, *(_stat(root) or [-1, -1, -1])])
            continue
        stack = [root]
        while stack:
            folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                out.append([folder, -1, -1, -1])  # unreadable now: never equal to before
                continue
            for e in entries:
                try:
                    if e.is_dir(follow_symlinks=False):  # as os.walk: no link loops
                        stack.append(e.path)
                        continue
                    st = e.stat(follow_symlinks=True)
                    out.append([e.path, st.st_size, st.st_mtime_ns, st.st_ino])
                except OSError:
                    out.append([e.path, -1, -1, -1])
    out.sort()
    return out


def output_state(snapshot_dir: Path, side_files: Sequence[Path]) -> list[Any]:
    """What the snapshot and its side files (rejects, skipped lines) are now."""
    return [_stat(str(Path(snapshot_dir) / MANIFEST))] + [_stat(str(p)) for p in side_files]


def reusable_build(cache_dir: Path, key: str, inputs: list[list[Any]],
                   outputs: list[Any]) -> dict[str, Any] | None:
    """The recorded ``{"summary", "skipped"}`` when nothing changed since; else None."""
    try:
        doc = json.loads(gzip.decompress((cache_dir / RECORD).read_bytes()))
        if not isinstance(doc, dict) or doc.get("key") != key or outputs[0] is None:
            return None
        if doc.get("inputs") != inputs or doc.get("outputs") != outputs:
            return None
        summary, skipped = doc["summary"], doc["skipped"]
        if not isinstance(summary, dict) or not isinstance(skipped, list):
            return None
        return {"summary": summary, "skipped": skipped}
    except (OSError, ValueError, KeyError, TypeError, EOFError, zlib.error):
        return None


def record_build(cache_dir: Path, key: str, inputs: list[list[Any]], outputs: list[Any],
                 summary: dict[str, Any], skipped: list[dict[str, Any]]) -> None:
    """Remember what this build depended on and said (see the module doc)."""
    doc = {"key": key, "inputs": inputs, "outputs": outputs, "summary": summary,
           "skipped": skipped}
    payload = gzip.compress(json.dumps(doc, default=str).encode("utf-8"), 6, mtime=0)
    atomic_write(cache_dir / RECORD, lambda fh: fh.write(payload))


def forget_build(cache_dir: Path) -> None:
    """Drop the record (a build that failed or went elsewhere must not be reused)."""
    (cache_dir / RECORD).unlink(missing_ok=True)
