"""OpenAI-format chat messages: their types (:class:`Message`, :class:`ToolCall`), validation and rendering.

Accepted shape (the OpenAI Chat Completions message format):

* ``role``: ``system``, ``developer``, ``user``, ``assistant`` or ``tool`` (the deprecated
  ``function`` role is refused).
* ``content``: a string, ``null``, or a list of content parts (objects with a string
  ``type``; ``text`` parts need a string ``text``; other parts such as ``image_url`` are
  kept verbatim but carry no text). Required (non-null) for ``system``, ``developer`` and
  ``user`` messages; a ``tool`` message may have ``null`` content (OpenAI clients send it
  for a tool that returned nothing); an ``assistant`` message needs ``content``,
  ``tool_calls`` or ``refusal``.
* ``name``: optional string.
* ``tool_calls`` (``assistant`` only): a list of ``{"id": str, "type": "function",
  "function": {"name": str, "arguments": str}}``. ``arguments`` is JSON *text* and is
  kept exactly as given, even when it is not valid JSON (a model's truncated or malformed
  call): such a call is stored and flagged
  :attr:`~memlane.sessions.messages.ToolCall.arguments_unparsed` instead of failing the
  whole session. ``arguments`` must still be present and a string.
* ``tool_call_id`` (``tool`` only, required): the id of the call answered.
* Any other key is kept verbatim if its value is JSON (no NaN or infinities).

No string anywhere in a message may contain a NUL character (PostgreSQL text cannot
hold it) or a lone UTF-16 surrogate (no UTF-8 store can); both are refused on every
backend by :func:`memlane.validation.check_json_value`, as is nesting deeper than 32
levels. Each error is a :class:`~memlane.errors.ValidationError` whose message names the
field, e.g. ``messages[3].content contains a lone surrogate (U+D83D) at character 5; ...``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memlane.errors import ValidationError
from memlane.validation import check_json_value

__all__ = [
    "CONVERSATION_ROLES",
    "MAX_MESSAGES",
    "MAX_SESSION_MESSAGES",
    "ROLES",
    "SYSTEM_ROLES",
    "Message",
    "ToolCall",
    "message_text",
    "render_message",
    "validate_message",
    "validate_messages",
]

MAX_MESSAGES = 1_000
"""Most messages one call may give (``store_session``, ``inject_context``): each turn is embedded
inside the request, so this bounds a request's work (#22 item 3)."""
MAX_SESSION_MESSAGES = 20_000
"""Most messages one stored conversation may hold (appends included)."""

_REQUIRES_CONTENT = frozenset({"system", "developer", "user"})


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _check_json(value: object, where: str) -> None:
    """Refuse non-JSON values, NaN/infinities, NUL and lone surrogates anywhere (shared rules)."""
    check_json_value(value, where)


def _require_str(obj: Mapping[str, Any], key: str, where: str, *, blank_ok: bool = False) -> str:
    if key not in obj:
        raise ValidationError(f"{where}.{key} is required")
    value = obj[key]
    if not isinstance(value, str):
        raise ValidationError(f"{where}.{key} must be a string, got {_type_name(value)}")
    if not blank_ok and not value.strip():
        raise ValidationError(f"{where}.{key} must be a non-empty string")
    return value


