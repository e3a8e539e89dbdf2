"""Session episodes, written once and run against every backend (SQLite file, real PostgreSQL).

Every test goes through ``EpisodicMemory.sessions`` over the parametrised ``store`` fixture
with the deterministic hashing embedder and a frozen clock.
"""

from __future__ import annotations

import copy
import json
import threading
from datetime import timedelta
from typing import Any

import pytest

from memlane import DuplicateEpisodeError, EpisodicMemory, ValidationError
from memlane.errors import DuplicateSessionError
from memlane.recall.ranking import RankingWeights
from memlane.sessions import SessionMemory
from memlane.sessions.context import NOTHING_RELEVANT_BLOCK
from tests.conftest import T0, MemoryFactory

TOOL_SESSION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are the procurement assistant."},
    {"role": "user", "content": "Please onboard Acme Corp as a new vendor."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_Xy12",
                "type": "function",
                "function": {
                    "name": "submit_vendor_form",
                    # odd spacing, unicode and escapes: must come back exactly as given
                    "arguments": (
                        '{"vendor":  "Acme Corp",\n "country": "Österreich", "note": "\\u00e9\\"q\\""}'
                    ),
                },
            },
            {"id": "call_Zz9", "type": "function", "function": {"name": "notify", "arguments": ""}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_Xy12", "content": '{"status": "submitted", "ticket": "VEN-88"}'},
    {"role": "tool", "tool_call_id": "call_Zz9", "content": [{"type": "text", "text": "ok"}]},
    {
        "role": "assistant",
        "content": "The vendor onboarding for Acme Corp was submitted (ticket VEN-88).",
        "refusal": None,
    },
    {"role": "user", "name": "dana", "content": "Great, and book my flight to Rome on Friday."},
    {
        "role": "assistant",
        "content": "Your flight to Rome is booked for Friday, window seat.",
        "x_provider": {"k": [1, 2.5]},
    },
]


