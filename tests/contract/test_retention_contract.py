"""Retention on every read path: an expired episode is gone before any prune removes it.

With ``retention_days=30`` and the clock at :data:`T0`, an episode created 40 days earlier is
expired: recall, ``get_episode``, ``iter_episodes``, ``count``, ``stats``, ``history``,
``find_contradictions`` and ``sessions.get_session`` all leave it out, on every backend, while
it is still stored (``prune(dry_run=True)`` counts it) until a prune deletes it.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from memlane import EpisodeNotFoundError
from memlane.stores.base import EpisodeFilter, Store
from tests.conftest import T0, MemoryFactory

OLD = T0 - timedelta(days=40)


def test_an_expired_episode_is_gone_from_every_episode_read_path(
    make_memory: MemoryFactory, store: Store
) -> None:
    memory = make_memory(retention_days=30, prune_probability=0.0)
    old = memory.remember_episode("fact", "User lives in Paris", tags=["home"], created_at=OLD)
    fresh = memory.remember_episode("fact", "User lives in Paris now", tags=["home"])
    assert memory.get_episode(old.id) is None
    assert [ep.id for ep in memory.iter_episodes()] == [fresh.id]
    assert [ep.id for ep in memory.iter_episodes(event_type="fact", tags=["home"])] == [fresh.id]
    assert memory.count() == 1
    stats = memory.stats()
    assert (stats.episodes, stats.oldest) == (1, fresh.created_at)
    assert [h.episode.id for h in memory.recall_episodes("Paris", limit=10)] == [fresh.id]
    assert memory.find_contradictions(fresh, threshold=0.01) == []
    with pytest.raises(EpisodeNotFoundError):
        memory.history(old.id)
    with pytest.raises(EpisodeNotFoundError):  # what cannot be read cannot be superseded
        memory.supersede(old.id, "fact", "User lives in Berlin")
    # Still stored until a prune: the storage figure is the prune dry run's.
    assert store.count(EpisodeFilter()) == 2
    assert memory.prune(dry_run=True) == 1
    # Without retention the same store shows it again (nothing was deleted).
    assert make_memory().get_episode(old.id) == old


def test_history_leaves_out_expired_links(make_memory: MemoryFactory) -> None:
    writer = make_memory(prune_probability=0.0)
    old = writer.remember_episode("fact", "Team uses MySQL", created_at=OLD, valid_from=OLD)
    new = writer.supersede(old.id, "fact", "Team uses PostgreSQL")
    assert [ep.id for ep in writer.history(new.id)] == [old.id, new.id]
    reader = make_memory(retention_days=30, prune_probability=0.0)
    assert [ep.id for ep in reader.history(new.id)] == [new.id]


def test_never_forget_episodes_stay_readable_past_retention(make_memory: MemoryFactory) -> None:
    memory = make_memory(retention_days=30, prune_probability=0.0)
    vital = memory.remember_episode("fact", "User is allergic to peanuts", importance=10, created_at=OLD)
    assert memory.get_episode(vital.id) == vital
    assert [ep.id for ep in memory.iter_episodes()] == [vital.id]
    assert memory.count() == 1


def test_an_expired_episode_can_still_be_deleted(make_memory: MemoryFactory, store: Store) -> None:
    memory = make_memory(retention_days=30, prune_probability=0.0)
    old = memory.remember_episode("note", "old", created_at=OLD)
    other = make_memory(tenant_id="t9", retention_days=30, prune_probability=0.0)
    assert other.delete_episode(old.id) is False  # another tenant's: left alone
    assert memory.delete_episode(old.id) is True
    assert store.count(EpisodeFilter()) == 0


def test_an_expired_conversation_is_gone_from_get_session(make_memory: MemoryFactory) -> None:
    memory = make_memory(retention_days=30, prune_probability=0.0)
    messages = [{"role": "user", "content": "book me a flight"}, {"role": "assistant", "content": "done"}]
    memory.sessions.store_session("old-chat", messages, agent_id="a", user_id="u", ended_at=OLD)
    memory.sessions.store_session("new-chat", messages, agent_id="a", user_id="u")
    assert memory.sessions.get_session("old-chat") is None
    assert memory.sessions.get_session("new-chat") is not None
    assert [s.session_id for s in memory.sessions.recall_recent("a", "u")] == ["new-chat"]
    assert make_memory().sessions.get_session("old-chat") is not None  # still stored


def test_prune_deletes_expired_conversations_too_and_can_stay_in_one_tenant(
    make_memory: MemoryFactory, store: Store
) -> None:
    """#22 item 2 / #23 item 7: prune() takes expired stored conversations with the episodes;
    ``all_tenants=False`` (what an admin key's HTTP prune uses) leaves other tenants alone."""
    memories = {t: make_memory(tenant_id=t, retention_days=30, prune_probability=0.0) for t in ("a", "b")}
    for tenant, memory in memories.items():
        memory.remember_episode("fact", f"{tenant} old fact", created_at=OLD)
        chat = [{"role": "user", "content": f"{tenant} old chat"}]
        memory.sessions.store_session("old", chat, agent_id="x", user_id="y", started_at=OLD, ended_at=OLD)
    a, b = memories["a"], memories["b"]
    assert a.sessions.prune(dry_run=True) == 2 and a.sessions.prune(dry_run=True, all_tenants=False) == 1
    assert a.prune(dry_run=True, all_tenants=False) == 1
    assert a.prune(all_tenants=False) == 1
    sessions = a.sessions.store
    assert sessions.get_session("a", "old") is None and sessions.get_session("b", "old") is not None
    assert store.count(EpisodeFilter(tenant_id="b")) == 1
    assert b.prune() == 1  # store-wide (the Python default): the rest goes
    assert sessions.get_session("b", "old") is None and store.count(EpisodeFilter()) == 0
