"""One typed request per operation: the single declaration every interface is generated from.

Each model below declares one operation's arguments (type, bounds, default, description and
memlane check: see :mod:`memlane.operations.fields`). The tool requests (``RecallRequest``,
...) are what a model may send; the HTTP bodies (``RecallBody``, ...) extend them with the
arguments only an application gives (``session_id``, ``metadata``, ``now``, ``weights``).
:mod:`memlane.tools` generates the tool/MCP schemas from the requests, :mod:`memlane.server`
uses the bodies as FastAPI models (so ``/openapi.json`` is generated from them), and every
interface checks its arguments with :func:`~memlane.operations.fields.check_request`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar

from pydantic import Field

from memlane.config import DEFAULT_COMPACT_SIMILARITY, DEFAULT_CONTEXT_MIN_RELEVANCE
from memlane.graph import (
    DEFAULT_NEIGHBOUR_DEPTH,
    DEFAULT_PATH_DEPTH,
    DEFAULT_PATH_LIMIT,
    MAX_GRAPH_DEPTH,
    MAX_PATHS,
)
from memlane.graph.predicates import FACT_METHODS
from memlane.operations.fields import (
    Check,
    Confidence,
    Count,
    Days,
    Detail,
    Flag,
    Fraction,
    Importance,
    Instant,
    Label,
    Limit,
    Messages,
    Metadata,
    OpenFraction,
    PlacementField,
    Preset,
    Query,
    Request,
    Retrieval,
    ScopeField,
    SomeMessages,
    Tags,
    Text,
    WeightsField,
    choice_field,
    rating_field,
)
from memlane.sessions.context import DEFAULT_TOKEN_BUDGET
from memlane.validation import check_limit

__all__ = [
    "OPERATIONS",
    "CompactBody",
    "ContextBody",
    "ContextRequest",
    "ContradictionsBody",
    "ContradictionsRequest",
    "EntityTimelineRequest",
    "FindPathsBody",
    "FindPathsRequest",
    "ForgetBody",
    "HistoryRequest",
    "InjectContextBody",
    "NeighboursBody",
    "NeighboursRequest",
    "PruneBody",
    "QueryFactsBody",
    "QueryFactsRequest",
    "RecallBody",
    "RecallRequest",
    "RememberBody",
    "RememberFactBody",
    "RememberFactRequest",
    "RememberRequest",
    "SearchSessionsBody",
    "SearchSessionsRequest",
    "StoreSessionBody",
    "SupersedeBody",
    "SupersedeRequest",
]

_DETAIL = (
    "'compact' (the tools' default): id, content, event_type, when, tags, importance, score and a "
    "one-line why per episode. 'full' (the HTTP default): every field (lifecycle times, retrieve "
    "counts, the score breakdown)."
)
_PRESET = (
    "Named ranking weights: 'balanced' (default, relevance first), 'specific_question' (favours "
    "relevance), 'agent_context' (important facts can outrank better matches), 'conversation' (recent "
    "turns can outrank better matches), 'cold_start' (importance, ignores recency), 'relevance_only' "
    "(pure semantic similarity), 'seed' (seed 000: plain mean of cosine, recency and importance/10)."
)
_SESSION = "Session within the key's tenant (1-200 characters). Default: 'default'."
_SCOPE = (
    "What a read may see: 'session' (this session only) or 'tenant' (every session of the key's "
    "tenant). Default: the server's configured scope."
)
_NOW = "Reference time (ISO 8601 with timezone). Default: now."


# -- episodes -----------------------------------------------------------------------------


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
    detail: Detail | None = Field(default=None, description=_DETAIL)


class RememberBody(RememberRequest):
    """``POST /v1/episodes``: an episode to remember for the key's tenant."""

    created_at: Instant | None = Field(
        default=None, description="When it happened (ISO 8601 with timezone). Default: now."
    )
    metadata: Metadata | None = Field(default=None, description="A JSON object stored alongside.")
    session_id: Label | None = Field(default=None, description=_SESSION)


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
    preset: Preset | None = Field(default=None, description=_PRESET)
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
    detail: Detail | None = Field(default=None, description=_DETAIL)


class RecallBody(RecallRequest):
    """``POST /v1/recall``: a recall within the key's tenant."""

    session_id: Label | None = Field(default=None, description=_SESSION)
    scope: ScopeField | None = Field(default=None, description=_SCOPE)
    weights: WeightsField | None = Field(default=None, description="Custom weights (instead of preset).")
    now: Instant | None = Field(default=None, description=_NOW)


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
    detail: Detail | None = Field(default=None, description=_DETAIL)


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
    session_id: Label | None = Field(default=None, description=_SESSION)


