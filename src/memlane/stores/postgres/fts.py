"""Keyword search for the PostgreSQL store: full-text search over a generated ``tsvector``.

The index is the stored generated column ``content_tsv`` =
``to_tsvector('english', content)`` with a GIN index (schema migration 2 in
:mod:`memlane.stores.postgres.migrations`); PostgreSQL keeps it in step with every insert,
delete and retention prune.

Query safety: every term from :func:`memlane.recall.keywords.keyword_terms` is a *bound parameter*
of its own ``plainto_tsquery('english', %s)`` (which reads its input as plain words, never
as ``tsquery`` operators), and the per-term queries are ORed with the ``||`` operator. So no
user text reaches a query parser that gives ``&``, ``|``, ``!``, ``<->``, ``:*`` or quotes a
meaning. A term that is an English stop word yields an empty query and is ignored.

Scoring: ``ts_rank_cd(content_tsv, query, 1)``, PostgreSQL's cover density ranking
(Clarke, Cormack & Tudhope 2000, *Relevance ranking for one to three term queries*),
divided by ``1 + log(document length)``. It is not BM25, so its scale differs from the
SQLite store's; :mod:`memlane.recall.ranking` only uses it through a per-query normalisation or
its rank order, so the fused relevance means the same on both backends.
"""

from __future__ import annotations

from psycopg import sql

__all__ = ["TS_CONFIG", "keyword_count_statement", "keyword_statement"]

TS_CONFIG = "pg_catalog.english"
"""The text search configuration of the generated ``content_tsv`` column and of queries."""


def keyword_statement(table: sql.Composable, where: sql.Composable, n_terms: int) -> sql.Composed:
    """The keyword search statement for ``n_terms`` (>= 1) terms.

    Args:
        table: The schema-qualified episodes table.
        where: The store's WHERE clause, which must end with the condition
            ``content_tsv @@ kw.q`` (pass it as an extra clause to the store's ``_where``).
        n_terms: Number of term placeholders to generate.

    Returns:
        A statement whose parameters are: the ``n_terms`` terms, then the WHERE clause's
        values, then ``top_n``. It returns ``seq, score, created_at_seconds, importance``,
        best score first (ties: lower ``seq``).
    """
    if n_terms < 1:
        raise ValueError("n_terms must be >= 1")
    one = sql.SQL("pg_catalog.plainto_tsquery({cfg}::pg_catalog.regconfig, %s)").format(
        cfg=sql.Literal(TS_CONFIG)
    )
    query = sql.SQL(" OPERATOR(pg_catalog.||) ").join([one] * n_terms)
    return sql.SQL(
        "SELECT seq, pg_catalog.ts_rank_cd(content_tsv, kw.q, 1)::float8 AS score, "
        "extract(epoch FROM created_at)::float8, importance "
        "FROM {t}, (SELECT {query} AS q) AS kw{where} "
        "ORDER BY score DESC, seq LIMIT %s"
    ).format(t=table, query=query, where=where)


def keyword_count_statement(table: sql.Composable) -> sql.Composed:
    """Count (up to a cap) the rows whose ``content_tsv`` matches one term.

    Parameters: the term, then the cap. Used to find terms that occur in more than half of the
    rows (:class:`memlane.stores.common_terms.CommonTermFilter`).
    """
    return sql.SQL(
        "SELECT count(*) FROM (SELECT 1 FROM {t} WHERE content_tsv OPERATOR(pg_catalog.@@) "
        "pg_catalog.plainto_tsquery({cfg}::pg_catalog.regconfig, %s) LIMIT %s) AS capped"
    ).format(t=table, cfg=sql.Literal(TS_CONFIG))
