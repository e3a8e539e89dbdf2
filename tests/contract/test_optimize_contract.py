"""Contract of ``EpisodicMemory.optimize`` / ``Store.optimize`` (issue #24 item 3) on every backend.

Building the indexes changes no hit: the recall after ``optimize`` returns exactly what the recall
before it returned. SQLite reports the vectors it indexed; PostgreSQL folds the rows written since
the last fold (its unindexed tail) into its partial HNSW index and reports the rows it holds. The
ANN side (training, lists, files) is in ``test_ann_contract.py``.
"""

from __future__ import annotations

import asyncio

from memlane import AsyncEpisodicMemory, EpisodeInput, EpisodicMemory
from memlane.stores.base import IndexReport, Store
from memlane.stores.sqlite import SQLiteStore

TEXTS = [f"note {i}: the user asked about invoice {i % 7} and the window seat" for i in range(60)]


def _hits(memory: EpisodicMemory) -> list[list[tuple[str, float | None]]]:
    return [
        [(h.episode.id, h.score) for h in memory.recall_episodes(query, limit=10)]
        for query in ("invoice 3", "window seat", "what did the user ask?", None)
    ]


def test_optimize_changes_no_hit(memory: EpisodicMemory, store: Store) -> None:
    for text in TEXTS[:20]:
        memory.remember_episode("note", text)
    memory.remember_episodes([EpisodeInput("note", text) for text in TEXTS[20:]])
    before = _hits(memory)
    report = memory.optimize()
    assert isinstance(report, IndexReport)
    assert report.vectors == (len(TEXTS) if isinstance(store, SQLiteStore) else 0)
    if isinstance(store, SQLiteStore):
        assert report.ann_rows == 0 and not report.ann_trained  # far below the ANN threshold
    else:
        assert report.ann_rows == len(TEXTS) and report.ann_trained  # the tail folded into the HNSW index
    assert _hits(memory) == before
    again = memory.optimize()
    assert again.saved == () and not again.ann_trained  # nothing left to build


def test_the_async_twin_optimizes(memory: EpisodicMemory) -> None:
    memory.remember_episode("note", "the user prefers tea")
    memory.optimize()  # PostgreSQL folds its tail here: both reports below are of a built index

    async def run() -> IndexReport:
        twin = AsyncEpisodicMemory(memory, owns_memory=False)
        try:
            return await twin.optimize()
        finally:
            await twin.close()

    assert asyncio.run(run()) == memory.optimize()
