"""Keyword search for the SQLite store: FTS5 over the analysed ``episodes.terms``, BM25 per scope.

The index is the external-content FTS5 table ``episodes_fts`` over ``terms`` (schema migration
8 in :mod:`memlane.stores.sqlite.migrations`) with the ``ascii`` tokenizer, which only splits
at the spaces memlane put between the terms (:mod:`memlane.analysis`). Each insert transaction
fills it with one set-based ``INSERT ... SELECT`` over the batch's new rows (migration 9 dropped
the per-row insert trigger); delete and update triggers keep it in step, so explicit deletes and
retention pruning remove an episode from it in the same transaction.

Query safety: the MATCH expression is built only from :func:`memlane.analysis.query_terms`
output, each term wrapped in double quotes (an FTS5 string: no operator, column filter,
prefix ``*`` or ``NEAR`` inside it means anything) and the terms joined with ``OR``. The
expression is then passed as a bound parameter, never spliced into SQL.

Scoring: the index only finds the scope's rows that contain a query term; their BM25 is
computed with the scope's own statistics by :func:`memlane.stores.common_terms.score_matches`
(``N`` and ``avgdl`` from one filtered aggregate, ``df`` from the fetched matches or, for a
term in over half of the table, one capped filtered count), so another tenant's rows never
change a tenant's scores.

Cost: every statement walks FTS5's matches first, bounded to the rowid range of the scope
(``min(seq)``..``max(seq)`` from the same aggregate), and probes ``episodes`` by primary key
per match; when the scope has fewer rows than the match limit all its matches are fetched
without FTS5's ``bm25()`` ordering (they are all scored anyway).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from memlane.stores.base import KeywordCandidates
from memlane.stores.common_terms import MATCH_LIMIT, CommonTermFilter

__all__ = ["fts5_match_expression", "keyword_search"]

_Counts = Callable[[Sequence[str], int], list[int]]
"""``counts(terms, cap)`` -> rows of the scope containing each term, each counted up to ``cap``."""


def fts5_match_expression(terms: Sequence[str]) -> str:
    """Build an FTS5 MATCH expression that ORs ``terms``, each as a quoted string.

    Args:
        terms: Plain terms (see :func:`memlane.analysis.query_terms`); any ``"`` inside a
            term is doubled, FTS5's escape, so even arbitrary strings stay literal.

    Returns:
        E.g. ``'"window" OR "seat"'``; empty string for no terms.
    """
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms if term)


def _informative(conn: sqlite3.Connection, terms: list[str], n_rows: int, counts: _Counts) -> list[str]:
    """``terms`` without those in no row and, once the scope has ``MIN_ROWS`` rows, in over half of it.

    Table-wide document counts come from the FTS5 vocabulary (``episodes_fts_terms``, one index
    lookup per term). A term in at most half of the table's rows is in at most half of any scope,
    so only the others are checked; when the scope is the whole table (its ``N`` equals
    ``max(seq) - min(seq) + 1``, so no row lies outside it) the table-wide count is the scope's,
    else the scope is counted up to ``N / 2 + 1`` matches (one statement for all such terms).
    The same rule as :class:`~memlane.stores.common_terms.CommonTermFilter`, applied before the
    search so a common term never makes FTS5 find and score most of the scope.
    """
    marks = ",".join("?" * len(terms))
    docs = dict(
        conn.execute(f"SELECT term, doc FROM episodes_fts_terms WHERE term IN ({marks})", terms).fetchall()
    )
    if n_rows < CommonTermFilter.MIN_ROWS:
        return [t for t in terms if docs.get(t, 0) > 0]
    half = n_rows // 2
    suspects = [t for t in terms if int(docs.get(t, 0)) > half]
    common: set[str] = set()
    if suspects:
        # Two lookups of the rowid B-tree (one query with both min() and max() scans the table).
        low, high = conn.execute(
            "SELECT (SELECT min(seq) FROM episodes), (SELECT max(seq) FROM episodes)"
        ).fetchone()
        whole = low is not None and n_rows == high - low + 1
        found = [half + 1] * len(suspects) if whole else counts(suspects, half + 1)
        common = {t for t, df in zip(suspects, found, strict=True) if df > half}
    return [t for t in terms if int(docs.get(t, 0)) > 0 and t not in common]


def keyword_search(
    conn: sqlite3.Connection,
    where: str,
    params: Sequence[Any],
    terms: Sequence[str],
    top_n: int,
    common: CommonTermFilter | None = None,
) -> KeywordCandidates:
    """Run one filtered keyword search with per-scope BM25.

    Args:
        conn: An open connection to a migrated memlane database.
        where: The store's WHERE clause over ``episodes`` (``" WHERE ..."`` or ``""``), built
            from fixed column names with ``?`` placeholders; it defines the scope.
        params: Its bound values.
        terms: Distinct query terms (:func:`memlane.analysis.query_terms`); empty -> no candidates.
        top_n: Maximum rows, >= 1.
        common: Computes the per-scope document frequencies and drops terms in over half of
            the scope (:class:`memlane.stores.common_terms.CommonTermFilter`); default one.

    Returns:
        Up to ``top_n`` candidates, best BM25 first (ties: lower ``seq`` first).

    Raises:
        sqlite3.Error: the database failed (the store translates it).
    """
    terms = [t for t in terms if t]
    if not terms:
        return KeywordCandidates.empty()
    n_rows, avgdl, low, high = conn.execute(
        f"SELECT count(*), avg(token_count), min(seq), max(seq) FROM episodes{where}", params
    ).fetchone()
    if not n_rows:
        return KeywordCandidates.empty()
    n = int(n_rows)

    # FTS5 finds the matches first (CROSS JOIN fixes that order: the planner would otherwise walk
    # the scope and re-run the MATCH per row), only between the scope's first and last rowid;
    # each match is then one primary-key probe of ``episodes`` tested against the filter. The
    # filter's column names are unambiguous: the FTS subquery only exposes ``fts_seq`` (and ``r``).
    def joined(rank: str = "") -> str:
        return (
            f"(SELECT rowid AS fts_seq{rank} FROM episodes_fts WHERE episodes_fts MATCH ? "
            "AND rowid BETWEEN ? AND ?) AS f CROSS JOIN episodes AS e ON e.seq = f.fts_seq" + where
        )

    one = "(SELECT count(*) FROM (SELECT 1 FROM " + joined() + " LIMIT ?))"

    def counts(wanted: Sequence[str], cap: int) -> list[int]:
        args: list[Any] = []
        for term in wanted:
            args += [fts5_match_expression([term]), low, high, *params, cap]
        return [int(c) for c in conn.execute("SELECT " + ", ".join([one] * len(wanted)), args).fetchone()]

    terms = _informative(conn, terms, n, counts)
    if not terms:
        return KeywordCandidates.empty()

    columns = "SELECT e.seq, e.terms, e.token_count, e.created_at_us / 1e6, e.importance FROM "
    match = [fts5_match_expression(terms), low, high, *params]
    limit = max(MATCH_LIMIT, 5 * int(top_n))
    if n < limit:
        # Every match of the scope fits under the limit: all are scored, in any order.
        rows = conn.execute(columns + joined(), match).fetchall()
    else:
        sql = columns + joined(", bm25(episodes_fts) AS r") + " ORDER BY f.r, e.seq LIMIT ?"
        rows = conn.execute(sql, [*match, limit]).fetchall()
    return (common or CommonTermFilter()).score(
        terms,
        n,
        float(avgdl or 0.0),
        rows,
        len(rows) >= limit,
        lambda term, cap: counts([term], cap)[0],
        top_n,
    )
