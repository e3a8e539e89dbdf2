"""Compaction: merge near-duplicate episodes and archive stale ones.

:meth:`memlane.EpisodicMemory.compact` validates and scopes; :func:`compact` reads the active
episodes of the scope (current, not archived, not ``session_scoped``) and the pure functions
here decide what to merge:

* **Groups.** Only episodes of the same tenant and ``event_type`` are compared (under
  ``session`` scope the memory only sees one session, so also the same session).
* **Clusters** (leader clustering, exact): members are visited in representative order
  (:func:`representative_key`: highest importance, then most retrieved, then newest, then
  id); each unassigned episode becomes a leader and absorbs every unassigned episode whose
  cosine with it is ``> similarity`` (default 0.95). Absorption is measured against the
  leader only, so clusters never chain through intermediate members. A never-forget episode
  (importance >= the policy's never-forget band, 9 by default) is never absorbed by another
  leader: it is either kept as it is or is itself the representative, so the exact text of
  every never-forget fact stays active.
* **Merged episode** (:func:`merge_episodes`): content, session and vector of the
  representative (the leader); tags united (representative's first); importance the maximum;
  ``valid_from`` the earliest; ``valid_until`` open if any member's is, else the latest;
  ``created_at`` the latest (the last time the fact was stated, which drives recency);
  ``retrieve_count`` the sum and ``last_retrieved_at`` the latest; metadata the
  representative's plus ``merged_from`` (ids, representative first) and
  ``merged_min_cosine``.

The originals are archived with ``superseded_by`` pointing at the merged episode (nothing is
deleted: :meth:`memlane.EpisodicMemory.history` and ``include_archived=True`` still find them).
Stale episodes (never retrieved, older than a cutoff, not never-forget) are archived first and
take no part in merging. Archiving frees no disk space; it shrinks the active set every recall
filters, scores and ranks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlane import wire
from memlane.clock import MAX_DAYS
from memlane.episode_input import new_episode_id
from memlane.models import Episode
from memlane.stores.base import EpisodeFilter, Store
from memlane.validation import MAX_TAGS, check_open_fraction, check_positive

__all__ = [
    "MERGE_REASON_PREFIX",
    "CompactionReport",
    "MergeGroup",
    "cluster",
    "compact",
    "merge_episodes",
    "representative_key",
]

logger = logging.getLogger(__name__)

MERGE_REASON_PREFIX = "merged: compaction"
"""Start of the ``supersede_reason`` recorded on merged originals."""


@dataclass(frozen=True, slots=True)
class MergeGroup:
    """One cluster of near-duplicates and the episode that replaces it.

    Attributes:
        merged: The merged episode (stored, or with ``dry_run`` the one that would be).
        originals: The cluster's episodes, representative first; archived into ``merged``.
        min_cosine: Lowest cosine of a member with the representative, in (similarity, 1].
    """

    merged: Episode
    originals: tuple[Episode, ...]
    min_cosine: float


@dataclass(frozen=True, slots=True)
class CompactionReport:
    """What :meth:`memlane.EpisodicMemory.compact` did (or, with ``dry_run``, would do).

    Attributes:
        dry_run: ``True`` when nothing was changed.
        similarity: Cosine above which episodes were merged, in (0, 1).
        now: Reference time (UTC).
        cutoff: Episodes created before this and never retrieved were archived as stale;
            ``None`` = no stale archiving.
        active_before: Active (current, not archived) episodes in scope before compaction.
        merges: The merged clusters.
        stale: Episodes archived because they were never retrieved and older than ``cutoff``.
    """

    dry_run: bool
    similarity: float
    now: datetime
    cutoff: datetime | None
    active_before: int
    merges: tuple[MergeGroup, ...]
    stale: tuple[Episode, ...]

    @property
    def merged_originals(self) -> int:
        """Number of episodes archived into merged ones."""
        return sum(len(group.originals) for group in self.merges)

    @property
    def archived(self) -> int:
        """Number of episodes archived in total (merged originals + stale)."""
        return self.merged_originals + len(self.stale)

    @property
    def active_after(self) -> int:
        """Active episodes in scope afterwards: before - archived + one per merge."""
        return self.active_before - self.archived + len(self.merges)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary (ids, contents and counts)."""
        return {
            "dry_run": self.dry_run,
            "similarity": self.similarity,
            "now": wire.timestamp(self.now),
            "cutoff": None if self.cutoff is None else wire.timestamp(self.cutoff),
            "active_before": self.active_before,
            "active_after": self.active_after,
            "archived": self.archived,
            "merges": [
                {
                    "merged_id": group.merged.id,
                    "content": group.merged.content,
                    "importance": group.merged.importance,
                    "tags": list(group.merged.tags),
                    "originals": [ep.id for ep in group.originals],
                    "min_cosine": group.min_cosine,
                }
                for group in self.merges
            ],
            "stale": [{"id": ep.id, "content": ep.content} for ep in self.stale],
        }