class HistoryRequest(Request):
    """Every version of a fact, oldest first (the ``episode_history`` tool)."""

    OPERATION: ClassVar[str] = "episode_history"

    episode_id: Label = Field(description="Id of any version (from recall_episodes).")
    detail: Detail | None = Field(default=None, description=_DETAIL)


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
    now: Instant | None = Field(default=None, description=_NOW)
    detail: Detail | None = Field(default=None, description=_DETAIL)


class ContradictionsBody(ContradictionsRequest):
    """``POST /v1/contradictions``."""

    session_id: Label | None = Field(default=None, description=_SESSION)
    scope: ScopeField | None = Field(default=None, description="'session' or 'tenant' (default tenant).")


# -- sessions and context -----------------------------------------------------------------

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

    now: Instant | None = Field(default=None, description=_NOW)
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
    preset: Preset | None = Field(default=None, description=_PRESET)
    detail: Detail | None = Field(default=None, description=_DETAIL)


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
    preset: Preset | None = Field(default=None, description=_PRESET)


class _ContextQuery(Request):
    query: Query = Field(description="What the context is for: usually the user's latest message.")


class ContextRequest(_ContextOptions, _ContextQuery):
    """The ``[Past Conversation Context]`` block for a query (the ``get_context`` tool)."""

    OPERATION: ClassVar[str] = "get_context"

    detail: Detail | None = Field(default=None, description=_DETAIL)


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


# -- the knowledge graph ------------------------------------------------------------------

_ENTITY = "An entity's name or alias, e.g. 'customer_123', 'Alice' (case and spacing do not matter)."


class RememberFactRequest(Request):
    """Store one fact about an entity (the ``remember_fact`` tool)."""

    OPERATION: ClassVar[str] = "remember_fact"

    subject: Label = Field(description=f"Who or what the fact is about. {_ENTITY}")
    predicate: Label = Field(
        description=(
            "The relation in snake_case, e.g. 'lives_in', 'works_at', 'subscription_tier', 'likes', "
            "'uses_database'. Single-valued ones (lives_in, works_at, subscription_tier, diet, ...) replace "
            "the current value; likes/dislikes replace each other."
        )
    )
    object: Label | None = Field(default=None, description="Another entity, e.g. 'Lisbon'.")
    value: Text | None = Field(
        default=None,
        description=(
            "A literal, e.g. 'enterprise', '41' (with an object too: the relation's value, e.g. a rating). "
            "Neither object nor value: a flag, stored as value 'true'."
        ),
    )
    valid_from: Instant | None = Field(
        default=None, description="When it became true (ISO 8601 with timezone). Default: now."
    )
    confidence: Fraction | None = Field(
        default=None, description="How sure, 0-1 (default 1). Below 0.7 it replaces nothing."
    )
    importance: rating_field() | None = Field(  # type: ignore[valid-type]
        default=None, description="How much it matters, 1-10 (clamped)."
    )
    source_episode_id: Label | None = Field(default=None, description="The episode it was taken from.")
    detail: Detail | None = Field(default=None, description=_DETAIL)


class RememberFactBody(RememberFactRequest):
    """``POST /v1/facts``: a fact for the key's tenant."""

    subject_type: Label | None = Field(default=None, description="Kind of a new subject ('person'...).")
    object_type: Label | None = Field(default=None, description="Kind of a new object entity.")
    source_session_id: Label | None = Field(default=None, description="The conversation it came from.")
    method: choice_field(FACT_METHODS) | None = Field(  # type: ignore[valid-type]
        default=None, description="How it got in: 'explicit' (default), 'llm' or 'import'."
    )
    now: Instant | None = Field(default=None, description=_NOW)
    session_id: Label | None = Field(default=None, description=_SESSION)


class QueryFactsRequest(Request):
    """The facts about an entity, at a time (the ``query_facts`` tool)."""

    OPERATION: ClassVar[str] = "query_facts"

    entity: Label = Field(description=_ENTITY)
    as_of: Instant | None = Field(
        default=None, description="What was true at this time (ISO 8601), including facts replaced since."
    )
    known_at: Instant | None = Field(
        default=None, description="What memory held as current at this time (ISO 8601 with timezone)."
    )
    predicate: Label | None = Field(default=None, description="Only this relation, e.g. 'lives_in'.")
    limit: Limit | None = Field(default=None, description="Most facts to return.")
    detail: Detail | None = Field(default=None, description=_DETAIL)


class QueryFactsBody(QueryFactsRequest):
    """``POST /v1/facts/query``."""

    session_id: Label | None = Field(default=None, description=_SESSION)
    scope: ScopeField | None = Field(default=None, description="'session' or 'tenant' (default tenant).")
    now: Instant | None = Field(default=None, description=_NOW)


class EntityTimelineRequest(Request):
    """How the facts about an entity changed (the ``entity_timeline`` tool)."""

    OPERATION: ClassVar[str] = "entity_timeline"

    entity: Label = Field(description=_ENTITY)
    detail: Detail | None = Field(default=None, description=_DETAIL)


