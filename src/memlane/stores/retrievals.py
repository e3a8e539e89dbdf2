"""Deferred retrieval bookkeeping: ``retrieve_count``/``last_retrieved_at`` off the recall path.

Every ranked recall counts one retrieval of the episodes it returned (``config.track_retrievals``).
Writing that count at once costs a write transaction per recall (a few ms, and on SQLite a wait
for any other writer's lock). A store instead adds the counts to a :class:`RetrievalBuffer` held
in memory and writes them in one batched statement (SQLite: an ``UPDATE`` of the episodes' two
columns; PostgreSQL: an upsert of the narrow ``memlane_retrievals``, off the wide episode rows):

* inside the next write transaction of the same store object (an insert or merge), at no extra
  commit;
* on its own once :data:`FLUSH_EVERY` recalls have been counted, or once the oldest pending count
  is :data:`FLUSH_AFTER_S` seconds old (checked at each recall, so an idle process writes nothing);
* on ``flush()`` and on ``close()`` (a clean shutdown loses nothing).

The age is measured on the recalls' own times (the ``at`` each recall passes: the memory's
:class:`~memlane.clock.Clock`, or the caller's ``now``), not on a timer of its own: with the real
clock that is wall time, as before; with a :class:`~memlane.clock.FrozenClock` (tests) only the
recall count, writes, ``flush()`` and ``close()`` write the counts, so when a count becomes visible
depends on the sequence of operations, never on how fast the machine ran them.

What a crash (kill, power loss) loses: the counts of the recalls since the last flush -- at most
:data:`FLUSH_EVERY` recalls or :data:`FLUSH_AFTER_S` seconds of them, per store object. Nothing
else depends on them: they feed compaction's "rarely retrieved" rule and the inspector, never
recall's filters or ranking. Counts pending in one process are not visible to another until flushed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import datetime

from memlane.errors import MemlaneError

__all__ = ["FLUSH_AFTER_S", "FLUSH_EVERY", "BufferedRetrievals", "Pending", "RetrievalBuffer"]

logger = logging.getLogger(__name__)

FLUSH_EVERY = 64
"""Recalls after which the pending counts are written on their own."""
FLUSH_AFTER_S = 5.0
"""Age (seconds, on the recalls' clock) of the oldest pending count at which a recall writes them."""

Pending = dict[int, tuple[int, datetime]]
"""Row key -> (retrievals to add, latest retrieval time)."""


class RetrievalBuffer:
    """Retrieval counts waiting to be written, per row key (thread-safe).

    Args:
        every: Recalls after which :meth:`add` reports the buffer due (>= 1).
        after_s: Age in seconds of the oldest pending count, measured on the ``at`` times given
            to :meth:`add` (the recalls' clock), at which :meth:`add` reports the buffer due.
    """

    def __init__(self, every: int = FLUSH_EVERY, after_s: float = FLUSH_AFTER_S) -> None:
        self._lock = threading.Lock()
        self._pending: Pending = {}
        self._calls = 0
        self._every = max(1, int(every))
        self._after_s = float(after_s)
        self._oldest: datetime | None = None

    def add(self, keys: Sequence[int], at: datetime) -> bool:
        """Count one retrieval of each of ``keys`` at ``at``; return whether a flush is due.

        Args:
            keys: Row keys the recall returned.
            at: The recall's time (timezone-aware); it also measures the pending counts' age.

        Returns:
            ``True`` once :data:`FLUSH_EVERY` recalls were counted since the last :meth:`take`,
            or ``at`` is ``after_s`` seconds or more after the oldest pending count.
        """
        with self._lock:
            for key in keys:
                count, last = self._pending.get(int(key), (0, at))
                self._pending[int(key)] = (count + 1, max(last, at))
            self._calls += 1
            if self._oldest is None or at < self._oldest:
                self._oldest = at
            return bool(self._pending) and (
                self._calls >= self._every or (at - self._oldest).total_seconds() >= self._after_s
            )

    def take(self) -> Pending:
        """Remove and return everything pending (the caller writes it or :meth:`put_back`s it)."""
        with self._lock:
            pending, self._pending = self._pending, {}
            self._calls = 0
            self._oldest = None
            return pending

    def put_back(self, pending: Pending) -> None:
        """Return counts that could not be written, merged with any added since."""
        with self._lock:
            for key, (count, last) in pending.items():
                old_count, old_last = self._pending.get(key, (0, last))
                self._pending[key] = (old_count + count, max(old_last, last))
            # the age restarts here: a deferred write is retried after another after_s, not at once
            self._oldest = None

    def __len__(self) -> int:
        """Number of row keys with pending counts."""
        with self._lock:
            return len(self._pending)


class BufferedRetrievals:
    """Store mixin: ``record_retrievals``/``flush`` over a :class:`RetrievalBuffer`.

    A backend sets ``self._retrievals`` and implements :meth:`_write_retrievals`; it writes
    ``self._retrievals.take()`` inside its own insert transactions and calls
    :meth:`_flush_on_close` before closing.
    """

    _retrievals: RetrievalBuffer

    def record_retrievals(self, keys: Sequence[int], at: datetime) -> int:
        """Count one retrieval of each row key (from ``*_candidates``) at ``at``; return rows written.

        The counts are buffered in this store object and written by the next insert/merge
        transaction, by a short write of their own once :data:`FLUSH_EVERY` recalls were counted
        or the oldest pending count is :data:`FLUSH_AFTER_S` seconds older than ``at``, by
        :meth:`flush` and by ``close`` (module docstring). Returns the rows written now (0 while
        buffered).
        """
        if len(keys) and self._retrievals.add(keys, at):
            return self._flush(soon=True)
        return 0

    def flush(self) -> int:
        """Write the buffered retrieval counts now, in one transaction; return rows updated.

        Raises:
            StoreError: the database failed (the counts stay buffered).
        """
        return self._flush(soon=False)

    def _flush(self, *, soon: bool) -> int:
        pending = self._retrievals.take()
        if not pending:
            return 0
        try:
            written = self._write_retrievals(pending, soon=soon)
        except BaseException:
            self._retrievals.put_back(pending)
            raise
        if written is None:  # the backend chose not to wait (another writer): keep them
            self._retrievals.put_back(pending)
            return 0
        return written

    def _write_retrievals(self, pending: Pending, *, soon: bool) -> int | None:
        """Write ``pending`` in a transaction of its own; ``None`` if deferred (``soon``: don't wait)."""
        raise NotImplementedError  # pragma: no cover - every backend overrides it

    def _flush_on_close(self) -> None:
        """:meth:`flush` before closing; a failure is logged (closing never fails)."""
        if len(self._retrievals):
            try:
                self.flush()
            except MemlaneError as exc:
                logger.warning("close: %d retrieval count(s) not written: %s", len(self._retrievals), exc)