def chat(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    """``[(user text, assistant text), ...]`` as OpenAI messages."""
    out: list[dict[str, Any]] = []
    for user, assistant in pairs:
        out += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return out


@pytest.fixture
def make_memory(make_memory: MemoryFactory) -> MemoryFactory:
    """The memories of these tests, without the context relevance floor (unless a test sets one): they
    check search and block mechanics with the hashing embedder, whose cosines mean little; the floor
    itself is tested with the real model in test_relevance_floor_contract.py."""

    def factory(**config: Any) -> EpisodicMemory:
        return make_memory(**{"context_min_relevance": 0.0, **config})

    return factory


@pytest.fixture
def sessions(memory: EpisodicMemory) -> SessionMemory:
    return memory.sessions


# -- store and get ---------------------------------------------------------------------------


def test_store_and_get_round_trip_messages_and_tool_calls_byte_for_byte(sessions: SessionMemory) -> None:
    given = copy.deepcopy(TOOL_SESSION)
    stored = sessions.store_session(
        "s-1", given, agent_id="procure", user_id="dana", metadata={"channel": "web"}
    )
    assert given == TOOL_SESSION  # the caller's list is not modified
    assert (stored.session_id, stored.tenant_id, stored.agent_id, stored.user_id) == (
        "s-1",
        "t1",
        "procure",
        "dana",
    )
    assert stored.started_at == stored.ended_at == T0
    assert stored.metadata == {"channel": "web"}
    got = sessions.get_session("s-1")
    assert got is not None
    assert got == stored
    assert json.dumps([m.to_dict() for m in got.messages]) == json.dumps(TOOL_SESSION)
    calls = got.messages[2].tool_calls
    assert [c.id for c in calls] == ["call_Xy12", "call_Zz9"]
    assert calls[0].arguments == TOOL_SESSION[2]["tool_calls"][0]["function"]["arguments"]
    assert got.messages[3].tool_call_id == "call_Xy12"
    assert got.messages[6].name == "dana"


def test_get_session_of_unknown_id_or_other_agent_is_none(sessions: SessionMemory) -> None:
    sessions.store_session("s-1", chat(("hi", "hello")), agent_id="a", user_id="u")
    assert sessions.get_session("nope") is None
    assert sessions.get_session("s-1", agent_id="other") is None
    assert sessions.get_session("s-1", user_id="other") is None
    assert sessions.get_session("s-1", agent_id="a", user_id="u") is not None


def test_times_default_and_validate(sessions: SessionMemory) -> None:
    start = T0 - timedelta(days=3)
    only_start = sessions.store_session("a", chat(("x", "y")), agent_id="a", user_id="u", started_at=start)
    assert only_start.started_at == only_start.ended_at == start
    both = sessions.store_session(
        "b",
        chat(("x", "y")),
        agent_id="a",
        user_id="u",
        started_at=start,
        ended_at=start + timedelta(hours=1),
    )
    assert both.ended_at - both.started_at == timedelta(hours=1)
    with pytest.raises(ValidationError, match="before started_at"):
        sessions.store_session(
            "c", chat(("x", "y")), agent_id="a", user_id="u", started_at=T0, ended_at=start
        )
    with pytest.raises(ValidationError, match="timezone-aware"):
        sessions.store_session(
            "c", chat(("x", "y")), agent_id="a", user_id="u", started_at=T0.replace(tzinfo=None)
        )
    assert sessions.get_session("c") is None


# -- duplicates and append --------------------------------------------------------------------


def test_storing_the_same_id_twice_is_a_typed_error_and_changes_nothing(sessions: SessionMemory) -> None:
    first = sessions.store_session("s-1", chat(("one", "two")), agent_id="a", user_id="u")
    with pytest.raises(DuplicateSessionError, match="append=True") as info:
        sessions.store_session("s-1", chat(("three", "four")), agent_id="a", user_id="u")
    assert isinstance(info.value, DuplicateEpisodeError) and isinstance(info.value, KeyError)
    assert sessions.get_session("s-1") == first
    assert len(sessions.search_sessions("a", "u", "three four", top_k=5)) == 1


def test_append_adds_turns_extends_time_and_merges_metadata(
    sessions: SessionMemory, memory: EpisodicMemory
) -> None:
    clock = memory.clock
    sessions.store_session(
        "s-1", chat(("book a hotel in Rome", "booked")), agent_id="a", user_id="u", metadata={"a": 1}
    )
    clock.advance(timedelta(hours=2))  # type: ignore[attr-defined]
    after = sessions.store_session(
        "s-1",
        chat(("cancel the hotel", "cancelled")),
        agent_id="a",
        user_id="u",
        metadata={"b": 2},
        append=True,
    )
    assert [m.content for m in after.messages] == [
        "book a hotel in Rome",
        "booked",
        "cancel the hotel",
        "cancelled",
    ]
    assert after.started_at == T0 and after.ended_at == T0 + timedelta(hours=2)
    assert after.metadata == {"a": 1, "b": 2}
    snippet = sessions.search_sessions("a", "u", "cancel the hotel", top_k=1, context_turns=0)[0]
    assert snippet.positions == (2, 3)
    assert snippet.created_at == T0 + timedelta(hours=2)
    with_context = sessions.search_sessions("a", "u", "cancel the hotel", top_k=1)[0]
    assert with_context.positions == (0, 1, 2, 3) and (with_context.match_start, with_context.match_end) == (
        2,
        4,
    )


def test_append_creates_a_missing_session(sessions: SessionMemory) -> None:
    created = sessions.store_session("new", chat(("x", "y")), agent_id="a", user_id="u", append=True)
    assert len(created.messages) == 2


def test_append_to_another_agents_session_is_refused(sessions: SessionMemory) -> None:
    sessions.store_session("s-1", chat(("x", "y")), agent_id="a", user_id="u")
    with pytest.raises(ValidationError, match="belongs to agent"):
        sessions.store_session("s-1", chat(("z", "w")), agent_id="b", user_id="u", append=True)
    assert len(sessions.get_session("s-1").messages) == 2  # type: ignore[union-attr]


def test_concurrent_appends_lose_nothing(make_memory: MemoryFactory) -> None:
    memory = make_memory()
    memory.sessions.store_session("s", chat(("start", "ok")), agent_id="a", user_id="u")
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(5):
                memory.sessions.store_session(
                    "s", chat((f"w{n} m{i}", "ack")), agent_id="a", user_id="u", append=True
                )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    got = memory.sessions.get_session("s")
    assert got is not None and len(got.messages) == 2 + 3 * 5 * 2
    users = [m.content for m in got.messages if m.role == "user"]
    assert sorted(users[1:]) == sorted(f"w{n} m{i}" for n in range(3) for i in range(5))


# -- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"role": "robot", "content": "x"}, r"messages\[1\]\.role must be one of"),
        ({"role": "function", "content": "x", "name": "f"}, r"messages\[1\]\.role 'function' is deprecated"),
        ({"role": "user"}, r"messages\[1\]\.content is required for a user message"),
        ({"role": "user", "content": 5}, r"messages\[1\]\.content must be a string"),
        ({"role": "tool", "content": "x"}, r"messages\[1\]\.tool_call_id is required"),
        ({"role": "assistant", "content": None}, r"messages\[1\]: an assistant message needs content"),
        ({"role": "user", "content": "x", "tool_calls": []}, r"messages\[1\]\.tool_calls is only allowed"),
        (
            {"role": "assistant", "content": "x", "tool_call_id": "c"},
            r"messages\[1\]\.tool_call_id is only allowed",
        ),
        (
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}],
            },
            r"messages\[1\]\.tool_calls\[0\]\.function\.arguments must be a string \(JSON text\), got dict",
        ),
        (
            {
                "role": "assistant",
                "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            r"messages\[1\]\.tool_calls\[0\]\.id is required",
        ),
        ({"role": "user", "content": "nul \x00 here"}, r"messages\[1\]\.content must not contain NUL"),
        ({"role": "user", "content": "x", "extra": float("nan")}, r"messages\[1\]\.extra must be finite"),
        ("just text", r"messages\[1\] must be an object"),
    ],
)
def test_bad_messages_are_a_typed_error_naming_index_and_field_and_nothing_is_stored(
    sessions: SessionMemory, bad: object, message: str
) -> None:
    kept = sessions.store_session("kept", chat(("x", "y")), agent_id="a", user_id="u")
    with pytest.raises(ValidationError, match=message):
        sessions.store_session("new", [{"role": "user", "content": "ok"}, bad], agent_id="a", user_id="u")
    with pytest.raises(ValidationError, match=message):
        sessions.store_session(
            "kept", [{"role": "user", "content": "ok"}, bad], agent_id="a", user_id="u", append=True
        )
    assert sessions.get_session("new") is None
    assert sessions.get_session("kept") == kept
    assert [s.session_id for s in sessions.recall_recent("a", "u")] == ["kept"]


