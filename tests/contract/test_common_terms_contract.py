"""Keyword search skips terms found in more than half of the rows, on every backend."""

from __future__ import annotations

from memlane import EpisodeInput, EpisodicMemory


def test_common_words_add_no_keyword_candidates(memory: EpisodicMemory) -> None:
    memory.remember_episodes(
        EpisodeInput("note", f"episode about topic {i}" + (" zebra" if i == 7 else "")) for i in range(120)
    )
    # "episode" and "topic" are in every row: they carry no BM25 weight and are skipped.
    assert memory.recall_episodes("episode topic", retrieval="keyword", limit=5) == []
    hits = memory.recall_episodes("episode about a zebra", retrieval="keyword", limit=5)
    assert [h.episode.content for h in hits] == ["episode about topic 7 zebra"]
    # Hybrid recall still ranks by the embeddings when the keywords drop out.
    assert len(memory.recall_episodes("episode topic", limit=5)) == 5
