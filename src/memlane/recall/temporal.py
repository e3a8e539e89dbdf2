"""Time expressions in a recall query -> a time window over episodes' ``created_at``.

A query such as "what did we discuss last May?" names *when*; episodes record when they
happened (``created_at``). :func:`parse_time_window` finds such expressions with the
``dateparser`` library (its ``search_dates`` finder, which also reports the period each
expression covers),
relative to the recall's ``now``, and returns the window they denote. A query without an
anchor (see below) never reaches dateparser. :mod:`memlane.recall.ranking` then boosts
episodes inside the window (a soft boost, never a filter: a wrong parse can reorder hits but
never hide one).

What is understood (English; relative expressions count back from ``now``, dates without a
year take the most recent past one):

* a day: "yesterday", "today", "3 days ago", "on October 13, 2023", "1 February 2023",
  "April 10, 2023" -> that calendar day;
* a week: "last week", "two weeks ago" -> the Monday-to-Sunday week containing that day;
* a month: "in June", "last May", "in July 2023", "last month", "this month" -> that
  calendar month;
* a year: "in 2023", "last year", "4 years ago" -> that calendar year.

Several expressions are intersected ("in April ... 2023" -> April 2023); when they do not
overlap, the narrowest wins. Ignored on purpose: expressions without an anchor that says
they are about time — a bare number or ordinal ("18th", "10"), and a month name written
in lower case ("may" is usually the verb) — and durations or questions *about* time that
name no time ("how long", "when did ..."; the hits' own ``created_at`` answers those).
Modifiers such as "before"/"after"/"around" are not interpreted: "before August 3, 2023"
boosts August 3, 2023.

Time zone: calendar days, weeks, months and years are those of ``now``'s zone ("yesterday"
at 23:59 in Los Angeles is the Los Angeles day before, 08:00 UTC to 08:00 UTC); pass ``now``
with the caller's ``tzinfo`` (a ``zoneinfo.ZoneInfo`` handles daylight saving). The window is
returned in UTC.

Without ``dateparser`` installed, no query has a window (recall still works).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import Any

from memlane.clock import ensure_utc

__all__ = [
    "MAX_PARSE_CHARS",
    "MAX_SPANS",
    "SPAN_CONTEXT_CHARS",
    "TimeWindow",
    "parse_spans",
    "parse_time_window",
]

logger = logging.getLogger(__name__)

_MONTH_NAMES = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
)
_MONTH_RE = re.compile(r"\b(" + "|".join(_MONTH_NAMES.split()) + r")\b", re.IGNORECASE)
_YEAR_RE = re.compile(r"\b(1[89]\d\d|2[01]\d\d)\b")
_RELATIVE_RE = re.compile(
    r"\b(ago|yesterday|today|tonight|last|this|past|previous|week|weeks|month|months|year|years)\b",
    re.IGNORECASE,
)
_GRANULARITIES = ("day", "week", "month", "year")

MAX_PARSE_CHARS = 300
"""A query up to this long is handed to dateparser whole; a longer one only as the spans
around its anchors (:func:`parse_spans`), so a long query costs bounded work: dateparser's time
grows faster than linearly with its input (a 100,000-character query took minutes)."""
SPAN_CONTEXT_CHARS = 40
"""Characters kept on each side of an anchor in a span (whole words; "on October 13, 2023")."""
MAX_SPANS = 8
"""At most this many spans (the first anchors of the query) are parsed."""


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A half-open interval ``[start, end)`` named by a query (bounds in UTC).

    Attributes:
        start: Inclusive lower bound (UTC).
        end: Exclusive upper bound (UTC), after ``start``.
        granularity: ``"day"``, ``"week"``, ``"month"`` or ``"year"`` (of the narrowest expression).
        expressions: The matched query text(s), e.g. ``("in July 2023",)``.
    """

    start: datetime
    end: datetime
    granularity: str
    expressions: tuple[str, ...]

    def contains_seconds(self, seconds: float) -> bool:
        """Whether Unix time ``seconds`` lies in ``[start, end)``."""
        return self.start.timestamp() <= seconds < self.end.timestamp()

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ISO-8601 bounds, granularity and expressions."""
        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "granularity": self.granularity,
            "expressions": list(self.expressions),
        }


@lru_cache(maxsize=1)
def _search_dates() -> Callable[..., Any] | None:
    """dateparser's ``search_dates`` (imported once), or ``None`` without dateparser."""
    try:
        import dateparser.search
    except ImportError:  # pragma: no cover - dateparser is a core dependency
        logger.info("dateparser is not installed: time expressions in queries are ignored")
        return None
    search: Callable[..., Any] = dateparser.search.search_dates
    return search


def _find(text: str, settings: dict[str, Any]) -> list[tuple[str, datetime, str | None]]:
    """The dates dateparser finds in ``text``: ``(phrase, wall-clock datetime, period)`` each.

    The period comes from the parse ``search_dates`` already made (``add_period=True``,
    dateparser >= 1.5, the declared floor): no second parse per phrase.

    Raises:
        Exception: whatever dateparser raises on odd input (the caller ignores the query's time).
    """
    search_dates = _search_dates()
    if search_dates is None:
        return []
    found = search_dates(text, languages=["en"], settings=settings, add_period=True) or []
    return [(str(phrase), at, period) for phrase, at, period in found]


