"""Previews and counts for destructive operations (issue 13, item 11), on every backend.

``prune(dry_run=True)`` counts exactly what ``prune()`` then deletes, and ``stats()`` tells
active, archived and superseded episodes apart.
"""

from __future__ import annotations

from datetime import timedelta

from memlane import EpisodicMemory, FrozenClock
from memlane.stores.base import EpisodeFilter, Store
from tests.conftest import T0, MemoryFactory

DAY = timedelta(days=1)


def test_prune_dry_run_counts_what_prune_deletes_and_changes_nothing(
    make_memory: MemoryFactory, store: Store
) -> None:
    a = make_memory(tenant_id="a", retention_days=30, prune_probability=0.0)  # no random prune on write
    b = make_memory(tenant_id="b", retention_days=30, prune_probability=0.0)
    a.remember_episode("note", "old", created_at=T0 - 100 * DAY)
    a.remember_episode("note", "old but vital", created_at=T0 - 100 * DAY, importance=9)
    a.remember_episode("note", "old unrated", created_at=T0 - 31 * DAY)
    a.remember_episode("note", "recent", created_at=T0 - DAY)
    b.remember_episode("note", "other tenant, old", created_at=T0 - 90 * DAY, importance=3)
    before = store.stats(EpisodeFilter()).episodes
    would = a.prune(dry_run=True)
    assert would == 3  # table-wide: tenant b's old episode too; never-forget kept
    assert store.stats(EpisodeFilter()).episodes == before == 5
    assert a.prune() == would
    assert store.stats(EpisodeFilter()).episodes == 2
    assert a.prune(dry_run=True) == 0
    assert make_memory().prune(dry_run=True) == 0  # no retention configured


def test_stats_tell_active_archived_and_superseded_apart(memory: EpisodicMemory, clock: FrozenClock) -> None:
    old = memory.remember_episode("fact", "User lives in Paris")
    faded = memory.remember_episode("note", "trivial", importance=1)
    memory.remember_episode("note", "vital", importance=10)
    clock.set(T0 + 10 * DAY)
    memory.supersede(old.id, "fact", "User lives in Lisbon")
    report = memory.forget()
    assert [ep.id for ep, _ in report.forgotten] == [faded.id]
    stats = memory.stats()
    assert (stats.episodes, stats.active, stats.archived, stats.superseded) == (4, 2, 1, 1)
    assert memory.store.stats(EpisodeFilter(tenant_id="nobody")).active == 0
