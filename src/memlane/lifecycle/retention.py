"""Retention: episodes older than ``retention_days`` leave recall and are pruned.

With ``MemoryConfig(retention_days=N)``, recall filters out episodes created more than ``N``
days before its ``now`` (:func:`retained_after`), and :func:`prune` deletes them from the
whole store (every tenant), in one statement. Never-forget episodes (importance in a
never-forget band of the forgetting policy: >= 9 by default) are kept whatever their age.
:class:`memlane.EpisodicMemory` prunes opportunistically after a write with probability
``prune_probability``, and on demand (:meth:`memlane.EpisodicMemory.prune`).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from memlane.stores.base import EpisodeFilter, Store

__all__ = ["prune", "retained_after"]


def retained_after(now: datetime, retention_days: float | None) -> datetime | None:
    """Oldest ``created_at`` still retained at ``now``, or ``None`` when everything is kept."""
    return None if retention_days is None else now - timedelta(days=retention_days)


def prune(
    store: Store,
    *,
    retention_days: float | None,
    never_forget_from: float | None,
    at: datetime,
    dry_run: bool = False,
) -> int:
    """Delete every episode (table-wide, all tenants) created before ``at - retention_days``.

    Args:
        store: Where the episodes are.
        retention_days: Days episodes are kept, or ``None`` = keep everything (nothing deleted).
        never_forget_from: Episodes with importance >= this are kept; ``None`` = no exemption.
        at: Reference time (UTC).
        dry_run: Only count what would be deleted (everything minus what retention keeps).

    Returns:
        Number of episodes deleted, or that would be with ``dry_run``.

    Raises:
        StoreError: the store failed.
    """
    cutoff = retained_after(at, retention_days)
    if cutoff is None:
        return 0
    if dry_run:
        kept = store.stats(EpisodeFilter(retained_after=cutoff, never_forget_from=never_forget_from))
        return store.stats(EpisodeFilter()).episodes - kept.episodes
    return store.delete_created_before(cutoff, keep_importance_from=never_forget_from)
