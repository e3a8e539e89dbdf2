"""The requests of the knowledge-graph operations: remember and query facts, timelines, walks.

One typed request per operation (see :mod:`memlane.operations.requests`, which re-exports every
room's requests): the tool request is what a model may send, the ``*Body`` what the HTTP API takes.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from memlane.graph import (
    DEFAULT_NEIGHBOUR_DEPTH,
    DEFAULT_PATH_DEPTH,
    DEFAULT_PATH_LIMIT,
    MAX_GRAPH_DEPTH,
    MAX_PATHS,
)
from memlane.graph.predicates import FACT_METHODS
from memlane.operations.fields import (
    DETAIL_DOC,
    NOW_DOC,
    SESSION_DOC,
    Check,
    Detail,
    Fraction,
    Instant,
    Label,
    Limit,
    Request,
    ScopeField,
    Text,
    choice_field,
    rating_field,
)
from memlane.validation import check_limit

__all__ = [
    "EntityTimelineRequest",
    "FindPathsBody",
    "FindPathsRequest",
    "NeighboursBody",
    "NeighboursRequest",
    "QueryFactsBody",
    "QueryFactsRequest",
    "RememberFactBody",
    "RememberFactRequest",
]

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
    detail: Detail | None = Field(default=None, description=DETAIL_DOC)


class RememberFactBody(RememberFactRequest):
    """``POST /v1/facts``: a fact for the key's tenant."""

    subject_type: Label | None = Field(default=None, description="Kind of a new subject ('person'...).")
    object_type: Label | None = Field(default=None, description="Kind of a new object entity.")
    source_session_id: Label | None = Field(default=None, description="The conversation it came from.")
    method: choice_field(FACT_METHODS) | None = Field(  # type: ignore[valid-type]
        default=None, description="How it got in: 'explicit' (default), 'llm' or 'import'."
    )
    now: Instant | None = Field(default=None, description=NOW_DOC)
    session_id: Label | None = Field(default=None, description=SESSION_DOC)


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
    detail: Detail | None = Field(default=None, description=DETAIL_DOC)


class QueryFactsBody(QueryFactsRequest):
    """``POST /v1/facts/query``."""

    session_id: Label | None = Field(default=None, description=SESSION_DOC)
    scope: ScopeField | None = Field(default=None, description="'session' or 'tenant' (default tenant).")
    now: Instant | None = Field(default=None, description=NOW_DOC)


class EntityTimelineRequest(Request):
    """How the facts about an entity changed (the ``entity_timeline`` tool)."""

    OPERATION: ClassVar[str] = "entity_timeline"

    entity: Label = Field(description=_ENTITY)
    detail: Detail | None = Field(default=None, description=DETAIL_DOC)


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
    detail: Detail | None = Field(default=None, description=DETAIL_DOC)


class NeighboursBody(NeighboursRequest):
    """``POST /v1/graph/neighbours``."""

    session_id: Label | None = Field(default=None, description=SESSION_DOC)
    scope: ScopeField | None = Field(default=None, description="'session' or 'tenant' (default tenant).")
    now: Instant | None = Field(default=None, description=NOW_DOC)


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
    detail: Detail | None = Field(default=None, description=DETAIL_DOC)


class FindPathsBody(FindPathsRequest):
    """``POST /v1/graph/paths``."""

    session_id: Label | None = Field(default=None, description=SESSION_DOC)
    scope: ScopeField | None = Field(default=None, description="'session' or 'tenant' (default tenant).")
    now: Instant | None = Field(default=None, description=NOW_DOC)
