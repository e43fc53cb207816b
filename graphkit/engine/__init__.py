"""Builds beyond one process's memory: partition by partition on one machine
(:func:`build_local`) or on a Spark cluster (:mod:`graphkit.engine.spark`).

Both run the same per-partition projection (:mod:`graphkit.engine.partition`)
and the same merge (:mod:`graphkit.engine.merge`), and write the same snapshot
bytes as the in-memory build, whatever the number of partitions.
"""

from graphkit.engine.local import EngineResult, build_local
from graphkit.engine.plan import PartitionError

__all__ = ["EngineResult", "PartitionError", "build_local"]
