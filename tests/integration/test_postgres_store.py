"""PostgreSQL-specific behaviour on a real server: migrations, indexes and plans, errors.

The semantics shared with SQLite are in ``tests/contract``; this file checks what only the
PostgreSQL store has: its recorded migrations under concurrent opens, the HNSW and exact
search paths (against a numpy brute force), the GIN and time indexes, search_path and
time-zone independence, and psycopg errors translated at the boundary.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from memlane import (
    EpisodeInput,
    EpisodicMemory,
    FrozenClock,
    MemoryConfig,
    SchemaVersionError,
    SQLiteStore,
    StoreClosedError,
    StoreError,
    ValidationError,
)
from memlane.embeddings.fake import HashingEmbedder
from memlane.models import Episode
from memlane.stores.base import EpisodeFilter
from tests.pg_server import SKIP_ENV

if os.environ.get(SKIP_ENV) == "1":  # the only way to skip: without psycopg these tests must fail
    pytest.skip(f"PostgreSQL tests skipped explicitly ({SKIP_ENV}=1)", allow_module_level=True)

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from memlane.stores.postgres import PostgresStore
from memlane.stores.postgres import connection as pg_connection
from memlane.stores.postgres import filters as pg_filters
from memlane.stores.postgres.migrations import MIGRATIONS
from memlane.stores.postgres.vector_search import hnsw_settings
from tests.conftest import T0

DIMS = 32
N_ROWS = 5_000
HNSW_INDEX = "ix_memlane_episodes_embedding_hnsw"


def _unit(rng: np.random.Generator, n: int, dims: int = DIMS) -> NDArray[np.float32]:
    x = rng.standard_normal((n, dims)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _episode(i: int, tags: tuple[str, ...], model: str = f"rand-{DIMS}") -> Episode:
    return Episode(
        id=f"ep-{i:06d}",
        tenant_id="t",
        session_id="s",
        event_type="note",
        content=f"random vector {i}",
        tags=tags,
        importance=None if i % 3 else float(1 + i % 10),
        created_at=T0 - timedelta(minutes=i),
        embedding_model=model,
    )


def _drop(url: str, schema: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def _fetchall(
    url: str, query: str | sql.Composable, params: tuple[object, ...] = ()
) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(query, params).fetchall()


# -- a shared data set: 5,000 random unit vectors with tags of known selectivity ---------------


@dataclass
class RandomData:
    url: str
    schema: str
    vectors: NDArray[np.float32]
    keys: NDArray[np.int64]
    tags: list[tuple[str, ...]]

    def open(self, **kwargs: object) -> PostgresStore:
        return PostgresStore(self.url, schema=self.schema, **kwargs)  # type: ignore[arg-type]

    def brute_force(
        self, query: NDArray[np.float32], tag: str | None
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Keys and cosines of every row carrying ``tag``, best first (numpy, float64)."""
        rows = np.array([tag is None or tag in t for t in self.tags])
        cosine = self.vectors[rows].astype(np.float64) @ query.astype(np.float64)
        order = np.argsort(-cosine, kind="stable")
        return self.keys[rows][order], cosine[order]


@pytest.fixture(scope="module")
def random_data(pg_url: str) -> Iterator[RandomData]:
    """5,000 rows: every row tagged ``all``, 1 % also ``rare``, 10 % also ``tenth``; ANALYZEd."""
    schema = f"test_rand_{uuid.uuid4().hex[:12]}"
    rng = np.random.default_rng(42)
    vectors = _unit(rng, N_ROWS)
    tags = [
        ("all", *(("rare",) if i % 100 == 0 else ()), *(("tenth",) if i % 10 == 3 else ()))
        for i in range(N_ROWS)
    ]
    store = PostgresStore(pg_url, schema=schema)
    store.bind_embedding_model(f"rand-{DIMS}", DIMS)
    store.drop_vector_index()  # a bulk load: building the index afterwards is ~4x faster
    store.insert([_episode(i, tags[i]) for i in range(N_ROWS)], vectors)
    store.build_vector_index()
    keys = np.array(
        [
            r[0]
            for r in _fetchall(
                pg_url,
                sql.SQL("SELECT seq FROM {}.memlane_episodes ORDER BY id").format(sql.Identifier(schema)),
            )
        ],
        dtype=np.int64,
    )
    store.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("VACUUM ANALYZE {}.memlane_episodes").format(sql.Identifier(schema)))
    yield RandomData(pg_url, schema, vectors, keys, tags)
    _drop(pg_url, schema)


# -- migrations -------------------------------------------------------------------------------


