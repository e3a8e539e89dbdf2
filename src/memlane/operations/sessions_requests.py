"""The requests of the session operations: search past conversations, the context block, store one.

One typed request per operation (see :mod:`memlane.operations.requests`, which re-exports every
room's requests): the tool request is what a model may send, the ``*Body`` what the HTTP API takes.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from memlane.config import DEFAULT_CONTEXT_MIN_RELEVANCE
from memlane.operations.fields import (
    DETAIL_DOC,
    NOW_DOC,
    PRESET_DOC,
    Count,
    Detail,
    Flag,
    Fraction,
    Instant,
    Label,
    Limit,
    Messages,
    Metadata,
    PlacementField,
    Preset,
    Query,
    Request,
    SomeMessages,
    WeightsField,
)
from memlane.sessions.context import DEFAULT_TOKEN_BUDGET

__all__ = [
    "ContextBody",
    "ContextRequest",
    "InjectContextBody",
    "SearchSessionsBody",
    "SearchSessionsRequest",
    "StoreSessionBody",
]

_OWNER = "Default 'default'."
_EXCLUDE = "A conversation to leave out (e.g. the current one)."
_FLOOR = (
    "Relevance floor (0-1): leave out items whose own match to the query (calibrated cosine "
    "similarity) is below this, so an unrelated query gets nothing. Default: the configured "
    f"context_min_relevance ({DEFAULT_CONTEXT_MIN_RELEVANCE} unless changed); 0 keeps everything."
)
_TURNS = "Turns shown around each matched turn (default 1)."


class _Owner(Request):
    agent_id: Label | None = Field(default=None, description=f"The agent. {_OWNER}")
    user_id: Label | None = Field(default=None, description=f"The user. {_OWNER}")


class _Ranked(Request):
    """What an application (not a model) may add to a ranked read: the reference time, custom weights."""

    now: Instant | None = Field(default=None, description=NOW_DOC)
    weights: WeightsField | None = Field(default=None, description="Custom weights (instead of preset).")


class SearchSessionsRequest(Request):
    """Passages of earlier conversations (the ``search_sessions`` tool)."""

    OPERATION: ClassVar[str] = "search_sessions"

    query: Query = Field(description="What to look for, in natural language, e.g. 'the hotel in Lisbon'.")
    top_k: Limit | None = Field(default=None, description="Most passages to return (default 3).")
    context_turns: Annotated[Count, Field(ge=0)] | None = Field(default=None, description=_TURNS)
    max_per_session: Annotated[Count, Field(ge=1)] | None = Field(
        default=None, description="Most passages from one conversation."
    )
    exclude_session_id: Label | None = Field(default=None, description=_EXCLUDE)
    min_relevance: Fraction | None = Field(default=None, description=_FLOOR)
    preset: Preset | None = Field(default=None, description=PRESET_DOC)
    detail: Detail | None = Field(default=None, description=DETAIL_DOC)


class SearchSessionsBody(_Ranked, SearchSessionsRequest, _Owner):
    """``POST /v1/sessions/search``."""


class _ContextOptions(Request):
    """How the context block is built (``get_context`` and ``/v1/context/inject`` share them)."""

    token_budget: Annotated[Count, Field(ge=0)] | None = Field(
        default=None, description=f"Most tokens the block may take (default {DEFAULT_TOKEN_BUDGET})."
    )
    include_events: Flag | None = Field(default=None, description="Include remembered episodes.")
    include_sessions: Flag | None = Field(default=None, description="Include past conversations.")
    include_facts: Flag | None = Field(
        default=None,
        description=(
            "Include the current facts about the entities the query names (default true; nothing "
            "when it names none)."
        ),
    )
    session_top_k: Limit | None = Field(
        default=None, description="Conversation passages considered (default 5)."
    )
    event_limit: Limit | None = Field(default=None, description="Episodes considered (default 5).")
    min_relevance: Fraction | None = Field(default=None, description=_FLOOR)
    context_turns: Annotated[Count, Field(ge=0)] | None = Field(default=None, description=_TURNS)
    exclude_session_id: Label | None = Field(default=None, description=_EXCLUDE)
    preset: Preset | None = Field(default=None, description=PRESET_DOC)


class _ContextQuery(Request):
    query: Query = Field(description="What the context is for: usually the user's latest message.")


class ContextRequest(_ContextOptions, _ContextQuery):
    """The ``[Past Conversation Context]`` block for a query (the ``get_context`` tool)."""

    OPERATION: ClassVar[str] = "get_context"

    detail: Detail | None = Field(default=None, description=DETAIL_DOC)


class ContextBody(_Ranked, ContextRequest, _Owner):
    """``POST /v1/context``."""


class _Injection(Request):
    messages: SomeMessages = Field(description="OpenAI-format messages ({role, content}).")
    query: Query | None = Field(default=None, description="Default: the latest user message.")
    placement: PlacementField | None = Field(default=None, description="'system' (default) or 'user'.")


class InjectContextBody(_Ranked, _ContextOptions, _Injection, _Owner):
    """``POST /v1/context/inject``: messages with the context block placed before the latest user message."""

    OPERATION: ClassVar[str] = "inject_context"


class StoreSessionBody(_Owner):
    """``POST /v1/sessions``: store a conversation (or append turns to it)."""

    OPERATION: ClassVar[str] = "store_session"

    session_id: Label = Field(description="The conversation's id (1-200 characters).")
    messages: Messages = Field(description="OpenAI-format messages ({role, content}).")
    started_at: Instant | None = Field(default=None, description="When it started (ISO 8601).")
    ended_at: Instant | None = Field(default=None, description="When it ended (ISO 8601).")
    metadata: Metadata | None = Field(default=None, description="A JSON object stored alongside.")
    append: Flag | None = Field(default=None, description="Add turns to an existing session (else 409).")
