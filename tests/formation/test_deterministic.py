"""Formation without a model: raw turns, the extractive (SumBasic) summary, form_episodes."""

from __future__ import annotations

from typing import Any

import pytest

from memlane import EpisodicMemory, ValidationError
from memlane.formation import (
    SUMMARY_EVENT_TYPE,
    TURN_EVENT_TYPE,
    Turn,
    extract_facts,
    extractive_summary,
    form_episodes,
    raw_turn_episodes,
    summarize_session,
)
from tests.formation.conftest import CONVERSATION


def test_raw_turns_keep_every_turn_verbatim_with_provenance() -> None:
    episodes = extract_facts(CONVERSATION, session_id="chat-7")
    assert episodes == raw_turn_episodes(CONVERSATION, session_id="chat-7")
    assert [ep.content for ep in episodes] == [m["content"] for m in CONVERSATION[1:]]
    assert {ep.event_type for ep in episodes} == {TURN_EVENT_TYPE}
    assert [ep.tags for ep in episodes] == [["user"], ["assistant"], ["user"], ["assistant"]]
    assert all(ep.importance is None for ep in episodes)
    first = episodes[0].metadata
    assert first is not None
    assert first["formation"] == {
        "method": "raw_turn",
        "model": None,
        "prompt_version": None,
        "source_session_id": "chat-7",
        "turn_index": 1,
        "role": "user",
    }


def _turns(*texts: str) -> list[Turn]:
    return [Turn(i, "user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)]


def test_extractive_summary_prefers_the_sessions_frequent_content_words() -> None:
    turns = _turns(
        "Hi! Thanks a lot.",
        "The weather today is mild and sunny.",
        "My flight to Berlin leaves Friday. The Berlin flight needs a window seat.",
        "I booked the Berlin flight with a window seat for Friday.",
    )
    summary = extractive_summary(turns, max_sentences=2)
    lines = summary.text.splitlines()
    assert len(lines) == 2
    assert all("berlin" in line.lower() for line in lines)
    assert "weather" not in summary.text and "Thanks" not in summary.text
    assert list(summary.turn_indices) == sorted(summary.turn_indices)  # conversation order


def test_extractive_summary_is_deterministic_and_respects_its_limits() -> None:
    turns = _turns(*(f"Sentence number {i} talks about topic {i % 3} and item {i}." for i in range(40)))
    first = extractive_summary(turns, max_sentences=5, max_chars=200)
    assert first == extractive_summary(turns, max_sentences=5, max_chars=200)
    assert 1 <= len(first.text.splitlines()) <= 5
    assert len(first.text) <= 200
    long_turn = _turns("word " * 500)
    assert len(extractive_summary(long_turn, max_chars=50).text) <= 50


def test_extractive_summary_of_small_talk_still_says_something() -> None:
    summary = extractive_summary(_turns("ok", "thanks!"))
    assert summary.text.startswith("user: ok")


@pytest.mark.parametrize("kwargs", [{"max_sentences": 0}, {"max_chars": 5}, {"max_sentences": True}])
def test_extractive_summary_limits_are_checked(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        extractive_summary(_turns("hello world again"), **kwargs)


def test_summary_episode_without_a_model() -> None:
    episode = summarize_session(CONVERSATION, session_id="chat-7", importance=12)
    assert episode.event_type == SUMMARY_EVENT_TYPE
    assert episode.importance == 10.0
    assert episode.tags == ["extractive"]
    assert episode.metadata is not None
    formation = episode.metadata["formation"]
    assert formation["method"] == "extractive"
    assert formation["algorithm"] == "sumbasic"
    assert formation["source_session_id"] == "chat-7"
    assert formation["turn_range"] == [1, 4]
    assert set(formation["source_turns"]) <= {1, 2, 3, 4}
    with pytest.raises(ValidationError, match="no user or assistant text"):
        summarize_session([{"role": "system", "content": "only instructions"}])


def test_form_episodes_without_a_model_stores_turns_then_summary(sqlite_memory: EpisodicMemory) -> None:
    stored = form_episodes(sqlite_memory, CONVERSATION, session_id="chat-7")
    assert [ep.event_type for ep in stored] == [TURN_EVENT_TYPE] * 4 + [SUMMARY_EVENT_TYPE]
    assert {ep.session_id for ep in stored} == {"chat-7"}
    assert {ep.tenant_id for ep in stored} == {"t1"}
    assert sqlite_memory.count() == 5
    again = sqlite_memory.get_episode(stored[0].id)
    assert again is not None and again.metadata["formation"]["source_session_id"] == "chat-7"


def test_form_episodes_options(sqlite_memory: EpisodicMemory) -> None:
    only_summary = form_episodes(sqlite_memory, CONVERSATION, extract=False)
    assert [ep.event_type for ep in only_summary] == [SUMMARY_EVENT_TYPE]
    assert only_summary[0].session_id == "s1"  # the memory's own session
    assert only_summary[0].metadata["formation"]["source_session_id"] is None
    only_turns = form_episodes(sqlite_memory, CONVERSATION, summarize=False)
    assert len(only_turns) == 4
    assert form_episodes(sqlite_memory, [{"role": "tool", "content": "{}"}]) == []
    with pytest.raises(ValidationError):
        form_episodes(sqlite_memory, CONVERSATION, summarize=False, extract=False)
    with pytest.raises(ValidationError, match="on_llm_error"):
        form_episodes(sqlite_memory, CONVERSATION, on_llm_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        form_episodes(sqlite_memory, [{"role": "robot", "content": "beep"}])
    assert sqlite_memory.count() == 5
