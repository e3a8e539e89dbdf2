"""memlane's handling of model replies, against a stub HTTP server that answers with scripted text.

Real HTTP through the ``openai`` SDK, but deterministic replies: schema validation, the
one retry with the reason fed back, raw text kept, nothing stored on failure, fallbacks.
"""

from __future__ import annotations

import json
import pickle
import socket
import sys
from typing import Any

import pytest

from memlane import EpisodicMemory, MemlaneError, ValidationError
from memlane.formation import (
    EXTRACT_PROMPT_VERSION,
    SUMMARY_EVENT_TYPE,
    SUMMARY_PROMPT_VERSION,
    TURN_EVENT_TYPE,
    FormationError,
    MalformedOutputError,
    OpenAICompatibleLLM,
    extract_facts,
    form_episodes,
    summarize_session,
)
from memlane.formation.extract import FACTS_SCHEMA, MAX_FACTS_PER_CHUNK
from memlane.formation.llm import (
    RETRY_INSTRUCTION,
    ChatLLM,
    OutputRejectedError,
    check_json_schema,
    parse_json_text,
)
from tests.formation.conftest import CONVERSATION
from tests.llm_server import StubReply, stub_chat_server

GOOD_FACTS = json.dumps(
    {
        "facts": [
            {
                "event_type": "fact",
                "content": "User lives in Berlin.",
                "tags": ["Home", "berlin"],
                "importance": 7,
            },
            {
                "event_type": "constraint",
                "content": "User is allergic to peanuts.",
                "tags": [],
                "importance": 10,
            },
        ]
    }
)
GOOD_SUMMARY = json.dumps({"summary": "User moved to Berlin and is allergic to peanuts.", "tags": ["travel"]})


def _llm(base_url: str, **kwargs: Any) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM("stub-model", base_url=base_url, api_key="test", max_retries=0, **kwargs)


def _fact(**overrides: Any) -> dict[str, Any]:
    fact: dict[str, Any] = {
        "event_type": "fact",
        "content": "User lives in Berlin.",
        "tags": [],
        "importance": 5,
    }
    fact.update(overrides)
    return fact


def test_valid_reply_is_accepted_on_the_first_attempt_with_provenance() -> None:
    with stub_chat_server([StubReply(GOOD_FACTS)]) as stub:
        llm = _llm(stub.base_url)
        assert isinstance(llm, ChatLLM)
        facts = extract_facts(CONVERSATION, llm=llm, session_id="chat-7")
    assert len(stub.requests) == 1
    request = stub.requests[0]
    assert request["model"] == "stub-model"
    assert request["temperature"] == 0.0
    assert request["max_tokens"] == 300
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["name"] == "facts"
    assert request["response_format"]["json_schema"]["schema"] == FACTS_SCHEMA
    assert [m["role"] for m in request["messages"]] == ["system", "user", "assistant", "user"]
    assert "I moved to Berlin" in request["messages"][-1]["content"]
    assert "helpful travel assistant" not in request["messages"][-1]["content"]  # system message skipped

    assert [(f.event_type, f.content, f.importance) for f in facts] == [
        ("fact", "User lives in Berlin.", 7),
        ("constraint", "User is allergic to peanuts.", 10),
    ]
    assert list(facts[0].tags or ()) == ["home", "berlin"]
    assert facts[0].metadata is not None
    assert facts[0].metadata["formation"] == {
        "method": "llm",
        "model": "stub-model",
        "prompt_version": EXTRACT_PROMPT_VERSION,
        "source_session_id": "chat-7",
        "turn_range": [1, 4],
        "attempts": 1,
    }


def test_malformed_reply_is_retried_once_with_the_reason_fed_back() -> None:
    with stub_chat_server([StubReply("Sure! Here are the facts: Berlin."), StubReply(GOOD_FACTS)]) as stub:
        facts = extract_facts(CONVERSATION, llm=_llm(stub.base_url))
    assert len(stub.requests) == 2
    first, retry = stub.requests
    assert retry["messages"][: len(first["messages"])] == first["messages"]
    assert retry["messages"][-2] == {"role": "assistant", "content": "Sure! Here are the facts: Berlin."}
    assert retry["messages"][-1]["role"] == "user"
    assert "not valid JSON" in retry["messages"][-1]["content"]
    assert retry["messages"][-1]["content"].startswith(RETRY_INSTRUCTION.split("{")[0])
    assert len(facts) == 2
    assert {f.metadata["formation"]["attempts"] for f in facts if f.metadata} == {2}