@pytest.mark.parametrize("messages", [[], "hello", {"role": "user", "content": "x"}, None])
def test_messages_must_be_a_non_empty_list(sessions: SessionMemory, messages: Any) -> None:
    with pytest.raises(ValidationError, match="messages"):
        sessions.store_session("s", messages, agent_id="a", user_id="u")


@pytest.mark.parametrize("field", ["session_id", "agent_id", "user_id"])
def test_identifiers_are_validated(sessions: SessionMemory, field: str) -> None:
    args: dict[str, Any] = {"session_id": "s", "agent_id": "a", "user_id": "u"}
    args[field] = "  "
    with pytest.raises(ValidationError, match=field):
        sessions.store_session(args.pop("session_id"), chat(("x", "y")), **args)


# -- recent -----------------------------------------------------------------------------------


def test_recall_recent_is_newest_ended_first_for_that_agent_and_user_only(sessions: SessionMemory) -> None:
    for i, days in enumerate([5, 1, 3, 2]):
        at = T0 - timedelta(days=days)
        sessions.store_session(f"s{i}", chat((f"q{i}", "a")), agent_id="a", user_id="u", started_at=at)
    sessions.store_session("other-user", chat(("q", "a")), agent_id="a", user_id="v")
    sessions.store_session("other-agent", chat(("q", "a")), agent_id="b", user_id="u")
    recent = sessions.recall_recent("a", "u", limit=3)
    assert [s.session_id for s in recent] == ["s1", "s3", "s2"]
    assert [m.content for m in recent[0].messages] == ["q1", "a"]
    assert [s.session_id for s in sessions.recall_recent("a", "u")] == ["s1", "s3", "s2", "s0"]
    with pytest.raises(ValidationError, match="limit"):
        sessions.recall_recent("a", "u", limit=0)


def test_recent_ties_go_to_the_later_stored(sessions: SessionMemory) -> None:
    for name in ("first", "second", "third"):
        sessions.store_session(name, chat(("x", "y")), agent_id="a", user_id="u")
    assert [s.session_id for s in sessions.recall_recent("a", "u")] == ["third", "second", "first"]


