"""The input policy (README "Input policy", :mod:`memlane.validation`) on every backend.

Hostile text — lone UTF-16 surrogates, NUL, invisible-only content, huge numbers — is a
:class:`ValidationError` that names the field, raised before anything reaches the store, so
SQLite and PostgreSQL answer alike and nothing is written.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from memlane import EpisodicMemory, ValidationError
from memlane.sessions import SessionMemory
from memlane.stores.base import EpisodeFilter, Store
from tests.conftest import MemoryFactory

SURROGATE_WRITES: list[tuple[dict[str, Any], str]] = [
    ({"content": "ok \udc00 then"}, r"^content contains a lone surrogate \(U\+DC00\) at character 3"),
    ({"content": "emoji half \ud83d"}, r"^content contains a lone surrogate \(U\+D83D\)"),
    ({"event_type": "no\udc00te"}, r"^event_type contains a lone surrogate \(U\+DC00\)"),
    ({"tags": ["fine", "a\udc00b"]}, r"^tags\[1\] contains a lone surrogate \(U\+DC00\)"),
    ({"tags": "one\udc00"}, r"^tags\[0\] contains a lone surrogate"),
    ({"metadata": {"note": "x\udc00"}}, r"^metadata\.note contains a lone surrogate"),
    ({"metadata": {"k\udc00": 1}}, r"^metadata key 'k\\udc00' contains a lone surrogate"),
    (
        {"metadata": {"a": [{"b": ["\ud800"]}]}},
        r"^metadata\.a\[0\]\.b\[0\] contains a lone surrogate \(U\+D800\)",
    ),
]


@pytest.mark.parametrize(("kwargs", "message"), SURROGATE_WRITES)
def test_lone_surrogates_are_a_validation_error_naming_the_field(
    memory: EpisodicMemory, store: Store, kwargs: dict[str, Any], message: str
) -> None:
    args = {"event_type": "note", "content": "fine"} | kwargs
    with pytest.raises(ValidationError, match=message) as caught:
        memory.remember_episode(**args)
    str(caught.value).encode("utf-8")  # the message itself never carries the bad character
    assert store.stats(EpisodeFilter()).episodes == 0


@pytest.mark.parametrize("field", ["tenant_id", "session_id"])
def test_lone_surrogates_in_ids_are_refused(make_memory: MemoryFactory, field: str) -> None:
    with pytest.raises(ValidationError, match=rf"^{field} contains a lone surrogate"):
        make_memory(**{field: "t\udc00"})


@pytest.mark.parametrize("retrieval", ["keyword", "dense", "hybrid"])
def test_a_query_with_a_lone_surrogate_is_refused_before_any_search(
    memory: EpisodicMemory, retrieval: str
) -> None:
    memory.remember_episode("note", "the deploy failed")
    with pytest.raises(ValidationError, match=r"^query contains a lone surrogate \(U\+DC00\)"):
        memory.recall_episodes("deploy \udc00", retrieval=retrieval)
    with pytest.raises(ValidationError, match=r"^event_type contains a lone surrogate"):
        memory.recall_episodes("deploy", event_type="n\udc00")
    with pytest.raises(ValidationError, match=r"^tags\[0\] contains a lone surrogate"):
        memory.recall_episodes(None, tags=["\udc00"])


def test_a_valid_surrogate_pair_is_fine(memory: EpisodicMemory) -> None:
    decoded = json.loads('"party \\ud83c\\udf89"')  # a JSON escape pair decodes to one code point
    assert decoded == "party \U0001f389"
    stored = memory.remember_episode("note", decoded, tags=[decoded], metadata={decoded: decoded})
    assert memory.get_episode(stored.id) == stored
    assert [h.episode.id for h in memory.recall_episodes("party", retrieval="keyword")] == [stored.id]


BLANK = [
    "",
    "   \t\n",
    "\u200b",
    "\u200b\u200c\u200d",
    "\u2060\ufeff",
    " \u200b \n\u00a0",
    "\x01\x7f\x1b",
    "\u3164\u115f",
    "\u2028\u2029\u3000",
]


@pytest.mark.parametrize("content", BLANK)
def test_blank_content_is_refused(memory: EpisodicMemory, store: Store, content: str) -> None:
    with pytest.raises(ValidationError, match=r"^content must be a non-empty string"):
        memory.remember_episode("note", content)
    with pytest.raises(ValidationError, match=r"^query must be a non-empty string"):
        memory.recall_episodes(content)
    assert store.stats(EpisodeFilter()).episodes == 0


def test_visible_text_with_invisible_characters_is_kept_as_is(memory: EpisodicMemory) -> None:
    stored = memory.remember_episode("note", "\u200bzero\u200dwidth ", tags=["\u200b", "ok"])
    assert stored.content == "\u200bzero\u200dwidth "  # content is never rewritten
    assert stored.tags == ("ok",)  # a blank tag is dropped like an empty one


@pytest.mark.parametrize("limit", [2**63, 2**64 + 1, 10**30, 10_001])
def test_huge_limits_are_a_validation_error_before_any_sql(memory: EpisodicMemory, limit: int) -> None:
    memory.remember_episode("note", "something")
    for query in (None, "something"):
        with pytest.raises(ValidationError, match=r"^limit must be <= 10000"):
            memory.recall_episodes(query, limit=limit)
    with pytest.raises(ValidationError, match=r"^limit must be <= 10000"):
        memory.find_contradictions("something", limit=limit)
    assert len(memory.recall_episodes(None, limit=10_000)) == 1


@pytest.mark.parametrize(
    ("importance", "expected"), [(1e308, 10.0), (-1e308, 1.0), (10**400, 10.0), (-(10**400), 1.0), (5.5, 5.5)]
)
def test_huge_importance_is_clamped(memory: EpisodicMemory, importance: float, expected: float) -> None:
    stored = memory.remember_episode("note", "rated", importance=importance)
    assert stored.importance == expected
    assert memory.get_episode(stored.id) == stored


@pytest.mark.parametrize("importance", [float("nan"), float("inf"), "8", True])
def test_importance_that_is_not_a_finite_number_is_refused(
    memory: EpisodicMemory, importance: object
) -> None:
    with pytest.raises(ValidationError, match=r"^importance must be"):
        memory.remember_episode("note", "rated", importance=importance)  # type: ignore[arg-type]
    assert memory.count() == 0


def test_overlong_content_and_deep_metadata_are_refused(memory: EpisodicMemory) -> None:
    with pytest.raises(ValidationError, match=r"^content is longer than 100,000 characters"):
        memory.remember_episode("note", "x" * 100_001)
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(40):
        node["k"] = {}
        node = node["k"]
    with pytest.raises(ValidationError, match="nested deeper than 32 levels"):
        memory.remember_episode("note", "deep", metadata=deep)
    assert memory.count() == 0


# -- sessions -----------------------------------------------------------------------------


@pytest.fixture
def sessions(memory: EpisodicMemory) -> SessionMemory:
    return memory.sessions


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        (
            [{"role": "user", "content": "\ud83d"}],
            r"^messages\[0\]\.content contains a lone surrogate \(U\+D83D\)",
        ),
        ([{"role": "user\udc00", "content": "x"}], r"^messages\[0\]\.role contains a lone surrogate"),
        (
            [{"role": "user", "content": [{"type": "text", "text": "a\udc00"}]}],
            r"^messages\[0\]\.content\[0\]\.text contains a lone surrogate",
        ),
        (
            [
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "\udc00"}}
                    ],
                }
            ],
            r"^messages\[0\]\.tool_calls\[0\]\.function\.arguments contains a lone surrogate",
        ),
        (
            [{"role": "user", "content": "x", "meta": {"k": "\udfff"}}],
            r"^messages\[0\]\.meta\.k contains a lone surrogate",
        ),
    ],
)
def test_session_messages_with_lone_surrogates_name_the_field(
    sessions: SessionMemory, messages: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        sessions.store_session("s", messages, agent_id="a", user_id="u")
    assert sessions.get_session("s") is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"agent_id": "a\udc00"}, r"^agent_id contains a lone surrogate"),
        ({"user_id": "\udc00"}, r"^user_id contains a lone surrogate"),
        ({"session_id": "s\udc00"}, r"^session_id contains a lone surrogate"),
        ({"metadata": {"src": "\udc00"}}, r"^metadata\.src contains a lone surrogate"),
    ],
)
def test_session_ids_and_metadata_with_lone_surrogates_are_refused(
    sessions: SessionMemory, kwargs: dict[str, Any], message: str
) -> None:
    args: dict[str, Any] = {"session_id": "s", "agent_id": "a", "user_id": "u"} | kwargs
    with pytest.raises(ValidationError, match=message):
        sessions.store_session(args.pop("session_id"), [{"role": "user", "content": "hi"}], **args)


def test_session_search_refuses_surrogates_and_huge_top_k(sessions: SessionMemory) -> None:
    sessions.store_session("s", [{"role": "user", "content": "deploy failed"}], agent_id="a", user_id="u")
    with pytest.raises(ValidationError, match=r"^query contains a lone surrogate"):
        sessions.search_sessions("a", "u", "deploy\udc00")
    with pytest.raises(ValidationError, match=r"^top_k must be <= 10000"):
        sessions.search_sessions("a", "u", "deploy", top_k=2**63)
    with pytest.raises(ValidationError, match=r"^limit must be <= 10000"):
        sessions.recall_recent("a", "u", limit=2**63)


OPENAI_TOOL_TURN: list[dict[str, Any]] = [
    {"role": "user", "content": "Clear the cache, then tell me the weather."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "clear_cache", "arguments": "{}"}},
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city": "Par'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": None},
    {"role": "tool", "tool_call_id": "call_2", "content": "sunny"},
    {"role": "assistant", "content": "Cache cleared; it is sunny."},
]


def test_tool_message_with_null_content_and_malformed_arguments_is_stored(sessions: SessionMemory) -> None:
    stored = sessions.store_session("tools", OPENAI_TOOL_TURN, agent_id="a", user_id="u")
    again = sessions.get_session("tools")
    assert again is not None
    assert [m.to_dict() for m in again.messages] == OPENAI_TOOL_TURN  # verbatim, byte for byte
    calls = again.messages[1].tool_calls
    assert [(c.arguments, c.arguments_unparsed) for c in calls] == [("{}", False), ('{"city": "Par', True)]
    assert again.messages[2].content is None
    assert stored.messages == again.messages
    hits = sessions.search_sessions("a", "u", "weather sunny")
    assert hits and hits[0].session_id == "tools"