def test_migrations_are_recorded_and_idempotent(pg_url: str, pg_schema: str) -> None:
    store = PostgresStore(pg_url, schema=pg_schema)
    assert store.schema_version == len(MIGRATIONS)
    store.close()
    PostgresStore(pg_url, schema=pg_schema).close()  # reopening applies nothing twice
    table = sql.SQL("SELECT version FROM {}.memlane_schema_migrations ORDER BY version").format(
        sql.Identifier(pg_schema)
    )
    assert [r[0] for r in _fetchall(pg_url, table)] == list(range(1, len(MIGRATIONS) + 1))
    indexes = {
        r[0]
        for r in _fetchall(pg_url, "SELECT indexname FROM pg_indexes WHERE schemaname = %s", (pg_schema,))
    }
    assert {
        "ix_memlane_episodes_session_time",
        "ix_memlane_episodes_time",
        "ix_memlane_episodes_tags",
        "memlane_episodes_tenant_id_key",
        "ix_memlane_episodes_id",
    } <= indexes
    assert HNSW_INDEX not in indexes  # the dimension is not known yet


def test_binding_types_the_column_and_builds_the_hnsw_index(pg_url: str, pg_schema: str) -> None:
    store = PostgresStore(pg_url, schema=pg_schema)
    memory = EpisodicMemory(store, HashingEmbedder())
    column_type = _fetchall(
        pg_url,
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
        (f'"{pg_schema}".memlane_episodes',),
    )
    assert column_type == [("vector(64)",)]
    (definition,) = _fetchall(
        pg_url,
        "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
        (pg_schema, HNSW_INDEX),
    )
    assert "hnsw" in str(definition[0]) and "vector_cosine_ops" in str(definition[0])
    memory.close()


def _open_and_bind(location: tuple[str, str]) -> tuple[int, tuple[str, int] | None]:
    store = PostgresStore(location[0], schema=location[1])
    store.bind_embedding_model("hashing-64", 64)
    result = (store.schema_version, store.embedding_model)
    store.close()
    return result


def test_processes_opening_a_new_schema_at_once_migrate_it_once(pg_url: str, pg_schema: str) -> None:
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.map(_open_and_bind, [(pg_url, pg_schema)] * 4)
    assert results == [(len(MIGRATIONS), ("hashing-64", 64))] * 4
    table = sql.SQL("SELECT version FROM {}.memlane_schema_migrations").format(sql.Identifier(pg_schema))
    assert sorted(r[0] for r in _fetchall(pg_url, table)) == list(range(1, len(MIGRATIONS) + 1))


def test_newer_schema_is_refused(pg_url: str, pg_schema: str) -> None:
    PostgresStore(pg_url, schema=pg_schema).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("INSERT INTO {}.memlane_schema_migrations (version) VALUES (%s)").format(
                sql.Identifier(pg_schema)
            ),
            (len(MIGRATIONS) + 1,),
        )
    with pytest.raises(SchemaVersionError, match="upgrade memlane"):
        PostgresStore(pg_url, schema=pg_schema)


def test_a_foreign_table_of_the_same_name_is_refused(pg_url: str, pg_schema: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(pg_schema)))
        conn.execute(sql.SQL("CREATE TABLE {}.memlane_episodes (x int)").format(sql.Identifier(pg_schema)))
    with pytest.raises(StoreError, match="did not create"):
        PostgresStore(pg_url, schema=pg_schema)


# -- vector search paths ----------------------------------------------------------------------


def test_large_unfiltered_search_uses_the_hnsw_index(random_data: RandomData) -> None:
    store = random_data.open(exact_search_limit=1_000)
    query = _unit(np.random.default_rng(7), 1)[0]
    plan = store.explain_vector_candidates(EpisodeFilter(tenant_id="t", session_id="s"), query, 200)
    assert plan.path == "hnsw" and plan.filtered_rows == 1_001  # counted up to the bound + 1
    assert HNSW_INDEX in plan.plan
    found = store.vector_candidates(EpisodeFilter(tenant_id="t", session_id="s"), query, 200)
    assert len(found) == 200 and not found.exhaustive
    truth, cosines = random_data.brute_force(query, None)
    assert len(set(found.keys.tolist()) & set(truth[:200].tolist())) >= 180  # approximate, but close
    by_key = dict(zip(truth.tolist(), cosines.tolist(), strict=True))
    np.testing.assert_allclose(found.cosine, [by_key[k] for k in found.keys.tolist()], atol=1e-5)
    store.close()


def test_the_hnsw_scan_runs_with_its_settings_on_an_autocommit_connection(
    random_data: RandomData, caplog: pytest.LogCaptureFixture
) -> None:
    # Without ef_search >= top_n the scan stops at 40 rows and the search falls back to exact.
    store = random_data.open(exact_search_limit=1_000)
    query = _unit(np.random.default_rng(19), 1)[0]
    with caplog.at_level(logging.DEBUG, logger="memlane.stores.postgres.vector_search"):
        found = store.vector_candidates(EpisodeFilter(tenant_id="t", session_id="s"), query, 200)
    assert len(found) == 200 and not found.exhaustive
    assert "falling back" not in caplog.text
    store.close()


