"""Contract of deleting one episode by id (``Store.delete`` / ``EpisodicMemory.delete_episode``).

Runs against every backend through the parametrised ``store`` fixture (``tests/backends.py``).
"""

from __future__ import annotations

import pytest

from memlane import EpisodicMemory, ValidationError
from memlane.stores.base import EpisodeFilter, Store
from tests.conftest import MemoryFactory


def test_delete_removes_the_episode_its_tags_and_its_vector(memory: EpisodicMemory, store: Store) -> None:
    keep = memory.remember_episode("note", "the user likes green tea", tags=["drinks", "tea"])
    gone = memory.remember_episode("note", "the user likes black coffee", tags=["drinks", "coffee"])
    assert memory.recall_episodes("coffee", limit=5)[0].episode.id == gone.id  # index warmed up

    assert memory.delete_episode(gone.id) is True

    assert memory.get_episode(gone.id) is None
    assert store.get(gone.id) is None
    assert memory.count() == 1
    assert [h.episode.id for h in memory.recall_episodes("coffee", limit=5)] == [keep.id]
    assert [h.episode.id for h in memory.recall_episodes(None, tags=["drinks"])] == [keep.id]
    assert memory.recall_episodes(None, tags=["coffee"]) == []
    assert [e.id for e in memory.iter_episodes()] == [keep.id]
    assert store.stats(EpisodeFilter()).episodes == 1


def test_delete_of_an_unknown_id_is_false_and_changes_nothing(memory: EpisodicMemory) -> None:
    kept = memory.remember_episode("note", "stays")
    assert memory.delete_episode("0" * 32) is False
    assert memory.delete_episode(kept.id) is True
    assert memory.delete_episode(kept.id) is False  # already gone
    assert memory.count() == 0


def test_store_delete_is_tenant_checked(make_memory: MemoryFactory, store: Store) -> None:
    theirs = make_memory(tenant_id="t2").remember_episode("note", "a secret of tenant t2")
    assert store.delete(theirs.id, "t1") is False
    assert store.get(theirs.id) is not None
    assert store.delete(theirs.id, "t2") is True
    assert store.get(theirs.id) is None

    again = make_memory(tenant_id="t2").remember_episode("note", "another one")
    assert store.delete(again.id, None) is True  # None: any tenant


def test_delete_episode_respects_the_memory_scope(make_memory: MemoryFactory) -> None:
    other_tenant = make_memory(tenant_id="t2").remember_episode("note", "t2's episode")
    other_session = make_memory(session_id="s2").remember_episode("note", "t1/s2's episode")

    session_scoped = make_memory()  # t1 / s1, session scope
    assert session_scoped.delete_episode(other_tenant.id) is False
    assert session_scoped.delete_episode(other_session.id) is False

    tenant_scoped = make_memory(scope="tenant")
    assert tenant_scoped.delete_episode(other_tenant.id) is False
    assert tenant_scoped.delete_episode(other_session.id) is True

    assert make_memory(tenant_id="t2").get_episode(other_tenant.id) is not None


def test_other_store_objects_see_a_delete(backend_db: object, make_memory: MemoryFactory) -> None:
    memory = make_memory()
    first = memory.remember_episode("note", "first episode about trains")
    second = memory.remember_episode("note", "second episode about trains")
    other = backend_db.open()  # type: ignore[attr-defined]
    try:
        reader = EpisodicMemory(other, memory.embedder, tenant_id="t1", session_id="s1", clock=memory.clock)
        assert len(reader.recall_episodes("trains")) == 2  # the reader's index now holds both
        assert memory.delete_episode(first.id)
        assert [h.episode.id for h in reader.recall_episodes("trains")] == [second.id]
    finally:
        other.close()


@pytest.mark.parametrize("bad", ["", "   ", "x" * 201])
def test_delete_refuses_a_malformed_id(memory: EpisodicMemory, bad: str) -> None:
    with pytest.raises(ValidationError):
        memory.delete_episode(bad)
