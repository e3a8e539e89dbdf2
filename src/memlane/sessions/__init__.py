"""Session episodes: whole past conversations stored, recalled, searched and injected as context.

Use them through ``memory.sessions`` (:class:`SessionMemory`) on an
:class:`~memlane.EpisodicMemory`::

    with EpisodicMemory.open("memlane.db", tenant_id="acme") as memory:
        memory.sessions.store_session("s-1", messages, agent_id="support", user_id="u-7")
        block = memory.sessions.build_context(
            "where is my vendor onboarding?", agent_id="support", user_id="u-7", token_budget=800
        )

Modules: :mod:`~memlane.sessions.models` (value types), :mod:`~memlane.sessions.messages`
(OpenAI-format validation and rendering), :mod:`~memlane.sessions.windows` (turns that are
embedded), :mod:`~memlane.sessions.tokens` (offline token counting),
:mod:`~memlane.sessions.search` (session search: turn windows through the one recall
pipeline, cut into snippets), :mod:`~memlane.sessions.context` (the context block and its
injection),
:mod:`~memlane.sessions.importing` (OpenAI-format and LoCoMo import),
:mod:`~memlane.sessions.locomo_format` (the LoCoMo file format) and
:mod:`~memlane.sessions.memory` (the facade).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlane.lazy import lazy_exports
from memlane.sessions.context import (
    CONTEXT_FOOTER,
    CONTEXT_HEADER,
    CONTEXT_INTRO,
    ContextBlock,
    ContextItem,
)
from memlane.sessions.messages import validate_message, validate_messages
from memlane.sessions.models import Message, SessionEpisode, SessionSnippet, ToolCall
from memlane.sessions.tokens import TokenCounter, ToktokCounter

if TYPE_CHECKING:
    from memlane.sessions.memory import SessionMemory

__getattr__, __dir__ = lazy_exports(__name__, globals(), {"memlane.sessions.memory": ("SessionMemory",)})
"""The facade (which imports the recall pipeline and the stores) is imported on first use: the value
types and messages above are what the request declarations and ``memlane --help`` read."""

__all__ = [
    "CONTEXT_FOOTER",
    "CONTEXT_HEADER",
    "CONTEXT_INTRO",
    "ContextBlock",
    "ContextItem",
    "Message",
    "SessionEpisode",
    "SessionMemory",
    "SessionSnippet",
    "TokenCounter",
    "ToktokCounter",
    "ToolCall",
    "validate_message",
    "validate_messages",
]
