"""``importance="auto"`` on every backend: the estimate is what is stored and read back.

The argument, the batch field and the config default all go through
:func:`memlane.episode_input.resolve_importance`; an explicit rating always wins and an
unrated episode stays unrated unless the memory is configured with ``importance="auto"``.
"""

from __future__ import annotations

import asyncio

import pytest

from memlane import AsyncEpisodicMemory, EpisodeInput, EpisodicMemory, ValidationError
from memlane.importance import estimate_importance
from memlane.stores.base import EpisodeFilter, Store
from tests.conftest import MemoryFactory

STRING_REFUSED = r"^importance must be a number \(clamped to 1-10\) or null, got string"
"""The message of every interface for a string rating (another string than "auto" in Python)."""
ALLERGY = "Daughter diagnosed with a peanut allergy."
GREETING = "User said hi."


def _stored(memory: EpisodicMemory, episode_id: str) -> float | None:
    episode = memory.get_episode(episode_id)
    assert episode is not None
    return episode.importance


def test_auto_stores_the_estimate_and_reads_it_back(memory: EpisodicMemory) -> None:
    allergy = memory.remember_episode("fact", ALLERGY, importance="auto")
    greeting = memory.remember_episode("chat", GREETING, importance="auto")
    assert allergy.importance == estimate_importance(ALLERGY) >= 9
    assert greeting.importance == estimate_importance(GREETING) <= 2
    assert _stored(memory, allergy.id) == allergy.importance
    assert _stored(memory, greeting.id) == greeting.importance


def test_without_auto_unrated_stays_unrated_and_numbers_are_clamped(memory: EpisodicMemory) -> None:
    assert memory.remember_episode("fact", ALLERGY).importance is None
    assert memory.remember_episode("fact", ALLERGY, importance=42).importance == 10.0
    assert memory.remember_episode("fact", ALLERGY, importance=0).importance == 1.0


def test_the_config_default_estimates_unrated_episodes_and_a_rating_wins(make_memory: MemoryFactory) -> None:
    memory = make_memory(importance="auto")
    unrated = memory.remember_episode("fact", ALLERGY)
    rated = memory.remember_episode("fact", ALLERGY, importance=3)
    batch = memory.remember_episodes(
        [EpisodeInput("chat", GREETING), EpisodeInput("chat", GREETING, importance=8)]
    )
    assert unrated.importance == estimate_importance(ALLERGY)
    assert rated.importance == 3.0
    assert [ep.importance for ep in batch] == [estimate_importance(GREETING), 8.0]
    assert [_stored(memory, ep.id) for ep in (unrated, rated, *batch)] == [
        estimate_importance(ALLERGY),
        3.0,
        estimate_importance(GREETING),
        8.0,
    ]


def test_supersede_estimates_the_new_fact_under_the_config_default(make_memory: MemoryFactory) -> None:
    memory = make_memory(importance="auto")
    old = memory.remember_episode("fact", "User lives in Porto.", importance=8)
    new = memory.supersede(old.id, "fact", "User moved to Lisbon from Porto.")
    assert new.importance == estimate_importance("User moved to Lisbon from Porto.")
    assert _stored(memory, new.id) == new.importance


def test_the_same_text_gets_the_same_stored_score(memory: EpisodicMemory) -> None:
    first, second = memory.remember_episodes(
        [EpisodeInput("fact", ALLERGY, importance="auto"), EpisodeInput("fact", ALLERGY, importance="auto")]
    )
    assert first.importance == second.importance == _stored(memory, first.id) == _stored(memory, second.id)


def test_other_strings_are_refused_and_nothing_is_stored(memory: EpisodicMemory, store: Store) -> None:
    with pytest.raises(ValidationError, match=STRING_REFUSED):
        memory.remember_episode("fact", ALLERGY, importance="high")
    with pytest.raises(ValidationError, match=r"^episode #1: importance must be a number"):
        memory.remember_episodes(
            [EpisodeInput("fact", ALLERGY), EpisodeInput("fact", ALLERGY, importance="8")]
        )
    assert store.stats(EpisodeFilter()).episodes == 0


def test_the_async_twin_estimates_alike(make_memory: MemoryFactory) -> None:
    async def run() -> list[float | None]:
        async with AsyncEpisodicMemory(make_memory(importance="auto")) as memory:
            by_argument = await memory.remember_episode("fact", ALLERGY, importance="auto")
            by_default = await memory.remember_episode("chat", GREETING)
            rated = await memory.remember_episode("chat", GREETING, importance=6)
            return [by_argument.importance, by_default.importance, rated.importance]

    assert asyncio.run(run()) == [estimate_importance(ALLERGY), estimate_importance(GREETING), 6.0]
