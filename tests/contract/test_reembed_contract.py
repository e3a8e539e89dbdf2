"""Contract of the embedding model migration (:mod:`memlane.lifecycle.reembed`) on every backend.

"Old" model: ``HashingEmbedder(64)`` (``hashing-64``); "new" model: ``HashingEmbedder(32)``
(``hashing-32``). Interruptions are simulated by a progress callback that raises after N
batches, and by a subprocess that dies (``os._exit``) mid-way.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from memlane import EpisodicMemory, MemoryConfig
from memlane.embeddings.fake import FailingEmbedder, HashingEmbedder
from memlane.errors import EmbeddingModelMismatchError, StoreError, ValidationError
from memlane.lifecycle.reembed import ProgressFn, reembed, reembed_backend
from memlane.stores.base import EpisodeFilter, Store
from tests.backends import BackendDB, open_store

OLD = HashingEmbedder(64)
BATCH = 4


class CountingEmbedder(HashingEmbedder):
    """A HashingEmbedder that records every text it embedded."""

    def __init__(self, dims: int) -> None:
        super().__init__(dims)
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.texts.extend(texts)
        return super().embed(texts)


class SimulatedCrashError(Exception):
    """Raised by the progress callback to simulate a crash."""


def _stop_after(batches: int) -> ProgressFn:
    calls = {"n": -1}  # the first call (0, total) comes before any batch

    def progress(done: int, total: int) -> None:
        calls["n"] += 1
        if calls["n"] >= batches:
            raise SimulatedCrashError(f"stopped after {batches} batches at {done}/{total}")

    return progress


def _memory(store: Store, embedder: HashingEmbedder | None = None, **config: Any) -> EpisodicMemory:
    return EpisodicMemory(
        store, embedder or OLD, config=MemoryConfig(scope="global", **config), owns_store=False
    )


def _fill(store: Store, n: int, start: int = 0) -> list[str]:
    memory = _memory(store)
    return [
        memory.remember_episode("note", f"episode {i} about topic{i % 5} tea").id
        for i in range(start, start + n)
    ]


def _assert_all_vectors_of(store: Store, embedder: HashingEmbedder) -> None:
    """Every episode has exactly one vector, of ``embedder``'s model, equal to its embedding."""
    episodes = list(store.iter_episodes(EpisodeFilter()))
    assert {ep.embedding_model for ep in episodes} == {embedder.model_id}
    probe = embedder.embed(["episode about topic1 topic2 tea"])[0]
    found = store.vector_candidates(EpisodeFilter(), probe, top_n=10_000)
    assert len(found) == len(episodes)  # none skipped, none duplicated
    by_key = store.fetch(list(found.keys))
    contents = [by_key[int(k)].content for k in found.keys]
    assert len({by_key[int(k)].id for k in found.keys}) == len(episodes)
    expected = embedder.embed(contents) @ probe
    np.testing.assert_allclose(np.asarray(found.cosine, dtype=np.float64), expected, atol=1e-5)


def test_migration_re_embeds_every_episode_and_rebinds(store: Store) -> None:
    ids = _fill(store, 10)
    new = CountingEmbedder(32)
    seen: list[tuple[int, int]] = []

    report = reembed(store, new, batch_size=BATCH, progress=lambda d, t: seen.append((d, t)))

    assert report.mode == "migrate" and report.switched and not report.dry_run
    assert (report.model_id, report.dims, report.previous_model) == ("hashing-32", 32, ("hashing-64", 64))
    assert (report.total, report.embedded, report.resumed_from) == (10, 10, 0)
    assert seen == [(0, 10), (4, 10), (8, 10), (10, 10)]
    assert sorted(new.texts) == sorted(ep.content for ep in store.iter_episodes(EpisodeFilter()))
    assert store.stats(EpisodeFilter()).embedding_model == ("hashing-32", 32)
    _assert_all_vectors_of(store, HashingEmbedder(32))
    assert reembed_backend(store).state() is None
    assert reembed_backend(store).count_staged("episodes") == 0

    memory = _memory(store, HashingEmbedder(32), retrieval="dense")
    hits = memory.recall_episodes("episode 3 topic3 tea", limit=10)
    assert len(hits) == 10 and hits[0].episode.id == ids[3]
    with pytest.raises(EmbeddingModelMismatchError):
        _memory(store, HashingEmbedder(64))  # old processes must restart with the new model


