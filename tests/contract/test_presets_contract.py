"""The seed formula and the presets through the public API, on every backend.

``weights="seed"`` must reproduce the seed 000 order computed by hand (the plain average of cosine,
``0.995 ** days`` and ``importance / 10``, unrated = 0.5); ``agent_context`` and ``cold_start`` must
lift an important, moderately relevant fact above a better match that the default puts first. With
the real bundled model: ``cold_start``/``agent_context`` bring an importance-10 fact that the default
ranks last among the top results, ``conversation`` puts the recent turn first, ``specific_question``
keeps the best match first (the README's preset examples are the same scenes).
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from memlane import EpisodicMemory, LocalEmbedder
from memlane.embeddings.fake import HashingEmbedder
from tests.conftest import T0, MemoryFactory

QUERY = "which seat does the user want on flights"
EPISODES = (  # content, importance, age in days
    ("User wants a window seat on long flights", 3.0, 200.0),
    ("User asked about seat upgrades once", None, 2.0),
    ("User is allergic to peanuts", 10.0, 30.0),
)


def _store(memory: EpisodicMemory) -> None:
    for content, importance, age in EPISODES:
        memory.remember_episode("fact", content, importance=importance, created_at=T0 - timedelta(days=age))


def test_seed_weights_reproduce_the_seed_formula_by_hand(
    memory: EpisodicMemory, embedder: HashingEmbedder
) -> None:
    _store(memory)
    vectors = embedder.embed([QUERY, *(c for c, _, _ in EPISODES)]).astype(np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    by_hand = {
        content: (max(float(vectors[0] @ vectors[k]), 0.0) + 0.995**age + (0.5 if imp is None else imp / 10))
        / 3
        for k, (content, imp, age) in enumerate(EPISODES, start=1)
    }
    hits = memory.recall_episodes(QUERY, limit=3, weights="seed")
    assert [h.episode.content for h in hits] == sorted(by_hand, key=lambda c: -by_hand[c])
    for h in hits:
        b = h.breakdown
        assert b is not None
        assert b.score == pytest.approx(by_hand[h.episode.content], abs=1e-6)
        assert sum(c.points for c in b.contributions) == pytest.approx(b.score, abs=1e-12)


@pytest.mark.parametrize("preset", ["agent_context", "cold_start"])
def test_an_important_moderately_relevant_fact_surfaces(memory: EpisodicMemory, preset: str) -> None:
    memory.remember_episode("fact", "Dana is allergic to peanuts and carries an epipen", importance=10)
    memory.remember_episode("chat", "Dana said the peanuts at the bar were salty, it was fun", importance=2)
    query = "salty peanuts at the bar"
    assert [h.episode.importance for h in memory.recall_episodes(query, limit=2)] == [2, 10]
    assert [h.episode.importance for h in memory.recall_episodes(query, limit=2, weights=preset)] == [10, 2]


# -- with the real bundled model: each preset moves the ranking the way seed 002 says -----------

DINNER = "book a Thai restaurant for Dana's family dinner"
ALLERGY = "Dana's daughter has a severe peanut allergy"
RESTAURANT_FACTS = (  # content, importance, age in days
    (ALLERGY, 10.0, 300.0),
    ("Dana ordered pad thai for the team lunch", 3.0, 2.0),
    ("Dana likes trying new restaurants downtown", 4.0, 10.0),
    ("The Thai place near the office closes at nine", 2.0, 5.0),
    ("Dana booked a table for four at the Italian place", 5.0, 1.0),
    ("Dana asked for a summary of the quarterly report", 3.0, 20.0),
)
THURSDAY = "We agreed to ship the release on Thursday"
FRIDAY = "We agreed to ship the release on Friday instead"


@pytest.fixture
def real(make_memory: MemoryFactory, local_embedder: LocalEmbedder) -> EpisodicMemory:
    return make_memory(embedder_=local_embedder)


def _remember(memory: EpisodicMemory, facts: tuple[tuple[str, float | None, float], ...]) -> None:
    for content, importance, age in facts:
        memory.remember_episode("fact", content, importance=importance, created_at=T0 - timedelta(days=age))


def _order(memory: EpisodicMemory, query: str, weights: str | None, limit: int = 6) -> list[str]:
    return [h.episode.content for h in memory.recall_episodes(query, limit=limit, weights=weights)]


@pytest.mark.parametrize(("preset", "place"), [("cold_start", 1), ("agent_context", 3)])
def test_cold_start_and_agent_context_surface_a_critical_moderately_relevant_fact(
    real: EpisodicMemory, preset: str, place: int
) -> None:
    _remember(real, RESTAURANT_FACTS)
    default = _order(real, DINNER, None)
    assert default.index(ALLERGY) == 5  # relevance-first: the allergy is the weakest match
    assert _order(real, DINNER, "specific_question") == default
    lifted = _order(real, DINNER, preset)
    assert lifted.index(ALLERGY) <= place < 4  # among the top results, ahead of better matches
    (hit,) = [
        h for h in real.recall_episodes(DINNER, limit=6, weights=preset) if h.episode.content == ALLERGY
    ]
    assert hit.breakdown is not None and hit.breakdown.dense is not None
    assert 0.3 <= hit.breakdown.dense <= 0.6  # moderately relevant


def test_conversation_favours_the_recent_turn_and_specific_question_the_better_match(
    real: EpisodicMemory,
) -> None:
    _remember(real, ((THURSDAY, None, 60.0), (FRIDAY, None, 0.1)))
    query = "which day did we agree to ship"
    hits = {h.episode.content: h for h in real.recall_episodes(query, limit=2)}
    assert hits[THURSDAY].breakdown is not None and hits[FRIDAY].breakdown is not None
    assert hits[THURSDAY].breakdown.relevance > hits[FRIDAY].breakdown.relevance  # the better match
    assert _order(real, query, "specific_question", 2) == [THURSDAY, FRIDAY]  # accuracy first
    assert _order(real, query, None, 2) == [THURSDAY, FRIDAY]
    recent = real.recall_episodes(query, limit=2, weights="conversation")
    assert [h.episode.content for h in recent] == [FRIDAY, THURSDAY]
    assert recent[0].breakdown is not None and recent[0].breakdown.decided_by == "recency"
