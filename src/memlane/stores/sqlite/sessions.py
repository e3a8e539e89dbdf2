"""Session episodes in the SQLite file of a :class:`~memlane.stores.sqlite.SQLiteStore`.

Built from the episode store (``store.session_store``) and sharing its per-thread
connections, its write transactions (``BEGIN IMMEDIATE``) and its translation of
``sqlite3`` errors. Tables (schema migration 3 in :mod:`memlane.stores.sqlite.migrations`):

* ``sessions``: one header row per ``(tenant_id, session_id)`` (unique).
* ``session_messages (session_seq, position, message)``: each message's JSON text.
* ``session_windows``: one row per turn: position range, time, embedded text, and the
  float32 little-endian vector with the id of the model that made it.

Search is exact: like the episode store, a :class:`~memlane.stores.sqlite.vector_index.VectorCache`
holds an in-memory, columnar copy of the window vectors (its ``tenant`` column is the
owner key ``tenant \\0 agent \\0 user``, its ``session`` column the session id), refreshed
incrementally by window ``seq``; deleting sessions bumps ``session_delete_generation`` in
``store_meta`` so every process rebuilds its copy.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from memlane.stores.base import VectorCandidates
from memlane.stores.sessions_base import (
    NO_VECTOR_MODEL,
    SessionAppend,
    SessionHeader,
    SessionOwner,
    SessionStoreBase,
    SessionWrite,
    StoredWindow,
    checked_window_vectors,
    header_from_row,
    refuse_duplicate,
    window_from_row,
)
from memlane.stores.sqlite.base import (
    CODEC,
    SQLiteHost,
    bump_generation,
    encode_vectors,
    in_chunks,
    read_generation,
    to_us,
    vector_batches,
)
from memlane.stores.sqlite.vector_index import IndexRows, RowFilter, VectorCache, VectorIndex

__all__ = ["SQLiteSessionStore"]

_HEADER = (
    "seq, tenant_id, session_id, agent_id, user_id, started_at_us, ended_at_us, "
    "message_count, turn_count, metadata"
)
_GENERATION_KEY = "session_delete_generation"


def _owner_key(tenant_id: str, agent_id: str, user_id: str) -> str:
    return f"{tenant_id}\x00{agent_id}\x00{user_id}"


class SQLiteSessionStore(SessionStoreBase):
    """Session episodes in a :class:`~memlane.stores.sqlite.SQLiteStore`'s file (see the module docstring).

    Args:
        store: The episode store whose file and connections are shared.
    """

    def __init__(self, store: SQLiteHost) -> None:
        self._store = store
        self._vectors = VectorCache("window vectors")

    # -- writes ------------------------------------------------------------------------

    def insert_session(
        self, write: SessionWrite, vectors: NDArray[np.float32] | None, *, append: bool
    ) -> SessionHeader:
        """Store a new session or append a batch (see :meth:`SessionStore.insert_session`)."""
        blobs = encode_vectors(checked_window_vectors(write, vectors, lambda: self._store.embedding_model))
        owner = write.owner
        with self._store.translate_errors("insert_session"), self._store.write_transaction() as conn:
            row = conn.execute(
                f"SELECT {_HEADER} FROM sessions WHERE tenant_id = ? AND session_id = ?",
                (owner.tenant_id, write.session_id),
            ).fetchone()
            if row is None:
                where = SessionAppend.new(write)
                cursor = conn.execute(
                    "INSERT INTO sessions (tenant_id, session_id, agent_id, user_id, started_at_us, "
                    "ended_at_us, message_count, turn_count, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        owner.tenant_id,
                        write.session_id,
                        owner.agent_id,
                        owner.user_id,
                        to_us(write.started_at),
                        to_us(write.ended_at),
                        *where.counts(write),
                        CODEC.json_in(where.metadata),
                    ),
                )
                key = int(cursor.lastrowid or 0)
            else:
                refuse_duplicate(write, append=append)
                existing = header_from_row(row, CODEC)
                where = SessionAppend.after(existing, write)
                key = existing.key
                conn.execute(
                    "UPDATE sessions SET started_at_us = min(started_at_us, ?), "
                    "ended_at_us = max(ended_at_us, ?), message_count = ?, turn_count = ?, metadata = ? "
                    "WHERE seq = ?",
                    (
                        to_us(write.started_at),
                        to_us(write.ended_at),
                        *where.counts(write),
                        CODEC.json_in(where.metadata),
                        key,
                    ),
                )
            conn.executemany(
                "INSERT INTO session_messages (session_seq, position, message) VALUES (?, ?, ?)",
                where.message_rows(key, write),
            )
            conn.executemany(
                "INSERT INTO session_windows (session_seq, turn, first_position, last_position, "
                "created_at_us, text, embedding, embedding_model) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                where.window_rows(key, write, blobs, CODEC),
            )
            row = conn.execute(f"SELECT {_HEADER} FROM sessions WHERE seq = ?", (key,)).fetchone()
        return header_from_row(row, CODEC)

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

    def delete_sessions_ended_before(
        self, cutoff: datetime, tenant_id: str | None = None, *, dry_run: bool = False
    ) -> int:
        """Delete (or count, with ``dry_run``) every session of ``tenant_id`` (``None``: all tenants)
        with ``ended_at < cutoff``; return how many."""
        condition = "ended_at_us < ?"
        params: list[object] = [to_us(cutoff)]
        if tenant_id is not None:
            condition += " AND tenant_id = ?"
            params.append(tenant_id)
        with (
            self._store.translate_errors("delete_sessions_ended_before"),
            self._store.write_transaction() as conn,
        ):
            keys = [int(r[0]) for r in conn.execute(f"SELECT seq FROM sessions WHERE {condition}", params)]
            if keys and not dry_run:
                self._delete_keys(conn, keys)
        return len(keys)

    @staticmethod
    def _delete_keys(conn: sqlite3.Connection, keys: list[int]) -> None:
        for chunk, marks in in_chunks(keys):
            for table, column in (("session_windows", "session_seq"), ("session_messages", "session_seq")):
                conn.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", chunk)
            conn.execute(f"DELETE FROM sessions WHERE seq IN ({marks})", chunk)
        bump_generation(conn, _GENERATION_KEY)

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
        return None if row is None else header_from_row(row, CODEC)

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
                        -(2**62) if ended_after is None else to_us(ended_after),
                        int(limit),
                    ),
                )
                .fetchall()
            )
        return [header_from_row(r, CODEC) for r in rows]

    def session_owners(
        self, tenant_id: str, ended_after: datetime | None = None
    ) -> list[tuple[str, str, int]]:
        """``(agent_id, user_id, sessions)`` of ``tenant_id``'s session owners, most sessions first."""
        with self._store.translate_errors("session_owners"):
            rows = (
                self._store.connection()
                .execute(
                    "SELECT agent_id, user_id, COUNT(*) AS n FROM sessions WHERE tenant_id = ? "
                    "AND ended_at_us >= ? GROUP BY agent_id, user_id ORDER BY n DESC, agent_id, user_id",
                    (tenant_id, -(2**62) if ended_after is None else to_us(ended_after)),
                )
                .fetchall()
            )
        return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]

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
            for chunk, marks in in_chunks([int(k) for k in keys]):
                for row in conn.execute(
                    f"SELECT w.seq, w.turn, w.first_position, w.last_position, w.created_at_us, {columns}, "
                    "w.text FROM session_windows w JOIN sessions s ON s.seq = w.session_seq "
                    f"WHERE w.seq IN ({marks})",
                    chunk,
                ):
                    found[int(row[0])] = window_from_row(row, CODEC)
        return found

    # -- vector search -----------------------------------------------------------------

    def _search_windows(
        self, owner: SessionOwner, query: NDArray[np.float32], top_n: int, created_after: datetime | None
    ) -> VectorCandidates:
        """Exact cosine of ``query`` against every window of ``owner`` (``top_n`` is ignored)."""
        with self._store.translate_errors("window_candidates"), self._vectors.lock:
            rows = RowFilter(
                tenant_id=_owner_key(owner.tenant_id, owner.agent_id, owner.user_id),
                created_after_us=None if created_after is None else to_us(created_after),
            )
            return self._refresh_index(len(query)).search(query, rows)

    def _owner_windows(
        self, owner: SessionOwner, created_after: datetime | None
    ) -> list[tuple[int, str, float]]:
        """``(key, text, created_at_seconds)`` of every window of ``owner`` created from ``created_after``."""
        with self._store.translate_errors("window_keyword_candidates"):
            rows = (
                self._store.connection()
                .execute(
                    "SELECT w.seq, w.text, w.created_at_us FROM sessions s "
                    "JOIN session_windows w ON w.session_seq = s.seq "
                    "WHERE s.tenant_id = ? AND s.agent_id = ? AND s.user_id = ? AND w.created_at_us >= ? "
                    "ORDER BY w.seq",
                    (
                        owner.tenant_id,
                        owner.agent_id,
                        owner.user_id,
                        -(2**62) if created_after is None else to_us(created_after),
                    ),
                )
                .fetchall()
            )
        return [(int(r[0]), str(r[1]), int(r[2]) / 1e6) for r in rows]

    def _refresh_index(self, dims: int) -> VectorIndex:
        """Bring the in-memory window index up to date with the file (caller holds ``_vectors.lock``)."""
        conn = self._store.connection()
        generation = read_generation(conn, _GENERATION_KEY)
        max_seq = int(conn.execute("SELECT coalesce(max(seq), 0) FROM session_windows").fetchone()[0])
        return self._vectors.refresh(dims, generation, max_seq, lambda after: _index_rows(conn, after))

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({self._store.path!r})"


def _index_rows(conn: sqlite3.Connection, after: int) -> Iterator[IndexRows]:
    """The window index's rows after window key ``after``, in batches."""
    cursor = conn.execute(
        "SELECT w.seq, s.tenant_id, s.agent_id, s.user_id, s.session_id, w.created_at_us, w.embedding "
        "FROM session_windows w JOIN sessions s ON s.seq = w.session_seq "
        "WHERE w.seq > ? AND w.embedding_model <> ? ORDER BY w.seq",
        (after, NO_VECTOR_MODEL),
    )
    for batch, vectors in vector_batches(cursor, 6):
        yield IndexRows(
            seqs=[r[0] for r in batch],
            tenant_ids=[_owner_key(r[1], r[2], r[3]) for r in batch],
            session_ids=[r[4] for r in batch],
            event_types=["window"] * len(batch),
            created_us=[r[5] for r in batch],
            importance=[np.nan] * len(batch),
            vectors=vectors,
        )