def test_recall_keeps_working_during_the_migration(store: Store) -> None:
    ids = _fill(store, 10)
    old_memory = _memory(store, retrieval="dense")
    before = [h.episode.id for h in old_memory.recall_episodes("episode 7 topic2", limit=10)]
    assert before[0] == ids[7]

    with pytest.raises(SimulatedCrashError):
        reembed(store, HashingEmbedder(32), batch_size=BATCH, progress=_stop_after(2))

    state = reembed_backend(store).state()
    assert state is not None and state.model_id == "hashing-32" and state.cursors["episodes"] > 0
    assert reembed_backend(store).count_staged("episodes") == 2 * BATCH
    # Old vectors and old model still serve recall, with dense scores (no fallback).
    hits = old_memory.recall_episodes("episode 7 topic2", limit=10)
    assert [h.episode.id for h in hits] == before
    assert all(h.breakdown is not None and not h.breakdown.fallback for h in hits)
    assert {ep.embedding_model for ep in store.iter_episodes(EpisodeFilter())} == {"hashing-64"}
    # A writer with the old model keeps working.
    old_memory.remember_episode("note", "written during the migration")
    with pytest.raises(EmbeddingModelMismatchError):
        _memory(store, HashingEmbedder(32))  # not switched yet


def test_resume_after_an_interruption_embeds_each_episode_once(store: Store) -> None:
    _fill(store, 10)
    first = CountingEmbedder(32)
    with pytest.raises(SimulatedCrashError):
        reembed(store, first, batch_size=BATCH, progress=_stop_after(2))
    assert len(first.texts) == 2 * BATCH
    # Meanwhile: an old-model writer adds episodes (one without a vector: embedder outage),
    # and an already staged episode is deleted.
    old_memory = _memory(store)
    old_memory.remember_episode("note", "late arrival with the old model")
    _memory(store, FailingEmbedder()).remember_episode("note", "stored during an outage")
    staged_victim = next(iter(store.iter_episodes(EpisodeFilter())))
    assert store.delete(staged_victim.id, None)

    second = CountingEmbedder(32)
    report = reembed(store, second, batch_size=BATCH)

    assert report.switched and report.resumed_from == 2 * BATCH
    assert report.embedded == 4  # 2 originals left + 2 new; nothing staged is embedded again
    assert not set(first.texts) & set(second.texts)
    _assert_all_vectors_of(store, HashingEmbedder(32))
    assert store.count(EpisodeFilter()) == 11