def test_malformed_twice_raises_with_both_raw_texts_and_stores_nothing(sqlite_memory: EpisodicMemory) -> None:
    bad = [StubReply("not json at all"), StubReply('{"facts": [')]
    with stub_chat_server(bad) as stub, pytest.raises(MalformedOutputError) as info:
        form_episodes(sqlite_memory, CONVERSATION, llm=_llm(stub.base_url))
    assert len(stub.requests) == 2  # exactly one retry
    error = info.value
    assert isinstance(error, FormationError) and isinstance(error, MemlaneError)
    assert error.raw_texts == ("not json at all", '{"facts": [')
    assert error.raw_text == '{"facts": ['
    assert "malformed twice" in str(error) and "not valid JSON" in str(error)
    assert sqlite_memory.count() == 0
    copy = pickle.loads(pickle.dumps(error))
    assert copy.raw_texts == error.raw_texts and str(copy) == str(error)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ({"facts": [{k: v for k, v in _fact().items() if k != "tags"}]}, "missing required key 'tags'"),
        ({"facts": [_fact(source="chat")]}, "unexpected keys ['source']"),
        ({"facts": [_fact(importance=11)]}, "must be <= 10"),
        ({"facts": [_fact(importance=0)]}, "must be >= 1"),
        ({"facts": [_fact(importance=7.5)]}, "expected integer"),
        ({"facts": [_fact(importance="high")]}, "expected integer"),
        ({"facts": [_fact(content="   ")]}, "content must be a non-empty string"),
        ({"facts": [_fact(event_type="x" * 201)]}, "event_type is longer than 200"),
        ({"facts": [_fact(tags="travel")]}, "expected array"),
        ({"facts": [_fact()] * (MAX_FACTS_PER_CHUNK + 1)}, "at most 20 items"),
        ({"fact": []}, "missing required key 'facts'"),
        ([], "expected object"),
    ],
)
def test_schema_and_rule_violations_are_malformed(reply: Any, reason: str) -> None:
    text = json.dumps(reply)
    with stub_chat_server([StubReply(text)]) as stub, pytest.raises(MalformedOutputError) as info:
        extract_facts(CONVERSATION, llm=_llm(stub.base_url))
    assert reason in str(info.value)
    assert info.value.raw_texts == (text, text)
    assert reason in stub.requests[1]["messages"][-1]["content"]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (StubReply(GOOD_SUMMARY, finish_reason="length"), "cut off (finish_reason='length')"),
        (StubReply(GOOD_SUMMARY, finish_reason="content_filter"), "cut off"),
        (StubReply(""), "empty"),
        (StubReply(None), "empty"),
        (StubReply(None, refusal="I cannot help with that"), "refused"),
        (StubReply('{"summary": NaN, "tags": []}'), "not valid JSON"),
        (StubReply('{"summary": "a"} trailing'), "not valid JSON"),
    ],
)
def test_cut_off_empty_refused_or_non_json_replies_are_malformed(reply: StubReply, reason: str) -> None:
    with stub_chat_server([reply]) as stub, pytest.raises(MalformedOutputError) as info:
        summarize_session(CONVERSATION, llm=_llm(stub.base_url))
    assert reason in str(info.value)
    assert len(info.value.raw_texts) == 2
    assert len(stub.requests) == 2
    first, retry = (request["messages"] for request in stub.requests)
    if (reply.content or "").strip():  # the rejected reply, then the reason
        assert retry[:-1] == [*first, {"role": "assistant", "content": reply.content}]
    else:  # nothing to echo back: only the reason is added
        assert retry[:-1] == first
    assert retry[-1]["role"] == "user" and reason in retry[-1]["content"]


def test_a_code_fenced_reply_is_accepted() -> None:
    with stub_chat_server([StubReply(f"```json\n{GOOD_SUMMARY}\n```")]) as stub:
        episode = summarize_session(CONVERSATION, llm=_llm(stub.base_url), session_id="chat-7")
    assert episode.event_type == SUMMARY_EVENT_TYPE
    assert episode.content == "User moved to Berlin and is allergic to peanuts."
    assert episode.metadata is not None
    assert episode.metadata["formation"]["prompt_version"] == SUMMARY_PROMPT_VERSION
    assert episode.metadata["formation"]["attempts"] == 1


def test_request_failures_are_formation_errors_not_malformed_output() -> None:
    with stub_chat_server([StubReply(status=500)]) as stub, pytest.raises(FormationError) as info:
        extract_facts(CONVERSATION, llm=_llm(stub.base_url))
    assert not isinstance(info.value, MalformedOutputError)
    assert info.value.raw_texts == ()
    assert info.value.__cause__ is not None
    assert len(stub.requests) == 1

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(FormationError, match="chat request to 'stub-model' failed"):
        extract_facts(CONVERSATION, llm=_llm(f"http://127.0.0.1:{port}/v1", timeout_seconds=5))


def test_a_failed_retry_keeps_the_first_raw_text() -> None:
    replies = [StubReply("oops"), StubReply(status=500)]
    with stub_chat_server(replies) as stub, pytest.raises(FormationError) as info:
        extract_facts(CONVERSATION, llm=_llm(stub.base_url))
    assert info.value.raw_texts == ("oops",)


