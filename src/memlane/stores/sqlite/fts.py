"""Keyword search for the SQLite store: FTS5 over the analysed ``episodes.terms``, BM25 per scope.

The index is the external-content FTS5 table ``episodes_fts`` over ``terms`` (schema migration
8 in :mod:`memlane.stores.sqlite.migrations`) with the ``ascii`` tokenizer, which only splits
at the spaces memlane put between the terms (:mod:`memlane.analysis`), built with
``detail=none, columnsize=0`` (migration 14): it only answers which rows hold a term and, through
the ``episodes_fts_terms`` vocabulary, in how many rows a term is. Each insert transaction
fills it with one set-based ``INSERT ... SELECT`` over the batch's new rows (migration 9 dropped
the per-row insert trigger); delete and update triggers keep it in step, so explicit deletes and
retention pruning remove an episode from it in the same transaction.

Query safety: the MATCH expression is built only from :func:`memlane.analysis.query_terms`
output, each term wrapped in double quotes (an FTS5 string: no operator, column filter,
prefix ``*`` or ``NEAR`` inside it means anything) and the terms joined with ``OR``. The
expression is then passed as a bound parameter, never spliced into SQL.

Scoring: the index only finds the rows that contain a query term; their BM25 is computed with
the statistics of the recall's *scope* (its tenant, or its tenant and session; every stored row
of it, whatever the recall's other filters say) by
:func:`memlane.bm25.score_matches`: ``N`` and ``avgdl`` from ``scope_stats``
(schema migration 11, kept by the writes), ``df`` from FTS5's vocabulary when the scope is the
whole table, else one capped count per term within the scope. Another tenant's rows never change
a tenant's scores, and no statistic costs a scan of the scope.

Cost: every statement walks FTS5's matches first, bounded to the rowid range of the scope
(its first and last row key), and probes ``episodes`` by primary key per match; when the scope
has fewer rows than the match limit all its matches are fetched (they are all scored anyway).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlane.bm25 import score_matches
from memlane.stores.base import KeywordCandidates
from memlane.stores.common_terms import CommonTermFilter
from memlane.stores.keyword_postings import (
    KeywordPostings,
    best_first,
    best_passing,
    posting_batches,
    scored_matches,
)
from memlane.stores.sqlite.base import Snapshot, SnapshotMemo, read_generation, snapshot

__all__ = [
    "GENERATION",
    "KeywordIndex",
    "Known",
    "fts5_match_expression",
    "index_new_rows",
    "indexed_keyword_search",
    "keyword_search",
    "scope_statistics",
]

GENERATION = "delete_generation"
"""The ``store_meta`` counter every deletion, supersession and archiving bumps (by any process)."""

_ADD_SCOPE_STATS = (
    "INSERT INTO scope_stats (tenant_id, session_id, rows, tokens, min_seq, max_seq) "
    "SELECT tenant_id, session_id, count(*), sum(token_count), min(seq), max(seq) FROM episodes NOT INDEXED "
    "WHERE seq > ? GROUP BY tenant_id, session_id ON CONFLICT (tenant_id, session_id) DO UPDATE SET "
    "rows = rows + excluded.rows, tokens = tokens + excluded.tokens, "
    "min_seq = min(min_seq, excluded.min_seq), max_seq = max(max_seq, excluded.max_seq)"
)
"""Adds a batch's rows (``seq > ?``) to ``scope_stats``. ``NOT INDEXED``: the batch is a ``seq`` (rowid)
range read directly, then grouped in a temporary B-tree; without it SQLite's planner, which does not
know how few rows the range holds, walks the whole ``(tenant_id, session_id, seq)`` index in group
order, so every insert read one index entry per stored row (an O(table) cost per batch)."""


def index_new_rows(conn: sqlite3.Connection, after: int) -> None:
    """Add the rows of a write transaction (``seq > after``) to the keyword index and ``scope_stats``.

    Two set-based statements (schema migrations 9 and 11) instead of per-row triggers; the
    caller holds the write lock, so the rows above ``after`` are exactly its batch.

    Raises:
        sqlite3.Error: the database failed (the caller's transaction rolls back).
    """
    conn.execute(
        "INSERT INTO episodes_fts (rowid, terms) SELECT seq, terms FROM episodes WHERE seq > ?", (after,)
    )
    conn.execute(_ADD_SCOPE_STATS, (after,))


def fts5_match_expression(terms: Sequence[str]) -> str:
    """Build an FTS5 MATCH expression that ORs ``terms``, each as a quoted string.

    Args:
        terms: Plain terms (see :func:`memlane.analysis.query_terms`); any ``"`` inside a
            term is doubled, FTS5's escape, so even arbitrary strings stay literal.

    Returns:
        E.g. ``'"window" OR "seat"'``; empty string for no terms.
    """
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms if term)


def scope_statistics(
    conn: sqlite3.Connection, tenant_id: str | None, session_id: str | None
) -> tuple[int, float, int, int, bool]:
    """The keyword statistics of a scope from ``scope_stats`` (schema migration 11), in O(1) rows.

    Args:
        conn: An open connection to a migrated memlane database.
        tenant_id: The scope's tenant, or ``None`` for the whole table (global scope).
        session_id: The scope's session (session scope), or ``None`` (tenant or global scope).

    Returns:
        ``(N, avgdl, first_seq, last_seq, whole)``: stored rows of the scope, their mean token
        count, the scope's first and last row key (bounds of every match), and whether the
        scope holds every row of the table (then FTS5's table-wide document counts are its own).

    Raises:
        sqlite3.Error: the database failed.
    """
    keys = [("tenant_id", tenant_id), ("session_id", session_id if tenant_id is not None else None)]
    keys = [(column, value) for column, value in keys if value is not None]
    where = " AND ".join(f"{column} = ?" for column, _ in keys)
    args = [value for _, value in keys]
    n, tokens, low, high = conn.execute(
        "SELECT coalesce(sum(rows), 0), coalesce(sum(tokens), 0), min(min_seq), max(max_seq) FROM scope_stats"
        + (f" WHERE {where}" if where else ""),
        args,
    ).fetchone()
    # Another scope holds rows: a (tenant[, session]) key before or after this one, each one probe
    # of the primary key (the columns before the compared one held equal).
    others, other_args = [], []
    for i, (column, value) in enumerate(keys):
        head = "".join(f"{c} = ? AND " for c, _ in keys[:i])
        for op in ("<", ">"):
            others.append(f"EXISTS (SELECT 1 FROM scope_stats WHERE {head}{column} {op} ? AND rows > 0)")
            other_args += [*args[:i], value]
    whole = not others or not conn.execute("SELECT " + " OR ".join(others), other_args).fetchone()[0]
    n = int(n)
    return n, (float(tokens) / n if n else 0.0), int(low or 0), int(high or 0), bool(whole)


def keyword_search(
    conn: sqlite3.Connection,
    where: str,
    params: Sequence[Any],
    terms: Sequence[str],
    top_n: int,
    *,
    scope: tuple[str | None, str | None],
    common: CommonTermFilter | None = None,
) -> KeywordCandidates:
    """Run one filtered keyword search with per-scope BM25.

    Args:
        conn: An open connection to a migrated memlane database.
        where: The store's WHERE clause over ``episodes`` (``" WHERE ..."`` or ``""``), built
            from fixed column names with ``?`` placeholders: which rows may be candidates.
        params: Its bound values.
        terms: Distinct query terms (:func:`memlane.analysis.query_terms`); empty -> no candidates.
        top_n: Maximum rows, >= 1.
        scope: The statistics' ``(tenant_id, session_id)``
            (:func:`memlane.stores.common_terms.statistics_scope`).
        common: The common-term rule (:class:`memlane.stores.common_terms.CommonTermFilter`).

    Returns:
        Up to ``top_n`` candidates, best BM25 first (ties: lower ``seq`` first).

    Raises:
        sqlite3.Error: the database failed (the store translates it).
    """
    rule = common or CommonTermFilter()
    terms = [t for t in terms if t]
    if not terms:
        return KeywordCandidates.empty()
    tenant_id, session_id = scope
    n, avgdl, low, high, whole = scope_statistics(conn, tenant_id, session_id)
    if not n:
        return KeywordCandidates.empty()
    marks = ",".join("?" * len(terms))
    docs = dict(
        conn.execute(f"SELECT term, doc FROM episodes_fts_terms WHERE term IN ({marks})", terms).fetchall()
    )
    terms = [t for t in terms if int(docs.get(t, 0)) > 0]
    if not terms:
        return KeywordCandidates.empty()
    if whole:
        df = rule.kept({t: int(docs[t]) for t in terms}, n)
    else:
        # One statement: each term's rows in the scope, counted up to the common-term cap.
        in_scope = " WHERE e.tenant_id = ?" + ("" if session_id is None else " AND e.session_id = ?")
        scope_args = [tenant_id] + ([] if session_id is None else [session_id])
        one = "(SELECT count(*) FROM (SELECT 1 FROM " + _joined(in_scope) + " LIMIT ?))"
        args: list[Any] = []
        cap = rule.cap(n)
        for term in terms:
            args += [fts5_match_expression([term]), low, high, *scope_args, cap]
        found = conn.execute("SELECT " + ", ".join([one] * len(terms)), args).fetchone()
        df = rule.kept({t: int(c) for t, c in zip(terms, found, strict=True)}, n)
    if not df:
        return KeywordCandidates.empty()
    columns = "SELECT e.seq, e.terms, e.token_count, e.created_at_us / 1e6, e.importance FROM "
    rows = conn.execute(
        columns + _joined(where), [fts5_match_expression(list(df)), low, high, *params]
    ).fetchall()
    return KeywordCandidates.from_rows(score_matches(rows, df, n, avgdl, top_n))


def _joined(where: str, rank: str = "") -> str:
    """FTS5's matches (between two rowids) joined to ``episodes`` under ``where``.

    FTS5 finds the matches first (CROSS JOIN fixes that order: the planner would otherwise walk
    the scope and re-run the MATCH per row), only between the scope's first and last rowid;
    each match is then one primary-key probe of ``episodes`` tested against ``where``, whose
    column names are unambiguous (the FTS subquery only exposes ``fts_seq`` and ``r``).
    Parameters: the MATCH expression, the two rowids, then ``where``'s values.
    """
    return (
        f"(SELECT rowid AS fts_seq{rank} FROM episodes_fts WHERE episodes_fts MATCH ? "
        "AND rowid BETWEEN ? AND ?) AS f CROSS JOIN episodes AS e ON e.seq = f.fts_seq" + where
    )


class KeywordIndex:
    """In-memory keyword postings (:mod:`memlane.stores.keyword_postings`) kept in step with the file.

    The file is the source of truth; before every search :meth:`refresh` reads what changed:
    rows with ``seq`` above the last indexed key are appended (every insert, by any process:
    row keys only grow), and when ``delete_generation`` changed (a delete, retention pruning,
    session removal, supersession or archiving, by any process) the indexed keys are checked
    against the table and the deleted ones dropped. A crash or a write by another process at any
    point leaves nothing to repair: the next refresh reads the committed state. When the file is
    unchanged since the last refresh as the same connection sees it (an equal
    :func:`~memlane.stores.sqlite.base.snapshot`: e.g. the keyword and neighbour stages of one
    recall), the refresh reads nothing but ``PRAGMA data_version``.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.postings = KeywordPostings()
        self._generation: str | None = None
        self._seen: Snapshot | None = None  # the snapshot the postings were last brought up to
        self._same: tuple[object, object, int, bool] | None = None  # see holds_same_rows
        self.memo = SnapshotMemo()
        """Small reads of the search (the scope's statistics), once per snapshot."""

    def refresh(self, conn: sqlite3.Connection) -> KeywordPostings:
        """The postings of every committed row (call under :attr:`lock`).

        Raises:
            sqlite3.Error: the database failed (the index is left as it was, still consistent).
        """
        at = snapshot(conn)  # taken before the reads: a commit during them changes the next one
        if at is not None and at == self._seen:
            return self.postings
        self._seen = None  # until the reads below succeed
        generation = read_generation(conn, GENERATION)
        if generation != self._generation and len(self.postings):
            keys = np.fromiter((r[0] for r in conn.execute("SELECT seq FROM episodes")), dtype=np.int64)
            self.postings.retain(keys)
        self._generation = generation
        cursor = conn.execute(
            "SELECT seq, tenant_id, session_id, terms, token_count, created_at_us, importance, tags "
            "FROM episodes WHERE seq > ? ORDER BY seq",
            (self.postings.last_seq,),
        )
        self.postings.extend(posting_batches(cursor, 50_000))
        self._seen = at
        return self.postings

    def holds_same_rows(self, keys: NDArray[np.int64]) -> bool:
        """Whether ``keys`` (int64, ascending) are exactly the postings' row keys, in order.

        Then a row's index position is its position in ``keys`` too. The answer is kept while the
        postings' key array and ``keys``' buffer and length are the same objects (both only grow by
        new arrays or, for ``keys``, past its end; every other change makes new arrays).
        """
        base = keys if keys.base is None else keys.base
        kept = self._same
        if kept is not None and kept[0] is self.postings.seqs and kept[1] is base and kept[2] == len(keys):
            return kept[3]
        same = bool(np.array_equal(self.postings.seqs, keys))
        self._same = (self.postings.seqs, base, len(keys), same)
        return same


def indexed_keyword_search(
    conn: sqlite3.Connection,
    index: KeywordIndex,
    sql_filter: tuple[str, Sequence[Any]],
    terms: Sequence[str],
    top_n: int,
    *,
    scope: tuple[str | None, str | None],
    common: CommonTermFilter | None = None,
    known: Known | None = None,
) -> KeywordCandidates:
    """:func:`keyword_search`'s answer (same rows, order and scores) from the in-memory postings.

    Every match of the scope is scored in numpy (:meth:`KeywordPostings.score`). When ``known``
    decides every row, the matches failing it are dropped and the best ``top_n`` of the rest taken;
    else the best are checked against the filter, best first, in chunks (the first one
    ``top_n + 32`` rows, then doubling) until ``top_n`` pass or none is left. Either way the
    result is exactly the best ``top_n`` rows passing the filter. Arguments as for :func:`keyword_search`
    (``sql_filter`` is its ``(where, params)``), plus the ``index`` whose postings were just
    refreshed (:meth:`KeywordIndex.refresh`; the scope's statistics are read once per snapshot)
    and, optionally, ``known`` (:data:`Known`: the store's in-memory vector index's keys and its
    mask for the same filter); only rows it does not hold are checked in SQL.
    ``created_at`` and importance come from the postings.

    Raises:
        sqlite3.Error: the database failed (the store translates it).
    """
    terms = [t for t in terms if t]
    postings = index.postings
    n, avgdl = index.memo.get(conn, scope, lambda: scope_statistics(conn, *scope)[:2]) if terms else (0, 0.0)
    rows, scores = scored_matches(postings, terms, (n, avgdl), scope, common or CommonTermFilter())
    if not len(rows):
        return KeywordCandidates.empty()
    if known is not None and known[2]:  # the mask decides every row: filter first, then rank the rest
        ok = known[1][rows]
        passed = (
            best_first(rows, scores, top_n)
            if ok.all()
            else np.flatnonzero(ok)[best_first(rows[ok], scores[ok], top_n)]
        )
    else:
        passed = best_passing(
            postings.seqs, rows, scores, lambda keys: _check(conn, keys, sql_filter, known), top_n
        )
    chosen = rows[passed]
    return KeywordCandidates(
        postings.seqs[chosen], scores[passed], postings.created_s[chosen], postings.importance[chosen]
    )


Known = tuple[NDArray[np.int64], NDArray[np.bool_], bool]
"""Rows whose filter result is already known: their keys (ascending), the result (parallel) and whether
those keys are exactly the postings' (:meth:`KeywordIndex.holds_same_rows`: then the result, read by
index position, filters every match before the ranking, and no SQL runs)."""

_PASSING = (
    "SELECT e.seq FROM (SELECT value AS k FROM json_each(?)) AS j CROSS JOIN episodes AS e ON e.seq = j.k"
)


def _check(
    conn: sqlite3.Connection,
    keys: NDArray[np.int64],
    sql_filter: tuple[str, Sequence[Any]],
    known: Known | None,
) -> NDArray[np.bool_]:
    """Boolean ``[len(keys)]``: which keys pass the filter (``known`` where it holds them, else SQL)."""
    result = np.zeros(len(keys), dtype=bool)
    ask = np.ones(len(keys), dtype=bool)
    if known is not None and len(known[0]):
        held, mask, _ = known
        at = np.minimum(np.searchsorted(held, keys), len(held) - 1)  # >= 0
        ask = held[at] != keys
        result[~ask] = mask[at[~ask]]
    if ask.any():
        where, params = sql_filter
        sql = _PASSING + where
        got = [r[0] for r in conn.execute(sql, [json.dumps(keys[ask].tolist()), *params]).fetchall()]
        result[ask] = np.isin(keys[ask], np.asarray(got, dtype=np.int64))
    return result
