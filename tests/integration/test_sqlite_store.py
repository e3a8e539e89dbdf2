"""SQLite-specific behaviour: the file, its schema version, and driver errors translated."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from memlane import (
    EpisodicMemory,
    MemoryConfig,
    SchemaVersionError,
    SQLiteStore,
    StoreClosedError,
    StoreError,
)
from memlane.embeddings.fake import HashingEmbedder
from memlane.stores.sqlite.migrations import MIGRATIONS
from tests.conftest import T0


def test_new_file_gets_schema_wal_and_indexes(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "dir" / "m.db"
    store = SQLiteStore(path)
    assert store.schema_version == len(MIGRATIONS)
    store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"ix_episodes_session_time", "ix_episodes_time", "ix_episode_tags_seq"} <= indexes
    plan = " ".join(
        str(r) for r in conn.execute("EXPLAIN QUERY PLAN DELETE FROM episodes WHERE created_at_us < 5")
    )
    assert "ix_episodes_time" in plan  # retention is one indexed range delete


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    SQLiteStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(SchemaVersionError, match="upgrade memlane"):
        SQLiteStore(path)


def test_foreign_database_and_garbage_file_are_store_errors(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE users (id INTEGER)")
    with pytest.raises(StoreError, match="not a memlane store"):
        SQLiteStore(foreign)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError) as info:
        SQLiteStore(garbage)
    assert isinstance(info.value.__cause__, sqlite3.Error)  # translated, with the cause chained


def test_closed_store_raises_typed_error(tmp_path: Path) -> None:
    memory = EpisodicMemory(SQLiteStore(tmp_path / "m.db"), HashingEmbedder())
    memory.close()
    memory.close()  # idempotent
    with pytest.raises(StoreClosedError):
        memory.recall_episodes()
    with pytest.raises(StoreClosedError):
        memory.store.get("x")


def test_vectors_survive_reopen_and_deletions_elsewhere_rebuild_the_index(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    embedder = HashingEmbedder()
    a = EpisodicMemory(
        SQLiteStore(path), embedder, config=MemoryConfig(retention_days=30, prune_probability=0)
    )
    a.remember_episode("note", "old apple", created_at=T0 - timedelta(days=60))
    a.remember_episode("note", "new apple", created_at=T0)
    b = EpisodicMemory(SQLiteStore(path), embedder)  # another store object, no retention
    assert len(b.recall_episodes("apple", now=T0, limit=10)) == 2  # b's index now holds both
    assert a.prune(now=T0) == 1
    assert [h.episode.content for h in b.recall_episodes("apple", now=T0, limit=10)] == ["new apple"]
    a.close()
    b.close()
    c = EpisodicMemory(SQLiteStore(path), embedder)
    (hit,) = c.recall_episodes("new apple", now=T0)
    assert hit.breakdown is not None and hit.breakdown.dense == pytest.approx(1.0, abs=1e-6)  # vector intact
    c.close()