def _anchors(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every anchor in ``text``, in order (see the module docstring)."""
    found = [m.span() for m in _YEAR_RE.finditer(text)] + [m.span() for m in _RELATIVE_RE.finditer(text)]
    found += [m.span() for m in _MONTH_RE.finditer(text) if m.group(0)[:1].isupper()]
    return sorted(found)


def parse_spans(text: str) -> list[str]:
    """The texts handed to dateparser for a query: the query itself when it is at most
    :data:`MAX_PARSE_CHARS` long, else the first :data:`MAX_SPANS` spans of
    :data:`SPAN_CONTEXT_CHARS` around its anchors (overlapping spans merged, cut at spaces).

    Args:
        text: The recall query.

    Returns:
        Up to :data:`MAX_SPANS` texts, each at most ``MAX_PARSE_CHARS`` characters (one query of
        that length, or spans of anchor + context).
    """
    if len(text) <= MAX_PARSE_CHARS:
        return [text]
    spans: list[list[int]] = []
    for start, end in _anchors(text):
        lo, hi = max(0, start - SPAN_CONTEXT_CHARS), min(len(text), end + SPAN_CONTEXT_CHARS)
        if spans and lo <= spans[-1][1] and hi - spans[-1][0] <= MAX_PARSE_CHARS:
            spans[-1][1] = hi
        elif len(spans) == MAX_SPANS:
            break
        else:
            spans.append([lo, hi])
    return [_whole_words(text, lo, hi) for lo, hi in spans]


def _whole_words(text: str, lo: int, hi: int) -> str:
    """``text[lo:hi]`` without the words the cut splits at either end."""
    piece = text[lo:hi]
    if lo > 0 and not text[lo - 1].isspace():
        piece = piece.partition(" ")[2]
    if hi < len(text) and not text[hi].isspace():
        piece = piece.rpartition(" ")[0]
    return piece


def _anchored(phrase: str) -> bool:
    """Whether a matched phrase is really about time (see the module docstring)."""
    if _YEAR_RE.search(phrase) or _RELATIVE_RE.search(phrase):
        return True
    months = _MONTH_RE.findall(phrase)
    # A month name must be capitalised ("May", not the verb "may").
    return any(m[:1].isupper() for m in months)


def _window(at: datetime, granularity: str) -> tuple[datetime, datetime]:
    day = at.replace(hour=0, minute=0, second=0, microsecond=0)
    if granularity == "day":
        return day, day + timedelta(days=1)
    if granularity == "week":
        start = day - timedelta(days=day.weekday())
        return start, start + timedelta(days=7)
    if granularity == "month":
        start = day.replace(day=1)
        end = (
            start.replace(year=start.year + 1, month=1)
            if start.month == 12
            else start.replace(month=start.month + 1)
        )
        return start, end
    start = day.replace(month=1, day=1)
    return start, start.replace(year=start.year + 1)


def _to_utc(local: datetime, zone: tzinfo | None) -> datetime:
    """A naive wall-clock time in ``zone`` as UTC (a skipped or repeated DST hour: its first reading)."""
    return local.replace(tzinfo=zone).astimezone(UTC)


def parse_time_window(text: str, now: datetime) -> TimeWindow | None:
    """Find the time window a query names, relative to ``now``.

    Args:
        text: The recall query.
        now: The recall's reference time (timezone-aware); relative expressions and
            calendar boundaries are resolved in its zone.

    Returns:
        The window, or ``None`` when the query names no (anchored) time.

    Raises:
        ValidationError: ``now`` is naive.
    """
    if not text.strip() or not _anchored(text):
        # Every accepted phrase must be anchored (a year, a relative expression or a capitalised
        # month); a query with none of them skips dateparser (~1.7 ms per query).
        return None
    ensure_utc(now, "now")  # refuses a naive now
    zone = now.tzinfo
    base = now.replace(tzinfo=None)  # dateparser counts back from local wall-clock time
    settings = {"RELATIVE_BASE": base, "PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False}
    try:
        found = [hit for span in parse_spans(text) for hit in _find(span, settings)]
    except Exception:  # dateparser raises assorted errors on odd input; a query never fails for it
        logger.debug("dateparser failed on %.200r", text, exc_info=True)
        return None
    windows: list[tuple[datetime, datetime, str, str]] = []
    for phrase, at, period in found:
        phrase = phrase.strip()
        if not _anchored(phrase):
            continue
        granularity = period if period in _GRANULARITIES else "day"
        start, end = _window(at, granularity)
        windows.append((_to_utc(start, zone), _to_utc(end, zone), granularity, phrase))
    if not windows:
        return None
    start = max(w[0] for w in windows)
    end = min(w[1] for w in windows)
    if start < end:
        narrowest = min(windows, key=lambda w: w[1] - w[0])
        return TimeWindow(start, end, narrowest[2], tuple(w[3] for w in windows))
    narrowest = min(windows, key=lambda w: w[1] - w[0])
    return TimeWindow(narrowest[0], narrowest[1], narrowest[2], (narrowest[3],))
