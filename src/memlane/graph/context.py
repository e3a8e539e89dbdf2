"""``recall_context``: what memory holds about an entity or a query (seed 002's ``load_customer_context``).

The valid facts about the entity (or about the entities a query names, found by
:func:`~memlane.mentions.extract_mentions`), ranked, with the ranked episodes of
``recall_episodes`` for the same text and the episodes linked to those entities on write.

Fact score (in [0, 1], higher is better)::

    score = confidence * (0.5 + importance / 20)       # importance 1-10; unrated counts as 5

so a certain, important fact (1.0, 10) scores 1.0, a certain unrated one 0.75, and confidence
scales everything (a 0.7 guess of importance 5 scores 0.525). Ties: newer ``valid_from`` first.

:func:`query_fact_groups` is what the context block takes from the graph: for each entity the
query names, its current facts (ranked as above) as one candidate, scored by the one ranking of
:func:`memlane.recall.ranking.rank` like every other candidate of the block, so the block's token
budget and relevance floor (:func:`memlane.sessions.context.match_strength`) apply to it unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlane.context import MemoryContext
from memlane.graph import methods as graph
from memlane.mentions import extract_mentions
from memlane.models import Episode, RecallHit, ScoreBreakdown
from memlane.recall import methods as recall
from memlane.recall.methods import RecallOptions
from memlane.recall.ranking import CandidateSignals, RankingWeights, RankOptions, rank, resolve_weights
from memlane.stores.graph_base import Entity, Fact, SupportsGraph
from memlane.validation import check_limit, check_text

__all__ = [
    "FactGroup",
    "RankedFact",
    "RecallContext",
    "fact_line",
    "fact_score",
    "query_entities",
    "query_fact_groups",
    "rank_facts",
    "recall_context",
]


def fact_score(fact: Fact) -> dict[str, float]:
    """One fact's score breakdown (module docstring): ``confidence``, ``importance``, ``score``."""
    importance = 5.0 if fact.importance is None else fact.importance
    return {
        "confidence": fact.confidence,
        "importance": importance / 10,
        "score": round(fact.confidence * (0.5 + importance / 20), 6),
    }


def rank_facts(facts: Iterable[Fact]) -> list[RankedFact]:
    """``facts`` with their :func:`fact_score` breakdowns, best first (ties: newer ``valid_from``, id)."""
    return sorted(
        (RankedFact(f, fact_score(f)) for f in facts),
        key=lambda r: (-r.breakdown["score"], -r.fact.valid_from.timestamp(), r.fact.id),
    )


@dataclass(frozen=True, slots=True)
class RankedFact:
    """A fact with its score breakdown (:func:`fact_score`)."""

    fact: Fact
    breakdown: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"fact": self.fact.to_dict(), "breakdown": dict(self.breakdown)}


@dataclass(frozen=True, slots=True)
class RecallContext:
    """What :func:`recall_context` found.

    Attributes:
        entities: The entities the input named (resolved, in the order found).
        facts: Their facts valid at ``as_of`` (or current), best score first.
        episodes: ``recall_episodes`` hits for the input text (with their breakdowns).
        linked: Episodes linked to the entities on write that ``episodes`` does not hold, newest first.
    """

    entities: list[Entity] = field(default_factory=list)
    facts: list[RankedFact] = field(default_factory=list)
    episodes: list[RecallHit] = field(default_factory=list)
    linked: list[Episode] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "entities": [e.to_dict() for e in self.entities],
            "facts": [f.to_dict() for f in self.facts],
            "episodes": [h.to_dict() for h in self.episodes],
            "linked": [e.to_dict() for e in self.linked],
        }


def query_entities(ctx: MemoryContext, text: str) -> list[Entity]:
    """The entities ``text`` names: the whole text as a name or alias, then each mention
    :func:`~memlane.mentions.extract_mentions` finds in it, resolved, in the order found."""
    store = graph.graph_store(ctx)
    names = [text, *(m.name for m in extract_mentions(text))]
    ids: list[str] = []
    for name in names:
        found = graph.resolve_name(ctx, name)
        if found is not None and found not in ids:
            ids.append(found)
    known = store.entities(ctx.tenant_id, ids)
    return [known[i] for i in ids if i in known]


def recall_context(
    ctx: MemoryContext,
    entity_or_query: str,
    *,
    as_of: datetime | None = None,
    limit: int = 10,
    now: datetime | None = None,
) -> RecallContext:
    """:meth:`memlane.EpisodicMemory.recall_context`."""
    text = check_text(entity_or_query, "entity_or_query")
    cap = check_limit(limit)
    entities = query_entities(ctx, text)
    facts: dict[str, Fact] = {}
    for entity in entities:
        for fact in graph.query_facts(ctx, entity.id, as_of=as_of, now=now):
            facts.setdefault(fact.id, fact)
    ranked = rank_facts(facts.values())[:cap]
    hits = recall.recall_episodes(ctx, text, None, None, cap, RecallOptions(now=now, as_of=as_of))
    seen = {h.episode.id for h in hits}
    linked = [e for entity in entities for e in graph.episodes_about(ctx, entity.id, cap) if e.id not in seen]
    unique = list({e.id: e for e in linked}.values())[:cap]
    return RecallContext(entities, ranked, hits, unique)


