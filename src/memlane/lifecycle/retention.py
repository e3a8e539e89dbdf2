"""Retention: episodes older than ``retention_days`` leave every read path and are pruned.

With ``MemoryConfig(retention_days=N)``, an episode created more than ``N`` days before
"now" (:func:`retained_after`) is *expired*: it is gone from every read path of
:class:`memlane.EpisodicMemory` even before it is pruned: ``recall_episodes`` (at its
``now``), ``get_episode``, ``iter_episodes`` (and so export, HTTP ``GET /v1/episodes`` and
``/v1/episodes/{id}``, the inspector), ``history``, ``find_contradictions``, ``count`` and
``stats`` (these two count what can be read; the rows still stored until a prune are
counted by ``prune(dry_run=True)``), and a stored conversation whose ``ended_at`` is that
old is gone from ``sessions.get_session``/``recall_recent``/``search_sessions``. An
expired episode can no longer be superseded (it is not found); ``delete_episode`` still
deletes it. :func:`prune` deletes expired episodes (and expired stored
conversations) from the whole store (every tenant), in one statement, or from one tenant.
Never-forget episodes (importance in a
never-forget band of the forgetting policy: >= 9 by default) are kept whatever their age.
:class:`memlane.EpisodicMemory` prunes opportunistically after a write with probability
``prune_probability``, and on demand (:meth:`memlane.EpisodicMemory.prune`).

The rule itself (:func:`retained_after`, :func:`is_retained`) lives in :mod:`memlane.context`,
with the scope every read applies, and is re-exported here.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from memlane.context import is_retained, retained_after
from memlane.stores.base import EpisodeFilter, Store
from memlane.stores.graph_base import SupportsGraph
from memlane.stores.sessions_base import SupportsSessions

__all__ = ["is_retained", "prune", "prune_graph", "prune_sessions", "retained_after"]


def prune(
    store: Store,
    *,
    retention_days: float | None,
    never_forget_from: float | None,
    at: datetime,
    dry_run: bool = False,
    tenant_id: str | None = None,
) -> int:
    """Delete every episode (of ``tenant_id``, or of all tenants) created before ``at - retention_days``.

    Expired stored conversations (``ended_at`` before the same cutoff) go too, when the store
    keeps sessions (:func:`prune_sessions`).

    Args:
        store: Where the episodes are.
        retention_days: Days episodes are kept, or ``None`` = keep everything (nothing deleted).
        never_forget_from: Episodes with importance >= this are kept; ``None`` = no exemption.
        at: Reference time (UTC).
        dry_run: Only count what would be deleted (everything minus what retention keeps).
        tenant_id: Only this tenant's episodes and sessions; ``None`` = store-wide.

    Returns:
        Number of episodes deleted, or that would be with ``dry_run``.

    Raises:
        StoreError: the store failed.
    """
    cutoff = retained_after(at, retention_days)
    if cutoff is None:
        return 0
    prune_sessions(store, cutoff, tenant_id=tenant_id, dry_run=dry_run)
    if dry_run:
        scope = EpisodeFilter(tenant_id=tenant_id)
        kept = store.stats(replace(scope, retained_after=cutoff, never_forget_from=never_forget_from))
        return store.stats(scope).episodes - kept.episodes
    deleted = store.delete_created_before(cutoff, keep_importance_from=never_forget_from, tenant_id=tenant_id)
    prune_graph(store, cutoff, never_forget_from, tenant_id=tenant_id, dry_run=False)
    return deleted


def prune_graph(
    store: Store, cutoff: datetime, never_forget_from: float | None, *, tenant_id: str | None, dry_run: bool
) -> int:
    """Delete (or count) the facts recorded before ``cutoff`` and the dangling episode links; 0 without graph.

    The facts' retention is the episodes' (``recorded_at`` for ``created_at``, the same
    never-forget importance); every fact read hides them before a prune does
    (:func:`memlane.graph.methods.retention`). The links of episodes created before ``cutoff``
    go once their episode has.

    Args:
        store: The episode store (its ``graph_store``, if it keeps the knowledge graph).
        cutoff: Exclusive bound on ``recorded_at`` (UTC).
        never_forget_from: Facts with importance >= this are kept; ``None`` = no exemption.
        tenant_id: Only this tenant's facts and links; ``None`` = every tenant.
        dry_run: Only count the facts.

    Returns:
        The facts deleted, or that would be with ``dry_run``.

    Raises:
        StoreError: the store failed.
    """
    if not isinstance(store, SupportsGraph):
        return 0
    return store.graph_store.prune(cutoff, never_forget_from, tenant_id, dry_run=dry_run)


def prune_sessions(store: Store, cutoff: datetime, *, tenant_id: str | None, dry_run: bool) -> int:
    """Delete (or count) the stored conversations that ended before ``cutoff``; 0 without sessions.

    Args:
        store: The episode store (its ``session_store``, if it keeps sessions).
        cutoff: Exclusive bound on ``ended_at`` (UTC).
        tenant_id: Only this tenant's sessions; ``None`` = every tenant.
        dry_run: Only count them.

    Raises:
        StoreError: the store failed.
    """
    if not isinstance(store, SupportsSessions):
        return 0
    return store.session_store.delete_sessions_ended_before(cutoff, tenant_id, dry_run=dry_run)
