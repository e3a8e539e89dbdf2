"""Keyword search for the PostgreSQL store: the analysed ``terms`` under a GIN index, BM25 per scope.

This is the server-side path (``PostgresStore(keyword_index=False)``); by default the store answers
from in-memory postings (:mod:`memlane.stores.postgres.postings`) with the same hits and scores.

The ``terms`` column holds the episode's analysed keyword text, space-joined
(:mod:`memlane.analysis`, computed by memlane at write time exactly as for SQLite); the index
is a GIN index over ``string_to_array(terms, ' ')`` (schema migration 8 in
:mod:`memlane.stores.postgres.migrations`). No text search parser or dictionary runs, so
PostgreSQL matches exactly the rows SQLite's FTS5 index of the same column matches.

Query safety: the query terms are one bound ``text[]`` parameter, compared as array elements
(``&&`` any overlap, ``@>`` containment); no user text reaches a query parser.

Scoring: the index only finds the rows that contain a query term; their BM25 is computed with
the statistics of the recall's scope (:mod:`memlane.stores.common_terms`) by
:func:`memlane.bm25.score_matches`. Top-k in the server (:func:`keyword_statement`): PostgreSQL
scores every matching row with the same formula in ``float8`` and returns only the rows within
:data:`SCORE_MARGIN` of its ``top_n``-th best score, which :func:`~memlane.bm25.score_matches` then
scores exactly. Both compute each term's contribution with the same operations, so they differ
by a few ulps (scores are below 10^3, the error below 10^-12); a row of the exact top ``top_n``
scores at least the exact ``top_n``-th best, hence at least the server's ``top_n``-th best minus
twice that error, so it is among the rows returned: the hits are those of scoring every match in
Python (at 10,000 rows a query matching 4,500 of them sent 4,500 rows to be parsed in Python; now
about ``top_n``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

import memlane.stores.postgres.filters as filters
from memlane.bm25 import DEFAULT_BM25, Bm25Params, idf, score_matches
from memlane.stores.base import EpisodeFilter, KeywordCandidates
from memlane.stores.common_terms import CommonTermFilter, statistics_scope

__all__ = [
    "SCORE_MARGIN",
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

    It also turns sequential scans off for the rest of the transaction (``set_config(...,
    true)``: the third column), so :func:`keyword_statement` reads the matching rows through the
    GIN index however many match: the planner counts ``string_to_array`` as one operator, but
    splitting every row of a scope cost more (10,000 rows: 31 ms) than a bitmap scan of the 45 %
    that matched (6 ms; the index's overlap needs no recheck).
    """
    clause: sql.Composable = sql.SQL("")
    if tenant_id is not None:
        clause = sql.SQL(" WHERE tenant_id OPERATOR(pg_catalog.=) %s")
        if session_id is not None:
            clause = clause + sql.SQL(" AND session_id OPERATOR(pg_catalog.=) %s")
    return sql.SQL(
        "SELECT coalesce(sum(rows), 0)::int8, "
        "coalesce(sum(tokens)::float8 / nullif(sum(rows), 0), 0)::float8, "
        "pg_catalog.set_config('enable_seqscan', 'off', true) FROM {s}{where}"
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


SCORE_MARGIN = 1e-6
"""How far below the server's ``top_n``-th best BM25 a row may score and still be returned
(absolute; far above the few ulps by which the server's and Python's sums differ)."""


def keyword_statement(table: sql.Composable, where: sql.Composable, n_terms: int) -> sql.Composed:
    """The rows of the filter containing any query term whose BM25 may be among the ``top_n`` best.

    ``where`` must end with ``TERMS_ARRAY && %s::text[]``. Parameters (:func:`keyword_params`):
    per query term its IDF, then ``k1 + 1, k1, b, b, avgdl``, then the ``n_terms`` terms, then the
    WHERE clause's values (the terms array last), then ``top_n - 1`` and :data:`SCORE_MARGIN`.
    Returns ``seq, terms, token_count, created_at_seconds, importance`` of every row scoring at
    least the ``top_n``-th best score minus the margin (every matching row when fewer match).
    """
    tf = [
        sql.SQL("pg_catalog.cardinality(pg_catalog.array_positions(x.a, %s::text)) AS f{k}").format(
            k=sql.Literal(k)
        )
        for k in range(n_terms)
    ]
    parts = [
        sql.SQL("%s::float8 * f.f{k} * n.k1p / (f.f{k} + n.norm)").format(k=sql.Literal(k))
        for k in range(n_terms)
    ]
    return sql.SQL(
        "WITH s AS MATERIALIZED (SELECT seq, terms, token_count, created_at, importance, {score} AS score "
        "FROM {t} CROSS JOIN LATERAL (SELECT %s::float8 AS k1p, "
        "%s::float8 * (1.0 - %s::float8 + %s::float8 * token_count::float8 / %s::float8) AS norm) AS n "
        "CROSS JOIN LATERAL (SELECT {a} AS a OFFSET 0) AS x CROSS JOIN LATERAL (SELECT {tf} OFFSET 0) AS f"
        "{where}), "
        "k AS (SELECT score FROM s ORDER BY score DESC LIMIT 1 OFFSET %s) "
        "SELECT seq, terms, token_count, extract(epoch FROM created_at)::float8, importance FROM s "
        "WHERE score OPERATOR(pg_catalog.>=) (coalesce((SELECT score FROM k), '-Infinity'::float8) "
        "OPERATOR(pg_catalog.-) %s::float8)"
    ).format(
        score=sql.SQL(" + ").join(parts),
        t=table,
        a=sql.SQL(TERMS_ARRAY),
        tf=sql.SQL(", ").join(tf),
        where=where,
    )


def keyword_params(
    df: dict[str, int],
    n_rows: int,
    avgdl: float,
    where_params: Sequence[Any],
    top_n: int,
    params: Bm25Params = DEFAULT_BM25,
) -> list[Any]:
    """The parameters of :func:`keyword_statement` for the kept terms ``df`` (query order)."""
    terms = list(df)
    avg = max(float(avgdl), 1e-9)
    return [
        *(idf(d, n_rows) for d in df.values()),
        params.k1 + 1.0,
        params.k1,
        params.b,
        params.b,
        avg,
        *terms,
        *where_params,
        terms,
        max(1, int(top_n)) - 1,
        SCORE_MARGIN,
    ]


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
    n_rows, avgdl, _ = cur.execute(  # type: ignore[misc]
        scope_stats_statement(stats[0], tenant_id, session_id), scope_args
    ).fetchone()
    if not n_rows:
        return KeywordCandidates.empty()
    found = cur.execute(term_df_statement(stats[1], tenant_id, session_id), [list(terms), *scope_args])
    stored = {str(term): int(df) for term, df in found.fetchall()}
    df = common.scope_df(terms, int(n_rows), lambda term, cap: min(stored.get(term, 0), cap))
    if not df:
        return KeywordCandidates.empty()
    any_where, any_params = filters.where(flt, TERMS_ARRAY + " OPERATOR(pg_catalog.&&) %s::text[]")
    rows = cur.execute(
        keyword_statement(table, any_where, len(df)),
        keyword_params(df, int(n_rows), float(avgdl), any_params, top_n),
        prepare=False,
    ).fetchall()
    return KeywordCandidates.from_rows(score_matches(rows, df, int(n_rows), float(avgdl), max(1, int(top_n))))
