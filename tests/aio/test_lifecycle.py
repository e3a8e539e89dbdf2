"""Opening, closing, sharing and validating an AsyncEpisodicMemory."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from memlane import (
    AsyncEpisodicMemory,
    EpisodicMemory,
    LocalEmbedder,
    MemoryConfig,
    SQLiteStore,
    StoreClosedError,
    StoreError,
    ValidationError,
)


class GatedEmbedder:
    """The real embedder, but every call waits until the test opens the gate."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.model_id, self.dims = inner.model_id, inner.dims

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.entered.set()
        self.gate.wait(timeout=60)
        return self.inner.embed(texts)


def test_open_by_await_and_by_async_with(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    path = tmp_path / "m.db"

    async def main() -> None:
        async with AsyncEpisodicMemory.open(path, embedder=local_embedder, tenant_id="t") as memory:
            await memory.remember_episode("note", "first")
            assert memory.tenant_id == "t" and memory.session_id == "default"
        with pytest.raises(StoreClosedError):
            await memory.count()
        again = await AsyncEpisodicMemory.open(path, embedder=local_embedder, tenant_id="t", max_workers=2)
        assert again.max_workers == 2
        assert [h.episode.content for h in await again.recall_episodes()] == ["first"]
        await again.close()
        await again.close()  # idempotent
        assert again.sync.context.closed

    asyncio.run(main())


def test_from_config(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    config = {"memory": {"path": str(tmp_path / "c.db")}, "episodic_memory": {"tenant_id": "cfg"}}

    async def main() -> None:
        async with AsyncEpisodicMemory.from_config(config, embedder=local_embedder) as memory:
            await memory.remember_episode("note", "configured")
            assert memory.tenant_id == "cfg"
            assert await memory.count() == 1

    asyncio.run(main())


def test_open_failure_raises_the_store_error(tmp_path: Path) -> None:
    not_a_db = tmp_path / "x.db"
    not_a_db.write_bytes(b"this is not a sqlite file" * 100)

    async def main() -> None:
        with pytest.raises(StoreError):
            await AsyncEpisodicMemory.open(not_a_db)

    asyncio.run(main())


def test_close_waits_for_calls_in_flight(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    gated = GatedEmbedder(local_embedder)
    memory = AsyncEpisodicMemory(EpisodicMemory(SQLiteStore(tmp_path / "m.db"), gated))

    async def main() -> None:
        write = asyncio.ensure_future(memory.remember_episode("note", "written while closing"))
        await asyncio.to_thread(gated.entered.wait, 60)  # the write is inside the embedder now
        closing = asyncio.ensure_future(memory.close())
        for _ in range(20):
            await asyncio.sleep(0)
        assert not closing.done()  # it cannot finish: the write holds it
        with pytest.raises(StoreClosedError):
            await memory.count()  # new calls are refused at once
        gated.gate.set()
        episode = await write
        await closing
        assert episode.content == "written while closing"

    asyncio.run(main())
    reopened = EpisodicMemory(SQLiteStore(tmp_path / "m.db"), local_embedder)
    assert [ep.content for ep in reopened.iter_episodes()] == ["written while closing"]
    reopened.close()


def test_cancelling_a_caller_does_not_break_the_memory(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    gated = GatedEmbedder(local_embedder)
    memory = AsyncEpisodicMemory(EpisodicMemory(SQLiteStore(tmp_path / "m.db"), gated))

    async def main() -> None:
        task = asyncio.ensure_future(memory.remember_episode("note", "started before the cancel"))
        await asyncio.to_thread(gated.entered.wait, 60)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        gated.gate.set()
        await memory.close()  # waits for the write that had started; it completes

    asyncio.run(main())
    reopened = EpisodicMemory(SQLiteStore(tmp_path / "m.db"), local_embedder)
    assert reopened.count() == 1
    reopened.close()


def test_with_context_shares_the_pool_and_owns_nothing(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    memory = AsyncEpisodicMemory(
        EpisodicMemory(SQLiteStore(tmp_path / "m.db"), local_embedder, config=MemoryConfig(scope="tenant")),
        max_workers=2,
    )

    async def main() -> None:
        other = memory.with_context(tenant_id="other")
        await other.remember_episode("note", "other tenant")
        await memory.remember_episode("note", "default tenant")
        await other.close()  # owns neither the store nor the pool
        assert await memory.count() == 1 and await other.count() == 1
        assert other.max_workers == 2
        await memory.close()
        with pytest.raises(StoreClosedError):
            await other.count()

    asyncio.run(main())


def test_run_and_validation(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    with pytest.raises(ValidationError):
        AsyncEpisodicMemory(EpisodicMemory(SQLiteStore(tmp_path / "v.db"), local_embedder), max_workers=0)
    memory = AsyncEpisodicMemory(EpisodicMemory(SQLiteStore(tmp_path / "m.db"), local_embedder))

    async def main() -> None:
        async with memory:
            sync = memory.sync
            threads = await memory.run(
                lambda: (sync.remember_episode("n", "x"), threading.current_thread().name)
            )
            assert threads[1].startswith("memlane-aio")
            with pytest.raises(ValidationError):
                await memory.recall_episodes("x", limit=0)  # the sync validation, raised through the await
            with pytest.raises(ValidationError):
                [ep async for ep in memory.iter_episodes(batch_size=0)]
            assert "recall" in (memory.recall_episodes.__doc__ or "").lower()
            assert memory.recall_episodes.__name__ == "recall_episodes"

    asyncio.run(main())
