"""Several processes and threads writing and recalling through one database lose and duplicate nothing."""

from __future__ import annotations

import multiprocessing
import threading

from memlane import EpisodicMemory, MemoryConfig
from memlane.embeddings.fake import HashingEmbedder
from tests.backends import BackendDB, open_store

PROCESSES = 4
PER_WORKER = 40


def _worker(kind: str, location: str, worker: int, per_worker: int) -> int:
    """Remember ``per_worker`` episodes one call at a time, recalling in between."""
    memory = EpisodicMemory(
        open_store(kind, location),
        HashingEmbedder(),
        tenant_id="shared",
        session_id=f"w{worker}",
        config=MemoryConfig(scope="tenant"),
    )
    seen = 0
    for i in range(per_worker):
        memory.remember_episode("note", f"worker {worker} item {i}", tags=[f"w{worker}"])
        if i % 10 == 0:
            seen = max(seen, len(memory.recall_episodes(f"item {i}", limit=50)))
    memory.close()
    return seen


def _check(db: BackendDB, writers: int) -> None:
    memory = EpisodicMemory(
        db.open(), HashingEmbedder(), tenant_id="shared", config=MemoryConfig(scope="tenant")
    )
    contents = [ep.content for ep in memory.iter_episodes()]
    expected = {f"worker {w} item {i}" for w in range(writers) for i in range(PER_WORKER)}
    assert len(contents) == len(expected)  # nothing duplicated
    assert set(contents) == expected  # nothing lost
    for w in range(writers):
        assert len(memory.recall_episodes(tags=[f"w{w}"], limit=1000)) == PER_WORKER
    assert len(memory.recall_episodes("worker item", limit=1000)) == len(expected)
    memory.close()


def test_processes_write_concurrently_without_loss(backend_db: BackendDB) -> None:
    backend_db.open().close()  # create the schema first, like a deployment would
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(PROCESSES) as pool:
        results = pool.starmap(
            _worker, [(backend_db.kind, backend_db.location, w, PER_WORKER) for w in range(PROCESSES)]
        )
    assert all(r >= 1 for r in results)
    _check(backend_db, PROCESSES)


def test_processes_racing_to_create_the_schema(backend_db: BackendDB) -> None:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(3) as pool:
        pool.starmap(_worker, [(backend_db.kind, backend_db.location, w, PER_WORKER) for w in range(3)])
    _check(backend_db, 3)


def test_threads_share_one_store(backend_db: BackendDB) -> None:
    store = backend_db.open()
    errors: list[BaseException] = []

    def run(worker: int) -> None:
        try:
            memory = EpisodicMemory(
                store,
                HashingEmbedder(),
                tenant_id="shared",
                session_id=f"w{worker}",
                owns_store=False,
                config=MemoryConfig(scope="tenant"),
            )
            for i in range(PER_WORKER):
                memory.remember_episode("note", f"worker {worker} item {i}", tags=[f"w{worker}"])
                memory.recall_episodes(f"item {i}", limit=5)
        except BaseException as exc:  # surfaced in the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.close()
    assert errors == []
    _check(backend_db, 4)