def representative_key(episode: Episode) -> tuple[float, int, float, str]:
    """Sort key (ascending = better representative): importance, retrieve count, recency, id.

    Unrated episodes count as importance 0 here, so any rated one wins.
    """
    importance = -1.0 if episode.importance is None else episode.importance
    return (-importance, -episode.retrieve_count, -episode.created_at.timestamp(), episode.id)


def cluster(
    vectors: NDArray[np.float32], similarity: float, pinned: Sequence[bool] | None = None
) -> list[tuple[list[int], float]]:
    """Leader clustering of unit vectors already in representative order.

    Args:
        vectors: float32 ``[n, dims]`` L2-normalised, best representative first.
        similarity: Cosine threshold; a row joins a leader when ``cosine > similarity``.
        pinned: ``[n]`` flags of rows that may lead but never be absorbed (never-forget).

    Returns:
        ``(member rows, min cosine to the leader)`` for each cluster of two or more rows,
        leader first; rows in no such cluster are left out. Cost ``O(n * leaders * dims)``.
    """
    n = len(vectors)
    if n < 2:
        return []
    matrix = np.asarray(vectors, dtype=np.float32)
    free = np.ones(n, dtype=bool)
    absorbable = np.ones(n, dtype=bool) if pinned is None else ~np.asarray(pinned, dtype=bool)
    out: list[tuple[list[int], float]] = []
    for leader in range(n):
        if not free[leader]:
            continue
        free[leader] = False
        cosine = matrix @ matrix[leader]
        join = np.flatnonzero(free & absorbable & (cosine > similarity))
        if len(join):
            free[join] = False
            out.append(([leader, *join.tolist()], float(min(1.0, cosine[join].min()))))
    return out


def merge_episodes(members: Sequence[Episode], *, new_id: str, now: datetime, min_cosine: float) -> Episode:
    """Build the episode that replaces ``members`` (representative first; see the module doc).

    Args:
        members: Two or more episodes of one tenant and event type, representative first.
        new_id: Id of the merged episode.
        now: Its ``recorded_at`` (UTC).
        min_cosine: Recorded in its metadata as ``merged_min_cosine``.

    Returns:
        The merged episode (not stored).
    """
    rep = members[0]
    tags: dict[str, None] = {}
    for ep in members:
        tags.update(dict.fromkeys(ep.tags))
    rated = [ep.importance for ep in members if ep.importance is not None]
    ends = [ep.valid_until for ep in members]
    retrieved = [ep.last_retrieved_at for ep in members if ep.last_retrieved_at is not None]
    metadata = dict(rep.metadata)
    metadata["merged_from"] = [ep.id for ep in members]
    metadata["merged_min_cosine"] = round(min_cosine, 6)
    return Episode(
        id=new_id,
        tenant_id=rep.tenant_id,
        session_id=rep.session_id,
        event_type=rep.event_type,
        content=rep.content,
        tags=tuple(tags)[:MAX_TAGS],  # an episode holds at most MAX_TAGS tags
        importance=max(rated) if rated else None,
        created_at=max(ep.created_at for ep in members),
        metadata=metadata,
        embedding_model=rep.embedding_model,
        valid_from=min(ep.valid_from for ep in members),
        valid_until=None if any(end is None for end in ends) else max(e for e in ends if e is not None),
        recorded_at=now,
        retrieve_count=sum(ep.retrieve_count for ep in members),
        last_retrieved_at=max(retrieved) if retrieved else None,
    )


