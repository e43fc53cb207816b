"""Named time zones in ``--since``/``--until``: ``2026-11-20T10:00 Europe/Berlin`` and
RFC 9557's ``2026-11-20T10:00[Europe/Berlin]`` (also after an offset, which must then
be the zone's).

IANA names are read with the standard library's :mod:`zoneinfo`: the system's zone
database where there is one, else the ``tzdata`` package (a dependency, for machines
without one: Windows, minimal containers). A wall time a zone's clocks skip (spring
forward) or show twice (fall back) is refused rather than guessed: which of two
instants a user meant cannot be known, and a window an hour off silently drops rows.

Standard library only: parsing options must not load pyarrow.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

# ``WHEN ZONE`` (a name starting with a letter, so "2026-11-20 10:00" stays a time) or
# ``WHEN[ZONE]``.
_NAMED = re.compile(r"^(?P<when>.+?)(?:\s+(?P<zone>[A-Za-z][\w+\-/]*)|\[(?P<bracket>[^\]]*)\])$")
# What an IANA key may hold (zoneinfo refuses "..", absolute paths; this refuses the rest
# before any file is looked up).
_KEY = re.compile(r"^[A-Za-z][\w+\-]*(?:/[A-Za-z0-9][\w+\-]*)*$")


class ZoneError(ValueError):
    """A named zone that cannot be used; the message says why and what to do."""


def split_zone(text: str) -> tuple[str, str] | None:
    """``(when, zone name)`` of a time followed by a zone name, or None.

    >>> split_zone("2026-11-20T10:00 Europe/Berlin")
    ('2026-11-20T10:00', 'Europe/Berlin')
    >>> split_zone("2026-11-20T10:00+01:00[Europe/Berlin]")
    ('2026-11-20T10:00+01:00', 'Europe/Berlin')
    >>> split_zone("2026-11-20 10:00") is None
    True
    """
    m = _NAMED.match(text.strip())
    if m is None:
        return None
    return m.group("when").strip(), (m.group("zone") or m.group("bracket") or "").strip()


def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name`` (exact, else the one name that differs only in case)."""
    if _KEY.match(name):
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
    known = available_timezones()
    if not known:
        raise ZoneError(f"unknown time zone {name!r}: no time zone database was found; "
                        "install the tzdata package (pip install tzdata), or give an "
                        "offset such as +01:00")
    folded = [k for k in known if k.lower() == name.lower()]
    if len(folded) == 1:
        return ZoneInfo(folded[0])
    import difflib

    near = difflib.get_close_matches(name, sorted(known), n=3)
    hint = f" (did you mean {', '.join(near)}?)" if near else ""
    raise ZoneError(f"unknown time zone {name!r}{hint}; use an IANA name such as "
                    "Europe/Berlin, or an offset such as +01:00")


def in_zone(when: datetime, tz: ZoneInfo) -> datetime:
    """The instant (UTC) of ``when`` in ``tz``: a wall time, or, if ``when`` carries an
    offset, the instant it names, which must be one ``tz`` shows then."""
    wall = when.replace(tzinfo=None)
    candidates = {fold: wall.replace(tzinfo=tz, fold=fold) for fold in (0, 1)}
    if when.tzinfo is not None:
        offset = when.utcoffset()
        for c in candidates.values():
            if c.utcoffset() == offset:
                return c.astimezone(UTC)
        shown = candidates[0].strftime("%z")
        raise ZoneError(f"its offset {_offset(offset)} is not {tz.key}'s at that time "
                        f"({shown[:3]}:{shown[3:]}); leave out one of the two")
    early, late = candidates[0], candidates[1]
    if early.utcoffset() == late.utcoffset():
        return early.astimezone(UTC)
    if early.astimezone(UTC).astimezone(tz).replace(tzinfo=None) != wall:
        raise ZoneError(f"{wall.isoformat()} does not exist in {tz.key} (its clocks "
                        "skip that hour); give an offset instead, such as "
                        f"{wall.isoformat()}{_offset(early.utcoffset())}")
    raise ZoneError(f"{wall.isoformat()} happens twice in {tz.key} (its clocks go back); "
                    f"give the offset you mean instead: {wall.isoformat()}"
                    f"{_offset(early.utcoffset())} or {wall.isoformat()}"
                    f"{_offset(late.utcoffset())}")


def _offset(delta: timedelta | None) -> str:
    minutes = int((delta or timedelta()).total_seconds() // 60)
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
