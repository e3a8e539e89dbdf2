"""Value types: episodes, scopes, recall hits and their score breakdown.

All are frozen dataclasses. Timestamps are timezone-aware UTC ``datetime``s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from memlane import wire

__all__ = [
    "SIGNALS",
    "AppliedBoost",
    "Contradiction",
    "Contribution",
    "Episode",
    "RecallHit",
    "Scope",
    "ScoreBreakdown",
]

UNSET_TIME = datetime.min.replace(tzinfo=UTC)
"""Placeholder default of :class:`Episode`'s ``valid_from``/``recorded_at``: replaced by
``created_at`` at construction (never stored)."""


class Scope(StrEnum):
    """Which episodes a memory may see when it recalls.

    * ``session`` (default): only episodes of the same tenant **and** session.
    * ``tenant``: every session of the same tenant.
    * ``global``: every episode in the store, of every tenant.

    Writes always record the memory's own ``tenant_id`` and ``session_id``; the
    scope only widens or narrows what a recall may return.
    """

    SESSION = "session"
    TENANT = "tenant"
    GLOBAL = "global"


@dataclass(frozen=True, slots=True)
class Episode:
    """One remembered event: an immutable row of the append-only ``episodes`` table.

    Attributes:
        id: Opaque unique id (32 lowercase hex characters for generated ids).
        tenant_id: Owner tenant (e.g. a user or organisation id).
        session_id: Session the episode was remembered in.
        event_type: Caller-chosen category, e.g. ``"preference"`` or ``"booking_failed"``.
        content: The remembered text (non-empty).
        tags: Normalised tags (stripped, lower-cased, whitespace-collapsed, unique,
            in first-seen order).
        importance: Rating in [1.0, 10.0], or ``None`` when unrated (scored as a
            neutral 0.5, see :mod:`memlane.recall.ranking`).
        created_at: When the event happened (UTC); drives recency and retention.
        metadata: Free-form JSON-serialisable mapping supplied by the caller.
        embedding_model: Id of the model that embedded ``content``, or ``None`` if
            the episode has no vector.
        valid_from: Valid time (Snodgrass 1999, *Developing Time-Oriented Database
            Applications in SQL*): when what the episode says became true (UTC). Defaults to
            ``created_at``.
        valid_until: When it stopped being true (exclusive), or ``None`` = still true. Set when
            a later episode supersedes this one.
        recorded_at: Transaction time: when memlane stored the episode (UTC). Defaults to
            ``created_at`` here; :class:`memlane.EpisodicMemory` records the clock's now.
        invalidated_at: Transaction time at which memlane retired the episode (superseded),
            or ``None`` while it is current.
        superseded_by: Id of the episode that superseded this one, or ``None``.
        supersede_reason: Why it was superseded (e.g. ``"auto: contradiction 0.93"``), or
            ``None``.
        archived_at: When :meth:`memlane.EpisodicMemory.forget` archived it (UTC), or ``None``
            while active. Archived episodes are hidden from recall unless asked for.
        session_scoped: ``True`` = removed when its session ends
            (:meth:`memlane.EpisodicMemory.end_session`).
        retrieve_count: How many ranked recalls returned the episode (>= 0; see
            ``MemoryConfig.track_retrievals``). A merged episode carries its originals' sum.
        last_retrieved_at: When a ranked recall last returned it (UTC), or ``None`` = never.
    """

    id: str
    tenant_id: str
    session_id: str
    event_type: str
    content: str
    tags: tuple[str, ...]
    importance: float | None
    created_at: datetime
    metadata: Mapping[str, Any] = field(default_factory=dict)
    embedding_model: str | None = None
    valid_from: datetime = UNSET_TIME
    valid_until: datetime | None = None
    recorded_at: datetime = UNSET_TIME
    invalidated_at: datetime | None = None
    superseded_by: str | None = None
    supersede_reason: str | None = None
    archived_at: datetime | None = None
    session_scoped: bool = False
    retrieve_count: int = 0
    last_retrieved_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.valid_from == UNSET_TIME:
            object.__setattr__(self, "valid_from", self.created_at)
        if self.recorded_at == UNSET_TIME:
            object.__setattr__(self, "recorded_at", self.created_at)

    def valid_at(self, at: datetime) -> bool:
        """Whether the episode was true at ``at``: ``valid_from <= at < valid_until``."""
        return self.valid_from <= at and (self.valid_until is None or at < self.valid_until)

    def known_at(self, at: datetime) -> bool:
        """Whether memlane held the episode as current at ``at``:
        ``recorded_at <= at`` and (``invalidated_at`` is ``None`` or ``> at``)."""
        return self.recorded_at <= at and (self.invalidated_at is None or at < self.invalidated_at)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict (ISO-8601 UTC times); the export format and the wire form.

        Every field but ``embedding_model``, encoded by :func:`memlane.wire.episode` (the one
        encoder of every interface).

        The bi-temporal fields (``valid_from``, ``valid_until``, ``recorded_at``,
        ``invalidated_at``, ``superseded_by``, ``supersede_reason``) and the forgetting
        fields (``archived_at``, ``session_scoped``) are included so an export re-imports to
        the same history.
        """
        return wire.episode(self)