_Hops = Annotated[int, Field(ge=1, le=MAX_GRAPH_DEPTH), Check(check_limit, ("maximum",))]
"""A walk's length in facts (each hop multiplies the rows a store visits)."""
_PathCount = Annotated[int, Field(ge=1, le=MAX_PATHS), Check(check_limit, ("maximum",))]
_GRAPH_AS_OF = "Walk the facts true at this time (ISO 8601 with timezone). Default: the current facts."


class NeighboursRequest(Request):
    """The entities near an entity (the ``neighbours`` tool)."""

    OPERATION: ClassVar[str] = "neighbours"

    entity: Label = Field(description=_ENTITY)
    depth: _Hops | None = Field(
        default=None,
        description=(
            f"Hops to walk, 1-{MAX_GRAPH_DEPTH} (default {DEFAULT_NEIGHBOUR_DEPTH}: the entities one fact "
            "away). Facts are followed both ways."
        ),
    )
    as_of: Instant | None = Field(default=None, description=_GRAPH_AS_OF)
    detail: Detail | None = Field(default=None, description=_DETAIL)


class NeighboursBody(NeighboursRequest):
    """``POST /v1/graph/neighbours``."""

    session_id: Label | None = Field(default=None, description=_SESSION)
    scope: ScopeField | None = Field(default=None, description="'session' or 'tenant' (default tenant).")
    now: Instant | None = Field(default=None, description=_NOW)


class FindPathsRequest(Request):
    """Chains of facts linking two entities (the ``find_paths`` tool)."""

    OPERATION: ClassVar[str] = "find_paths"

    source: Label = Field(description=f"Where the chain starts. {_ENTITY}")
    target: Label = Field(description="Where the chain ends: an entity's name or alias.")
    max_depth: _Hops | None = Field(
        default=None,
        description=f"Longest chain in facts, 1-{MAX_GRAPH_DEPTH} (default {DEFAULT_PATH_DEPTH}).",
    )
    limit: _PathCount | None = Field(
        default=None,
        description=f"Most chains, 1-{MAX_PATHS} (default {DEFAULT_PATH_LIMIT}), shortest first.",
    )
    as_of: Instant | None = Field(default=None, description=_GRAPH_AS_OF)
    detail: Detail | None = Field(default=None, description=_DETAIL)


class FindPathsBody(FindPathsRequest):
    """``POST /v1/graph/paths``."""

    session_id: Label | None = Field(default=None, description=_SESSION)
    scope: ScopeField | None = Field(default=None, description="'session' or 'tenant' (default tenant).")
    now: Instant | None = Field(default=None, description=_NOW)


# -- admin --------------------------------------------------------------------------------


class PruneBody(Request):
    """``POST /v1/admin/prune``: delete episodes and sessions past ``retention_days`` (the key's tenant;
    store-wide for an operator key)."""

    OPERATION: ClassVar[str] = "prune"

    dry_run: Flag | None = Field(
        default=None, description="Only report; change nothing. Default true: send false to apply."
    )
    now: Instant | None = Field(
        default=None,
        description=(
            "Reference time (ISO 8601 with timezone); later than the server's clock only in a dry run. "
            "Default: now."
        ),
    )


class _Where(PruneBody):
    session_id: Label | None = Field(default=None, description=_SESSION)
    scope: ScopeField | None = Field(default=None, description="'session' or 'tenant' (default tenant).")


class ForgetBody(_Where):
    """``POST /v1/admin/forget``: archive episodes whose strength decayed."""

    OPERATION: ClassVar[str] = "forget"

    threshold: OpenFraction | None = Field(
        default=None, description="Strength in (0, 1) below which an episode is archived."
    )


class CompactBody(_Where):
    """``POST /v1/admin/compact``: merge near-duplicates and archive stale episodes."""

    OPERATION: ClassVar[str] = "compact"

    similarity: OpenFraction | None = Field(
        default=None,
        description=(
            f"Cosine similarity in (0, 1) above which episodes merge (default {DEFAULT_COMPACT_SIMILARITY})."
        ),
    )
    never_retrieved_older_than_days: Days | None = Field(
        default=None, description="Also archive episodes never retrieved and older than this many days."
    )


OPERATIONS: tuple[type[Request], ...] = (
    RememberBody,
    RecallBody,
    SupersedeBody,
    ContradictionsBody,
    SearchSessionsBody,
    ContextBody,
    InjectContextBody,
    StoreSessionBody,
    ForgetBody,
    CompactBody,
    PruneBody,
    RememberFactBody,
    QueryFactsBody,
    NeighboursBody,
    FindPathsBody,
)
"""The HTTP bodies (each extends its tool request where there is one)."""
