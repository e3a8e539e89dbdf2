"""The retrieval buffer's flush rule counts recalls and ages on the recalls' clock, never a timer."""

from __future__ import annotations

from datetime import timedelta

from memlane.stores.retrievals import FLUSH_AFTER_S, FLUSH_EVERY, RetrievalBuffer
from tests.conftest import T0


def test_a_frozen_clock_flushes_only_by_count() -> None:
    buffer = RetrievalBuffer()
    due = [buffer.add([1, 2], T0) for _ in range(FLUSH_EVERY)]
    assert due == [False] * (FLUSH_EVERY - 1) + [True]
    assert buffer.take() == {1: (FLUSH_EVERY, T0), 2: (FLUSH_EVERY, T0)}
    assert len(buffer) == 0


def test_the_age_is_measured_from_the_oldest_pending_count() -> None:
    buffer = RetrievalBuffer(after_s=FLUSH_AFTER_S)
    late = T0 + timedelta(seconds=FLUSH_AFTER_S)
    assert buffer.add([1], T0) is False
    assert buffer.add([1], late - timedelta(microseconds=1)) is False
    assert buffer.add([2], late) is True
    assert buffer.take() == {1: (2, late - timedelta(microseconds=1)), 2: (1, late)}
    assert buffer.add([1], late) is False  # a write restarts the age


def test_put_back_keeps_the_counts_and_restarts_the_age() -> None:
    buffer = RetrievalBuffer(after_s=1.0)
    buffer.add([7], T0)
    pending = buffer.take()
    buffer.add([7], T0 + timedelta(seconds=5))
    buffer.put_back(pending)  # the write was deferred (another writer held the lock)
    assert buffer.add([8], T0 + timedelta(seconds=5.5)) is False  # retried after another after_s
    assert buffer.add([8], T0 + timedelta(seconds=6.5)) is True
    assert buffer.take() == {7: (2, T0 + timedelta(seconds=5)), 8: (2, T0 + timedelta(seconds=6.5))}


def test_a_recall_without_rows_is_never_due() -> None:
    buffer = RetrievalBuffer(every=1)
    assert buffer.add([], T0) is False