SIGNALS = ("relevance", "recency", "importance")
"""The three signals of a score, in the order of :attr:`ScoreBreakdown.contributions`."""


@dataclass(frozen=True, slots=True)
class Contribution:
    """What one signal adds to a hit's score: ``points = weight * value``.

    Attributes:
        signal: ``"relevance"``, ``"recency"`` or ``"importance"`` (:data:`SIGNALS`).
        value: The signal, in [0, 1].
        weight: Its weight in the score: ``1 / (1 + tie_band)`` for relevance,
            ``tie_band * w_s / (w_rel + w_rec + w_imp) / (1 + tie_band)`` for recency and importance
            (``w_s`` from the recall's :class:`~memlane.config.profile.RankingWeights`).
        points: ``weight * value``; the points of a breakdown's contributions add up to its score.
    """

    signal: str
    value: float
    weight: float
    points: float


@dataclass(frozen=True, slots=True)
class AppliedBoost:
    """A boost that lifted a hit's relevance: ``relevance = 1 - (1 - r) * (1 - strength)``.

    Attributes:
        name: ``"entity"`` (the query names the one tag the episode carries), ``"time_window"``
            (the episode lies in the time window the query names) or ``"graph"`` (the episode is
            linked in the knowledge graph to entities the query names or to their neighbours).
        strength: The boost's strength in [0, 1] (from the ranking profile; for ``"graph"`` the
            profile's strength times the episode's graph signal).
    """

    name: str
    strength: float


