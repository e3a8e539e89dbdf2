"""Value types of session episodes: messages, tool calls, stored sessions and search snippets.

All are frozen dataclasses; timestamps are timezone-aware UTC ``datetime``s.

A :class:`Message` keeps the caller's message mapping exactly as given (:attr:`Message.raw`,
a JSON round-tripped copy in the caller's key order), so :meth:`Message.to_dict` gives back
the same JSON, byte for byte: tool-call ``arguments`` are never parsed or reformatted, and
provider-specific keys (``refusal``, ``reasoning_content``, ...) are kept. The typed fields
(:attr:`Message.role`, :attr:`Message.content`, :attr:`Message.tool_calls`, ...) are a
read-only view of it for rendering and windowing.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memlane.models import ScoreBreakdown

__all__ = [
    "CONVERSATION_ROLES",
    "ROLES",
    "SYSTEM_ROLES",
    "Message",
    "SessionEpisode",
    "SessionSnippet",
    "ToolCall",
]

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
        from memlane.sessions.messages import validate_message

        return validate_message(message)

    def to_dict(self) -> dict[str, Any]:
        """A deep copy of the message as given: ``json.dumps`` of it equals that of the input."""
        return copy.deepcopy(dict(self.raw))

    def to_json(self) -> str:
        """The storage form: ``json.dumps`` of :attr:`raw` (not ASCII-escaped, caller's key order)."""
        return json.dumps(self.raw, ensure_ascii=False, allow_nan=False)


@dataclass(frozen=True, slots=True)
class SessionEpisode:
    """One stored conversation (a session episode).

    Attributes:
        session_id: The caller's session id, unique within a tenant.
        tenant_id: Owner tenant (the memory's ``tenant_id``).
        agent_id: The agent that had the conversation.
        user_id: The user it was had with.
        messages: Every stored message, in order (appends included).
        started_at: When the conversation began (UTC).
        ended_at: When its last stored part ended (UTC); ``>= started_at``.
        metadata: JSON-serialisable mapping given by the caller (appends merge into it).
    """

    session_id: str
    tenant_id: str
    agent_id: str
    user_id: str
    messages: tuple[Message, ...]
    started_at: datetime
    ended_at: datetime
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (ISO-8601 times); the import/export record shape."""
        return {
            "session_id": self.session_id,
            "tenant_id": self.tenant_id,
            "agent_id": self.agent_id,
            "user_id": self.user_id,
            "started_at": self.started_at.isoformat(),
            "ended_at": self.ended_at.isoformat(),
            "metadata": copy.deepcopy(dict(self.metadata)),
            "messages": [m.to_dict() for m in self.messages],
        }


@dataclass(frozen=True, slots=True)
class SessionSnippet:
    """A passage of a past session that matched a search, with its score breakdown.

    Attributes:
        session_id: The session it comes from.
        agent_id: That session's agent.
        user_id: That session's user.
        created_at: When the matched turn happened: the ``started_at`` of the
            ``store_session`` call that stored it (UTC). Recency is computed from it.
        messages: The window: the matched turn plus up to ``context_turns`` turns on
            each side, in order (system/developer messages left out).
        positions: Position of each of ``messages`` in the stored session (0-based).
        match_start: Index in ``messages`` of the matched turn's first message.
        match_end: Index in ``messages`` just past the matched turn's last message.
        breakdown: Relevance, recency, importance (unrated: 0.5) and score, each in [0, 1].
    """

    session_id: str
    agent_id: str
    user_id: str
    created_at: datetime
    messages: tuple[Message, ...]
    positions: tuple[int, ...]
    match_start: int
    match_end: int
    breakdown: ScoreBreakdown

    @property
    def score(self) -> float:
        """The combined score in [0, 1]."""
        return self.breakdown.score

    @property
    def matched(self) -> tuple[Message, ...]:
        """The matched turn's messages (without the context around them)."""
        return self.messages[self.match_start : self.match_end]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (ISO-8601 ``created_at``, messages as given, the breakdown)."""
        return {
            "session_id": self.session_id,
            "agent_id": self.agent_id,
            "user_id": self.user_id,
            "created_at": self.created_at.isoformat(),
            "messages": [m.to_dict() for m in self.messages],
            "positions": list(self.positions),
            "match_start": self.match_start,
            "match_end": self.match_end,
            "breakdown": self.breakdown.to_dict(),
        }
