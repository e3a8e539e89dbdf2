"""The context block: format, greedy selection under a hard token budget, token counting, injection."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane import EpisodicMemory, FrozenClock, ValidationError
from memlane.embeddings.fake import HashingEmbedder
from memlane.models import Episode, RecallHit, ScoreBreakdown
from memlane.sessions.context import (
    CONTEXT_FOOTER,
    CONTEXT_HEADER,
    CONTEXT_INTRO,
    CONTEXT_NOTHING_RELEVANT,
    NOTHING_RELEVANT_BLOCK,
    ContextItem,
    assemble_context,
    event_item,
    format_time,
    inject_block,
    match_strength,
    snippet_item,
)
from memlane.sessions.messages import validate_messages
from memlane.sessions.models import SessionSnippet
from memlane.sessions.tokens import CallableTokenCounter, ToktokCounter, resolve_token_counter
from memlane.stores.sqlite import SQLiteStore

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
COUNTER = ToktokCounter("o200k_base")


def breakdown(score: float, relevance: float | None = None) -> ScoreBreakdown:
    rel = score if relevance is None else relevance
    return ScoreBreakdown(relevance=rel, recency=1.0, importance=0.5, score=score, dense=rel)


def snippet(
    session_id: str, texts: list[str], score: float, *, days_ago: int = 1, match: int = 0
) -> SessionSnippet:
    messages = validate_messages(
        [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]
    )
    return SessionSnippet(
        session_id=session_id,
        agent_id="a",
        user_id="u",
        created_at=T0 - timedelta(days=days_ago),
        messages=messages,
        positions=tuple(range(len(messages))),
        match_start=match,
        match_end=min(match + 2, len(messages)),
        breakdown=breakdown(score),
    )


def event(content: str, score: float, *, event_type: str = "note") -> RecallHit:
    episode = Episode(
        id="e" + str(abs(hash(content))),
        tenant_id="t",
        session_id="s",
        event_type=event_type,
        content=content,
        tags=(),
        importance=None,
        created_at=T0 - timedelta(days=2),
    )
    return RecallHit(episode=episode, breakdown=breakdown(score))


def test_format_is_stable() -> None:
    items = [
        snippet_item(snippet("s-42", ["Please onboard Acme Corp.", "Done: submitted."], 0.8)),
        event_item(event("User prefers window seats", 0.7, event_type="preference")),
    ]
    block = assemble_context(items, token_budget=1000, counter=COUNTER)
    assert block.text == (
        "[Past Conversation Context]\n"
        "Excerpts from earlier conversations and remembered events, most relevant first. Times are UTC.\n"
        "\n"
        '(1) Conversation "s-42" · Sun 2026-05-31 12:00 UTC\n'
        "user: Please onboard Acme Corp.\n"
        "assistant: Done: submitted.\n"
        "\n"
        '(2) Event "preference" · Sat 2026-05-30 12:00 UTC\n'
        "User prefers window seats\n"
        "[End of Past Conversation Context]"
    )
    lines = block.text.splitlines()
    assert (lines[0], lines[1], lines[-1]) == (CONTEXT_HEADER, CONTEXT_INTRO, CONTEXT_FOOTER)
    assert block.tokens == COUNTER.count(block.text)
    assert block.tokenizer == "toktok o200k_base"
    assert format_time(datetime(2026, 5, 25, 14, 3, tzinfo=UTC)) == "Mon 2026-05-25 14:03 UTC"


def test_greedy_by_score_skips_what_does_not_fit_and_tries_the_next() -> None:
    big = snippet_item(snippet("big", ["word " * 400, "reply"], 0.9))
    small = event_item(event("short fact", 0.5))
    block = assemble_context([small, big], token_budget=120, counter=COUNTER)
    assert [i.label for i in block.items] == ["note"]
    assert block.over_budget == 1


def test_a_snippet_that_does_not_fit_falls_back_to_its_matched_turn() -> None:
    item = snippet_item(snippet("s", ["ctx " * 60, "ctx reply", "the match", "matched reply"], 0.9, match=2))
    assert item.short_lines == ("user: the match", "assistant: matched reply")
    block = assemble_context([item], token_budget=80, counter=COUNTER)
    assert block.shortened == 1 and "ctx" not in block.text and "the match" in block.text


def test_min_relevance_uses_the_dense_signal_and_says_when_nothing_is_relevant() -> None:
    items = [event_item(event("weak", 0.9)), snippet_item(snippet("s", ["strong", "x"], 0.5))]
    hybrid = RecallHit(
        episode=event("fused", 0.9).episode,
        breakdown=ScoreBreakdown(
            relevance=1.0, recency=1.0, importance=0.5, score=0.9, dense=0.1, retrieval="hybrid"
        ),
    )
    block = assemble_context(
        [*items, event_item(hybrid)], token_budget=500, counter=COUNTER, min_relevance=0.6
    )
    assert [i.label for i in block.items] == ["note"] and block.below_min_relevance == 2
    nothing = assemble_context(items, token_budget=500, counter=COUNTER, min_relevance=1.0)
    assert (
        nothing.text
        == NOTHING_RELEVANT_BLOCK
        == f"{CONTEXT_HEADER}\n{CONTEXT_NOTHING_RELEVANT}\n{CONTEXT_FOOTER}"
    )
    assert (nothing.items, nothing.relevant, nothing.below_min_relevance) == ((), False, 2)
    assert nothing.tokens == COUNTER.count(nothing.text)
    assert assemble_context([], token_budget=500, counter=COUNTER).text == NOTHING_RELEVANT_BLOCK
    too_small = assemble_context(items, token_budget=5, counter=COUNTER, min_relevance=1.0)
    assert (too_small.text, too_small.tokens) == ("", 0)


def test_the_floor_reads_the_hits_own_match_not_its_lifted_relevance() -> None:
    lifted = ScoreBreakdown(
        relevance=0.9,
        recency=1.0,
        importance=1.0,
        score=0.9,
        dense=0.1,
        own_relevance=0.8,
        retrieval="hybrid",
    )
    assert match_strength(lifted) == 0.1
    keyword_only_candidate = ScoreBreakdown(
        relevance=0.9, recency=1.0, importance=0.5, score=0.9, retrieval="hybrid"
    )
    assert match_strength(keyword_only_candidate) == 0.0
    no_vectors = ScoreBreakdown(
        relevance=0.9, recency=1.0, importance=0.5, score=0.9, own_relevance=0.4, retrieval="keyword"
    )
    assert match_strength(no_vectors) == 1.0  # no vectors: BM25 has no absolute scale, no floor
    fallback = ScoreBreakdown(
        relevance=0.7, recency=1.0, importance=0.5, score=0.7, retrieval="keyword", fallback=True
    )
    assert match_strength(fallback) == 1.0


def test_zero_budget_and_bad_arguments() -> None:
    items = [event_item(event("x", 0.5))]
    empty = assemble_context(items, token_budget=0, counter=COUNTER)
    assert (empty.text, empty.tokens, empty.items) == ("", 0, ())
    for bad in (-1, 1.5, True, "10"):
        with pytest.raises(ValidationError, match="token_budget"):
            assemble_context(items, token_budget=bad, counter=COUNTER)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="min_relevance"):
        assemble_context(items, token_budget=10, counter=COUNTER, min_relevance=2)
    with pytest.raises(ValidationError, match="breakdown"):
        event_item(RecallHit(episode=event("x", 0.5).episode))


text_st = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=0,
    max_size=300,
)


@settings(max_examples=150, deadline=None)
@given(
    budget=st.integers(min_value=0, max_value=600),
    snippets=st.lists(
        st.tuples(st.lists(text_st, min_size=1, max_size=6), st.floats(0, 1), st.integers(0, 400)), max_size=6
    ),
    events=st.lists(st.tuples(text_st.filter(str.strip), st.floats(0, 1)), max_size=6),
    min_relevance=st.one_of(st.none(), st.floats(0, 1)),
    encoding=st.sampled_from(["o200k_base", "cl100k_base"]),
)
def test_the_token_budget_is_never_exceeded(
    budget: int,
    snippets: list[tuple[list[str], float, int]],
    events: list[tuple[str, float]],
    min_relevance: float | None,
    encoding: str,
) -> None:
    counter = resolve_token_counter(encoding)
    items: list[ContextItem] = [
        snippet_item(snippet(f"s{i}", texts, score, days_ago=age), max_item_chars=200)
        for i, (texts, score, age) in enumerate(snippets)
    ]
    items += [event_item(event(text, score), max_item_chars=200) for text, score in events]
    block = assemble_context(items, token_budget=budget, counter=counter, min_relevance=min_relevance)
    assert counter.count(block.text) == block.tokens <= budget
    assert block.relevant == bool(block.items)
    if not block.relevant:
        assert block.text in ("", NOTHING_RELEVANT_BLOCK)
    if block.text:
        assert block.text.startswith(CONTEXT_HEADER + "\n") and block.text.endswith("\n" + CONTEXT_FOOTER)
    scores = [i.breakdown.score for i in block.items]
    assert scores == sorted(scores, reverse=True)
    assert len(block.items) + block.below_min_relevance + block.over_budget == len(items)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    budget=st.integers(min_value=0, max_value=400),
    query=st.lists(
        st.sampled_from(["rome", "vendor", "acme", "flight", "seat", "hotel", "invoice"]),
        min_size=1,
        max_size=3,
    ),
)
def test_build_context_never_exceeds_the_budget_end_to_end(
    populated: EpisodicMemory, budget: int, query: list[str]
) -> None:
    block = populated.sessions.build_context_block(
        " ".join(query), agent_id="a", user_id="u", token_budget=budget
    )
    assert COUNTER.count(block.text) == block.tokens <= budget


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory) -> Any:
    memory = EpisodicMemory(
        SQLiteStore(tmp_path_factory.mktemp("ctx") / "m.db"),
        HashingEmbedder(),
        clock=FrozenClock(T0),
        tenant_id="t",
    )
    words = ["rome", "vendor", "acme", "flight", "seat", "hotel", "invoice", "paris", "ticket"]
    for i in range(12):
        pairs = [
            {
                "role": "user",
                "content": f"{words[i % 9]} {words[(i * 5) % 9]} question number {i} " * (1 + i % 4),
            },
            {"role": "assistant", "content": f"answer about {words[(i * 2) % 9]} " * (1 + i % 3)},
        ]
        memory.sessions.store_session(
            f"s{i}", pairs * 3, agent_id="a", user_id="u", started_at=T0 - timedelta(days=i)
        )
        memory.remember_episode("note", f"remember {words[(i * 7) % 9]} fact {i}", importance=1 + i % 10)
    yield memory
    memory.close()


def test_callable_and_custom_counters() -> None:
    counter = resolve_token_counter(lambda text: len(text.split()))
    items = [event_item(event("one two three", 0.5))]
    block = assemble_context(items, token_budget=100, counter=counter)
    assert block.tokens == len(block.text.split())
    assert resolve_token_counter(counter) is counter
    assert resolve_token_counter(None) is resolve_token_counter("o200k_base")
    with pytest.raises(ValidationError, match="unknown token encoding"):
        resolve_token_counter("gpt2")
    bad = CallableTokenCounter(lambda text: -1, "broken")
    with pytest.raises(Exception, match="broken"):
        bad.count("x")


def test_toktok_counts_offline_like_tiktoken() -> None:
    assert ToktokCounter("o200k_base").count("hello world") == 2
    assert ToktokCounter("cl100k_base").count("hello world") == 2
    assert ToktokCounter().count("") == 0


def test_inject_block_places_a_system_message_before_the_latest_user_message_without_mutation() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "reply", "tool_calls": None},
        {"role": "user", "content": [{"type": "text", "text": "latest"}]},
        {"role": "assistant", "content": "trailing"},
    ]
    before = copy.deepcopy(messages)
    out = inject_block(messages, "BLOCK")
    assert messages == before
    assert [m["role"] for m in out] == ["system", "user", "assistant", "system", "user", "assistant"]
    assert out[3] == {"role": "system", "content": "BLOCK"}
    out[4]["content"][0]["text"] = "changed"  # a deep copy: the caller's nested parts are separate objects
    assert messages == before
    user = inject_block(messages, "BLOCK", placement="user")
    assert user[3]["content"][0] == {"type": "text", "text": "BLOCK\n\n"} and messages == before
    plain = inject_block([{"role": "user", "content": "q"}], "BLOCK", placement="user")
    assert plain == [{"role": "user", "content": "BLOCK\n\nq"}]
    assert inject_block([{"role": "assistant", "content": "x"}], "BLOCK")[-1] == {
        "role": "system",
        "content": "BLOCK",
    }
    assert inject_block(messages, "") == before
    with pytest.raises(ValidationError, match="placement"):
        inject_block(messages, "B", placement="top")  # type: ignore[arg-type]


def test_inject_context_needs_a_query_or_a_user_message(populated: EpisodicMemory) -> None:
    with pytest.raises(ValidationError, match="query="):
        populated.sessions.inject_context(
            [{"role": "system", "content": "s"}], agent_id="a", user_id="u", token_budget=50
        )
    out = populated.sessions.inject_context(
        [{"role": "system", "content": "s"}], agent_id="a", user_id="u", token_budget=300, query="rome"
    )
    assert out[-1]["role"] == "system" and out[-1]["content"].startswith(CONTEXT_HEADER)
    with pytest.raises(ValidationError, match=r"messages\[0\]\.role"):
        populated.sessions.inject_context(
            [{"role": "bot", "content": "s"}], agent_id="a", user_id="u", token_budget=50
        )
