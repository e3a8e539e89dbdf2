"""Which chat messages formation reads, and how (no model involved)."""

from __future__ import annotations

from typing import Any

import pytest

from memlane import ValidationError
from memlane.formation import Turn, conversation_turns
from memlane.formation.conversation import render_transcript


def test_user_and_assistant_turns_keep_their_input_positions() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "be nice"},
        {"role": "user", "content": "  Hello there  ", "name": "ana"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"weather": "rain"}'},
        {"role": "developer", "content": "internal"},
        {"role": "assistant", "content": "It will rain."},
    ]
    assert conversation_turns(messages) == [
        Turn(index=1, role="user", text="Hello there", name="ana"),
        Turn(index=5, role="assistant", text="It will rain."),
    ]


def test_content_parts_are_joined_and_non_text_parts_ignored() -> None:
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look at this:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "text", "text": "a cat"},
            ],
        }
    ]
    assert conversation_turns(messages) == [Turn(0, "user", "Look at this:\na cat")]


def test_blank_messages_are_skipped_and_an_empty_conversation_is_fine() -> None:
    assert conversation_turns([{"role": "user", "content": "   "}]) == []
    assert conversation_turns([]) == []


@pytest.mark.parametrize(
    ("messages", "needle"),
    [
        ("hello", "list of chat messages"),
        ({"role": "user"}, "list of chat messages"),
        (["hello"], "messages[0] must be a mapping"),
        ([{"content": "x"}], "no string 'role'"),
        ([{"role": "critic", "content": "x"}], "messages[0].role must be one of"),
        ([{"role": "user", "content": 42}], "messages[0].content"),
        ([{"role": "user", "content": [42]}], "content part"),
        ([{"role": "user", "content": "a\x00b"}], "NUL"),
    ],
)
def test_input_formation_does_not_understand_is_refused(messages: Any, needle: str) -> None:
    with pytest.raises(ValidationError) as info:
        conversation_turns(messages)
    assert needle in str(info.value)


def test_transcript_rendering() -> None:
    turns = [Turn(0, "user", "Hi"), Turn(1, "assistant", "Hello!\nHow can I help?")]
    assert render_transcript(turns) == "user: Hi\nassistant: Hello!\nHow can I help?"
