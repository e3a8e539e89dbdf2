"""Episode ingest of the PostgreSQL store: one binary ``COPY``, the HNSW index kept or rebuilt.

:meth:`~memlane.stores.postgres.PostgresStore.insert` (so ``remember_episodes``) writes a batch in
one transaction with one binary ``COPY`` (no per-row statements; tags, keyword terms and the
vector are columns of the same row). What a row costs is then almost all pgvector's HNSW
maintenance: each inserted vector is a graph search plus updates of its neighbours' lists,
through shared buffers: 2-4 ms per 384-dim row on this project's shared 2-core test machine (a
few hundred rows/s; without the index the same ``COPY`` runs at about 7,000 rows/s), against
about 0.3-0.6 ms per row when ``CREATE INDEX`` builds the graph in memory (PostgreSQL 18,
pgvector 0.8.6).

So when a batch is large next to the table -- at least :data:`REBUILD_MIN_ROWS` rows with
vectors and the table holding fewer than :data:`REBUILD_RATIO` times as many rows -- the
transaction drops the HNSW index, copies the rows and builds the index again before it commits
(``maintenance_work_mem`` raised for the transaction to fit the graph, at most 1 GB). Other
sessions see the old index or the new one, never none. The price is the lock: ``DROP INDEX``
holds an ``ACCESS EXCLUSIVE`` lock on ``memlane_episodes`` until the commit, so readers of the
store wait for the build (at most ``(1 + REBUILD_RATIO) x batch`` rows). If the lock does not
come within :data:`LOCK_WAIT` (a long reader elsewhere), the batch keeps the index. Smaller
batches, and batches into a large table, maintain the index row by row. A one-off import into a
large store is still fastest with ``drop_vector_index`` / ``build_vector_index`` around it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from memlane.stores.postgres.migrations import HNSW_MAX_DIMS, bind_vector_statements

__all__ = ["LOCK_WAIT", "REBUILD_MIN_ROWS", "REBUILD_RATIO", "copy_episodes", "copy_types"]

REBUILD_MIN_ROWS = 256
"""Batches with fewer vectors than this always maintain the HNSW index row by row."""

REBUILD_RATIO = 6
"""A batch of ``b`` vectors rebuilds the index when the table holds fewer than ``REBUILD_RATIO * b``
rows: the build costs about ``0.3 ms x (n + b)``, row-by-row maintenance ``2-3 ms x b``."""

_COPY_TYPES = ["text", "text", "text", "text", "text", "text[]", "float8", "timestamptz", "json"]
_COPY_TEMPORAL_TYPES = [
    "timestamptz",
    "timestamptz",
    "timestamptz",
    "timestamptz",
    "text",
    "text",
    "timestamptz",
    "bool",
    "int8",
    "timestamptz",
    "text",
    "int4",
]


def copy_types(vector_oid: int) -> list[int | str]:
    """The column types of the store's episode ``COPY`` (``vector_oid``: pgvector's ``vector`` type)."""
    return [*_COPY_TYPES, vector_oid, "text", *_COPY_TEMPORAL_TYPES]


LOCK_WAIT = "1s"
"""How long a rebuild waits for the table lock (readers in other sessions finishing) before the
batch maintains the index row by row instead."""

_INDEX = "ix_memlane_episodes_embedding_hnsw"
_MAX_WORK_MEM_KB = 1024 * 1024
_BYTES_PER_DIM = 4
_GRAPH_BYTES_PER_ROW = 1024  # neighbour lists and element headers (pgvector, m = 16), generously


def _rebuild_pays(cur: psycopg.Cursor[Any], table: sql.Composable, schema: str, vectors: int) -> bool:
    """Whether rebuilding the existing HNSW index costs less than inserting ``vectors`` rows into it."""
    if vectors < REBUILD_MIN_ROWS:
        return False
    has_index = cur.execute(
        "SELECT 1 FROM pg_catalog.pg_indexes WHERE schemaname = %s AND indexname = %s",
        (schema, _INDEX),
    ).fetchone()
    if has_index is None:
        return False
    bound = REBUILD_RATIO * vectors
    row = cur.execute(  # a bounded count: reads at most `bound` index entries
        sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {t} LIMIT %s) AS x").format(t=table),
        (bound,),
        prepare=False,
    ).fetchone()
    return row is not None and int(row[0]) < bound


def _raise_work_mem(cur: psycopg.Cursor[Any], table: sql.Composable, dims: int) -> None:
    """Raise ``maintenance_work_mem`` for this transaction so the graph of the table fits (<= 1 GB)."""
    row = cur.execute(sql.SQL("SELECT count(*) FROM {t}").format(t=table)).fetchone()
    rows = int(row[0]) if row else 0
    need_kb = math.ceil(rows * (dims * _BYTES_PER_DIM + _GRAPH_BYTES_PER_ROW) * 2 / 1024)
    current = cur.execute(
        "SELECT setting::bigint FROM pg_catalog.pg_settings WHERE name = 'maintenance_work_mem'"
    ).fetchone()
    if current is not None and need_kb > int(current[0]):
        cur.execute(
            "SELECT set_config('maintenance_work_mem', %s, true)", (f"{min(need_kb, _MAX_WORK_MEM_KB)}kB",)
        )


def _drop_index(cur: psycopg.Cursor[Any], schema: str) -> bool:
    """Drop the HNSW index if its lock comes within :data:`LOCK_WAIT` (else keep it; ``False``)."""
    row = cur.execute("SELECT current_setting('lock_timeout')").fetchone()
    previous = str(row[0]) if row else "0"
    try:
        with cur.connection.transaction():  # a savepoint: a lock timeout leaves the batch intact
            cur.execute("SELECT set_config('lock_timeout', %s, true)", (LOCK_WAIT,))
            cur.execute(sql.SQL("DROP INDEX {}.{}").format(sql.Identifier(schema), sql.Identifier(_INDEX)))
    except psycopg.errors.LockNotAvailable:
        return False
    finally:
        cur.execute("SELECT set_config('lock_timeout', %s, true)", (previous,))
    return True


def copy_episodes(
    cur: psycopg.Cursor[Any],
    statement: sql.Composed,
    types: Sequence[int | str],
    rows: Sequence[Sequence[Any]],
    *,
    table: sql.Composable,
    schema: str,
    ext: sql.Identifier,
    dims: int | None,
) -> bool:
    """Write ``rows`` with one binary ``COPY``, rebuilding the HNSW index when that is cheaper.

    Args:
        cur: A cursor in the caller's transaction.
        statement: The ``COPY ... FROM STDIN (FORMAT BINARY)`` statement.
        types: The ``COPY`` column types (names or OIDs), in order.
        rows: One sequence of column values per episode.
        table: The schema-qualified ``memlane_episodes``.
        schema: The store's schema name.
        ext: pgvector's schema.
        dims: The bound vector dimension, or ``None`` when the rows carry no vectors (the index
            is then left alone).

    Returns:
        Whether the index was rebuilt (see the module docstring for when).
    """
    rebuild = dims is not None and dims <= HNSW_MAX_DIMS and _rebuild_pays(cur, table, schema, len(rows))
    if rebuild:
        rebuild = _drop_index(cur, schema)
    with cur.copy(statement) as copy:
        copy.set_types(list(types))
        for row in rows:
            copy.write_row(row)
    if rebuild and dims is not None:
        _raise_work_mem(cur, table, dims)
        for step in bind_vector_statements(dims)[1:]:
            cur.execute(step.format(schema=sql.Identifier(schema), ext=ext, dims=sql.Literal(dims)))
    return rebuild
