"""Many tasks at once on one AsyncEpisodicMemory: nothing lost, duplicated or leaked across tenants."""

from __future__ import annotations

import asyncio

from memlane import AsyncEpisodicMemory, EpisodicMemory, LocalEmbedder, MemoryConfig, RecallHit
from tests.backends import BackendDB

WRITERS = 120
READERS = 80
SESSIONS = 16


def test_concurrent_remember_and_recall_on_one_memory(
    backend_db: BackendDB, local_embedder: LocalEmbedder
) -> None:
    memory = AsyncEpisodicMemory(
        EpisodicMemory(
            backend_db.open(),
            local_embedder,
            tenant_id="acme",
            config=MemoryConfig(scope="tenant", default_limit=10),
        ),
        max_workers=4,
    )
    other = memory.with_context(tenant_id="other")  # same store and pool, another tenant

    async def main() -> tuple[list[object], list[list[RecallHit]]]:
        async with memory:
            await other.remember_episode("note", "another tenant's secret order number 12")
            writes = [
                memory.remember_episode("order", f"customer {i} ordered item number {i}", tags=[f"c{i % 7}"])
                for i in range(WRITERS)
            ]
            reads = [memory.recall_episodes(f"what did customer {i} order?") for i in range(READERS)]
            sessions = [
                memory.sessions.store_session(
                    f"conv-{i}",
                    [{"role": "user", "content": f"ticket {i}: my parcel number {i} is late"}],
                    agent_id="support",
                    user_id=f"u{i % 4}",
                )
                for i in range(SESSIONS)
            ]
            results = await asyncio.gather(*writes, *reads, *sessions)
            final = await asyncio.gather(
                *(memory.recall_episodes(f"customer {i} ordered item number {i}") for i in range(WRITERS))
            )
            assert await memory.count() == WRITERS
            contents = [ep.content async for ep in memory.iter_episodes(batch_size=7)]
            assert sorted(contents) == sorted(f"customer {i} ordered item number {i}" for i in range(WRITERS))
            for u in range(4):
                recent = await memory.sessions.recall_recent(agent_id="support", user_id=f"u{u}", limit=50)
                assert len(recent) == SESSIONS // 4
            return results, final

    results, final = asyncio.run(main())
    written = results[:WRITERS]
    assert len({ep.id for ep in written}) == WRITERS  # type: ignore[attr-defined]
    reads = results[WRITERS : WRITERS + READERS]
    for hits in reads:
        assert isinstance(hits, list)
        assert all(h.episode.tenant_id == "acme" for h in hits)  # never the other tenant's
    for i, hits in enumerate(final):
        assert hits[0].episode.content == f"customer {i} ordered item number {i}"
        assert hits[0].breakdown is not None
