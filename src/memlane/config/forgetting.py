"""Forgetting policies by importance and the half-life curve (pure; a setting of the memory).

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

The policy is ``MemoryConfig.forgetting_policy`` (``episodic_memory.forgetting_policy`` in the
configuration file); the job that applies it is :mod:`memlane.lifecycle.forgetting`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memlane.clock import SECONDS_PER_DAY
from memlane.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["DEFAULT_BANDS", "ForgettingPolicy", "half_life_strength"]


def half_life_strength(
    age_seconds: NDArray[np.floating] | float, half_life_days: NDArray[np.floating] | float
) -> NDArray[np.float64]:
    """``0.5 ** (max(age, 0) / half_life)``, element-wise, in [0, 1]; an infinite half-life gives 1.

    The recency signal under a forgetting policy (Ebbinghaus-style half-life decay; the
    importance bands that choose the half-life are :class:`ForgettingPolicy`'s).

    Args:
        age_seconds: Ages in seconds (negative = dated after ``now``, counted as 0).
        half_life_days: Half-lives in days, > 0; ``inf`` for never-forget episodes.

    Returns:
        float64 array of the broadcast shape.
    """
    import numpy as np  # lazily: reading the configuration (``memlane --help``) needs no numpy

    age_days = np.maximum(np.asarray(age_seconds, dtype=np.float64), 0.0) / SECONDS_PER_DAY
    half = np.asarray(half_life_days, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.power(0.5, age_days / half)
    return np.asarray(np.where(np.isinf(half), 1.0, out), dtype=np.float64)


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
        import numpy as np

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
