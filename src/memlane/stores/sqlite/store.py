"""SQLite store: the embedded default, one file, zero servers (stdlib ``sqlite3``).

* Connections (one per thread, WAL, busy timeout), the schema at open (numbered migrations
  in :mod:`memlane.stores.sqlite.migrations`) and error translation live in
  :mod:`memlane.stores.sqlite.connection`; filters in :mod:`memlane.stores.sqlite.filters`.
* Episodes are append-only; tags are also kept in ``episode_tags (tag, seq)`` so AND
  filters are index lookups.
* Vectors are float32 little-endian blobs with the id of the model that made them.
  Vector search (:mod:`memlane.stores.sqlite.vectors`) runs in numpy over an in-memory
  :class:`~memlane.stores.sqlite.vector_index.VectorIndex` refreshed incrementally by ``seq``; any
  deletion -- or update of a filtered column: superseding (``valid_until``/``invalidated_at``)
  and archiving (``archived_at``) -- bumps a ``delete_generation`` counter that makes every
  process rebuild its copy. The copy is saved beside the file (``<db>.vectors``, memory-mapped
  on open) for a cold start without reading every vector, and filtered sets above
  ``ann_threshold`` rows are searched with an IVF index (``<db>.ivf``, :mod:`memlane.stores.sqlite.ann`).
  Retrieval bookkeeping (``retrieve_count``/``last_retrieved_at_us``, migration 7) is not
  held by the index and does not bump it.
* Bi-temporal columns (schema migration 5): ``valid_from_us``/``valid_until_us`` (valid time)
  and ``recorded_at_us``/``invalidated_at_us`` (transaction time), ``superseded_by`` and
  ``supersede_reason``; forgetting columns (migration 6): ``archived_at_us``, ``session_scoped``.
* Keyword search: an FTS5 index over the analysed ``terms``, filled set-based by each insert
  transaction and kept in step on delete/update by triggers (:mod:`memlane.stores.sqlite.fts`).
* Every ``sqlite3`` exception is translated into :class:`memlane.errors.StoreError`.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from functools import cache, cached_property
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

import memlane.stores.sqlite.facets as facets
import memlane.stores.sqlite.filters as filters
from memlane.errors import DuplicateEpisodeError
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
    MergeInto,
    check_binding,
    check_superseded,
    check_values_limit,
    checked_metadata_value,
    decoded_distinct,
    paginate,
    store_stats,
    supersede_params,
)
from memlane.stores.common_terms import CommonTermFilter, statistics_scope
from memlane.stores.keyword_postings import indexed_neighbours
from memlane.stores.retrievals import BufferedRetrievals, Pending, RetrievalBuffer
from memlane.stores.sqlite.ann import ANN_THRESHOLD
from memlane.stores.sqlite.base import (
    CODEC,
    SnapshotMemo,
    bump_generation,
    encode_vectors,
    in_chunks,
    opt_us,
    to_us,
)
from memlane.stores.sqlite.connection import SQLiteConnection
from memlane.stores.sqlite.fts import KeywordIndex, index_new_rows, indexed_keyword_search, keyword_search
from memlane.stores.sqlite.graph import SQLiteGraphStore, linked_episodes
from memlane.stores.sqlite.neighbours import stored_neighbours
from memlane.stores.sqlite.reembed import SQLiteReembed
from memlane.stores.sqlite.sessions import SQLiteSessionStore
from memlane.stores.sqlite.vector_index import RowFilter
from memlane.stores.sqlite.vectors import SIDECAR_MIN_ROWS, SQLiteVectors

__all__ = ["SQLiteStore"]

logger = logging.getLogger(__name__)

_COLUMNS = (
    "seq, id, tenant_id, session_id, event_type, content, tags, importance, "
    "created_at_us, metadata, embedding_model, valid_from_us, valid_until_us, recorded_at_us, "
    "invalidated_at_us, superseded_by, supersede_reason, archived_at_us, session_scoped, "
    "retrieve_count, last_retrieved_at_us"
)
_GENERATION = "delete_generation"
"""``store_meta`` counter bumped by every deletion and every update of an indexed column."""

_SUPERSEDE = (
    "UPDATE episodes SET valid_until_us = ?, invalidated_at_us = ?, superseded_by = ?, "
    "supersede_reason = ? WHERE id = ? AND superseded_by IS NULL"
)


_INSERT_HEAD = (
    "INSERT INTO episodes (id, tenant_id, session_id, event_type, content, tags, importance, "
    "created_at_us, metadata, embedding, embedding_model, valid_from_us, valid_until_us, recorded_at_us, "
    "invalidated_at_us, superseded_by, supersede_reason, archived_at_us, session_scoped, retrieve_count, "
    "last_retrieved_at_us, terms, token_count) VALUES "
)
_INSERT_ROW = "(" + ", ".join("?" * 23) + ")"
_INSERT_CHUNK = 512
"""Rows per multi-row ``INSERT`` (23 parameters each: 11,776, under SQLite's 32,766)."""


@cache
def _insert_sql(rows: int) -> str:
    """The ``INSERT`` of ``rows`` rows in one ``VALUES`` list."""
    return _INSERT_HEAD + ",".join([_INSERT_ROW] * rows)


def _insert_rows(conn: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert episode rows, in order, with multi-row ``INSERT`` statements.

    One statement per :data:`_INSERT_CHUNK` rows and the rest in power-of-two chunks, so a
    connection prepares at most ten statement texts (``sqlite3`` caches them) and runs about
    ``len(rows) / 512`` statements instead of one per row: the per-statement work (reset,
    ``AUTOINCREMENT`` bookkeeping) is paid per chunk. The rows of one ``VALUES`` list are
    inserted in list order, so ``seq`` follows the batch's order.
    """
    start, total = 0, len(rows)
    while start < total:
        size = min(_INSERT_CHUNK, 1 << ((total - start).bit_length() - 1))
        conn.execute(_insert_sql(size), list(chain.from_iterable(rows[start : start + size])))
        start += size


BOOKKEEPING_BUSY_MS = 20
"""Longest wait (ms) of retrieval bookkeeping for another writer's lock before deferring."""


def _read_binding(conn: sqlite3.Connection) -> tuple[str, int] | None:
    rows = dict(
        conn.execute("SELECT key, value FROM store_meta WHERE key IN ('embedding_model', 'embedding_dims')")
    )
    if "embedding_model" not in rows:
        return None
    return rows["embedding_model"], int(rows["embedding_dims"])


def _apply_retrievals(conn: sqlite3.Connection, pending: Pending) -> int:
    """Add buffered retrieval counts in the caller's write transaction; return rows given."""
    if pending:
        conn.executemany(
            "UPDATE episodes SET retrieve_count = retrieve_count + ?, "
            "last_retrieved_at_us = max(coalesce(last_retrieved_at_us, ?), ?) WHERE seq = ?",
            [(count, to_us(last), to_us(last), seq) for seq, (count, last) in pending.items()],
        )
    return len(pending)


def _keys(rows: Iterable[Sequence[Any]]) -> NDArray[np.int64]:
    """The first column of ``rows`` as a read-only int64 array."""
    keys = np.fromiter((r[0] for r in rows), dtype=np.int64)
    keys.flags.writeable = False
    return keys


def _row_filter(flt: EpisodeFilter, allowed: NDArray[np.int64] | None) -> RowFilter:
    """``flt`` in the vector index's units (Unix microseconds), restricted to ``allowed`` row keys."""
    return RowFilter(
        tenant_id=flt.tenant_id,
        session_id=flt.session_id,
        event_type=flt.event_type,
        created_after_us=opt_us(flt.created_after),
        created_before_us=opt_us(flt.created_before),
        allowed_seqs=allowed,
        valid_at_us=opt_us(flt.valid_at),
        still_valid_at_us=opt_us(flt.still_valid_at),
        recorded_by_us=opt_us(flt.recorded_by),
        current_at_us=opt_us(flt.current_at),
        exclude_archived=flt.exclude_archived,
        retained_after_us=opt_us(flt.retained_after),
        never_forget_from=flt.never_forget_from,
    )


def _archive_merged(conn: sqlite3.Connection, merge: MergeInto) -> int:
    """Archive a merge's originals into the merged episode; return how many rows changed."""
    changed = 0
    for chunk, marks in in_chunks(merge.original_ids):
        changed += conn.execute(
            "UPDATE episodes SET archived_at_us = ?, superseded_by = ?, supersede_reason = ? "
            f"WHERE archived_at_us IS NULL AND superseded_by IS NULL AND id IN ({marks})",
            [to_us(merge.at), merge.merged_id, merge.reason, *chunk],
        ).rowcount
    return changed


class SQLiteStore(SQLiteConnection, BufferedRetrievals, EpisodeStoreBase):
    """Episodes in one SQLite file.

    Args:
        path: Database file (created if missing, with parent directories) or ``":memory:"``
            (a private in-memory database, single connection; for experiments only).
        busy_timeout_s: Seconds a connection waits for another writer's lock before
            failing with :class:`StoreError` (default 30).
        vector_sidecar: Keep the vector index in ``<db>.vectors`` and the ANN index in ``<db>.ivf``
            beside the file for a cold start without reading every vector (default on; nothing
            is saved for ``":memory:"``). See :mod:`memlane.stores.sqlite.vectors`.
        ann_threshold: Filtered candidate sets with more rows than this use the approximate
            (IVF) index, smaller ones exact search (default :data:`memlane.stores.sqlite.ann.ANN_THRESHOLD`);
            ``None`` = always exact.
        sidecar_min_rows: Rows a refresh must read from SQLite before it rewrites the sidecar.
        quantized_vectors: Keep the in-memory vectors and the sidecar as int8 codes (1/4 of the
            memory of float32); candidates are re-ranked with the exact vectors from SQLite, so
            cosines stay exact (default off). See :mod:`memlane.stores.sqlite.vectors`.
        keyword_index: Answer keyword searches from in-memory postings derived from the file
            (:class:`~memlane.stores.sqlite.fts.KeywordIndex`: the same rows, order and scores as
            the FTS5 path, without scoring every match in Python); ``False``: the FTS5 path
            (default on).

    Raises:
        SchemaVersionError: the file was written by a newer memlane.
        StoreError: the file cannot be opened or is not a memlane database.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout_s: float = 30.0,
        vector_sidecar: bool = True,
        ann_threshold: int | None = ANN_THRESHOLD,
        sidecar_min_rows: int = SIDECAR_MIN_ROWS,
        quantized_vectors: bool = False,
        keyword_index: bool = True,
    ) -> None:
        self._common_terms = CommonTermFilter()
        self._keyword_index = KeywordIndex() if keyword_index else None
        self._memo = SnapshotMemo()  # small reads of a recall (binding, tag lookups), once per snapshot
        memory = str(path) == ":memory:"
        self._vector_search = SQLiteVectors(
            None if memory else str(Path(path).expanduser().resolve()),
            sidecar=vector_sidecar,
            sidecar_min_rows=sidecar_min_rows,
            ann_threshold=ann_threshold,
            quantized=quantized_vectors,
        )
        self._vectors = self._vector_search.cache
        self._retrievals = RetrievalBuffer()
        super().__init__(path, busy_timeout_s=busy_timeout_s)

    # -- embedding model binding -----------------------------------------------------

    @property
    def embedding_model(self) -> tuple[str, int] | None:
        """``(model_id, dims)`` the store is bound to, or ``None`` if not bound yet."""
        with self._translate("embedding_model"):
            return _read_binding(self._conn())

    def bind_embedding_model(self, model_id: str, dims: int) -> None:
        """Record ``(model_id, dims)`` on first use; refuse a different one later.

        Raises:
            EmbeddingModelMismatchError: the store is bound to another model or dimension.
        """
        with self._translate("bind_embedding_model"), self._write() as conn:
            bound = _read_binding(conn)
            if bound is None:
                conn.executemany(
                    "INSERT INTO store_meta (key, value) VALUES (?, ?)",
                    [("embedding_model", model_id), ("embedding_dims", str(dims))],
                )
                return
            check_binding(self.path, bound, model_id, dims)

    # -- writes ----------------------------------------------------------------------

    def _write_episodes(self, batch: EpisodeBatch) -> None:
        """:meth:`insert` and :meth:`merge`: one ``BEGIN IMMEDIATE`` transaction.

        The rows are built for the whole batch at once (:meth:`RowCodec.episode_rows`: one text
        analysis call, shared encodings) and go in with multi-row ``INSERT`` statements
        (:func:`_insert_rows`); their keyword index rows and tag rows follow
        as two set-based ``INSERT ... SELECT`` statements over the new row keys (``seq`` above
        the ``sqlite_sequence`` value read at the start of the transaction, which the write
        lock keeps to this batch), so no per-row trigger runs (schema migration 9).
        Retiring supersessions or archiving a merge's originals bumps ``delete_generation``,
        so every process rebuilds its vector index.
        """
        episodes, supersessions, merge = batch.episodes, batch.supersessions, batch.merge
        rows = CODEC.episode_rows(episodes, None if batch.vectors is None else encode_vectors(batch.vectors))
        pending = self._retrievals.take()
        try:
            with self._translate("insert"), self._write() as conn:
                _apply_retrievals(conn, pending)
                before = conn.execute(
                    "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'episodes'), 0)"
                ).fetchone()[0]
                _insert_rows(conn, rows)
                index_new_rows(conn, before)
                if any(ep.tags for ep in episodes):
                    conn.execute(
                        "INSERT OR IGNORE INTO episode_tags (tag, seq) SELECT j.value, e.seq "
                        "FROM episodes AS e, json_each(e.tags) AS j WHERE e.seq > ? AND e.tags <> '[]'",
                        (before,),
                    )
                for sup in supersessions:
                    sql = _SUPERSEDE if sup.tenant_id is None else _SUPERSEDE + " AND tenant_id = ?"
                    check_superseded(sup, conn.execute(sql, supersede_params(sup, CODEC)).rowcount)
                if merge is not None:
                    merge.check(_archive_merged(conn, merge))
                if supersessions or merge is not None:
                    bump_generation(conn, _GENERATION)
        except BaseException as exc:
            self._retrievals.put_back(pending)
            cause = exc.__cause__
            if isinstance(cause, sqlite3.IntegrityError) and "episodes.id" in str(cause):
                raise DuplicateEpisodeError(
                    "an episode id already exists (episodes are append-only): "
                    + ", ".join(ep.id for ep in episodes[:5])
                ) from cause
            raise

    def delete_created_before(
        self, cutoff: datetime, keep_importance_from: float | None = None, tenant_id: str | None = None
    ) -> int:
        """Delete every episode with ``created_at < cutoff`` (of ``tenant_id``, or all); return the count.

        One indexed range delete (``ix_episodes_time``) plus its tag rows, in one transaction.
        Episodes rated ``>= keep_importance_from`` (never-forget) are kept.
        """
        condition = "created_at_us < ?"
        params: list[Any] = [to_us(cutoff)]
        if tenant_id is not None:
            condition += " AND tenant_id = ?"
            params.append(tenant_id)
        if keep_importance_from is not None:
            condition += " AND (importance IS NULL OR importance < ?)"
            params.append(keep_importance_from)
        with self._translate("delete_created_before"), self._write() as conn:
            conn.execute(
                f"DELETE FROM episode_tags WHERE seq IN (SELECT seq FROM episodes WHERE {condition})", params
            )
            deleted = conn.execute(f"DELETE FROM episodes WHERE {condition}", params).rowcount
            if deleted:
                bump_generation(conn, _GENERATION)
        return int(deleted)

    def archive(self, episode_ids: Sequence[str], at: datetime) -> int:
        """Set ``archived_at`` on the given not-yet-archived episodes in one transaction; return how many.

        Bumps ``delete_generation`` (when any row changed) so every process rebuilds its vector index.
        """
        changed = 0
        with self._translate("archive"), self._write() as conn:
            for chunk, marks in in_chunks(episode_ids):
                changed += conn.execute(
                    "UPDATE episodes SET archived_at_us = ? "
                    f"WHERE archived_at_us IS NULL AND id IN ({marks})",
                    [to_us(at), *chunk],
                ).rowcount
            if changed:
                bump_generation(conn, _GENERATION)
        return changed

    def _write_retrievals(self, pending: Pending, *, soon: bool) -> int | None:
        """Buffered retrieval counts in one transaction (:class:`BufferedRetrievals`).

        Does not bump ``delete_generation`` (the vector index holds neither column). With
        ``soon`` (a recall's flush) it waits at most :data:`BOOKKEEPING_BUSY_MS` for another
        writer's lock and else returns ``None``, so recall never waits for a long ingest.
        """
        conn = self._conn()
        with self._translate("record_retrievals"):
            if not soon:
                with self._write() as tx:
                    return _apply_retrievals(tx, pending)
            conn.execute(f"PRAGMA busy_timeout={BOOKKEEPING_BUSY_MS:d}")
            try:
                with self._write() as tx:
                    return _apply_retrievals(tx, pending)
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc):
                    raise
                logger.debug("record_retrievals: database locked, %d row(s) deferred", len(pending))
                return None
            finally:
                conn.execute(f"PRAGMA busy_timeout={int(self._timeout * 1000)}")

    def vectors(self, episode_ids: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        """``{id: float32 [dims] vector}`` of the given episodes that have one (others absent)."""
        found: dict[str, NDArray[np.float32]] = {}
        with self._translate("vectors"):
            conn = self._conn()
            for chunk, marks in in_chunks(episode_ids):
                for eid, blob in conn.execute(
                    f"SELECT id, embedding FROM episodes WHERE embedding IS NOT NULL AND id IN ({marks})",
                    chunk,
                ):
                    found[eid] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
        return found

    def delete_session_scoped(self, tenant_id: str, session_id: str) -> int:
        """Delete the ``session_scoped`` episodes (and tag rows) of one session; return how many."""
        condition = "tenant_id = ? AND session_id = ? AND session_scoped = 1"
        with self._translate("delete_session_scoped"), self._write() as conn:
            conn.execute(
                f"DELETE FROM episode_tags WHERE seq IN (SELECT seq FROM episodes WHERE {condition})",
                (tenant_id, session_id),
            )
            deleted = conn.execute(
                f"DELETE FROM episodes WHERE {condition}", (tenant_id, session_id)
            ).rowcount
            if deleted:
                bump_generation(conn, _GENERATION)
        return int(deleted)

    def delete(self, episode_id: str, tenant_id: str | None) -> bool:
        """Delete the episode ``episode_id`` (and its tag rows) if it belongs to ``tenant_id``.

        ``tenant_id=None`` matches any tenant. Returns whether a row was deleted. A deletion
        bumps ``delete_generation``, so every process rebuilds its in-memory vector index
        on its next ranked recall (one full read of the vectors).
        """
        sql = "SELECT seq FROM episodes WHERE id = ?"
        params: list[Any] = [episode_id]
        if tenant_id is not None:
            sql += " AND tenant_id = ?"
            params.append(tenant_id)
        with self._translate("delete"), self._write() as conn:
            row = conn.execute(sql, params).fetchone()
            if row is None:
                return False
            conn.execute("DELETE FROM episode_tags WHERE seq = ?", (row[0],))
            conn.execute("DELETE FROM episodes WHERE seq = ?", (row[0],))
            bump_generation(conn, _GENERATION)
        return True

    # -- reads -----------------------------------------------------------------------

    def list_recent(self, flt: EpisodeFilter, limit: int) -> list[Episode]:
        """Up to ``limit`` episodes passing ``flt``, newest ``created_at`` first (ties: newest insert)."""
        with self._translate("list_recent"):
            conn = self._conn()
            rows, where, params = filters.source(conn, flt, limit)
            sql = f"SELECT {_COLUMNS}{rows}{where} ORDER BY created_at_us DESC, seq DESC LIMIT ?"
            return [CODEC.episode(r) for r in conn.execute(sql, [*params, limit])]

    def neighbours(self, flt: EpisodeFilter, keys: Sequence[int], radius: int = 2) -> Neighbours:
        """Session, tags and the ``radius`` stored neighbours of each key (see :meth:`Store.neighbours`).

        With the store's ``keyword_index`` (the default), from the in-memory postings
        (:func:`~memlane.stores.keyword_postings.indexed_neighbours`); without it, index range
        scans or probes of ``ix_episodes_session_seq`` (:mod:`memlane.stores.sqlite.neighbours`).
        Either way the cost grows with the number of keys, never with the size of their sessions.
        """
        del flt  # the neighbours are the stored turns; the ranking drops non-candidates
        with self._translate("neighbours"):
            if self._keyword_index is not None:
                with self._keyword_index.lock:
                    conn = self._conn()
                    postings = self._keyword_index.refresh(conn)
                    return indexed_neighbours(postings, keys, max(1, int(radius)))
            return stored_neighbours(self._conn(), keys, max(1, int(radius)))

    def linked_episodes(
        self, flt: EpisodeFilter, tenant_id: str, entities: Sequence[str], keys: Sequence[int], extra: int
    ) -> LinkedEpisodes:
        """Graph links of ``keys`` to ``entities`` and up to ``extra`` further linked episodes
        (see :meth:`Store.linked_episodes`; :func:`memlane.stores.sqlite.graph.linked_episodes`)."""
        with self._translate("linked_episodes"):
            return linked_episodes(self._conn(), flt, tenant_id, entities, keys, max(0, int(extra)))

    def get(self, episode_id: str) -> Episode | None:
        """The episode with ``episode_id``, or ``None``."""
        with self._translate("get"):
            row = (
                self._conn()
                .execute(f"SELECT {_COLUMNS} FROM episodes WHERE id = ?", (episode_id,))
                .fetchone()
            )
        return None if row is None else CODEC.episode(row)

    def fetch(self, keys: Sequence[int]) -> dict[int, Episode]:
        """``{key: episode}`` for row keys from :meth:`vector_candidates` (deleted rows absent)."""
        if len(keys) == 0:
            return {}
        found: dict[int, Episode] = {}
        with self._translate("fetch"):
            conn = self._conn()
            for chunk, marks in in_chunks([int(k) for k in keys]):
                for row in conn.execute(f"SELECT {_COLUMNS} FROM episodes WHERE seq IN ({marks})", chunk):
                    found[row[0]] = CODEC.episode(row)
        return found

    def superseded_links(self, episode_ids: Sequence[str]) -> list[Episode]:
        """The episodes superseded by any of ``episode_ids`` (an index lookup on ``superseded_by``)."""
        if not episode_ids:
            return []
        marks = ",".join("?" * len(episode_ids))
        with self._translate("superseded_links"):
            rows = self._conn().execute(
                f"SELECT {_COLUMNS} FROM episodes WHERE superseded_by IN ({marks}) ORDER BY seq",
                list(episode_ids),
            )
            return [CODEC.episode(r) for r in rows]

    def count(self, flt: EpisodeFilter) -> int:
        """Number of episodes passing ``flt``."""
        with self._translate("count"):
            conn = self._conn()
            rows, where, params = filters.source(conn, flt, None)
            return int(conn.execute(f"SELECT count(*){rows}{where}", params).fetchone()[0])

    def iter_episodes(self, flt: EpisodeFilter, batch_size: int = 1000) -> Iterator[Episode]:
        """Yield every episode passing ``flt``, oldest first, reading ``batch_size`` rows at a time."""

        def read(last: tuple[Any, int]) -> list[Any]:
            with self._translate("iter_episodes"):
                conn = self._conn()
                rows, where, params = filters.source(conn, flt, batch_size)
                joiner = " AND " if where else " WHERE "
                sql = (
                    f"SELECT {_COLUMNS}{rows}{where}{joiner}(created_at_us, seq) > (?, ?) "
                    "ORDER BY created_at_us, seq LIMIT ?"
                )
                return conn.execute(sql, [*params, *last, batch_size]).fetchall()

        yield from paginate(read, (-(2**62), 0), CODEC)

    def stats(self, flt: EpisodeFilter) -> StoreStats:
        """Counts, distinct tenants/sessions, per-type counts and time range of ``flt``'s episodes."""
        where, params = filters.where(flt)
        with self._translate("stats"):
            conn = self._conn()
            counts = conn.execute(
                "SELECT count(*), count(embedding), count(DISTINCT tenant_id), "
                "count(DISTINCT tenant_id || char(0) || session_id), min(created_at_us), max(created_at_us), "
                "count(*) FILTER (WHERE superseded_by IS NOT NULL OR invalidated_at_us IS NOT NULL), "
                "count(*) FILTER (WHERE archived_at_us IS NOT NULL AND superseded_by IS NULL "
                f"AND invalidated_at_us IS NULL) FROM episodes{where}",
                params,
            ).fetchone()
            types = dict(
                conn.execute(
                    f"SELECT event_type, count(*) FROM episodes{where} GROUP BY event_type ORDER BY 2 DESC",
                    params,
                ).fetchall()
            )
        return store_stats(
            counts,
            types,
            CODEC,
            embedding_model=self.embedding_model,
            schema_version=self.schema_version,
            location=self.path,
        )

    # -- vector search ---------------------------------------------------------------

    def vector_candidates(
        self, flt: EpisodeFilter, query: NDArray[np.float32], top_n: int
    ) -> VectorCandidates:
        """Cosine of ``query`` against the filtered episodes with a vector.

        The ``top_n`` most similar filtered rows (:meth:`VectorCandidates.top`): an exact scan
        when at most ``ann_threshold`` rows pass the filter; above it, the ANN index's
        candidates plus every row added since it was built, rescored exactly and trimmed.
        """
        with self._translate("vector_candidates"):
            allowed = self._allowed(flt)
            if allowed is not None and len(allowed) == 0:
                return VectorCandidates.empty()
            with self._vectors.lock:
                index = self._vector_search.refresh(self._conn(), len(query))
                vector = np.asarray(query, dtype=np.float32)
                mask = index.mask(_row_filter(flt, allowed))
                top = max(1, int(top_n))
                return self._vector_search.search(self._conn(), index, mask, vector, top).top(top)

    def optimize(self) -> IndexReport:
        """Read every new vector into the index, write ``<db>.vectors`` and build the ANN lists now.

        See :meth:`memlane.stores.base.Store.optimize` and :meth:`SQLiteVectors.optimize`; a store
        bound to no model yet has nothing to index.
        """
        with self._translate("optimize"):
            bound = self.embedding_model
            if bound is None:
                return IndexReport(vectors=0)
            with self._vectors.lock:
                return self._vector_search.optimize(self._conn(), bound[1])

    def _allowed(self, flt: EpisodeFilter) -> NDArray[np.int64] | None:
        """Row keys (read-only) passing ``flt``'s tag and metadata conditions, which the in-memory
        indexes cannot test (``None``: ``flt`` has neither).

        A tag-only lookup is read once per snapshot (:class:`~memlane.stores.sqlite.base.SnapshotMemo`):
        the dense and keyword stages of a recall get the same array, and so the same kept mask
        (:meth:`VectorIndex.mask`)."""
        if not flt.tags and not flt.metadata:
            return None
        conn = self._conn()
        if not flt.metadata:
            tags = tuple(flt.tags)
            return self._memo.get(
                conn, ("tags", tags), lambda: _keys(conn.execute(filters.tags_sql(len(tags)), tags))
            )
        where, params = filters.where(EpisodeFilter(tags=flt.tags, metadata=flt.metadata))
        return _keys(conn.execute(f"SELECT seq FROM episodes{where}", params))

    def metadata_values(self, flt: EpisodeFilter, path: tuple[str, ...], limit: int) -> list[Any]:
        """Distinct JSON values at ``path`` of ``flt``'s episodes (see :meth:`Store.metadata_values`)."""
        check_metadata_path(path)
        check_values_limit(limit)
        where, params = filters.where(flt)
        joiner = " AND " if where else " WHERE "
        sql = (
            f"SELECT DISTINCT metadata -> ? FROM episodes{where}{joiner}"
            "json_type(metadata, ?) IS NOT NULL LIMIT ?"
        )
        json_path = filters.json_path(path)
        with self._translate("metadata_values"):
            rows = self._conn().execute(sql, [json_path, *params, json_path, int(limit)])
            return decoded_distinct((r[0] for r in rows), limit)

    def facet_values(self, tenant_id: str | None, event_type: str, path: tuple[str, ...]) -> list[Any]:
        """Distinct values at a facet path of the active episodes (see :meth:`Store.facet_values`).

        A loose scan of the facet's partial index (:mod:`memlane.stores.sqlite.facets`).
        """
        with self._translate("facet_values"):
            return facets.facet_values(self._conn(), tenant_id, event_type, path)

    def set_metadata(self, episode_ids: Sequence[str], path: tuple[str, ...], value: Any) -> int:
        """Set ``path`` in the given episodes' metadata, one transaction (see :meth:`Store.set_metadata`)."""
        text = checked_metadata_value(path, value)
        changed = 0
        json_path = filters.json_path(path)
        parent = filters.json_path(path[:-1]) if len(path) > 1 else "$"
        with self._translate("set_metadata"), self._write() as conn:
            for chunk, marks in in_chunks(list(episode_ids)):
                changed += conn.execute(
                    "UPDATE episodes SET metadata = json_set(metadata, ?, json(?)) "
                    f"WHERE id IN ({marks}) AND json_type(metadata, ?) = 'object'",
                    [json_path, text, *chunk, parent],
                ).rowcount
        return changed

    def keyword_candidates(self, flt: EpisodeFilter, terms: Sequence[str], top_n: int) -> KeywordCandidates:
        """The best ``top_n`` episodes passing ``flt`` that match any term, by per-scope BM25.

        See :mod:`memlane.stores.sqlite.fts` (index, quoting of terms, scoring); with the
        store's ``keyword_index`` the in-memory postings answer (the same rows and scores), the
        in-memory vector index's filter mask deciding which of its rows pass ``flt``.
        """
        where, params = filters.where(flt)
        with self._translate("keyword_candidates"):
            if self._keyword_index is not None:
                conn = self._conn()
                bound = self._memo.get(conn, "binding", lambda: _read_binding(conn))
                with self._keyword_index.lock, self._vectors.lock:
                    self._keyword_index.refresh(conn)
                    known = None
                    if bound is not None:  # the vector index's mask decides the rows it holds
                        index = self._vector_search.refresh(conn, bound[1])
                        held = index.seqs
                        mask = index.mask(_row_filter(flt, self._allowed(flt)))
                        known = held, mask, self._keyword_index.holds_same_rows(held)
                    return indexed_keyword_search(
                        conn,
                        self._keyword_index,
                        (where, params),
                        terms,
                        max(1, int(top_n)),
                        scope=statistics_scope(flt),
                        common=self._common_terms,
                        known=known,
                    )
            return keyword_search(
                self._conn(),
                where,
                params,
                terms,
                max(1, int(top_n)),
                scope=statistics_scope(flt),
                common=self._common_terms,
            )

    # -- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        """Write buffered retrieval counts, close every connection and drop the vector cache. Idempotent."""
        if not self._closed:
            self._flush_on_close()
        super().close()
        self._vector_search.clear()

    # -- companion stores ----------------------------------------------------------------

    @cached_property
    def session_store(self) -> SQLiteSessionStore:
        """Session episodes in the same file (:class:`~memlane.stores.sqlite.sessions.SQLiteSessionStore`)."""
        return SQLiteSessionStore(self)

    @cached_property
    def graph_store(self) -> SQLiteGraphStore:
        """Entities and facts in the same file (:mod:`memlane.stores.sqlite.graph`)."""
        return SQLiteGraphStore(self)

    @cached_property
    def reembed_backend(self) -> SQLiteReembed:
        """Embedding model migration in the same file (:mod:`memlane.stores.sqlite.reembed`)."""
        return SQLiteReembed(self)

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"
