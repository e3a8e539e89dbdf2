"""Contract: SQLite and PostgreSQL return the same episodes, in the same order, on the same data.

Both backends get the same episodes (same ids, times, tags, importance; several sessions of one
tenant) and answer the same queries under the default (hybrid), dense and keyword retrieval,
with and without filters. PostgreSQL searches exactly at this size (below its
``exact_search_limit``), so the candidate pools are the same top-N by relevance
(:mod:`memlane.recall.pipeline`) and the top-10 must be identical.
"""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memlane import EpisodeInput, EpisodicMemory, FrozenClock, MemoryConfig
from memlane.embeddings.fake import HashingEmbedder
from tests.backends import postgres_db, sqlite_db
from tests.conftest import T0

WORDS = [
    "deploy",
    "staging",
    "rollback",
    "database",
    "migration",
    "window",
    "seat",
    "flight",
    "hotel",
    "coffee",
    "tea",
    "garden",
    "invoice",
    "budget",
    "meeting",
    "review",
    "python",
    "rust",
    "bug",
    "crash",
    "login",
    "password",
    "backup",
    "server",
    "cluster",
    "tenant",
]
QUERIES = (
    "deploy rollback",
    "flight window seat",
    "coffee or tea",
    "database migration crash",
    "budget review meeting",
    "server backup",
    "password login bug",
    "rust python",
)


def _inputs(n: int) -> list[EpisodeInput]:
    rng = random.Random(12)
    return [
        EpisodeInput(
            id=f"ep{i:04d}",
            event_type=rng.choice(["note", "action", "error"]),
            content=" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))),
            tags=[f"p{rng.randint(0, 4)}"],
            importance=rng.choice([None, 2.0, 5.0, 9.0]),
            created_at=T0 - timedelta(hours=n - i),
            session_id=f"s{i // 40}",
        )
        for i in range(n)
    ]


MODES: tuple[dict[str, Any], ...] = (
    {},
    {"retrieval": "dense"},
    {"retrieval": "keyword"},
    {"tags": ["p1"]},
    {"event_type": "error"},
)


def _answers(memory: EpisodicMemory, modes: tuple[dict[str, Any], ...] = MODES) -> list[list[str]]:
    out = []
    for query in QUERIES:
        for kwargs in modes:
            out.append([h.episode.id for h in memory.recall_episodes(query, limit=10, **kwargs)])
    return out


_POOLS_DIFFER = pytest.mark.xfail(
    strict=True,
    reason="open (issue 12): with a scope over 200 rows the unfiltered dense/hybrid top-10 differ in order: "
    "PostgreSQL returns the exact top-200 by cosine, SQLite every row, so the ranking sees different pools "
    "(session scope, 40 rows, agrees); fixed when SQLite's vector_candidates returns the top-N too",
)


@pytest.mark.parametrize("scope", [pytest.param("tenant", marks=_POOLS_DIFFER), "session"])
def test_sqlite_and_postgres_return_the_same_top_10(
    tmp_path: Path, pg_url: str, pg_schema: str, scope: str
) -> None:
    answers = []
    for db in (sqlite_db(tmp_path), postgres_db(pg_url, pg_schema)):
        store = db.open()
        try:
            memory = EpisodicMemory(
                store,
                HashingEmbedder(),
                config=MemoryConfig(scope=scope),
                clock=FrozenClock(T0),
                tenant_id="t1",
                session_id="s3",
            )
            memory.remember_episodes(_inputs(300))
            answers.append(_answers(memory))
        finally:
            store.close()
    sqlite, postgres = answers
    assert any(sqlite), "the queries must find something"
    mismatched = [(i, a, b) for i, (a, b) in enumerate(zip(sqlite, postgres, strict=True)) if a != b]
    modes = ("hybrid", "dense", "keyword", "tag", "event_type")
    assert [(QUERIES[i // 5], modes[i % 5], a, b) for i, a, b in mismatched] == []


def test_keyword_and_filtered_recall_agree_between_backends(
    tmp_path: Path, pg_url: str, pg_schema: str
) -> None:
    modes = MODES[2:]  # keyword; tag (~20 %) and event type (~33 %) filters: candidate pools below top-N
    answers = []
    for db in (sqlite_db(tmp_path), postgres_db(pg_url, pg_schema)):
        store = db.open()
        try:
            memory = EpisodicMemory(
                store, HashingEmbedder(), clock=FrozenClock(T0), tenant_id="t1", session_id="s3"
            )
            memory.remember_episodes(_inputs(300))
            answers.append(_answers(memory, modes))
        finally:
            store.close()
    assert sum(len(a) for a in answers[0]) > 0
    assert answers[0] == answers[1]
