"""Times a person writes (``--since``/``--until``, a caller's ``since=``): an ISO date or
timestamp, ``now``, ``today``, ``yesterday``, ``N units ago``, or a time in a named zone.

Parsing them is no part of any one command: a build cuts its rows with them, a query
keeps what was active between them, and a library caller may pass the same words.
Standard library only (``graphkit --help`` and a query must not wait for pyarrow).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from graphkit.core.errors import GraphkitError

_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400}
_AGO = re.compile(r"^(\d+|an?|one)\s*(second|minute|hour|day|week)s?\s+ago$")


def parse_when(value: str | None, option: str = "--since", *, end: bool = False,
               now: datetime | None = None) -> datetime | None:
    """Return the UTC instant a written time names, or None for None.

    Parameters
    ----------
    value : str or None
        An ISO date or timestamp (UTC when no zone is given; an offset or an IANA zone
        name may follow), ``now``, ``today``, ``yesterday`` or ``N
        minutes|hours|days|weeks ago``.
    option : str
        How the caller names the value in an error message (``--since``).
    end : bool
        A bare day (a date, today, yesterday) means its start, or with ``end`` its
        last microsecond, so ``--until 2026-11-20`` keeps that whole day.
    now : datetime, optional
        The instant ``now``, ``today`` and ``ago`` count from (default: the clock).

    Returns
    -------
    datetime or None
        A zone-aware instant.

    Raises
    ------
    GraphkitError
        ``value`` is no time, names an unknown zone, or lies outside the years 1-9999.

    Examples
    --------
    >>> n = datetime(2026, 12, 1, 15, 30, tzinfo=UTC)
    >>> parse_when("yesterday", now=n).isoformat()
    '2026-11-30T00:00:00+00:00'
    >>> parse_when("7 days ago", now=n).isoformat()
    '2026-11-24T15:30:00+00:00'
    >>> parse_when("2026-11-20", "--until", end=True).isoformat()
    '2026-11-20T23:59:59.999999+00:00'
    """
    if value is None:
        return None
    now = now or datetime.now(UTC)
    text = " ".join(value.strip().lower().split())
    day: datetime | None = None
    if text == "now":
        return now
    if text in ("today", "yesterday"):
        day = now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(
            days=text == "yesterday")
    elif m := _AGO.match(text):
        # Twelve digits of weeks already reach before year 1; int() refuses past 4,300.
        digits = m.group(1).lstrip("0") or "0"
        n = 1 if m.group(1) in ("a", "an", "one") else int(digits) if len(digits) <= 30 \
            else 10 ** 30
        try:
            return now - timedelta(seconds=n * _UNITS[m.group(2)])
        except OverflowError:  # before year 1
            raise GraphkitError(f"{option} {value!r} is before year 1") from None
    else:
        base, zone_name = value.strip(), None
        try:
            when = datetime.fromisoformat(base)
        except ValueError:
            from graphkit.core.zones import split_zone

            parts = split_zone(base)
            if parts is None:
                raise GraphkitError(f"{option} {value!r} is not a time; use YYYY-MM-DD, an "
                                    "ISO timestamp (with an offset or an IANA zone name: "
                                    "2026-11-20T10:00 Europe/Berlin), today, yesterday or "
                                    "'7 days ago'") from None
            base, zone_name = parts
            try:
                when = datetime.fromisoformat(base)
            except ValueError:
                raise GraphkitError(f"{option} {value!r} is not a time; use YYYY-MM-DD or an "
                                    f"ISO timestamp before the zone {zone_name!r}") from None
        if zone_name is not None:
            return _zoned(when, zone_name, len(base) <= 10, end, option, value)
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
        if len(base) > 10:
            return when
        day = when
    return day + timedelta(days=1, microseconds=-1) if end else day


def _zoned(when: datetime, name: str, bare_day: bool, end: bool, option: str,
           value: str) -> datetime:
    """``when`` in the IANA zone ``name`` as a UTC instant; a bare day is that day there
    (its start, or with ``end`` its last microsecond: 23 or 25 hours on a DST day)."""
    from graphkit.core.zones import ZoneError, in_zone, zone

    try:
        tz = zone(name)
        if not bare_day:
            return in_zone(when, tz)
        if end:
            return in_zone(when + timedelta(days=1), tz) - timedelta(microseconds=1)
        return in_zone(when, tz)
    except ZoneError as exc:
        raise GraphkitError(f"{option} {value!r}: {exc}") from None
    except OverflowError:
        raise GraphkitError(f"{option} {value!r} is outside the years 1 to 9999") from None


def parse_window(since: str | None, until: str | None,
                 now: datetime | None = None) -> tuple[datetime | None, datetime | None]:
    """Return the (since, until) instants of two written times (see :func:`parse_when`);
    ``until`` given as a bare day keeps that whole day.

    Parameters
    ----------
    since, until : str or None
        The written times (None: open on that side).
    now : datetime, optional
        The instant relative times count from.

    Returns
    -------
    tuple of (datetime or None, datetime or None)

    Raises
    ------
    GraphkitError
        Either is no time, or ``since`` comes after ``until``.

    Examples
    --------
    >>> n = datetime(2026, 12, 1, 15, 30, tzinfo=UTC)
    >>> [w.isoformat() for w in parse_window("2026-11-20", "2026-11-20", now=n)]
    ['2026-11-20T00:00:00+00:00', '2026-11-20T23:59:59.999999+00:00']
    >>> parse_window("today", "yesterday", now=n)
    Traceback (most recent call last):
    ...
    graphkit.core.errors.GraphkitError: --since 'today' is after --until 'yesterday'
    """
    lo = parse_when(since, "--since", now=now)
    hi = parse_when(until, "--until", end=True, now=now)
    if lo is not None and hi is not None and lo > hi:
        raise GraphkitError(f"--since {since!r} is after --until {until!r}")
    return lo, hi


def utc_text(value: str | datetime | None) -> str | None:
    """Return a time as ``YYYY-MM-DDTHH:MM:SSZ`` in UTC: one shape for every time a
    table shows, whichever store gave it (with or without a fraction, any offset; text
    without a zone is UTC). None stays None.

    >>> utc_text("2025-11-19T22:53:34.908000+00:00"), utc_text("2026-01-03T05:05:07+01:00")
    ('2025-11-19T22:53:34Z', '2026-01-03T04:05:07Z')
    """
    if value is None:
        return None
    when = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
