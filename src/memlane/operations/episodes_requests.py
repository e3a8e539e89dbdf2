"""The requests of the episode operations: remember, recall, supersede, history, contradictions.

One typed request per operation (see :mod:`memlane.operations.requests`, which re-exports every
room's requests): the tool request is what a model may send, the ``*Body`` what the HTTP API takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field

from memlane.operations.fields import (
    DETAIL_DOC,
    NOW_DOC,
    PRESET_DOC,
    SESSION_DOC,
    Confidence,
    Detail,
    Flag,
    Fraction,
    Importance,
    Instant,
    Label,
    Limit,
    Metadata,
    Preset,
    Query,
    Request,
    Retrieval,
    ScopeField,
    Tags,
    Text,
    WeightsField,
)

__all__ = [
    "ContradictionsBody",
    "ContradictionsRequest",
    "HistoryRequest",
    "RecallBody",
    "RecallRequest",
    "RememberBody",
    "RememberRequest",
    "SupersedeBody",
    "SupersedeRequest",
]

_SCOPE = (
    "What a read may see: 'session' (this session only) or 'tenant' (every session of the key's "
    "tenant). Default: the server's configured scope."
)


class RememberRequest(Request):
    """Save an episode to long-term memory (the ``remember_episode`` tool)."""

    OPERATION: ClassVar[str] = "remember_episode"

    event_type: Label = Field(
        description=(
            "Short category label, e.g. 'preference', 'decision', 'fact', 'task_outcome', 'error'. "
            "Reuse the same labels consistently: recall can filter on the exact label (case-sensitive)."
        )
    )
    content: Text = Field(
        description=(
            "The episode in one to three self-contained sentences, e.g. 'The user prefers aisle seats "
            "on flights longer than 3 hours.' It is searched by meaning."
        )
    )
    tags: Tags | None = Field(
        default=None,
        description=(
            "Optional keywords to filter on later, e.g. ['travel', 'flights']. Case-insensitive "
            "(stored lower-case). A recall with several tags only returns episodes having ALL of them."
        ),
    )
    importance: Importance | None = Field(
        default=None,
        description=(
            "How much this matters for future work, 1-10: 1-3 passing detail; 4-6 useful context; "
            "7-8 a clear preference, decision or lesson; 9-10 critical (hard constraints, safety, must "
            "never be forgotten). Values outside 1-10 are clamped. Omit if unsure (scored as neutral), or "
            "'auto' to have memlane estimate it from the content."
        ),
    )
    detail: Detail | None = Field(default=None, description=DETAIL_DOC)


class RememberBody(RememberRequest):
    """``POST /v1/episodes``: an episode to remember for the key's tenant."""

    created_at: Instant | None = Field(
        default=None, description="When it happened (ISO 8601 with timezone). Default: now."
    )
    metadata: Metadata | None = Field(default=None, description="A JSON object stored alongside.")
    session_id: Label | None = Field(default=None, description=SESSION_DOC)


class RecallRequest(Request):
    """Search long-term memory (the ``recall_episodes`` tool)."""

    OPERATION: ClassVar[str] = "recall_episodes"

    query: Query | None = Field(
        default=None,
        description=(
            "What to remember, in natural language, e.g. 'seat preference on flights'. Omit to list "
            "the newest episodes that match the filters."
        ),
    )
    event_type: Label | None = Field(
        default=None, description="Only episodes with exactly this event_type (case-sensitive)."
    )
    tags: Tags | None = Field(
        default=None,
        description="Only episodes that have ALL of these tags (AND). Give fewer tags for a broader search.",
    )
    limit: Limit | None = Field(
        default=None,
        description="Maximum number of episodes to return (default: the configured default_limit); "
        "larger values than the maximum are refused.",
    )
    preset: Preset | None = Field(default=None, description=PRESET_DOC)
    retrieval: Retrieval | None = Field(
        default=None,
        description=(
            "How candidates are found: 'hybrid' (meaning and keywords, default), 'dense' (meaning only) "
            "or 'keyword' (exact words: names, codes, ids)."
        ),
    )
    min_relevance: Fraction | None = Field(
        default=None, description="Leave out episodes matching the query less than this (0-1)."
    )
    as_of: Instant | None = Field(
        default=None,
        description=(
            "What was true at this time (ISO 8601 with timezone), including facts superseded since, "
            "e.g. 'where did the user live in 2023?'."
        ),
    )
    known_at: Instant | None = Field(
        default=None, description="What memory held as current at this time (ISO 8601 with timezone)."
    )
    include_archived: Flag | None = Field(
        default=None, description="Also return forgotten (archived) episodes (default false)."
    )
    detail: Detail | None = Field(default=None, description=DETAIL_DOC)