@pytest.mark.parametrize("autocommit", [True, False])
def test_hnsw_settings_last_for_the_block_only(random_data: RandomData, autocommit: bool) -> None:
    with psycopg.connect(random_data.url, autocommit=autocommit) as conn, conn.cursor() as cur:
        with hnsw_settings(cur, 300):
            assert cur.execute("SHOW hnsw.ef_search").fetchall() == [("300",)]
            assert cur.execute("SHOW hnsw.iterative_scan").fetchall() == [("relaxed_order",)]
        if autocommit:  # its own transaction, committed
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        else:  # one statement of the caller's transaction
            conn.commit()
        assert cur.execute("SHOW hnsw.ef_search").fetchall() != [("300",)]  # back to the default
        if autocommit:
            with pytest.raises(psycopg.errors.DivisionByZero), hnsw_settings(cur, 300):
                cur.execute("SELECT 1 / 0")
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE  # rolled back


@pytest.mark.parametrize(("tag", "top_n"), [("rare", 200), ("tenth", 200), ("tenth", 20)])
def test_selective_filters_search_exactly(random_data: RandomData, tag: str, top_n: int) -> None:
    store = random_data.open()  # default limit: 5,000 rows are all "small"
    query = _unit(np.random.default_rng(11), 1)[0]
    flt = EpisodeFilter(tenant_id="t", tags=(tag,))
    plan = store.explain_vector_candidates(flt, query, top_n)
    assert plan.path == "exact" and HNSW_INDEX not in plan.plan
    found = store.vector_candidates(flt, query, top_n)
    truth, cosines = random_data.brute_force(query, tag)
    expected = min(top_n, len(truth))
    assert found.keys.tolist() == truth[:expected].tolist()  # exactly numpy's best, in order
    np.testing.assert_allclose(found.cosine, cosines[:expected], atol=1e-5)
    assert found.exhaustive == (len(truth) <= top_n)
    importance = {int(k): np.nan if i % 3 else float(1 + i % 10) for i, k in enumerate(random_data.keys)}
    np.testing.assert_array_equal(found.importance, [importance[k] for k in found.keys.tolist()])
    store.close()


@pytest.mark.parametrize("limit", [100, 4_999, 5_000])
@pytest.mark.parametrize(
    "flt",
    [
        EpisodeFilter(tenant_id="t", session_id="s"),  # the span of the session's seq index
        EpisodeFilter(tenant_id="t"),  # the span of the whole table
        EpisodeFilter(tenant_id="t", session_id="s", tags=("rare",)),  # span too wide: counted
        EpisodeFilter(tenant_id="t", session_id="other"),  # an empty scope: span 0
    ],
)
def test_the_seq_span_picks_the_path_the_count_would(
    random_data: RandomData, flt: EpisodeFilter, limit: int
) -> None:
    # The span skips the count only when it proves the filtered set within the bound: the path
    # is always the one the plain rule (count the filtered rows up to the bound + 1) gives.
    where, params = pg_filters.where(flt)
    table = sql.SQL("SELECT count(*) FROM {}.memlane_episodes").format(sql.Identifier(random_data.schema))
    counted = int(str(_fetchall(random_data.url, table + where, tuple(params))[0][0]))
    store = random_data.open(exact_search_limit=limit)
    query = _unit(np.random.default_rng(13), 1)[0]
    plan = store.explain_vector_candidates(flt, query, 50)
    assert plan.path == ("exact" if counted <= limit else "hnsw")
    assert plan.filtered_rows >= min(counted, limit + 1)
    found = store.vector_candidates(flt, query, 50)
    if plan.path == "exact":
        truth, _ = random_data.brute_force(query, flt.tags[0] if flt.tags else None)
        truth = truth[: min(50, counted)]
        assert found.keys.tolist() == truth.tolist()
        assert found.exhaustive == (counted <= 50)
    store.close()


@pytest.mark.parametrize(("top_n", "exhaustive"), [(N_ROWS - 1, False), (N_ROWS, True), (N_ROWS + 1, True)])
def test_exact_search_is_exhaustive_exactly_when_every_row_came_back(
    random_data: RandomData, top_n: int, exhaustive: bool
) -> None:
    store = random_data.open()
    query = _unit(np.random.default_rng(17), 1)[0]
    found = store.vector_candidates(EpisodeFilter(tenant_id="t", session_id="s"), query, top_n)
    assert len(found) == min(top_n, N_ROWS) and found.exhaustive == exhaustive
    store.close()


def test_hnsw_with_a_selective_filter_still_returns_enough_rows(random_data: RandomData) -> None:
    store = random_data.open(exact_search_limit=10)
    query = _unit(np.random.default_rng(5), 1)[0]
    flt = EpisodeFilter(tags=("rare",))  # 50 rows, scattered through the graph
    assert store.explain_vector_candidates(flt, query, 20).path == "hnsw"
    found = store.vector_candidates(flt, query, 20)
    truth, _ = random_data.brute_force(query, "rare")
    assert len(found) == 20 and set(found.keys.tolist()) <= set(truth.tolist())
    store.close()


