"""Snapshots on disk: ``manifest.json`` plus one Parquet file per node and
edge type, written atomically (:mod:`.io`) and queried in place (:mod:`.reader`)."""

from graphkit.snapshot.io import (
    FORMAT_VERSION,
    MANIFEST,
    SnapshotError,
    read_manifest,
    read_snapshot,
    write_snapshot,
)

__all__ = ["FORMAT_VERSION", "MANIFEST", "SnapshotError", "read_manifest", "read_snapshot",
           "write_snapshot"]
