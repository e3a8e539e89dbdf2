"""PostgreSQL + pgvector store: many processes and hosts sharing one database.

Install with ``pip install 'memlane[postgres]'`` (psycopg 3 and psycopg-pool); the server
needs the pgvector extension (>= 0.8 for iterative index scans).

Layout (schema migrations in :mod:`memlane.stores.postgres.migrations`; the pool, the schema
at open, transactions and error translation in :mod:`memlane.stores.postgres.connection`):

* Everything lives in one Postgres schema in tables prefixed ``memlane_``; no statement
  depends on ``search_path`` or session state, so the store works through PgBouncer.
* Episodes are append-only rows keyed by ``seq`` (``bigint`` identity; the opaque row key
  of :meth:`PostgresStore.vector_candidates` and :meth:`PostgresStore.fetch`). Tags are a
  ``text[]`` in the same row with a GIN index; an AND filter is ``tags @> $1``.
  ``created_at`` is ``timestamptz`` (microseconds, like Python). Metadata is ``json``
  (kept verbatim, so it round-trips exactly like the SQLite store's).
* Schema changes are numbered migrations, applied at open in one transaction under
  ``pg_advisory_xact_lock``; applied numbers are rows of ``memlane_schema_migrations``.
* The vector column is created untyped (``vector``). The first
  :meth:`PostgresStore.bind_embedding_model` records ``(model_id, dims)`` in
  ``memlane_meta`` and, in the same transaction, types the column ``vector(dims)`` and
  builds an HNSW index with ``vector_cosine_ops`` (when ``dims <= 2000``, pgvector's
  limit), partial up to a watermark: writes skip it, the rows after the watermark are
  searched exactly, and :meth:`PostgresStore.optimize` folds them in
  (:mod:`memlane.stores.postgres.vector_index`). A later bind with another model or dimension raises
  :class:`~memlane.errors.EmbeddingModelMismatchError`.

Vector search is exact over small filtered sets and uses the HNSW index over large ones; the
rule and its guarantees are in :mod:`memlane.stores.postgres.vector_search`.
Filters are composed in :mod:`memlane.stores.postgres.filters`, the lifecycle statements
(supersede, merge, archive, delete) live in :mod:`memlane.stores.postgres.lifecycle`.

Statements whose best plan depends on the filter values (lookups, counts, searches, deletes)
are sent unprepared (``prepare=False``): PostgreSQL plans each with its actual values.
Keyword search: in-memory postings caught up by snapshot diffs
(:mod:`memlane.stores.postgres.postings`), or BM25 in the server (:mod:`memlane.stores.postgres.fts`,
``keyword_index=False``). Retrieval counts are buffered
(:mod:`memlane.stores.retrievals`) and added up in ``memlane_retrievals``, off the episode rows
(:func:`memlane.stores.postgres.lifecycle.record_retrievals`). Every ``psycopg``/``psycopg_pool``
exception is translated into :class:`~memlane.errors.StoreError` (or a subclass), the original
chained as ``__cause__``.
"""

from __future__ import annotations

import json
import logging
import numbers
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

import numpy as np
import psycopg
from numpy.typing import NDArray
from psycopg import sql
from psycopg_pool import ConnectionPool

import memlane.stores.postgres.facets as facets
import memlane.stores.postgres.filters as filters
import memlane.stores.postgres.lifecycle as lifecycle
from memlane.errors import EmbeddingModelMismatchError, StoreError, ValidationError
from memlane.models import Episode
from memlane.stores.base import (
    EpisodeFilter,
    IndexReport,
    KeywordCandidates,
    LinkedEpisodes,
    Neighbours,
    StoreStats,
    VectorCandidates,
    check_metadata_path,
)
from memlane.stores.common import (
    EpisodeBatch,
    EpisodeStoreBase,
    check_binding,
    check_values_limit,
    checked_metadata_value,
    decoded_distinct,
    paginate,
    store_stats,
)
from memlane.stores.keyword_postings import indexed_neighbours
from memlane.stores.postgres.base import CODEC, VectorParam, key_array, reject_nul, reject_nul_episodes
from memlane.stores.postgres.connection import PostgresConnection
from memlane.stores.postgres.fts import keyword_search
from memlane.stores.postgres.graph import LINK_TABLE, PostgresGraphStore, linked_episodes
from memlane.stores.postgres.ingest import copy_episodes, copy_types
from memlane.stores.postgres.migrations import BIND_LOCK_KEY, bind_vector_statements, read_version
from memlane.stores.postgres.neighbours import neighbours_statement
from memlane.stores.postgres.postings import (
    PostgresKeywordIndex,
    current_snapshot,
    optimistic_keyword_search,
    postings_keyword_search,
)
from memlane.stores.postgres.reembed import PostgresReembed
from memlane.stores.postgres.sessions import PostgresSessionStore
from memlane.stores.postgres.vector_index import HNSW_MAX_DIMS, INDEX, fold, fold_due, has_index, tail_span
from memlane.stores.postgres.vector_search import DEFAULT_EXACT_SEARCH_LIMIT, SearchPlan
from memlane.stores.retrievals import BufferedRetrievals, Pending, RetrievalBuffer

