"""A :class:`~graphkit.core.progress.Progress` that records every call, for tests."""

from __future__ import annotations

from typing import Any

from graphkit.core.progress import Progress, Task


class RecordingProgress(Progress):
    """Every note and task call as a tuple in :attr:`events`, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def note(self, message: str) -> None:
        self.events.append(("note", message))

    def start(self, name: str, total: int | None = None, unit: str = "") -> Task:
        self.events.append(("start", name, total, unit))
        return _RecordingTask(self, name)

    def of(self, name: str) -> list[tuple[Any, ...]]:
        """The events of task ``name`` (its start included)."""
        return [e for e in self.events if e[0] != "note" and e[1] == name]

    def advanced(self, name: str) -> int:
        return sum(e[2] for e in self.of(name) if e[0] == "advance")

    def total(self, name: str) -> int | None:
        return next(e[2] for e in self.of(name) if e[0] == "start")


class _RecordingTask(Task):
    def __init__(self, owner: RecordingProgress, name: str) -> None:
        self.owner, self.name = owner, name

    def advance(self, n: int = 1, **counts: int) -> None:
        self.owner.events.append(("advance", self.name, n, counts))

    def set_source(self, label: str) -> None:
        self.owner.events.append(("source", self.name, label))

    def done(self) -> None:
        self.owner.events.append(("done", self.name))