def test_fallback_replaces_only_the_failed_part_and_records_the_failure(
    sqlite_memory: EpisodicMemory,
) -> None:
    # Extraction gets valid facts; the summary's replies are malformed twice.
    replies = [StubReply(GOOD_FACTS), StubReply("no summary"), StubReply("still none")]
    with stub_chat_server(replies) as stub:
        stored = form_episodes(
            sqlite_memory, CONVERSATION, llm=_llm(stub.base_url), session_id="chat-7", on_llm_error="fallback"
        )
    assert len(stub.requests) == 3
    assert [ep.event_type for ep in stored] == ["fact", "constraint", SUMMARY_EVENT_TYPE]
    summary = stored[-1].metadata["formation"]
    assert summary["method"] == "extractive"
    assert summary["llm_error"]["type"] == "MalformedOutputError"
    assert summary["llm_error"]["model"] == "stub-model"
    assert summary["llm_error"]["raw_texts"] == ["no summary", "still none"]
    assert sqlite_memory.count() == 3

    with stub_chat_server([StubReply(status=500)]) as stub:
        turns = extract_facts(CONVERSATION, llm=_llm(stub.base_url), on_llm_error="fallback")
    assert [t.event_type for t in turns] == [TURN_EVENT_TYPE] * 4
    assert all(t.metadata and t.metadata["formation"]["llm_error"]["type"] == "FormationError" for t in turns)


def test_extraction_is_chunked_by_whole_turns() -> None:
    long_conversation = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"Message {i}: " + "word " * 60}
        for i in range(6)
    ]
    with stub_chat_server([StubReply(json.dumps({"facts": [_fact()]}))]) as stub:
        facts = extract_facts(long_conversation, llm=_llm(stub.base_url), max_chunk_chars=700)
    assert len(stub.requests) == 3  # two ~330-character turns per chunk
    assert [f.metadata["formation"]["turn_range"] for f in facts if f.metadata] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(ValidationError):
        extract_facts(long_conversation, llm=_llm(stub.base_url), max_chunk_chars=10)


@pytest.mark.parametrize(("mode", "expected"), [("json_object", {"type": "json_object"}), ("none", None)])
def test_response_format_modes(mode: Any, expected: Any) -> None:
    with stub_chat_server([StubReply(GOOD_SUMMARY)]) as stub:
        summarize_session(CONVERSATION, llm=_llm(stub.base_url, response_format=mode, seed=7))
    assert stub.requests[0].get("response_format") == expected
    assert stub.requests[0]["seed"] == 7


def test_no_llm_call_for_a_conversation_without_text() -> None:
    with stub_chat_server([StubReply(GOOD_FACTS)]) as stub:
        assert extract_facts([{"role": "system", "content": "hi"}], llm=_llm(stub.base_url)) == []
    assert stub.requests == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"temperature": 3},
        {"max_tokens": 0},
        {"timeout_seconds": 0},
        {"max_retries": -1},
        {"response_format": "yaml"},
    ],
)
def test_client_arguments_are_checked(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        OpenAICompatibleLLM("m", **kwargs)
    with pytest.raises(ValidationError):
        OpenAICompatibleLLM(" ")


def test_missing_openai_package_is_a_formation_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(FormationError, match=r"memlane\[openai\]"):
        extract_facts(CONVERSATION, llm=OpenAICompatibleLLM("m", api_key="x"))


# -- the pure checks --------------------------------------------------------------------------


def test_parse_json_text() -> None:
    assert parse_json_text('  {"a": 1} ') == {"a": 1}
    assert parse_json_text('```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_json_text('```\n{"a": 1}\n```') == {"a": 1}
    for bad in ["", "{", '{"a": Infinity}', '{"a": 1}{"b": 2}', "```json\n{\n```"]:
        with pytest.raises(OutputRejectedError):
            parse_json_text(bad)


def test_check_json_schema_subset() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 3},
            "k": {"type": "string", "enum": ["a", "b"]},
            "xs": {"type": "array", "minItems": 1, "items": {"type": "number"}},
            "flag": {"type": "boolean"},
        },
        "required": ["n"],
        "additionalProperties": False,
    }
    check_json_schema({"n": 2.0, "k": "a", "xs": [1, 2.5], "flag": False}, schema)
    for bad, where in [
        ({"n": True}, "$.n"),
        ({"n": 2, "k": "c"}, "$.k"),
        ({"n": 2, "xs": []}, "$.xs"),
        ({"n": 2, "xs": ["1"]}, "$.xs[0]"),
        ({"n": 2, "flag": 1}, "$.flag"),
    ]:
        with pytest.raises(OutputRejectedError) as info:
            check_json_schema(bad, schema)
        assert str(info.value).startswith(where)
    with pytest.raises(TypeError, match="pattern"):
        check_json_schema("x", {"type": "string", "pattern": "x"})
