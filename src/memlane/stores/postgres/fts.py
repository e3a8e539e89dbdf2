"""Keyword search for the PostgreSQL store: the analysed ``terms`` under a GIN index, BM25 per scope.

The ``terms`` column holds the episode's analysed keyword text, space-joined
(:mod:`memlane.analysis`, computed by memlane at write time exactly as for SQLite); the index
is a GIN index over ``string_to_array(terms, ' ')`` (schema migration 8 in
:mod:`memlane.stores.postgres.migrations`). No text search parser or dictionary runs, so
PostgreSQL matches exactly the rows SQLite's FTS5 index of the same column matches.

Query safety: the query terms are one bound ``text[]`` parameter, compared as array elements
(``&&`` any overlap, ``@>`` containment); no user text reaches a query parser.

Scoring: the index only finds the rows that contain a query term; their BM25 is computed with
the statistics of the recall's scope (:mod:`memlane.stores.common_terms`) by
:func:`memlane.bm25.score_matches`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

import memlane.stores.postgres.filters as filters
from memlane.bm25 import score_matches
from memlane.stores.base import EpisodeFilter, KeywordCandidates
from memlane.stores.common_terms import CommonTermFilter, statistics_scope

__all__ = [
    "TERMS_ARRAY",
    "keyword_count_statement",
    "keyword_search",
    "keyword_statement",
    "scope_stats_statement",
    "term_df_statement",
]

TERMS_ARRAY = "pg_catalog.string_to_array(terms, ' ')"
"""The indexed expression (it must match the GIN index's expression to use it)."""


def scope_stats_statement(
    stats: sql.Composable, tenant_id: str | None, session_id: str | None
) -> sql.Composed:
    """``N, avgdl`` of a scope from ``memlane_scope_stats`` (schema migration 10), no scan of the scope.

    The scope: the tenant and session (session scope), the tenant (tenant scope), or every row
    (global scope). Parameters: ``tenant_id`` then ``session_id`` where they are not ``None``.
    """
    clause: sql.Composable = sql.SQL("")
    if tenant_id is not None:
        clause = sql.SQL(" WHERE tenant_id OPERATOR(pg_catalog.=) %s")
        if session_id is not None:
            clause = clause + sql.SQL(" AND session_id OPERATOR(pg_catalog.=) %s")
    return sql.SQL(
        "SELECT coalesce(sum(rows), 0)::int8, "
        "coalesce(sum(tokens)::float8 / nullif(sum(rows), 0), 0)::float8 FROM {s}{where}"
    ).format(s=stats, where=clause)


def term_df_statement(term_df: sql.Composable, tenant_id: str | None, session_id: str | None) -> sql.Composed:
    """``term, df`` of the query terms in a scope from ``memlane_term_df`` (schema migration 14).

    The scope as in :func:`scope_stats_statement`. Parameters: the terms array, then ``tenant_id``
    and ``session_id`` where they are not ``None``. Terms in no row of the scope are absent.
    """
    clause: sql.Composable = sql.SQL("")
    if tenant_id is not None:
        clause = sql.SQL(" AND tenant_id OPERATOR(pg_catalog.=) %s")
        if session_id is not None:
            clause = clause + sql.SQL(" AND session_id OPERATOR(pg_catalog.=) %s")
    return sql.SQL(
        "SELECT term, sum(df)::int8 FROM {d} WHERE term OPERATOR(pg_catalog.=) ANY(%s::text[]){where} "
        "GROUP BY term"
    ).format(d=term_df, where=clause)


def keyword_count_statement(table: sql.Composable, where: sql.Composable) -> sql.Composed:
    """Count (up to a cap) the scope's rows containing one term.

    ``where`` must end with ``TERMS_ARRAY @> %s::text[]``. Parameters: the WHERE clause's values
    (the one-term array last), then the cap.
    """
    return sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {t}{where} LIMIT %s) AS capped").format(
        t=table, where=where
    )


def keyword_statement(table: sql.Composable, where: sql.Composable) -> sql.Composed:
    """Every row of the filter containing any query term, for scoring (all are scored: exact BM25).

    ``where`` must end with ``TERMS_ARRAY && %s::text[]``. Parameters: the WHERE clause's values
    (the terms array last). Returns ``seq, terms, token_count, created_at_seconds, importance``.
    """
    return sql.SQL(
        "SELECT seq, terms, token_count, extract(epoch FROM created_at)::float8, importance FROM {t}{where}"
    ).format(t=table, where=where)


def keyword_search(
    cur: psycopg.Cursor[Any],
    table: sql.Composable,
    stats: tuple[sql.Composable, sql.Composable],
    flt: EpisodeFilter,
    terms: Sequence[str],
    top_n: int,
    common: CommonTermFilter,
) -> KeywordCandidates:
    """The best ``top_n`` rows passing ``flt`` that contain any of ``terms``, by per-scope BM25.

    The statistics are those of the recall's scope (``flt``'s tenant, or tenant and session):
    ``N`` and ``avgdl`` from ``memlane_scope_stats``, the terms' ``df`` from ``memlane_term_df``
    (one indexed lookup, no count of any term's rows); ``flt``'s other fields only choose the
    candidates.

    Args:
        cur: A cursor inside the store's transaction.
        table: The schema-qualified episodes table.
        stats: The schema-qualified ``memlane_scope_stats`` and ``memlane_term_df`` tables.
        flt: The recall's filter.
        terms: Distinct, non-empty query terms without NUL (:func:`memlane.analysis.query_terms`).
        top_n: Maximum rows, >= 1.
        common: The common-term rule.

    Raises:
        psycopg.Error: the database failed (the store translates it).
    """
    tenant_id, session_id = statistics_scope(flt)
    scope_args = [v for v in (tenant_id, session_id) if v is not None]
    n_rows, avgdl = cur.execute(  # type: ignore[misc]
        scope_stats_statement(stats[0], tenant_id, session_id), scope_args
    ).fetchone()
    if not n_rows:
        return KeywordCandidates.empty()
    found = cur.execute(term_df_statement(stats[1], tenant_id, session_id), [list(terms), *scope_args])
    stored = {str(term): int(df) for term, df in found.fetchall()}
    df = common.scope_df(terms, int(n_rows), lambda term, cap: min(stored.get(term, 0), cap))
    if not df:
        return KeywordCandidates.empty()
    kept = list(df)
    any_where, any_params = filters.where(flt, TERMS_ARRAY + " OPERATOR(pg_catalog.&&) %s::text[]")
    rows = cur.execute(keyword_statement(table, any_where), [*any_params, kept], prepare=False).fetchall()
    return KeywordCandidates.from_rows(score_matches(rows, df, int(n_rows), float(avgdl), max(1, int(top_n))))