# -- search -----------------------------------------------------------------------------------


def test_search_ranks_the_matching_turn_first_with_its_breakdown(sessions: SessionMemory) -> None:
    sessions.store_session("s-1", TOOL_SESSION, agent_id="procure", user_id="dana")
    sessions.store_session(
        "s-2",
        chat(("what is the weather in Oslo", "cold and rainy"), ("recommend a book", "try Dune")),
        agent_id="procure",
        user_id="dana",
    )
    found = sessions.search_sessions("procure", "dana", "vendor onboarding Acme Corp", top_k=3)
    assert found[0].session_id == "s-1"
    top = found[0]
    assert top.matched[0].content == "Please onboard Acme Corp as a new vendor."
    assert top.matched[1].tool_calls[0].name == "submit_vendor_form"
    assert all(m.role != "system" for m in top.messages)
    b = top.breakdown
    for value in (b.relevance, b.recency, b.importance, b.score):
        assert 0.0 <= value <= 1.0
    assert b.importance == 0.5 and b.recency == 1.0 and b.relevance > 0.2
    assert b.score == pytest.approx((b.relevance + 0.1 * (b.recency + b.importance) / 3) / 1.1)
    assert [s.score for s in found] == sorted((s.score for s in found), reverse=True)


def test_search_includes_context_turns_around_the_match(sessions: SessionMemory) -> None:
    turns = [
        (f"topic {w} question", f"topic {w} answer") for w in ("alpha", "bravo", "charlie", "delta", "echo")
    ]
    sessions.store_session("s", chat(*turns), agent_id="a", user_id="u")
    snippet = sessions.search_sessions("a", "u", "charlie", top_k=1)[0]
    assert [m.content for m in snippet.messages] == [t for pair in turns[1:4] for t in pair]
    assert snippet.positions == (2, 3, 4, 5, 6, 7)
    assert [m.content for m in snippet.matched] == list(turns[2])
    wide = sessions.search_sessions("a", "u", "charlie", top_k=1, context_turns=2)[0]
    assert len(wide.messages) == 10
    edge = sessions.search_sessions("a", "u", "alpha", top_k=1)[0]
    assert edge.positions == (0, 1, 2, 3) and (edge.match_start, edge.match_end) == (0, 2)
    bare = sessions.search_sessions("a", "u", "echo", top_k=1, context_turns=0)[0]
    assert [m.content for m in bare.messages] == list(turns[4])


def test_search_does_not_repeat_a_turn_already_shown(sessions: SessionMemory) -> None:
    sessions.store_session(
        "s", chat(("rome hotel", "ok"), ("rome flight", "ok"), ("paris", "ok")), agent_id="a", user_id="u"
    )
    found = sessions.search_sessions("a", "u", "rome", top_k=5)
    matched_turns = [s.positions[s.match_start] for s in found]
    assert len(matched_turns) == len(set(matched_turns))
    shown = [set(s.positions) for s in found]
    for i, snippet in enumerate(found):
        for earlier in shown[:i]:
            assert snippet.positions[snippet.match_start] not in earlier


def test_search_recency_and_weights_use_the_shared_ranking(sessions: SessionMemory) -> None:
    sessions.store_session(
        "old",
        chat(("rome trip plans", "noted")),
        agent_id="a",
        user_id="u",
        started_at=T0 - timedelta(days=400),
    )
    sessions.store_session(
        "new",
        chat(("rome trip plans", "noted")),
        agent_id="a",
        user_id="u",
        started_at=T0 - timedelta(days=1),
    )
    found = sessions.search_sessions("a", "u", "rome trip plans", top_k=2)
    assert [s.session_id for s in found] == ["new", "old"]
    assert found[1].breakdown.recency == pytest.approx(0.995**400)
    only = sessions.search_sessions("a", "u", "rome trip plans", top_k=2, weights=RankingWeights(1, 0, 0))
    assert only[0].breakdown.score == pytest.approx(only[0].breakdown.relevance / 1.1)  # no tie-break term
    later = sessions.search_sessions("a", "u", "rome", top_k=1, now=T0 + timedelta(days=10))
    assert later[0].breakdown.recency == pytest.approx(0.995**11)


