"""Clocks: where memlane gets "now" from, injectable so tests can freeze time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

from memlane.errors import ValidationError

__all__ = [
    "MAX_DAYS",
    "MAX_YEAR",
    "MIN_YEAR",
    "SECONDS_PER_DAY",
    "YEAR_PATTERN",
    "Clock",
    "FrozenClock",
    "SystemClock",
    "ensure_utc",
    "require_timezone",
]

SECONDS_PER_DAY = 86_400.0
"""Seconds in a day: ages in seconds become the days of decay rates and half-lives."""

MIN_YEAR = 1000
"""Earliest year of an instant memlane accepts (``created_at``, ``as_of``, ``now``, ...), as written
in its own zone (issue #22)."""
MAX_YEAR = 2999
"""Latest year of an accepted instant: with :data:`MAX_DAYS`, every ``instant +- days``, its UTC
conversion and every calendar step of a display (a stats bin) stay inside ``datetime``'s years 1..9999."""
YEAR_PATTERN = "^[12][0-9]{3}-"
"""The JSON Schema ``pattern`` of an ISO 8601 date-time in years :data:`MIN_YEAR`..:data:`MAX_YEAR`."""
MAX_DAYS = 100_000.0
"""Longest duration in days an argument may give (``never_retrieved_older_than_days``, about 274 years)."""


@runtime_checkable
class Clock(Protocol):
    """Source of the current time."""

    def now(self) -> datetime:
        """Return the current time as a timezone-aware UTC datetime."""
        ...


class SystemClock:
    """The real wall clock (``datetime.now(UTC)``)."""

    def now(self) -> datetime:
        """Return the current wall-clock time, timezone-aware UTC."""
        return datetime.now(UTC)


class FrozenClock:
    """A clock that stands still until moved; for tests and deterministic replays.

    Args:
        at: The time to report; must be timezone-aware.

    Raises:
        ValidationError: ``at`` is naive.
    """

    def __init__(self, at: datetime) -> None:
        self._at = ensure_utc(at, "at")

    def now(self) -> datetime:
        """Return the frozen time (UTC)."""
        return self._at

    def advance(self, delta: timedelta) -> None:
        """Move the clock forward (or back, with a negative ``delta``)."""
        self._at = self._at + delta

    def set(self, at: datetime) -> None:
        """Jump to ``at`` (timezone-aware).

        Raises:
            ValidationError: ``at`` is naive.
        """
        self._at = ensure_utc(at, "at")


def require_timezone(value: datetime, name: str) -> datetime:
    """Return ``value`` if it is timezone-aware (the one message of Python and every interface).

    Its year (as written, in its own zone) must also be :data:`MIN_YEAR`..:data:`MAX_YEAR`, so
    no later arithmetic on it can overflow: ``0001-01-01T00:00:00+14:00`` is refused here, not
    an ``OverflowError`` later.

    Raises:
        ValidationError: ``value`` is naive, or outside the accepted years.
    """
    offset = value.utcoffset() if value.tzinfo is not None else None
    if offset is None:
        raise ValidationError(
            f"{name} must be timezone-aware (e.g. 2025-01-09T12:00:00Z), got a time without a timezone"
        )
    if not MIN_YEAR <= value.year <= MAX_YEAR:
        raise ValidationError(f"{name} must be in the years {MIN_YEAR}-{MAX_YEAR}, got {value.isoformat()}")
    return value


def ensure_utc(value: datetime, name: str) -> datetime:
    """Return ``value`` converted to UTC; reject naive datetimes.

    Args:
        value: A timezone-aware datetime.
        name: The argument name, for the error message.

    Raises:
        ValidationError: ``value`` is not a datetime or has no timezone.
    """
    if not isinstance(value, datetime):
        raise ValidationError(f"{name} must be a datetime, got {type(value).__name__}")
    return require_timezone(value, name).astimezone(UTC)
