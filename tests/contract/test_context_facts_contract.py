"""The context block includes the knowledge graph's facts, on every backend, with the real bundled model.

For each entity the query names, its facts valid at the read's ``now`` are one candidate of the
block (heading ``Facts "<entity>"``), ranked by the one ranking and held to the same token budget
and the same relevance floor as the conversations and events; a query that names no entity with
facts gets none of them (so an unrelated query still injects nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import numpy as np
import pytest
from numpy.typing import NDArray

from memlane import EpisodicMemory, LocalEmbedder
from memlane.embeddings.fake import HashingEmbedder
from memlane.sessions.context import NOTHING_RELEVANT_BLOCK, match_strength
from memlane.tools import MemoryTools
from tests.conftest import T0, MemoryFactory

DAY = timedelta(days=1)
OWNER = {"agent_id": "travel", "user_id": "dana"}


def _facts(memory: EpisodicMemory) -> EpisodicMemory:
    memory.remember_fact("Ana", "lives_in", "Berlin", valid_from=T0 - 900 * DAY)
    memory.remember_fact("Ana", "lives_in", "Lisbon", valid_from=T0 - 300 * DAY)  # closes Berlin
    memory.remember_fact("Ana", "works_at", "Acme", valid_from=T0 - 100 * DAY, importance=7)
    memory.remember_fact("Ana", "likes", "sushi", valid_from=T0 - 10 * DAY)
    memory.remember_fact("customer_123", "subscription_tier", value="enterprise", valid_from=T0 - 5 * DAY)
    memory.remember_episode("preference", "User prefers window seats on long flights", importance=8)
    return memory


@pytest.fixture
def memory(make_memory: MemoryFactory, local_embedder: LocalEmbedder) -> EpisodicMemory:
    return _facts(make_memory(embedder_=local_embedder, scope="tenant"))


def _facts_items(block: object) -> list[object]:
    return [item for item in block.items if item.kind == "facts"]  # type: ignore[attr-defined]


def test_a_query_naming_an_entity_gets_its_current_facts_under_their_own_heading(
    memory: EpisodicMemory,
) -> None:
    block = memory.sessions.build_context_block("Where does Ana live now?", token_budget=400, **OWNER)
    (item,) = _facts_items(block)
    assert item.label == "Ana" and item.at == T0  # type: ignore[attr-defined]
    assert '(1) Facts "Ana" · ' in block.text
    assert "Ana lives in Lisbon (since " in block.text and "Berlin" not in block.text  # the retired one
    assert "Ana works at Acme" in block.text and "Ana likes sushi" in block.text
    assert "customer_123" not in block.text  # another entity's facts
    assert block.tokens <= 400 and block.relevant


def test_the_facts_are_the_ones_valid_at_the_reads_now(memory: EpisodicMemory) -> None:
    block = memory.sessions.build_context_block(
        "Where does Ana live?", token_budget=400, now=T0 - 400 * DAY, **OWNER
    )
    assert "Ana lives in Berlin" in block.text and "Lisbon" not in block.text and "Acme" not in block.text


def test_a_value_fact_is_shown_with_its_value(memory: EpisodicMemory) -> None:
    block = memory.sessions.build_context_block("which plan is customer_123 on?", token_budget=400, **OWNER)
    assert "customer_123 subscription tier: enterprise (since " in block.text


@pytest.mark.parametrize(
    "query", ["What is the boiling point of liquid nitrogen?", "quantum chromodynamics lecture"]
)
def test_an_unrelated_query_gets_no_facts(memory: EpisodicMemory, query: str) -> None:
    block = memory.sessions.build_context_block(query, token_budget=400, **OWNER)
    assert block.text == NOTHING_RELEVANT_BLOCK and _facts_items(block) == []


def test_an_entity_without_facts_and_include_facts_false_add_nothing(memory: EpisodicMemory) -> None:
    memory.remember_episode("note", "Bruno joined the team in March")
    named = memory.sessions.build_context_block("What do we know about Bruno?", token_budget=400, **OWNER)
    assert _facts_items(named) == []
    off = memory.sessions.build_context_block(
        "Where does Ana live now?", token_budget=400, include_facts=False, **OWNER
    )
    assert _facts_items(off) == [] and "Lisbon" not in off.text


def test_the_facts_are_held_to_the_same_relevance_floor(memory: EpisodicMemory) -> None:
    query = "What does Ana like to eat?"
    kept = memory.sessions.build_context_block(query, token_budget=400, min_relevance=0, **OWNER)
    (item,) = _facts_items(kept)
    strength = match_strength(item.breakdown)  # type: ignore[attr-defined]
    assert 0 < strength < 1  # the calibrated cosine of the facts' own text to the query
    floor = round(strength + 0.01, 2)
    dropped = memory.sessions.build_context_block(query, token_budget=400, min_relevance=floor, **OWNER)
    assert _facts_items(dropped) == [] and dropped.below_min_relevance >= 1


def test_the_facts_fit_the_same_token_budget(memory: EpisodicMemory) -> None:
    full = memory.sessions.build_context_block("Tell me about Ana", token_budget=400, **OWNER)
    (item,) = _facts_items(full)
    assert len(item.lines) == 3  # type: ignore[attr-defined]
    tight = memory.sessions.build_context_block("Tell me about Ana", token_budget=full.tokens - 1, **OWNER)
    assert tight.tokens <= full.tokens - 1
    assert [i.kind for i in tight.items] == ["facts"] and tight.shortened == 1  # the best fact alone
    assert tight.text.count("Ana ") == 1


def test_another_tenants_facts_never_appear(
    make_memory: MemoryFactory, local_embedder: LocalEmbedder
) -> None:
    _facts(make_memory(tenant_id="t1", embedder_=local_embedder))
    other = make_memory(tenant_id="t2", embedder_=local_embedder)
    block = other.sessions.build_context_block("Where does Ana live now?", token_budget=400, **OWNER)
    assert _facts_items(block) == [] and "Lisbon" not in block.text


def test_the_get_context_tool_lists_the_facts_item(memory: EpisodicMemory) -> None:
    tools = MemoryTools(memory, **OWNER)
    result = tools.handle_tool_call("get_context", {"query": "Where does Ana live now?"})
    assert result["ok"] and {"kind": "facts", "label": "Ana", "when": T0.isoformat()} in result["items"]
    off = tools.handle_tool_call("get_context", {"query": "Where does Ana live now?", "include_facts": False})
    assert all(i["kind"] != "facts" for i in off["items"])


class _Unreachable(HashingEmbedder):
    """An embedder whose endpoint is down."""

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        raise ConnectionError("connection refused")


def test_without_the_embedder_the_named_entitys_facts_are_keyword_candidates(
    make_memory: MemoryFactory,
) -> None:
    memory = make_memory(embedder_=_Unreachable(), scope="tenant")
    memory.remember_fact("Ana", "lives_in", "Lisbon", valid_from=T0 - 300 * DAY)
    block = memory.sessions.build_context_block("Where does Ana live now?", token_budget=400, **OWNER)
    (item,) = _facts_items(block)
    breakdown = item.breakdown  # type: ignore[attr-defined]
    assert breakdown.fallback is True and breakdown.dense is None and match_strength(breakdown) == 1.0
    assert "Ana lives in Lisbon" in block.text
    unrelated = memory.sessions.build_context_block("liquid nitrogen", token_budget=400, **OWNER)
    assert _facts_items(unrelated) == []


def test_the_block_embeds_its_query_once_and_the_facts_once(make_memory: MemoryFactory) -> None:
    counting = HashingEmbedder()
    memory = make_memory(embedder_=counting, scope="tenant")
    memory.remember_episode("note", "Ana booked the train to Sintra")
    memory.sessions.store_session("s-1", [{"role": "user", "content": "Ana wants a window seat"}], **OWNER)
    memory.remember_fact("Ana", "lives_in", "Lisbon")
    counting.calls = 0
    memory.sessions.build_context_block("Where does Ana live?", token_budget=400, min_relevance=0, **OWNER)
    assert counting.calls == 2  # the query (sessions, events and facts share it), then the facts
    counting.calls = 0
    memory.sessions.build_context_block("the weather in Porto", token_budget=400, **OWNER)
    assert counting.calls == 1  # no entity named: no facts to embed
    counting.calls = 0
    memory.recall_episodes("the weather in Porto")
    memory.recall_episodes("the weather in Porto")
    assert counting.calls == 2  # outside a block nothing is kept between reads