def test_zero_vectors_fall_back_to_exact_search_and_score_zero(pg_url: str, pg_schema: str) -> None:
    # The cosine HNSW index skips zero-norm vectors, so the HNSW path finds nothing and
    # the store must fall back to the exact path (cosine 0, as in the SQLite store).
    store = PostgresStore(pg_url, schema=pg_schema, exact_search_limit=5)
    store.bind_embedding_model(f"rand-{DIMS}", DIMS)
    vectors = np.zeros((30, DIMS), dtype=np.float32)
    store.insert([_episode(i, ("zero",)) for i in range(30)], vectors)
    query = _unit(np.random.default_rng(1), 1)[0]
    found = store.vector_candidates(EpisodeFilter(), query, 10)
    assert len(found) == 10 and np.all(found.cosine == 0.0)
    store.close()


def test_search_stays_correct_without_the_index_and_it_can_be_rebuilt(random_data: RandomData) -> None:
    store = random_data.open(exact_search_limit=100)
    query = _unit(np.random.default_rng(3), 1)[0]
    flt = EpisodeFilter(tenant_id="t")
    try:
        store.drop_vector_index()
        plan = store.explain_vector_candidates(flt, query, 50)
        assert plan.path == "hnsw" and HNSW_INDEX not in plan.plan
        found = store.vector_candidates(flt, query, 50)
        truth, _ = random_data.brute_force(query, None)
        assert found.keys.tolist() == truth[:50].tolist()  # without the index the query is exact
    finally:
        store.build_vector_index()
    assert HNSW_INDEX in store.explain_vector_candidates(flt, query, 50).plan
    store.close()


# -- other indexes ----------------------------------------------------------------------------


def test_tag_filters_use_the_gin_index(random_data: RandomData) -> None:
    table = sql.SQL("{}.memlane_episodes").format(sql.Identifier(random_data.schema))
    plan = _fetchall(
        random_data.url,
        sql.SQL("EXPLAIN SELECT count(*) FROM {} WHERE tags @> %s::text[]").format(table),
        (["rare", "all"],),
    )
    assert "ix_memlane_episodes_tags" in " ".join(str(r[0]) for r in plan)
    store = random_data.open()
    assert store.count(EpisodeFilter(tags=("rare", "all"))) == 50
    assert store.count(EpisodeFilter(tags=("rare", "tenth"))) == 0
    store.close()


def test_retention_is_one_indexed_delete(random_data: RandomData) -> None:
    table = sql.SQL("{}.memlane_episodes").format(sql.Identifier(random_data.schema))
    plan = _fetchall(
        random_data.url,
        sql.SQL("EXPLAIN DELETE FROM {} WHERE created_at < %s").format(table),
        (T0 - timedelta(days=365),),
    )
    assert "ix_memlane_episodes_time" in " ".join(str(r[0]) for r in plan)


# -- connection-level independence ------------------------------------------------------------


def _recall_reads(store: PostgresStore) -> None:
    """The reads of a recall after its search: neighbours (the postings caught up) and fetch."""
    store.insert([_episode(i, ("x",)) for i in range(3)], _unit(np.random.default_rng(2), 3))
    found = store.neighbours(EpisodeFilter(), [1, 2, 3])
    assert found.keys.tolist() == [1, 2, 3] and found.adjacent[1].tolist() == [-1, 1, 3, -1]
    assert sorted(store.fetch([1, 3])) == [1, 3]


