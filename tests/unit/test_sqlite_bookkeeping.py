"""SQLite retrieval bookkeeping: buffered off the recall path, never waiting for a writer, not lost."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memlane import EpisodicMemory, FrozenClock, SQLiteStore
from memlane.embeddings.fake import HashingEmbedder
from memlane.stores.retrievals import FLUSH_EVERY
from tests.conftest import T0


def _count(db: Path, episode_id: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(
            conn.execute("SELECT retrieve_count FROM episodes WHERE id = ?", (episode_id,)).fetchone()[0]
        )
    finally:
        conn.close()


def test_counts_are_deferred_while_another_writer_holds_the_lock(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    memory = EpisodicMemory(SQLiteStore(db), HashingEmbedder(), clock=FrozenClock(T0))
    ep = memory.remember_episode("pref", "user prefers window seats")
    other = sqlite3.connect(db, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # a long ingest elsewhere
        for _ in range(FLUSH_EVERY):  # the last recall's flush finds the lock taken and defers
            assert [h.episode.id for h in memory.recall_episodes("window seats")] == [ep.id]
        other.execute("ROLLBACK")
    finally:
        other.close()
    assert _count(db, ep.id) == 0  # deferred, recall did not wait
    memory.flush()
    stored = memory.get_episode(ep.id)
    assert stored is not None and (stored.retrieve_count, stored.last_retrieved_at) == (FLUSH_EVERY, T0)
    memory.close()


def test_counts_are_written_every_n_recalls(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with EpisodicMemory(SQLiteStore(db), HashingEmbedder(), clock=FrozenClock(T0)) as memory:
        ep = memory.remember_episode("pref", "user prefers window seats")
        for _ in range(FLUSH_EVERY - 1):
            memory.recall_episodes("window seats")
        assert _count(db, ep.id) == 0  # buffered
        memory.recall_episodes("window seats")
        assert _count(db, ep.id) == FLUSH_EVERY  # the n-th recall wrote them


def test_counts_ride_on_the_next_write_and_survive_close(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    memory = EpisodicMemory(SQLiteStore(db), HashingEmbedder(), clock=FrozenClock(T0))
    ep = memory.remember_episode("pref", "user prefers window seats")
    memory.recall_episodes("window seats")
    memory.remember_episode("pref", "deploy failed")  # the insert transaction writes them
    assert _count(db, ep.id) == 1
    memory.recall_episodes("window seats")
    memory.close()  # a clean shutdown writes what is buffered
    assert _count(db, ep.id) == 2


def test_a_shared_store_is_flushed_when_its_memory_closes(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    store = SQLiteStore(db)
    memory = EpisodicMemory(store, HashingEmbedder(), clock=FrozenClock(T0))
    ep = memory.remember_episode("pref", "user prefers window seats")
    memory.recall_episodes("window seats")
    memory.close()  # does not own the store: flushes it
    assert _count(db, ep.id) == 1
    store.close()
