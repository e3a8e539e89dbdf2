"""The seed formula and the presets through the public API, on every backend.

``weights="seed"`` must reproduce the seed 000 order computed by hand (the plain average of cosine,
``0.995 ** days`` and ``importance / 10``, unrated = 0.5); ``agent_context`` and ``cold_start`` must
lift an important, moderately relevant fact above a better match that the default puts first.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from memlane import EpisodicMemory
from memlane.embeddings.fake import HashingEmbedder
from tests.conftest import T0

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
