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
  ``seq`` (AUTOINCREMENT, so it only grows), and any deletion -- or update of a filtered
  column: superseding (``valid_until``/``invalidated_at``) and archiving (``archived_at``) --
  bumps a ``delete_generation`` counter that makes every process rebuild its copy (one full
  read of the vectors on the next ranked recall).
  Retrieval bookkeeping (``retrieve_count``/``last_retrieved_at_us``, migration 7) is not
  held by the index and does not bump it.
* Bi-temporal columns (schema migration 5): ``valid_from_us``/``valid_until_us`` (valid time)
  and ``recorded_at_us``/``invalidated_at_us`` (transaction time), ``superseded_by`` and
  ``supersede_reason``; forgetting columns (migration 6): ``archived_at_us``, ``session_scoped``.
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
    EpisodeNotFoundError,
    SchemaVersionError,
    StoreClosedError,
    StoreError,
)
from memlane.models import Episode
from memlane.stores.base import EpisodeFilter, KeywordCandidates, StoreStats, Supersession, VectorCandidates
from memlane.stores.common_terms import CommonTermFilter
from memlane.stores.migrations.sqlite import MIGRATIONS
from memlane.stores.sqlite_fts import keyword_search
from memlane.stores.vector_index import OPEN_END, IndexRows, VectorIndex

if TYPE_CHECKING:
    from memlane.stores.sqlite_reembed import SQLiteReembed
    from memlane.stores.sqlite_sessions import SQLiteSessionStore

__all__ = ["SQLiteStore"]

logger = logging.getLogger(__name__)

_COLUMNS = (
    "seq, id, tenant_id, session_id, event_type, content, tags, importance, "
    "created_at_us, metadata, embedding_model, valid_from_us, valid_until_us, recorded_at_us, "
    "invalidated_at_us, superseded_by, supersede_reason, archived_at_us, session_scoped, "
    "retrieve_count, last_retrieved_at_us"
)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

BOOKKEEPING_BUSY_MS = 20
"""Longest wait (ms) of retrieval bookkeeping for another writer's lock before deferring."""


