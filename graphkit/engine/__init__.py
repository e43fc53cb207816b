"""Builds beyond one process's memory: partition by partition on one machine
(:func:`build_local`) or on a Spark cluster (:mod:`graphkit.engine.spark`).

Both run the same per-partition projection (:mod:`graphkit.engine.partition`)
and the same merge (:mod:`graphkit.engine.merge`), and write the same snapshot
bytes as the in-memory build, whatever the number of partitions.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {"EngineResult": "graphkit.engine.local", "build_local": "graphkit.engine.local",
            "PartitionError": "graphkit.engine.plan"}
__all__ = ["EngineResult", "PartitionError", "build_local"]


def __getattr__(name: str) -> Any:
    # Loaded on first use: :mod:`graphkit.engine.reuse` (a rebuild with nothing changed)
    # runs before pyarrow is imported and must not pull the engine in with it.
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'graphkit.engine' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from graphkit.engine.local import EngineResult, build_local
    from graphkit.engine.plan import PartitionError
