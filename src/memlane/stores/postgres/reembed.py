"""Re-embedding operations of the PostgreSQL store (the backend half of :mod:`memlane.lifecycle.reembed`).

Staged vectors live in ``memlane_reembed_staging`` (episodes) and
``memlane_reembed_window_staging`` (session windows), each ``(tenant_id, seq, embedding,
embedding_model)`` keyed by the source row's ``(tenant_id, seq)`` (schema migrations 4 and 9;
untyped ``vector`` columns, since the target dimension is only known when a job starts). The
job's target and cursors are the ``reembed_model``, ``reembed_dims``, ``reembed_cursor`` and
``reembed_window_cursor`` rows of ``memlane_meta``, written in the same transaction as each staged batch.

The switch is one transaction:

1. ``LOCK TABLE ... IN SHARE ROW EXCLUSIVE MODE`` on both vector tables -- writers (inserts,
   deletes) wait, readers go on -- and the job's metadata rows are locked ``FOR UPDATE``;
2. rows inserted since the last batch are embedded and staged;
3. episodes: the HNSW index is dropped and the column made untyped (``vector``), the staged
   vectors are moved in with one ``UPDATE ... FROM``, the column is retyped ``vector(dims)``
   (which also proves every vector has the new dimension) and the HNSW index rebuilt
   (readers wait from the first ``ALTER`` to the commit); session windows (an untyped
   column, searched exactly): one ``UPDATE ... FROM``;
4. ``memlane_meta`` is rebound to the new model; the staging rows and job metadata go.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from psycopg import sql

from memlane.stores.postgres.base import PostgresHost
from memlane.stores.postgres.migrations import bind_vector_statements
from memlane.stores.postgres.vector_index import INDEX, fold
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

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresReembed"]

_MISSING = sql.SQL("(embedding IS NULL OR embedding_model IS DISTINCT FROM %s)")


@dataclass(frozen=True, slots=True)
class _Table:
    """Composed names of one vector table."""

    source: sql.Composed
    text: sql.Identifier
    staging: sql.Composed


class PostgresReembed:
    """The re-embedding backend over a :class:`~memlane.stores.postgres.PostgresStore`.

    Args:
        store: The open store (its pooled transactions and vector parameters are used).
    """

    def __init__(self, store: PostgresHost) -> None:
        self._store = store
        schema, ext = store.sql_names()
        self._schema, self._ext = schema, ext

        def name(table: str) -> sql.Composed:
            return sql.SQL("{}.{}").format(schema, sql.Identifier(table))

        self._tables: dict[VectorKind, _Table] = {
            "episodes": _Table(
                name("memlane_episodes"),
                sql.Identifier("content"),
                name("memlane_reembed_staging"),
            ),
            "session_windows": _Table(
                name("memlane_session_windows"),
                sql.Identifier("text"),
                name("memlane_reembed_window_staging"),
            ),
        }
        self._keys = list(META_KEYS)
        self._meta = name("memlane_meta")
        self._vec = sql.SQL("%b::{}.vector").format(ext)

    def _read_state(self, cur: psycopg.Cursor[Any], *, lock: bool = False) -> ReembedState | None:
        query = sql.SQL("SELECT key, value FROM {} WHERE key = ANY(%s)").format(self._meta)
        if lock:
            query += sql.SQL(" FOR UPDATE")
        return ReembedState.from_meta(dict(cur.execute(query, (self._keys,)).fetchall()))

    def _require(self, cur: psycopg.Cursor[Any], model_id: str) -> ReembedState:
        return ReembedState.require(self._read_state(cur, lock=True), model_id, self._store.location)

    def _clear(self, cur: psycopg.Cursor[Any]) -> None:
        for table in self._tables.values():
            cur.execute(sql.SQL("DELETE FROM {}").format(table.staging))
        cur.execute(sql.SQL("DELETE FROM {} WHERE key = ANY(%s)").format(self._meta), (self._keys,))

    def _set_meta(self, cur: psycopg.Cursor[Any], pairs: Sequence[tuple[str, str]]) -> None:
        cur.executemany(
            sql.SQL(
                "INSERT INTO {} (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            ).format(self._meta),
            list(pairs),
        )

    def _put_staged(
        self, cur: psycopg.Cursor[Any], table: _Table, model_id: str, seqs: Sequence[int], vectors: Any
    ) -> None:
        cur.executemany(  # the row's tenant comes from its source row (gone since: nothing staged)
            sql.SQL(
                "INSERT INTO {staging} (tenant_id, seq, embedding, embedding_model) "
                "SELECT tenant_id, seq, {vec}, %s FROM {source} WHERE seq = %s "
                "ON CONFLICT (tenant_id, seq) DO UPDATE SET embedding = excluded.embedding, "
                "embedding_model = excluded.embedding_model"
            ).format(staging=table.staging, vec=self._vec, source=table.source),
            [
                (self._store.vector_param(row), model_id, int(seq))
                for seq, row in zip(seqs, np.asarray(vectors, dtype=np.float32), strict=True)
            ],
        )

    def _count(self, query: sql.Composed, params: Sequence[object]) -> int:
        with self._store.transaction("reembed count") as cur:
            found = cur.execute(query, params).fetchone()
        return int(found[0]) if found else 0

    def _rows(self, query: sql.Composed, params: Sequence[object]) -> list[tuple[int, str]]:
        with self._store.transaction("reembed read") as cur:
            rows = cur.execute(query, params).fetchall()
        return [(int(r[0]), str(r[1])) for r in rows]

    def bound_model(self) -> tuple[str, int] | None:
        """``(model_id, dims)`` recorded in ``memlane_meta`` (re-read, not the store's cache), or ``None``."""
        self._store.forget_binding()
        return self._store.embedding_model

    def state(self) -> ReembedState | None:
        """The migration in progress, or ``None``."""
        with self._store.transaction("reembed state") as cur:
            return self._read_state(cur)

    def start(self, model_id: str, dims: int) -> None:
        """Clear the staging tables and record a migration to ``model_id`` at cursor 0."""
        with self._store.transaction("reembed start") as cur:
            self._clear(cur)
            self._set_meta(cur, start_meta(model_id, dims))

    def abort(self) -> None:
        """Drop the staged vectors and the job's metadata."""
        with self._store.transaction("reembed abort") as cur:
            self._clear(cur)

    def count_after(self, kind: VectorKind, cursor: int) -> int:
        """Rows of ``kind`` with ``seq > cursor``."""
        return self._count(
            sql.SQL("SELECT count(*) FROM {} WHERE seq > %s").format(self._tables[kind].source), (cursor,)
        )

    def count_staged(self, kind: VectorKind) -> int:
        """Rows of ``kind``'s staging table."""
        return self._count(sql.SQL("SELECT count(*) FROM {}").format(self._tables[kind].staging), ())

    def batch_after(self, kind: VectorKind, cursor: int, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` ``(seq, text)`` rows of ``kind`` with ``seq > cursor``, by ``seq``."""
        t = self._tables[kind]
        return self._rows(
            sql.SQL("SELECT seq, {} FROM {} WHERE seq > %s ORDER BY seq LIMIT %s").format(t.text, t.source),
            (cursor, limit),
        )

    def stage(
        self, kind: VectorKind, model_id: str, seqs: Sequence[int], vectors: NDArray[np.float32], cursor: int
    ) -> None:
        """Stage a batch of ``kind`` and move its cursor to ``cursor`` in one transaction.

        Raises:
            StoreError: the migration to ``model_id`` is no longer in progress.
        """
        t = self._tables[kind]
        with self._store.transaction("reembed stage") as cur:
            self._require(cur, model_id)
            self._put_staged(cur, t, model_id, seqs, vectors)
            self._set_meta(cur, [(CURSOR_KEYS[kind], str(int(cursor)))])

    def count_missing(self, kind: VectorKind, model_id: str) -> int:
        """Rows of ``kind`` without a vector of ``model_id``."""
        t = self._tables[kind]
        return self._count(
            sql.SQL("SELECT count(*) FROM {} WHERE {}").format(t.source, _MISSING), (model_id,)
        )

    def missing_after(
        self, kind: VectorKind, model_id: str, cursor: int, limit: int
    ) -> list[tuple[int, str]]:
        """Up to ``limit`` ``(seq, text)`` rows of ``kind`` after ``cursor`` lacking a ``model_id`` vector."""
        t = self._tables[kind]
        return self._rows(
            sql.SQL("SELECT seq, {} FROM {} WHERE seq > %s AND {} ORDER BY seq LIMIT %s").format(
                t.text, t.source, _MISSING
            ),
            (cursor, model_id, limit),
        )

    def fill(
        self, kind: VectorKind, model_id: str, seqs: Sequence[int], vectors: NDArray[np.float32]
    ) -> None:
        """Write vectors of the bound model in place, in one transaction."""
        t = self._tables[kind]
        with self._store.transaction("reembed fill") as cur:
            cur.executemany(
                sql.SQL("UPDATE {} SET embedding = {}, embedding_model = %s WHERE seq = %s").format(
                    t.source, self._vec
                ),
                [
                    (self._store.vector_param(row), model_id, int(seq))
                    for seq, row in zip(seqs, np.asarray(vectors, dtype=np.float32), strict=True)
                ],
            )

    def switch(self, model_id: str, dims: int, embed: EmbedFn) -> tuple[int, int]:
        """Finish the migration in one transaction (steps in the module docstring).

        See :meth:`ReembedBackend.switch`. The table locks make writers wait, so every row is
        either embedded here or inserted after the switch; embedding failures
        (``EmbeddingError``) roll it back like any other error.
        """
        names = {"schema": self._schema, "ext": self._ext, "dims": sql.Literal(int(dims))}
        episodes = self._tables["episodes"].source
        moved = late = 0
        with self._store.transaction("reembed switch") as cur:
            for table in self._tables.values():
                cur.execute(sql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(table.source))
            state = self._require(cur, model_id)
            for kind in KINDS:  # rows written since the last batch, embedded before any DDL
                t = self._tables[kind]
                rows = cur.execute(
                    sql.SQL("SELECT seq, {} FROM {} WHERE seq > %s ORDER BY seq").format(t.text, t.source),
                    (state.cursors[kind],),
                ).fetchall()
                late += stage_late_rows(rows, embed, partial(self._put_staged, cur, t, model_id))
            cur.execute(sql.SQL("DROP INDEX IF EXISTS {}.{}").format(self._schema, sql.Identifier(INDEX)))
            cur.execute(
                sql.SQL("ALTER TABLE {} ALTER COLUMN embedding TYPE {}.vector").format(episodes, self._ext)
            )
            for kind in KINDS:
                t = self._tables[kind]
                cur.execute(
                    sql.SQL(
                        "UPDATE {} AS e SET embedding = s.embedding, embedding_model = s.embedding_model "
                        "FROM {} AS s WHERE s.tenant_id = e.tenant_id AND s.seq = e.seq"
                    ).format(t.source, t.staging)
                )
                moved += cur.rowcount
                found = cur.execute(
                    sql.SQL("SELECT count(*) FROM {} WHERE {}").format(t.source, _MISSING), (model_id,)
                ).fetchone()
                check_switched(kind, int(found[0]) if found else 0, self._store.location, model_id)
            for statement in bind_vector_statements(int(dims)):
                cur.execute(statement.format(**names))
            fold(cur, schema=self._schema, ext=self._ext, dims=int(dims))
            self._set_meta(cur, [("embedding_model", model_id), ("embedding_dims", str(int(dims)))])
            self._clear(cur)
        self._store.forget_binding()
        return moved, late
