"""Keyword statistics shared by every store backend: the scope of per-scope BM25 and its common terms.

Both stores (:mod:`memlane.stores.sqlite.fts`, :mod:`memlane.stores.postgres.store`) use
their index only to *find* the rows of the recall's scope that contain a query term; the
score is computed from the ``terms``/``token_count`` columns
(:mod:`memlane.analysis`) and statistics of the recall's **scope only**: every stored row of
its tenant (tenant scope) or of its tenant and session (session scope); the whole table in the
global scope. The recall's other filters (event type, tags, time, archived, superseded) choose
the candidates, not the statistics, so a backend keeps them by write (``scope_stats``) instead
of counting the scope per recall. ``N`` rows, average length ``avgdl`` and each term's document
frequency ``df``: another tenant's rows never change a tenant's keyword results or scores,
and the score is the same number on SQLite and PostgreSQL.

The scoring itself is pure BM25 (:mod:`memlane.bm25`: :func:`~memlane.bm25.score_matches` with
:data:`~memlane.bm25.DEFAULT_BM25`, which also caps how many matching rows a recall scores).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memlane.stores.base import EpisodeFilter

__all__ = ["CommonTermFilter", "statistics_scope"]


def statistics_scope(flt: EpisodeFilter) -> tuple[str | None, str | None]:
    """The ``(tenant_id, session_id)`` whose stored rows are a recall's BM25 statistics.

    Session scope: both; tenant scope: ``(tenant, None)``; global scope: ``(None, None)`` (a
    session without a tenant names no scope of its own: the whole table).
    """
    if flt.tenant_id is None:
        return None, None
    return flt.tenant_id, flt.session_id


class CommonTermFilter:
    """Per-scope document frequencies of the query terms; drops terms carried by over half the scope.

    A term in more than half of the scope's ``N`` rows has a BM25 IDF below ``ln 2`` and would
    make the index find (and the store score) most of the scope: measured 12 ms per recall at
    10k episodes on SQLite and 250 ms at 100k on PostgreSQL when every row matched. Such a
    term is dropped once the scope has :data:`MIN_ROWS` rows (on LoCoMo conversations 0-4 the
    drop changed R@10 by +0.001). The counts are per scope, never table-wide, and not cached.
    """

    MIN_ROWS = 64
    """Below this many rows in the scope every matching term is kept."""

    def scope_df(self, terms: Sequence[str], rows: int, count: Callable[[str, int], int]) -> dict[str, int]:
        """Document frequency of each kept term within the scope.

        Args:
            terms: Distinct query terms (:func:`memlane.analysis.query_terms`).
            rows: ``N``, rows in the scope.
            count: ``count(term, cap)`` -> rows of the scope containing ``term``, counting at most ``cap``.

        Returns:
            ``{term: df}`` for the terms with ``0 < df`` (and ``df <= N / 2`` once ``N >= MIN_ROWS``),
            in the order given.
        """
        cap = self.cap(rows)
        return self.kept({term: count(term, cap) for term in terms}, rows)

    def cap(self, rows: int) -> int:
        """How far a backend needs to count a term's rows in a scope of ``rows`` (one past the drop point)."""
        return rows // 2 + 1 if rows >= self.MIN_ROWS else rows + 1

    def kept(self, df: dict[str, int], rows: int) -> dict[str, int]:
        """``df`` without the terms in no row and, once ``rows >= MIN_ROWS``, in over half of them."""
        common = rows >= self.MIN_ROWS
        return {t: d for t, d in df.items() if d > 0 and not (common and d > rows // 2)}

    def informative(self, terms: Sequence[str], rows: int, count: Callable[[str, int], int]) -> list[str]:
        """The ``terms`` kept by :meth:`scope_df` (occurring in the scope, not in over half of it)."""
        return list(self.scope_df(terms, rows, count))
