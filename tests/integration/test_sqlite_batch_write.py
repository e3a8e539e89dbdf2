"""A batch written by ``remember_episodes`` stores exactly what one episode at a time stores.

The write path shares work across a batch (one text analysis, one mention extraction with a shared
memo, patterns skipped on texts without their character); every table it fills must hold the same
rows as the same episodes remembered one call each, on a real SQLite file.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memlane import EpisodeInput, EpisodicMemory, FrozenClock, SQLiteStore
from memlane.embeddings.fake import HashingEmbedder
from memlane.stores.sqlite.fts import _ADD_SCOPE_STATS

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
TEXTS = [
    "Alice: I moved to Berlin with Bob last June",
    "mail carol@example.com about INV-2024-001 and customer_123",
    'She said "Blue Moon" was the best café in Paris',
    "all lower case words about topic 7",
    "the and of",
    "Caroline's kids love the Acme Corp playground; Acme Corp again",
    "用户喜欢喝绿茶 with Dave",
    "plain words only here 42",
]
TABLES = {
    "episodes": "SELECT * FROM episodes ORDER BY seq",
    "episode_tags": "SELECT tag, seq FROM episode_tags ORDER BY tag, seq",
    "episodes_fts": "SELECT rowid, terms FROM episodes_fts ORDER BY rowid",
    "fts_terms": "SELECT term, doc, cnt FROM episodes_fts_terms ORDER BY term",
    "scope_stats": "SELECT * FROM scope_stats ORDER BY tenant_id, session_id",
    "graph_entities": "SELECT * FROM graph_entities ORDER BY tenant_id, id",
    "graph_aliases": "SELECT * FROM graph_aliases ORDER BY tenant_id, alias",
    "graph_episode_entities": "SELECT * FROM graph_episode_entities ORDER BY 1, 2, 3",
}


def _items() -> list[EpisodeInput]:
    return [
        EpisodeInput(
            "message" if i % 3 else "observation",
            text,
            tags=[f"project-{i % 3}", "followup"] if i % 2 else ["Project-1"],
            importance=None if i % 4 == 0 else float(1 + i),
            created_at=NOW - timedelta(hours=len(TEXTS) - i),
            metadata={"turn": i, "speaker": "Erin"} if i == 3 else {"turn": i},
            id=f"ep-{i:02d}",
        )
        for i, text in enumerate(TEXTS)
    ]


def _tables(path: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(path)
    try:
        return {name: conn.execute(sql).fetchall() for name, sql in TABLES.items()}
    finally:
        conn.close()


def _memory(path: Path) -> tuple[SQLiteStore, EpisodicMemory]:
    store = SQLiteStore(path)
    return store, EpisodicMemory(store, HashingEmbedder(dims=16), clock=FrozenClock(NOW), tenant_id="t")


def test_one_batch_stores_what_one_episode_at_a_time_stores(tmp_path: Path) -> None:
    batch_store, batch = _memory(tmp_path / "batch.db")
    single_store, single = _memory(tmp_path / "single.db")
    stored = batch.remember_episodes(_items())
    one_by_one = [single.remember_episodes([item])[0] for item in _items()]
    batch_store.close()
    single_store.close()
    assert stored == one_by_one
    batched, singles = _tables(tmp_path / "batch.db"), _tables(tmp_path / "single.db")
    assert batched == singles
    assert len(batched["episodes"]) == len(TEXTS)
    kinds = {row[0] for row in batched["graph_episode_entities"]}
    assert kinds == {"t"} and len(batched["graph_episode_entities"]) > 2 * len(TEXTS)
    assert {"berlin", "carol@example.com", "inv-2024-001", "blue moon", "acme corp", "erin"} <= {
        row[1] for row in batched["graph_aliases"]
    }


def test_scope_stats_of_batches_equal_a_recount_and_read_only_the_batch(tmp_path: Path) -> None:
    # Batches over several sessions and tenants, added to scope_stats one batch at a time, hold what a
    # full recount of the table holds; the statement reads the batch as a seq (rowid) range instead of
    # walking the (tenant_id, session_id, seq) index over every stored row.
    store = SQLiteStore(tmp_path / "m.db")
    for tenant in ("t1", "t2"):
        memory = EpisodicMemory(store, HashingEmbedder(dims=16), clock=FrozenClock(NOW), tenant_id=tenant)
        for start in range(0, 120, 40):
            memory.remember_episodes(
                [
                    EpisodeInput("note", f"{TEXTS[i % len(TEXTS)]} {i}", session_id=f"s{i % 7}")
                    for i in range(start, start + 40)
                ]
            )
    conn = store.connection()
    recount = conn.execute(
        "SELECT tenant_id, session_id, count(*), sum(token_count), min(seq), max(seq) FROM episodes "
        "GROUP BY tenant_id, session_id ORDER BY 1, 2"
    ).fetchall()
    assert conn.execute("SELECT * FROM scope_stats ORDER BY 1, 2").fetchall() == recount
    assert len(recount) == 14
    plan = " | ".join(r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + _ADD_SCOPE_STATS, (200,)))
    assert "SEARCH episodes USING INTEGER PRIMARY KEY (rowid>?)" in plan, plan
    assert "ix_episodes_session_seq" not in plan
    store.close()
