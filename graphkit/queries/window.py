"""A time window over a built graph: which sessions, threads and edges were active.

A graph keeps each node's and edge's first and last record time, not every
record's; so of a built graph, ``--since``/``--until`` keep what was active in
the window (its [first, last] span overlaps it), whole. For exact per-record
cuts, build with ``--since``/``--until``: the rows are filtered before
anything is counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from graphkit.core.errors import GraphkitError
from graphkit.core.when import parse_window

#: A bound as a caller gives it: an instant, or a time as a person writes it
#: (:func:`graphkit.core.when.parse_when`: ``2026-11-20``, ``7 days ago``), or none.
When = datetime | str | None


def utc_day(value: str | datetime | None) -> str | None:
    """The UTC day (``YYYY-MM-DD``) of a time given as ISO text or a datetime.

    >>> utc_day("2026-11-20T23:30:00-02:00")
    '2026-11-21'
    """
    when = _instant(value)
    return None if when is None else when.astimezone(UTC).date().isoformat()


def _instant(value: str | datetime | None) -> datetime | None:
    if value is None:
        return None
    when = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return when if when.tzinfo else when.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Window:
    """``since``/``until`` bounds, each optional (open)."""

    since: datetime | None = None
    until: datetime | None = None

    @classmethod
    def of(cls, since: When = None, until: When = None) -> Window:
        """The window between two bounds, either of which may be written text.

        >>> Window.of("2026-11-20", "2026-11-20").until.isoformat()
        '2026-11-20T23:59:59.999999+00:00'
        """
        lo, hi = parse_window(since if isinstance(since, str) else None,
                              until if isinstance(until, str) else None)
        window = cls(since if isinstance(since, datetime) else lo,
                     until if isinstance(until, datetime) else hi)
        if window.since is not None and window.until is not None \
                and _instant(window.since) > _instant(window.until):  # type: ignore[operator]
            raise GraphkitError(f"--since {since!r} is after --until {until!r}")
        return window

    @property
    def open(self) -> bool:
        """Whether the window keeps everything."""
        return self.since is None and self.until is None

    def overlaps(self, first: str | datetime | None, last: str | datetime | None) -> bool:
        """Whether a span [first, last] (ISO text or datetimes) meets the window;
        a span with no times meets only an open window.

        >>> w = Window(datetime(2026, 11, 21, tzinfo=UTC), None)
        >>> w.overlaps("2026-11-20T09:00:00+00:00", "2026-11-22T09:00:00+00:00")
        True
        >>> w.overlaps("2026-11-20T09:00:00+00:00", "2026-11-20T10:00:00+00:00")
        False
        """
        if self.open:
            return True
        lo, hi = _instant(first), _instant(last)
        lo, hi = lo or hi, hi or lo
        if lo is None or hi is None:
            return False
        return (self.since is None or hi >= self.since) and (
            self.until is None or lo <= self.until)
