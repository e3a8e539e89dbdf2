"""Reading a memory: the recall and the plain lookups behind :class:`memlane.EpisodicMemory`.

Free functions over a :class:`memlane.context.MemoryContext`: :func:`recall_episodes` checks a
recall, builds its scoped filter and runs :mod:`memlane.recall.pipeline`; :func:`iter_episodes`,
:func:`count` and :func:`stats` read the episodes in scope. Their documentation is the
facade's (:meth:`memlane.EpisodicMemory.recall_episodes` and the others).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from memlane.context import MemoryContext
from memlane.models import Episode, RecallHit
from memlane.recall.pipeline import RecallQuery, ranked_recall, scoped_recall_filter
from memlane.recall.ranking import RETRIEVAL_MODES, RankingWeights, resolve_weights
from memlane.stores.base import EpisodeFilter, StoreStats
from memlane.validation import (
    check_choice,
    check_flag,
    check_fraction,
    check_identifier,
    check_limit,
    check_query,
    normalize_tags,
)

__all__ = ["RecallOptions", "count", "iter_episodes", "recall_episodes", "stats"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RecallOptions:
    """The keyword options of :meth:`memlane.EpisodicMemory.recall_episodes` (unchecked; see there)."""

    now: datetime | None = None
    weights: RankingWeights | str | Mapping[str, float] | None = None
    retrieval: str | None = None
    min_relevance: float | None = None
    as_of: datetime | None = None
    known_at: datetime | None = None
    include_archived: bool = False


def check_retrieval(ctx: MemoryContext, retrieval: str | None) -> str:
    """``retrieval`` (default ``config.retrieval``) checked to be a retrieval mode.

    Raises:
        ValidationError: not one of :data:`memlane.recall.ranking.RETRIEVAL_MODES`.
    """
    mode = ctx.config.retrieval if retrieval is None else retrieval
    check_choice(mode, "retrieval", tuple(RETRIEVAL_MODES))
    return mode


def check_min_relevance(ctx: MemoryContext, min_relevance: float | None) -> float:
    """``min_relevance`` (default ``config.min_relevance``) checked to be a number in [0, 1].

    Raises:
        ValidationError: not a number in [0, 1].
    """
    threshold = ctx.config.min_relevance if min_relevance is None else min_relevance
    check_fraction(threshold, "min_relevance")
    return float(threshold)


def recall_episodes(
    ctx: MemoryContext,
    query: str | None,
    event_type: str | None,
    tags: Sequence[str] | str | None,
    limit: int | None,
    options: RecallOptions,
) -> list[RecallHit]:
    """:meth:`memlane.EpisodicMemory.recall_episodes` (arguments, result and errors as there)."""
    ctx.check_open()
    limit = ctx.config.default_limit if limit is None else check_limit(limit)
    at = ctx.now(options.now)
    weights = resolve_weights(options.weights, ctx.config.ranking_weights)
    mode = check_retrieval(ctx, options.retrieval)
    threshold = check_min_relevance(ctx, options.min_relevance)
    flt = ctx.filter(
        event_type=None if event_type is None else check_identifier(event_type, "event_type"),
        tags=normalize_tags(tags),
        now=at,
    )
    flt = scoped_recall_filter(
        flt,
        at=at,
        as_of=options.as_of,
        known_at=options.known_at,
        include_archived=check_flag(options.include_archived, "include_archived"),
    )
    if query is None:
        return _hint_if_empty(ctx, [RecallHit(episode=ep) for ep in ctx.store.list_recent(flt, limit)], flt)
    recall = RecallQuery(
        text=check_query(query),
        limit=limit,
        at=at,
        weights=weights,
        retrieval=mode,
        min_relevance=threshold,
        local_now=options.now,
    )
    return _hint_if_empty(ctx, ranked_recall(ctx.store, ctx.config, ctx.embed_query, recall, flt), flt)


def _hint_if_empty(ctx: MemoryContext, hits: list[RecallHit], flt: EpisodeFilter) -> list[RecallHit]:
    """``hits``; when a session-scoped recall found nothing because its session holds no episode
    (under the filters) while other sessions of the tenant do, log that the scope is the session.

    Two structured lookups (limit 1), only for an empty result: the session under the filters,
    then the tenant. A session that has episodes, none of them relevant enough, gets no hint.
    The hint is a ``WARNING`` on the ``memlane.recall.methods`` logger (the library configures no
    handler: Python prints warnings to stderr by default) naming ``scope="tenant"``.
    """
    if hits or flt.session_id is None or ctx.store.list_recent(flt, 1):
        return hits
    if ctx.store.list_recent(replace(flt, session_id=None), 1):
        logger.warning(
            "recall in session %r of tenant %r found nothing: the session holds no episode (under "
            "these filters) but other sessions of the tenant do, and the scope is 'session' (the "
            "default); open the memory with MemoryConfig(scope='tenant') (YAML episodic_memory.scope: "
            'tenant, CLI --scope tenant, HTTP "scope": "tenant") to recall across sessions',
            ctx.session_id,
            ctx.tenant_id,
        )
    return hits


def iter_episodes(
    ctx: MemoryContext, event_type: str | None, tags: Sequence[str] | str | None
) -> Iterator[Episode]:
    """:meth:`memlane.EpisodicMemory.iter_episodes` (every visible episode, oldest first)."""
    ctx.check_open()
    ctx.store.flush()
    flt = ctx.filter(
        event_type=None if event_type is None else check_identifier(event_type, "event_type"),
        tags=normalize_tags(tags),
        now=ctx.clock.now(),
    )
    return ctx.store.iter_episodes(flt)


def count(ctx: MemoryContext) -> int:
    """:meth:`memlane.EpisodicMemory.count` (episodes in scope and not expired)."""
    ctx.check_open()
    return ctx.store.count(ctx.scope_filter(ctx.clock.now()))


def stats(ctx: MemoryContext) -> StoreStats:
    """:meth:`memlane.EpisodicMemory.stats` (summary of the episodes in scope and not expired)."""
    ctx.check_open()
    return ctx.store.stats(ctx.scope_filter(ctx.clock.now()))
