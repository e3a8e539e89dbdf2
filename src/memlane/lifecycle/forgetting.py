"""Forgetting: the ``forget`` job, which archives (or deletes) the episodes that faded.

The policy (importance bands -> half-lives, the strength curve) is a setting:
:mod:`memlane.config.forgetting`, re-exported here. :meth:`memlane.EpisodicMemory.forget` archives
(or deletes) episodes whose strength fell below a threshold (default 0.05, i.e. after about 4.3
half-lives); retention pruning and forgetting never touch never-forget episodes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from memlane import wire
from memlane.config.forgetting import DEFAULT_BANDS, ForgettingPolicy, half_life_strength
from memlane.errors import ValidationError
from memlane.models import Episode
from memlane.stores.base import EpisodeFilter, Store

__all__ = ["DEFAULT_BANDS", "ForgetReport", "ForgettingPolicy", "forget", "half_life_strength"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """What :meth:`memlane.EpisodicMemory.forget` did (or, with ``dry_run``, would do).

    Attributes:
        action: ``"archive"`` or ``"delete"``.
        dry_run: ``True`` when nothing was changed.
        threshold: Strength below which episodes were (or would be) forgotten, in (0, 1).
        now: Reference time of the strengths (UTC).
        forgotten: ``(episode, strength)`` pairs, weakest first.
    """

    action: str
    dry_run: bool
    threshold: float
    now: datetime
    forgotten: tuple[tuple[Episode, float], ...]

    @property
    def count(self) -> int:
        """Number of episodes forgotten (or that would be)."""
        return len(self.forgotten)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable summary (episode ids with their strengths)."""
        return {
            "action": self.action,
            "dry_run": self.dry_run,
            "threshold": self.threshold,
            "now": wire.timestamp(self.now),
            "count": self.count,
            "episodes": [{"id": ep.id, "content": ep.content, "strength": s} for ep, s in self.forgotten],
        }


def forget(
    store: Store,
    scope: EpisodeFilter,
    policy: ForgettingPolicy,
    *,
    at: datetime,
    threshold: float,
    action: str,
    dry_run: bool,
) -> ForgetReport:
    """Archive (or delete) the episodes of ``scope`` whose strength at ``at`` is below ``threshold``.

    Already archived episodes are skipped; never-forget ones have strength 1 and are never
    below a threshold < 1.

    Args:
        store: Where the episodes are.
        scope: The memory's scope filter (tenant/session); archived episodes are excluded here.
        policy: The importance -> half-life mapping.
        at: Reference time of the strengths (UTC).
        threshold: Strength in (0, 1).
        action: ``"archive"`` (set ``archived_at = at``, one batched update) or ``"delete"``.
        dry_run: Only report; change nothing.

    Returns:
        The report, weakest first (ties: oldest first).

    Raises:
        ValidationError: ``threshold`` is not a number in (0, 1). StoreError: the store failed.
    """
    cut = threshold
    if isinstance(cut, bool) or not isinstance(cut, int | float) or not 0.0 < cut < 1.0:
        raise ValidationError(f"threshold must be a number in (0, 1), got {cut!r}")
    flt = replace(scope, exclude_archived=True)
    faded: list[tuple[Episode, float]] = []
    for episode in store.iter_episodes(flt):
        strength = policy.strength((at - episode.created_at).total_seconds(), episode.importance)
        if strength < cut:
            faded.append((episode, strength))
    faded.sort(key=lambda pair: (pair[1], pair[0].created_at))
    if not dry_run and faded:
        if action == "delete":
            for episode, _ in faded:
                store.delete(episode.id, episode.tenant_id)
        else:
            store.archive([episode.id for episode, _ in faded], at)
        logger.info("forget: %s %d episode(s) below strength %g", action, len(faded), cut)
    return ForgetReport(action=action, dry_run=dry_run, threshold=float(cut), now=at, forgotten=tuple(faded))
