"""The partial HNSW index and its unindexed tail (memlane.stores.postgres.vector_index), on a real server.

Rows written after the watermark skip the index and are scanned exactly; a fold moves them in.
Whatever the split, a search returns the hits of the exact search (low-dimensional vectors, where
the HNSW scan of a few hundred rows finds the true top-k), and a fold changes no hit.
"""

from __future__ import annotations

import os
from datetime import timedelta

import numpy as np
import pytest
from numpy.typing import NDArray

from memlane.models import Episode
from memlane.stores.base import EpisodeFilter
from tests.conftest import T0
from tests.pg_server import SKIP_ENV

if os.environ.get(SKIP_ENV) == "1":  # the only way to skip: without psycopg these tests must fail
    pytest.skip(f"PostgreSQL tests skipped explicitly ({SKIP_ENV}=1)", allow_module_level=True)

import psycopg
from psycopg import sql

import memlane.stores.postgres.vector_index as vector_index
from memlane.stores.postgres import PostgresStore
from memlane.stores.postgres.vector_index import INDEX, WATERMARK_KEY

DIMS = 8
MODEL = f"tail-{DIMS}"


def _unit(rng: np.random.Generator, n: int) -> NDArray[np.float32]:
    x = rng.standard_normal((n, DIMS)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _episodes(start: int, n: int) -> list[Episode]:
    return [
        Episode(
            id=f"ep-{i:06d}",
            tenant_id="t",
            session_id="s",
            event_type="note",
            content=f"episode {i}",
            tags=("all",),
            importance=None,
            created_at=T0 + timedelta(seconds=i),
            embedding_model=MODEL,
        )
        for i in range(start, start + n)
    ]


def _one(url: str, query: str | sql.Composable, params: tuple[object, ...] = ()) -> object:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(query, params).fetchone()
    return None if row is None else row[0]


def _watermark(url: str, schema: str) -> object:
    query = sql.SQL("SELECT value FROM {}.memlane_meta WHERE key = %s").format(sql.Identifier(schema))
    return _one(url, query, (WATERMARK_KEY,))


def _index_definition(url: str, schema: str) -> object:
    return _one(
        url, "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = %s", (schema, INDEX)
    )


def _hits(store: PostgresStore, query: NDArray[np.float32], top_n: int) -> list[tuple[int, float]]:
    found = store.vector_candidates(EpisodeFilter(tenant_id="t"), query, top_n)
    return [(int(k), float(c)) for k, c in zip(found.keys, found.cosine, strict=True)]


def test_rows_in_the_tail_and_in_the_index_are_both_found_and_a_fold_changes_no_hit(
    pg_url: str, pg_schema: str
) -> None:
    rng = np.random.default_rng(11)
    vectors = _unit(rng, 3_500)
    queries = _unit(rng, 30)
    ann = PostgresStore(pg_url, schema=pg_schema, exact_search_limit=50)  # the HNSW path above 50 rows
    exact = PostgresStore(pg_url, schema=pg_schema, exact_search_limit=10**9)  # always exact
    try:
        ann.bind_embedding_model(MODEL, DIMS)
        ann.insert(_episodes(0, 3_000), vectors[:3_000])
        ann.optimize()
        watermark = int(str(_watermark(pg_url, pg_schema)))
        assert watermark > 0 and f"WHERE (seq <= {watermark})" in str(_index_definition(pg_url, pg_schema))
        ann.insert(_episodes(3_000, 500), vectors[3_000:])  # the tail: seq > watermark, not in the index
        assert _watermark(pg_url, pg_schema) == str(watermark)

        plan = ann.explain_vector_candidates(EpisodeFilter(tenant_id="t"), queries[0], 10)
        assert plan.path == "hnsw" and INDEX in plan.plan and f"seq > {watermark}" in plan.plan
        before = [_hits(ann, q, 10) for q in queries]
        truth = [_hits(exact, q, 10) for q in queries]
        assert before == truth
        keys = {k for hits in before for k, _ in hits}
        assert any(k <= watermark for k in keys) and any(k > watermark for k in keys)
        # a stored vector as the query: its own row comes first, from either side of the watermark
        for i in (5, 2_999, 3_000, 3_499):
            assert ann.fetch([_hits(ann, vectors[i], 10)[0][0]]).popitem()[1].id == f"ep-{i:06d}"

        assert ann.optimize().ann_trained  # the fold: the tail moves into the index
        folded = int(str(_watermark(pg_url, pg_schema)))
        assert folded > watermark and f"WHERE (seq <= {folded})" in str(_index_definition(pg_url, pg_schema))
        assert not ann.optimize().ann_trained  # nothing left to fold
        assert [_hits(ann, q, 10) for q in queries] == before
    finally:
        ann.close()
        exact.close()


def test_a_write_folds_the_tail_once_it_passes_the_bound(
    pg_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "FOLD_TAIL_ROWS", 150)
    rng = np.random.default_rng(12)
    store = PostgresStore(pg_url, schema=pg_schema, exact_search_limit=50)
    try:
        store.bind_embedding_model(MODEL, DIMS)
        assert _watermark(pg_url, pg_schema) == "0"
        store.insert(_episodes(0, 100), _unit(rng, 100))
        assert _watermark(pg_url, pg_schema) == "0"  # within the bound: the rows stay in the tail
        store.insert(_episodes(100, 100), _unit(rng, 100))
        assert int(str(_watermark(pg_url, pg_schema))) >= 200  # past it: folded after the commit
        store.drop_vector_index()
        store.insert(_episodes(200, 400), _unit(rng, 400))  # no index: no write builds one
        assert _index_definition(pg_url, pg_schema) is None
        query = _unit(rng, 1)[0]
        without = _hits(store, query, 10)
        store.build_vector_index()
        assert "seq <=" in str(_index_definition(pg_url, pg_schema))
        assert _hits(store, query, 10) == without
        assert store.count(EpisodeFilter()) == 600
    finally:
        store.close()


def _make_legacy(url: str, schema: str, *, full_index: bool) -> None:
    """Turn a current schema back into one at migration 15 (the index full, or none)."""
    s = sql.Identifier(schema)
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute(sql.SQL("DELETE FROM {}.memlane_meta WHERE key = %s").format(s), (WATERMARK_KEY,))
        conn.execute(sql.SQL("DELETE FROM {}.memlane_schema_migrations WHERE version >= 16").format(s))
        conn.execute(sql.SQL("DROP INDEX {}.{}").format(s, sql.Identifier(INDEX)))
        if full_index:
            conn.execute(
                sql.SQL(
                    "CREATE INDEX {} ON {}.memlane_episodes USING hnsw (embedding vector_cosine_ops)"
                ).format(sql.Identifier(INDEX), s)
            )


@pytest.mark.parametrize("full_index", [True, False])
def test_migration_16_upgrades_a_store_in_place(pg_url: str, pg_schema: str, full_index: bool) -> None:
    rng = np.random.default_rng(13)
    vectors = _unit(rng, 500)
    queries = _unit(rng, 10)
    store = PostgresStore(pg_url, schema=pg_schema, exact_search_limit=50)
    try:
        store.bind_embedding_model(MODEL, DIMS)
        store.insert(_episodes(0, 300), vectors[:300])
    finally:
        store.close()
    _make_legacy(pg_url, pg_schema, full_index=full_index)
    store = PostgresStore(pg_url, schema=pg_schema, exact_search_limit=50)  # migrates to 16
    exact = PostgresStore(pg_url, schema=pg_schema, exact_search_limit=10**9)
    try:
        assert _watermark(pg_url, pg_schema) == (None if full_index else "0")
        store.insert(_episodes(300, 200), vectors[300:])  # full index: maintained row by row, as before
        assert store.count(EpisodeFilter()) == 500
        truth = [_hits(exact, q, 10) for q in queries]
        assert [_hits(store, q, 10) for q in queries] == truth
        store.optimize()  # the first fold makes the index partial
        assert "WHERE (seq <=" in str(_index_definition(pg_url, pg_schema))
        assert [_hits(store, q, 10) for q in queries] == truth
    finally:
        store.close()
        exact.close()


def test_concurrent_folds_queue_and_leave_one_index(pg_url: str, pg_schema: str) -> None:
    import threading

    rng = np.random.default_rng(14)
    stores = [PostgresStore(pg_url, schema=pg_schema) for _ in range(3)]
    try:
        stores[0].bind_embedding_model(MODEL, DIMS)
        stores[0].insert(_episodes(0, 2_000), _unit(rng, 2_000))
        errors: list[BaseException] = []

        def run(store: PostgresStore) -> None:
            try:
                store.optimize()
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(s,)) for s in stores]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        top = _one(
            pg_url, sql.SQL("SELECT max(seq) FROM {}.memlane_episodes").format(sql.Identifier(pg_schema))
        )
        assert _watermark(pg_url, pg_schema) == str(top)
        assert f"WHERE (seq <= {top})" in str(_index_definition(pg_url, pg_schema))
    finally:
        for s in stores:
            s.close()
