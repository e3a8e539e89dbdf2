"""The HNSW index of the PostgreSQL store: partial up to a watermark, an unindexed tail after it.

pgvector maintains an HNSW index row by row (a graph search plus neighbour-list updates per
inserted vector: 2-4 ms per 384-dim row on the project's shared 2-core machine, against about
0.3-0.6 ms per row when ``CREATE INDEX`` builds the graph in memory), so the store keeps that
work off the write path:

* The index is *partial*: ``CREATE INDEX ... USING hnsw (embedding vector_cosine_ops) WHERE
  seq <= W``, with the watermark ``W`` recorded in ``memlane_meta`` (key :data:`WATERMARK_KEY`)
  in the transaction that builds the index. ``seq`` only grows, so every row written later has
  ``seq > W``: PostgreSQL checks the predicate, skips the index, and a write is a plain
  ``COPY`` (no row is ever updated to move it in or out).
* The rows with ``seq > W`` are the *tail*. A dense search over a large filtered set is the
  HNSW scan of ``seq <= W`` plus an exact scan of the tail (through the ``seq`` b-tree), the two
  candidate lists merged by :meth:`~memlane.stores.base.VectorCandidates.top` exactly as one
  list would be (:mod:`memlane.stores.postgres.vector_search`). Each row is in exactly one of
  the two, whatever commits meanwhile: the index holds every row its predicate admits.
* :func:`fold` moves the tail into the index: it builds a new partial index up to the highest
  ``seq`` (in memory, ``maintenance_work_mem`` raised for the transaction), drops the old one,
  renames the new one, advances ``W`` and ``ANALYZE``s the table (so the planner
  estimates both halves from current statistics), in one transaction. It holds a ``SHARE ROW
  EXCLUSIVE`` lock on the table for the build (writers and other folds wait, readers go on with
  the old index and the old ``W``); the ``DROP INDEX`` at the end holds ``ACCESS EXCLUSIVE``
  until the commit right after. A reader that read the old ``W`` and plans after the commit
  still gets disjoint halves: ``seq <= W_old`` implies the new predicate. It runs from
  :meth:`~memlane.stores.postgres.PostgresStore.optimize` (``memlane optimize``),
  :meth:`~memlane.stores.postgres.PostgresStore.build_vector_index`, the first embedding-model
  binding and a re-embedding switch, and after a write whose tail spans more than
  :func:`fold_due`'s bound -- never on the recall path.
* No watermark row: a store created before schema migration 16 whose full (unconditional)
  index was kept: there is no tail, writes maintain that index row by row as before, and the
  first :func:`fold` replaces it by a partial one.
"""

from __future__ import annotations

import math
from typing import Any

import psycopg
from psycopg import sql

__all__ = [
    "FOLD_TAIL_ROWS",
    "HNSW_MAX_DIMS",
    "INDEX",
    "WATERMARK_KEY",
    "fold",
    "fold_due",
    "has_index",
    "read_watermark",
    "tail_span",
]

HNSW_MAX_DIMS = 2000
"""pgvector's HNSW index on ``vector`` supports at most 2,000 dimensions; above that the
store keeps no ANN index and every vector search is exact."""

INDEX = "ix_memlane_episodes_embedding_hnsw"
"""The name of the store's HNSW index (partial or, before migration 16, full)."""

WATERMARK_KEY = "vector_index_watermark"
"""``memlane_meta`` key of ``W``: the HNSW index holds the rows with ``seq <= W``."""

FOLD_TAIL_ROWS = 100_000
"""A write folds the tail into the index once the tail spans more than
``max(FOLD_TAIL_ROWS, W)`` sequence numbers. The fold costs about ``0.3-0.6 ms x`` the rows of
the table, so the geometric bound keeps its share of the write cost at most about twice one
build per row; the floor keeps bulk ingests of up to 100,000 rows free of any build (fold them
with ``optimize()`` afterwards). Until then the tail is scanned exactly (about 1-2 ms per 1,000
rows of 384 dims)."""

_NEW_INDEX = INDEX + "_next"
_MAX_WORK_MEM_KB = 1024 * 1024
_BYTES_PER_DIM = 4
_GRAPH_BYTES_PER_ROW = 1024  # neighbour lists and element headers (pgvector, m = 16), generously


def read_watermark(cur: psycopg.Cursor[Any], meta: sql.Composable) -> int | None:
    """``W`` (the index holds ``seq <= W``), or ``None`` for a full index kept from before migration 16."""
    row = cur.execute(
        sql.SQL("SELECT value FROM {meta} WHERE key = %s").format(meta=meta), (WATERMARK_KEY,)
    ).fetchone()
    return None if row is None else int(row[0])


