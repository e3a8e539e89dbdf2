"""Re-embedding operations of the SQLite store (the backend half of :mod:`memlane.reembed`).

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
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from memlane.errors import StoreError
from memlane.stores.reembed_base import KINDS, EmbedFn, ReembedState, VectorKind

if TYPE_CHECKING:
    from memlane.stores.sqlite.store import SQLiteStore

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
    "episodes": _Table("episodes", "content", "reembed_staging", "reembed_cursor", "delete_generation"),
    "session_windows": _Table(
        "session_windows",
        "text",
        "reembed_window_staging",
        "reembed_window_cursor",
        "session_delete_generation",
    ),
}
_KEYS = ("reembed_model", "reembed_dims", *(t.cursor_key for t in _TABLES.values()))
_KEY_MARKS = ",".join("?" * len(_KEYS))


def _blobs(vectors: NDArray[np.float32]) -> list[bytes]:
    data = np.ascontiguousarray(vectors, dtype="<f4")
    return [row.tobytes() for row in data]


def _bump(conn: sqlite3.Connection, table: _Table) -> None:
    conn.execute(
        "UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = ?", (table.generation_key,)
    )


_MISSING = "(embedding IS NULL OR embedding_model IS NOT ?)"
"""Rows without a vector of the model bound as the parameter."""


class SQLiteReembed:
    """:class:`memlane.reembed.ReembedBackend` over a :class:`~memlane.stores.sqlite.SQLiteStore`.

    Args:
        store: The open store (its connection, error translation and write transactions are used).
    """

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store

    def _read_state(self, conn: sqlite3.Connection) -> ReembedState | None:
        rows = dict(conn.execute(f"SELECT key, value FROM store_meta WHERE key IN ({_KEY_MARKS})", _KEYS))
        if "reembed_model" not in rows:
            return None
        cursors = {kind: int(rows.get(t.cursor_key, 0)) for kind, t in _TABLES.items()}
        return ReembedState(rows["reembed_model"], int(rows["reembed_dims"]), cursors)

    def _require(self, conn: sqlite3.Connection, model_id: str) -> ReembedState:
        state = self._read_state(conn)
        if state is None or state.model_id != model_id:
            raise StoreError(
                f"the migration of {self._store.path} to {model_id!r} is no longer in progress "
                "(finished or replaced by another job)"
            )
        return state

    def _clear(self, conn: sqlite3.Connection) -> None:
        for table in _TABLES.values():
            conn.execute(f"DELETE FROM {table.staging}")
        conn.execute(f"DELETE FROM store_meta WHERE key IN ({_KEY_MARKS})", _KEYS)

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
            [(int(seq), blob, model_id) for seq, blob in zip(seqs, _blobs(vectors), strict=True)],
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
            conn.executemany(
                "INSERT INTO store_meta (key, value) VALUES (?, ?)",
                [
                    ("reembed_model", model_id),
                    ("reembed_dims", str(int(dims))),
                    *((t.cursor_key, "0") for t in _TABLES.values()),
                ],
            )

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
                [(blob, model_id, int(seq)) for seq, blob in zip(seqs, _blobs(vectors), strict=True)],
            )
            _bump(conn, t)

    def switch(self, model_id: str, dims: int, embed: EmbedFn) -> tuple[int, int]:
        """Finish the migration in one ``BEGIN IMMEDIATE`` transaction (see :mod:`memlane.reembed`).

        Returns:
            ``(moved, late)``: rows now carrying a vector of ``model_id``, and how many were
            inserted after the last staged batch (embedded here, under the lock).

        Raises:
            StoreError: the migration is not in progress, or a row would be left without a
                vector of ``model_id`` (rolled back).
            EmbeddingError: embedding the late rows failed (rolled back).
        """
        moved = late = 0
        with self._store.translate_errors("reembed switch"), self._store.write_transaction() as conn:
            state = self._require(conn, model_id)
            for kind in KINDS:
                t = _TABLES[kind]
                rows = conn.execute(
                    f"SELECT seq, {t.text} FROM {t.source} WHERE seq > ? ORDER BY seq", (state.cursors[kind],)
                ).fetchall()
                if rows:
                    self._put_staged(
                        conn, t, model_id, [int(r[0]) for r in rows], embed([str(r[1]) for r in rows])
                    )
                    late += len(rows)
                moved += conn.execute(
                    f"UPDATE {t.source} SET embedding = s.embedding, embedding_model = s.embedding_model "
                    f"FROM {t.staging} AS s WHERE s.seq = {t.source}.seq"
                ).rowcount
                left = conn.execute(
                    f"SELECT count(*) FROM {t.source} WHERE {_MISSING}", (model_id,)
                ).fetchone()[0]
                if left:
                    raise StoreError(
                        f"{left} rows of {t.source} in {self._store.path} would have no vector of "
                        f"{model_id!r}; nothing was switched (rerun the job)"
                    )
                _bump(conn, t)
            conn.executemany(
                "INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)",
                [("embedding_model", model_id), ("embedding_dims", str(int(dims)))],
            )
            self._clear(conn)
        return moved, late
