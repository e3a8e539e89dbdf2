"""Contradiction detection with the real bundled model, on every backend (#13 item 10).

"User lives in Paris" / "User lives in Berlin" (cosine ~0.67) and "prefers aisle seats" /
"prefers window seats" (~0.75) were missed by the cosine >= 0.8 rule; they are flagged now
with a confidence > 0.8, and similar but compatible statements are not.
"""

from __future__ import annotations

import pytest

from memlane import EpisodicMemory, FrozenClock, LocalEmbedder, MemoryConfig
from memlane.lifecycle.contradiction import judge
from memlane.stores.base import Store
from tests.conftest import T0


@pytest.fixture(scope="module")
def local_embedder() -> LocalEmbedder:
    """The real bundled model (all-MiniLM-L6-v2, int8 ONNX), loaded once per module."""
    return LocalEmbedder()


@pytest.fixture
def real(store: Store, local_embedder: LocalEmbedder) -> EpisodicMemory:
    return EpisodicMemory(
        store, local_embedder, clock=FrozenClock(T0), tenant_id="t1", session_id="s1", owns_store=False
    )


CONTRADICTING = [
    ("fact", "User lives in Paris", "User lives in Berlin"),
    ("preference", "User prefers aisle seats", "User prefers window seats"),
    ("preference", "User likes spicy food", "User does not like spicy food"),
    ("fact", "We use PostgreSQL for the main database", "We use MySQL for the main database"),
]
COMPATIBLE = [
    ("fact", "User lives in Paris", "User works in Paris"),
    ("preference", "User likes tea", "User likes tea with milk"),
    ("preference", "User prefers window seats", "User prefers window seats on long flights"),
    ("fact", "User works at Google", "User worked at Google"),
]


@pytest.mark.parametrize(("kind", "old", "new"), CONTRADICTING)
def test_contradicting_facts_are_flagged_with_confidence_over_0_8(
    real: EpisodicMemory, kind: str, old: str, new: str
) -> None:
    stored = real.remember_episode(kind, old)
    found = real.find_contradictions(new, event_type=kind)  # default threshold 0.8
    assert [c.episode.id for c in found] == [stored.id]
    assert 0.8 < found[0].confidence <= 1.0
    assert found[0].reason.startswith("same event_type; ")


@pytest.mark.parametrize(("kind", "old", "new"), COMPATIBLE)
def test_compatible_similar_facts_are_not_flagged(
    real: EpisodicMemory, kind: str, old: str, new: str
) -> None:
    real.remember_episode(kind, old)
    assert real.find_contradictions(new, event_type=kind) == []
    below = real.find_contradictions(new, event_type=kind, threshold=1e-9)  # judged, with a low confidence
    assert all(0.0 <= c.confidence < 0.5 for c in below)


def test_auto_supersede_retires_the_contradicted_fact(store: Store, local_embedder: LocalEmbedder) -> None:
    memory = EpisodicMemory(
        store,
        local_embedder,
        config=MemoryConfig(auto_supersede=True),
        clock=FrozenClock(T0),
        tenant_id="t1",
        owns_store=False,
    )
    paris = memory.remember_episode("fact", "User lives in Paris", tags=["home"])
    office = memory.remember_episode("fact", "User works in Paris", tags=["work"])
    berlin = memory.remember_episode("fact", "User lives in Berlin", tags=["home"])
    old = memory.get_episode(paris.id)
    assert old is not None and old.superseded_by == berlin.id
    assert old.supersede_reason is not None
    assert old.supersede_reason.startswith("auto: contradiction confidence=")
    assert "value: paris -> berlin" in old.supersede_reason
    assert memory.get_episode(office.id) == office  # compatible: kept


def test_judge_reads_the_difference() -> None:
    assert judge("User lives in Paris", "User lives in Berlin", 0.67).kind == "value"
    assert judge("User likes tea", "User likes tea with milk", 0.9).kind == "elaboration"
    assert judge("User lives in Paris", "User works in Paris", 0.8).kind == "mixed"
    assert judge("User never drinks alcohol", "User drinks alcohol", 0.8).kind == "negation"
    assert judge("User lives in Paris", "User lives in Paris", 1.0).confidence < 0.1
    assert judge("User lives in Paris", "The build uses Maven", 0.1).confidence == 0.0
    for a, b, cos in [("x", "y", -1.0), ("", "", 0.0), ("User is 34", "User is 41", 2.0)]:
        assert 0.0 <= judge(a, b, cos).confidence <= 1.0
