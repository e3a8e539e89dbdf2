"""Which query terms a keyword index should skip: those carried by more than half of the rows.

Shared by every store backend (:mod:`memlane.stores.sqlite.fts`, :mod:`memlane.stores.postgres.fts`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = ["CommonTermFilter"]


class CommonTermFilter:
    """Drops query terms that occur in more than half of the indexed episodes (any backend).

    BM25's inverse document frequency ``log((N - n + 0.5) / (n + 0.5))`` (Robertson & Zaragoza
    2009) is <= 0 once a term is in more than half of the ``N`` rows (SQLite FTS5 clamps it to a
    tiny positive value; PostgreSQL's ``ts_rank_cd`` has no IDF at all, so there such a term
    only adds the same evidence to almost every row). Matching it makes the index score and join
    every row that contains it: measured 12 ms per recall at 10k episodes on SQLite and 250 ms at
    100k on PostgreSQL when every row matched. Dropping it keeps the cost proportional to the
    informative terms. Document frequencies are counted by the backend with a capped query and
    cached per term until the table has grown by 10 %; the decision is table-wide, like the
    index's own statistics. Thread-safe enough: a race only counts a term twice.
    """

    MIN_ROWS = 64
    """Below this many rows every term is kept (counting would cost more than it saves)."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[bool, int]] = {}

    def informative(self, terms: Sequence[str], rows: int, count: Callable[[str, int], int]) -> list[str]:
        """Return the ``terms`` in at most half of the table's ``rows``.

        Args:
            terms: Query terms (see :func:`keyword_terms`).
            rows: Approximate number of indexed rows (e.g. the largest row key).
            count: ``count(term, cap)`` -> documents containing ``term``, counting at most ``cap``.
        """
        if rows < self.MIN_ROWS:
            return list(terms)
        half = rows // 2
        kept: list[str] = []
        for term in terms:
            cached = self._cache.get(term)
            if cached is None or rows > cached[1] * 1.1:
                cached = (count(term, half + 1) > half, rows)
                self._cache[term] = cached
            if not cached[0]:
                kept.append(term)
        return kept
