"""A recall query's time expressions cost bounded work, however long the query (issue #22 item 1)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memlane.recall.temporal import parse_spans, parse_time_window

NOW = datetime(2023, 10, 20, 15, tzinfo=UTC)


def test_a_long_query_hands_dateparser_only_bounded_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    """dateparser's cost grows faster than its input: a long query is parsed only around its anchors."""
    from memlane.recall import temporal

    real = temporal._search_dates()
    assert real is not None
    seen: list[str] = []

    def recording(text: str, **kwargs: Any) -> Any:
        seen.append(text)
        return real(text, **kwargs)

    monkeypatch.setattr(temporal, "_search_dates", lambda: recording)
    filler = "the build failed again and we looked at the logs together " * 2000  # ~118,000 characters
    query = filler + "what did we decide last May about the release? " + filler
    window = parse_time_window(query, NOW)
    assert seen and all(len(text) <= temporal.MAX_PARSE_CHARS for text in seen)
    assert window is not None and (window.granularity, window.start.month) == ("month", 5)
    seen.clear()
    parse_time_window("this week " * 20_000, NOW)  # 200,000 characters, 40,000 anchors
    assert 0 < len(seen) <= temporal.MAX_SPANS
    assert all(len(text) <= temporal.MAX_PARSE_CHARS for text in seen)


def test_a_short_query_is_parsed_whole() -> None:
    query = "what did we talk about in July 2023 when the weather was nice and everyone was away?"
    assert parse_spans(query) == [query]
    long = "we looked at the logs " * 20 + "in July 2023" + " and wrote more notes" * 20
    (span,) = parse_spans(long)  # the two anchors (July, 2023) make one span
    assert "in July 2023" in span
    assert len(span) <= 2 * 40 + len("July 2023")
    assert set(span.split()) <= set(long.split())  # cut at spaces: whole words only
    window = parse_time_window(long, NOW)
    assert window is not None and (window.start.year, window.start.month) == (2023, 7)
