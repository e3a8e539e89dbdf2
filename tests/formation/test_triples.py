"""Facts for the knowledge graph through an OpenAI-compatible LLM: a scripted stub and the real server."""

from __future__ import annotations

import json

from memlane import EpisodicMemory
from memlane.formation import MIN_IMPORTANCE, OpenAICompatibleLLM, form_facts
from tests.formation.conftest import CONVERSATION
from tests.llm_server import StubReply, stub_chat_server


def _triple(
    subject: str, predicate: str, obj: str, kind: str, confidence: float, importance: int
) -> dict[str, object]:
    return {
        "subject": subject,
        "predicate": predicate,
        "object": obj,
        "kind": kind,
        "confidence": confidence,
        "importance": importance,
    }


REPLY = json.dumps(
    {
        "triples": [
            _triple("user", "lives_in", "Berlin", "entity", 0.95, 8),
            _triple("user", "allergic_to", "peanuts", "entity", 0.9, 10),
            _triple("user", "likes", "weather", "entity", 0.5, 6),  # below the confidence floor
            _triple("user", "mentioned", "flights", "entity", 0.9, 2),  # below the importance floor
            _triple("user", "home_airport", "BER", "value", 0.8, 6),
        ]
    }
)


def test_thresholds_provenance_and_idempotence(sqlite_memory: EpisodicMemory) -> None:
    with stub_chat_server([StubReply(REPLY)]) as stub:
        llm = OpenAICompatibleLLM("stub", base_url=stub.base_url, api_key="x", max_retries=0)
        stored = form_facts(sqlite_memory, CONVERSATION, llm=llm, session_id="chat-7")
        assert [(f.predicate, f.object, f.value) for f in stored] == [
            ("lives_in", "berlin", None),
            ("allergic_to", "peanuts", None),
            ("home_airport", None, "BER"),
        ]
        assert all(f.method == "llm" and f.source_session_id == "chat-7" for f in stored)
        assert all(f.confidence >= 0.7 and (f.importance or 0) >= MIN_IMPORTANCE for f in stored)
        assert stub.requests[0]["response_format"]["type"] == "json_schema"
        again = form_facts(sqlite_memory, CONVERSATION, llm=llm, session_id="chat-7")
        assert again == stored and len(stub.requests) == 1  # idempotent: the model is not asked again
    assert sqlite_memory.graph_stats().facts == 3


def test_extracted_facts_go_through_the_contradiction_rules(sqlite_memory: EpisodicMemory) -> None:
    sqlite_memory.remember_fact("user", "lives_in", "Paris")
    with stub_chat_server([StubReply(REPLY)]) as stub:
        llm = OpenAICompatibleLLM("stub", base_url=stub.base_url, api_key="x", max_retries=0)
        form_facts(
            sqlite_memory, [{"role": "user", "content": "I moved to Berlin."}], llm=llm, episode_id="ep-9"
        )
    current = sqlite_memory.query_facts("user", predicate="lives_in")
    assert [(f.object, f.source_episode_id) for f in current] == [("berlin", "ep-9")]


def test_form_facts_over_real_http(real_llm: OpenAICompatibleLLM, sqlite_memory: EpisodicMemory) -> None:
    stored = form_facts(sqlite_memory, CONVERSATION, llm=real_llm, session_id="chat-real")
    for fact in stored:  # whatever the small model found, it passed the schema and the thresholds
        assert fact.confidence >= 0.7 and fact.importance is not None and fact.importance >= MIN_IMPORTANCE
        assert fact.method == "llm" and fact.source_session_id == "chat-real"
    stats = sqlite_memory.graph_stats()
    assert stats.facts == len(stored) and stats.dangling == 0 and stats.below_confidence == 0
