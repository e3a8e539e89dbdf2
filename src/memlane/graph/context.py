"""``recall_context``: what memory holds about an entity or a query (seed 002's ``load_customer_context``).

The valid facts about the entity (or about the entities a query names, found by
:func:`~memlane.mentions.extract_mentions`), ranked, with the ranked episodes of
``recall_episodes`` for the same text and the episodes linked to those entities on write.

Fact score (in [0, 1], higher is better)::

    score = confidence * (0.5 + importance / 20)       # importance 1-10; unrated counts as 5

so a certain, important fact (1.0, 10) scores 1.0, a certain unrated one 0.75, and confidence
scales everything (a 0.7 guess of importance 5 scores 0.525). Ties: newer ``valid_from`` first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memlane.context import MemoryContext
from memlane.graph import methods as graph
from memlane.mentions import extract_mentions
from memlane.models import Episode, RecallHit
from memlane.recall import methods as recall
from memlane.recall.methods import RecallOptions
from memlane.stores.graph_base import Entity, Fact
from memlane.validation import check_limit, check_text

__all__ = ["RankedFact", "RecallContext", "fact_score", "recall_context"]


def fact_score(fact: Fact) -> dict[str, float]:
    """One fact's score breakdown (module docstring): ``confidence``, ``importance``, ``score``."""
    importance = 5.0 if fact.importance is None else fact.importance
    return {
        "confidence": fact.confidence,
        "importance": importance / 10,
        "score": round(fact.confidence * (0.5 + importance / 20), 6),
    }


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


def _entities(ctx: MemoryContext, text: str) -> list[Entity]:
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
    entities = _entities(ctx, text)
    facts: dict[str, Fact] = {}
    for entity in entities:
        for fact in graph.query_facts(ctx, entity.id, as_of=as_of, now=now):
            facts.setdefault(fact.id, fact)
    ranked = sorted(
        (RankedFact(f, fact_score(f)) for f in facts.values()),
        key=lambda r: (-r.breakdown["score"], -r.fact.valid_from.timestamp(), r.fact.id),
    )[:cap]
    hits = recall.recall_episodes(ctx, text, None, None, cap, RecallOptions(now=now, as_of=as_of))
    seen = {h.episode.id for h in hits}
    linked = [e for entity in entities for e in graph.episodes_about(ctx, entity.id, cap) if e.id not in seen]
    unique = list({e.id: e for e in linked}.values())[:cap]
    return RecallContext(entities, ranked, hits, unique)
