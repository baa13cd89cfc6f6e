"""The one clock the stores read, and the one spelling of a stored time.

Stored times are UTC with microseconds and a ``Z`` (``2026-11-25T19:28:33.123456Z``): fixed
width, so they also sort as text in SQLite.
"""

from __future__ import annotations

import datetime


def utc_now() -> datetime.datetime:
    """Now, as an aware UTC datetime."""
    return datetime.datetime.now(datetime.UTC)


def utc_stamp(moment: datetime.datetime | None = None) -> str:
    """``moment`` (default: now) in the stored spelling."""
    when = utc_now() if moment is None else moment.astimezone(datetime.UTC)
    return when.isoformat(timespec="microseconds").replace("+00:00", "Z")
