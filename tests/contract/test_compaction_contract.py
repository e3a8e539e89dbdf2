"""Retrieval bookkeeping and compaction (issue 7, item 4), on every backend.

Ranked recalls count ``retrieve_count``/``last_retrieved_at`` for the hits they return;
``compact()`` merges near-duplicates (cosine > 0.95) of one tenant and event type into one
episode and archives the originals with a pointer, and archives never-retrieved old episodes;
never-forget episodes are never archived and their text always stays active.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from memlane import EpisodeInput, EpisodicMemory, FrozenClock, ValidationError
from memlane.lifecycle.compaction import MERGE_REASON_PREFIX
from memlane.stores.base import EpisodeFilter, Store
from tests.conftest import T0, MemoryFactory

DAY = timedelta(days=1)


def _active(memory: EpisodicMemory) -> list[str]:
    return sorted(h.episode.content for h in memory.recall_episodes(None, limit=100))


# -- bookkeeping -----------------------------------------------------------------------


def test_ranked_recall_counts_returned_hits(memory: EpisodicMemory, clock: FrozenClock) -> None:
    hit = memory.remember_episode("pref", "user prefers window seats")
    miss = memory.remember_episode("pref", "deploy failed on staging")
    assert hit.retrieve_count == 0 and hit.last_retrieved_at is None
    clock.set(T0 + DAY)
    first = memory.recall_episodes("window seats", retrieval="dense", min_relevance=0.5)
    assert [h.episode.id for h in first] == [hit.id]
    assert first[0].episode.retrieve_count == 0  # hits show the counts from before this recall
    clock.set(T0 + 2 * DAY)
    memory.recall_episodes("window seats", retrieval="keyword")
    memory.flush()  # counts are buffered off the recall path (memlane.stores.retrievals)
    stored = memory.get_episode(hit.id)
    assert stored is not None
    assert (stored.retrieve_count, stored.last_retrieved_at) == (2, T0 + 2 * DAY)
    untouched = memory.get_episode(miss.id)
    assert untouched is not None and untouched.retrieve_count == 0
    memory.recall_episodes(None)  # structured lookups are not counted
    memory.flush()
    again = memory.get_episode(hit.id)
    assert again is not None and again.retrieve_count == 2


def test_tracking_can_be_turned_off(make_memory: MemoryFactory) -> None:
    memory = make_memory(track_retrievals=False)
    ep = memory.remember_episode("pref", "user prefers window seats")
    assert memory.recall_episodes("window seats")
    memory.flush()
    stored = memory.get_episode(ep.id)
    assert stored is not None and stored.retrieve_count == 0 and stored.last_retrieved_at is None


def test_bookkeeping_keeps_the_vector_cache(memory: EpisodicMemory, store: Store) -> None:
    memory.remember_episode("pref", "user prefers window seats")
    memory.recall_episodes("window seats")
    index = getattr(store, "_index", None)
    memory.recall_episodes("window seats")
    assert getattr(store, "_index", None) is index  # SQLite: not rebuilt; PostgreSQL: no cache


def test_export_round_trips_counts(memory: EpisodicMemory, make_memory: MemoryFactory) -> None:
    ep = memory.remember_episode("pref", "user prefers window seats")
    memory.recall_episodes("window seats")
    memory.flush()
    exported = memory.get_episode(ep.id)
    assert exported is not None
    data = exported.to_dict()
    other = make_memory(tenant_id="t9")
    (copy,) = other.remember_episodes(
        [
            EpisodeInput(
                event_type="pref",
                content=data["content"],
                id="copy-1",
                retrieve_count=data["retrieve_count"],
                last_retrieved_at=exported.last_retrieved_at,
            )
        ]
    )
    assert (copy.retrieve_count, copy.last_retrieved_at) == (1, T0)
    with pytest.raises(ValidationError, match="retrieve_count"):
        other.remember_episodes([EpisodeInput(event_type="pref", content="x", retrieve_count=-1)])


# -- compaction ------------------------------------------------------------------------


@pytest.fixture
def dupes(memory: EpisodicMemory, clock: FrozenClock) -> tuple[EpisodicMemory, list[str]]:
    """Three near-duplicates (cosine 1 under the hashing embedder) and one distinct episode."""
    a = memory.remember_episode(
        "pref", "User prefers window seats", tags=["travel"], importance=5, valid_from=T0 - 5 * DAY
    )
    clock.set(T0 + DAY)
    b = memory.remember_episode("pref", "user prefers window seats!", tags=["seats"], importance=8)
    clock.set(T0 + 2 * DAY)
    c = memory.remember_episode("pref", "USER PREFERS WINDOW SEATS", tags=["travel", "plane"])
    memory.remember_episode("pref", "deploy failed on staging", importance=3)
    memory.recall_episodes("window seats", limit=2, retrieval="dense")  # counts two of a, b, c
    return memory, [a.id, b.id, c.id]


def test_compact_merges_near_duplicates(dupes: tuple[EpisodicMemory, list[str]]) -> None:
    memory, ids = dupes
    report = memory.compact()
    assert not report.dry_run and report.active_before == 4 and report.active_after == 2
    (group,) = report.merges
    assert sorted(ep.id for ep in group.originals) == sorted(ids)
    merged = memory.get_episode(group.merged.id)
    assert merged is not None and merged == group.merged
    assert merged.content == "user prefers window seats!"  # the most important member's
    assert merged.importance == 8.0
    assert set(merged.tags) == {"travel", "seats", "plane"}
    assert merged.valid_from == T0 - 5 * DAY  # the earliest
    assert merged.retrieve_count == 2  # summed
    assert merged.created_at == T0 + 2 * DAY  # the latest mention
    assert sorted(merged.metadata["merged_from"]) == sorted(ids)
    assert merged.archived_at is None and merged.superseded_by is None
    assert _active(memory) == ["deploy failed on staging", "user prefers window seats!"]
    # recall afterwards returns the merged episode, once
    hits = memory.recall_episodes("window seats", retrieval="dense")
    assert [h.episode.id for h in hits][:1] == [merged.id]
    assert sum(h.episode.content.lower().startswith("user prefers") for h in hits) == 1


def test_merged_originals_are_archived_with_a_pointer_not_deleted(
    dupes: tuple[EpisodicMemory, list[str]],
) -> None:
    memory, ids = dupes
    report = memory.compact()
    merged_id = report.merges[0].merged.id
    assert memory.count() == 5  # 4 originals + 1 merged: nothing deleted
    for eid in ids:
        original = memory.get_episode(eid)
        assert original is not None
        assert original.archived_at is not None and original.superseded_by == merged_id
        assert original.supersede_reason is not None
        assert original.supersede_reason.startswith(MERGE_REASON_PREFIX)
        assert original.valid_until is None and original.invalidated_at is None  # still true
    assert {ep.id for ep in memory.history(merged_id)} == {merged_id, *ids}
    archived = memory.recall_episodes(None, include_archived=True, limit=100)
    assert {h.episode.id for h in archived} >= set(ids)


def test_dry_run_changes_nothing(dupes: tuple[EpisodicMemory, list[str]], store: Store) -> None:
    memory, _ = dupes
    memory.flush()  # buffered retrieval counts are written by compact() too
    before = list(store.iter_episodes(EpisodeFilter()))
    report = memory.compact(dry_run=True, never_retrieved_older_than_days=0.5)
    assert report.dry_run and len(report.merges) == 1 and report.archived >= 3
    assert list(store.iter_episodes(EpisodeFilter())) == before
    assert report.to_dict()["active_after"] == report.active_after


def test_compaction_respects_scope_and_event_type(make_memory: MemoryFactory) -> None:
    mine = make_memory(tenant_id="t1")
    theirs = make_memory(tenant_id="t2")
    other_session = make_memory(tenant_id="t1", session_id="s2")
    for memory in (mine, theirs, other_session):
        memory.remember_episode("pref", "user prefers window seats")
        memory.remember_episode("pref", "User prefers window seats")
    mine.remember_episode("note", "user prefers window seats")  # another event type: kept apart
    report = mine.compact()
    assert len(report.merges) == 1 and report.merged_originals == 2
    assert theirs.count() == 2 and other_session.count() == 2
    assert len(_active(theirs)) == 2 and len(_active(other_session)) == 2
    # tenant scope merges across the tenant's sessions, never across tenants
    tenant_wide = make_memory(tenant_id="t1", scope="tenant")
    report = tenant_wide.compact()
    assert len(report.merges) == 1 and report.merged_originals == 3  # merged s1 pair + s2's two
    assert len(_active(theirs)) == 2


def test_never_forget_texts_always_stay_active(memory: EpisodicMemory, clock: FrozenClock) -> None:
    critical = memory.remember_episode("fact", "user is allergic to peanuts", importance=9)
    critical_too = memory.remember_episode("fact", "User is allergic to peanuts!", importance=10)
    old = memory.remember_episode("fact", "user liked the blue theme", importance=4)
    low = memory.remember_episode("fact", "user is allergic to peanuts.", importance=2)
    clock.set(T0 + 100 * DAY)
    report = memory.compact()
    (group,) = report.merges  # the importance-10 fact leads and absorbs only the unimportant copy
    assert [ep.id for ep in group.originals] == [critical_too.id, low.id]
    active = {h.episode.content: h.episode for h in memory.recall_episodes(None, limit=100)}
    assert "user is allergic to peanuts" in active  # importance 9: never absorbed
    assert active["User is allergic to peanuts!"].importance == 10.0
    # stale archiving at 100 days spares every never-forget episode, merged ones included
    report = memory.compact(never_retrieved_older_than_days=30)
    assert [ep.id for ep in report.stale] == [old.id]
    active = {h.episode.content: h.episode for h in memory.recall_episodes(None, limit=100)}
    assert sorted(active) == ["User is allergic to peanuts!", "user is allergic to peanuts"]
    kept = memory.get_episode(critical.id)
    assert kept is not None and kept.archived_at is None


def test_stale_archiving_spares_retrieved_and_recent(memory: EpisodicMemory, clock: FrozenClock) -> None:
    used = memory.remember_episode("note", "the wifi password is in the drawer")
    unused = memory.remember_episode("note", "lunch was pasta")
    memory.recall_episodes("wifi password", retrieval="keyword")
    clock.set(T0 + 10 * DAY)
    recent = memory.remember_episode("note", "dinner was soup")
    report = memory.compact(never_retrieved_older_than_days=5)
    assert [ep.id for ep in report.stale] == [unused.id]
    assert _active(memory) == sorted([used.content, recent.content])
    stale = memory.get_episode(unused.id)
    assert stale is not None and stale.archived_at == T0 + 10 * DAY and stale.superseded_by is None


def test_compact_validates_arguments(memory: EpisodicMemory) -> None:
    for bad in (0, 1, 1.5, True):
        with pytest.raises(ValidationError, match="similarity"):
            memory.compact(similarity=bad)
    with pytest.raises(ValidationError, match="older_than_days"):
        memory.compact(never_retrieved_older_than_days=0)
