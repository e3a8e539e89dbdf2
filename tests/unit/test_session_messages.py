"""Message validation, rendering and windowing (pure; no store)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memlane import ValidationError
from memlane.sessions.messages import render_message, validate_message, validate_messages
from memlane.sessions.models import Message, ToolCall
from memlane.sessions.windows import split_turns, turn_text


def msgs(*spec: tuple[str, str]) -> tuple[Message, ...]:
    return validate_messages(
        [
            {"role": r, "content": c} if r != "tool" else {"role": r, "content": c, "tool_call_id": "c"}
            for r, c in spec
        ]
    )


def test_message_keeps_the_mapping_exactly_and_exposes_typed_fields() -> None:
    raw: dict[str, Any] = {
        "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}}],
        "role": "user",
        "name": "dana",
        "x_extra": [1, None, True],
    }
    message = validate_message(raw)
    assert json.dumps(message.to_dict()) == json.dumps(raw)  # key order kept too
    assert message.to_dict() is not raw and message.raw is not raw
    assert (message.role, message.content, message.name) == ("user", "look", "dana")
    assert message.to_json() == json.dumps(raw, ensure_ascii=False)
    assert Message.from_dict(raw) == message


def test_constructor_builds_canonical_raw() -> None:
    call = ToolCall(id="c1", name="f", arguments='{"a": 1}')
    message = Message("assistant", None, tool_calls=(call,))
    assert message.to_dict() == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
    }
    assert validate_message(message.to_dict()) == message


@pytest.mark.parametrize("role", ["system", "developer", "user", "assistant"])
def test_roles_with_string_content_are_accepted(role: str) -> None:
    assert validate_message({"role": role, "content": "x"}).role == role


def test_tool_arguments_are_never_reformatted() -> None:
    arguments = '{ "b":2 ,"a" : [1,2] }'
    message = validate_message(
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}
            ],
        }
    )
    assert message.tool_calls[0].arguments == arguments
    assert message.to_dict()["tool_calls"][0]["function"]["arguments"] == arguments


def test_type_defaults_to_function_but_other_types_are_refused() -> None:
    ok = validate_message(
        {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]}
    )
    assert ok.tool_calls[0].type == "function"
    with pytest.raises(ValidationError, match=r"tool_calls\[0\]\.type must be 'function'"):
        validate_message({"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "function": {}}]})


def test_refusal_only_assistant_message_is_valid() -> None:
    message = validate_message({"role": "assistant", "content": None, "refusal": "I can't help with that."})
    assert render_message(message) == "assistant: [refused: I can't help with that.]"


def test_error_names_the_path_of_nested_fields() -> None:
    with pytest.raises(ValidationError, match=r"messages\[2\]\.content\[1\]\.text must be a string"):
        validate_messages(
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b"},
                {"role": "user", "content": [{"type": "text", "text": "ok"}, {"type": "text", "text": 3}]},
            ]
        )
    with pytest.raises(ValidationError, match=r"messages\[0\]\.x keys must be strings"):
        validate_messages([{"role": "user", "content": "a", "x": {1: 2}}])
    with pytest.raises(ValidationError, match=r"messages\[0\]\.x must be JSON"):
        validate_messages([{"role": "user", "content": "a", "x": object()}])


def test_render_message_shapes() -> None:
    call = validate_message(
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
                }
            ],
        }
    )
    assert render_message(call) == 'assistant: Let me check. [called weather({"city":"Oslo"})]'
    assert (
        render_message(validate_message({"role": "tool", "tool_call_id": "c", "content": "  5 \n degrees "}))
        == "tool: 5 degrees"
    )
    assert (
        render_message(validate_message({"role": "user", "name": "Caroline", "content": "hi"}))
        == "Caroline: hi"
    )
    assert (
        render_message(validate_message({"role": "user", "content": "x" * 50}), max_chars=10)
        == "user: xxxxxxxxx…"
    )
    assert render_message(validate_message({"role": "user", "content": ""})) == "user:"
    image = validate_message({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]})
    assert image.content is None and render_message(image) == "user: [image_url]"


def test_split_turns_starts_a_turn_at_each_user_message() -> None:
    messages = msgs(
        ("system", "be nice"),
        ("assistant", "hello, how can I help?"),
        ("user", "q1"),
        ("assistant", "calling"),
        ("tool", "result"),
        ("assistant", "a1"),
        ("system", "mid-conversation note"),
        ("user", "q2"),
        ("user", "q3"),
        ("assistant", "a3"),
    )
    turns = split_turns(messages)
    assert [(t.first, t.last) for t in turns] == [(1, 1), (2, 6), (7, 7), (8, 9)]
    assert turns[1].text == "user: q1\nassistant: calling\ntool: result\nassistant: a1"
    assert [t.index for t in turns] == [0, 1, 2, 3]
    assert split_turns(msgs(("system", "only"))) == []
    assert split_turns(()) == []


def test_turn_text_skips_system_messages_and_caps_each_message() -> None:
    text = turn_text(msgs(("system", "hidden"), ("user", "y" * 5000)), max_message_chars=100)
    assert "hidden" not in text and len(text) == len("user: ") + 100
