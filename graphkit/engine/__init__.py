"""Builds beyond one process's memory: partition by partition on one machine
(:func:`build_local`) or on a Spark cluster (:mod:`graphkit.engine.spark`).

Both run the same per-partition projection (:mod:`graphkit.engine.partition`)
and the same merge (:mod:`graphkit.engine.merge`), and write the same snapshot
bytes as the in-memory build, whatever the number of partitions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphkit.engine.local import EngineResult, build_local
    from graphkit.engine.plan import PartitionError

__all__ = ["EngineResult", "PartitionError", "build_local"]


def __getattr__(name: str) -> Any:
    # Imported on first use: every build imports graphkit.engine.reuse (the
    # incremental check), which must not pull in the partitioned engine.
    if name in ("EngineResult", "build_local"):
        from graphkit.engine import local

        return getattr(local, name)
    if name == "PartitionError":
        from graphkit.engine.plan import PartitionError

        return PartitionError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
