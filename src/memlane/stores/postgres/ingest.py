"""Episode ingest of the PostgreSQL store: one binary ``COPY``, no HNSW maintenance.

:meth:`~memlane.stores.postgres.PostgresStore.insert` (so ``remember_episodes``) writes a batch in
one transaction with one binary ``COPY`` (no per-row statements; tags, keyword terms and the
vector are columns of the same row). The HNSW index is partial up to a watermark
(:mod:`memlane.stores.postgres.vector_index`): a new row lies above it, so PostgreSQL skips the
index and no graph is touched (pgvector's row-by-row maintenance cost 2-4 ms per 384-dim row,
a few hundred rows/s; the plain ``COPY`` runs at thousands per second). The new rows form the
index's tail, searched exactly until a fold moves them into the index: ``optimize()``, or the
write after which the tail spans more than :func:`~memlane.stores.postgres.vector_index.fold_due`'s
bound (then in a transaction of its own, after the batch has committed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

__all__ = ["copy_episodes", "copy_types"]

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


def copy_episodes(
    cur: psycopg.Cursor[Any],
    statement: sql.Composed,
    types: Sequence[int | str],
    rows: Sequence[Sequence[Any]],
) -> None:
    """Write ``rows`` with one binary ``COPY``.

    Args:
        cur: A cursor in the caller's transaction.
        statement: The ``COPY ... FROM STDIN (FORMAT BINARY)`` statement.
        types: The ``COPY`` column types (names or OIDs), in order.
        rows: One sequence of column values per episode.
    """
    with cur.copy(statement) as copy:
        copy.set_types(list(types))
        for row in rows:
            copy.write_row(row)
