"""Conversations in OpenAI chat format: which messages formation reads, and how.

A conversation is a sequence of OpenAI chat messages (``{"role": ..., "content": ...}``
mappings). Formation reads only what the user and the assistant *said*:

* ``user`` and ``assistant`` messages become :class:`Turn` objects. ``content`` may be a
  string or a list of content parts; the ``text`` parts are joined with newlines and
  other parts (images, audio, files) are ignored.
* ``system`` and ``developer`` messages (instructions to the model), ``tool`` and
  ``function`` messages (tool results: machine data, often large) are skipped, and so
  is any message whose text is empty (e.g. an assistant message holding only
  ``tool_calls``).
* Any other role, a message that is not a mapping, or ``content`` of another type is a
  :class:`~memlane.errors.ValidationError`: formation never skips input it does not
  understand.

Each turn keeps its position in the input list (``index``, counting skipped messages
too), so provenance can point back at the source message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memlane.errors import ValidationError

__all__ = [
    "CONVERSATION_ROLES",
    "SKIPPED_ROLES",
    "Turn",
    "conversation_turns",
    "formation_metadata",
    "render_transcript",
]

CONVERSATION_ROLES = frozenset({"user", "assistant"})
"""Roles whose text formation reads."""

SKIPPED_ROLES = frozenset({"system", "developer", "tool", "function"})
"""Roles formation skips on purpose (instructions and tool results)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One user or assistant message, reduced to its text.

    Attributes:
        index: Position of the message in the input list (0-based, skipped messages counted).
        role: ``"user"`` or ``"assistant"``.
        text: The message's text, stripped of surrounding whitespace (never empty).
        name: The message's optional ``name`` field (a participant name), or ``None``.
    """

    index: int
    role: str
    text: str
    name: str | None = None


def _content_text(content: object, position: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, bytes | bytearray):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping):
                if part.get("type", "text") == "text" and isinstance(part.get("text"), str):
                    texts.append(part["text"])
            else:
                raise ValidationError(
                    f"messages[{position}].content: a content part must be a mapping, "
                    f"got {type(part).__name__}"
                )
        return "\n".join(texts)
    raise ValidationError(
        f"messages[{position}].content must be a string, a list of content parts or null, "
        f"got {type(content).__name__}"
    )


def conversation_turns(messages: Sequence[Mapping[str, Any]]) -> list[Turn]:
    """Return the user and assistant turns of a conversation, in order.

    Args:
        messages: OpenAI chat messages (see the module docstring for what is read).

    Returns:
        One :class:`Turn` per user/assistant message with non-blank text; possibly empty.

    Raises:
        ValidationError: ``messages`` is not a list of mappings, a role is missing or
            unknown, content has an unsupported type, or text contains NUL characters.
    """
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise ValidationError(f"messages must be a list of chat messages, got {type(messages).__name__}")
    turns = []
    for position, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ValidationError(f"messages[{position}] must be a mapping, got {type(message).__name__}")
        role = message.get("role")
        if not isinstance(role, str):
            raise ValidationError(f"messages[{position}] has no string 'role'")
        if role in SKIPPED_ROLES:
            continue
        if role not in CONVERSATION_ROLES:
            known = sorted(CONVERSATION_ROLES | SKIPPED_ROLES)
            raise ValidationError(f"messages[{position}].role must be one of {known}, got {role!r}")
        text = _content_text(message.get("content"), position).strip()
        if "\x00" in text:
            raise ValidationError(f"messages[{position}].content must not contain NUL characters (\\x00)")
        if not text:
            continue
        name = message.get("name")
        turns.append(Turn(position, role, text, name if isinstance(name, str) and name.strip() else None))
    return turns


def render_transcript(turns: Sequence[Turn]) -> str:
    """Render turns as the plain-text transcript given to a model, one ``role: text`` block per turn.

    Args:
        turns: The turns to render, in order.

    Returns:
        The transcript; blocks are separated by a newline.
    """
    return "\n".join(f"{turn.role}: {turn.text}" for turn in turns)


def formation_metadata(
    *,
    method: str,
    model: str | None,
    prompt_version: str | None,
    source_session_id: str | None,
    **details: Any,
) -> dict[str, Any]:
    """Build the provenance recorded on every formed episode, under the ``"formation"`` key.

    Args:
        method: How the episode was formed: ``"llm"``, ``"raw_turn"`` or ``"extractive"``.
        model: The chat model's name (LLM formation), else ``None``.
        prompt_version: The prompt's version string (LLM formation), else ``None``.
        source_session_id: The session the conversation came from, if known.
        **details: Further JSON-serialisable fields (e.g. ``turn_range``, ``attempts``).

    Returns:
        ``{"formation": {...}}``, to be used as (part of) an episode's metadata.
    """
    return {
        "formation": {
            "method": method,
            "model": model,
            "prompt_version": prompt_version,
            "source_session_id": source_session_id,
            **details,
        }
    }
