"""Vector search of the PostgreSQL store: exact over small filtered sets, HNSW over large ones.

The rule (:meth:`~memlane.stores.postgres.PostgresStore.vector_candidates`), with ``top_n``
the rows the caller needs and ``exact_search_limit`` (default
:data:`DEFAULT_EXACT_SEARCH_LIMIT`) a constructor argument of the store:

1. Bound the rows that pass the filter by ``bound = max(exact_search_limit, top_n)``: when
   the scope's ``seq`` span (``max(seq) - min(seq) + 1`` of the tenant and session, or of the
   table; two index probes) is within it, so is the filtered set; otherwise count them,
   stopping at ``bound + 1`` (``count(*)`` over a ``LIMIT``ed subquery, which reads at most
   that many rows; for the default recall filter an index-only scan, about 1.8 ms for 10,000
   on an idle machine, the price the span saves).
2. **Exact** when that count is within the bound (or the query vector is all zeros): the
   cosine of every filtered row is computed (about 1 ms per 1,000 rows of 384 dims) and
   the ``top_n`` best are returned; the
   ``ORDER BY`` is on a derived expression, so the HNSW index is never used and nothing
   the filter admits can be missed. ``exhaustive`` is ``True`` when every filtered row
   with a vector was returned.
3. **HNSW** otherwise: ``ORDER BY embedding <=> query LIMIT top_n`` through the HNSW
   index, with ``hnsw.ef_search = clamp(top_n, 40, 1000)`` and
   ``hnsw.iterative_scan = relaxed_order`` (pgvector 0.8), so the index keeps scanning
   until ``top_n`` rows have passed the filter (up to ``hnsw.max_scan_tuples``). The index
   is partial, ``seq <= W`` (:mod:`memlane.stores.postgres.vector_index`): the scan is
   restricted to those rows, and the rows written since (``seq > W``, the unindexed tail)
   are searched exactly (step 2's statement over the tail, through the ``seq`` b-tree, as the
   other branch of one ``UNION ALL``); the two lists of at most ``top_n`` go to
   :meth:`~memlane.stores.base.VectorCandidates.top` together. ``exhaustive`` is ``False``.
4. If the HNSW scan returns fewer than ``top_n`` rows although more than ``top_n`` passed
   the filter (a filter so selective that the scan gave up, zero-norm vectors, which
   the cosine index skips, or fewer than ``top_n`` indexed rows passing it), the exact
   search of step 2 is run instead, over every row. So the store never returns fewer than
   ``min(top_n, filtered rows with vectors)`` candidates.

The reported similarity is always the exact inner product ``-(embedding <#> query)``,
which is the cosine for the L2-normalised vectors memlane stores (and 0 for all-zero
vectors, exactly like the SQLite store), whichever path found the row.

Writes never maintain the HNSW index (they land in the tail); ``optimize()`` folds the tail
into it (:mod:`memlane.stores.postgres.vector_index`). Without the index
(:meth:`~memlane.stores.postgres.PostgresStore.drop_vector_index`) searches stay correct: the
HNSW path's query simply runs as an exact scan.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import psycopg
from numpy.typing import NDArray
from psycopg import sql
from psycopg.pq import TransactionStatus

from memlane.stores.base import EpisodeFilter
from memlane.stores.postgres.base import VectorParam
from memlane.stores.postgres.filters import where
from memlane.stores.postgres.vector_index import WATERMARK_KEY

__all__ = ["DEFAULT_EXACT_SEARCH_LIMIT", "SearchPlan", "VectorSearch", "hnsw_settings"]

logger = logging.getLogger(__name__)

DEFAULT_EXACT_SEARCH_LIMIT = 10_000
"""Filtered sets up to this many rows are searched exactly (about 1 ms per 1,000 rows of
384 dims on one core); larger ones go through the HNSW index."""

_EF_SEARCH_MIN = 40  # pgvector's default
_EF_SEARCH_MAX = 1000  # pgvector's upper bound for hnsw.ef_search

Path = Literal["exact", "hnsw"]


@dataclass(frozen=True, slots=True)
class SearchPlan:
    """How :meth:`~memlane.stores.postgres.PostgresStore.vector_candidates` would search (module docstring).

    Attributes:
        path: ``"exact"`` (cosine of every filtered row) or ``"hnsw"`` (the index).
        filtered_rows: Rows passing the filter as far as the rule needed them: an upper bound
            within the exact-search bound (the scope's ``seq`` span, or the count), else the
            count up to that bound + 1.
        plan: PostgreSQL's ``EXPLAIN`` of the search query on that path.
    """

    path: Path
    filtered_rows: int
    plan: str


@dataclass(frozen=True, slots=True)
class VectorSearch:
    """The search statements over one store's episodes table.

    Attributes:
        table: The schema-qualified ``memlane_episodes``.
        meta: The schema-qualified ``memlane_meta`` (holds the index watermark).
        vec: The query vector parameter cast to pgvector's ``vector`` (``%b::ext.vector``).
        ip: pgvector's inner-product operator (``OPERATOR(ext.<#>)``).
        cos: pgvector's cosine-distance operator (``OPERATOR(ext.<=>)``), the HNSW index's.
    """

    table: sql.Composed
    meta: sql.Composed
    vec: sql.Composed
    ip: sql.Composed
    cos: sql.Composed

    def statement(
        self,
        flt: EpisodeFilter,
        q: NDArray[np.float32],
        top_n: int,
        path: Path,
        seq_range: str | None = None,
        part: int = 0,
    ) -> tuple[sql.Composed, list[Any]]:
        """The search statement of one path: ``seq, cosine, created_at_s, importance, part`` rows.

        The inner query finds the ``top_n`` rows; only those get their ``created_at`` seconds
        and importance computed (``extract`` is a ``numeric`` per row: over every filtered row
        of an exact scan it cost about a third of the scan). The caller orders the rows
        (:meth:`~memlane.stores.base.VectorCandidates.top`). ``seq_range`` (from
        :func:`_seq_range`, fixed text around an int) restricts the rows to the indexed part or
        to the tail of the partial HNSW index (:mod:`memlane.stores.postgres.vector_index`).
        ``part`` is a constant column telling the parts of :meth:`search_statement` apart.
        """
        clause, params = where(flt, "embedding IS NOT NULL", *([seq_range] if seq_range else []))
        cosine = sql.SQL("-(embedding {ip} {vec})").format(ip=self.ip, vec=self.vec)
        select = sql.SQL("SELECT seq, {cosine} AS cosine, created_at, importance FROM {t}{where}").format(
            cosine=cosine, t=self.table, where=clause
        )
        order: sql.Composable
        if path == "exact":  # a derived sort key: the HNSW index can never serve it
            order = sql.SQL(" ORDER BY cosine DESC, seq LIMIT %s")
        else:
            order = sql.SQL(" ORDER BY embedding {op} {vec} LIMIT %s").format(op=self.cos, vec=self.vec)
        found = sql.SQL(
            "SELECT s.seq, s.cosine, extract(epoch FROM s.created_at)::float8, "
            "coalesce(s.importance, 'NaN'::float8), {part} FROM ({inner}) AS s"
        ).format(inner=select + order, part=sql.Literal(int(part)))
        vec = VectorParam(q)
        return found, [vec, *params, *([vec] if path == "hnsw" else []), top_n]

    def _seq_span(self, flt: EpisodeFilter) -> tuple[sql.Composed, list[Any]]:
        """An upper bound of the rows passing ``flt``: ``max(seq) - min(seq) + 1`` of its scope (0 if empty).

        Two index probes: of ``ix_memlane_episodes_session_seq`` when ``flt`` names a tenant and a
        session, else of the ``seq`` index over the whole table. ``seq`` values are unique
        integers and every row passing ``flt`` lies in that range, so no more of them exist.
        """
        scope: sql.Composable = sql.SQL("")
        params: list[Any] = []
        if flt.tenant_id is not None and flt.session_id is not None:
            scope = sql.SQL(" WHERE tenant_id = %s AND session_id = %s")
            params = [flt.tenant_id, flt.session_id]
        span = sql.SQL(
            "coalesce((SELECT max(seq) FROM {t}{scope}) - (SELECT min(seq) FROM {t}{scope}) + 1, 0)"
        ).format(t=self.table, scope=scope)
        return span, params * 2

    def bound_statement(self, flt: EpisodeFilter, bound: int) -> tuple[sql.Composed, list[Any]]:
        """The statement of step 1: ``(filtered rows up to bound + 1, watermark)``, one row.

        The count runs only when the scope's ``seq`` span exceeds ``bound``; the watermark of the
        partial HNSW index rides along (one round trip). The count of the default recall filter
        (scope, not archived, still valid) is an index-only scan of ``ix_memlane_episodes_session_seq``,
        which carries those columns (schema migration 19).
        """
        clause, params = where(flt)
        span, span_params = self._seq_span(flt)
        statement = sql.SQL(
            "SELECT CASE WHEN u.span <= %s THEN u.span ELSE "
            "(SELECT count(*) FROM (SELECT 1 FROM {t}{where} LIMIT %s) AS filtered) END, "
            "(SELECT value::bigint FROM {meta} WHERE key = %s) "
            "FROM (SELECT {span} AS span) AS u"
        ).format(t=self.table, meta=self.meta, where=clause, span=span)
        return statement, [bound, *params, bound + 1, WATERMARK_KEY, *span_params]

    def choose_path(
        self,
        cur: psycopg.Cursor[Any],
        flt: EpisodeFilter,
        q: NDArray[np.float32],
        top_n: int,
        exact_search_limit: int,
    ) -> tuple[Path, int, int | None]:
        """Bound the filtered rows and pick the path (rule in the module docstring).

        When the scope's ``seq`` span (:meth:`_seq_span`) is within the bound, so is the filtered
        set and nothing is counted; otherwise the filtered rows are counted up to the bound + 1
        (the ``CASE`` runs the count only then). Same path either way.

        Returns:
            ``(path, filtered rows, watermark)``: the filtered rows (at most the bound: the span,
            an upper bound; above it: the count, ``bound + 1``), and the watermark ``W`` of the
            partial HNSW index (it holds ``seq <= W``), or ``None`` for a full index (no tail).
        """
        bound = max(exact_search_limit, top_n)
        statement, params = self.bound_statement(flt, bound)
        row = cur.execute(statement, params, prepare=False).fetchone()
        filtered = int(row[0]) if row else 0
        watermark = None if row is None or row[1] is None else int(row[1])
        if filtered <= bound or not np.any(q):
            return "exact", filtered, watermark
        return "hnsw", filtered, watermark

    def search_statement(
        self, flt: EpisodeFilter, q: NDArray[np.float32], top_n: int, path: Path, watermark: int | None
    ) -> tuple[sql.Composed, list[Any]]:
        """The one statement of a path: exact (``top_n + 1`` rows), or HNSW with the exact tail.

        On the HNSW path with a partial index, the index's ``top_n`` of ``seq <= W`` (``part``
        0) and the exact ``top_n`` of the tail ``seq > W`` (``part`` 1) are the two branches of
        one ``UNION ALL``, each planned on its own (one round trip instead of two).
        """
        if path == "exact":
            return self.statement(flt, q, top_n + 1, "exact")
        index, params = self.statement(flt, q, top_n, "hnsw", _seq_range(watermark, tail=False))
        if watermark is None:
            return index, params
        tail, tail_params = self.statement(flt, q, top_n, "exact", _seq_range(watermark, tail=True), part=1)
        return sql.SQL("({}) UNION ALL ({})").format(index, tail), [*params, *tail_params]

    def run(
        self,
        cur: psycopg.Cursor[Any],
        flt: EpisodeFilter,
        q: NDArray[np.float32],
        top_n: int,
        exact_search_limit: int,
    ) -> tuple[list[Any], bool]:
        """Search by the rule: the ``(seq, cosine, created_at_s, importance, part)`` rows, and ``exhaustive``.

        On the HNSW path with a partial index, the rows are the index's ``top_n`` of ``seq <= W``
        and the exact ``top_n`` of the tail ``seq > W`` (up to ``2 * top_n`` rows; the
        caller's :meth:`~memlane.stores.base.VectorCandidates.top` keeps the best ``top_n``). The
        exact path asks for ``top_n + 1`` rows: fewer came back exactly when every filtered row
        with a vector did (``exhaustive``), and the caller's ``top`` drops the extra one.
        """
        path, _, watermark = self.choose_path(cur, flt, q, top_n, exact_search_limit)
        if path == "hnsw":
            with hnsw_settings(cur, top_n):
                statement, params = self.search_statement(flt, q, top_n, path, watermark)
                rows = cur.execute(statement, params, prepare=False).fetchall()
            if sum(1 for r in rows if r[4] == 0) >= top_n:
                return rows, False
            logger.debug("HNSW scan returned < %d rows: falling back to exact search", top_n)
            path = "exact"
        statement, params = self.search_statement(flt, q, top_n, path, watermark)
        rows = cur.execute(statement, params, prepare=False).fetchall()
        return rows, len(rows) <= top_n

    def explain(
        self,
        cur: psycopg.Cursor[Any],
        flt: EpisodeFilter,
        q: NDArray[np.float32],
        top_n: int,
        exact_search_limit: int,
        *,
        analyze: bool,
    ) -> SearchPlan:
        """The path :meth:`run` would take, with PostgreSQL's ``EXPLAIN`` (``ANALYZE`` runs it).

        On the HNSW path with a partial index the plan holds the index scan and the tail scan.
        """
        path, filtered, watermark = self.choose_path(cur, flt, q, top_n, exact_search_limit)
        statement, params = self.search_statement(flt, q, top_n, path, watermark)
        prefix = sql.SQL("EXPLAIN (ANALYZE, BUFFERS) " if analyze else "EXPLAIN ")
        with hnsw_settings(cur, top_n):
            rows = cur.execute(prefix + statement, params, prepare=False).fetchall()
        return SearchPlan(path=path, filtered_rows=filtered, plan="\n".join(str(r[0]) for r in rows))


@contextmanager
def hnsw_settings(cur: psycopg.Cursor[Any], top_n: int) -> Iterator[None]:
    """The HNSW scan settings of the module docstring, for the statements of the block.

    ``set_config(..., is_local => true)`` lasts until the transaction ends (no session state,
    so a transaction-pooling proxy is fine). In a transaction already (a connection outside
    autocommit), the settings are one statement of it. On an idle autocommit connection
    the block becomes a transaction whose ``BEGIN`` and settings go in one simple-query message
    (literal values, no user input), committed at the end (rolled back on an error): the
    same round trips as before the bound moved out of a transaction, while the exact path
    needs none.
    """
    ef_search = min(_EF_SEARCH_MAX, max(_EF_SEARCH_MIN, top_n))
    settings = sql.SQL(
        "SELECT set_config('hnsw.ef_search', {ef}, true), "
        "set_config('hnsw.iterative_scan', 'relaxed_order', true)"
    ).format(ef=sql.Literal(str(ef_search)))
    conn = cur.connection
    if not conn.autocommit or conn.info.transaction_status != TransactionStatus.IDLE:
        cur.execute(settings)
        yield
        return
    psycopg.ClientCursor(conn).execute(sql.SQL("BEGIN; ") + settings)  # one message, two statements
    try:
        yield
    except BaseException:
        conn.rollback()
        raise
    conn.commit()


def _seq_range(watermark: int | None, *, tail: bool) -> str | None:
    """The rows of the partial index (``seq <= W``) or of its tail (``seq > W``); ``None``: no watermark.

    The watermark is written into the text (an int, never user input) so that the planner can
    prove the index's predicate ``seq <= W`` from the query's.
    """
    if watermark is None:
        return None
    return f"seq {'>' if tail else '<='} {int(watermark)}"