# -- facts in the context block -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FactGroup:
    """The current facts about one entity a query names: one candidate of the context block.

    Attributes:
        entity: The entity.
        facts: Its facts true at the read's ``now`` (``query_facts(as_of=now)``: ``valid_from <= now <
            valid_until``), best :func:`fact_score` first.
        lines: One readable line per fact (:func:`fact_line`), in the order of ``facts``.
        breakdown: The group's score breakdown from :func:`memlane.recall.ranking.rank`: ``dense``
            is the calibrated cosine between the query and the group's facts (``None`` when no
            vectors were compared: the embedder's fallback), ``importance`` the most important fact's.
    """

    entity: Entity
    facts: tuple[RankedFact, ...]
    lines: tuple[str, ...]
    breakdown: ScoreBreakdown


def fact_line(fact: Fact, names: Mapping[str, str], *, dated: bool = True) -> str:
    """``"Ana lives in Lisbon (since 2024-06-01)"``, ``"acme subscription tier: pro (since ...)"``.

    Args:
        fact: The fact. names: Entity id -> display name (an id missing from it is shown as is).
        dated: Add ``(since <valid_from date>)`` (the block's line); without it, the sentence
            whose meaning is compared with the query.
    """
    subject = names.get(fact.subject, fact.subject)
    relation = fact.predicate.replace("_", " ")
    target = "" if fact.object is None else f" {names.get(fact.object, fact.object)}"
    value = "" if fact.value is None else f": {fact.value}"
    sentence = f"{subject} {relation}{target}{value}"
    return f"{sentence} (since {fact.valid_from.date().isoformat()})" if dated else sentence


def _group_facts(ctx: MemoryContext, query: str, at: datetime) -> list[tuple[Entity, list[RankedFact]]]:
    groups: list[tuple[Entity, list[RankedFact]]] = []
    seen: set[str] = set()
    for entity in query_entities(ctx, query):
        ranked = [
            r
            for r in rank_facts(graph.query_facts(ctx, entity.id, as_of=at, now=at))
            if r.fact.id not in seen
        ]
        seen.update(r.fact.id for r in ranked)  # a fact linking two named entities is shown once
        if ranked:
            groups.append((entity, ranked))
    return groups


def _names(ctx: MemoryContext, groups: Sequence[tuple[Entity, list[RankedFact]]]) -> dict[str, str]:
    ids = {i for _, ranked in groups for r in ranked for i in (r.fact.subject, r.fact.object) if i}
    known = graph.graph_store(ctx).entities(ctx.tenant_id, sorted(ids))
    return {key: entity.name for key, entity in known.items()}


def _cosines(ctx: MemoryContext, query: str, texts: list[str]) -> NDArray[np.float64] | None:
    """Cosines ``[n]`` of ``texts`` to ``query``, or ``None`` when the embedder failed (the fallback).

    The query's vector is the one the block's other searches used (:meth:`MemoryContext.one_query`).
    """
    vector = ctx.embed_query(query)
    if vector is None:
        return None
    found = ctx.embed(texts, "recall")
    return None if found is None else np.asarray(found @ vector, dtype=np.float64)


def query_fact_groups(
    ctx: MemoryContext,
    query: str,
    *,
    now: datetime,
    weights: RankingWeights | str | Mapping[str, float] | None = None,
) -> list[FactGroup]:
    """The current facts about each entity ``query`` names, one scored group per entity, best first.

    Only entities the query names (:func:`query_entities`) contribute, so a query that names none
    gets ``[]`` (as does a store without a graph). Each group is ranked by
    :func:`memlane.recall.ranking.rank` with the memory's profile and ``weights``: its relevance is
    the calibrated cosine between the query and the group's facts as sentences (without their
    dates; one embedder call for every group; the query's vector is the block's; when the embedder
    fails and the fallback is on, the groups are keyword candidates: the query named them),
    its recency 1 (the facts are valid at ``now``), its importance the most important fact's.

    Args:
        ctx: The memory's context (its tenant and scope).
        query: The checked query text.
        now: The read's reference time (UTC).
        weights: Ranking weights or a preset; default the memory's.

    Raises:
        EmbeddingError: the embedder failed and the fallback is off. StoreError: the store failed.
    """
    if not isinstance(ctx.store, SupportsGraph):
        return []
    groups = _group_facts(ctx, query, now)
    if not groups:
        return []
    names = _names(ctx, groups)
    lines = [tuple(fact_line(r.fact, names) for r in ranked) for _, ranked in groups]
    meaning = [". ".join(fact_line(r.fact, names, dated=False) for r in ranked) for _, ranked in groups]
    vectors = _cosines(ctx, query, meaning)
    n = len(groups)
    importance = [
        max((r.fact.importance for r in ranked if r.fact.importance is not None), default=np.nan)
        for _, ranked in groups
    ]
    signals = CandidateSignals(
        created_at_seconds=np.full(n, now.timestamp()),
        importance=np.asarray(importance, dtype=np.float64),
        cosine=vectors,
        keyword=np.ones(n) if vectors is None else None,
    )
    options = RankOptions(
        now_seconds=now.timestamp(),
        limit=n,
        weights=resolve_weights(weights, ctx.config.ranking_weights),
        retrieval="keyword" if vectors is None else "dense",
        fallback=vectors is None,
    )
    return [
        FactGroup(groups[r.index][0], tuple(groups[r.index][1]), lines[r.index], r.breakdown)
        for r in rank(signals, ctx.config.profile, options)
    ]
