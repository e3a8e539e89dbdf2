"""Time windows of every expression form :mod:`memlane.recall.temporal` documents.

The expected windows are worked out by hand from the module docstring (``NOW`` is Friday
2023-10-20, 15:00 UTC); they pin the dateparser-based finder and its period detection.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from memlane.recall.temporal import parse_time_window

NOW = datetime(2023, 10, 20, 15, tzinfo=UTC)


def _d(y: int, m: int, d: int, h: int = 0) -> datetime:
    return datetime(y, m, d, h, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end", "granularity"),
    [
        ("what did I do today?", _d(2023, 10, 20), _d(2023, 10, 21), "day"),
        ("the bug from 3 days ago", _d(2023, 10, 17), _d(2023, 10, 18), "day"),
        ("what was decided on 1 February 2023", _d(2023, 2, 1), _d(2023, 2, 2), "day"),
        ("Who did Maria have dinner with on April 10, 2023?", _d(2023, 4, 10), _d(2023, 4, 11), "day"),
        ("What happened on 7 July, 2023?", _d(2023, 7, 7), _d(2023, 7, 8), "day"),
        ("the incident last week", _d(2023, 10, 9), _d(2023, 10, 16), "week"),
        ("which books did she read in June?", _d(2023, 6, 1), _d(2023, 7, 1), "month"),
        ("the budget from last month", _d(2023, 9, 1), _d(2023, 10, 1), "month"),
        ("anything new this month", _d(2023, 10, 1), _d(2023, 11, 1), "month"),
        ("What instrument was Tim learning in December 2022?", _d(2022, 12, 1), _d(2023, 1, 1), "month"),
        ("Where did Caroline move from 4 years ago?", _d(2019, 1, 1), _d(2020, 1, 1), "year"),
        (
            "What was Tim's issue last week, as mentioned on October 13, 2023?",
            _d(2023, 10, 13),
            _d(2023, 10, 14),
            "day",
        ),
    ],
)
def test_documented_expressions(query: str, start: datetime, end: datetime, granularity: str) -> None:
    window = parse_time_window(query, NOW)
    assert window is not None
    assert (window.start, window.end, window.granularity) == (start, end, granularity)


def test_days_are_those_of_the_callers_zone() -> None:
    late = datetime(2023, 10, 20, 23, 59, tzinfo=ZoneInfo("America/Los_Angeles"))
    window = parse_time_window("notes from yesterday", late)
    assert window is not None
    assert (window.start, window.end) == (_d(2023, 10, 19, 7), _d(2023, 10, 20, 7))


@pytest.mark.parametrize(
    "query",
    ["What did she paint on the 18th?", "you may go", "How long did the trip take?", "the 10 best ideas"],
)
def test_unanchored_phrases_name_no_window(query: str) -> None:
    assert parse_time_window(query, NOW) is None
