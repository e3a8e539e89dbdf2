"""SQLite keyword search drops terms that occur in more than half of the rows (no BM25 weight)."""

from __future__ import annotations

from pathlib import Path

from memlane import EpisodeInput, EpisodicMemory
from memlane.analysis import query_terms
from memlane.embeddings.fake import HashingEmbedder
from memlane.stores.common_terms import CommonTermFilter
from memlane.stores.sqlite import SQLiteStore


def test_common_terms_are_dropped_and_rare_ones_kept(tmp_path: Path) -> None:
    memory = EpisodicMemory(SQLiteStore(tmp_path / "m.db"), HashingEmbedder(), tenant_id="t", session_id="s")
    memory.remember_episodes(
        EpisodeInput("note", f"episode about topic {i} {'zebra' if i == 7 else ''}") for i in range(200)
    )
    conn = memory.store._conn()  # type: ignore[attr-defined]
    rows = conn.execute("SELECT max(seq) FROM episodes").fetchone()[0]

    def count(term: str, cap: int) -> int:
        sql = "SELECT count(*) FROM (SELECT 1 FROM episodes_fts WHERE episodes_fts MATCH ? LIMIT ?)"
        return int(conn.execute(sql, (f'"{term}"', cap)).fetchone()[0])

    common = CommonTermFilter()
    terms = query_terms("episode topic zebra nothing")  # analysed like the index: "episod", "topic", ...
    # Common terms are dropped; so is a term no row of the scope carries (it could match nothing).
    assert common.informative(terms, rows, count) == ["zebra"]
    assert common.scope_df(terms, rows, count) == {"zebra": 1}
    # A query made only of common words finds no keyword candidates; a rare word still ranks first.
    hits = memory.recall_episodes("episode about zebra", retrieval="keyword", limit=3)
    assert [h.episode.content.strip() for h in hits][:1] == ["episode about topic 7 zebra"]
    assert memory.recall_episodes("episode topic", retrieval="keyword") == []
    memory.close()


def test_small_tables_keep_every_term(tmp_path: Path) -> None:
    memory = EpisodicMemory(SQLiteStore(tmp_path / "m.db"), HashingEmbedder(), tenant_id="t", session_id="s")
    memory.remember_episodes(EpisodeInput("note", "window seat") for _ in range(5))
    assert CommonTermFilter().informative(["window", "seat"], 5, lambda term, cap: 5) == ["window", "seat"]
    assert len(memory.recall_episodes("window", retrieval="keyword", limit=10)) == 5
    memory.close()
