"""Session episodes in the SQLite file of a :class:`~memlane.stores.sqlite.SQLiteStore`.

Built from the episode store (``store.session_store``) and sharing its per-thread
connections, its write transactions (``BEGIN IMMEDIATE``) and its translation of
``sqlite3`` errors. Tables (schema migration 3 in :mod:`memlane.stores.sqlite.migrations`):

* ``sessions``: one header row per ``(tenant_id, session_id)`` (unique).
* ``session_messages (session_seq, position, message)``: each message's JSON text.
* ``session_windows``: one row per turn: position range, time, embedded text, and the
  float32 little-endian vector with the id of the model that made it.

Search is exact: like the episode store, a :class:`~memlane.stores.vector_index.VectorIndex`
holds an in-memory, columnar copy of the window vectors (its ``tenant`` column is the
owner key ``tenant \\0 agent \\0 user``, its ``session`` column the session id), refreshed
incrementally by window ``seq``; deleting sessions bumps ``session_delete_generation`` in
``store_meta`` so every process rebuilds its copy.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from memlane.errors import DuplicateSessionError, EmbeddingModelMismatchError, ValidationError
from memlane.stores.base import VectorCandidates
from memlane.stores.sessions_base import (
    SessionHeader,
    SessionOwner,
    SessionWrite,
    StoredWindow,
)
from memlane.stores.sqlite.store import _from_us, _to_us
from memlane.stores.vector_index import IndexRows, VectorIndex

if TYPE_CHECKING:
    from memlane.stores.sqlite.store import SQLiteStore

__all__ = ["SQLiteSessionStore"]

_HEADER = (
    "seq, tenant_id, session_id, agent_id, user_id, started_at_us, ended_at_us, "
    "message_count, turn_count, metadata"
)
_GENERATION_KEY = "session_delete_generation"


def _owner_key(tenant_id: str, agent_id: str, user_id: str) -> str:
    return f"{tenant_id}\x00{agent_id}\x00{user_id}"


def _header(row: Sequence[Any]) -> SessionHeader:
    return SessionHeader(
        key=int(row[0]),
        tenant_id=row[1],
        session_id=row[2],
        agent_id=row[3],
        user_id=row[4],
        started_at=_from_us(row[5]),
        ended_at=_from_us(row[6]),
        message_count=int(row[7]),
        turn_count=int(row[8]),
        metadata=json.loads(row[9]),
    )


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class SQLiteSessionStore:
    """Session episodes in a :class:`~memlane.stores.sqlite.SQLiteStore`'s file (see the module docstring).

    Args:
        store: The episode store whose file and connections are shared.
    """

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store
        self._index_lock = threading.Lock()
        self._index: VectorIndex | None = None
        self._generation: str | None = None

    # -- writes ------------------------------------------------------------------------

    def insert_session(
        self, write: SessionWrite, vectors: NDArray[np.float32] | None, *, append: bool
    ) -> SessionHeader:
        """Store a new session or append a batch (see :meth:`SessionStore.insert_session`)."""
        blobs = self._blobs(write, vectors)
        owner = write.owner
        with self._store.translate_errors("insert_session"), self._store.write_transaction() as conn:
            row = conn.execute(
                f"SELECT {_HEADER} FROM sessions WHERE tenant_id = ? AND session_id = ?",
                (owner.tenant_id, write.session_id),
            ).fetchone()
            if row is None:
                cursor = conn.execute(
                    "INSERT INTO sessions (tenant_id, session_id, agent_id, user_id, started_at_us, "
                    "ended_at_us, message_count, turn_count, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        owner.tenant_id,
                        write.session_id,
                        owner.agent_id,
                        owner.user_id,
                        _to_us(write.started_at),
                        _to_us(write.ended_at),
                        len(write.messages),
                        len(write.windows),
                        _dumps(dict(write.metadata)),
                    ),
                )
                key = int(cursor.lastrowid or 0)
                offset = turn_offset = 0
            else:
                existing = _header(row)
                if not append:
                    raise DuplicateSessionError(
                        f"session {write.session_id!r} already exists for tenant {owner.tenant_id!r} "
                        "(sessions are append-only: pass append=True to add turns)"
                    )
                if existing.owner != owner:
                    raise ValidationError(
                        f"session {write.session_id!r} belongs to agent {existing.agent_id!r} and user "
                        f"{existing.user_id!r}; cannot append as agent {owner.agent_id!r}, "
                        f"user {owner.user_id!r}"
                    )
                key = existing.key
                offset, turn_offset = existing.message_count, existing.turn_count
                conn.execute(
                    "UPDATE sessions SET started_at_us = min(started_at_us, ?), "
                    "ended_at_us = max(ended_at_us, ?), message_count = ?, turn_count = ?, metadata = ? "
                    "WHERE seq = ?",
                    (
                        _to_us(write.started_at),
                        _to_us(write.ended_at),
                        offset + len(write.messages),
                        turn_offset + len(write.windows),
                        _dumps({**existing.metadata, **write.metadata}),
                        key,
                    ),
                )
            conn.executemany(
                "INSERT INTO session_messages (session_seq, position, message) VALUES (?, ?, ?)",
                [(key, offset + i, text) for i, text in enumerate(write.messages)],
            )
            conn.executemany(
                "INSERT INTO session_windows (session_seq, turn, first_position, last_position, "
                "created_at_us, text, embedding, embedding_model) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        key,
                        turn_offset + w.turn,
                        offset + w.first,
                        offset + w.last,
                        _to_us(w.created_at),
                        w.text,
                        blob,
                        write.embedding_model,
                    )
                    for w, blob in zip(write.windows, blobs, strict=True)
                ],
            )
            row = conn.execute(f"SELECT {_HEADER} FROM sessions WHERE seq = ?", (key,)).fetchone()
        return _header(row)

    def _blobs(self, write: SessionWrite, vectors: NDArray[np.float32] | None) -> list[bytes]:
        if not write.windows:
            return []
        if vectors is None or vectors.ndim != 2 or vectors.shape[0] != len(write.windows):
            shape = None if vectors is None else vectors.shape
            raise ValidationError(f"need one vector per window ({len(write.windows)}), got {shape}")
        bound = self._store.embedding_model
        if bound is not None and vectors.shape[1] != bound[1]:
            raise EmbeddingModelMismatchError(
                f"vectors have {vectors.shape[1]} dims, the store is bound to {bound[1]}"
            )
        data = np.ascontiguousarray(vectors, dtype="<f4")
        return [row.tobytes() for row in data]

    def delete_session(self, tenant_id: str, session_id: str) -> bool:
        """Delete a session with its messages and windows; ``False`` if there is none."""
        with self._store.translate_errors("delete_session"), self._store.write_transaction() as conn:
            row = conn.execute(
                "SELECT seq FROM sessions WHERE tenant_id = ? AND session_id = ?", (tenant_id, session_id)
            ).fetchone()
            if row is None:
                return False
            self._delete_keys(conn, [int(row[0])])
        return True

    def delete_sessions_ended_before(self, cutoff: datetime) -> int:
        """Delete every session (all tenants) with ``ended_at < cutoff``; return how many."""
        with (
            self._store.translate_errors("delete_sessions_ended_before"),
            self._store.write_transaction() as conn,
        ):
            keys = [
                int(r[0])
                for r in conn.execute("SELECT seq FROM sessions WHERE ended_at_us < ?", (_to_us(cutoff),))
            ]
            if keys:
                self._delete_keys(conn, keys)
        return len(keys)

    @staticmethod
    def _delete_keys(conn: sqlite3.Connection, keys: list[int]) -> None:
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for table, column in (("session_windows", "session_seq"), ("session_messages", "session_seq")):
                conn.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", chunk)
            conn.execute(f"DELETE FROM sessions WHERE seq IN ({marks})", chunk)
        conn.execute(
            "UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = ?", (_GENERATION_KEY,)
        )

    # -- reads -------------------------------------------------------------------------

    def get_session(self, tenant_id: str, session_id: str) -> SessionHeader | None:
        """The header of ``(tenant_id, session_id)``, or ``None``."""
        with self._store.translate_errors("get_session"):
            row = (
                self._store.connection()
                .execute(
                    f"SELECT {_HEADER} FROM sessions WHERE tenant_id = ? AND session_id = ?",
                    (tenant_id, session_id),
                )
                .fetchone()
            )
        return None if row is None else _header(row)

    def session_messages(self, session_key: int, first: int = 0, last: int | None = None) -> list[str]:
        """Message JSON texts at positions ``first..last`` (inclusive; ``None`` = to the end)."""
        with self._store.translate_errors("session_messages"):
            rows = (
                self._store.connection()
                .execute(
                    "SELECT message FROM session_messages WHERE session_seq = ? AND position >= ? "
                    "AND position <= ? ORDER BY position",
                    (session_key, first, 2**62 if last is None else last),
                )
                .fetchall()
            )
        return [r[0] for r in rows]

    def list_recent_sessions(
        self, owner: SessionOwner, limit: int, ended_after: datetime | None = None
    ) -> list[SessionHeader]:
        """Up to ``limit`` of ``owner``'s sessions, newest ``ended_at`` first."""
        with self._store.translate_errors("list_recent_sessions"):
            rows = (
                self._store.connection()
                .execute(
                    f"SELECT {_HEADER} FROM sessions WHERE tenant_id = ? AND agent_id = ? AND user_id = ? "
                    "AND ended_at_us >= ? ORDER BY ended_at_us DESC, seq DESC LIMIT ?",
                    (
                        owner.tenant_id,
                        owner.agent_id,
                        owner.user_id,
                        -(2**62) if ended_after is None else _to_us(ended_after),
                        int(limit),
                    ),
                )
                .fetchall()
            )
        return [_header(r) for r in rows]

    def turn_spans(self, session_key: int, first_turn: int, last_turn: int) -> dict[int, tuple[int, int]]:
        """``{turn: (first_position, last_position)}`` for turns ``first_turn..last_turn``."""
        with self._store.translate_errors("turn_spans"):
            rows = (
                self._store.connection()
                .execute(
                    "SELECT turn, first_position, last_position FROM session_windows "
                    "WHERE session_seq = ? AND turn >= ? AND turn <= ?",
                    (session_key, first_turn, last_turn),
                )
                .fetchall()
            )
        return {int(r[0]): (int(r[1]), int(r[2])) for r in rows}

    def fetch_windows(self, keys: Sequence[int]) -> dict[int, StoredWindow]:
        """``{key: window}`` for window row keys (deleted ones absent)."""
        found: dict[int, StoredWindow] = {}
        columns = ", ".join(f"s.{c.strip()}" for c in _HEADER.split(","))
        with self._store.translate_errors("fetch_windows"):
            conn = self._store.connection()
            for start in range(0, len(keys), 500):
                chunk = [int(k) for k in keys[start : start + 500]]
                marks = ",".join("?" * len(chunk))
                for row in conn.execute(
                    f"SELECT w.seq, w.turn, w.first_position, w.last_position, w.created_at_us, {columns} "
                    "FROM session_windows w JOIN sessions s ON s.seq = w.session_seq "
                    f"WHERE w.seq IN ({marks})",
                    chunk,
                ):
                    found[int(row[0])] = StoredWindow(
                        key=int(row[0]),
                        session=_header(row[5:]),
                        turn=int(row[1]),
                        first=int(row[2]),
                        last=int(row[3]),
                        created_at=_from_us(row[4]),
                    )
        return found

    # -- vector search -----------------------------------------------------------------

    def window_candidates(
        self,
        owner: SessionOwner,
        query: NDArray[np.float32],
        top_n: int,
        created_after: datetime | None = None,
    ) -> VectorCandidates:
        """Exact cosine of ``query`` against every window of ``owner`` (``top_n`` is ignored)."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        with self._store.translate_errors("window_candidates"), self._index_lock:
            index = self._refresh_index(len(q))
            return index.search(
                q,
                tenant_id=_owner_key(owner.tenant_id, owner.agent_id, owner.user_id),
                session_id=None,
                event_type=None,
                created_after_us=None if created_after is None else _to_us(created_after),
                created_before_us=None,
                allowed_seqs=None,
            )

    def _refresh_index(self, dims: int) -> VectorIndex:
        """Bring the in-memory window index up to date with the file (caller holds ``_index_lock``)."""
        conn = self._store.connection()
        row = conn.execute("SELECT value FROM store_meta WHERE key = ?", (_GENERATION_KEY,)).fetchone()
        generation = None if row is None else str(row[0])
        if self._index is None or self._index.dims != dims or generation != self._generation:
            self._index = VectorIndex(dims)
            self._generation = generation
        index = self._index
        max_seq = conn.execute("SELECT coalesce(max(seq), 0) FROM session_windows").fetchone()[0]
        if max_seq <= index.max_seq:
            return index
        cursor = conn.execute(
            "SELECT w.seq, s.tenant_id, s.agent_id, s.user_id, s.session_id, w.created_at_us, w.embedding "
            "FROM session_windows w JOIN sessions s ON s.seq = w.session_seq WHERE w.seq > ? ORDER BY w.seq",
            (index.max_seq,),
        )
        while batch := cursor.fetchmany(5000):
            vectors = np.frombuffer(b"".join(r[6] for r in batch), dtype="<f4").reshape(len(batch), -1)
            if vectors.shape[1] != dims:
                raise EmbeddingModelMismatchError(
                    f"stored window vectors have {vectors.shape[1]} dims, query has {dims}"
                )
            index.append(
                IndexRows(
                    seqs=[r[0] for r in batch],
                    tenant_ids=[_owner_key(r[1], r[2], r[3]) for r in batch],
                    session_ids=[r[4] for r in batch],
                    event_types=["window"] * len(batch),
                    created_us=[r[5] for r in batch],
                    importance=[np.nan] * len(batch),
                    vectors=vectors,
                )
            )
        index.max_seq = max(index.max_seq, int(max_seq))
        return index

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({self._store.path!r})"
