"""Keyword search for the SQLite store: FTS5 over ``episodes.content`` ranked by BM25.

The index is the external-content FTS5 table ``episodes_fts`` (schema migration 2 in
:mod:`memlane.stores.sqlite.migrations`), kept in step with ``episodes`` by triggers, so
explicit deletes and retention pruning remove an episode from it in the same transaction.

Query safety: the MATCH expression is built only from :func:`memlane.recall.keywords.keyword_terms`
output, each term wrapped in double quotes (an FTS5 string: no operator, column filter,
prefix ``*`` or ``NEAR`` inside it means anything) and the terms joined with ``OR``. The
expression is then passed as a bound parameter, never spliced into SQL.

Scoring: FTS5's built-in ``bm25()`` (Robertson & Zaragoza 2009, *The Probabilistic Relevance
Framework: BM25 and Beyond*, with k1 = 1.2 and b = 0.75), which FTS5 returns negated (lower
is better); the store reports ``-bm25()`` so higher is better. Its corpus statistics (number
of rows, document frequencies, average length) are those of the whole table, as in any
FTS5 index.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from memlane.stores.base import KeywordCandidates
from memlane.stores.common_terms import CommonTermFilter

__all__ = ["fts5_match_expression", "keyword_search"]


def fts5_match_expression(terms: Sequence[str]) -> str:
    """Build an FTS5 MATCH expression that ORs ``terms``, each as a quoted string.

    Args:
        terms: Plain terms (see :func:`memlane.recall.keywords.keyword_terms`); any ``"`` inside a
            term is doubled, FTS5's escape, so even arbitrary strings stay literal.

    Returns:
        E.g. ``'"window" OR "seat"'``; empty string for no terms.
    """
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms if term)


def keyword_search(
    conn: sqlite3.Connection,
    where: str,
    params: Sequence[Any],
    terms: Sequence[str],
    top_n: int,
    common: CommonTermFilter | None = None,
) -> KeywordCandidates:
    """Run one filtered FTS5 query.

    Args:
        conn: An open connection to a migrated memlane database.
        where: The store's WHERE clause over ``episodes`` (``" WHERE ..."`` or ``""``), built
            from fixed column names with ``?`` placeholders.
        params: Its bound values.
        terms: Plain keyword terms; empty -> no candidates.
        top_n: Maximum rows, >= 1.
        common: Drops terms in more than half of the rows first
            (:class:`memlane.stores.common_terms.CommonTermFilter`); ``None`` keeps every term.

    Returns:
        Up to ``top_n`` candidates, best BM25 first (ties: lower ``seq`` first).

    Raises:
        sqlite3.Error: the database failed (the store translates it).
    """
    if common is not None:
        table_rows = int(conn.execute("SELECT coalesce(max(seq), 0) FROM episodes").fetchone()[0])

        def count(term: str, cap: int) -> int:
            sql = "SELECT count(*) FROM (SELECT 1 FROM episodes_fts WHERE episodes_fts MATCH ? LIMIT ?)"
            return int(conn.execute(sql, (fts5_match_expression([term]), cap)).fetchone()[0])

        terms = common.informative(terms, table_rows, count)
    expression = fts5_match_expression(terms)
    if not expression:
        return KeywordCandidates.empty()
    # The filter applies to the joined episode row. Its column names are unambiguous: the
    # FTS subquery only exposes ``fts_seq`` and ``score``.
    sql = (
        "SELECT e.seq, f.score, e.created_at_us / 1e6, e.importance FROM ("
        "SELECT rowid AS fts_seq, -bm25(episodes_fts) AS score FROM episodes_fts "
        "WHERE episodes_fts MATCH ?"
        f") AS f JOIN episodes AS e ON e.seq = f.fts_seq{where} "
        "ORDER BY f.score DESC, e.seq LIMIT ?"
    )
    rows = conn.execute(sql, [expression, *params, int(top_n)]).fetchall()
    return KeywordCandidates.from_rows(rows)