def test_episodes_written_just_before_the_switch_are_included(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(store, 5)
    old_memory = _memory(store)
    old_memory.recall_episodes("tea", limit=3)  # warm any vector cache with old vectors
    backend = reembed_backend(store)
    original = backend.switch

    def write_then_switch(*args: Any) -> tuple[int, int]:
        # After the last batch, before the switch's lock: an old-model writer slips one in.
        old_memory.remember_episode("note", "squeezed in before the switch")
        return original(*args)

    monkeypatch.setattr(backend, "switch", write_then_switch)
    report = reembed(store, HashingEmbedder(32), batch_size=5)

    assert report.switched and report.embedded == 6 and report.total == 6
    _assert_all_vectors_of(store, HashingEmbedder(32))
    new_memory = _memory(store, HashingEmbedder(32), retrieval="dense")
    assert new_memory.recall_episodes("squeezed switch", limit=1)[0].episode.content.startswith("squeezed")


def test_a_process_killed_mid_way_resumes(backend_db: BackendDB) -> None:
    store = backend_db.open()
    try:
        _fill(store, 12)
        ctx = multiprocessing.get_context("spawn")
        worker = ctx.Process(target=_die_after_two_batches, args=(backend_db.kind, backend_db.location))
        worker.start()
        worker.join(120)
        assert worker.exitcode == 3
        assert reembed_backend(store).count_staged("episodes") == 2 * BATCH
        new = CountingEmbedder(32)
        report = reembed(store, new, batch_size=BATCH)
        assert report.resumed_from == 2 * BATCH and report.embedded == 12 - 2 * BATCH
        _assert_all_vectors_of(store, HashingEmbedder(32))
    finally:
        store.close()


def _die_after_two_batches(kind: str, location: str) -> None:
    store = open_store(kind, location)
    batches = {"n": -1}

    def progress(done: int, total: int) -> None:
        batches["n"] += 1
        if batches["n"] == 2:
            os._exit(3)  # no cleanup, no rollback handlers: like a kill -9 between batches

    reembed(store, HashingEmbedder(32), batch_size=BATCH, progress=progress)


def test_same_model_fills_in_missing_vectors_only(store: Store) -> None:
    _fill(store, 3)
    outage = _memory(store, FailingEmbedder())
    missing = [outage.remember_episode("note", f"outage {i} coffee").id for i in range(3)]
    dense = _memory(store, retrieval="dense")
    assert not {h.episode.id for h in dense.recall_episodes("outage coffee", limit=10)} & set(missing)
    assert reembed(store, OLD, dry_run=True).total == 3

    counting = CountingEmbedder(64)
    report = reembed(store, counting, batch_size=2)

    assert (report.mode, report.total, report.embedded, report.switched) == ("fill", 3, 3, False)
    assert sorted(counting.texts) == [f"outage {i} coffee" for i in range(3)]
    _assert_all_vectors_of(store, OLD)
    assert set(missing) <= {h.episode.id for h in dense.recall_episodes("outage coffee", limit=10)}
    assert reembed(store, OLD).embedded == 0


def test_dry_run_counts_and_writes_nothing(store: Store) -> None:
    _fill(store, 6)
    report = reembed(store, HashingEmbedder(32), dry_run=True)
    assert (report.mode, report.total, report.embedded, report.dry_run) == ("migrate", 6, 0, True)
    assert reembed_backend(store).state() is None
    with pytest.raises(SimulatedCrashError):
        reembed(store, HashingEmbedder(32), batch_size=BATCH, progress=_stop_after(1))
    resumed = reembed(store, HashingEmbedder(32), dry_run=True)
    assert (resumed.total, resumed.resumed_from) == (6, BATCH)
    assert store.stats(EpisodeFilter()).embedding_model == ("hashing-64", 64)


def test_another_target_discards_the_staged_vectors(store: Store) -> None:
    _fill(store, 6)
    with pytest.raises(SimulatedCrashError):
        reembed(store, HashingEmbedder(32), batch_size=BATCH, progress=_stop_after(1))
    report = reembed(store, HashingEmbedder(48), batch_size=BATCH)
    assert report.resumed_from == 0 and report.embedded == 6
    _assert_all_vectors_of(store, HashingEmbedder(48))


def test_a_finished_job_stops_a_stale_one(store: Store) -> None:
    _fill(store, 2)
    backend = reembed_backend(store)
    backend.start("hashing-32", 32)
    reembed(store, HashingEmbedder(32))
    vectors = HashingEmbedder(32).embed(["x"])
    with pytest.raises(StoreError, match="no longer in progress"):
        backend.stage("episodes", "hashing-32", [1], vectors, 1)


def test_an_empty_store_switches_and_batch_size_is_checked(store: Store) -> None:
    _memory(store)  # bound, no episodes
    with pytest.raises(ValidationError):
        reembed(store, HashingEmbedder(32), batch_size=0)
    report = reembed(store, HashingEmbedder(32))
    assert report.switched and report.total == 0
    memory = _memory(store, HashingEmbedder(32))
    memory.remember_episode("note", "first with the new model")
    assert len(memory.recall_episodes("first", limit=5)) == 1


def test_other_store_objects_see_the_switch(backend_db: BackendDB) -> None:
    """Same dimension, another model id: caches of other processes must not keep old vectors."""
    first, second = backend_db.open(), backend_db.open()
    try:
        _fill(first, 6)
        _memory(second).recall_episodes("episode tea", limit=5)  # warm second's caches (old model)
        other = HashingEmbedder(64, model_id="other-64")
        assert reembed(first, other, batch_size=BATCH).switched
        memory = _memory(second, HashingEmbedder(64, model_id="other-64"), retrieval="dense")
        probe = other.embed(["episode 2 topic2 tea"])[0]
        found = second.vector_candidates(EpisodeFilter(), probe, top_n=100)
        contents = [second.fetch(list(found.keys))[int(k)].content for k in found.keys]
        np.testing.assert_allclose(
            np.asarray(found.cosine, dtype=np.float64), other.embed(contents) @ probe, atol=1e-5
        )
        assert memory.recall_episodes("episode 2 topic2 tea", limit=1)[0].episode.content.startswith(
            "episode 2"
        )
        with pytest.raises(EmbeddingModelMismatchError):
            _memory(second)
    finally:
        first.close()
        second.close()


def _conversation(topic: str) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"let us talk about {topic}"},
        {"role": "assistant", "content": f"sure, {topic} it is"},
        {"role": "user", "content": f"what else about {topic}?"},
        {"role": "assistant", "content": f"{topic} is a big subject"},
    ]


def test_session_windows_are_migrated_too(store: Store) -> None:
    old = _memory(store)
    old.sessions.store_session("chat-1", _conversation("gardening"), agent_id="a", user_id="u")
    _fill(store, 3)
    with pytest.raises(SimulatedCrashError):  # after 3 episodes, then chat-1's 2 turn windows
        reembed(store, HashingEmbedder(32), batch_size=3, progress=_stop_after(2))
    assert old.sessions.search_sessions("a", "u", "gardening", top_k=1)  # still served by old vectors
    old.sessions.store_session("chat-2", _conversation("sailing"), agent_id="a", user_id="u")

    report = reembed(store, HashingEmbedder(32), batch_size=3)

    backend = reembed_backend(store)
    assert (report.switched, report.resumed_from, report.embedded) == (True, 5, 2)  # chat-2's 2 windows
    assert backend.count_missing("session_windows", "hashing-32") == 0
    assert backend.count_missing("episodes", "hashing-32") == 0
    new = _memory(store, HashingEmbedder(32))
    snippets = new.sessions.search_sessions("a", "u", "sailing subject", top_k=1)
    assert snippets and snippets[0].session_id == "chat-2"
    assert new.sessions.search_sessions("a", "u", "gardening", top_k=1)[0].session_id == "chat-1"