def test_search_limits_exclusion_and_per_session_cap(sessions: SessionMemory) -> None:
    sessions.store_session(
        "s1", chat(("rome a", "x"), ("other", "x"), ("more", "x"), ("rome b", "x")), agent_id="a", user_id="u"
    )
    sessions.store_session("s2", chat(("rome c", "x")), agent_id="a", user_id="u")
    assert len(sessions.search_sessions("a", "u", "rome", top_k=1)) == 1
    per = sessions.search_sessions("a", "u", "rome", top_k=5, max_per_session=1, context_turns=0)
    assert sorted(s.session_id for s in per) == ["s1", "s2"]
    assert {
        s.session_id for s in sessions.search_sessions("a", "u", "rome", top_k=5, exclude_session_id="s1")
    } == {"s2"}
    with pytest.raises(ValidationError):
        sessions.search_sessions("a", "u", "rome", top_k=0)
    with pytest.raises(ValidationError):
        sessions.search_sessions("a", "u", "  ")
    with pytest.raises(ValidationError):
        sessions.search_sessions("a", "u", "rome", context_turns=-1)


def test_system_only_sessions_are_stored_but_not_searchable(sessions: SessionMemory) -> None:
    stored = sessions.store_session(
        "sys", [{"role": "system", "content": "rome rome rome"}], agent_id="a", user_id="u"
    )
    assert len(stored.messages) == 1
    assert sessions.search_sessions("a", "u", "rome") == []


# -- tenant isolation -------------------------------------------------------------------------


def test_tenants_never_see_each_others_sessions(make_memory: MemoryFactory) -> None:
    t1 = make_memory(tenant_id="t1").sessions
    t2 = make_memory(tenant_id="t2").sessions
    t1.store_session("shared-id", chat(("secret vendor Acme", "ok")), agent_id="a", user_id="u")
    assert t2.get_session("shared-id") is None
    assert t2.recall_recent("a", "u") == []
    assert t2.search_sessions("a", "u", "secret vendor Acme") == []
    assert "secret" not in t2.build_context("secret vendor Acme", agent_id="a", user_id="u", token_budget=500)
    assert t2.delete_session("shared-id") is False
    # the same id is a different session in another tenant
    t2.store_session("shared-id", chat(("public note", "ok")), agent_id="a", user_id="u")
    assert t1.get_session("shared-id").messages[0].content == "secret vendor Acme"  # type: ignore[union-attr]
    assert t2.get_session("shared-id").messages[0].content == "public note"  # type: ignore[union-attr]
    assert [s.session_id for s in t1.search_sessions("a", "u", "public note secret")] == ["shared-id"]
    assert t1.search_sessions("a", "u", "public note")[0].messages[0].content == "secret vendor Acme"


def test_scope_setting_does_not_widen_sessions(make_memory: MemoryFactory) -> None:
    make_memory(tenant_id="t1").sessions.store_session("s", chat(("x", "y")), agent_id="a", user_id="u")
    wide = make_memory(tenant_id="t2", scope="global").sessions
    assert wide.get_session("s") is None and wide.search_sessions("a", "u", "x") == []


# -- deletion and retention -------------------------------------------------------------------


def test_delete_session_removes_messages_and_index(sessions: SessionMemory) -> None:
    sessions.store_session("s1", chat(("rome", "x")), agent_id="a", user_id="u")
    sessions.store_session("s2", chat(("rome too", "x")), agent_id="a", user_id="u")
    assert len(sessions.search_sessions("a", "u", "rome", top_k=5)) == 2
    assert sessions.delete_session("s1") is True
    assert sessions.delete_session("s1") is False
    assert sessions.get_session("s1") is None
    assert [s.session_id for s in sessions.search_sessions("a", "u", "rome", top_k=5)] == ["s2"]
    sessions.store_session("s1", chat(("again", "x")), agent_id="a", user_id="u")  # the id is free again
    assert sessions.get_session("s1").messages[0].content == "again"  # type: ignore[union-attr]


def test_retention_hides_and_prunes_old_sessions(make_memory: MemoryFactory) -> None:
    sessions = make_memory(retention_days=30).sessions
    sessions.store_session(
        "old", chat(("rome", "x")), agent_id="a", user_id="u", started_at=T0 - timedelta(days=40)
    )
    sessions.store_session(
        "new", chat(("rome", "x")), agent_id="a", user_id="u", started_at=T0 - timedelta(days=2)
    )
    assert [s.session_id for s in sessions.recall_recent("a", "u")] == ["new"]
    assert [s.session_id for s in sessions.search_sessions("a", "u", "rome", top_k=5)] == ["new"]
    assert sessions.prune() == 1
    assert sessions.get_session("old") is None and sessions.get_session("new") is not None
    assert make_memory().sessions.prune() == 0  # no retention configured