def test_connections_used_just_now_are_handed_out_unchecked(
    pg_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks: list[object] = []
    real_check = ConnectionPool.check_connection

    def counted_check(conn: psycopg.Connection[Any]) -> None:
        checks.append(conn)
        real_check(conn)

    monkeypatch.setattr(ConnectionPool, "check_connection", counted_check)
    store = PostgresStore(pg_url, schema=pg_schema, min_size=1, max_size=1)
    store.bind_embedding_model(f"rand-{DIMS}", DIMS)
    monkeypatch.setattr(pg_connection, "CHECK_IDLE_S", 1e9)  # every return is "just now"
    checks.clear()
    _recall_reads(store)
    assert checks == []  # none was idle: no empty-query round trip
    monkeypatch.setattr(pg_connection, "CHECK_IDLE_S", -1.0)  # every connection is "idle"
    assert list(store.fetch([1])) == [1] and len(checks) == 1
    store.close()


def test_an_idle_connection_the_server_closed_is_replaced(
    pg_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PostgresStore(pg_url, schema=pg_schema, min_size=1, max_size=1)
    store.bind_embedding_model(f"rand-{DIMS}", DIMS)
    _recall_reads(store)
    with store.transaction("pid") as cur:
        row = cur.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    _fetchall(pg_url, "SELECT pg_terminate_backend(%s)", (row[0],))
    monkeypatch.setattr(pg_connection, "CHECK_IDLE_S", -1.0)  # it sat idle "long enough"
    assert sorted(store.fetch([1, 2])) == [1, 2]  # the check dropped it; a new one answered
    store.close()


def test_single_statement_reads_work_on_a_borrowed_pool_outside_autocommit(
    pg_url: str, pg_schema: str
) -> None:
    pool: ConnectionPool[Any] = ConnectionPool(
        pg_url, min_size=1, max_size=1, kwargs={"autocommit": False}, open=True
    )
    store = PostgresStore(pool, schema=pg_schema)
    store.bind_embedding_model(f"rand-{DIMS}", DIMS)
    _recall_reads(store)
    with pool.connection() as conn:
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE  # nothing left open
    store.close()
    pool.close()


def test_works_with_an_empty_search_path_and_another_time_zone(pg_url: str, pg_schema: str) -> None:
    store = PostgresStore(
        pg_url, schema=pg_schema, connect_kwargs={"options": "-c search_path= -c TimeZone=Asia/Kolkata"}
    )
    memory = EpisodicMemory(store, HashingEmbedder())
    at = datetime(2026, 3, 1, 9, 30, 15, 123456, tzinfo=UTC)
    ep = memory.remember_episode("note", "window seat", tags=["travel"], created_at=at)
    stored = memory.get_episode(ep.id)
    assert stored == ep and stored is not None and stored.created_at.tzinfo is UTC
    (hit,) = memory.recall_episodes("window seat", tags=["travel"])
    assert hit.episode == ep
    memory.close()


def test_default_schema_is_the_connections_current_schema(pg_url: str, pg_schema: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(pg_schema)))
    store = PostgresStore(pg_url, connect_kwargs={"options": f"-c search_path={pg_schema}"})
    assert store.schema == pg_schema and pg_schema in store.location
    assert store.stats(EpisodeFilter()).schema_version == len(MIGRATIONS)
    store.close()


def test_a_borrowed_autocommit_pool_is_used_and_left_open(pg_url: str, pg_schema: str) -> None:
    pool: ConnectionPool = ConnectionPool(
        pg_url, min_size=1, max_size=2, kwargs={"autocommit": True}, open=True
    )
    try:
        store = PostgresStore(pool, schema=pg_schema)
        memory = EpisodicMemory(store, HashingEmbedder())
        with pytest.raises(ValidationError):  # a NUL cannot be stored; nothing is written
            memory.remember_episodes([EpisodeInput("note", "fine"), EpisodeInput("note", "nul \x00 inside")])
        memory.remember_episode("note", "kept")
        assert [h.episode.content for h in memory.recall_episodes("kept")] == ["kept"]
        memory.close()
        with pool.connection() as conn:  # still usable by its owner
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        pool.close()


def test_metadata_round_trips_exactly(pg_url: str, pg_schema: str) -> None:
    memory = EpisodicMemory(PostgresStore(pg_url, schema=pg_schema), HashingEmbedder())
    metadata = {"z": 1, "a": [1.0, 1e20, 0.1, "ü🚀", None, True], "nested": {"k": {"deep": -2}}}
    ep = memory.remember_episode("note", "x", metadata=metadata)
    stored = memory.get_episode(ep.id)
    assert stored is not None and stored.metadata == metadata
    assert [type(v) for v in stored.metadata["a"]] == [type(v) for v in metadata["a"]]  # type: ignore[index]
    memory.close()


def test_delete_removes_one_episode_of_the_right_tenant(pg_url: str, pg_schema: str) -> None:
    store = PostgresStore(pg_url, schema=pg_schema)
    memory = EpisodicMemory(store, HashingEmbedder(), tenant_id="t1")
    ep = memory.remember_episode("note", "forget me", tags=["x"])
    assert not store.delete(ep.id, "t2")  # another tenant's id: untouched
    assert store.delete(ep.id, "t1")
    assert not store.delete(ep.id, None)  # already gone
    assert store.get(ep.id) is None and memory.recall_episodes("forget me") == []
    memory.close()


def test_writers_crossing_scopes_in_opposite_orders_wait_on_no_statistics_row(
    pg_url: str, pg_schema: str
) -> None:
    """Two transactions deleting in scopes x, y and y, x never wait on each other (schema migration 12).

    Before migration 12 each delete locked its scope's ``memlane_scope_stats`` row at once, so A
    (x then y) and B (y then x) deadlocked; LangGraph's ``test_large_batches`` hit it now and then.
    Now the statistics change at commit, in key order: A's second delete must not wait at all
    (``lock_timeout`` turns a wait into an error instead of a hang), and the kept statistics equal
    the rows that remain.
    """
    memory = EpisodicMemory(PostgresStore(pg_url, schema=pg_schema), HashingEmbedder(), tenant_id="t")
    ids = {
        scope: [
            memory.with_context(session_id=scope).remember_episode("note", f"{scope} note {i}").id
            for i in range(2)
        ]
        for scope in ("x", "y")
    }
    memory.close()
    episodes = sql.SQL("DELETE FROM {}.memlane_episodes WHERE id = %s").format(sql.Identifier(pg_schema))
    with psycopg.connect(pg_url) as a, psycopg.connect(pg_url) as b:
        for conn in (a, b):
            conn.execute("SET lock_timeout = '5s'")
        a.execute(episodes, (ids["x"][0],))
        b.execute(episodes, (ids["y"][0],))
        a.execute(episodes, (ids["y"][1],))
        b.execute(episodes, (ids["x"][1],))
        a.commit()
        b.commit()
    stats = sql.SQL(
        "SELECT session_id, rows FROM {}.memlane_scope_stats WHERE tenant_id = 't' ORDER BY session_id"
    ).format(sql.Identifier(pg_schema))
    assert _fetchall(pg_url, stats) == [("x", 0), ("y", 0)]
    pending = sql.SQL("SELECT count(*) FROM {}.memlane_scope_stats_pending").format(sql.Identifier(pg_schema))
    assert _fetchall(pg_url, pending) == [(0,)]


# -- errors translated at the boundary --------------------------------------------------------


def test_unreachable_server_is_a_store_error_with_the_cause(tmp_path: object) -> None:
    with pytest.raises(StoreError) as info:
        PostgresStore(f"postgresql://nobody@/memlane?host={tmp_path}", timeout_s=2)
    assert isinstance(info.value.__cause__, psycopg.OperationalError)


def test_malformed_url_is_a_store_error_with_the_cause() -> None:
    with pytest.raises(StoreError) as info:
        PostgresStore("postgresql://localhost:notaport/db")
    assert isinstance(info.value.__cause__, psycopg.Error)


@pytest.mark.parametrize("schema", ["", "1abc", 'x"; DROP TABLE y; --', "a" * 64, "with space"])
def test_bad_schema_names_are_refused(pg_url: str, schema: str) -> None:
    with pytest.raises(ValidationError, match="schema"):
        PostgresStore(pg_url, schema=schema)


@pytest.mark.parametrize("dims", [0, -1, 16_001, 2.5, True])
def test_bad_dimensions_are_refused(pg_url: str, pg_schema: str, dims: object) -> None:
    store = PostgresStore(pg_url, schema=pg_schema)
    with pytest.raises(ValidationError, match="dims"):
        store.bind_embedding_model("m", dims)  # type: ignore[arg-type]
    assert store.embedding_model is None
    store.close()


def test_closed_pool_and_closed_store_raise_typed_errors(pg_url: str, pg_schema: str) -> None:
    pool: ConnectionPool = ConnectionPool(pg_url, min_size=1, max_size=2, open=True)
    store = PostgresStore(pool, schema=pg_schema)
    pool.close()
    with pytest.raises(StoreError) as info:
        store.get("x")
    assert isinstance(info.value, StoreClosedError)
    assert isinstance(info.value.__cause__, psycopg.Error)
    owned = PostgresStore(pg_url, schema=pg_schema)
    owned.close()
    owned.close()  # idempotent
    with pytest.raises(StoreClosedError):
        owned.count(EpisodeFilter())


def test_driver_errors_inside_a_query_are_translated(pg_url: str, pg_schema: str) -> None:
    store = PostgresStore(pg_url, schema=pg_schema)
    _drop(pg_url, pg_schema)  # the tables vanish under the store
    with pytest.raises(StoreError) as info:
        store.count(EpisodeFilter())
    assert isinstance(info.value.__cause__, psycopg.errors.UndefinedTable)
    store.close()


def test_importing_memlane_does_not_import_psycopg() -> None:
    code = (
        "import sys, memlane, memlane.stores, memlane.assembly; assert 'psycopg' not in sys.modules; "
        "import memlane.stores.postgres"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_recall_through_the_facade_with_retention(pg_url: str, pg_schema: str) -> None:
    memory = EpisodicMemory(
        PostgresStore(pg_url, schema=pg_schema),
        HashingEmbedder(),
        config=MemoryConfig(retention_days=30, prune_probability=0.0),
    )
    memory.remember_episode("note", "old apple", created_at=T0 - timedelta(days=60))
    memory.remember_episode("note", "new apple", created_at=T0)
    assert [h.episode.content for h in memory.recall_episodes("apple", now=T0, limit=10)] == ["new apple"]
    assert memory.prune(now=T0) == 1
    assert memory.store.count(EpisodeFilter()) == 1
    memory.close()


def test_retrieval_counts_are_buffered_off_the_recall_path(pg_url: str, pg_schema: str) -> None:
    """The PostgreSQL store shares the buffered bookkeeping (memlane.stores.retrievals) with SQLite."""
    memory = EpisodicMemory(PostgresStore(pg_url, schema=pg_schema), HashingEmbedder())
    reader = PostgresStore(pg_url, schema=pg_schema)  # another store object: sees only what was written

    def count(episode_id: str) -> int:
        found = reader.get(episode_id)
        assert found is not None
        return found.retrieve_count

    try:
        ep = memory.remember_episode("pref", "user prefers window seats")
        assert [h.episode.id for h in memory.recall_episodes("window seats")] == [ep.id]
        assert count(ep.id) == 0  # the recall wrote nothing
        memory.remember_episode("pref", "user likes tea")  # the next write transaction carries it
        assert count(ep.id) == 1
        memory.recall_episodes("window seats")
    finally:
        memory.close()  # a clean shutdown writes what is pending
    assert count(ep.id) == 2
    reader.close()


_RECOUNT = (
    "SELECT tenant_id, session_id, term, count(*) FROM (SELECT DISTINCT e.seq, e.tenant_id, e.session_id, "
    "u.term FROM {s}.memlane_episodes AS e, unnest(string_to_array(e.terms, ' ')) AS u(term)) AS d "
    "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
)


def _term_df(pg_url: str, pg_schema: str) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The kept per-scope document frequencies (non-zero) and a recount from the stored rows."""
    schema = sql.Identifier(pg_schema)
    kept = sql.SQL(
        "SELECT tenant_id, session_id, term, df FROM {}.memlane_term_df WHERE df <> 0 ORDER BY 1, 2, 3"
    ).format(schema)
    return _fetchall(pg_url, kept), _fetchall(pg_url, sql.SQL(_RECOUNT).format(s=schema))


def test_term_document_frequencies_follow_every_write(pg_url: str, pg_schema: str) -> None:
    """``memlane_term_df`` (schema migration 14) equals a recount after inserts, merges and every delete."""
    store = PostgresStore(pg_url, schema=pg_schema)
    memory = EpisodicMemory(store, HashingEmbedder(), tenant_id="t1", clock=FrozenClock(T0))
    other = memory.with_context(tenant_id="t2", session_id="s2")
    first = memory.remember_episode("note", "the cat sat on the mat, the cat")
    memory.remember_episodes([EpisodeInput("note", f"dog {i} and cat {i % 3}") for i in range(20)])
    other.remember_episode("note", "cat and dog in another tenant", session_scoped=True)
    memory.remember_episode("note", "old news about cats", created_at=T0 - timedelta(days=400))
    kept, recount = _term_df(pg_url, pg_schema)
    assert kept == recount and len(kept) > 10
    assert memory.delete_episode(first.id)
    store.delete_created_before(T0 - timedelta(days=300))
    store.delete_session_scoped("t2", "s2")
    kept, recount = _term_df(pg_url, pg_schema)
    assert kept == recount
    pending = sql.SQL("SELECT count(*) FROM {}.memlane_term_df_pending").format(sql.Identifier(pg_schema))
    assert _fetchall(pg_url, pending) == [(0,)]
    memory.close()


def test_term_document_frequencies_are_filled_by_migration_14(pg_url: str, pg_schema: str) -> None:
    memory = EpisodicMemory(PostgresStore(pg_url, schema=pg_schema), HashingEmbedder(), tenant_id="t")
    memory.remember_episodes([EpisodeInput("note", f"alpha beta {i % 4}") for i in range(12)])
    memory.close()
    schema = sql.Identifier(pg_schema)
    with psycopg.connect(pg_url, autocommit=True) as conn, conn.transaction():  # back to version 13
        conn.execute(
            sql.SQL("DROP TABLE {}.memlane_term_df, {}.memlane_term_df_pending").format(schema, schema)
        )
        conn.execute(sql.SQL("DELETE FROM {}.memlane_schema_migrations WHERE version >= 14").format(schema))
    store = PostgresStore(pg_url, schema=pg_schema)
    assert store.schema_version == len(MIGRATIONS) >= 14
    kept, recount = _term_df(pg_url, pg_schema)
    assert kept == recount and ("t", "default", "alpha", 12) in kept
    store.close()


def test_vectors_of_rows_past_two_kilobytes_stay_in_the_heap(pg_url: str, pg_schema: str) -> None:
    # Migration 15: a 384-dim vector (1.5 kB) with a turn of ~900 characters made a row past the
    # 2 kB TOAST threshold, and pgvector's EXTERNAL storage moved the vector to the TOAST table
    # (an exact scan then fetched it through the TOAST index). Now the row stays whole.
    memory = EpisodicMemory(PostgresStore(pg_url, schema=pg_schema), HashingEmbedder(384), tenant_id="t")
    words = " ".join(f"word{i}" for i in range(120))
    memory.remember_episodes([EpisodeInput("note", f"{words} {k}") for k in range(20)])
    memory.close()
    toast = sql.SQL(
        "SELECT pg_catalog.pg_relation_size(reltoastrelid), "
        "(SELECT min(pg_catalog.pg_column_size(e)) FROM {}.memlane_episodes AS e) "
        "FROM pg_catalog.pg_class WHERE oid = %s::regclass"
    ).format(sql.Identifier(pg_schema))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        toast_bytes, row_bytes = conn.execute(toast, (f'"{pg_schema}".memlane_episodes',)).fetchone() or (
            0,
            0,
        )
    assert row_bytes > 2100  # past the threshold: these rows used to be toasted
    assert toast_bytes == 0


@pytest.mark.parametrize("top_n", [1, 7, 40])
def test_keyword_top_k_in_the_server_keeps_every_hit_of_scoring_all_matches(
    pg_url: str, pg_schema: str, tmp_path: Path, top_n: int
) -> None:
    # The server scores every match and sends only those within SCORE_MARGIN of its top_n-th best
    # (memlane.stores.postgres.fts); Python rescores them. Many matches, repeated words (tf > 1),
    # lengths that vary and exact ties: the same rows and scores as the SQLite store's exact top-k.
    rng = np.random.default_rng(7)
    words = [f"w{k}x" for k in range(16)]  # each in ~15 % of the rows (none dropped as common)
    texts = [
        " ".join([*rng.choice(words, size=int(rng.integers(1, 5))).tolist(), f"unique{i}"])
        for i in range(600)
    ]
    stores = [PostgresStore(pg_url, schema=pg_schema), SQLiteStore(tmp_path / "m.db")]
    found = []
    for store in stores:
        memory = EpisodicMemory(store, HashingEmbedder(), tenant_id="t", session_id="s")
        memory.remember_episodes([EpisodeInput("note", text) for text in texts])
        flt = EpisodeFilter(tenant_id="t", session_id="s")
        per_query = []
        for query in (["w0x"], ["w1x", "w2x"], ["w3x", "w4x", "w5x"], ["w0x", "unique3"]):
            hits = store.keyword_candidates(flt, query, top_n)
            episodes = store.fetch([int(k) for k in hits.keys])
            per_query.append(
                [(episodes[int(k)].content, s) for k, s in zip(hits.keys, hits.score, strict=True)]
            )
        found.append(per_query)
        memory.close()
    assert all(len(hits) == top_n for hits in found[0][:3])  # more rows match than are returned
    assert found[0] == found[1]


def test_keyword_statistics_of_batches_equal_a_recount(pg_url: str, pg_schema: str) -> None:
    """The deltas counted from the written rows (:func:`stats_deltas`) equal a recount of the stored rows.

    Batches over several scopes, rows without keyword terms, repeated terms within a row; and the
    Python reading of a terms column agrees with ``string_to_array(terms, ' ')`` on edge strings.
    """
    from memlane.stores.postgres.lifecycle import stats_deltas

    store = PostgresStore(pg_url, schema=pg_schema)
    memory = EpisodicMemory(store, HashingEmbedder(), tenant_id="t1", clock=FrozenClock(T0))
    scopes = [memory, memory.with_context(session_id="s2"), memory.with_context(tenant_id="t2")]
    for n, scope in enumerate(scopes):
        texts = [f"cat cat {i % 4} dog {i}" for i in range(30 + n)] + ["...", "the a of"]
        scope.remember_episodes([EpisodeInput("note", t) for t in texts])
    kept, recount = _term_df(pg_url, pg_schema)
    assert kept == recount and len(kept) > 30
    schema = sql.Identifier(pg_schema)
    stats = sql.SQL("SELECT tenant_id, session_id, rows, tokens FROM {}.memlane_scope_stats ORDER BY 1, 2")
    rows = sql.SQL(
        "SELECT tenant_id, session_id, count(*), sum(token_count) FROM {}.memlane_episodes GROUP BY 1, 2 "
        "ORDER BY 1, 2"
    )
    assert _fetchall(pg_url, stats.format(schema)) == _fetchall(pg_url, rows.format(schema))
    memory.close()
    edges = ["a", "a b a", "a  b", " a", "", None]
    _, term_df = stats_deltas([("t", f"s{i}", terms, 0) for i, terms in enumerate(edges)])
    python = sorted(zip(*term_df, strict=True))
    server = _fetchall(
        pg_url,
        sql.SQL(
            "SELECT 't', 's' || (i - 1), u.term, count(DISTINCT u.term) FROM unnest(%s::text[]) WITH "
            "ORDINALITY AS x(terms, i), unnest(string_to_array(x.terms, ' ')) AS u(term) GROUP BY 2, 3"
        ),
        (edges,),
    )
    assert python == sorted(tuple(r) for r in server)
