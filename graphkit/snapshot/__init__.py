"""Snapshots on disk: ``manifest.json`` plus one Parquet file per node and
edge type, written atomically (:mod:`.io`) and queried in place (:mod:`.reader`)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__all__ = ["FORMAT_VERSION", "MANIFEST", "SnapshotError", "read_manifest", "read_snapshot",
           "write_snapshot"]


def __getattr__(name: str) -> Any:
    # Loaded on first use: a rebuild that finds nothing changed reads the snapshot's
    # index and manifest stat only, and must not pay for pyarrow (graphkit.engine.reuse).
    if name not in __all__:
        raise AttributeError(f"module 'graphkit.snapshot' has no attribute {name!r}")
    value = getattr(import_module("graphkit.snapshot.io"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from graphkit.snapshot.io import (
        FORMAT_VERSION,
        MANIFEST,
        SnapshotError,
        read_manifest,
        read_snapshot,
        write_snapshot,
    )
