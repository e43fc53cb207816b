"""Snapshots on disk: ``manifest.json`` plus one Parquet file per node and
edge type, written atomically (:mod:`.io`) and queried in place (:mod:`.reader`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphkit.core.lazy import lazy_exports

__all__ = ["FORMAT_VERSION", "MANIFEST", "SnapshotError", "read_manifest", "read_snapshot",
           "write_snapshot"]


__getattr__ = lazy_exports(__name__, dict.fromkeys(__all__, "graphkit.snapshot.io"))


if TYPE_CHECKING:
    from graphkit.snapshot.io import (
        FORMAT_VERSION,
        MANIFEST,
        SnapshotError,
        read_manifest,
        read_snapshot,
        write_snapshot,
    )