def tail_span(cur: psycopg.Cursor[Any], table: sql.Composable, meta: sql.Composable) -> tuple[int, int]:
    """``(W, highest seq - W)``: the watermark (0 if none) and how many sequence numbers the tail spans.

    Two index lookups (``memlane_meta``'s key, the ``seq`` b-tree's last entry). The span counts
    deleted rows and rolled-back numbers too: an upper bound of the tail's rows. A store
    without a watermark row (its full index covers everything) has a span of 0.
    """
    row = cur.execute(
        sql.SQL(
            "SELECT (SELECT value::bigint FROM {meta} WHERE key = %s), (SELECT max(seq) FROM {t})"
        ).format(meta=meta, t=table),
        (WATERMARK_KEY,),
    ).fetchone()
    if row is None or row[0] is None:
        return 0, 0
    watermark, top = int(row[0]), int(row[1] or 0)
    return watermark, max(0, top - watermark)


def has_index(cur: psycopg.Cursor[Any], schema: sql.Identifier) -> bool:
    """Whether the store's HNSW index (:data:`INDEX`) exists in ``schema``."""
    name = sql.SQL("{}.{}").format(schema, sql.Identifier(INDEX)).as_string(cur)
    row = cur.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()
    return bool(row and row[0])


def fold_due(watermark: int, span: int) -> bool:
    """Whether a write should fold a tail of ``span`` sequence numbers above ``watermark`` now."""
    return span > max(FOLD_TAIL_ROWS, watermark)


def _raise_work_mem(cur: psycopg.Cursor[Any], table: sql.Composable, dims: int) -> None:
    """Raise ``maintenance_work_mem`` for this transaction so the graph of the table fits (<= 1 GB)."""
    row = cur.execute(sql.SQL("SELECT count(embedding) FROM {t}").format(t=table)).fetchone()
    rows = int(row[0]) if row else 0
    need_kb = math.ceil(rows * (dims * _BYTES_PER_DIM + _GRAPH_BYTES_PER_ROW) * 2 / 1024)
    current = cur.execute(
        "SELECT setting::bigint FROM pg_catalog.pg_settings WHERE name = 'maintenance_work_mem'"
    ).fetchone()
    if current is not None and need_kb > int(current[0]):
        cur.execute(
            "SELECT set_config('maintenance_work_mem', %s, true)", (f"{min(need_kb, _MAX_WORK_MEM_KB)}kB",)
        )


def fold(
    cur: psycopg.Cursor[Any],
    *,
    schema: sql.Identifier,
    ext: sql.Identifier,
    dims: int,
    maintenance_work_mem: str | None = None,
) -> tuple[int, bool] | None:
    """Rebuild the HNSW index over every row written so far and advance the watermark (module docstring).

    Runs in the caller's transaction, whose first use of the episodes table it must be (its lock
    comes first, so two folds queue instead of deadlocking); a no-op (apart from the lock) when
    the index exists and the tail is empty.

    Args:
        cur: A cursor in the caller's transaction.
        schema: The store's schema.
        ext: pgvector's schema.
        dims: The bound vector dimension; above :data:`HNSW_MAX_DIMS` there is no index to build.
        maintenance_work_mem: Memory for the build, a PostgreSQL size such as ``"1GB"``, or
            ``None`` to size it from the table (at most 1 GB; never lowered).

    Returns:
        ``(W, built)``: the watermark now (0 for an empty table) and whether the index was built
        by this call; ``None`` above :data:`HNSW_MAX_DIMS`.
    """
    if dims > HNSW_MAX_DIMS:
        return None
    table = sql.SQL("{}.memlane_episodes").format(schema)
    meta = sql.SQL("{}.memlane_meta").format(schema)
    # Writers wait (every earlier write committed, none running), readers do not, folds queue.
    cur.execute(sql.SQL("LOCK TABLE {t} IN SHARE ROW EXCLUSIVE MODE").format(t=table))
    found = cur.execute(sql.SQL("SELECT max(seq) FROM {t}").format(t=table)).fetchone()
    top = int(found[0]) if found and found[0] is not None else 0
    watermark = read_watermark(cur, meta)
    if watermark is not None and watermark >= top and has_index(cur, schema):
        return watermark, False
    if maintenance_work_mem is None:
        _raise_work_mem(cur, table, dims)
    else:
        cur.execute("SELECT set_config('maintenance_work_mem', %s, true)", (maintenance_work_mem,))
    cur.execute(sql.SQL("DROP INDEX IF EXISTS {}.{}").format(schema, sql.Identifier(_NEW_INDEX)))
    cur.execute(
        sql.SQL(
            "CREATE INDEX {new} ON {t} USING hnsw (embedding {ext}.vector_cosine_ops) WHERE seq <= {w}"
        ).format(new=sql.Identifier(_NEW_INDEX), t=table, ext=ext, w=sql.Literal(top))
    )
    cur.execute(sql.SQL("DROP INDEX IF EXISTS {}.{}").format(schema, sql.Identifier(INDEX)))
    cur.execute(
        sql.SQL("ALTER INDEX {}.{} RENAME TO {}").format(
            schema, sql.Identifier(_NEW_INDEX), sql.Identifier(INDEX)
        )
    )
    cur.execute(
        sql.SQL(
            "INSERT INTO {meta} (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        ).format(meta=meta),
        (WATERMARK_KEY, str(top)),
    )
    cur.execute(sql.SQL("ANALYZE {t}").format(t=table))  # the planner's row counts for seq <= W and > W
    return top, True
