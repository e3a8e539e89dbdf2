"""Deferred retrieval bookkeeping: ``retrieve_count``/``last_retrieved_at`` off the recall path.

Every ranked recall counts one retrieval of the episodes it returned (``config.track_retrievals``).
Writing that count at once costs a write transaction per recall (a few ms, and on SQLite a wait
for any other writer's lock). A store instead adds the counts to a :class:`RetrievalBuffer` held
in memory and writes them in one batched ``UPDATE``:

* inside the next write transaction of the same store object (an insert or merge), at no extra
  commit;
* on its own once :data:`FLUSH_EVERY` recalls or :data:`FLUSH_AFTER_S` seconds have gone by since
  the last write (checked at each recall, so an idle process writes nothing);
* on ``flush()`` and on ``close()`` (a clean shutdown loses nothing).

What a crash (kill, power loss) loses: the counts of the recalls since the last flush -- at most
:data:`FLUSH_EVERY` recalls or :data:`FLUSH_AFTER_S` seconds of them, per store object. Nothing
else depends on them: they feed compaction's "rarely retrieved" rule and the inspector, never
recall's filters or ranking. Counts pending in one process are not visible to another until flushed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime

from memlane.errors import MemlaneError

__all__ = ["FLUSH_AFTER_S", "FLUSH_EVERY", "BufferedRetrievals", "Pending", "RetrievalBuffer"]

logger = logging.getLogger(__name__)

FLUSH_EVERY = 64
"""Recalls after which the pending counts are written on their own."""
FLUSH_AFTER_S = 5.0
"""Seconds after which the pending counts are written on their own (checked at each recall)."""

Pending = dict[int, tuple[int, datetime]]
"""Row key -> (retrievals to add, latest retrieval time)."""


class RetrievalBuffer:
    """Retrieval counts waiting to be written, per row key (thread-safe).

    Args:
        every: Recalls after which :meth:`add` reports the buffer due (>= 1).
        after_s: Seconds since the last :meth:`take` after which :meth:`add` reports it due.
        monotonic: Clock in seconds (injectable for tests).
    """

    def __init__(
        self,
        every: int = FLUSH_EVERY,
        after_s: float = FLUSH_AFTER_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lock = threading.Lock()
        self._pending: Pending = {}
        self._calls = 0
        self._every = max(1, int(every))
        self._after_s = float(after_s)
        self._monotonic = monotonic
        self._since = monotonic()

    def add(self, keys: Sequence[int], at: datetime) -> bool:
        """Count one retrieval of each of ``keys`` at ``at``; return whether a flush is due."""
        with self._lock:
            for key in keys:
                count, last = self._pending.get(int(key), (0, at))
                self._pending[int(key)] = (count + 1, max(last, at))
            self._calls += 1
            return bool(self._pending) and (
                self._calls >= self._every or self._monotonic() - self._since >= self._after_s
            )

    def take(self) -> Pending:
        """Remove and return everything pending (the caller writes it or :meth:`put_back`s it)."""
        with self._lock:
            pending, self._pending = self._pending, {}
            self._calls = 0
            self._since = self._monotonic()
            return pending

    def put_back(self, pending: Pending) -> None:
        """Return counts that could not be written, merged with any added since."""
        with self._lock:
            for key, (count, last) in pending.items():
                old_count, old_last = self._pending.get(key, (0, last))
                self._pending[key] = (old_count + count, max(old_last, last))

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
        transaction, by a short write of their own once :data:`FLUSH_EVERY` recalls or
        :data:`FLUSH_AFTER_S` seconds have passed, by :meth:`flush` and by ``close``
        (module docstring). Returns the rows written now (0 while buffered).
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
