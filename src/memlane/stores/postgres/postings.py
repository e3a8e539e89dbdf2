"""Keyword search of the PostgreSQL store from in-memory postings, caught up by snapshot diffs.

Each store object keeps one :class:`~memlane.stores.keyword_postings.KeywordPostings` of the
schema's rows (derived data, as the SQLite store's :class:`~memlane.stores.sqlite.fts.KeywordIndex`):
a recall scores every match of its scope in numpy, takes the scope's statistics (``N``,
``avgdl``, each term's ``df``) from the postings too, and checks only the best rows against its
filter in SQL (:func:`~memlane.stores.keyword_postings.best_passing`). The hits and scores are
those of the server-side path (:func:`memlane.stores.postgres.fts.keyword_search`) and of SQLite.

Catching up (:meth:`PostgresKeywordIndex.refresh`, schema migration 17): the search runs in a
``REPEATABLE READ`` transaction, so all its statements see one snapshot ``S``
(``pg_current_snapshot()``). The postings hold exactly the rows visible in the snapshot ``P`` of
the last refresh. A transaction is visible in ``S`` but not in ``P`` iff it committed in between,
and every such transaction has ``xid >= xmin(P)``; so the rows to add are those with
``xid >= xmin(P) AND NOT pg_visible_in_snapshot(xid, P)`` (one range of ``ix_memlane_episodes_xid``)
and the keys to drop the ``memlane_deletions`` entries matching the same test. A writer still in
progress at ``S`` is in neither and is read by a later refresh, whatever the order in which
concurrent writers commit: a row whose key is below the highest held (a transaction that took its
keys first and committed last) makes the postings drop their rows from that key on and re-read them.
When ``S`` equals ``P`` (no commit in between) nothing but the snapshot is read. A pruning of
``memlane_deletions`` past ``xmin(P)`` (its ``pruned_below`` entry) makes the refresh read every
stored key once instead. A failed refresh leaves the postings to be rebuilt by the next.

Optimistic reads (:func:`optimistic_keyword_search`, :func:`current_snapshot`):
while no transaction commits, the postings are already at the snapshot a new statement takes, so
a search needs no transaction of its own: each of its statements (the filter check) also returns
the snapshot it ran in, and when that equals the postings' snapshot ``P`` the statement saw the
very rows the postings hold, as a statement of the ``REPEATABLE READ`` transaction at ``P`` would
have (the same snapshot sees the same committed rows). A search that ran no statement asks for
the snapshot alone. Any other snapshot (a commit in between) makes the store run the search
again the plain way, in a transaction that catches up first; the answer is the same either way.
The postings' lock covers the refresh and the scoring, not the filter check's round trips.

Cost: an unchanged database costs a search one statement (its filter check, with the snapshot:
no ``BEGIN``, isolation level, snapshot read or ``COMMIT``) and the neighbours one snapshot read;
a commit anywhere in the database the plain path's: the isolation level, the snapshot, two index
range scans (usually empty), then the search's statements. A
transaction that keeps an xid open for long holds ``xmin`` back, so each catch-up meanwhile walks
the index entries of every row written since it began (and reads only the unseen ones). Memory:
every row of the schema, once per store object (the process's postings are not per tenant).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import psycopg
from numpy.typing import NDArray
from psycopg import sql

import memlane.stores.postgres.filters as filters
from memlane.stores.base import EpisodeFilter, KeywordCandidates
from memlane.stores.common_terms import CommonTermFilter, statistics_scope
from memlane.stores.keyword_postings import (
    KeywordPostings,
    PostingRows,
    best_passing,
    posting_batches,
    scored_matches,
)
from memlane.stores.postgres.base import key_array, parse_key_array

__all__ = ["PostgresKeywordIndex", "current_snapshot", "optimistic_keyword_search", "postings_keyword_search"]

_BATCH = 50_000
"""Rows read per ``fetchmany`` while building."""

_COLUMNS = (
    "SELECT seq, tenant_id, session_id, terms, token_count, "
    "(extract(epoch FROM created_at) OPERATOR(pg_catalog.*) 1000000)::int8, importance, "
    "pg_catalog.array_to_json(tags)::text FROM {t}"
)
"""The columns of :class:`~memlane.stores.keyword_postings.PostingRows`, in its order (``created_at``
in exact integer microseconds: ``extract`` is ``numeric``)."""

_UNSEEN = (
    "xid OPERATOR(pg_catalog.>=) pg_catalog.pg_snapshot_xmin(%s::pg_snapshot) "
    "AND NOT pg_catalog.pg_visible_in_snapshot(xid, %s::pg_snapshot)"
)
"""Rows of the transactions a snapshot (the parameter, twice) did not see."""

_SNAPSHOT = "pg_catalog.pg_current_snapshot()::text"
"""The snapshot of the statement (of the transaction under ``REPEATABLE READ``), as text."""


class _MovedError(Exception):
    """An optimistic statement ran in another snapshot than the postings hold (a commit in between)."""


class PostgresKeywordIndex:
    """The postings of a schema's rows as of the last snapshot read (see the module docstring).

    Args:
        table: The schema-qualified ``memlane_episodes`` (:attr:`table`).
        deletions: The schema-qualified ``memlane_deletions``.
        common: The common-term rule of the searches (:attr:`common`).

    Not thread-safe by itself: hold :attr:`lock` around :meth:`refresh` and any read of
    :attr:`postings` (the searches here take it; a refresh replaces the postings' arrays, so arrays
    taken under the lock stay valid after it is released).
    """

    def __init__(self, table: sql.Composable, deletions: sql.Composable, common: CommonTermFilter) -> None:
        self.lock = threading.Lock()
        self.table, self.common = table, common
        self.postings = KeywordPostings()
        self._snapshot: str | None = None  # the snapshot the postings hold exactly, None: rebuild
        self._rows = sql.SQL(_COLUMNS).format(t=table)
        self._keys = sql.SQL("SELECT seq FROM {t}").format(t=table)
        self._deleted = sql.SQL(
            "SELECT seq, pruned_below OPERATOR(pg_catalog.>=) pg_catalog.pg_snapshot_xmin(%s::pg_snapshot) "
            "FROM {d} WHERE " + _UNSEEN
        ).format(d=deletions)

    def refresh(self, cur: psycopg.Cursor[Any]) -> KeywordPostings:
        """Bring the postings to the transaction's snapshot; call first in a new transaction.

        Sets the transaction ``REPEATABLE READ`` (so the caller's later statements see the same
        snapshot), then reads what committed since the last refresh.

        Raises:
            psycopg.Error: the database failed (the next refresh rebuilds the postings).
        """
        cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        now, before = current_snapshot(cur), self._snapshot
        if now == before:
            return self.postings
        self._snapshot = None  # until the reads below succeed
        if before is None:
            self.postings = KeywordPostings()
            self._append(cur, sql.SQL(" ORDER BY seq"), [])
        else:
            self._catch_up(cur, before)
        self._snapshot = now
        return self.postings

    @property
    def snapshot(self) -> str | None:
        """The snapshot (``pg_snapshot`` text) the postings hold exactly, or ``None`` (rebuild first)."""
        return self._snapshot

    def _catch_up(self, cur: psycopg.Cursor[Any], before: str) -> None:
        """Drop the keys deleted and add the rows committed since snapshot ``before``."""
        found = cur.execute(self._deleted, [before] * 3, prepare=False).fetchall()
        postings = self.postings
        if any(bool(pruned) for _, pruned in found):  # entries it did not see were pruned
            postings.retain(_keys(r[0] for r in cur.execute(self._keys)))
        elif found:
            gone = _keys(seq for seq, _ in found if seq is not None)
            postings.retain(postings.seqs[~np.isin(postings.seqs, gone)])
        unseen = sql.SQL(" WHERE " + _UNSEEN + " ORDER BY seq")
        rows = cur.execute(self._rows + unseen, [before, before], prepare=False).fetchall()
        if rows and int(rows[0][0]) <= postings.last_seq:  # a writer with lower keys committed later
            first = int(rows[0][0])
            postings.retain(postings.seqs[postings.seqs < first])
            self._append(cur, sql.SQL(" WHERE seq OPERATOR(pg_catalog.>=) %s ORDER BY seq"), [first])
        elif rows:
            postings.append(PostingRows(*zip(*rows, strict=True)))

    def _append(self, cur: psycopg.Cursor[Any], where: sql.Composable, params: Sequence[Any]) -> None:
        """Append the rows ``where`` selects (in key order, all above the held keys)."""
        cur.execute(self._rows + where, params, prepare=False)
        self.postings.extend(posting_batches(cur, _BATCH))


def current_snapshot(cur: psycopg.Cursor[Any]) -> str:
    """The snapshot (``pg_snapshot`` text) of a new statement on ``cur`` (one statement).

    Under ``REPEATABLE READ``, the transaction's. When it equals
    :attr:`PostgresKeywordIndex.snapshot` (nothing committed since) the postings are the rows that
    statement sees, so an answer from them alone is that of a :meth:`~PostgresKeywordIndex.refresh`-ed
    transaction now.

    Raises:
        psycopg.Error: the database failed.
    """
    row = cur.execute("SELECT " + _SNAPSHOT).fetchone()
    assert row is not None
    return str(row[0])


def _keys(values: Any) -> NDArray[np.int64]:
    """Row keys as an int64 array."""
    return np.fromiter((int(v) for v in values), dtype=np.int64)


def _selective(checked: int, passed: int, sizes: tuple[int, int]) -> bool:
    """Whether reading every row a filter passes costs fewer rows than checking candidates for it.

    After ``checked`` candidates of which ``passed`` passed (share ``s``), the scope of ``n`` rows holds
    about ``s * n`` passing rows, and ``wanted`` more passes need about ``(wanted - passed) / s`` more
    candidates checked: read the passing rows once when the first is smaller. A share of 0 says the
    filter passes (almost) nothing: read its rows.

    Args:
        checked: Candidates checked so far (> 0).
        passed: How many of them passed (<= ``checked``).
        sizes: ``(n, wanted)``: the scope's rows and the passes the search needs.
    """
    n, wanted = sizes
    share = passed / checked
    return share == 0.0 or share * n < (wanted - passed) / share


class _FilterCheck:
    """``check(keys)`` -> which keys pass a filter, for :func:`best_passing`.

    The first call asks the server about those keys; when the share of them that passed says the
    filter is selective (:func:`_selective`: a 1 % tag at 100,000 rows), the next call reads every
    key the filter passes once, in the same snapshot, and it and later calls test membership in
    memory instead of sending ever larger key lists. The same keys pass either way.

    Each statement returns the passing keys as one ``int8[]`` value (not a row per key) and the
    snapshot it ran in, which must be ``snapshot`` (the postings'): else it raises :class:`_MovedError`.

    Args:
        cur: The search's cursor (in its transaction, or in autocommit for an optimistic search).
        table: The schema-qualified episodes table.
        flt: The filter.
        sizes: ``(n, wanted)``: the scope's rows and the passes the search needs.
        snapshot: The snapshot the postings hold.
    """

    def __init__(
        self,
        cur: psycopg.Cursor[Any],
        table: sql.Composable,
        flt: EpisodeFilter,
        sizes: tuple[int, int],
        snapshot: str,
    ) -> None:
        self._cur, self._flt, self._sizes, self._snapshot = cur, flt, sizes, snapshot
        self._table = table
        self._selective = False
        self._allowed: NDArray[np.int64] | None = None
        self.statements = 0

    def _read(self, *extra: str, keys: NDArray[np.int64] | None = None) -> NDArray[np.int64]:
        where, params = filters.where(self._flt, *extra)
        if keys is not None:
            params = [*params, key_array(keys.tolist())]
        statement = sql.SQL(
            "SELECT " + _SNAPSHOT + ", (SELECT pg_catalog.array_agg(seq)::text FROM {t}{where})"
        )
        # a key list bounds the rows whatever the plan: prepared after a few uses (no planning, about
        # 0.4 ms at 533 keys); the whole filter's rows are planned with its values
        prepare = None if keys is not None else False
        row = self._cur.execute(
            statement.format(t=self._table, where=where), params, prepare=prepare
        ).fetchone()
        self.statements += 1
        assert row is not None
        if str(row[0]) != self._snapshot:
            raise _MovedError
        return parse_key_array(row[1])

    def __call__(self, keys: NDArray[np.int64]) -> NDArray[np.bool_]:
        if self._selective:
            if self._allowed is None:
                self._allowed = self._read()
            return np.isin(keys, self._allowed)
        result = np.isin(keys, self._read("seq OPERATOR(pg_catalog.=) ANY(%s::int8[])", keys=keys))
        self._selective = _selective(len(keys), int(result.sum()), self._sizes)
        return result


def postings_keyword_search(
    cur: psycopg.Cursor[Any], index: PostgresKeywordIndex, request: tuple[EpisodeFilter, Sequence[str], int]
) -> KeywordCandidates:
    """:func:`memlane.stores.postgres.fts.keyword_search`'s answer from the in-memory postings.

    Under ``index.lock`` (taken here), refreshes ``index`` (:meth:`PostgresKeywordIndex.refresh`, so
    call it first in the transaction) and scores every match of the filter's scope with the
    scope's statistics from the postings; then, without the lock, checks the best rows against the
    filter in SQL, best first, until ``top_n`` pass
    (:func:`~memlane.stores.keyword_postings.best_passing`). The check reads only the arrays taken
    under the lock (a refresh replaces the postings' arrays, it never writes into them), so other
    searches of the store proceed meanwhile.

    Args:
        cur: A cursor at the start of a transaction.
        index: The store's postings (with its table and common-term rule).
        request: ``(flt, terms, top_n)``: the filter, the distinct non-empty query terms without
            NUL, and the most rows to return (>= 1).

    Returns:
        Up to ``top_n`` candidates, best BM25 first (ties: lower key first).

    Raises:
        psycopg.Error: the database failed (the store translates it).
    """
    with index.lock:
        index.refresh(cur)
        scored = _scored(index, request)
    return _checked(cur, index.table, request, scored)[0]


def optimistic_keyword_search(
    cur: psycopg.Cursor[Any], index: PostgresKeywordIndex, request: tuple[EpisodeFilter, Sequence[str], int]
) -> KeywordCandidates | None:
    """:func:`postings_keyword_search`'s answer without a transaction, or ``None`` after a commit.

    Scores the postings as they are (no refresh; under ``index.lock``, taken here) and verifies that
    every statement ran in their snapshot (see the module docstring); a search that ran none reads
    the snapshot once.

    Args:
        cur: A cursor on which each statement may be its own transaction (autocommit).
        index: The store's postings.
        request: As for :func:`postings_keyword_search`.

    Returns:
        :func:`postings_keyword_search`'s candidates, or ``None``: the postings are not built, or the
        database moved on since their snapshot (run :func:`postings_keyword_search` in a transaction).

    Raises:
        psycopg.Error: the database failed (the store translates it).
    """
    with index.lock:
        if index.snapshot is None:
            return None
        scored = _scored(index, request)
    try:
        found, statements = _checked(cur, index.table, request, scored)
    except _MovedError:
        return None
    if statements == 0 and current_snapshot(cur) != scored.snapshot:
        return None
    return found


class _Scored(NamedTuple):
    """A search's scored matches, with the postings' arrays and snapshot they came from."""

    seqs: NDArray[np.int64]
    created_s: NDArray[np.float64]
    importance: NDArray[np.float64]
    snapshot: str
    n: int  # the scope's rows
    rows: NDArray[np.int64]
    scores: NDArray[np.float64]


def _scored(index: PostgresKeywordIndex, request: tuple[EpisodeFilter, Sequence[str], int]) -> _Scored:
    """Every match of the request's scope scored by BM25 over the postings (the caller holds the lock)."""
    flt, terms, _ = request
    postings, snapshot = index.postings, index.snapshot
    assert snapshot is not None  # refreshed or checked by the caller
    scope = statistics_scope(flt)
    n, tokens = postings.scope_size(scope)
    rows, scores = scored_matches(postings, terms, (n, tokens / n if n else 0.0), scope, index.common)
    return _Scored(postings.seqs, postings.created_s, postings.importance, snapshot, n, rows, scores)


def _checked(
    cur: psycopg.Cursor[Any],
    table: sql.Composable,
    request: tuple[EpisodeFilter, Sequence[str], int],
    scored: _Scored,
) -> tuple[KeywordCandidates, int]:
    """The best ``top_n`` scored rows passing the filter, and how many statements checked them.

    Raises:
        _MovedError: a filter check ran in another snapshot than the scored postings'.
    """
    flt, _, top_n = request
    if not len(scored.rows):
        return KeywordCandidates.empty(), 0
    wanted = max(1, int(top_n))
    passing = _FilterCheck(cur, table, flt, (scored.n, wanted), scored.snapshot)
    passed = best_passing(scored.seqs, scored.rows, scored.scores, passing, wanted)
    chosen = scored.rows[passed]
    found = KeywordCandidates(
        scored.seqs[chosen], scored.scores[passed], scored.created_s[chosen], scored.importance[chosen]
    )
    return found, passing.statements
