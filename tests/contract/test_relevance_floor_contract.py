"""The context paths' relevance floor on every backend, with the real bundled model (issue #20 item 3).

An unrelated query on a travel agent's memory injects nothing: ``build_context_block`` says that
nothing relevant was found, ``inject_context`` returns the messages unchanged, ``search_sessions``
and the ``get_context`` tool find nothing; related queries keep their evidence; the floor is
``MemoryConfig.context_min_relevance`` (default :data:`memlane.config.DEFAULT_CONTEXT_MIN_RELEVANCE`)
and a call's ``min_relevance``. ``recall_episodes`` keeps its unfiltered default.
"""

from __future__ import annotations

import asyncio
import copy
from datetime import timedelta

import pytest

from memlane import AsyncEpisodicMemory, EpisodicMemory, LocalEmbedder, ValidationError
from memlane.config import DEFAULT_CONTEXT_MIN_RELEVANCE
from memlane.sessions.context import NOTHING_RELEVANT_BLOCK, match_strength
from memlane.tools import MemoryTools
from tests.conftest import T0, MemoryFactory

UNRELATED = ("quantum chromodynamics lecture", "What is the boiling point of liquid nitrogen?")
FACTS = (
    ("preference", "User prefers window seats on long flights", 8),
    ("fact", "User's passport expires in March 2027", 9),
    ("preference", "User is vegetarian and orders veggie meals on flights", 7),
    ("error", "Booking BK-4471 failed: card declined", 6),
)
TRIP = [
    {"role": "user", "content": "Can you book my flight to Lisbon for the conference?"},
    {"role": "assistant", "content": "Booked TAP flight TP1351 on 12 May, window seat 14A."},
    {"role": "user", "content": "Great, and a hotel near the venue please."},
    {"role": "assistant", "content": "Done: Hotel Lisboa Plaza, three nights."},
]
OWNER = {"agent_id": "travel", "user_id": "dana"}


def _travel(memory: EpisodicMemory) -> EpisodicMemory:
    for event_type, content, importance in FACTS:
        memory.remember_episode(event_type, content, importance=importance)
    memory.sessions.store_session("trip-1", TRIP, started_at=T0 - timedelta(days=3), **OWNER)
    return memory


@pytest.fixture
def travel(make_memory: MemoryFactory, local_embedder: LocalEmbedder) -> EpisodicMemory:
    return _travel(make_memory(embedder_=local_embedder))


def test_the_floor_is_on_by_default(travel: EpisodicMemory) -> None:
    assert travel.config.context_min_relevance == DEFAULT_CONTEXT_MIN_RELEVANCE > 0


@pytest.mark.parametrize("query", UNRELATED)
def test_an_unrelated_query_injects_nothing_and_the_block_says_so(travel: EpisodicMemory, query: str) -> None:
    block = travel.sessions.build_context_block(query, token_budget=500, **OWNER)
    assert block.text == NOTHING_RELEVANT_BLOCK and not block.relevant and block.items == ()
    assert block.below_min_relevance > 0 and block.min_relevance == DEFAULT_CONTEXT_MIN_RELEVANCE
    messages = [{"role": "system", "content": "You are a travel agent."}, {"role": "user", "content": query}]
    before = copy.deepcopy(messages)
    assert travel.sessions.inject_context(messages, token_budget=500, **OWNER) == before
    assert travel.sessions.search_sessions("travel", "dana", query) == []
    tools = MemoryTools(travel, **OWNER)
    tool = tools.handle_tool_call("get_context", {"query": query})
    assert tool["ok"] and tool["relevant"] is False and tool["items"] == []
    assert tool["text"] == NOTHING_RELEVANT_BLOCK
    found = tools.handle_tool_call("search_sessions", {"query": query})
    assert found["count"] == 0
    # recall_episodes keeps its unfiltered default (its own min_relevance is the opt-in floor).
    assert len(travel.recall_episodes(query, limit=3)) == 3


@pytest.mark.parametrize(
    ("query", "evidence"),
    [
        ("which seat do I like on flights?", "User prefers window seats on long flights"),
        ("when does my passport expire", "User's passport expires in March 2027"),
        ("what happened with booking BK-4471?", "Booking BK-4471 failed: card declined"),
        ("what hotel did you book in Lisbon?", "assistant: Done: Hotel Lisboa Plaza, three nights."),
    ],
)
def test_a_related_query_keeps_its_evidence(travel: EpisodicMemory, query: str, evidence: str) -> None:
    block = travel.sessions.build_context_block(query, token_budget=500, **OWNER)
    assert block.relevant and evidence in block.text
    assert all(match_strength(i.breakdown) >= DEFAULT_CONTEXT_MIN_RELEVANCE for i in block.items)
    messages = [{"role": "user", "content": query}]
    injected = travel.sessions.inject_context(messages, token_budget=500, **OWNER)
    assert len(injected) == 2 and evidence in injected[0]["content"]


def test_the_hotel_passage_survives_the_floor_in_session_search(travel: EpisodicMemory) -> None:
    (snippet,) = travel.sessions.search_sessions("travel", "dana", "what hotel did you book in Lisbon?")
    assert (
        snippet.session_id == "trip-1" and match_strength(snippet.breakdown) >= DEFAULT_CONTEXT_MIN_RELEVANCE
    )


def test_the_floor_is_configurable_per_memory_and_per_call(
    make_memory: MemoryFactory, local_embedder: LocalEmbedder
) -> None:
    query = UNRELATED[0]
    off = _travel(make_memory(embedder_=local_embedder, context_min_relevance=0.0))
    noisy = off.sessions.build_context_block(query, token_budget=500, **OWNER)
    assert noisy.relevant and noisy.below_min_relevance == 0  # without a floor: noise, as before
    assert off.sessions.search_sessions("travel", "dana", query) != []
    default = make_memory(embedder_=local_embedder, tenant_id="t2")
    _travel(default)
    per_call = default.sessions.build_context_block(query, token_budget=500, min_relevance=0.0, **OWNER)
    assert [i.label for i in per_call.items] == [i.label for i in noisy.items]
    strict = default.sessions.build_context_block(
        "which seat do I like on flights?", token_budget=500, min_relevance=1.0, **OWNER
    )
    assert strict.text == NOTHING_RELEVANT_BLOCK
    assert default.sessions.search_sessions("travel", "dana", "hotel in Lisbon", min_relevance=1.0) == []
    tool = MemoryTools(default, **OWNER).handle_tool_call("get_context", {"query": query, "min_relevance": 0})
    assert tool["relevant"] is True
    with pytest.raises(ValidationError, match="min_relevance"):
        default.sessions.search_sessions("travel", "dana", "x", min_relevance=1.5)


def test_the_async_twin_applies_the_same_floor(travel: EpisodicMemory) -> None:
    async def run() -> tuple[str, list[dict[str, object]]]:
        twin = AsyncEpisodicMemory(travel, owns_memory=False)
        block = await twin.sessions.build_context_block(UNRELATED[0], token_budget=500, **OWNER)
        injected = await twin.sessions.inject_context(
            [{"role": "user", "content": UNRELATED[1]}], token_budget=500, **OWNER
        )
        return block.text, injected

    text, injected = asyncio.run(run())
    assert text == NOTHING_RELEVANT_BLOCK and injected == [{"role": "user", "content": UNRELATED[1]}]
