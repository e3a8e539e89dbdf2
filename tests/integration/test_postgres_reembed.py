"""PostgreSQL-specific effects of the re-embedding switch: column type, HNSW index, the HNSW path.

The semantics shared with SQLite are in ``tests/contract/test_reembed_contract.py``.
"""

from __future__ import annotations

import os

import pytest

from memlane import EpisodeInput, EpisodicMemory, MemoryConfig
from memlane.embeddings.fake import HashingEmbedder
from memlane.lifecycle.reembed import reembed
from memlane.stores.base import EpisodeFilter
from tests.pg_server import SKIP_ENV

if os.environ.get(SKIP_ENV) == "1":
    pytest.skip(f"PostgreSQL tests skipped explicitly ({SKIP_ENV}=1)", allow_module_level=True)

import psycopg

from memlane.stores.postgres import PostgresStore

HNSW_INDEX = "ix_memlane_episodes_embedding_hnsw"


def _fetchall(url: str, query: str, params: tuple[object, ...]) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(query, params).fetchall()


def test_switch_retypes_the_column_and_rebuilds_the_hnsw_index(pg_url: str, pg_schema: str) -> None:
    store = PostgresStore(pg_url, schema=pg_schema, exact_search_limit=0)  # always the HNSW path
    old = EpisodicMemory(store, HashingEmbedder(64), config=MemoryConfig(scope="global"), owns_store=False)
    old.remember_episodes(EpisodeInput("note", f"episode {i} about tea") for i in range(30))

    report = reembed(store, HashingEmbedder(32), batch_size=7)

    assert report.switched and report.embedded == 30
    column = _fetchall(
        pg_url,
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
        (f'"{pg_schema}".memlane_episodes',),
    )
    assert column == [("vector(32)",)]
    (definition,) = _fetchall(
        pg_url,
        "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
        (pg_schema, HNSW_INDEX),
    )
    assert "hnsw" in str(definition[0])
    new = HashingEmbedder(32)
    plan = store.explain_vector_candidates(EpisodeFilter(), new.embed(["episode 3 tea"])[0], top_n=5)
    assert plan.path == "hnsw"
    memory = EpisodicMemory(
        store, new, config=MemoryConfig(scope="global", retrieval="dense"), owns_store=False
    )
    assert memory.recall_episodes("episode 3 tea", limit=1)[0].episode.content == "episode 3 about tea"
    assert _fetchall(pg_url, f'SELECT count(*) FROM "{pg_schema}".memlane_reembed_staging', ()) == [(0,)]
    store.close()