__all__ = ["DEFAULT_EXACT_SEARCH_LIMIT", "PostgresStore", "SearchPlan"]

logger = logging.getLogger(__name__)

_PGVECTOR_MAX_DIMS = 16_000  # the largest vector(n) pgvector accepts
_TERMS_AT = -2
"""Position of the ``terms`` column in :meth:`~memlane.stores.common.RowCodec.episode_row`'s tuples
(``token_count`` follows it; ``tenant_id`` and ``session_id`` are at 1 and 2)."""
_COLUMNS = sql.SQL(
    "seq, id, tenant_id, session_id, event_type, content, tags, importance, created_at, metadata, "
    "embedding_model, valid_from, valid_until, recorded_at, invalidated_at, superseded_by, supersede_reason, "
    "archived_at, session_scoped, retrieve_count + coalesce(added_retrievals, 0), "
    "greatest(last_retrieved_at, added_last_retrieved_at)"
)
"""An episode's columns as :meth:`~memlane.stores.common.RowCodec.episode` reads them, from the
episodes joined to their retrievals (``self._episodes``): the counts written at insert plus those
added since (:func:`memlane.stores.postgres.lifecycle.record_retrievals`; ``greatest`` ignores nulls)."""


class PostgresStore(PostgresConnection, BufferedRetrievals, EpisodeStoreBase):
    """Episodes in a PostgreSQL database with pgvector.

    Args:
        url_or_pool: A libpq connection string or URL (``postgresql://user@host/db``) -- the
            store then opens and owns a :class:`psycopg_pool.ConnectionPool` -- or an
            existing ``ConnectionPool`` (the store borrows connections and never closes it;
            its connections may be in any autocommit mode).
        schema: Postgres schema for the ``memlane_*`` tables (created if missing); a plain
            identifier (letters, digits, ``_``; at most 63 characters, case-sensitive).
            Default: the connection's ``current_schema()``.
        min_size: Connections the owned pool keeps open (ignored for a given pool).
        max_size: Most connections the owned pool opens (ignored for a given pool).
        timeout_s: Seconds to wait for a free pooled connection before failing, and the
            connect timeout of new connections (owned pool only).
        connect_kwargs: Extra ``psycopg.connect`` arguments for the owned pool's
            connections, e.g. ``{"prepare_threshold": None}`` behind a PgBouncer older
            than 1.21 in transaction mode.
        exact_search_limit: Filtered sets up to this many rows are searched exactly; larger
            ones through the HNSW index (see :mod:`memlane.stores.postgres.vector_search`). >= 0.
        keyword_index: Answer keyword searches from in-memory postings of the schema's rows, caught
            up per search by what committed since (:mod:`memlane.stores.postgres.postings`: the same
            rows, order and scores as the server-side path); ``False``: BM25 in the server
            (:mod:`memlane.stores.postgres.fts`). Default on.

    Raises:
        ValidationError: a bad ``schema`` name or pool size.
        SchemaVersionError: the schema was written by a newer memlane.
        StoreError: the server cannot be reached, the pgvector extension is missing and
            cannot be created, or the schema holds non-memlane tables of the same name.
    """

    def __init__(
        self,
        url_or_pool: str | ConnectionPool[Any],
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 10,
        timeout_s: float = 30.0,
        connect_kwargs: Mapping[str, Any] | None = None,
        exact_search_limit: int = DEFAULT_EXACT_SEARCH_LIMIT,
        keyword_index: bool = True,
    ) -> None:
        if exact_search_limit < 0:
            raise ValidationError(f"exact_search_limit must be >= 0, got {exact_search_limit}")
        self.exact_search_limit = int(exact_search_limit)
        self._binding: tuple[str, int] | None = None
        self._retrievals = RetrievalBuffer()
        super().__init__(
            url_or_pool,
            schema=schema,
            min_size=min_size,
            max_size=max_size,
            timeout_s=timeout_s,
            connect_kwargs=connect_kwargs,
        )
        deletions = sql.SQL("{}.memlane_deletions").format(self._schema)
        self._keyword_index = (
            PostgresKeywordIndex(self._t, deletions, self._common_terms) if keyword_index else None
        )

    # -- embedding model binding -------------------------------------------------------

    @property
    def embedding_model(self) -> tuple[str, int] | None:
        """``(model_id, dims)`` the store is bound to, or ``None`` if not bound yet."""
        if self._binding is not None:
            return self._binding
        with self._transaction("embedding_model") as cur:
            self._binding = self._read_binding(cur)
        return self._binding

    def _read_binding(self, cur: psycopg.Cursor[Any]) -> tuple[str, int] | None:
        rows = dict(
            cur.execute(
                sql.SQL(
                    "SELECT key, value FROM {meta} WHERE key IN ('embedding_model', 'embedding_dims')"
                ).format(meta=self._meta)
            ).fetchall()
        )
        if "embedding_model" not in rows:
            return None
        return str(rows["embedding_model"]), int(rows["embedding_dims"])

    def bind_embedding_model(self, model_id: str, dims: int) -> None:
        """Record ``(model_id, dims)`` on first use; refuse a different one later.

        The first binding also types the vector column ``vector(dims)`` and builds the (partial)
        HNSW index (one transaction, under an advisory lock, so concurrent first binds agree).

        Args:
            model_id: The embedder's model id.
            dims: Its vector dimension (>= 1).

        Raises:
            EmbeddingModelMismatchError: the store is bound to another model or dimension,
                or holds vectors of another dimension.
            ValidationError: ``dims`` is not an int from 1 to 16,000 (pgvector's limit).
            StoreError: the database failed.
        """
        if (
            isinstance(dims, bool)
            or not isinstance(dims, numbers.Integral)
            or not 1 <= dims <= _PGVECTOR_MAX_DIMS
        ):
            raise ValidationError(f"dims must be an int from 1 to {_PGVECTOR_MAX_DIMS}, got {dims!r}")
        dims = int(dims)
        if self._binding == (model_id, dims):
            return
        self._binding = None  # re-read below: a re-embedding switch may have rebound the store
        with self._transaction("bind_embedding_model") as cur:
            bound = self._read_binding(cur)
            if bound is None:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (BIND_LOCK_KEY,))
                bound = self._read_binding(cur)  # re-read under the lock
            if bound is None:
                try:
                    with cur.connection.transaction():
                        for statement in bind_vector_statements(dims):
                            cur.execute(
                                statement.format(
                                    schema=self._schema, ext=self._ext, dims=sql.Literal(int(dims))
                                )
                            )
                        fold(cur, schema=self._schema, ext=self._ext, dims=dims)
                except psycopg.errors.DataException as exc:
                    raise EmbeddingModelMismatchError(
                        f"{self.location} already holds vectors that are not {dims}-dimensional: {exc}"
                    ) from exc
                cur.executemany(
                    sql.SQL("INSERT INTO {meta} (key, value) VALUES (%s, %s)").format(meta=self._meta),
                    [("embedding_model", model_id), ("embedding_dims", str(int(dims)))],
                )
                if dims > HNSW_MAX_DIMS:
                    logger.warning(
                        "%d dims exceed pgvector's HNSW limit (%d): every vector search on %s is exact",
                        dims,
                        HNSW_MAX_DIMS,
                        self.location,
                    )
                bound = (model_id, int(dims))
        self._binding = bound
        check_binding(self.location, bound, model_id, dims)

    # -- writes ------------------------------------------------------------------------

    def _write_episodes(self, batch: EpisodeBatch) -> None:
        """:meth:`insert` and :meth:`merge`: one transaction, one binary ``COPY`` (:mod:`.ingest`)."""
        episodes, supersessions, merge = batch.episodes, batch.supersessions, batch.merge
        params: list[VectorParam | None] = (
            [None] * len(episodes) if batch.vectors is None else [VectorParam(row) for row in batch.vectors]
        )
        reject_nul_episodes(episodes)
        rows = CODEC.episode_rows(episodes, params)
        reject_nul(sup.reason for sup in supersessions)
        pending = self._retrievals.take()
        try:
            with self._transaction("insert") as cur:
                lifecycle.refuse_taken_ids(cur, self._t, [ep.id for ep in episodes])
                copy_episodes(cur, self._copy, copy_types(self._vector_oid), rows)
                lifecycle.add_keyword_stats(
                    cur,
                    (self._scope_stats_pending, self._term_df_pending),
                    ((r[1], r[2], r[_TERMS_AT], r[_TERMS_AT + 1]) for r in rows),
                )
                lifecycle.retire(cur, self._t, supersessions)
                if merge is not None:
                    lifecycle.archive_merged(cur, self._t, merge)
                lifecycle.record_retrievals(cur, (self._t, self._retrieved), pending)
                due = batch.vectors is not None and fold_due(*tail_span(cur, self._t, self._meta))
        except BaseException:
            self._retrievals.put_back(pending)
            raise
        if due:  # the batch is committed; the fold is a transaction of its own
            try:
                self._fold(maintenance_work_mem=None, only_if_indexed=True)
            except StoreError as exc:  # the batch is stored: the next write or optimize() folds
                logger.warning("%s: folding the vector index tail failed: %s", self.location, exc)

    def _fold(self, *, maintenance_work_mem: str | None, only_if_indexed: bool) -> tuple[int, bool] | None:
        """Fold the tail into the HNSW index (:func:`~memlane.stores.postgres.vector_index.fold`).

        ``only_if_indexed``: leave a store whose index was dropped (``drop_vector_index``) alone.
        Returns ``(watermark, built now)``, or ``None`` (not bound, over 2,000 dims, or left alone).
        """
        bound = self.embedding_model
        if bound is None:
            return None
        with self._transaction("fold_vector_index") as cur:
            if only_if_indexed and not has_index(cur, self._schema):
                return None
            return fold(
                cur,
                schema=self._schema,
                ext=self._ext,
                dims=bound[1],
                maintenance_work_mem=maintenance_work_mem,
            )

    def optimize(self) -> IndexReport:
        """Fold the unindexed tail into the HNSW index now (:mod:`memlane.stores.postgres.vector_index`).

        After a bulk ingest, so that recalls search the new rows through the index instead of
        scanning them exactly; then vacuums the episodes table (:meth:`_vacuum`). The fold is a
        no-op when the tail is empty; before a model is bound or above
        2,000 dims there is no index. Results never change beyond what an ANN index may change:
        every cosine returned is exact.

        Returns:
            ``IndexReport(vectors=0, ann_rows=<rows with a vector in the index>, ann_trained=<built now>)``.

        Raises:
            StoreError: the database failed.
        """
        bound = self.embedding_model
        if bound is None or bound[1] > HNSW_MAX_DIMS:
            return IndexReport(vectors=0)
        with self._transaction("optimize") as cur:
            folded = fold(cur, schema=self._schema, ext=self._ext, dims=bound[1])
            watermark, built = folded if folded is not None else (0, False)
            indexed = cur.execute(
                sql.SQL("SELECT count(embedding) FROM {t} WHERE seq <= %s").format(t=self._t), (watermark,)
            ).fetchone()
        self._vacuum()
        return IndexReport(vectors=0, ann_rows=int(indexed[0]) if indexed else 0, ann_trained=built)

    def _vacuum(self) -> None:
        """``VACUUM (ANALYZE)`` the episodes table, as autovacuum would later (part of :meth:`optimize`).

        After a bulk ingest the new pages are not yet all-visible, so the planner cannot use the
        index-only scan of the vector search's bounded count (schema migration 19) and scans the
        heap; vacuuming sets the visibility map and refreshes the statistics now. ``VACUUM`` cannot
        run in a transaction: a borrowed connection outside autocommit is switched for it and back.
        """
        statement = sql.SQL("VACUUM (ANALYZE) {t}").format(t=self._t)
        with self._translate("optimize"), self._pool.connection(timeout=self._timeout) as conn:
            autocommit = conn.autocommit
            conn.autocommit = True
            try:
                conn.execute(statement)
            finally:
                conn.autocommit = autocommit

    def delete_created_before(
        self, cutoff: datetime, keep_importance_from: float | None = None, tenant_id: str | None = None
    ) -> int:
        """Delete every episode with ``created_at < cutoff`` (of ``tenant_id``, or all); return the count.

        One indexed range ``DELETE`` (``ix_memlane_episodes_time``); tags live in the same row.
        Episodes rated ``>= keep_importance_from`` (never-forget) are kept.
        """
        with self._transaction("delete_created_before") as cur:
            return lifecycle.delete_created_before(cur, self._t, cutoff, keep_importance_from, tenant_id)

    def archive(self, episode_ids: Sequence[str], at: datetime) -> int:
        """Set ``archived_at`` on the given not-yet-archived episodes in one ``UPDATE``; return how many."""
        if not episode_ids:
            return 0
        with self._transaction("archive") as cur:
            return lifecycle.archive(cur, self._t, episode_ids, at)

    def _write_retrievals(self, pending: Pending, *, soon: bool) -> int | None:
        """Buffered retrieval counts in one upsert of ``memlane_retrievals`` (:class:`BufferedRetrievals`).

        Committed with ``synchronous_commit = off`` (the commit does not wait for the WAL flush).
        """
        with self._transaction("record_retrievals") as cur:
            cur.execute("SET LOCAL synchronous_commit = off")
            return lifecycle.record_retrievals(cur, (self._t, self._retrieved), pending)

    def close(self) -> None:
        """Write buffered retrieval counts, then close the owned connection pool. Idempotent."""
        if not self._closed:
            self._flush_on_close()
        super().close()

    def vectors(self, episode_ids: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        """``{id: float32 [dims] vector}`` of the given episodes that have one (others absent)."""
        if not episode_ids:
            return {}
        with self._transaction("vectors") as cur:
            rows = cur.execute(
                sql.SQL(
                    "SELECT id, embedding::text FROM {t} WHERE embedding IS NOT NULL AND id = ANY(%s::text[])"
                ).format(t=self._t),
                (list(episode_ids),),
                prepare=False,
            ).fetchall()
        return {row[0]: np.asarray(json.loads(row[1]), dtype=np.float32) for row in rows}

    def delete_session_scoped(self, tenant_id: str, session_id: str) -> int:
        """Delete the ``session_scoped`` episodes of one session; return how many."""
        with self._transaction("delete_session_scoped") as cur:
            return lifecycle.delete_session_scoped(cur, self._t, tenant_id, session_id)

    def delete(self, episode_id: str, tenant_id: str | None) -> bool:
        """Delete the episode ``episode_id`` if it belongs to ``tenant_id`` (``None``: any tenant).

        One ``DELETE`` by the unique id (tags and vector are in the same row).

        Returns:
            Whether an episode was deleted (``False`` for an unknown id and for another
            tenant's episode alike).

        Raises:
            StoreError: the database failed.
        """
        with self._transaction("delete") as cur:
            return lifecycle.delete(cur, self._t, episode_id, tenant_id)

    # -- reads -------------------------------------------------------------------------

    def list_recent(self, flt: EpisodeFilter, limit: int) -> list[Episode]:
        """Up to ``limit`` episodes passing ``flt``, newest ``created_at`` first (ties: newest insert).

        Metadata conditions on the value index read it (:func:`memlane.stores.postgres.filters.value_sql`).
        """
        where, params = filters.where(flt, values=self._values)
        query = sql.SQL("SELECT {cols} FROM {t}{where} ORDER BY created_at DESC, seq DESC LIMIT %s").format(
            cols=_COLUMNS, t=self._episodes, where=where
        )
        with self._transaction("list_recent") as cur:
            return [
                CODEC.episode(r) for r in cur.execute(query, [*params, int(limit)], prepare=False).fetchall()
            ]

    def get(self, episode_id: str) -> Episode | None:
        """The episode with ``episode_id``, or ``None``."""
        query = sql.SQL("SELECT {cols} FROM {t} WHERE id = %s").format(cols=_COLUMNS, t=self._episodes)
        with self._transaction("get") as cur:
            row = cur.execute(query, (episode_id,)).fetchone()
        return None if row is None else CODEC.episode(row)

    def fetch(self, keys: Sequence[int]) -> dict[int, Episode]:
        """``{key: episode}`` for row keys from :meth:`vector_candidates` (deleted rows absent)."""
        if len(keys) == 0:
            return {}
        query = sql.SQL("SELECT {cols} FROM {t} WHERE seq = ANY(%s::bigint[])").format(
            cols=_COLUMNS, t=self._episodes
        )
        with self._read("fetch") as cur:
            rows = cur.execute(query, (key_array(keys),)).fetchall()
        return {int(r[0]): CODEC.episode(r) for r in rows}

    def superseded_links(self, episode_ids: Sequence[str]) -> list[Episode]:
        """The episodes superseded by any of ``episode_ids`` (an index lookup on ``superseded_by``)."""
        if not episode_ids:
            return []
        query = sql.SQL("SELECT {cols} FROM {t} WHERE superseded_by = ANY(%s::text[]) ORDER BY seq").format(
            cols=_COLUMNS, t=self._episodes
        )
        with self._transaction("superseded_links") as cur:
            rows = cur.execute(query, (list(episode_ids),)).fetchall()
        return [CODEC.episode(r) for r in rows]

    def count(self, flt: EpisodeFilter) -> int:
        """Number of episodes passing ``flt`` (the value index read as in :meth:`list_recent`)."""
        where, params = filters.where(flt, values=self._values)
        with self._transaction("count") as cur:
            row = cur.execute(
                sql.SQL("SELECT count(*) FROM {t}{where}").format(t=self._t, where=where),
                params,
                prepare=False,
            )
            found = row.fetchone()
        return int(found[0]) if found else 0

    def iter_episodes(self, flt: EpisodeFilter, batch_size: int = 1000) -> Iterator[Episode]:
        """Yield every episode passing ``flt``, oldest first (``created_at``, then insertion).

        Keyset pagination: each batch of ``batch_size`` rows is one short transaction, so no
        connection is held while the caller consumes the episodes.
        """
        where, params = filters.where(flt, "(created_at, seq) > (%s, %s)")
        query = sql.SQL("SELECT {cols} FROM {t}{where} ORDER BY created_at, seq LIMIT %s").format(
            cols=_COLUMNS, t=self._episodes, where=where
        )

        def read(last: tuple[Any, int]) -> list[Any]:
            with self._transaction("iter_episodes") as cur:
                return cur.execute(query, [*params, *last, int(batch_size)], prepare=False).fetchall()

        yield from paginate(read, (datetime(1, 1, 1, tzinfo=UTC), 0), CODEC)

    def metadata_values(self, flt: EpisodeFilter, path: tuple[str, ...], limit: int) -> list[Any]:
        """Distinct JSON values at ``path`` of ``flt``'s episodes (see :meth:`Store.metadata_values`)."""
        check_metadata_path(path)
        check_values_limit(limit)
        where, params = filters.where(flt, "metadata #> %s::text[] IS NOT NULL")
        query = sql.SQL(
            "SELECT DISTINCT (metadata #> %s::text[])::jsonb::text FROM {t}{where} LIMIT %s"
        ).format(t=self._t, where=where)
        with self._transaction("metadata_values") as cur:
            rows = cur.execute(query, [list(path), *params, list(path), int(limit)], prepare=False).fetchall()
        return decoded_distinct((r[0] for r in rows), limit)

    def facet_values(self, tenant_id: str | None, event_type: str, path: tuple[str, ...]) -> list[Any]:
        """Distinct values at a facet path of the active episodes (see :meth:`Store.facet_values`).

        A loose scan of the facet's partial index (:mod:`memlane.stores.postgres.facets`).
        """
        with self._transaction("facet_values") as cur:
            return facets.facet_values(cur, self._t, tenant_id, event_type, path)

    def set_metadata(self, episode_ids: Sequence[str], path: tuple[str, ...], value: Any) -> int:
        """Set ``path`` in the given episodes' metadata in one ``UPDATE`` (see :meth:`Store.set_metadata`)."""
        text = checked_metadata_value(path, value)
        if not episode_ids:
            return 0
        # rows are locked in id order first, so concurrent calls over overlapping ids never deadlock
        query = sql.SQL(
            "WITH locked AS (SELECT id AS locked_id FROM {t} WHERE id = ANY(%s::text[]) "
            "ORDER BY id FOR UPDATE) "
            "UPDATE {t} SET metadata = jsonb_set(metadata::jsonb, %s::text[], %s::jsonb)::json "
            "FROM locked WHERE id = locked_id AND json_typeof("
            + ("metadata #> %s::text[]" if len(path) > 1 else "metadata")
            + ") = 'object'"
        ).format(t=self._t)
        params: list[Any] = [list(episode_ids), list(path), text]
        if len(path) > 1:
            params.append(list(path[:-1]))
        with self._transaction("set_metadata") as cur:
            return cur.execute(query, params, prepare=False).rowcount

    def stats(self, flt: EpisodeFilter) -> StoreStats:
        """Counts, distinct tenants/sessions, per-type counts and time range of ``flt``'s episodes."""
        where, params = filters.where(flt)
        with self._transaction("stats") as cur:
            counts = cur.execute(
                sql.SQL(
                    "SELECT count(*), count(embedding), count(DISTINCT tenant_id), "
                    "count(DISTINCT (tenant_id, session_id)), min(created_at), max(created_at), "
                    "count(*) FILTER (WHERE superseded_by IS NOT NULL OR invalidated_at IS NOT NULL), "
                    "count(*) FILTER (WHERE archived_at IS NOT NULL AND superseded_by IS NULL "
                    "AND invalidated_at IS NULL) FROM {t}{where}"
                ).format(t=self._t, where=where),
                params,
                prepare=False,
            ).fetchone() or (0, 0, 0, 0, None, None, 0, 0)
            types = dict(
                cur.execute(
                    sql.SQL(
                        "SELECT event_type, count(*) FROM {t}{where} GROUP BY event_type ORDER BY 2 DESC"
                    ).format(t=self._t, where=where),
                    params,
                    prepare=False,
                ).fetchall()
            )
            version = read_version(cur.connection, self._schema)
        return store_stats(
            counts,
            types,
            CODEC,
            embedding_model=self.embedding_model,
            schema_version=version,
            location=self.location,
        )

    # -- vector search -----------------------------------------------------------------

    def _query_vector(self, query: NDArray[np.float32]) -> NDArray[np.float32]:
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        bound = self.embedding_model
        if bound is not None and len(q) != bound[1]:
            raise EmbeddingModelMismatchError(f"query has {len(q)} dims, the store is bound to {bound[1]}")
        return q

    def vector_candidates(
        self, flt: EpisodeFilter, query: NDArray[np.float32], top_n: int
    ) -> VectorCandidates:
        """Episodes passing ``flt`` that have vectors, with their cosine to ``query``.

        Exact search over small filtered sets, the HNSW index over large ones (rule in
        :mod:`memlane.stores.postgres.vector_search`), trimmed by :meth:`VectorCandidates.top`.

        Args:
            flt: The filter; no returned row fails it.
            query: float32 ``[dims]`` unit vector.
            top_n: How many of the most similar rows the caller needs (>= 1).

        Returns:
            At most ``top_n`` candidates, best first.

        Raises:
            EmbeddingModelMismatchError: ``query`` has another dimension than the store's vectors.
            StoreError: the database failed.
        """
        q = self._query_vector(query)
        top_n = max(1, int(top_n))
        with self._read("vector_candidates") as cur:  # the HNSW path opens its own transaction
            rows, exhaustive = self._search.run(cur, flt, q, top_n, self.exact_search_limit)
        return VectorCandidates.from_rows(rows, exhaustive=exhaustive).top(top_n)

    def keyword_candidates(self, flt: EpisodeFilter, terms: Sequence[str], top_n: int) -> KeywordCandidates:
        """The best ``top_n`` episodes passing ``flt`` that match any term, by per-scope BM25.

        See :mod:`memlane.stores.postgres.fts` (index, binding of terms) and
        :func:`memlane.bm25.score_matches` (scoring); with the store's ``keyword_index``, the
        in-memory postings answer (:mod:`memlane.stores.postgres.postings`: the same rows and scores),
        without a transaction while nothing committed since their snapshot
        (:func:`~memlane.stores.postgres.postings.optimistic_keyword_search`), else in one that
        catches them up first.

        Raises:
            ValidationError: a term contains a NUL character.
            StoreError: the database failed.
        """
        terms = list(dict.fromkeys(t for t in terms if t))
        if not terms:
            return KeywordCandidates.empty()
        reject_nul(terms)
        index = self._keyword_index
        if index is not None:
            request = (flt, terms, top_n)
            if index.snapshot is not None:  # built: while nothing commits, no transaction is needed
                with self._read("keyword_candidates") as cur:
                    found = optimistic_keyword_search(cur, index, request)
                if found is not None:
                    return found
            with self._transaction("keyword_candidates") as cur:
                return postings_keyword_search(cur, index, request)
        with self._transaction("keyword_candidates") as cur:
            return keyword_search(
                cur, self._t, (self._scope_stats, self._term_df), flt, terms, top_n, self._common_terms
            )

    def linked_episodes(
        self, flt: EpisodeFilter, tenant_id: str, entities: Sequence[str], keys: Sequence[int], extra: int
    ) -> LinkedEpisodes:
        """Graph links of ``keys`` to ``entities`` and up to ``extra`` further linked episodes
        (see :meth:`Store.linked_episodes`; :func:`memlane.stores.postgres.graph.linked_episodes`)."""
        schema, _ = self.sql_names()
        links = sql.SQL("{}.{}").format(schema, sql.Identifier(LINK_TABLE))
        with self._transaction("linked_episodes") as cur:
            return linked_episodes(cur, self._t, links, (flt, tenant_id, entities, keys, max(0, int(extra))))

    def neighbours(self, flt: EpisodeFilter, keys: Sequence[int], radius: int = 2) -> Neighbours:
        """Session, tags and ``radius`` stored neighbours per key (:meth:`Store.neighbours`).

        With the store's ``keyword_index`` (the default), from the in-memory postings
        (:func:`~memlane.stores.keyword_postings.indexed_neighbours`, as SQLite): when a
        statement's snapshot (:func:`~memlane.stores.postgres.postings.current_snapshot`) is the one
        they hold (nothing committed since) they answer as they are; otherwise one transaction
        brings them to its snapshot first
        (:meth:`~memlane.stores.postgres.postings.PostgresKeywordIndex.refresh`: two short
        statements and two index range scans). The neighbours are read in memory. The postings'
        lock is taken with a connection in hand and held for the refresh and the in-memory read
        only, so its holder never waits for the pool (no deadlock with threads that hold
        connections). Without it, one
        statement (:mod:`memlane.stores.postgres.neighbours`): the rows ``seq ± 1 .. radius`` of
        every key in one index scan, an index probe of ``ix_memlane_episodes_session_seq`` only
        where a session's run of rows is broken. Both give the same answer.

        Raises:
            StoreError: the database failed.
        """
        del flt  # the neighbours are the stored turns; the ranking drops non-candidates
        radius = max(1, int(radius))
        if len(keys) == 0:
            return Neighbours.from_rows([], radius)
        index = self._keyword_index
        if index is not None:
            if index.snapshot is not None:
                with self._read("neighbours") as cur:
                    now = current_snapshot(cur)
                with index.lock:
                    if index.snapshot == now:
                        return indexed_neighbours(index.postings, keys, radius)
            with self._transaction("neighbours") as cur, index.lock:
                return indexed_neighbours(index.refresh(cur), keys, radius)
        statement = neighbours_statement(self._t, radius)
        with self._read("neighbours") as cur:
            rows = cur.execute(statement, {"keys": key_array(keys)}).fetchall()
        return Neighbours.from_rows(rows, radius)

    def explain_vector_candidates(
        self, flt: EpisodeFilter, query: NDArray[np.float32], top_n: int, *, analyze: bool = False
    ) -> SearchPlan:
        """Say which path :meth:`vector_candidates` would take, with PostgreSQL's plan.

        A diagnostic for operators and tests; runs the same bounded count and settings.

        Args:
            flt: The filter.
            query: float32 ``[dims]`` unit vector.
            top_n: As for :meth:`vector_candidates`.
            analyze: Run the query (``EXPLAIN ANALYZE``) to get actual row counts and times.

        Raises:
            StoreError: the database failed.
        """
        q = self._query_vector(query)
        top_n = max(1, int(top_n))
        with self._transaction("explain_vector_candidates") as cur:
            return self._search.explain(cur, flt, q, top_n, self.exact_search_limit, analyze=analyze)

    # -- vector index maintenance ------------------------------------------------------

    def drop_vector_index(self) -> None:
        """Drop the HNSW index (searches stay correct, but exact and slower).

        Writes no longer need it dropped (they skip the partial index); while it is missing no
        write folds the tail into a new one: :meth:`build_vector_index` or :meth:`optimize` does.

        Raises:
            StoreError: the database failed.
        """
        with self._transaction("drop_vector_index") as cur:
            cur.execute(sql.SQL("DROP INDEX IF EXISTS {}.{}").format(self._schema, sql.Identifier(INDEX)))

    def build_vector_index(self, *, maintenance_work_mem: str | None = "1GB") -> None:
        """Build the HNSW index over every stored row if it is missing or has a tail (a fold).

        No-op before a model is bound or above 2,000 dims. See
        :mod:`memlane.stores.postgres.vector_index`.

        Args:
            maintenance_work_mem: Memory for the build, a Postgres size such as ``"1GB"``
                (set for this transaction only; the graph should fit in it), or ``None``
                to size it from the table (at most 1 GB).

        Raises:
            StoreError: the database failed.
        """
        self._fold(maintenance_work_mem=maintenance_work_mem, only_if_indexed=False)

    # -- companion stores ----------------------------------------------------------------

    @cached_property
    def session_store(self) -> PostgresSessionStore:
        """Session episodes in the same schema (:mod:`memlane.stores.postgres.sessions`)."""
        return PostgresSessionStore(self)

    @cached_property
    def graph_store(self) -> PostgresGraphStore:
        """Entities and facts in the same schema (:mod:`memlane.stores.postgres.graph`)."""
        return PostgresGraphStore(self)

    @cached_property
    def reembed_backend(self) -> PostgresReembed:
        """Embedding model migration in the same schema (:mod:`memlane.stores.postgres.reembed`)."""
        return PostgresReembed(self)

    def forget_binding(self) -> None:
        """Drop the cached ``(model_id, dims)`` so the next use re-reads it (after a re-embedding switch)."""
        self._binding = None

    def __repr__(self) -> str:
        return f"PostgresStore({self.location!r})"
