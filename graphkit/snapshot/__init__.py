"""Snapshots on disk: ``manifest.json`` plus one Parquet file per node and edge type.

:mod:`.write` writes one atomically, :mod:`.read` reads one back checked, :mod:`.swap`
puts a finished folder in place, :mod:`.format` names its files and numbers,
:mod:`.index` remembers where each build's snapshot lives, :mod:`.diff` compares two,
:mod:`.rejects` writes the files that account for unusable rows and lines. Querying a
snapshot in place is a store: :mod:`graphkit.enrich.snapshot_store`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphkit.core.lazy import lazy_exports

__all__ = ["FORMAT_VERSION", "MANIFEST", "SnapshotError", "read_manifest", "read_snapshot",
           "write_snapshot"]

_EXPORTS = {"FORMAT_VERSION": "graphkit.snapshot.format",
            "MANIFEST": "graphkit.snapshot.format",
            "SnapshotError": "graphkit.snapshot.format",
            "read_manifest": "graphkit.snapshot.read",
            "read_snapshot": "graphkit.snapshot.read",
            "write_snapshot": "graphkit.snapshot.write"}

__getattr__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from graphkit.snapshot.format import FORMAT_VERSION, MANIFEST, SnapshotError
    from graphkit.snapshot.read import read_manifest, read_snapshot
    from graphkit.snapshot.write import write_snapshot
