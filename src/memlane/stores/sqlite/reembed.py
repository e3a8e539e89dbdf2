"""Re-embedding operations of the SQLite store (the backend half of :mod:`memlane.lifecycle.reembed`).

Staged vectors live in ``reembed_staging`` (episodes) and ``reembed_window_staging``
(session windows), each ``(seq, embedding, embedding_model)`` keyed by the source row (schema
migration 4), float32 little-endian blobs like the source columns. The job's target and
cursors are the ``reembed_model``, ``reembed_dims``, ``reembed_cursor`` and
``reembed_window_cursor`` rows of ``store_meta``, written in the same transaction as each
staged batch. Every write takes the database lock up front (``BEGIN IMMEDIATE``), so the
switch and concurrent writers are serialised: a row is either inserted before the switch
(and embedded by it) or after.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
from numpy.typing import NDArray

from memlane.stores.reembed_base import (
    CURSOR_KEYS,
    KINDS,
    META_KEYS,
    EmbedFn,
    ReembedState,
    VectorKind,
    check_switched,
    stage_late_rows,
    start_meta,
)
from memlane.stores.sqlite.base import SQLiteHost, bump_generation, encode_vectors

__all__ = ["SQLiteReembed"]


@dataclass(frozen=True, slots=True)
class _Table:
    """Fixed SQL names of one vector table (never user input)."""

    source: str
    text: str
    staging: str
    cursor_key: str
    generation_key: str


_TABLES: dict[VectorKind, _Table] = {
    "episodes": _Table(
        "episodes", "content", "reembed_staging", CURSOR_KEYS["episodes"], "delete_generation"
    ),
    "session_windows": _Table(
        "session_windows",
        "text",
        "reembed_window_staging",
        CURSOR_KEYS["session_windows"],
        "session_delete_generation",
    ),
}
_KEY_MARKS = ",".join("?" * len(META_KEYS))


_MISSING = "(embedding IS NULL OR embedding_model IS NOT ?)"
"""Rows without a vector of the model bound as the parameter."""


class SQLiteReembed:
    """:class:`memlane.stores.reembed_base.ReembedBackend` over a :class:`~memlane.stores.sqlite.SQLiteStore`.

    Args:
        store: The open store (its connection, error translation and write transactions are used).
    """

    def __init__(self, store: SQLiteHost) -> None:
        self._store = store

    @staticmethod
    def _read_state(conn: sqlite3.Connection) -> ReembedState | None:
        rows = conn.execute(f"SELECT key, value FROM store_meta WHERE key IN ({_KEY_MARKS})", META_KEYS)
        return ReembedState.from_meta(dict(rows))

    def _require(self, conn: sqlite3.Connection, model_id: str) -> ReembedState:
        return ReembedState.require(self._read_state(conn), model_id, self._store.path)

    @staticmethod
    def _clear(conn: sqlite3.Connection) -> None:
        for table in _TABLES.values():
            conn.execute(f"DELETE FROM {table.staging}")
        conn.execute(f"DELETE FROM store_meta WHERE key IN ({_KEY_MARKS})", META_KEYS)

    def _put_staged(
        self,
        conn: sqlite3.Connection,
        table: _Table,
        model_id: str,
        seqs: Sequence[int],
        vectors: NDArray[np.float32],
    ) -> None:
        conn.executemany(
            f"INSERT OR REPLACE INTO {table.staging} (seq, embedding, embedding_model) VALUES (?, ?, ?)",
            [(int(seq), blob, model_id) for seq, blob in zip(seqs, encode_vectors(vectors), strict=True)],
        )

    def _count(self, sql: str, params: Sequence[object]) -> int:
        with self._store.translate_errors("reembed count"):
            return int(self._store.connection().execute(sql, params).fetchone()[0])

    def _rows(self, sql: str, params: Sequence[object]) -> list[tuple[int, str]]:
        with self._store.translate_errors("reembed read"):
            rows = self._store.connection().execute(sql, params).fetchall()
        return [(int(r[0]), str(r[1])) for r in rows]

    def bound_model(self) -> tuple[str, int] | None:
        """``(model_id, dims)`` recorded in ``store_meta``, or ``None``."""
        return self._store.embedding_model

    def state(self) -> ReembedState | None:
        """The migration in progress, or ``None``."""
        with self._store.translate_errors("reembed state"):
            return self._read_state(self._store.connection())

    def start(self, model_id: str, dims: int) -> None:
        """Clear the staging tables and record a migration to ``model_id`` at cursor 0."""
        with self._store.translate_errors("reembed start"), self._store.write_transaction() as conn:
            self._clear(conn)
            conn.executemany("INSERT INTO store_meta (key, value) VALUES (?, ?)", start_meta(model_id, dims))

    def abort(self) -> None:
        """Drop the staged vectors and the job's metadata."""
        with self._store.translate_errors("reembed abort"), self._store.write_transaction() as conn:
            self._clear(conn)

    def count_after(self, kind: VectorKind, cursor: int) -> int:
        """Rows of ``kind`` with ``seq > cursor``."""
        return self._count(f"SELECT count(*) FROM {_TABLES[kind].source} WHERE seq > ?", (cursor,))

    def count_staged(self, kind: VectorKind) -> int:
        """Rows of ``kind``'s staging table."""
        return self._count(f"SELECT count(*) FROM {_TABLES[kind].staging}", ())

    def batch_after(self, kind: VectorKind, cursor: int, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` ``(seq, text)`` rows of ``kind`` with ``seq > cursor``, by ``seq``."""
        t = _TABLES[kind]
        return self._rows(
            f"SELECT seq, {t.text} FROM {t.source} WHERE seq > ? ORDER BY seq LIMIT ?", (cursor, limit)
        )

    def stage(
        self, kind: VectorKind, model_id: str, seqs: Sequence[int], vectors: NDArray[np.float32], cursor: int
    ) -> None:
        """Stage a batch of ``kind`` and move its cursor to ``cursor`` in one transaction.

        Raises:
            StoreError: the migration to ``model_id`` is no longer in progress.
        """
        t = _TABLES[kind]
        with self._store.translate_errors("reembed stage"), self._store.write_transaction() as conn:
            self._require(conn, model_id)
            self._put_staged(conn, t, model_id, seqs, vectors)
            conn.execute(
                "INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)", (t.cursor_key, str(cursor))
            )

    def count_missing(self, kind: VectorKind, model_id: str) -> int:
        """Rows of ``kind`` without a vector of ``model_id``."""
        t = _TABLES[kind]
        return self._count(f"SELECT count(*) FROM {t.source} WHERE {_MISSING}", (model_id,))

    def missing_after(
        self, kind: VectorKind, model_id: str, cursor: int, limit: int
    ) -> list[tuple[int, str]]:
        """Up to ``limit`` ``(seq, text)`` rows of ``kind`` after ``cursor`` lacking a ``model_id`` vector."""
        t = _TABLES[kind]
        return self._rows(
            f"SELECT seq, {t.text} FROM {t.source} WHERE seq > ? AND {_MISSING} ORDER BY seq LIMIT ?",
            (cursor, model_id, limit),
        )

    def fill(
        self, kind: VectorKind, model_id: str, seqs: Sequence[int], vectors: NDArray[np.float32]
    ) -> None:
        """Write vectors in place and bump the table's generation (every process reloads its index)."""
        t = _TABLES[kind]
        with self._store.translate_errors("reembed fill"), self._store.write_transaction() as conn:
            conn.executemany(
                f"UPDATE {t.source} SET embedding = ?, embedding_model = ? WHERE seq = ?",
                [(blob, model_id, int(seq)) for seq, blob in zip(seqs, encode_vectors(vectors), strict=True)],
            )
            bump_generation(conn, t.generation_key)

    def switch(self, model_id: str, dims: int, embed: EmbedFn) -> tuple[int, int]:
        """Finish the migration in one ``BEGIN IMMEDIATE`` transaction (:meth:`ReembedBackend.switch`).

        Writers wait for the lock, so every row is either embedded here or inserted after the
        switch; embedding failures (``EmbeddingError``) roll it back like any other error.
        """
        moved = late = 0
        with self._store.translate_errors("reembed switch"), self._store.write_transaction() as conn:
            state = self._require(conn, model_id)
            for kind in KINDS:
                t = _TABLES[kind]
                rows = conn.execute(
                    f"SELECT seq, {t.text} FROM {t.source} WHERE seq > ? ORDER BY seq", (state.cursors[kind],)
                ).fetchall()
                late += stage_late_rows(rows, embed, partial(self._put_staged, conn, t, model_id))
                moved += conn.execute(
                    f"UPDATE {t.source} SET embedding = s.embedding, embedding_model = s.embedding_model "
                    f"FROM {t.staging} AS s WHERE s.seq = {t.source}.seq"
                ).rowcount
                left = conn.execute(f"SELECT count(*) FROM {t.source} WHERE {_MISSING}", (model_id,))
                check_switched(kind, int(left.fetchone()[0]), self._store.path, model_id)
                bump_generation(conn, t.generation_key)
            conn.executemany(
                "INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)",
                [("embedding_model", model_id), ("embedding_dims", str(int(dims)))],
            )
            self._clear(conn)
        return moved, late