def compact(
    store: Store,
    scope: EpisodeFilter,
    *,
    similarity: float,
    never_retrieved_older_than_days: float | None,
    never_forget_from: float | None,
    at: datetime,
    dry_run: bool,
) -> CompactionReport:
    """Archive stale episodes, then merge near-duplicates, among the active episodes of ``scope``.

    Args:
        store: Where the episodes are.
        scope: The memory's scope filter (tenant/session); narrowed here to active episodes.
        similarity: Cosine threshold in (0, 1).
        never_retrieved_older_than_days: Age in days (> 0) from which a never-retrieved episode
            is archived as stale; ``None`` = no stale archiving.
        never_forget_from: Lowest never-forget importance, or ``None``.
        at: Reference time (UTC).
        dry_run: Only report; change nothing.

    Returns:
        The report.

    Raises:
        ValidationError: ``similarity`` or ``never_retrieved_older_than_days`` out of range.
        EpisodeNotFoundError: an episode was archived or superseded concurrently (that cluster
            is left as it was; clusters merged before stay merged). StoreError: the store failed.
    """
    similarity, days = _check_options(similarity, never_retrieved_older_than_days)
    flt = replace(scope, exclude_archived=True, still_valid_at=at, current_at=at)
    store.flush()  # merged episodes sum retrieve_count: write the buffered counts first
    active = [ep for ep in store.iter_episodes(flt) if not ep.session_scoped]

    def never_forget(ep: Episode) -> bool:
        return (
            never_forget_from is not None and ep.importance is not None and ep.importance >= never_forget_from
        )

    cutoff = _cutoff(at, days)
    stale = (
        []
        if cutoff is None
        else [
            ep for ep in active if ep.retrieve_count == 0 and ep.created_at < cutoff and not never_forget(ep)
        ]
    )
    stale_ids = {ep.id for ep in stale}
    merges = _merges(store, [ep for ep in active if ep.id not in stale_ids], similarity, never_forget, at)
    if not dry_run:
        _apply(store, stale, merges, similarity, at)
    return CompactionReport(
        dry_run=dry_run,
        similarity=similarity,
        now=at,
        cutoff=cutoff,
        active_before=len(active),
        merges=tuple(group for group, _ in merges),
        stale=tuple(stale),
    )


def _check_options(similarity: object, days: object) -> tuple[float, float | None]:
    """``(similarity, never_retrieved_older_than_days)`` checked (see :func:`compact`)."""
    checked = check_open_fraction(similarity, "similarity")
    return checked, None if days is None else check_positive(
        days, "never_retrieved_older_than_days", maximum=MAX_DAYS
    )


def _cutoff(at: datetime, days: float | None) -> datetime | None:
    """``at - days``: episodes created before it are stale; the earliest datetime when that is
    before year 1 (then no episode is old enough), ``None`` without stale archiving."""
    if days is None:
        return None
    try:
        return at - timedelta(days=days)
    except OverflowError:
        return datetime.min.replace(tzinfo=UTC)


def _merges(
    store: Store,
    kept: list[Episode],
    similarity: float,
    never_forget: Callable[[Episode], bool],
    at: datetime,
) -> list[tuple[MergeGroup, NDArray[np.float32]]]:
    """The near-duplicate clusters of ``kept`` (per tenant and event type), each merged, with
    the vector the merged episode takes (its representative's)."""
    groups: dict[tuple[str, str], list[Episode]] = {}
    for ep in kept:
        groups.setdefault((ep.tenant_id, ep.event_type), []).append(ep)
    vectors = store.vectors([ep.id for members in groups.values() for ep in members])
    merges: list[tuple[MergeGroup, NDArray[np.float32]]] = []
    for key in sorted(groups):
        members = sorted((ep for ep in groups[key] if ep.id in vectors), key=representative_key)
        if len(members) < 2:
            continue
        matrix = np.stack([vectors[ep.id] for ep in members])
        for rows, min_cos in cluster(matrix, similarity, [never_forget(ep) for ep in members]):
            originals = tuple(members[i] for i in rows)
            merged = merge_episodes(originals, new_id=new_episode_id(), now=at, min_cosine=min_cos)
            merges.append(
                (MergeGroup(merged=merged, originals=originals, min_cosine=min_cos), matrix[rows[0]])
            )
    return merges


def _apply(
    store: Store,
    stale: list[Episode],
    merges: list[tuple[MergeGroup, NDArray[np.float32]]],
    similarity: float,
    at: datetime,
) -> None:
    """Archive ``stale`` and store each merge (the originals are superseded by the merged episode)."""
    if stale:
        store.archive([ep.id for ep in stale], at)
    reason = f"{MERGE_REASON_PREFIX} cosine>{similarity:g}"
    for group, vector in merges:
        store.merge(group.merged, vector, [ep.id for ep in group.originals], at, reason)
    logger.info(
        "compact: merged %d episode(s) into %d, archived %d stale",
        sum(len(g.originals) for g, _ in merges),
        len(merges),
        len(stale),
    )
