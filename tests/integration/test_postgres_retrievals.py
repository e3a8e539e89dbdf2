"""PostgreSQL retrieval bookkeeping kept off the episode rows (``memlane_retrievals``, schema migration 20).

A flush upserts the counts added since insert into the narrow side table; every episode read adds
them to the episode's own ``retrieve_count`` / ``last_retrieved_at`` (the values written at
insert). These tests check that what a reader sees is what the single ``UPDATE`` of the episodes
produced before: the same values as the SQLite store (which still updates its rows) for the same
operations, imported counts kept and added to, side rows gone with their episodes, existing counts
kept by the migration, and the episode reads still planned on their indexes.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from memlane import EpisodeInput, EpisodicMemory, FrozenClock
from memlane.embeddings.fake import HashingEmbedder
from memlane.stores.base import EpisodeFilter, Store
from memlane.stores.sqlite import SQLiteStore
from tests.conftest import T0
from tests.pg_server import SKIP_ENV, schema_at_version

if os.environ.get(SKIP_ENV) == "1":
    pytest.skip(f"PostgreSQL tests skipped explicitly ({SKIP_ENV}=1)", allow_module_level=True)

import psycopg
from psycopg import sql

from memlane.stores.postgres import PostgresStore
from memlane.stores.postgres import migrations as pg_migrations

EARLIER = T0 - timedelta(days=3)
LATER = T0 + timedelta(days=30)
"""``last_retrieved_at`` of imported episodes: before and after the recalls of the tests."""

_MIGRATION = next(i for i, m in enumerate(pg_migrations.MIGRATIONS) if "memlane_retrievals" in str(m[0]))
"""Index of the migration that creates ``memlane_retrievals`` (its number is ``_MIGRATION + 1``)."""


def _items() -> list[EpisodeInput]:
    """Three episodes: new, imported with an older and with a newer last retrieval."""
    return [
        EpisodeInput("note", "the user flies to lisbon", id="new"),
        EpisodeInput("note", "lisbon hotel booked", id="old", retrieve_count=5, last_retrieved_at=EARLIER),
        EpisodeInput("note", "lisbon trip planned", id="ahead", retrieve_count=2, last_retrieved_at=LATER),
    ]


def _bookkeeping(store: Store) -> list[tuple[str, int, object]]:
    """``(id, retrieve_count, last_retrieved_at)`` of every episode, by id."""
    return sorted((e.id, e.retrieve_count, e.last_retrieved_at) for e in store.iter_episodes(EpisodeFilter()))


def _run(store: Store) -> list[tuple[str, int, object]]:
    """Import, recall twice (an hour apart), flush; the bookkeeping a reader then sees."""
    clock = FrozenClock(T0)
    memory = EpisodicMemory(store, HashingEmbedder(), clock=clock)
    memory.remember_episodes(_items())
    for _ in range(2):
        assert {h.episode.id for h in memory.recall_episodes("lisbon", limit=10)} == {"new", "old", "ahead"}
        clock.advance(timedelta(hours=1))
    memory.flush()
    found = _bookkeeping(store)
    memory.close()
    return found


def test_counts_after_recalls_equal_the_sqlite_stores(tmp_path: Path, pg_url: str, pg_schema: str) -> None:
    expected = [
        ("ahead", 4, LATER),  # imported history kept: 2 + 2, the later time stays
        ("new", 2, T0 + timedelta(hours=1)),
        ("old", 7, T0 + timedelta(hours=1)),  # 5 + 2
    ]
    assert _run(SQLiteStore(str(tmp_path / "m.db"))) == expected
    assert _run(PostgresStore(pg_url, schema=pg_schema)) == expected


def _side_rows(url: str, schema: str) -> list[tuple[object, ...]]:
    query = sql.SQL(
        "SELECT e.id, r.added_retrievals FROM {s}.memlane_retrievals r "
        "JOIN {s}.memlane_episodes e USING (tenant_id, seq) ORDER BY e.id"
    ).format(s=sql.Identifier(schema))
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(query).fetchall()


def _own_columns(url: str, schema: str) -> list[tuple[object, ...]]:
    query = sql.SQL(
        "SELECT id, retrieve_count, last_retrieved_at FROM {}.memlane_episodes ORDER BY id"
    ).format(sql.Identifier(schema))
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(query).fetchall()


def test_a_flush_writes_the_side_table_and_leaves_the_episode_rows(pg_url: str, pg_schema: str) -> None:
    _run(PostgresStore(pg_url, schema=pg_schema))
    assert _side_rows(pg_url, pg_schema) == [("ahead", 2), ("new", 2), ("old", 2)]
    assert _own_columns(pg_url, pg_schema) == [("ahead", 2, LATER), ("new", 0, None), ("old", 5, EARLIER)]


def _count_side_rows(url: str, schema: str) -> int:
    query = sql.SQL("SELECT count(*) FROM {}.memlane_retrievals").format(sql.Identifier(schema))
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(query).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("how", ["delete", "retention"])
def test_deleting_episodes_deletes_their_side_rows(pg_url: str, pg_schema: str, how: str) -> None:
    _run(PostgresStore(pg_url, schema=pg_schema))
    store = PostgresStore(pg_url, schema=pg_schema)
    if how == "delete":
        assert store.delete("old", None)
        assert [r[0] for r in _side_rows(pg_url, pg_schema)] == ["ahead", "new"]
        assert _count_side_rows(pg_url, pg_schema) == 2
    else:
        assert store.delete_created_before(LATER, None) == 3
        assert _count_side_rows(pg_url, pg_schema) == 0
    store.close()


def test_counts_of_a_deleted_episode_are_dropped_at_the_flush(pg_url: str, pg_schema: str) -> None:
    """Keys of episodes deleted while their counts were buffered write nothing (as the UPDATE did)."""
    store = PostgresStore(pg_url, schema=pg_schema)
    memory = EpisodicMemory(store, HashingEmbedder(), clock=FrozenClock(T0))
    memory.remember_episodes(_items())
    memory.recall_episodes("lisbon", limit=10)
    other = PostgresStore(pg_url, schema=pg_schema)  # another process's store, say
    assert other.delete("new", None)
    other.close()
    memory.flush()
    assert [r[0] for r in _side_rows(pg_url, pg_schema)] == ["ahead", "old"]
    assert _count_side_rows(pg_url, pg_schema) == 2
    memory.close()


def test_the_migration_keeps_existing_counts(pg_url: str, pg_schema: str) -> None:
    schema = sql.Identifier(pg_schema)
    schema_at_version(pg_url, schema, _MIGRATION)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL(
                "INSERT INTO {}.memlane_episodes (id, tenant_id, session_id, event_type, content, "
                "created_at, valid_from, recorded_at, retrieve_count, last_retrieved_at) "
                "VALUES ('e1', 'default', 'default', 'note', 'hello lisbon', %s, %s, %s, 3, %s)"
            ).format(schema),
            (EARLIER, EARLIER, EARLIER, EARLIER),
        )
    store = PostgresStore(pg_url, schema=pg_schema)
    assert store.schema_version == len(pg_migrations.MIGRATIONS)
    before = store.get("e1")
    assert before is not None
    assert (before.retrieve_count, before.last_retrieved_at) == (3, EARLIER)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute(sql.SQL("SELECT seq FROM {}.memlane_episodes").format(schema)).fetchone()
    assert row is not None
    store.record_retrievals([int(row[0])], T0)
    store.flush()
    after = store.get("e1")
    assert after is not None
    assert (after.retrieve_count, after.last_retrieved_at) == (4, T0)
    store.close()