class RecallBody(RecallRequest):
    """``POST /v1/recall``: a recall within the key's tenant."""

    session_id: Label | None = Field(default=None, description=SESSION_DOC)
    scope: ScopeField | None = Field(default=None, description=_SCOPE)
    weights: WeightsField | None = Field(default=None, description="Custom weights (instead of preset).")
    now: Instant | None = Field(default=None, description=NOW_DOC)


class _SupersedeFields(Request):
    OPERATION: ClassVar[str] = "supersede_episode"

    event_type: Label = Field(description="Category label, usually the old episode's, e.g. 'preference'.")
    content: Text = Field(description="The new fact, self-contained, e.g. 'The user lives in Lisbon now.'")
    tags: Tags | None = Field(default=None, description="Optional keywords, as for remember_episode.")
    importance: Importance | None = Field(default=None, description="1-10, as for remember_episode.")
    valid_from: Instant | None = Field(
        default=None, description="When the new fact became true (ISO 8601 with timezone); default now."
    )
    reason: Text | None = Field(default=None, description="Why the old fact was replaced.")
    detail: Detail | None = Field(default=None, description=DETAIL_DOC)


class SupersedeRequest(_SupersedeFields):
    """Replace an outdated fact with its new version (the ``supersede_episode`` tool).

    ``episode_id`` as in ``episode_history``; ``old_id``, its earlier name, is still accepted
    as a deprecated alias (not in the schema; a call using it logs a warning).
    """

    ALIASES: ClassVar[Mapping[str, str]] = {"old_id": "episode_id"}

    episode_id: Label = Field(description="Id of the outdated episode (from recall_episodes).")


class SupersedeBody(_SupersedeFields):
    """``POST /v1/episodes/{id}/supersede``: the new version (the old id is in the path)."""

    metadata: Metadata | None = Field(default=None, description="A JSON object stored alongside.")
    session_id: Label | None = Field(default=None, description=SESSION_DOC)


class HistoryRequest(Request):
    """Every version of a fact, oldest first (the ``episode_history`` tool)."""

    OPERATION: ClassVar[str] = "episode_history"

    episode_id: Label = Field(description="Id of any version (from recall_episodes).")
    detail: Detail | None = Field(default=None, description=DETAIL_DOC)


class ContradictionsRequest(Request):
    """Current episodes a new text may contradict (the ``find_contradictions`` tool)."""

    OPERATION: ClassVar[str] = "find_contradictions"

    text: Text = Field(description="The new fact to check.")
    event_type: Label | None = Field(
        default=None, description="Its event_type: candidates share it or a tag."
    )
    tags: Tags | None = Field(
        default=None, description="Its tags: candidates share one of them or the event_type."
    )
    threshold: Confidence | None = Field(
        default=None, description="Confidence in (0, 1] a candidate needs (default 0.8)."
    )
    limit: Limit | None = Field(default=None, description="Most candidates (default 5).")
    now: Instant | None = Field(default=None, description=NOW_DOC)
    detail: Detail | None = Field(default=None, description=DETAIL_DOC)


class ContradictionsBody(ContradictionsRequest):
    """``POST /v1/contradictions``."""

    session_id: Label | None = Field(default=None, description=SESSION_DOC)
    scope: ScopeField | None = Field(default=None, description="'session' or 'tenant' (default tenant).")
