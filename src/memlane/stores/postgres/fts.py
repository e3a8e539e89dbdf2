"""Keyword search for the PostgreSQL store: the analysed ``terms`` under a GIN index, BM25 per scope.

The ``terms`` column holds the episode's analysed keyword text, space-joined
(:mod:`memlane.analysis`, computed by memlane at write time exactly as for SQLite); the index
is a GIN index over ``string_to_array(terms, ' ')`` (schema migration 8 in
:mod:`memlane.stores.postgres.migrations`). No text search parser or dictionary runs, so
PostgreSQL matches exactly the rows SQLite's FTS5 index of the same column matches.

Query safety: the query terms are one bound ``text[]`` parameter, compared as array elements
(``&&`` any overlap, ``@>`` containment); no user text reaches a query parser.

Scoring: the index only finds the scope's rows that contain a query term; their BM25 is
computed with the scope's own statistics by :func:`memlane.stores.common_terms.score_matches`.
"""

from __future__ import annotations

from psycopg import sql

__all__ = ["TERMS_ARRAY", "keyword_count_statement", "keyword_statement", "scope_stats_statement"]

TERMS_ARRAY = "pg_catalog.string_to_array(terms, ' ')"
"""The indexed expression (it must match the GIN index's expression to use it)."""


def scope_stats_statement(table: sql.Composable, where: sql.Composable) -> sql.Composed:
    """``count(*), avg(token_count)`` over the scope; parameters: the WHERE clause's values."""
    return sql.SQL("SELECT count(*), coalesce(avg(token_count), 0)::float8 FROM {t}{where}").format(
        t=table, where=where
    )


def keyword_count_statement(table: sql.Composable, where: sql.Composable) -> sql.Composed:
    """Count (up to a cap) the scope's rows containing one term.

    ``where`` must end with ``TERMS_ARRAY @> %s::text[]``. Parameters: the WHERE clause's values
    (the one-term array last), then the cap.
    """
    return sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {t}{where} LIMIT %s) AS capped").format(
        t=table, where=where
    )


def keyword_statement(table: sql.Composable, where: sql.Composable) -> sql.Composed:
    """The scope's rows containing any query term, for scoring.

    ``where`` must end with ``TERMS_ARRAY && %s::text[]``. Parameters: the WHERE clause's values
    (the terms array last), the terms array again, then the row limit. Returns ``seq, terms,
    token_count, created_at_seconds, importance``, rows with the most distinct query terms
    first (then the newest).
    """
    return sql.SQL(
        "SELECT seq, terms, token_count, extract(epoch FROM created_at)::float8, importance "
        "FROM {t}{where} ORDER BY pg_catalog.cardinality(ARRAY(SELECT pg_catalog.unnest("
        + TERMS_ARRAY
        + ") INTERSECT SELECT pg_catalog.unnest(%s::text[]))) DESC, seq DESC LIMIT %s"
    ).format(t=table, where=where)
