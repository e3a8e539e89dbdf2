"""OpenAPI response models of the HTTP API, generated from the value types' dataclass fields.

The responses themselves are the :mod:`memlane.wire` dicts, sent as they are; these pydantic
models only document them. They are built field by field from :class:`memlane.Episode`,
:class:`memlane.ScoreBreakdown` and the session types (:func:`dataclasses.fields` and their
type hints), so a field added to a value type appears in the OpenAPI document too, and the
documentation can never list a field the response lacks. Timestamps are documented as
``date-time`` strings (the one form of :func:`memlane.wire.timestamp`).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from memlane import Episode, ScoreBreakdown
from memlane.sessions import SessionEpisode, SessionSnippet

__all__ = [
    "BreakdownOut",
    "CompactEpisodeOut",
    "CompactReportOut",
    "ContextOut",
    "ContradictionsOut",
    "EpisodeList",
    "EpisodeOut",
    "ForgetReportOut",
    "HitOut",
    "MessagesOut",
    "PruneOut",
    "RecallResponse",
    "RecentSessionsOut",
    "SearchSessionsOut",
    "SessionOut",
    "SnippetOut",
    "StatsOut",
    "SupersedeOut",
    "model_for",
]

_OMITTED = {Episode: frozenset({"embedding_model"})}


def _wire_type(hint: Any) -> Any:
    """The JSON type of a dataclass field's type hint (datetimes are strings)."""
    origin = typing.get_origin(hint)
    if hint is datetime:
        return str
    if origin in (types.UnionType, typing.Union):
        return typing.Union[tuple(_wire_type(a) for a in typing.get_args(hint))]  # noqa: UP007
    if origin is tuple:
        return list[Any]
    if origin in (Mapping, dict) or hint is Mapping:
        return dict[str, Any]
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return dict[str, Any]
    return hint


def model_for(cls: type[Any], name: str, **extra: Any) -> type[BaseModel]:
    """A pydantic model with one field per dataclass field of ``cls`` (plus ``extra`` fields).

    Args:
        cls: A dataclass (e.g. :class:`memlane.Episode`).
        name: The model's name in the OpenAPI document.
        extra: More fields, as ``(type, default or FieldInfo)`` pairs.
    """
    hints = typing.get_type_hints(cls)
    omitted = _OMITTED.get(cls, frozenset())
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in omitted:
            continue
        hint = _wire_type(hints[f.name])
        if hints[f.name] is datetime or datetime in typing.get_args(hints[f.name]):
            fields[f.name] = (hint, Field(json_schema_extra={"format": "date-time"}))
        else:
            fields[f.name] = (hint, ...)
    fields.update(extra)
    doc = (cls.__doc__ or "").strip().split("\n")[0]
    model: type[BaseModel] = create_model(name, __doc__=doc, **fields)
    return model


BreakdownOut = model_for(ScoreBreakdown, "ScoreBreakdownOut")
EpisodeOut = model_for(Episode, "EpisodeOut")
HitOut = model_for(
    Episode,
    "HitOut",
    breakdown=(
        BreakdownOut | None,
        Field(description="Why it ranked there; null for a listing without query."),
    ),
)
SessionOut = model_for(SessionEpisode, "SessionOut")
SnippetOut = model_for(SessionSnippet, "SnippetOut")


class CompactEpisodeOut(BaseModel):
    """The compact form (``detail: "compact"``): what a model needs to read an episode."""

    model_config = ConfigDict(extra="allow")

    id: str
    content: str
    event_type: str
    when: str = Field(json_schema_extra={"format": "date-time"})
    tags: list[str]
    importance: float | None
    score: float | None = None
    why: str | None = None


class RecallResponse(BaseModel):
    """Hits, best first (ranked) or newest first (no query); ``detail: "compact"`` gives compact hits."""

    count: int
    ranked: bool = Field(description="True when a query was given and hits carry a breakdown.")
    hits: list[HitOut | CompactEpisodeOut]  # type: ignore[valid-type]


class EpisodeList(BaseModel):
    """Episodes (newest first for listings, oldest first for a history)."""

    count: int
    episodes: list[EpisodeOut]  # type: ignore[valid-type]


AnyEpisodeOut = EpisodeOut | CompactEpisodeOut
"""The full form (HTTP's default) or the compact one (``detail: "compact"``)."""


class SupersedeOut(BaseModel):
    """The new episode and the id of the one it replaced."""

    episode: AnyEpisodeOut  # type: ignore[valid-type]
    superseded: str


class CandidateOut(BaseModel):
    """A current episode the new text may contradict."""

    episode: AnyEpisodeOut  # type: ignore[valid-type]
    score: float
    reason: str


class ContradictionsOut(BaseModel):
    """Candidates, most similar first."""

    count: int
    candidates: list[CandidateOut]


class CompactMessageOut(BaseModel):
    """One turn of a compact snippet."""

    model_config = ConfigDict(extra="allow")

    role: str
    content: Any = None
    matched: bool | None = None


class CompactSnippetOut(BaseModel):
    """A compact passage (``detail: "compact"``)."""

    session_id: str
    when: str = Field(json_schema_extra={"format": "date-time"})
    score: float
    why: str
    messages: list[CompactMessageOut]


class SearchSessionsOut(BaseModel):
    """Passages, best first."""

    count: int
    snippets: list[SnippetOut | CompactSnippetOut]  # type: ignore[valid-type]


class RecentSessionsOut(BaseModel):
    """Sessions, newest first."""

    count: int
    sessions: list[SessionOut]  # type: ignore[valid-type]


class ContextItemOut(BaseModel):
    """One item of the block: ``at`` and ``breakdown`` in the full form, ``when`` in the compact one."""

    model_config = ConfigDict(extra="allow")

    kind: str
    label: str


class ContextOut(BaseModel):
    """The ``[Past Conversation Context]`` block (the full form adds budget, tokenizer and counts)."""

    model_config = ConfigDict(extra="allow")

    text: str
    tokens: int
    items: list[ContextItemOut]
    relevant: bool = Field(
        description="Whether anything reached the relevance floor (false: the text says nothing was found)."
    )


class MessagesOut(BaseModel):
    """The messages with the context block inserted."""

    messages: list[dict[str, Any]]


class StatsOut(BaseModel):
    """What the key's tenant holds."""

    model_config = ConfigDict(extra="allow")

    episodes: int
    active: int


class ForgetReportOut(BaseModel):
    """What a forgetting pass did (or would do)."""

    model_config = ConfigDict(extra="allow")

    dry_run: bool
    count: int
    episodes: list[dict[str, Any]]


class CompactReportOut(BaseModel):
    """What a compaction did (or would do)."""

    model_config = ConfigDict(extra="allow")

    dry_run: bool
    archived: int
    merges: list[dict[str, Any]]


class PruneOut(BaseModel):
    """Episodes and stored conversations deleted (or that would be) by the retention."""

    dry_run: bool
    all_tenants: bool = Field(description="Store-wide (an operator key) or the key's tenant only.")
    episodes: int
    sessions: int = Field(description="Stored conversations (by their ended_at).")
