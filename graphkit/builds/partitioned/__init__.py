"""Builds beyond one process's memory: partition by partition on one machine
(:func:`build_local`) or on a Spark cluster (:mod:`graphkit.builds.partitioned.spark`).

Both run the same per-partition projection (:mod:`graphkit.builds.partitioned.partition`)
and the same merge (:mod:`graphkit.builds.partitioned.merge`), and write the same snapshot
bytes as the in-memory build, whatever the number of partitions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphkit.core.lazy import lazy_exports

_EXPORTS = {"EngineResult": "graphkit.builds.partitioned.local",
            "build_local": "graphkit.builds.partitioned.local",
            "PartitionError": "graphkit.builds.partitioned.plan"}
__all__ = ["EngineResult", "PartitionError", "build_local"]


__getattr__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from graphkit.builds.partitioned.local import EngineResult, build_local
    from graphkit.builds.partitioned.plan import PartitionError
