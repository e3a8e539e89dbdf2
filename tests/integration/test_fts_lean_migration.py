"""Schema migration 14 (the keyword index rebuilt with ``detail=none, columnsize=0``) on a filled store.

A file at version 13 (the FTS5 index with its default options, as migrations 8-13 left it) is
opened by the current memlane: the index is rebuilt leaner, and every keyword search returns the
same rows and scores as before the migration, on the FTS5 path and on the in-memory postings;
the vocabulary's document counts are the same; deletes and updates still keep the index in step.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memlane import EpisodeInput, EpisodicMemory, FrozenClock, SQLiteStore
from memlane.analysis import query_terms
from memlane.embeddings.fake import HashingEmbedder
from memlane.stores.base import EpisodeFilter
from memlane.stores.sqlite import migrations as sqlite_migrations

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
WORDS = ["amber", "basalt", "cobalt", "dolomite", "emerald", "feldspar", "garnet", "hematite", "jade"]
QUERIES = ["amber cobalt", "garnet", "jade jade basalt", "emerald feldspar hematite", "unknownword"]
SCOPES = [EpisodeFilter(), EpisodeFilter(tenant_id="t"), EpisodeFilter(tenant_id="t", session_id="s1")]

_OLD_INDEX = (  # the keyword index as schema version 13 had it (migration 8's options)
    "DROP TABLE episodes_fts_terms",
    "DROP TABLE episodes_fts",
    "CREATE VIRTUAL TABLE episodes_fts USING fts5(terms, content='episodes', content_rowid='seq', "
    "tokenize='ascii')",
    "INSERT INTO episodes_fts (episodes_fts) VALUES ('rebuild')",
    "CREATE VIRTUAL TABLE episodes_fts_terms USING fts5vocab(episodes_fts, 'row')",
    "PRAGMA user_version = 13",
)


def _fill(path: Path) -> None:
    store = SQLiteStore(path)
    memory = EpisodicMemory(store, HashingEmbedder(16), clock=FrozenClock(NOW), tenant_id="t")
    rng = np.random.default_rng(5)
    items = [
        EpisodeInput(
            "note",
            " ".join(WORDS[k] for k in rng.integers(0, len(WORDS), size=int(rng.integers(1, 7))).tolist()),
            session_id=f"s{i % 3}",
            created_at=NOW - timedelta(minutes=200 - i),
        )
        for i in range(200)
    ]
    memory.remember_episodes(items)
    memory.close()
    store.close()


def _searches(path: Path) -> list[tuple[list[int], list[float]]]:
    found = []
    for keyword_index in (False, True):
        store = SQLiteStore(path, keyword_index=keyword_index)
        try:
            for flt in SCOPES:
                for query in QUERIES:
                    hits = store.keyword_candidates(flt, query_terms(query), 50)
                    found.append((hits.keys.tolist(), hits.score.tolist()))
        finally:
            store.close()
    return found


def _documents(path: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT term, doc FROM episodes_fts_terms ORDER BY term").fetchall()


def test_sqlite_file_at_13_gets_the_lean_keyword_index_with_the_same_results(tmp_path: Path) -> None:
    path = tmp_path / "v13.db"
    _fill(path)
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in _OLD_INDEX:
        conn.execute(statement)
    conn.close()
    before, documents = _searches(path), _documents(path)
    assert any(keys for keys, _ in before) and documents

    store = SQLiteStore(path)
    try:
        assert store.schema_version == len(sqlite_migrations.MIGRATIONS) >= 14
        conn = store.connection()
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'episodes_fts'").fetchone()
        assert "detail=none" in sql and "columnsize=0" in sql
        conn.execute("INSERT INTO episodes_fts (episodes_fts, rank) VALUES ('integrity-check', 1)")
    finally:
        store.close()
    assert _searches(path) == before
    assert _documents(path) == documents

    store = SQLiteStore(path)  # the delete trigger still names the rebuilt index
    try:
        jade = store.keyword_candidates(EpisodeFilter(), ["jade"], 500)
        victim = store.fetch([int(jade.keys[0])])[int(jade.keys[0])]
        assert store.delete(victim.id, None)
        after = store.keyword_candidates(EpisodeFilter(), ["jade"], 500)
        assert sorted(after.keys.tolist()) == sorted(jade.keys.tolist()[1:])
        store.connection().execute(
            "INSERT INTO episodes_fts (episodes_fts, rank) VALUES ('integrity-check', 1)"
        )
    finally:
        store.close()