def _to_us(value: datetime) -> int:
    delta = value.astimezone(UTC) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _from_us(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


def _opt_us(value: datetime | None) -> int | None:
    return None if value is None else _to_us(value)


def _opt_from_us(value: int | None) -> datetime | None:
    return None if value is None else _from_us(value)


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
        valid_from=_from_us(row[11]),
        valid_until=_opt_from_us(row[12]),
        recorded_at=_from_us(row[13]),
        invalidated_at=_opt_from_us(row[14]),
        superseded_by=row[15],
        supersede_reason=row[16],
        archived_at=_opt_from_us(row[17]),
        session_scoped=bool(row[18]),
        retrieve_count=int(row[19]),
        last_retrieved_at=_opt_from_us(row[20]),
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
    if flt.valid_at is not None:
        clauses.append("valid_from_us <= ? AND (valid_until_us IS NULL OR valid_until_us > ?)")
        params.extend([_to_us(flt.valid_at)] * 2)
    if flt.still_valid_at is not None:
        clauses.append("(valid_until_us IS NULL OR valid_until_us > ?)")
        params.append(_to_us(flt.still_valid_at))
    if flt.recorded_by is not None:
        clauses.append("recorded_at_us <= ?")
        params.append(_to_us(flt.recorded_by))
    if flt.current_at is not None:
        clauses.append("(invalidated_at_us IS NULL OR invalidated_at_us > ?)")
        params.append(_to_us(flt.current_at))
    if flt.exclude_archived:
        clauses.append("archived_at_us IS NULL")
    if flt.retained_after is not None:
        if flt.never_forget_from is None:
            clauses.append("created_at_us >= ?")
            params.append(_to_us(flt.retained_after))
        else:
            clauses.append("(created_at_us >= ? OR importance >= ?)")
            params.extend([_to_us(flt.retained_after), flt.never_forget_from])
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
        self._common_terms = CommonTermFilter()
        self._index: VectorIndex | None = None
        self._index_generation: str | None = None
        self._pending_lock = threading.Lock()
        self._pending: dict[int, tuple[int, datetime]] = {}
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

    def insert(
        self,
        episodes: Sequence[Episode],
        vectors: NDArray[np.float32] | None,
        supersessions: Sequence[Supersession] = (),
    ) -> None:
        """Append ``episodes`` in one transaction (all or none), retiring ``supersessions`` in it.

        Args:
            episodes: New episodes; ids must not exist yet.
            vectors: float32 ``[len(episodes), dims]`` or ``None``.
            supersessions: Older episodes to retire (see :class:`Supersession`); updating them
                bumps ``delete_generation`` so every process rebuilds its vector index.

        Raises:
            DuplicateEpisodeError: an id already exists or repeats in the batch.
            EmbeddingModelMismatchError: the vectors' dimension differs from the bound model's.
            EpisodeNotFoundError: a superseded id is unknown (for its tenant) or already
                superseded; nothing is written.
        """
        self._insert(episodes, vectors, supersessions)

    def _insert(
        self,
        episodes: Sequence[Episode],
        vectors: NDArray[np.float32] | None,
        supersessions: Sequence[Supersession] = (),
        merge: tuple[Sequence[str], datetime, str] | None = None,
    ) -> None:
        """:meth:`insert`; ``merge = (ids, at, reason)`` also archives ``ids`` into ``episodes[0]``."""
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
                _to_us(ep.valid_from),
                _opt_us(ep.valid_until),
                _to_us(ep.recorded_at),
                _opt_us(ep.invalidated_at),
                ep.superseded_by,
                ep.supersede_reason,
                _opt_us(ep.archived_at),
                int(ep.session_scoped),
                int(ep.retrieve_count),
                _opt_us(ep.last_retrieved_at),
            )
            for ep, blob in zip(episodes, blobs, strict=True)
        ]
        try:
            with self._translate("insert"), self._write() as conn:
                conn.executemany(
                    "INSERT INTO episodes (id, tenant_id, session_id, event_type, content, tags, "
                    "importance, created_at_us, metadata, embedding, embedding_model, valid_from_us, "
                    "valid_until_us, recorded_at_us, invalidated_at_us, superseded_by, supersede_reason, "
                    "archived_at_us, session_scoped, retrieve_count, last_retrieved_at_us) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                conn.executemany(
                    "INSERT INTO episode_tags (tag, seq) SELECT ?, seq FROM episodes WHERE id = ?",
                    [(tag, ep.id) for ep in episodes for tag in ep.tags],
                )
                for sup in supersessions:
                    sql = (
                        "UPDATE episodes SET valid_until_us = ?, invalidated_at_us = ?, superseded_by = ?, "
                        "supersede_reason = ? WHERE id = ? AND superseded_by IS NULL"
                    )
                    params: list[Any] = [
                        _to_us(sup.valid_until),
                        _to_us(sup.invalidated_at),
                        sup.new_id,
                        sup.reason,
                        sup.old_id,
                    ]
                    if sup.tenant_id is not None:
                        sql += " AND tenant_id = ?"
                        params.append(sup.tenant_id)
                    if conn.execute(sql, params).rowcount != 1:
                        raise EpisodeNotFoundError(
                            f"episode {sup.old_id!r} not found or already superseded: nothing was written"
                        )
                if merge is not None:
                    self._archive_merged(conn, episodes[0].id, *merge)
                if supersessions or merge is not None:
                    conn.execute(
                        "UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 "
                        "WHERE key = 'delete_generation'"
                    )
        except StoreError as exc:
            cause = exc.__cause__
            if isinstance(cause, sqlite3.IntegrityError) and "episodes.id" in str(cause):
                raise DuplicateEpisodeError(
                    "an episode id already exists (episodes are append-only): "
                    + ", ".join(ep.id for ep in episodes[:5])
                ) from cause
            raise

    def delete_created_before(self, cutoff: datetime, keep_importance_from: float | None = None) -> int:
        """Delete every episode with ``created_at < cutoff`` (all tenants); return the count.

        One indexed range delete (``ix_episodes_time``) plus its tag rows, in one transaction.
        Episodes rated ``>= keep_importance_from`` (never-forget) are kept.
        """
        condition = "created_at_us < ?"
        params: list[Any] = [_to_us(cutoff)]
        if keep_importance_from is not None:
            condition += " AND (importance IS NULL OR importance < ?)"
            params.append(keep_importance_from)
        with self._translate("delete_created_before"), self._write() as conn:
            conn.execute(
                f"DELETE FROM episode_tags WHERE seq IN (SELECT seq FROM episodes WHERE {condition})", params
            )
            deleted = conn.execute(f"DELETE FROM episodes WHERE {condition}", params).rowcount
            if deleted:
                conn.execute(
                    "UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'delete_generation'"
                )
        return int(deleted)

    def archive(self, episode_ids: Sequence[str], at: datetime) -> int:
        """Set ``archived_at`` on the given not-yet-archived episodes in one transaction; return how many.

        Bumps ``delete_generation`` (when any row changed) so every process rebuilds its vector index.
        """
        changed = 0
        with self._translate("archive"), self._write() as conn:
            for start in range(0, len(episode_ids), 500):
                chunk = list(episode_ids[start : start + 500])
                marks = ",".join("?" * len(chunk))
                changed += conn.execute(
                    "UPDATE episodes SET archived_at_us = ? "
                    f"WHERE archived_at_us IS NULL AND id IN ({marks})",
                    [_to_us(at), *chunk],
                ).rowcount
            if changed:
                conn.execute(
                    "UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'delete_generation'"
                )
        return changed

    def record_retrievals(self, keys: Sequence[int], at: datetime) -> int:
        """Count one retrieval of each row key (from ``*_candidates``) at ``at``; return rows updated.

        One short write transaction (an ``UPDATE`` per key, batched with ``executemany``) that
        does not bump ``delete_generation``: the in-memory vector index holds neither column,
        so no process rebuilds it. It waits at most :data:`BOOKKEEPING_BUSY_MS` for the write
        lock: if another writer holds it (a long ingest), the counts stay pending in this
        store object and are written by the next call, so recall never waits for a writer.
        Pending counts are lost if the process ends first.
        """
        with self._pending_lock:
            for key in keys:
                count, last = self._pending.get(int(key), (0, at))
                self._pending[int(key)] = (count + 1, max(last, at))
            pending, self._pending = self._pending, {}
        if not pending:
            return 0
        rows = [(count, _to_us(last), _to_us(last), seq) for seq, (count, last) in pending.items()]
        conn = self._conn()
        try:
            with self._translate("record_retrievals"):
                conn.execute(f"PRAGMA busy_timeout={BOOKKEEPING_BUSY_MS:d}")
                try:
                    with self._write() as tx:
                        tx.executemany(
                            "UPDATE episodes SET retrieve_count = retrieve_count + ?, "
                            "last_retrieved_at_us = max(coalesce(last_retrieved_at_us, ?), ?) WHERE seq = ?",
                            rows,
                        )
                finally:
                    conn.execute(f"PRAGMA busy_timeout={int(self._timeout * 1000)}")
        except StoreError as exc:
            if not (isinstance(exc.__cause__, sqlite3.OperationalError) and "locked" in str(exc.__cause__)):
                raise
            with self._pending_lock:  # another writer holds the lock: keep them for the next call
                for seq, (count, last) in pending.items():
                    old_count, old_last = self._pending.get(seq, (0, last))
                    self._pending[seq] = (old_count + count, max(old_last, last))
            logger.debug("record_retrievals: database locked, %d row(s) deferred", len(pending))
            return 0
        return len(rows)

    def vectors(self, episode_ids: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        """``{id: float32 [dims] vector}`` of the given episodes that have one (others absent)."""
        found: dict[str, NDArray[np.float32]] = {}
        with self._translate("vectors"):
            conn = self._conn()
            for start in range(0, len(episode_ids), 500):
                chunk = list(episode_ids[start : start + 500])
                marks = ",".join("?" * len(chunk))
                for eid, blob in conn.execute(
                    f"SELECT id, embedding FROM episodes WHERE embedding IS NOT NULL AND id IN ({marks})",
                    chunk,
                ):
                    found[eid] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
        return found

    def merge(
        self,
        merged: Episode,
        vector: NDArray[np.float32] | None,
        original_ids: Sequence[str],
        at: datetime,
        reason: str,
    ) -> int:
        """Insert ``merged`` and archive ``original_ids`` pointing at it, in one transaction.

        Each original gets ``archived_at = at``, ``superseded_by = merged.id`` and
        ``supersede_reason = reason``; its valid and transaction times are left as they were.

        Returns:
            Number of originals archived (== ``len(original_ids)``).

        Raises:
            EpisodeNotFoundError: an original is unknown, already archived or already
                superseded (nothing is written).
        """
        matrix = None if vector is None else np.asarray(vector, dtype=np.float32)[None, :]
        self._insert([merged], matrix, (), (original_ids, at, reason))
        return len(set(original_ids))

    @staticmethod
    def _archive_merged(
        conn: sqlite3.Connection, merged_id: str, original_ids: Sequence[str], at: datetime, reason: str
    ) -> None:
        changed = 0
        for start in range(0, len(original_ids), 500):
            chunk = list(original_ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            changed += conn.execute(
                "UPDATE episodes SET archived_at_us = ?, superseded_by = ?, supersede_reason = ? "
                f"WHERE archived_at_us IS NULL AND superseded_by IS NULL AND id IN ({marks})",
                [_to_us(at), merged_id, reason, *chunk],
            ).rowcount
        if changed != len(set(original_ids)):
            raise EpisodeNotFoundError(
                "an episode to merge is unknown, archived or superseded: nothing was merged"
            )

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
            return [_row_to_episode(r) for r in rows]

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
            total, vectors, tenants, sessions, oldest, newest, superseded, archived = conn.execute(
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
            superseded=superseded,
            archived=archived,
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
                    valid_at_us=_opt_us(flt.valid_at),
                    still_valid_at_us=_opt_us(flt.still_valid_at),
                    recorded_by_us=_opt_us(flt.recorded_by),
                    current_at_us=_opt_us(flt.current_at),
                    exclude_archived=flt.exclude_archived,
                    retained_after_us=_opt_us(flt.retained_after),
                    never_forget_from=flt.never_forget_from,
                )

    def keyword_candidates(self, flt: EpisodeFilter, terms: Sequence[str], top_n: int) -> KeywordCandidates:
        """The best ``top_n`` episodes passing ``flt`` that match any term, by FTS5 BM25.

        See :mod:`memlane.stores.sqlite_fts` (index, quoting of terms, scoring).
        """
        where, params = _where(flt)
        with self._translate("keyword_candidates"):
            return keyword_search(
                self._conn(), where, params, terms, max(1, int(top_n)), common=self._common_terms
            )

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
            "SELECT seq, tenant_id, session_id, event_type, created_at_us, importance, embedding, "
            "valid_from_us, valid_until_us, recorded_at_us, invalidated_at_us, archived_at_us "
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
                    valid_from_us=[r[7] for r in batch],
                    valid_until_us=[OPEN_END if r[8] is None else r[8] for r in batch],
                    recorded_us=[r[9] for r in batch],
                    invalidated_us=[OPEN_END if r[10] is None else r[10] for r in batch],
                    archived_us=[OPEN_END if r[11] is None else r[11] for r in batch],
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

    @cached_property
    def reembed_backend(self) -> SQLiteReembed:
        """Embedding model migration in the same file (:mod:`memlane.stores.sqlite_reembed`)."""
        from memlane.stores.sqlite_reembed import SQLiteReembed

        return SQLiteReembed(self)

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"
