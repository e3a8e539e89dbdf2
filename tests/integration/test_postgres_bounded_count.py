"""The vector search's bounded count (step 1 of memlane.stores.postgres.vector_search) reads no heap.

Schema migration 19 makes ``ix_memlane_episodes_session_seq`` carry the default recall filter's
columns, so counting a scope's current rows is an index-only scan; a store at migration 18 is
upgraded in place and answers the same.
"""

from __future__ import annotations

import os
from datetime import timedelta

import numpy as np
import pytest

from memlane.models import Episode
from memlane.stores.base import EpisodeFilter
from tests.conftest import T0
from tests.pg_server import SKIP_ENV

if os.environ.get(SKIP_ENV) == "1":  # the only way to skip: without psycopg these tests must fail
    pytest.skip(f"PostgreSQL tests skipped explicitly ({SKIP_ENV}=1)", allow_module_level=True)

import psycopg
from psycopg import sql

from memlane.stores.postgres import PostgresStore
from memlane.stores.postgres.migrations import MIGRATIONS

DIMS = 8
MODEL = f"count-{DIMS}"
INDEX = "ix_memlane_episodes_session_seq"
RECALL_FILTER = EpisodeFilter(
    tenant_id="t",
    session_id="s",
    still_valid_at=T0 + timedelta(days=30),
    current_at=T0 + timedelta(days=30),
    exclude_archived=True,
)
"""The filter a default recall of session ``s`` uses (scope, still valid, not retired, not archived)."""


def _episodes(n: int) -> list[Episode]:
    return [
        Episode(
            id=f"ep-{i:05d}",
            tenant_id="t",
            session_id="s" if i % 4 else "other",
            event_type="note",
            content=f"episode {i}",
            tags=(),
            importance=None,
            created_at=T0 + timedelta(seconds=i),
            embedding_model=MODEL,
            valid_until=T0 + timedelta(days=1) if i % 7 == 0 else None,
        )
        for i in range(n)
    ]


def _filled(url: str, schema: str, n: int) -> PostgresStore:
    rng = np.random.default_rng(19)
    vectors = rng.standard_normal((n, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = PostgresStore(url, schema=schema, exact_search_limit=100)
    store.bind_embedding_model(MODEL, DIMS)
    store.insert(_episodes(n), vectors)
    store.optimize()  # folds the HNSW tail and vacuums (the visibility map an index-only scan needs)
    return store


def _plan_and_count(url: str, store: PostgresStore) -> tuple[str, int]:
    """EXPLAIN ANALYZE of the bounded count with the planner kept off sequential scans, and its value."""
    statement, params = store._search.bound_statement(RECALL_FILTER, 100)
    with psycopg.connect(url) as conn:
        conn.execute("SET LOCAL enable_seqscan = off")
        plan = conn.execute(sql.SQL("EXPLAIN (ANALYZE) ") + statement, params).fetchall()
        row = conn.execute(statement, params).fetchone()
    assert row is not None
    return "\n".join(str(r[0]) for r in plan), int(row[0])


def test_the_bounded_count_of_a_recall_scope_is_an_index_only_scan(pg_url: str, pg_schema: str) -> None:
    store = _filled(pg_url, pg_schema, 2_000)
    try:
        plan, counted = _plan_and_count(pg_url, store)
        current = [e for e in _episodes(2_000) if e.session_id == "s" and e.valid_until is None]
        assert counted == min(len(current), 101)  # the count stops at bound + 1
        # possible only when the index holds every column the filter reads (how many heap pages it
        # still visits depends on the visibility map, i.e. on vacuum timing: not asserted)
        assert f"Index Only Scan using {INDEX}" in plan
    finally:
        store.close()


def test_a_store_at_the_previous_migration_is_upgraded_and_counts_the_same(
    pg_url: str, pg_schema: str
) -> None:
    store = _filled(pg_url, pg_schema, 600)
    try:
        _, before = _plan_and_count(pg_url, store)
    finally:
        store.close()
    # the migration that adds INCLUDE (and every later one) runs again
    version = 1 + next(i for i, m in enumerate(MIGRATIONS) if "INCLUDE (archived_at" in str(m[-1]))
    s = sql.Identifier(pg_schema)
    with psycopg.connect(pg_url, autocommit=True) as conn, conn.transaction():  # back to the old index
        conn.execute(
            sql.SQL("DELETE FROM {}.memlane_schema_migrations WHERE version >= %s").format(s), (version,)
        )
        conn.execute(sql.SQL("DROP INDEX {}.{}").format(s, sql.Identifier(INDEX)))
        conn.execute(
            sql.SQL("CREATE INDEX {} ON {}.memlane_episodes (tenant_id, session_id, seq)").format(
                sql.Identifier(INDEX), s
            )
        )
    store = PostgresStore(pg_url, schema=pg_schema, exact_search_limit=100)  # migrates again
    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = %s", (pg_schema, INDEX)
            ).fetchone()
        assert row is not None and "INCLUDE (archived_at, valid_until, invalidated_at)" in str(row[0])
        assert _plan_and_count(pg_url, store)[1] == before
    finally:
        store.close()