# -- context ----------------------------------------------------------------------------------


def test_build_context_mixes_snippets_and_events_under_the_budget(memory: EpisodicMemory) -> None:
    memory.remember_episode("preference", "User prefers window seats on flights to Rome", importance=8)
    memory.sessions.store_session("s-1", TOOL_SESSION, agent_id="procure", user_id="dana")
    block = memory.sessions.build_context_block(
        "flight to Rome window seat", agent_id="procure", user_id="dana", token_budget=400
    )
    assert block.text.startswith("[Past Conversation Context]\n")
    assert block.text.endswith("[End of Past Conversation Context]")
    assert {i.kind for i in block.items} == {"conversation", "event"}
    assert 0 < block.tokens <= 400
    # The position follows the scores (fake embedder here); the heading renders either way.
    assert 'Event "preference" · Mon 2026-06-01 12:00 UTC' in block.text
    scores = [i.breakdown.score for i in block.items]
    assert scores == sorted(scores, reverse=True)
    assert "dana: Great, and book my flight to Rome on Friday." in block.text
    no_events = memory.sessions.build_context(
        "flight to Rome window seat",
        agent_id="procure",
        user_id="dana",
        token_budget=400,
        include_events=False,
    )
    assert "Event" not in no_events and "Conversation" in no_events
    assert memory.sessions.build_context("rome", agent_id="procure", user_id="dana", token_budget=0) == ""
    strict = memory.sessions.build_context(
        "flight to Rome window seat", agent_id="procure", user_id="dana", token_budget=400, min_relevance=0.99
    )
    assert strict == NOTHING_RELEVANT_BLOCK


def test_inject_context_returns_a_new_list_and_leaves_the_callers_untouched(memory: EpisodicMemory) -> None:
    memory.sessions.store_session("s-1", TOOL_SESSION, agent_id="procure", user_id="dana")
    request = [
        {"role": "system", "content": "You are the procurement assistant."},
        {"role": "user", "content": "earlier question"},
        {"role": "assistant", "content": "earlier answer"},
        {"role": "user", "content": "did the Acme vendor onboarding go through?"},
    ]
    before = copy.deepcopy(request)
    out = memory.sessions.inject_context(request, agent_id="procure", user_id="dana", token_budget=300)
    assert request == before
    assert len(out) == 5 and out[3]["role"] == "system"
    assert out[3]["content"].startswith("[Past Conversation Context]")
    assert out[:3] == before[:3] and out[4] == before[3]
    assert all(a is not b for a, b in zip(out, request, strict=False))
    prepended = memory.sessions.inject_context(
        request, agent_id="procure", user_id="dana", token_budget=300, placement="user"
    )
    assert request == before and len(prepended) == 4
    assert prepended[3]["content"].startswith("[Past Conversation Context]")
    assert prepended[3]["content"].endswith("\n\ndid the Acme vendor onboarding go through?")


def test_messages_are_capped_per_call_and_per_session(
    sessions: SessionMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#22 item 3: each turn is embedded inside the call, so a call and a session are bounded."""
    from memlane.sessions.messages import MAX_MESSAGES

    too_many = [{"role": "user", "content": f"m{i}"} for i in range(MAX_MESSAGES + 1)]
    with pytest.raises(ValidationError, match=f"at most {MAX_MESSAGES:,} messages"):
        sessions.store_session("big", too_many, agent_id="a", user_id="u")
    assert sessions.get_session("big", agent_id="a", user_id="u") is None
    monkeypatch.setattr("memlane.sessions.memory.MAX_SESSION_MESSAGES", 4)  # (20,000 would be slow here)
    sessions.store_session("grow", chat(("a", "b")), agent_id="a", user_id="u")
    sessions.store_session("grow", chat(("c", "d")), agent_id="a", user_id="u", append=True)
    with pytest.raises(ValidationError, match="a session holds at most 4"):
        sessions.store_session("grow", chat(("e", "f")), agent_id="a", user_id="u", append=True)
    stored = sessions.get_session("grow", agent_id="a", user_id="u")
    assert stored is not None and len(stored.messages) == 4
