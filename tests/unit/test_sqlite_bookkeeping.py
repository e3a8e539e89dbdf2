"""SQLite retrieval bookkeeping never waits for another writer: counts are deferred, not lost."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memlane import EpisodicMemory, FrozenClock, SQLiteStore
from memlane.embeddings.fake import HashingEmbedder
from tests.conftest import T0


def test_counts_are_deferred_while_another_writer_holds_the_lock(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    memory = EpisodicMemory(SQLiteStore(db), HashingEmbedder(), clock=FrozenClock(T0))
    ep = memory.remember_episode("pref", "user prefers window seats")
    other = sqlite3.connect(db, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # a long ingest elsewhere
        assert [h.episode.id for h in memory.recall_episodes("window seats")] == [ep.id]
        other.execute("ROLLBACK")
    finally:
        other.close()
    stored = memory.get_episode(ep.id)
    assert stored is not None and stored.retrieve_count == 0  # deferred, recall did not wait
    memory.recall_episodes("window seats")  # the next recall writes both
    stored = memory.get_episode(ep.id)
    assert stored is not None and (stored.retrieve_count, stored.last_retrieved_at) == (2, T0)
    memory.close()