def message_text(content: object) -> str | None:
    """The text of an OpenAI ``content`` value: the string itself, or the ``text`` parts joined by newlines.

    Returns:
        The text, or ``None`` for ``null`` content and for parts without any text.
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            part["text"]
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str)
        ]
        return "\n".join(texts) if texts else None
    return None


def _check_content(content: object, where: str) -> None:
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise ValidationError(
            f"{where}.content must be a string, null or a list of content parts, got {_type_name(content)}"
        )
    for i, part in enumerate(content):
        at = f"{where}.content[{i}]"
        if not isinstance(part, Mapping):
            raise ValidationError(f"{at} must be an object with a 'type', got {_type_name(part)}")
        kind = _require_str(part, "type", at)
        if kind == "text":
            _require_str(part, "text", at, blank_ok=True)


def _unparsed(arguments: str) -> bool:
    """Whether ``function.arguments`` is not valid JSON text (it is kept verbatim either way)."""
    try:
        json.loads(arguments)
    except (ValueError, RecursionError):
        return True
    return False


def _tool_calls(value: object, where: str) -> tuple[ToolCall, ...]:
    if not isinstance(value, list):
        raise ValidationError(f"{where}.tool_calls must be a list, got {_type_name(value)}")
    calls = []
    for i, raw in enumerate(value):
        at = f"{where}.tool_calls[{i}]"
        if not isinstance(raw, Mapping):
            raise ValidationError(f"{at} must be an object, got {_type_name(raw)}")
        call_id = _require_str(raw, "id", at)
        kind = raw.get("type", "function")
        if kind != "function":
            raise ValidationError(f"{at}.type must be 'function', got {kind!r}")
        function = raw.get("function")
        if not isinstance(function, Mapping):
            raise ValidationError(f"{at}.function must be an object with 'name' and 'arguments'")
        name = _require_str(function, "name", f"{at}.function")
        if "arguments" not in function:
            raise ValidationError(f"{at}.function.arguments is required (JSON text, e.g. '{{}}')")
        arguments = function["arguments"]
        if not isinstance(arguments, str):
            raise ValidationError(
                f"{at}.function.arguments must be a string (JSON text), got {_type_name(arguments)}"
            )
        calls.append(
            ToolCall(
                id=call_id,
                name=name,
                arguments=arguments,
                type="function",
                arguments_unparsed=_unparsed(arguments),
            )
        )
    return tuple(calls)


def validate_message(message: object, where: str = "message") -> Message:
    """Validate one OpenAI-format message (see the module docstring) and wrap it.

    Args:
        message: A mapping, or an existing :class:`Message` (returned as is).
        where: How to name the message in errors, e.g. ``"messages[3]"``.

    Returns:
        The :class:`Message`, whose :attr:`~Message.raw` is a JSON round-tripped copy of
        ``message`` (the caller's object is never kept or modified).

    Raises:
        ValidationError: the message is malformed; the error names the field.
    """
    if isinstance(message, Message):
        return message
    if not isinstance(message, Mapping):
        raise ValidationError(f"{where} must be an object with a 'role', got {_type_name(message)}")
    _check_json(message, where)
    role = _role(message, where)
    content = message.get("content")
    _check_content(content, where)
    if role in _REQUIRES_CONTENT and content is None:
        raise ValidationError(f"{where}.content is required for a {role} message")
    name = message.get("name")
    if name is not None and not isinstance(name, str):
        raise ValidationError(f"{where}.name must be a string, got {_type_name(name)}")
    calls = _message_tool_calls(message, role, where)
    tool_call_id = _tool_call_id(message, role, where)
    if role == "assistant" and content is None and not calls and message.get("refusal") is None:
        raise ValidationError(f"{where}: an assistant message needs content, tool_calls or refusal")
    raw = json.loads(json.dumps(message, ensure_ascii=False, allow_nan=False))
    return Message(
        role=role,
        content=message_text(content),
        name=name,
        tool_calls=calls,
        tool_call_id=tool_call_id,
        raw=raw,
    )


def _role(message: Mapping[str, Any], where: str) -> str:
    """The message's role, one of :data:`ROLES` (``function`` is refused with its replacement)."""
    role = message.get("role")
    if role == "function":
        raise ValidationError(f"{where}.role 'function' is deprecated and not supported; use 'tool'")
    if role not in ROLES:
        raise ValidationError(f"{where}.role must be one of {', '.join(ROLES)}; got {role!r}")
    return str(role)


def _message_tool_calls(message: Mapping[str, Any], role: str, where: str) -> tuple[ToolCall, ...]:
    """The message's tool calls (only an assistant message may have them)."""
    if message.get("tool_calls") is None:
        return ()
    if role != "assistant":
        raise ValidationError(f"{where}.tool_calls is only allowed on assistant messages, not {role}")
    return _tool_calls(message["tool_calls"], where)


def _tool_call_id(message: Mapping[str, Any], role: str, where: str) -> str | None:
    """The id of the call a tool message answers (required there, refused elsewhere)."""
    if role == "tool":
        return _require_str(message, "tool_call_id", where)
    if message.get("tool_call_id") is not None:
        raise ValidationError(f"{where}.tool_call_id is only allowed on tool messages, not {role}")
    return None


def validate_messages(messages: object, *, allow_empty: bool = False) -> tuple[Message, ...]:
    """Validate a list of OpenAI-format messages.

    Args:
        messages: A list (or tuple) of message mappings or :class:`Message` objects.
        allow_empty: Accept an empty list (default: refuse it, there is nothing to store).

    Returns:
        The messages as :class:`Message` objects, in order.

    Raises:
        ValidationError: not a list, empty, more than :data:`MAX_MESSAGES`, or a malformed
            message; the error names the message index and field
            (``messages[3].tool_call_id is required``).
    """
    if isinstance(messages, (str | bytes, Mapping)) or not isinstance(messages, Sequence):
        raise ValidationError(f"messages must be a list of message objects, got {_type_name(messages)}")
    if not messages and not allow_empty:
        raise ValidationError("messages must not be empty")
    if len(messages) > MAX_MESSAGES:
        raise ValidationError(
            f"messages must hold at most {MAX_MESSAGES:,} messages, got {len(messages):,}; "
            "store a longer conversation in parts (append)"
        )
    return tuple(validate_message(m, f"messages[{i}]") for i, m in enumerate(messages))


def render_message(message: Message, *, max_chars: int | None = None) -> str:
    """One line of plain text for a message: ``"<name or role>: <text>"``.

    Tool calls are appended as ``[called <name>(<arguments>)]``, a tool result is
    ``"tool: <text>"``, non-text content parts show as ``[<type>]``. System and developer
    messages render like the others (callers that skip them filter first).

    Args:
        message: The message.
        max_chars: Cut the text after this many characters (>= 1) with ``"…"``;
            ``None`` = no limit. Whitespace runs are collapsed to single spaces.

    Returns:
        The rendered line (never empty: at least ``"<role>:"``).
    """
    parts: list[str] = []
    if message.content is not None:
        parts.append(message.content)
    raw_content = message.raw.get("content")
    if isinstance(raw_content, list):
        parts.extend(
            f"[{part.get('type')}]"
            for part in raw_content
            if isinstance(part, Mapping) and part.get("type") != "text"
        )
    for call in message.tool_calls:
        parts.append(f"[called {call.name}({call.arguments})]")
    if not parts and isinstance(message.raw.get("refusal"), str):
        parts.append(f"[refused: {message.raw['refusal']}]")
    text = " ".join(" ".join(parts).split())
    if max_chars is not None and len(text) > max_chars:
        text = text[: max(1, max_chars) - 1].rstrip() + "…"
    label = message.name if message.name and message.role not in SYSTEM_ROLES | {"tool"} else message.role
    return f"{label}: {text}" if text else f"{label}:"


# -- the message types (validated by validate_message above) --------------------------

ROLES = ("system", "developer", "user", "assistant", "tool")
"""Accepted message roles (OpenAI chat format; ``developer`` is OpenAI's newer name for ``system``)."""

SYSTEM_ROLES = frozenset({"system", "developer"})
"""Instruction roles: stored and returned by ``get_session``, but never embedded or shown in snippets."""

CONVERSATION_ROLES = frozenset({"user", "assistant", "tool"})
"""Roles that make up the conversation proper (what is windowed, embedded and searched)."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call requested by an assistant message (OpenAI ``tool_calls[i]``).

    Attributes:
        id: The call id that the answering ``tool`` message's ``tool_call_id`` refers to.
        name: The function name (``function.name``).
        arguments: The arguments exactly as given (``function.arguments``): JSON text,
            never parsed or reformatted.
        type: The tool type; always ``"function"``.
        arguments_unparsed: ``True`` when ``arguments`` is not valid JSON text (a model's
            malformed or truncated call); it is kept verbatim anyway.
    """

    id: str
    name: str
    arguments: str
    type: str = "function"
    arguments_unparsed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The OpenAI form ``{"id", "type", "function": {"name", "arguments"}}``."""
        return {
            "id": self.id,
            "type": self.type,
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True, slots=True)
class Message:
    """One OpenAI-format chat message.

    Build one with :meth:`from_dict` (validated, the usual way) or with the constructor
    for simple messages (``Message("user", "hi")``), which fills :attr:`raw` in the
    canonical key order ``role, content, name, tool_calls, tool_call_id``.

    Attributes:
        role: One of :data:`ROLES`.
        content: The message text: the ``content`` string, or its ``text`` parts joined
            with newlines; ``None`` when there is no text (an assistant message that only
            calls tools, or content made only of non-text parts).
        name: Optional participant name (OpenAI ``name``).
        tool_calls: Tool calls of an assistant message (empty otherwise).
        tool_call_id: For ``tool`` messages, the id of the call this message answers.
        raw: The message mapping exactly as given (JSON types, caller's key order).
    """

    role: str
    content: str | None = None
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.raw:
            raw: dict[str, Any] = {"role": self.role, "content": self.content}
            if self.name is not None:
                raw["name"] = self.name
            if self.tool_calls:
                raw["tool_calls"] = [call.to_dict() for call in self.tool_calls]
            if self.tool_call_id is not None:
                raw["tool_call_id"] = self.tool_call_id
            object.__setattr__(self, "raw", raw)

    @classmethod
    def from_dict(cls, message: Mapping[str, Any]) -> Message:
        """Validate one OpenAI-format message mapping and wrap it.

        Raises:
            ValidationError: the message is malformed; the message names the field.
        """
        return validate_message(message)

    def to_dict(self) -> dict[str, Any]:
        """A deep copy of the message as given: ``json.dumps`` of it equals that of the input."""
        return copy.deepcopy(dict(self.raw))

    def to_json(self) -> str:
        """The storage form: ``json.dumps`` of :attr:`raw` (not ASCII-escaped, caller's key order)."""
        return json.dumps(self.raw, ensure_ascii=False, allow_nan=False)
