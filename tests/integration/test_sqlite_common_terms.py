"""SQLite keyword search drops terms that occur in more than half of the rows (no BM25 weight)."""

from __future__ import annotations

from pathlib import Path

from memlane import EpisodeInput, EpisodicMemory
from memlane.embeddings.fake import HashingEmbedder
from memlane.stores.sqlite import SQLiteStore
from memlane.stores.sqlite_fts import CommonTermFilter


def test_common_terms_are_dropped_and_rare_ones_kept(tmp_path: Path) -> None:
    memory = EpisodicMemory(SQLiteStore(tmp_path / "m.db"), HashingEmbedder(), tenant_id="t", session_id="s")
    memory.remember_episodes(
        EpisodeInput("note", f"episode about topic {i} {'zebra' if i == 7 else ''}") for i in range(200)
    )
    conn = memory.store._conn()  # type: ignore[attr-defined]
    common = CommonTermFilter()
    assert common.informative(conn, ["episode", "topic", "zebra", "nothing"]) == ["zebra", "nothing"]
    # A query made only of common words finds no keyword candidates; a rare word still ranks first.
    hits = memory.recall_episodes("episode about zebra", retrieval="keyword", limit=3)
    assert [h.episode.content.strip() for h in hits][:1] == ["episode about topic 7 zebra"]
    assert memory.recall_episodes("episode topic", retrieval="keyword") == []
    memory.close()


def test_small_tables_keep_every_term(tmp_path: Path) -> None:
    memory = EpisodicMemory(SQLiteStore(tmp_path / "m.db"), HashingEmbedder(), tenant_id="t", session_id="s")
    memory.remember_episodes(EpisodeInput("note", "window seat") for _ in range(5))
    conn = memory.store._conn()  # type: ignore[attr-defined]
    assert CommonTermFilter().informative(conn, ["window", "seat"]) == ["window", "seat"]
    assert len(memory.recall_episodes("window", retrieval="keyword", limit=10)) == 5
    memory.close()
