"""No store or embedder call ever runs on the event loop's thread.

The store and the embedder are wrapped in proxies that record the thread of every call (and
of every step of an iterator a call returns); the assertion is structural, not a timing.
Loop lag itself is measured in benchmarks/async_loop.py.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from memlane import AsyncEpisodicMemory, EpisodicMemory, LocalEmbedder, MemoryConfig, SQLiteStore


class Recorder:
    """(call name, thread) for every call made through a :class:`Recording` proxy."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, threading.Thread]] = []
        self._lock = threading.Lock()

    def record(self, name: str) -> None:
        with self._lock:
            self.calls.append((name, threading.current_thread()))


class Recording:
    """Forwards every attribute of ``target``; records each method call and iterator step."""

    def __init__(self, target: Any, recorder: Recorder, prefix: str = "") -> None:
        self._target = target
        self._recorder = recorder
        self._prefix = prefix

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        label = self._prefix + name
        if name in ("session_store", "reembed_backend"):
            return Recording(value, self._recorder, f"{label}.")
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            self._recorder.record(label)
            result = value(*args, **kwargs)
            if isinstance(result, Iterator):
                return self._steps(result, label)
            return result

        return call

    def _steps(self, iterator: Iterator[Any], label: str) -> Iterator[Any]:
        while True:
            self._recorder.record(f"{label}:next")
            try:
                item = next(iterator)
            except StopIteration:
                return
            yield item


def _every_operation(memory: AsyncEpisodicMemory) -> Callable[[], Any]:
    async def run() -> None:
        first = await memory.remember_episode("fact", "User lives in Lisbon", ["home"], 6)
        await asyncio.gather(
            *(memory.remember_episode("note", f"note number {i}", ["n"]) for i in range(20)),
            *(memory.recall_episodes(f"note {i}") for i in range(20)),
        )
        moved = await memory.supersede(first.id, "fact", "User moved to Berlin", ["home"])
        await memory.history(moved.id)
        await memory.find_contradictions("User lives in Porto", tags=["home"], threshold=0.2)
        await memory.recall_episodes(tags=["home"])
        await memory.get_episode(moved.id)
        await memory.count()
        await memory.stats()
        assert len([ep async for ep in memory.iter_episodes(batch_size=3)]) == 22
        await memory.sessions.store_session(
            "c1", [{"role": "user", "content": "Book a flight to Berlin"}], agent_id="a", user_id="u"
        )
        await memory.sessions.search_sessions(agent_id="a", user_id="u", query="flight")
        await memory.sessions.recall_recent(agent_id="a", user_id="u")
        await memory.sessions.get_session("c1")
        await memory.sessions.inject_context(
            [{"role": "user", "content": "Where do I live?"}], agent_id="a", user_id="u", token_budget=200
        )
        await memory.forget(dry_run=True)
        await memory.compact(dry_run=True)
        await memory.delete_episode(moved.id)
        await memory.sessions.delete_session("c1")
        await memory.end_session()

    return run


def test_no_store_or_embedder_call_runs_on_the_loop_thread(tmp_path: Path) -> None:
    recorder = Recorder()
    store = Recording(SQLiteStore(tmp_path / "m.db"), recorder)
    embedder = Recording(LocalEmbedder(), recorder)
    sync = EpisodicMemory(store, embedder, tenant_id="t", config=MemoryConfig(scope="tenant"))  # type: ignore[arg-type]

    # control: the proxies do see the caller's thread when the sync API is used directly
    sync.count()
    assert recorder.calls and all(t is threading.current_thread() for _, t in recorder.calls)
    recorder.calls.clear()

    loop_threads: list[threading.Thread] = []

    async def main() -> None:
        loop_threads.append(threading.current_thread())
        async with AsyncEpisodicMemory(sync, max_workers=3) as memory:
            await _every_operation(memory)()

    asyncio.run(main())
    names = {name for name, _ in recorder.calls}
    for expected in (
        "insert",
        "embed",
        "vector_candidates",
        "keyword_candidates",
        "iter_episodes:next",
        "session_store.insert_session",
        "close",
    ):
        assert any(n.startswith(expected) for n in names), (expected, sorted(names))
    on_loop = [name for name, thread in recorder.calls if thread is loop_threads[0]]
    assert on_loop == []
    workers = {thread.name for _, thread in recorder.calls}
    assert all(name.startswith("memlane-aio") for name in workers)
    assert 1 <= len(workers) <= 3  # the pool is bounded
