"""What MemlaneStore adds to, or defines beyond, LangGraph's store contract."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from memlane import AsyncEpisodicMemory, EpisodicMemory, FrozenClock, LocalEmbedder, MemoryConfig, SQLiteStore
from memlane.integrations.langgraph import (
    EVENT_TYPE,
    UNINDEXED_TEXT,
    LangChainEmbedder,
    MemlaneSearchItem,
    MemlaneStore,
)
from tests.conftest import T0


def _store(
    tmp_path: Path, embedder: LocalEmbedder, clock: FrozenClock | None = None, **options: object
) -> MemlaneStore:
    memory = EpisodicMemory(SQLiteStore(tmp_path / "lg.db"), embedder, clock=clock, tenant_id="lg")
    return MemlaneStore(memory, owns_memory=True, **options)  # type: ignore[arg-type]


def test_an_update_supersedes_and_keeps_the_history(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    clock = FrozenClock(T0)
    store = _store(tmp_path, local_embedder, clock)
    store.put(("users", "u1"), "home", {"text": "User lives in Lisbon"})
    clock.advance(timedelta(days=3))
    store.put(("users", "u1"), "home", {"text": "User moved to Berlin"})

    item = store.get(("users", "u1"), "home")
    assert item is not None and item.value == {"text": "User moved to Berlin"}
    assert item.created_at == T0 and item.updated_at == T0 + timedelta(days=3)
    versions = store.history(("users", "u1"), "home")
    assert [v.value["text"] for v in versions] == ["User lives in Lisbon", "User moved to Berlin"]
    assert [v.updated_at for v in versions] == [T0, T0 + timedelta(days=3)]

    # memlane's time model sees both: what was true on day 1, and what is true now
    memory = store.memory.with_context(config=MemoryConfig(scope="tenant"))
    then = memory.recall_episodes("where does the user live?", as_of=T0 + timedelta(days=1))
    now = memory.recall_episodes("where does the user live?")
    assert [h.episode.content for h in then] == ["User lives in Lisbon"]
    assert [h.episode.content for h in now] == ["User moved to Berlin"]
    assert then[0].episode.superseded_by == now[0].episode.id

    store.delete(("users", "u1"), "home")  # delete removes every version
    assert store.history(("users", "u1"), "home") == []
    assert memory.count() == 0
    assert store.list_namespaces() == []  # an emptied namespace is gone, as in LangGraph's SQL stores
    store.close()


def test_search_results_carry_the_ranking_breakdown(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    store = _store(tmp_path, local_embedder)
    store.put(("m",), "seat", {"text": "User prefers window seats"})
    store.put(("m",), "food", {"text": "User is vegetarian"})
    hits = store.search(("m",), query="which seat does the user want?")
    assert all(isinstance(h, MemlaneSearchItem) for h in hits)
    top = hits[0]
    assert isinstance(top, MemlaneSearchItem) and top.key == "seat"
    assert top.breakdown is not None and top.score == top.breakdown.score
    assert 0.0 <= top.breakdown.relevance <= 1.0 and top.breakdown.retrieval == "hybrid"
    assert all(h.score is None for h in store.search(("m",)))  # no query: no ranking
    store.close()


def test_namespace_labels_map_to_tenants_and_sessions(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    store = _store(tmp_path, local_embedder, tenant_label=1, session_label=2)
    store.put(("memories", "alice", "chat-1"), "k", {"text": "Alice likes tea"})
    store.put(("memories", "bob", "chat-9"), "k", {"text": "Bob likes coffee"})

    alice = store.memory.with_context(tenant_id="alice", config=MemoryConfig(scope="tenant"))
    assert [(ep.content, ep.session_id) for ep in alice.iter_episodes()] == [("Alice likes tea", "chat-1")]
    assert store.memory.count() == 0  # nothing in the memory's own tenant
    assert {i.value["text"] for i in store.search(("memories",))} == {"Alice likes tea", "Bob likes coffee"}
    assert [i.value["text"] for i in store.search(("memories", "bob"))] == ["Bob likes coffee"]
    assert store.list_namespaces(prefix=("memories", "alice")) == [("memories", "alice", "chat-1")]
    assert store.list_namespaces(max_depth=2) == [("memories", "alice"), ("memories", "bob")]
    with pytest.raises(InvalidNamespaceError):
        store.put(("memories",), "k", {"text": "no tenant label"})
    store.close()


def test_index_and_fields_choose_the_text(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    store = _store(tmp_path, local_embedder, fields=["title"])
    store.put(("d",), "1", {"title": "Window seats", "body": "long text"})
    store.put(("d",), "2", {"title": "Ignored", "body": "Aisle seats", "n": 3}, index=["body"])
    store.put(("d",), "3", {"n": 1})  # no text at the path: the JSON is indexed
    memory = store.memory.with_context(config=MemoryConfig(scope="tenant"))
    assert sorted(ep.content for ep in memory.iter_episodes(event_type=EVENT_TYPE)) == [
        "Aisle seats",
        "Window seats",
        '{"n": 1}',
    ]
    store.close()


def test_batches_run_in_order_and_validate_every_op(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    store = _store(tmp_path, local_embedder)
    results = store.batch(
        [
            PutOp(("ns",), "k", {"text": "one"}),
            GetOp(("ns",), "k"),
            PutOp(("ns",), "k", None),
            GetOp(("ns",), "k"),
            SearchOp(("ns",)),
        ]
    )
    assert results[1].value == {"text": "one"}  # type: ignore[union-attr]
    assert results[3] is None and results[4] == []
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("a.b",), "k")])  # a label with a period cannot address ("a", "b")
    store.close()


def test_items_persist_in_the_file(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    with MemlaneStore.open(tmp_path / "p.db", embedder=local_embedder, tenant_id="x") as store:
        store.put(("n",), "k", {"text": "kept on disk"})
    with MemlaneStore.open(tmp_path / "p.db", embedder=local_embedder, tenant_id="x") as again:
        item = again.get(("n",), "k")
        assert item is not None and item.value == {"text": "kept on disk"}


def test_concurrent_async_puts_keep_one_current_version(
    tmp_path: Path, local_embedder: LocalEmbedder
) -> None:
    memory = AsyncEpisodicMemory(
        EpisodicMemory(SQLiteStore(tmp_path / "c.db"), local_embedder), max_workers=4
    )
    store = MemlaneStore(memory)

    async def main() -> None:
        await asyncio.gather(
            *(store.aput(("n",), "same", {"text": f"version {i}"}) for i in range(12)),
            *(store.aput(("n",), f"k{i}", {"text": f"item {i}"}) for i in range(40)),
        )
        current = [i for i in await store.asearch(("n",), limit=100) if i.key == "same"]
        assert len(current) == 1
        # concurrent puts are written together, a later put of a key in one write wins (as
        # LangGraph's batched stores dedupe): at most 12 versions, exactly one current
        assert 1 <= len(store.history(("n",), "same")) <= 12
        assert len(await store.asearch(("n",), limit=100)) == 41
        await store.aclose()  # the store does not own the memory: it stays open
        assert await memory.count() >= 0
        await memory.close()

    asyncio.run(main())


def test_puts_from_many_threads_keep_every_version_and_their_own_errors(
    tmp_path: Path, local_embedder: LocalEmbedder
) -> None:
    store = _store(tmp_path, local_embedder, tenant_label=1)
    barrier = threading.Barrier(8)

    def put(worker: int) -> list[str]:
        barrier.wait()
        failed: list[str] = []
        for i in range(6):
            store.put(("app", "u1"), "same", {"text": f"version {worker}.{i}"})
            store.put(("app", "u1"), f"k{worker}.{i}", {"text": f"item {worker}.{i}"})
            try:
                store.put(("app",), f"bad{worker}.{i}", {"text": "no tenant label"})
            except InvalidNamespaceError:
                failed.append(f"bad{worker}.{i}")
        store.delete(("app", "u1"), f"k{worker}.0")
        return failed

    with ThreadPoolExecutor(max_workers=8) as pool:
        failures = list(pool.map(put, range(8)))
    assert all(len(f) == 6 for f in failures)  # each caller got its own error, every time
    assert len(store.history(("app", "u1"), "same")) == 48  # a version per put: none merged away
    keys = {item.key for item in store.search(("app", "u1"), limit=100)}
    assert keys == {"same"} | {f"k{w}.{i}" for w in range(8) for i in range(1, 6)}
    assert store.list_namespaces() == [("app", "u1")]
    store.close()


def test_index_false_keeps_the_value_out_of_search(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    store = _store(tmp_path, local_embedder)
    store.put(("u",), "secret", {"text": "my bank password is hunter2"}, index=False)
    store.put(("u",), "seat", {"text": "User prefers window seats"})
    assert [h.key for h in store.search(("u",), query="bank password")] == ["seat"]
    item = store.get(("u",), "secret")  # still readable, listed and found without a query
    assert item is not None and item.value == {"text": "my bank password is hunter2"}
    assert {i.key for i in store.search(("u",))} == {"secret", "seat"}
    assert store.list_namespaces() == [("u",)]
    memory = store.memory.with_context(config=MemoryConfig(scope="tenant"))
    texts = [ep.content for ep in memory.iter_episodes()]
    assert UNINDEXED_TEXT in texts and not any("hunter2" in t for t in texts)  # never embedded or indexed
    assert memory.recall_episodes("hunter2 bank password", retrieval="keyword") == []
    store.close()


def test_ttl_expires_refreshes_on_read_and_is_swept(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    clock = FrozenClock(T0)
    store = _store(tmp_path, local_embedder, clock, ttl={"default_ttl": 1, "refresh_on_read": True})
    store.put(("t",), "a", {"text": "kept alive by reads"})  # default_ttl: 1 minute
    store.put(("t",), "b", {"text": "never read"})
    store.put(("t",), "c", {"text": "no ttl"}, ttl=None)
    store.put(("t",), "d", {"text": "read without refresh"}, ttl=1.5)
    for _ in range(3):
        clock.advance(timedelta(seconds=40))
        assert store.get(("t",), "a") is not None  # each read restarts a's minute
        assert store.get(("t",), "d", refresh_ttl=False) is not None
    assert store.sweep_ttl() == 2  # b (60 s) and d (90 s) ran out; a was just read
    assert store.get(("t",), "b") is None and store.get(("t",), "d") is None
    assert {i.key for i in store.search(("t",))} == {"a", "c"}
    clock.advance(timedelta(seconds=61))
    assert store.sweep_ttl() == 1 and store.get(("t",), "a") is None
    assert store.get(("t",), "c") is not None and store.sweep_ttl() == 0
    with pytest.raises(ValueError, match="ttl"):
        store.put(("t",), "e", {"text": "x"}, ttl=-1)
    store.close()


def test_omit_expired_hides_expired_items_before_the_sweep(
    tmp_path: Path, local_embedder: LocalEmbedder
) -> None:
    clock = FrozenClock(T0)
    store = _store(tmp_path, local_embedder, clock, ttl={"default_ttl": 1, "omit_expired": True})
    store.put(("t", "x"), "gone", {"text": "expires"})
    store.put(("t", "y"), "kept", {"text": "stays"}, ttl=None)
    clock.advance(timedelta(minutes=2))
    assert store.get(("t", "x"), "gone") is None
    assert [i.key for i in store.search(("t",))] == ["kept"]
    assert [i.key for i in store.search(("t",), query="expires")] == ["kept"]
    assert store.list_namespaces() == [("t", "y")]
    store.close()


def test_a_sweeper_thread_runs_and_stops(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    store = _store(tmp_path, local_embedder, ttl={"default_ttl": 1, "sweep_interval_minutes": 10})
    future = store.start_ttl_sweeper()
    assert not future.done()
    assert store.stop_ttl_sweeper(timeout=5) is True and future.done()
    assert _store(tmp_path / "..", local_embedder).start_ttl_sweeper().done()  # no TTL config: nothing to do
    store.close()


def test_dotted_filter_keys_reach_nested_fields_in_sql(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    store = _store(tmp_path, local_embedder)
    store.put(("d",), "1", {"text": "a", "user": {"access-level": "admin", "age": 40}, "tags": ["x"]})
    store.put(("d",), "2", {"text": "b", "user": {"access-level": "guest", "age": 20}, "tags": ["y"]})
    assert [i.key for i in store.search(("d",), filter={"user.access-level": "admin"})] == ["1"]
    assert [i.key for i in store.search(("d",), filter={"user": {"age": {"$lt": 30}}})] == ["2"]
    assert [i.key for i in store.search(("d",), filter={"user.age": {"$gte": 20, "$ne": 40}})] == ["2"]
    assert [i.key for i in store.search(("d",), filter={"tags": ["y"]})] == ["2"]  # lists: exact, in Python
    assert store.search(("d",), filter={"user.access-level": "root"}) == []
    assert [i.key for i in store.search(("d",), query="a", filter={"user.age": 40})] == ["1"]
    with pytest.raises(ValueError, match="operator"):
        store.search(("d",), filter={"user.age": {"$like": 4}})
    store.close()


def test_a_batch_of_puts_is_one_write_and_the_last_put_of_a_key_wins(
    tmp_path: Path, local_embedder: LocalEmbedder
) -> None:
    store = _store(tmp_path, local_embedder)
    store.put(("b",), "k0", {"text": "old"})
    ops = [PutOp(("b",), f"k{i}", {"text": f"item {i}"}) for i in range(20)]
    ops += [PutOp(("b",), "k1", {"text": "last"}), PutOp(("b",), "k2", None)]
    store.batch(ops)
    assert len(store.search(("b",), limit=100)) == 19
    assert store.get(("b",), "k1").value == {"text": "last"}  # type: ignore[union-attr]
    assert [v.value["text"] for v in store.history(("b",), "k0")] == ["old", "item 0"]
    store.close()


class _Letters(Embeddings):
    """A LangChain ``Embeddings``: letter counts (deterministic, 26 dims)."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(t.lower().count(chr(97 + i))) + 0.01 for i in range(26)] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def test_open_takes_langgraphs_index_config(tmp_path: Path) -> None:
    embeddings = _Letters()
    index = {"dims": 26, "embed": embeddings, "fields": ["title"]}
    with MemlaneStore.open(tmp_path / "i.db", index=index) as store:
        assert isinstance(store.memory.embedder, LangChainEmbedder)
        assert store.index_config == {"dims": 26, "embed": embeddings, "fields": ["title"]}
        store.put(("d",), "z", {"title": "zzz zebra", "body": "aaaa"})
        store.put(("d",), "a", {"title": "banana", "body": "zzzz"})
        assert store.search(("d",), query="zz", limit=1)[0].key == "z"
    with pytest.raises(ValueError, match="dims"):
        MemlaneStore.open(tmp_path / "j.db", index={"embed": embeddings})
