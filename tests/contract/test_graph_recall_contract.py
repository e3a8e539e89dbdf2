"""Recall's knowledge-graph entity stage on every backend (SQLite file, real PostgreSQL).

The store's set-based lookup (:meth:`Store.linked_episodes`) answers the same on both; through the
facade, the graph boost lifts and explains the episodes linked to the query's entities and their
1-hop neighbours, finds episodes neither search found, and never reads another scope's episodes,
entities or facts.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from memlane import EpisodicMemory, FrozenClock
from memlane.analysis import query_terms
from memlane.stores.base import EpisodeFilter, Store
from tests.conftest import MemoryFactory

MINUTE = timedelta(minutes=1)


def _key(store: Store, flt: EpisodeFilter, word: str) -> int:
    found = store.keyword_candidates(flt, query_terms(word), 5)
    assert len(found.keys) == 1, word
    return int(found.keys[0])


def test_linked_episodes_gives_the_links_of_candidates_and_the_extra_linked_ones(
    make_memory: MemoryFactory, store: Store, clock: FrozenClock
) -> None:
    mine = make_memory()
    for text in (
        "Yesterday I met Bob in Paris with Alice",
        "We gave Bob green tea",
        "Skiing with Alice, then Bob joined",
        "Nothing here",
    ):
        mine.remember_episode("note", text)
        clock.advance(MINUTE)
    make_memory(session_id="s2").remember_episode("note", "We sold Bob the bicycle")
    make_memory(tenant_id="t2").remember_episode("note", "Then Bob fixed the roof")
    flt = EpisodeFilter(tenant_id="t1", session_id="s1")
    paris, tea, skiing = (_key(store, flt, w) for w in ("paris", "tea", "skiing"))

    found = store.linked_episodes(flt, "t1", ["bob", "alice"], [paris], extra=10)
    # extra: linked, passing the filter, not requested; most wanted entities first, then newest
    assert found.extra_keys.tolist() == [skiing, tea]
    assert len(found.extra_ids) == 2
    assert found.created_at_seconds.dtype == np.float64 and np.isnan(found.importance).all()
    assert found.links == sorted(
        [(paris, "alice"), (paris, "bob"), (tea, "bob"), (skiing, "alice"), (skiing, "bob")]
    )
    capped = store.linked_episodes(flt, "t1", ["bob"], [paris], extra=1)
    assert capped.extra_keys.tolist() == [skiing]
    none = store.linked_episodes(flt, "t1", ["bob"], [paris], extra=0)
    assert none.extra_keys.tolist() == [] and none.links == [(paris, "bob")]
    # another tenant's graph never answers, even for the same entity id
    assert store.linked_episodes(flt, "t2", ["bob"], [paris], extra=10).links == []
    assert store.linked_episodes(flt, "t1", [], [paris], extra=10).links == []


@pytest.fixture
def graphed(make_memory: MemoryFactory, clock: FrozenClock) -> EpisodicMemory:
    memory = make_memory(retrieval="keyword", graph_boost=0.5, min_relevance=0.0)
    for text in (
        "At the conference Alice introduced me to her colleague",
        "A great sushi place downtown, recommended by Bob",
        "The weather was grey all week",
        "Dinner was pasta again",
    ):
        memory.remember_episode("note", text)
        clock.advance(MINUTE)
    memory.remember_fact("Alice", "introduced", "Bob")
    return memory


def _ranked(memory: EpisodicMemory, query: str) -> list[tuple[str, float, tuple[object, ...]]]:
    hits = memory.recall_episodes(query, limit=5)
    return [(h.episode.content, h.breakdown.score, h.breakdown.boosts) for h in hits if h.breakdown]


def test_a_neighbour_through_a_fact_brings_an_episode_neither_search_found(
    graphed: EpisodicMemory, make_memory: MemoryFactory
) -> None:
    hits = graphed.recall_episodes("Who did Alice introduce me to?", limit=5)
    contents = [h.episode.content for h in hits]
    assert contents[0] == "At the conference Alice introduced me to her colleague"
    sushi = next(h for h in hits if h.episode.content.startswith("A great sushi"))
    assert sushi.breakdown is not None and sushi.breakdown.keyword is None  # no query word in it
    assert [b.name for b in sushi.breakdown.boosts] == ["graph"]
    assert 0.0 < sushi.breakdown.boosts[0].strength < 0.5
    # the same memory without the knob: keyword recall cannot find it
    off = make_memory(retrieval="keyword", min_relevance=0.0)
    assert all(
        not h.episode.content.startswith("A great sushi")
        for h in off.recall_episodes("Who did Alice introduce me to?")
    )


def test_a_recall_is_never_influenced_by_another_scopes_graph(
    graphed: EpisodicMemory, make_memory: MemoryFactory
) -> None:
    query = "What did Alice say about Carol?"
    before = _ranked(graphed, query)
    # another session of the tenant and another tenant: episodes and facts about the same entities
    for other in (make_memory(session_id="s2"), make_memory(tenant_id="t2")):
        other.remember_episode("note", "Carol and Alice went to Rome, the weather was grey")
        other.remember_episode("note", "Dinner with Dave was pasta again")
        other.remember_fact("Alice", "knows", "Dave")
        other.remember_fact("Carol", "knows", "Dave")
    assert _ranked(graphed, query) == before


def test_global_scope_runs_no_graph_stage(make_memory: MemoryFactory) -> None:
    memory = make_memory(scope="global", retrieval="keyword", graph_boost=0.5)
    memory.remember_episode("note", "Alice met Bob")
    memory.remember_fact("Alice", "knows", "Bob")
    hits = memory.recall_episodes("What about Alice?")
    assert hits and all(h.breakdown is not None and h.breakdown.boosts == () for h in hits)
