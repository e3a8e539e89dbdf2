"""Forgetting: policies by importance (pure) and the ``forget`` job over a store.

An episode's *strength* decays with a half-life chosen by its importance, after the
exponential forgetting curve of Ebbinghaus (1885, *Über das Gedächtnis*) in its half-life
form (as in spaced-repetition models, e.g. Settles & Meeder 2016, *A Trainable Spaced
Repetition Model for Language Learning*, ACL)::

    strength = 0.5 ** (age_days / half_life_days)        never-forget bands: strength = 1

``age_days`` is measured from ``created_at`` to ``now`` (negative ages count as 0). The
default bands (issue 7):

========== ======================
importance half-life
========== ======================
9 - 10     never forgotten
7 - <9     30 days
4 - <7     7 days
1 - <4     1 day
unrated    7 days (the 4-6 band: unrated episodes score a neutral 0.5 importance too)
========== ======================

A rating between bands (7.5) belongs to the band whose lower bound it reaches (7). With
``MemoryConfig(forgetting=True)`` the strength replaces ``decay ** age_days`` as the
recency signal of ranked recalls, and :meth:`memlane.EpisodicMemory.forget` archives (or
deletes) episodes whose strength fell below a threshold (default 0.05, i.e. after about
4.3 half-lives: 4.3 days for the 1-3 band, 30 days for 4-6, 130 days for 7-8). Retention
pruning and forgetting never touch never-forget episodes.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlane.errors import ConfigError, ValidationError
from memlane.models import Episode
from memlane.operations import wire
from memlane.recall.ranking import half_life_strength
from memlane.stores.base import EpisodeFilter, Store

__all__ = ["DEFAULT_BANDS", "ForgetReport", "ForgettingPolicy", "forget", "half_life_strength"]

logger = logging.getLogger(__name__)

DEFAULT_BANDS: tuple[tuple[float, float | None], ...] = ((9.0, None), (7.0, 30.0), (4.0, 7.0), (1.0, 1.0))
"""``(lowest importance, half-life in days or None = never forgotten)``, highest band first."""


@dataclass(frozen=True, slots=True)
class ForgettingPolicy:
    """Mapping from importance to half-life.

    Args:
        bands: ``(lowest importance, half_life_days)`` pairs; ``half_life_days`` > 0 or
            ``None`` = never forgotten. Any order; lower bounds unique, in [1, 10]. Never-forget
            bands must be the highest ones (an episode more important than a forgettable one
            cannot be forgettable). Ratings below the lowest bound use the lowest band.
        unrated_half_life_days: Half-life of unrated episodes (> 0), or ``None`` = never
            forgotten; default 7 (the 4-6 band).

    Raises:
        ConfigError: a malformed band.
    """

    bands: tuple[tuple[float, float | None], ...] = DEFAULT_BANDS
    unrated_half_life_days: float | None = 7.0

    def __post_init__(self) -> None:
        try:
            bands = tuple(
                (float(low), None if half is None else float(half)) for low, half in dict(self.bands).items()
            )
        except (TypeError, ValueError):
            raise ConfigError(
                f"forgetting bands must be (importance, half_life_days) pairs, got {self.bands!r}"
            ) from None
        if not bands:
            raise ConfigError("forgetting bands must not be empty")
        bands = tuple(sorted(bands, reverse=True))
        seen_forgettable = False
        for low, half in bands:
            if not 1.0 <= low <= 10.0:
                raise ConfigError(f"forgetting band importance must be in [1, 10], got {low!r}")
            if half is not None and not (math.isfinite(half) and half > 0):
                raise ConfigError(f"half_life_days must be a positive number or null, got {half!r}")
            if half is None and seen_forgettable:
                raise ConfigError("never-forget bands (null half-life) must be the most important ones")
            seen_forgettable |= half is not None
        unrated = self.unrated_half_life_days
        if unrated is not None and (
            isinstance(unrated, bool) or not isinstance(unrated, int | float) or not 0 < unrated < math.inf
        ):
            raise ConfigError(f"unrated_half_life_days must be a positive number or null, got {unrated!r}")
        object.__setattr__(self, "bands", bands)

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> ForgettingPolicy:
        """Build from ``{"bands": {importance: half_life_or_null, ...}, "unrated": half_life_or_null}``.

        Raises:
            ConfigError: unknown keys or malformed values.
        """
        unknown = set(data) - {"bands", "unrated"}
        if unknown:
            raise ConfigError(f"unknown forgetting_policy key(s): {sorted(unknown)}")
        raw = data.get("bands", dict(DEFAULT_BANDS))
        if not isinstance(raw, Mapping):
            raise ConfigError(f"forgetting_policy.bands must be a mapping, got {raw!r}")
        try:
            pairs: Sequence[tuple[float, float | None]] = [(float(k), v) for k, v in raw.items()]
        except (TypeError, ValueError):
            raise ConfigError(
                f"forgetting_policy.bands keys must be importance numbers, got {raw!r}"
            ) from None
        unrated = data.get("unrated", 7.0)
        return cls(bands=tuple(pairs), unrated_half_life_days=unrated)  # type: ignore[arg-type]

    @property
    def never_forget_from(self) -> float | None:
        """Lowest importance that is never forgotten, or ``None`` if every band decays."""
        never = [low for low, half in self.bands if half is None]
        return min(never) if never else None

    def half_life_days(self, importance: float | None) -> float:
        """Half-life in days of an episode of this importance; ``inf`` = never forgotten."""
        if importance is None or math.isnan(importance):
            half = self.unrated_half_life_days
        else:
            half = self.bands[-1][1]
            for low, band_half in self.bands:  # highest band first
                if importance >= low:
                    half = band_half
                    break
        return math.inf if half is None else half

    def half_lives(self, importance: NDArray[np.floating]) -> NDArray[np.float64]:
        """Vectorised :meth:`half_life_days` over ratings (NaN = unrated)."""
        imp = np.asarray(importance, dtype=np.float64)
        unrated = math.inf if self.unrated_half_life_days is None else self.unrated_half_life_days
        lowest = self.bands[-1][1]
        out = np.full(imp.shape, math.inf if lowest is None else lowest, dtype=np.float64)
        for low, half in reversed(self.bands):  # lowest band first; higher bands overwrite
            out[imp >= low] = math.inf if half is None else half
        out[np.isnan(imp)] = unrated
        return out

    def strength(self, age_seconds: float, importance: float | None) -> float:
        """``0.5 ** (age_days / half_life)`` for one episode (1.0 when never forgotten)."""
        return float(half_life_strength(age_seconds, self.half_life_days(importance)))


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
