"""The async API returns exactly what the sync API returns: same episodes, same order, same breakdowns."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from memlane import AsyncEpisodicMemory, FrozenClock, LocalEmbedder
from tests.aio.scenario import SyncAsAwaitable, normalise, run_scenario, scenario_memory
from tests.backends import BackendDB, split_schema
from tests.conftest import T0


def test_every_operation_matches_the_sync_api(backend_db: BackendDB, local_embedder: LocalEmbedder) -> None:
    sync_store = backend_db.open()
    sync_memory = scenario_memory(sync_store, local_embedder, FrozenClock(T0))
    expected = normalise(asyncio.run(run_scenario(SyncAsAwaitable(sync_memory))), {})
    sync_memory.close()

    second = _fresh_again(backend_db)  # the same backend, empty again, for the async run
    async_memory = AsyncEpisodicMemory(scenario_memory(second.open(), local_embedder, FrozenClock(T0)))

    async def run() -> list[object]:
        async with async_memory:
            return await run_scenario(async_memory)

    actual = normalise(asyncio.run(run()), {})

    assert len(actual) == len(expected)
    for step, (got, want) in enumerate(zip(actual, expected, strict=True)):
        assert got == want, f"step {step} differs:\n{json.dumps(got, default=str)[:2000]}"
    # the scenario really ranked, superseded and built a context block (not all empty results)
    first_recall = expected[4]
    assert first_recall and first_recall[0]["breakdown"] is not None
    assert "Berlin" in first_recall[0]["episode"]["content"]
    assert any("[Past Conversation Context]" in str(item) for item in expected)


def _fresh_again(db: BackendDB) -> BackendDB:
    """``db`` emptied again: the SQLite file removed, or the PostgreSQL schema dropped."""
    if db.kind == "sqlite":
        for suffix in ("", "-wal", "-shm"):
            Path(db.location + suffix).unlink(missing_ok=True)
        return db
    import psycopg
    from psycopg import sql

    url, schema = split_schema(db.location)
    assert schema is not None
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
    return db