@dataclass(frozen=True, slots=True)
class ScoreBreakdown:
    """Why a hit ranked where it did: the ranking's own account, which every display only renders.

    Every signal is a float in [0, 1], higher is better.

    Attributes:
        relevance: How well the episode matches the query; it decides the order (relevance
            first). Base relevance (``base_relevance``) depends on ``retrieval``: ``"dense"`` ->
            ``dense``; ``"keyword"`` -> ``keyword``; ``"hybrid"`` -> the profile's ``fusion``
            (default ``w * dense + (1 - w) * keyword`` with ``w = 1 - 0.6 * (1 - coverage)``,
            ``coverage`` the share of the recall's candidates matching a query term). It is then
            blended with the episode's
            session neighbours (conversation context) and lifted by ``boosts``
            (:mod:`memlane.recall.relevance`).
        recency: ``decay ** age_days`` (age from ``created_at`` to the recall's ``now``); with
            ``MemoryConfig(forgetting=True)``, ``0.5 ** (age_days / half_life)`` with the
            half-life of the episode's importance band (1 for never-forget episodes; see
            :mod:`memlane.lifecycle.forgetting`).
        importance: ``importance / 10``, or 0.5 for unrated episodes.
        score: ``sum(c.points for c in contributions)``, i.e. ``(relevance + band * (w_rec*recency
            + w_imp*importance) / (w_rel+w_rec+w_imp)) / (1 + band)`` with the weights' band (the
            profile's 0.1 unless the preset widens it): recency and importance only reorder hits whose
            relevance differs by less than the tie band (relevance-first; :mod:`memlane.recall.ranking`).
            With ``weights="seed"`` it is the seed formula, the weighted mean of ``clip(cosine, 0, 1)``,
            recency and importance (relevance is then the clipped cosine: no keywords, context or boosts).
        dense: ``clip((cosine - 0.1) / 0.6, 0, 1)`` of the embeddings, or ``None`` when not
            computed (keyword-only recall, or the episode has no vector).
        keyword: Keyword match strength from per-scope BM25, ``(bm25 / best) * (1 - exp(-best /
            4))``, or ``None`` when the episode matched no query term or keywords were not used.
        retrieval: The mode that produced ``relevance``: ``"hybrid"``, ``"dense"`` or ``"keyword"``.
        fallback: ``True`` when the embedder failed at query time and recall fell back to
            keyword-only relevance (``retrieval == "keyword"``).
        in_window: Whether ``created_at`` lies in the time window the query named ("last
            May"), or ``None`` when it named none (see :mod:`memlane.recall.temporal`).
        own_relevance: ``relevance`` without the neighbours' contribution (the episode's own
            evidence, boosts included); ``min_relevance`` filters on it.
        decided_by: The signal that gave this hit its lead over the candidate ranked right after
            it: the one whose points differ most in its favour (``"relevance"``, ``"recency"`` or
            ``"importance"``), ``"order"`` when the two scores are equal (the newer episode goes
            first), and ``"relevance"`` when nothing ranks below it. A relevance lead larger than
            ``tie_band`` is always decided by relevance.
        fusion: How ``base_relevance`` combined dense and keyword evidence (``"convex"``,
            ``"noisy_or"`` or ``"rrf"``), or ``None`` when only one of them was used.
        base_relevance: The fused dense/keyword relevance before context and boosts.
        boosts: The boosts that lifted ``relevance`` (:class:`AppliedBoost`), in the order applied.
        agent_discount: ``d`` when the hit is the agent's own turn and the query does not address the
            agent: ``relevance`` and ``own_relevance`` were multiplied by ``1 - d`` after the boosts
            (:class:`memlane.config.profile.Speakers`); ``None`` when not discounted.
        contributions: One :class:`Contribution` per signal (:data:`SIGNALS` order); their
            points add up to ``score``.
        tie_band: The relevance lead, in relevance units, within which recency and importance can
            still reorder two hits: ``band * (w_rec + w_imp) / (w_rel + w_rec + w_imp)``, or for the seed
            formula ``(w_rec + w_imp) / w_rel`` (``None`` when relevance weighs nothing).
        lead: ``score`` minus the score of the candidate ranked right after it, or ``None`` when
            nothing ranks below it.

    See :mod:`memlane.recall.ranking` for the formulas and their sources.
    """

    relevance: float
    recency: float
    importance: float
    score: float
    dense: float | None = None
    keyword: float | None = None
    retrieval: str = "dense"
    fallback: bool = False
    in_window: bool | None = None
    own_relevance: float | None = None
    decided_by: str | None = None
    fusion: str | None = None
    base_relevance: float | None = None
    boosts: tuple[AppliedBoost, ...] = ()
    agent_discount: float | None = None
    contributions: tuple[Contribution, ...] = ()
    tie_band: float | None = None
    lead: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return every field as a plain, JSON-serialisable dict (``wire.breakdown``)."""
        out = wire.breakdown(self)
        assert out is not None
        return out


@dataclass(frozen=True, slots=True)
class Contradiction:
    """An episode that a new one may contradict (:meth:`memlane.EpisodicMemory.find_contradictions`).

    Attributes:
        episode: The current (not superseded) episode proposed for retirement.
        score: Cosine similarity of the two contents' embeddings, in [-1, 1] (clipped to 1).
        reason: Why it is a candidate: ``"same event_type"`` and/or ``"shared tags: a, b"``,
            then what was judged, e.g. ``"value: paris -> berlin"`` or ``"negation: negated"``.
        confidence: How likely the two contradict, in [0, 1]
            (:func:`memlane.lifecycle.contradiction.judge`); at least the threshold asked for.
    """

    episode: Episode
    score: float
    reason: str
    confidence: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        """``{"episode": <full episode>, "score", "reason"}`` (:mod:`memlane.wire`)."""
        return {"episode": wire.episode(self.episode), "score": self.score, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class RecallHit:
    """One recalled episode.

    Attributes:
        episode: The stored episode.
        breakdown: The score breakdown for ranked recalls (a ``query`` was given);
            ``None`` for structured lookups, which are ordered newest first and
            never touch the embedder.
    """

    episode: Episode
    breakdown: ScoreBreakdown | None = None

    @property
    def score(self) -> float | None:
        """The combined score in [0, 1], or ``None`` for a structured lookup."""
        return None if self.breakdown is None else self.breakdown.score

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict: the episode plus ``breakdown`` (or ``None``)."""
        return wire.hit(self)

    def to_compact_dict(self) -> dict[str, Any]:
        """The compact form a model reads (id, content, event_type, when, tags, importance,
        score, a one-line why; :func:`memlane.wire.compact_hit`)."""
        return wire.compact_hit(self)
