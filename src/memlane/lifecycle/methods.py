"""Writing and the lifecycle of episodes, behind :class:`memlane.EpisodicMemory`.

Free functions over a :class:`memlane.context.MemoryContext`: writing
(:func:`remember_episode`, :func:`remember_episodes`, :func:`delete_episode`), superseding
(:func:`supersede`, :func:`remember_superseding`), :func:`history`,
:func:`find_contradictions`, retention (:func:`prune`, :func:`maybe_prune`), :func:`forget`,
:func:`compact` and :func:`end_session`. Each checks its arguments, applies the context's
scope and runs the job of its module (:mod:`~memlane.lifecycle.supersession`,
:mod:`~memlane.lifecycle.retention`, :mod:`~memlane.lifecycle.forgetting`,
:mod:`~memlane.lifecycle.compaction`). Their documentation is the facade's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime

from memlane.context import MemoryContext
from memlane.episode_input import EpisodeInput, build_episodes
from memlane.errors import MemlaneError
from memlane.graph import methods as graph
from memlane.lifecycle import compaction, forgetting, retention, supersession
from memlane.lifecycle.compaction import CompactionReport
from memlane.lifecycle.forgetting import ForgetReport
from memlane.models import Contradiction, Episode
from memlane.stores.base import IndexReport
from memlane.validation import check_flag, check_identifier, check_limit, check_text

__all__ = [
    "compact",
    "delete_episode",
    "end_session",
    "find_contradictions",
    "forget",
    "history",
    "maybe_prune",
    "prune",
    "remember_episode",
    "remember_episodes",
    "remember_superseding",
    "supersede",
]

logger = logging.getLogger(__name__)

AUTO_SUPERSEDE_LIMIT = 100
"""Contradiction candidates considered when ``config.auto_supersede`` retires them on write."""


# -- writing ------------------------------------------------------------------------------


def remember_episode(ctx: MemoryContext, item: EpisodeInput, supersedes: Sequence[str] | None) -> Episode:
    """:meth:`memlane.EpisodicMemory.remember_episode` (arguments, result and errors as there)."""
    if supersedes:
        return remember_superseding(ctx, item, supersedes, reason=None)
    if ctx.config.auto_supersede:
        return remember_superseding(ctx, item, (), reason=None, auto=True)
    return remember_episodes(ctx, [item])[0]


def remember_episodes(ctx: MemoryContext, items: Iterable[EpisodeInput]) -> list[Episode]:
    """:meth:`memlane.EpisodicMemory.remember_episodes`: one embedder call, one transaction."""
    ctx.check_open()
    episodes = build_episodes(
        list(items),
        ctx.clock.now(),
        tenant_id=ctx.tenant_id,
        session_id=ctx.session_id,
        embedding_model=ctx.embedder.model_id,
        default_importance=ctx.config.importance,
    )
    if not episodes:
        return []
    vectors = ctx.embed([ep.content for ep in episodes], "remember")
    if vectors is None:
        episodes = [replace(ep, embedding_model=None) for ep in episodes]
    ctx.store.insert(episodes, vectors)
    link_entities(ctx, episodes)
    maybe_prune(ctx)
    return episodes


def link_entities(ctx: MemoryContext, episodes: Sequence[Episode]) -> None:
    """Link new episodes to their entities (``config.link_entities``); a failure is logged, never raised.

    The links are derived data (:func:`memlane.graph.methods.link_episodes`): the episodes are
    already stored, and a failed link only leaves :meth:`~memlane.EpisodicMemory.episodes_about`
    without them.
    """
    if not ctx.config.link_entities:
        return
    try:
        graph.link_episodes(ctx, episodes)
    except MemlaneError as exc:
        logger.warning("entity links of %d episode(s) not written: %s", len(episodes), exc)


def delete_episode(ctx: MemoryContext, episode_id: str) -> bool:
    """:meth:`memlane.EpisodicMemory.delete_episode` (an out-of-scope id is reported as unknown)."""
    ctx.check_open()
    episode = ctx.store.get(check_identifier(episode_id, "episode_id"))
    if episode is None or not ctx.in_scope(episode):  # an expired episode may be deleted
        return False
    return ctx.store.delete(episode.id, episode.tenant_id)


# -- superseding and contradictions ---------------------------------------------------------


def supersede(ctx: MemoryContext, episode_id: str, item: EpisodeInput, reason: str | None) -> Episode:
    """:meth:`memlane.EpisodicMemory.supersede`: store ``item``, retiring ``episode_id``."""
    return remember_superseding(ctx, item, [check_identifier(episode_id, "episode_id")], reason=reason)


def remember_superseding(
    ctx: MemoryContext,
    item: EpisodeInput,
    old_ids: Sequence[str] | str,
    *,
    reason: str | None,
    auto: bool = False,
) -> Episode:
    """Store ``item``, retiring ``old_ids`` (or, with ``auto``, its contradictions) in the same transaction.

    The shared write path of :meth:`memlane.EpisodicMemory.remember_episode` (``supersedes=``
    or ``config.auto_supersede``) and :meth:`memlane.EpisodicMemory.supersede`.

    Raises:
        ValidationError, EpisodeNotFoundError, EmbeddingError, StoreError: as for
        :meth:`memlane.EpisodicMemory.remember_episode` (nothing is stored).
    """
    ctx.check_open()
    if reason is not None:
        reason = check_text(reason, "reason")
    now = ctx.clock.now()
    episode = ctx.build_episode(item, now)
    olds = supersession.superseded_episodes(old_ids, ctx.get_episode)
    supersessions = [supersession.supersession(old, episode, reason) for old in olds]
    vectors = ctx.embed([episode.content], "remember")
    if vectors is None:
        episode = replace(episode, embedding_model=None)
    elif auto:
        subject = supersession.ContradictionSubject(episode.content, episode.event_type, episode.tags)
        found = supersession.contradictions(
            ctx.store,
            ctx.scope_filter(now),
            subject,
            vectors[0],
            threshold=ctx.config.contradiction_threshold,
            limit=AUTO_SUPERSEDE_LIMIT,
            at=now,
        )
        supersessions = supersession.auto_supersessions(found, episode)
        if supersessions:
            logger.info("auto-superseding %d episode(s) with %s", len(supersessions), episode.id)
    ctx.store.insert([episode], vectors, supersessions)
    link_entities(ctx, [episode])
    maybe_prune(ctx)
    return episode


def find_contradictions(
    ctx: MemoryContext,
    episode_or_text: Episode | str,
    event_type: str | None,
    tags: Sequence[str] | str | None,
    threshold: float | None,
    limit: int,
    now: datetime | None,
) -> list[Contradiction]:
    """:meth:`memlane.EpisodicMemory.find_contradictions` (arguments, result and errors as there)."""
    ctx.check_open()
    limit = check_limit(limit)
    cut = supersession.check_contradiction_threshold(
        ctx.config.contradiction_threshold if threshold is None else threshold
    )
    at = ctx.now(now)
    subject = supersession.contradiction_subject(episode_or_text, event_type, tags)
    vectors = ctx.embed([subject.text], "recall")
    if vectors is None:
        return []
    return supersession.contradictions(
        ctx.store,
        ctx.scope_filter(at),
        subject,
        vectors[0],
        threshold=cut,
        limit=limit,
        at=at,
    )


def history(ctx: MemoryContext, episode_id: str) -> list[Episode]:
    """:meth:`memlane.EpisodicMemory.history`: the supersede chain through ``episode_id``, oldest first."""
    return supersession.history(ctx.store, episode_id, ctx.get_episode, ctx.visible)


# -- retention, forgetting, compaction, sessions ---------------------------------------------


def prune(ctx: MemoryContext, now: datetime | None, *, dry_run: bool, all_tenants: bool = True) -> int:
    """:meth:`memlane.EpisodicMemory.prune`: delete (or count) every expired episode and session."""
    ctx.check_open()
    at, dry_run = ctx.now(now), check_flag(dry_run, "dry_run")  # checked with or without retention
    all_tenants = check_flag(all_tenants, "all_tenants")
    if ctx.config.retention_days is None:
        return 0
    return retention.prune(
        ctx.store,
        retention_days=ctx.config.retention_days,
        never_forget_from=ctx.config.policy.never_forget_from,
        at=at,
        dry_run=dry_run,
        tenant_id=None if all_tenants else ctx.tenant_id,
    )


def optimize(ctx: MemoryContext) -> IndexReport:
    """:meth:`memlane.EpisodicMemory.optimize`: the store's derived search indexes, built now.

    Retrieval counts buffered by earlier recalls are written first, so the indexes see the
    store as every other process does.
    """
    ctx.check_open()
    ctx.store.flush()
    return ctx.store.optimize()


def maybe_prune(ctx: MemoryContext) -> None:
    """Prune expired episodes with probability ``config.prune_probability`` (after a write)."""
    if ctx.config.retention_days is not None and ctx.rng.random() < ctx.config.prune_probability:
        pruned = prune(ctx, None, dry_run=False)
        logger.debug("opportunistic prune removed %d episodes", pruned)


def forget(
    ctx: MemoryContext, now: datetime | None, *, dry_run: bool, threshold: float | None
) -> ForgetReport:
    """:meth:`memlane.EpisodicMemory.forget`: archive (or delete) the episodes in scope that faded."""
    ctx.check_open()
    at = ctx.now(now)
    return forgetting.forget(
        ctx.store,
        ctx.scope_filter(None),
        ctx.config.policy,
        at=at,
        threshold=ctx.config.forget_threshold if threshold is None else threshold,
        action=ctx.config.forget_action,
        dry_run=check_flag(dry_run, "dry_run"),
    )


def compact(
    ctx: MemoryContext,
    *,
    similarity: float,
    never_retrieved_older_than_days: float | None,
    dry_run: bool,
    now: datetime | None,
) -> CompactionReport:
    """:meth:`memlane.EpisodicMemory.compact`: merge near-duplicates and archive stale episodes in scope."""
    ctx.check_open()
    return compaction.compact(
        ctx.store,
        ctx.scope_filter(None),
        similarity=similarity,
        never_retrieved_older_than_days=never_retrieved_older_than_days,
        never_forget_from=ctx.config.policy.never_forget_from,
        at=ctx.now(now),
        dry_run=check_flag(dry_run, "dry_run"),
    )


def end_session(ctx: MemoryContext) -> int:
    """:meth:`memlane.EpisodicMemory.end_session`: delete the session's ``session_scoped`` episodes."""
    ctx.check_open()
    return ctx.store.delete_session_scoped(ctx.tenant_id, ctx.session_id)
