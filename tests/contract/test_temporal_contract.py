"""Bi-temporal episodes and superseding (issue 7, items 1 and 2), on every backend.

Valid time (``valid_from``/``valid_until``: when a fact was true) and transaction time
(``recorded_at``/``invalidated_at``: when memlane learned and retired it), after Snodgrass.
Every rule is checked on all three recall paths: structured lookup, dense and keyword.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from memlane import EpisodeInput, EpisodeNotFoundError, EpisodicMemory, FrozenClock, ValidationError
from memlane.models import RecallHit
from memlane.stores.base import EpisodeFilter, Store, Supersession
from tests.conftest import T0, MemoryFactory

DAY = timedelta(days=1)
MOVE = T0 + 10 * DAY  # the user moves to Lisbon


def _contents(hits: list[RecallHit]) -> list[str]:
    return sorted(h.episode.content for h in hits)


def _recall_all_ways(memory: EpisodicMemory, **kwargs: object) -> list[list[str]]:
    """The same recall as a structured lookup, dense-only and keyword-only."""
    return [
        _contents(memory.recall_episodes(None, **kwargs)),  # type: ignore[arg-type]
        _contents(memory.recall_episodes("where does the user live", retrieval="dense", **kwargs)),  # type: ignore[arg-type]
        _contents(memory.recall_episodes("user lives", retrieval="keyword", **kwargs)),  # type: ignore[arg-type]
    ]


@pytest.fixture
def moved(memory: EpisodicMemory, clock: FrozenClock) -> tuple[EpisodicMemory, str, str]:
    """'User lives in Paris' (from T0), superseded at MOVE by 'User lives in Lisbon'."""
    old = memory.remember_episode("fact", "User lives in Paris", tags=["home"])
    clock.set(MOVE)
    new = memory.supersede(old.id, "fact", "User lives in Lisbon", tags=["home"], reason="user moved")
    return memory, old.id, new.id


def test_new_episode_defaults(memory: EpisodicMemory, clock: FrozenClock) -> None:
    backfill = memory.remember_episode("note", "old event", created_at=T0 - 30 * DAY)
    assert backfill.valid_from == T0 - 30 * DAY  # valid time defaults to created_at
    assert backfill.recorded_at == T0  # transaction time is when memlane stored it
    assert backfill.valid_until is None and backfill.invalidated_at is None
    assert backfill.superseded_by is None and backfill.supersede_reason is None
    assert memory.get_episode(backfill.id) == backfill


def test_valid_until_before_valid_from_is_refused(memory: EpisodicMemory) -> None:
    with pytest.raises(ValidationError, match="valid_until"):
        memory.remember_episode("note", "x", valid_from=T0, valid_until=T0 - DAY)
    assert memory.count() == 0


def test_default_recall_hides_expired_but_not_future_facts(memory: EpisodicMemory) -> None:
    memory.remember_episode("fact", "user lives in Rome", valid_from=T0 - 9 * DAY, valid_until=T0 - DAY)
    memory.remember_episode("fact", "user lives in Oslo", valid_from=T0 + 5 * DAY)
    memory.remember_episode("fact", "user lives in Bern")
    assert _recall_all_ways(memory) == [["user lives in Bern", "user lives in Oslo"]] * 3
    # as_of is a strict valid-time slice
    assert _recall_all_ways(memory, as_of=T0 - 5 * DAY) == [["user lives in Rome"]] * 3
    assert _recall_all_ways(memory, as_of=T0 + 6 * DAY) == [["user lives in Bern", "user lives in Oslo"]] * 3


def test_supersede_keeps_history_and_answers_as_of(moved: tuple[EpisodicMemory, str, str]) -> None:
    memory, old_id, new_id = moved
    old = memory.get_episode(old_id)
    new = memory.get_episode(new_id)
    assert old is not None and new is not None
    assert old.valid_until == MOVE == new.valid_from
    assert old.invalidated_at == MOVE == new.recorded_at
    assert (old.superseded_by, old.supersede_reason) == (new_id, "user moved")
    assert memory.count() == 2  # nothing deleted
    # now: only the new fact, on every path
    assert _recall_all_ways(memory, now=MOVE + DAY) == [["User lives in Lisbon"]] * 3
    # as_of before the move still finds the old fact
    assert _recall_all_ways(memory, as_of=MOVE - DAY) == [["User lives in Paris"]] * 3
    assert _recall_all_ways(memory, as_of=MOVE) == [["User lives in Lisbon"]] * 3


def test_known_at_answers_what_memlane_knew(moved: tuple[EpisodicMemory, str, str]) -> None:
    memory, _, _ = moved
    assert _recall_all_ways(memory, known_at=MOVE - DAY) == [["User lives in Paris"]] * 3
    assert _recall_all_ways(memory, known_at=MOVE) == [["User lives in Lisbon"]] * 3
    assert _recall_all_ways(memory, known_at=T0 - DAY) == [[]] * 3  # before anything was recorded


def test_as_of_with_known_at_answers_what_was_believed_true_then(
    memory: EpisodicMemory, clock: FrozenClock
) -> None:
    """Told at MOVE + 5 days that the user moved at MOVE: both axes at once (a fresh user's find)."""
    old = memory.remember_episode("fact", "User lives in Paris", tags=["home"])
    clock.set(MOVE + 5 * DAY)
    memory.supersede(old.id, "fact", "User lives in Lisbon", tags=["home"], valid_from=MOVE)
    # on MOVE + 3 memlane believed Paris, open-ended: true on MOVE + 2 as then known
    assert (
        _recall_all_ways(memory, as_of=MOVE + 2 * DAY, known_at=MOVE + 3 * DAY)
        == [["User lives in Paris"]] * 3
    )
    # known later: the move is known, so MOVE + 2 was Lisbon already, and before MOVE Paris (history)
    assert (
        _recall_all_ways(memory, as_of=MOVE + 2 * DAY, known_at=MOVE + 6 * DAY)
        == [["User lives in Lisbon"]] * 3
    )
    assert (
        _recall_all_ways(memory, as_of=MOVE - DAY, known_at=MOVE + 6 * DAY) == [["User lives in Paris"]] * 3
    )
    assert _recall_all_ways(memory, as_of=MOVE - DAY, known_at=T0 - DAY) == [[]] * 3  # nothing recorded yet


def test_retroactive_supersede(memory: EpisodicMemory, clock: FrozenClock) -> None:
    """Learned on day 20 that the move happened on day 10: as_of day 15 says Lisbon,
    but memlane *knew* Paris on day 15."""
    old = memory.remember_episode("fact", "User lives in Paris")
    clock.set(T0 + 20 * DAY)
    memory.supersede(old.id, "fact", "User lives in Lisbon", valid_from=MOVE)
    day15 = T0 + 15 * DAY
    assert _contents(memory.recall_episodes(as_of=day15)) == ["User lives in Lisbon"]
    assert _contents(memory.recall_episodes(known_at=day15)) == ["User lives in Paris"]
    # as known on day 15 (Lisbon not yet recorded), Paris was true on day 15, open-ended
    assert _contents(memory.recall_episodes(as_of=day15, known_at=day15)) == ["User lives in Paris"]


def test_remember_with_supersedes_many(memory: EpisodicMemory, clock: FrozenClock) -> None:
    a = memory.remember_episode("pref", "always use MySQL")
    b = memory.remember_episode("pref", "MySQL 5.7 for everything")
    clock.set(T0 + DAY)
    c = memory.remember_episode("pref", "we migrated to PostgreSQL", supersedes=[a.id, b.id])
    assert [h.episode.id for h in memory.recall_episodes()] == [c.id]
    history = memory.history(c.id)
    assert {ep.id for ep in history[:2]} == {a.id, b.id} and history[-1].id == c.id
    assert [ep.id for ep in memory.history(a.id)][-1] == c.id


def test_history_chain_oldest_to_newest(memory: EpisodicMemory, clock: FrozenClock) -> None:
    first = memory.remember_episode("fact", "lives in Paris")
    clock.set(T0 + DAY)
    second = memory.supersede(first.id, "fact", "lives in Lisbon")
    clock.set(T0 + 2 * DAY)
    third = memory.supersede(second.id, "fact", "lives in Porto")
    for member in (first, second, third):
        assert [ep.id for ep in memory.history(member.id)] == [first.id, second.id, third.id]
    lone = memory.remember_episode("fact", "has a cat")
    assert memory.history(lone.id) == [lone]


def test_superseding_twice_or_out_of_scope_is_not_found(make_memory: MemoryFactory) -> None:
    mine = make_memory(tenant_id="t1")
    theirs = make_memory(tenant_id="t2")
    other_session = make_memory(tenant_id="t1", session_id="s2")
    foreign = theirs.remember_episode("fact", "their fact")
    own = mine.remember_episode("fact", "my fact")
    for memory, target in ((mine, foreign.id), (other_session, own.id), (mine, "no-such-id")):
        with pytest.raises(EpisodeNotFoundError):
            memory.supersede(target, "fact", "replacement")
        with pytest.raises(EpisodeNotFoundError):
            memory.remember_episode("fact", "replacement", supersedes=[target])
        with pytest.raises(LookupError):  # the builtin it refines
            memory.history(target)
    assert mine.count() == 1 and theirs.count() == 1  # nothing was written
    mine.supersede(own.id, "fact", "my new fact")
    with pytest.raises(EpisodeNotFoundError, match="already superseded"):
        mine.supersede(own.id, "fact", "again")
    assert mine.count() == 2
    assert theirs.get_episode(foreign.id) == foreign  # untouched


def test_supersede_is_atomic(memory: EpisodicMemory, store: Store) -> None:
    """A store-level failure on one supersession writes nothing at all (no new row, no closed old one)."""
    old = memory.remember_episode("fact", "keep me")
    new = memory.remember_episode("fact", "placeholder")
    bad = [
        Supersession(old.id, "n1", valid_until=T0, invalidated_at=T0),
        Supersession("missing", "n1", valid_until=T0, invalidated_at=T0),
    ]
    with pytest.raises(EpisodeNotFoundError):
        store.insert([replace(new, id="n1")], None, bad)
    assert store.get("n1") is None
    assert store.get(old.id) == old


def test_reimport_round_trips_history(memory: EpisodicMemory, clock: FrozenClock) -> None:
    old = memory.remember_episode("fact", "User lives in Paris")
    clock.set(MOVE + DAY)
    memory.supersede(old.id, "fact", "User lives in Lisbon", reason="moved", valid_from=MOVE)
    exported = list(memory.iter_episodes())
    assert len(exported) == 2  # iteration (and export) include retired episodes
    for ep in exported:
        assert memory.delete_episode(ep.id)
    fields = [
        "event_type", "content", "tags", "importance", "created_at", "metadata", "id", "tenant_id",
        "session_id", "valid_from", "valid_until", "recorded_at", "invalidated_at", "superseded_by",
        "supersede_reason",
    ]  # fmt: skip
    clock.set(MOVE + 5 * DAY)  # a later import keeps the recorded transaction times
    memory.remember_episodes([EpisodeInput(**{f: getattr(ep, f) for f in fields}) for ep in exported])
    assert [ep.to_dict() for ep in memory.iter_episodes()] == [ep.to_dict() for ep in exported]
    assert _contents(memory.recall_episodes(as_of=MOVE - DAY)) == ["User lives in Paris"]


def test_store_filter_fields(
    memory: EpisodicMemory, store: Store, moved: tuple[EpisodicMemory, str, str]
) -> None:
    _, old_id, new_id = moved
    assert store.count(EpisodeFilter(valid_at=MOVE - DAY)) == 1
    assert store.count(EpisodeFilter(still_valid_at=MOVE + DAY)) == 1
    assert store.count(EpisodeFilter(current_at=MOVE)) == 1
    assert store.count(EpisodeFilter(recorded_by=MOVE - DAY)) == 1
    assert store.count(EpisodeFilter()) == 2
    assert [ep.id for ep in store.superseded_links([new_id])] == [old_id]


# -- contradiction candidates -------------------------------------------------------------


def test_find_contradictions_proposes_and_retires_nothing(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    paris = memory.remember_episode("fact", "User lives in Paris", tags=["home"])
    memory.remember_episode("pet", "User lives in Paris", tags=["misc"])  # other type, no shared tag
    memory.remember_episode("fact", "User has a beagle", tags=["pets"])  # dissimilar
    make_memory(tenant_id="t2").remember_episode("fact", "User lives in Paris")  # out of scope
    found = memory.find_contradictions("User lives in Lisbon", event_type="fact")  # default: confidence 0.8
    assert [(c.episode.id, c.reason) for c in found] == [
        (paris.id, "same event_type; value: paris -> lisbon")
    ]
    assert found[0].score == pytest.approx(0.75, abs=1e-3)
    assert 0.8 < found[0].confidence <= 1.0
    by_tag = memory.find_contradictions("User lives in Lisbon", tags=["HOME"])
    assert [(c.episode.id, c.reason) for c in by_tag] == [
        (paris.id, "shared tags: home; value: paris -> lisbon")
    ]
    assert memory.find_contradictions("User works in Paris", event_type="fact") == []  # compatible
    assert memory.find_contradictions("User lives in Lisbon", event_type="fact", threshold=0.999) == []
    assert memory.get_episode(paris.id) == paris  # nothing retired
    lisbon = memory.remember_episode("fact", "User lives in Lisbon", tags=["home"])
    both = memory.find_contradictions(lisbon)
    assert [(c.episode.id, c.reason) for c in both] == [
        (paris.id, "same event_type; shared tags: home; value: paris -> lisbon")
    ]
    with pytest.raises(ValidationError, match="threshold"):
        memory.find_contradictions("x", threshold=0)


def test_auto_supersede_records_its_reason(make_memory: MemoryFactory, clock: FrozenClock) -> None:
    memory = make_memory(auto_supersede=True)
    paris = memory.remember_episode("fact", "User lives in Paris")
    clock.set(MOVE)
    lisbon = memory.remember_episode("fact", "User lives in Lisbon")
    old = memory.get_episode(paris.id)
    assert old is not None and old.superseded_by == lisbon.id
    assert old.supersede_reason == (
        "auto: contradiction confidence=0.98 cosine=0.750 (same event_type; value: paris -> lisbon)"
    )
    assert old.valid_until == MOVE
    assert _contents(memory.recall_episodes()) == ["User lives in Lisbon"]
    memory.remember_episode("pet", "User has a beagle")  # no candidate: nothing retired
    assert memory.count() == 3
