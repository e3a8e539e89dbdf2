"""SQLite store: the embedded default, one file, zero servers (stdlib ``sqlite3``).

* WAL journal and a busy timeout, so several threads and processes can share a file;
  each thread gets its own connection.
* Schema created and upgraded at open through numbered migrations
  (:mod:`memlane.stores.migrations.sqlite`), under a write lock so two processes
  opening a new file at once do not race; the version lives in ``PRAGMA user_version``.
* Episodes are append-only; tags are also kept in ``episode_tags (tag, seq)`` so AND
  filters are index lookups.
* Vectors are float32 little-endian blobs with the id of the model that made them.
  Exact cosine search runs in numpy over an in-memory :class:`VectorIndex` that is
  refreshed incrementally: new rows (from this or any other process) are appended by
  ``seq`` (AUTOINCREMENT, so it only grows), and any deletion bumps a
  ``delete_generation`` counter that makes every process rebuild its copy.
* Keyword search: an FTS5 index over ``content`` kept in step by triggers, ranked by BM25
  (:mod:`memlane.stores.sqlite_fts`).
* Every ``sqlite3`` exception is translated into :class:`memlane.errors.StoreError`.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from memlane.errors import (
    DuplicateEpisodeError,
    EmbeddingModelMismatchError,
    SchemaVersionError,
    StoreClosedError,
    StoreError,
)
from memlane.models import Episode
from memlane.stores.base import EpisodeFilter, KeywordCandidates, StoreStats, VectorCandidates
from memlane.stores.migrations.sqlite import MIGRATIONS
from memlane.stores.sqlite_fts import keyword_search
from memlane.stores.vector_index import IndexRows, VectorIndex

if TYPE_CHECKING:
    from memlane.stores.sqlite_sessions import SQLiteSessionStore

__all__ = ["SQLiteStore"]

logger = logging.getLogger(__name__)

_COLUMNS = (
    "seq, id, tenant_id, session_id, event_type, content, tags, importance, "
    "created_at_us, metadata, embedding_model"
)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _to_us(value: datetime) -> int:
    delta = value.astimezone(UTC) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _from_us(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


def _row_to_episode(row: sqlite3.Row | tuple[Any, ...]) -> Episode:
    return Episode(
        id=row[1],
        tenant_id=row[2],
        session_id=row[3],
        event_type=row[4],
        content=row[5],
        tags=tuple(json.loads(row[6])),
        importance=row[7],
        created_at=_from_us(row[8]),
        metadata=json.loads(row[9]),
        embedding_model=row[10],
    )


def _where(flt: EpisodeFilter) -> tuple[str, list[Any]]:
    """Build a WHERE clause from fixed column names; every value is a bound parameter."""
    clauses: list[str] = []
    params: list[Any] = []
    if flt.tenant_id is not None:
        clauses.append("tenant_id = ?")
        params.append(flt.tenant_id)
    if flt.session_id is not None:
        clauses.append("session_id = ?")
        params.append(flt.session_id)
    if flt.event_type is not None:
        clauses.append("event_type = ?")
        params.append(flt.event_type)
    if flt.created_after is not None:
        clauses.append("created_at_us >= ?")
        params.append(_to_us(flt.created_after))
    if flt.created_before is not None:
        clauses.append("created_at_us < ?")
        params.append(_to_us(flt.created_before))
    if flt.tags:
        clauses.append("seq IN (" + _TAGS_SQL(len(flt.tags)) + ")")
        params.extend(flt.tags)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _TAGS_SQL(n: int) -> str:  # noqa: N802 - reads like a constant template
    """Rows carrying all ``n`` tags: an INTERSECT of ``n`` index lookups (placeholders only)."""
    return " INTERSECT ".join(["SELECT seq FROM episode_tags WHERE tag = ?"] * n)


class SQLiteStore:
    """Episodes in one SQLite file.

    Args:
        path: Database file (created if missing, with parent directories) or ``":memory:"``
            (a private in-memory database, single connection; for experiments only).
        busy_timeout_s: Seconds a connection waits for another writer's lock before
            failing with :class:`StoreError` (default 30).

    Raises:
        SchemaVersionError: the file was written by a newer memlane.
        StoreError: the file cannot be opened or is not a memlane database.
    """

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 30.0) -> None:
        self._memory = str(path) == ":memory:"
        self.path = str(path) if self._memory else str(Path(path).expanduser().resolve())
        self._timeout = busy_timeout_s
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._conn_lock = threading.Lock()
        self._index_lock = threading.Lock()
        self._index: VectorIndex | None = None
        self._index_generation: str | None = None
        self._closed = False
        if not self._memory:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        with self._translate("open"):
            self._migrate()

    # -- connections and errors ------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreClosedError(f"SQLite store {self.path} is closed")
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._memory and self._connections:
                conn = self._connections[0]
            else:
                conn = sqlite3.connect(
                    self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
                )
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(f"PRAGMA busy_timeout={int(self._timeout * 1000)}")
                # 32 MiB page cache (filled only as used) and a checkpoint every ~40 MB of WAL:
                # ingest at 100k episodes went from ~10k to ~15k episodes/s (benchmarks/scale.py).
                conn.execute("PRAGMA cache_size=-32768")
                conn.execute("PRAGMA wal_autocheckpoint=10000")
                with self._conn_lock:
                    self._connections.append(conn)
            self._local.conn = conn
        return conn

    @contextmanager
    def _translate(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.IntegrityError as exc:
            raise StoreError(f"SQLite integrity error during {action} on {self.path}: {exc}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite error during {action} on {self.path}: {exc}") from exc

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the database lock up front (BEGIN IMMEDIATE)."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _migrate(self) -> None:
        conn = self._conn()
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == len(MIGRATIONS):
            return
        with self._write() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]  # re-read under the lock
            if version > len(MIGRATIONS):
                raise SchemaVersionError(
                    f"{self.path} has schema version {version}, this memlane knows up to "
                    f"{len(MIGRATIONS)}: upgrade memlane"
                )
            if version == 0:
                existing = conn.execute(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                ).fetchone()[0]
                if existing:
                    raise StoreError(f"{self.path} is an SQLite database but not a memlane store")
            for number in range(version, len(MIGRATIONS)):
                for statement in MIGRATIONS[number]:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number + 1:d}")
                logger.info("migrated %s to schema version %d", self.path, number + 1)

    @property
    def schema_version(self) -> int:
        """Applied migration number."""
        with self._translate("schema_version"):
            return int(self._conn().execute("PRAGMA user_version").fetchone()[0])

    # -- embedding model binding -----------------------------------------------------

    @property
    def embedding_model(self) -> tuple[str, int] | None:
        """``(model_id, dims)`` the store is bound to, or ``None`` if not bound yet."""
        with self._translate("embedding_model"):
            rows = dict(
                self._conn()
                .execute(
                    "SELECT key, value FROM store_meta WHERE key IN ('embedding_model', 'embedding_dims')"
                )
                .fetchall()
            )
        if "embedding_model" not in rows:
            return None
        return rows["embedding_model"], int(rows["embedding_dims"])

    def bind_embedding_model(self, model_id: str, dims: int) -> None:
        """Record ``(model_id, dims)`` on first use; refuse a different one later.

        Raises:
            EmbeddingModelMismatchError: the store is bound to another model or dimension.
        """
        with self._translate("bind_embedding_model"), self._write() as conn:
            rows = dict(
                conn.execute(
                    "SELECT key, value FROM store_meta WHERE key IN ('embedding_model', 'embedding_dims')"
                ).fetchall()
            )
            if not rows:
                conn.executemany(
                    "INSERT INTO store_meta (key, value) VALUES (?, ?)",
                    [("embedding_model", model_id), ("embedding_dims", str(dims))],
                )
                return
            if rows["embedding_model"] != model_id or int(rows["embedding_dims"]) != dims:
                raise EmbeddingModelMismatchError(
                    f"{self.path} holds vectors of model {rows['embedding_model']!r} "
                    f"({rows['embedding_dims']} dims); refusing embedder {model_id!r} ({dims} dims). "
                    "Open it with the original embedder or re-embed the store."
                )

    # -- writes ----------------------------------------------------------------------

    def insert(self, episodes: Sequence[Episode], vectors: NDArray[np.float32] | None) -> None:
        """Append ``episodes`` in one transaction (all or none).

        Args:
            episodes: New episodes; ids must not exist yet.
            vectors: float32 ``[len(episodes), dims]`` or ``None``.

        Raises:
            DuplicateEpisodeError: an id already exists or repeats in the batch.
            EmbeddingModelMismatchError: the vectors' dimension differs from the bound model's.
        """
        if not episodes:
            return
        blobs: list[bytes | None]
        if vectors is None:
            blobs = [None] * len(episodes)
        else:
            bound = self.embedding_model
            if bound is not None and vectors.shape[1] != bound[1]:
                raise EmbeddingModelMismatchError(
                    f"vectors have {vectors.shape[1]} dims, the store is bound to {bound[1]}"
                )
            data = np.ascontiguousarray(vectors, dtype="<f4")
            blobs = [row.tobytes() for row in data]
        rows = [
            (
                ep.id,
                ep.tenant_id,
                ep.session_id,
                ep.event_type,
                ep.content,
                json.dumps(list(ep.tags), ensure_ascii=False),
                ep.importance,
                _to_us(ep.created_at),
                json.dumps(dict(ep.metadata), ensure_ascii=False, sort_keys=True),
                blob,
                ep.embedding_model if blob is not None else None,
            )
            for ep, blob in zip(episodes, blobs, strict=True)
        ]
        try:
            with self._translate("insert"), self._write() as conn:
                conn.executemany(
                    "INSERT INTO episodes (id, tenant_id, session_id, event_type, content, tags, "
                    "importance, created_at_us, metadata, embedding, embedding_model) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                conn.executemany(
                    "INSERT INTO episode_tags (tag, seq) SELECT ?, seq FROM episodes WHERE id = ?",
                    [(tag, ep.id) for ep in episodes for tag in ep.tags],
                )
        except StoreError as exc:
            cause = exc.__cause__
            if isinstance(cause, sqlite3.IntegrityError) and "episodes.id" in str(cause):
                raise DuplicateEpisodeError(
                    "an episode id already exists (episodes are append-only): "
                    + ", ".join(ep.id for ep in episodes[:5])
                ) from cause
            raise

    def delete_created_before(self, cutoff: datetime) -> int:
        """Delete every episode with ``created_at < cutoff`` (all tenants); return the count.

        One indexed range delete (``ix_episodes_time``) plus its tag rows, in one transaction.
        """
        cutoff_us = _to_us(cutoff)
        with self._translate("delete_created_before"), self._write() as conn:
            conn.execute(
                "DELETE FROM episode_tags WHERE seq IN (SELECT seq FROM episodes WHERE created_at_us < ?)",
                (cutoff_us,),
            )
            deleted = conn.execute("DELETE FROM episodes WHERE created_at_us < ?", (cutoff_us,)).rowcount
            if deleted:
                conn.execute(
                    "UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'delete_generation'"
                )
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
            conn.execute(
                "UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'delete_generation'"
            )
        return True

    # -- reads -----------------------------------------------------------------------

    def list_recent(self, flt: EpisodeFilter, limit: int) -> list[Episode]:
        """Up to ``limit`` episodes passing ``flt``, newest ``created_at`` first (ties: newest insert)."""
        where, params = _where(flt)
        sql = f"SELECT {_COLUMNS} FROM episodes{where} ORDER BY created_at_us DESC, seq DESC LIMIT ?"
        with self._translate("list_recent"):
            return [_row_to_episode(r) for r in self._conn().execute(sql, [*params, limit])]

    def get(self, episode_id: str) -> Episode | None:
        """The episode with ``episode_id``, or ``None``."""
        with self._translate("get"):
            row = (
                self._conn()
                .execute(f"SELECT {_COLUMNS} FROM episodes WHERE id = ?", (episode_id,))
                .fetchone()
            )
        return None if row is None else _row_to_episode(row)

    def fetch(self, keys: Sequence[int]) -> dict[int, Episode]:
        """``{key: episode}`` for row keys from :meth:`vector_candidates` (deleted rows absent)."""
        if len(keys) == 0:
            return {}
        found: dict[int, Episode] = {}
        with self._translate("fetch"):
            conn = self._conn()
            for start in range(0, len(keys), 500):
                chunk = [int(k) for k in keys[start : start + 500]]
                marks = ",".join("?" * len(chunk))
                for row in conn.execute(f"SELECT {_COLUMNS} FROM episodes WHERE seq IN ({marks})", chunk):
                    found[row[0]] = _row_to_episode(row)
        return found

    def count(self, flt: EpisodeFilter) -> int:
        """Number of episodes passing ``flt``."""
        where, params = _where(flt)
        with self._translate("count"):
            return int(self._conn().execute(f"SELECT count(*) FROM episodes{where}", params).fetchone()[0])

    def iter_episodes(self, flt: EpisodeFilter, batch_size: int = 1000) -> Iterator[Episode]:
        """Yield every episode passing ``flt``, oldest first, reading ``batch_size`` rows at a time."""
        where, params = _where(flt)
        joiner = " AND " if where else " WHERE "
        last: tuple[int, int] = (-(2**62), 0)
        while True:
            sql = (
                f"SELECT {_COLUMNS} FROM episodes{where}{joiner}(created_at_us, seq) > (?, ?) "
                "ORDER BY created_at_us, seq LIMIT ?"
            )
            with self._translate("iter_episodes"):
                rows = self._conn().execute(sql, [*params, *last, batch_size]).fetchall()
            if not rows:
                return
            for row in rows:
                yield _row_to_episode(row)
            last = (rows[-1][8], rows[-1][0])

    def stats(self, flt: EpisodeFilter) -> StoreStats:
        """Counts, distinct tenants/sessions, per-type counts and time range of ``flt``'s episodes."""
        where, params = _where(flt)
        with self._translate("stats"):
            conn = self._conn()
            total, vectors, tenants, sessions, oldest, newest = conn.execute(
                "SELECT count(*), count(embedding), count(DISTINCT tenant_id), "
                "count(DISTINCT tenant_id || char(0) || session_id), min(created_at_us), max(created_at_us) "
                f"FROM episodes{where}",
                params,
            ).fetchone()
            types = dict(
                conn.execute(
                    f"SELECT event_type, count(*) FROM episodes{where} GROUP BY event_type ORDER BY 2 DESC",
                    params,
                ).fetchall()
            )
        return StoreStats(
            episodes=total,
            with_vectors=vectors,
            tenants=tenants,
            sessions=sessions,
            event_types=types,
            oldest=None if oldest is None else _from_us(oldest),
            newest=None if newest is None else _from_us(newest),
            embedding_model=self.embedding_model,
            schema_version=self.schema_version,
            location=self.path,
        )

    # -- vector search ---------------------------------------------------------------

    def vector_candidates(
        self, flt: EpisodeFilter, query: NDArray[np.float32], top_n: int
    ) -> VectorCandidates:
        """Exact cosine of ``query`` against every filtered episode with a vector.

        ``top_n`` is ignored: the search is exhaustive, so ranking sees every candidate.
        """
        with self._translate("vector_candidates"):
            allowed: NDArray[np.int64] | None = None
            if flt.tags:
                allowed = np.fromiter(
                    (r[0] for r in self._conn().execute(_TAGS_SQL(len(flt.tags)), flt.tags)),
                    dtype=np.int64,
                )
                if len(allowed) == 0:
                    return VectorCandidates.empty()
            with self._index_lock:
                index = self._refresh_index(len(query))
                return index.search(
                    np.asarray(query, dtype=np.float32),
                    tenant_id=flt.tenant_id,
                    session_id=flt.session_id,
                    event_type=flt.event_type,
                    created_after_us=None if flt.created_after is None else _to_us(flt.created_after),
                    created_before_us=None if flt.created_before is None else _to_us(flt.created_before),
                    allowed_seqs=allowed,
                )

    def keyword_candidates(self, flt: EpisodeFilter, terms: Sequence[str], top_n: int) -> KeywordCandidates:
        """The best ``top_n`` episodes passing ``flt`` that match any term, by FTS5 BM25.

        See :mod:`memlane.stores.sqlite_fts` (index, quoting of terms, scoring).
        """
        where, params = _where(flt)
        with self._translate("keyword_candidates"):
            return keyword_search(self._conn(), where, params, terms, max(1, int(top_n)))

    def _refresh_index(self, dims: int) -> VectorIndex:
        """Bring the in-memory index up to date with the file (caller holds ``_index_lock``)."""
        conn = self._conn()
        generation = conn.execute("SELECT value FROM store_meta WHERE key = 'delete_generation'").fetchone()[
            0
        ]
        if self._index is None or self._index.dims != dims or generation != self._index_generation:
            self._index = VectorIndex(dims)
            self._index_generation = generation
        index = self._index
        max_seq = conn.execute("SELECT coalesce(max(seq), 0) FROM episodes").fetchone()[0]
        if max_seq <= index.max_seq:
            return index
        cursor = conn.execute(
            "SELECT seq, tenant_id, session_id, event_type, created_at_us, importance, embedding "
            "FROM episodes WHERE seq > ? AND embedding IS NOT NULL ORDER BY seq",
            (index.max_seq,),
        )
        while batch := cursor.fetchmany(5000):
            blobs = b"".join(r[6] for r in batch)
            vectors = np.frombuffer(blobs, dtype="<f4").reshape(len(batch), -1)
            if vectors.shape[1] != dims:
                raise EmbeddingModelMismatchError(
                    f"stored vectors have {vectors.shape[1]} dims, query has {dims}"
                )
            index.append(
                IndexRows(
                    seqs=[r[0] for r in batch],
                    tenant_ids=[r[1] for r in batch],
                    session_ids=[r[2] for r in batch],
                    event_types=[r[3] for r in batch],
                    created_us=[r[4] for r in batch],
                    importance=[np.nan if r[5] is None else r[5] for r in batch],
                    vectors=vectors,
                )
            )
        index.max_seq = max(index.max_seq, int(max_seq))
        return index

    # -- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        """Close every connection this store opened. Idempotent."""
        if self._closed:
            return
        self._closed = True
        with self._conn_lock:
            for conn in self._connections:
                try:
                    conn.close()
                except sqlite3.Error:  # pragma: no cover - closing never matters
                    logger.debug("error closing a connection", exc_info=True)
            self._connections.clear()
        self._index = None

    # -- hooks for companion stores (memlane.stores.sqlite_sessions) --------------------

    def connection(self) -> sqlite3.Connection:
        """This thread's connection to the file (raises :class:`StoreClosedError` once closed)."""
        return self._conn()

    def translate_errors(self, action: str) -> AbstractContextManager[None]:
        """Translate ``sqlite3`` errors raised in the block into :class:`StoreError` (``action`` names it)."""
        return self._translate(action)

    def write_transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction on this thread's connection (rolled back on error)."""
        return self._write()

    @cached_property
    def session_store(self) -> SQLiteSessionStore:
        """Session episodes in the same file (:class:`~memlane.stores.sqlite_sessions.SQLiteSessionStore`)."""
        from memlane.stores.sqlite_sessions import SQLiteSessionStore

        return SQLiteSessionStore(self)

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"
