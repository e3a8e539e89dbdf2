"""Value types of session episodes: stored sessions and search snippets.

All are frozen dataclasses; timestamps are timezone-aware UTC ``datetime``s. The message
types (:class:`Message`, :class:`ToolCall`) and the role sets are defined with their
validation in :mod:`memlane.sessions.messages` and re-exported here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memlane.models import ScoreBreakdown
from memlane.operations import wire
from memlane.sessions.messages import CONVERSATION_ROLES, ROLES, SYSTEM_ROLES, Message, ToolCall

__all__ = [
    "CONVERSATION_ROLES",
    "ROLES",
    "SYSTEM_ROLES",
    "Message",
    "SessionEpisode",
    "SessionSnippet",
    "ToolCall",
]


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
            "started_at": wire.timestamp(self.started_at),
            "ended_at": wire.timestamp(self.ended_at),
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
            "created_at": wire.timestamp(self.created_at),
            "messages": [m.to_dict() for m in self.messages],
            "positions": list(self.positions),
            "match_start": self.match_start,
            "match_end": self.match_end,
            "breakdown": wire.breakdown(self.breakdown),
        }
