"""Pure three-factor ranking of recall candidates: relevance, recency, importance.

No I/O here: every store hands the same arrays to :func:`rank`, so ranking is
identical for every backend.

The formula follows the retrieval function of Park et al. 2023, *Generative Agents:
Interactive Simulacra of Human Behavior* (UIST '23), section 4.1: a candidate's score
is a weighted combination of relevance, recency and importance, each scaled to
[0, 1], with equal weights by default. memlane's differences from the paper:

* **Recency** decays per *day of age* since the episode's ``created_at``
  (``decay ** age_days``, default decay 0.995 per day, so 30 days -> 0.8604,
  138 days -> ~0.5), not per game hour since the memory was last *accessed*.
  Recall does not change an episode's recency. Episodes dated after ``now``
  (clock skew, backfills) count as age 0.
* **Relevance** is ``max(0, cosine)`` of L2-normalised embeddings: negative cosine
  carries no evidence of relevance and is clipped to 0. It is *not* min-max
  normalised per query as in the paper, so a relevance of 0.2 means the same thing
  in every recall (an absolute, comparable signal), and the best candidate of an
  unrelated query does not get relevance 1.
* **Importance** is the caller's rating / 10 (ratings are clamped to [1, 10]);
  unrated episodes score a neutral 0.5 instead of being penalised.
* The three signals are combined as a **weighted mean** (weights divided by their
  sum), so the score also stays in [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from memlane.errors import ValidationError
from memlane.models import ScoreBreakdown

__all__ = [
    "DEFAULT_DECAY_PER_DAY",
    "PRESETS",
    "RankedCandidate",
    "RankingWeights",
    "importance_signal",
    "rank",
    "recency_signal",
    "relevance_signal",
    "resolve_weights",
]

DEFAULT_DECAY_PER_DAY = 0.995
"""Default recency decay factor per day of age (0.995**30 ~= 0.8604)."""

SECONDS_PER_DAY = 86_400.0
UNRATED_IMPORTANCE_SIGNAL = 0.5

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class RankingWeights:
    """Relative weights of the three signals; only their ratios matter.

    Args:
        relevance: Weight of relevance, finite and >= 0.
        recency: Weight of recency, finite and >= 0.
        importance: Weight of importance, finite and >= 0.

    Raises:
        ValidationError: a weight is negative, NaN, infinite or not a number, or all are zero.
    """

    relevance: float = 1.0
    recency: float = 1.0
    importance: float = 1.0

    def __post_init__(self) -> None:
        for name in ("relevance", "recency", "importance"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValidationError(f"weight {name!r} must be a number, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ValidationError(f"weight {name!r} must be finite and >= 0, got {value!r}")
        if self.relevance + self.recency + self.importance <= 0:
            raise ValidationError("at least one ranking weight must be > 0")

    def normalized(self) -> tuple[float, float, float]:
        """Return ``(relevance, recency, importance)`` divided by their sum (they add up to 1)."""
        total = self.relevance + self.recency + self.importance
        return (self.relevance / total, self.recency / total, self.importance / total)


PRESETS: Mapping[str, RankingWeights] = {
    "balanced": RankingWeights(1.0, 1.0, 1.0),
    "specific_question": RankingWeights(0.6, 0.2, 0.2),
    "agent_context": RankingWeights(0.3, 0.2, 0.5),
    "conversation": RankingWeights(0.3, 0.5, 0.2),
    "cold_start": RankingWeights(0.3, 0.0, 0.7),
    "relevance_only": RankingWeights(1.0, 0.0, 0.0),
}
"""Named weight presets. ``balanced`` (equal weights, Park et al. 2023) is the default."""


def resolve_weights(
    weights: RankingWeights | str | Mapping[str, float] | None,
    default: RankingWeights,
) -> RankingWeights:
    """Turn a preset name, a mapping or ``None`` into :class:`RankingWeights`.

    Args:
        weights: A :class:`RankingWeights`, a preset name from :data:`PRESETS`, a mapping
            with any of the keys ``relevance``/``recency``/``importance`` (missing keys
            weigh 0), or ``None`` for ``default``.
        default: Returned when ``weights`` is ``None``.

    Raises:
        ValidationError: unknown preset name or mapping key, or invalid weight values.
    """
    if weights is None:
        return default
    if isinstance(weights, RankingWeights):
        return weights
    if isinstance(weights, str):
        try:
            return PRESETS[weights]
        except KeyError:
            known = ", ".join(sorted(PRESETS))
            raise ValidationError(f"unknown weight preset {weights!r}; known presets: {known}") from None
    if isinstance(weights, Mapping):
        unknown = set(weights) - {"relevance", "recency", "importance"}
        if unknown:
            raise ValidationError(f"unknown weight keys: {sorted(unknown)}")
        return RankingWeights(
            relevance=weights.get("relevance", 0.0),
            recency=weights.get("recency", 0.0),
            importance=weights.get("importance", 0.0),
        )
    raise ValidationError(
        f"weights must be a RankingWeights, preset name or mapping, got {type(weights).__name__}"
    )


def relevance_signal(cosine: NDArray[np.floating]) -> FloatArray:
    """Map cosine similarities (shape ``[n]``, range [-1, 1]) to relevance in [0, 1]: ``max(0, cos)``."""
    return np.clip(np.asarray(cosine, dtype=np.float64), 0.0, 1.0)


def recency_signal(
    age_seconds: NDArray[np.floating], decay_per_day: float = DEFAULT_DECAY_PER_DAY
) -> FloatArray:
    """Exponential recency ``decay_per_day ** age_days`` in (0, 1].

    Args:
        age_seconds: Shape ``[n]``, ``now - created_at`` in seconds; negative ages
            (episodes dated in the future) count as 0.
        decay_per_day: Factor per day of age, in (0, 1].

    Raises:
        ValidationError: ``decay_per_day`` outside (0, 1].
    """
    if not 0.0 < decay_per_day <= 1.0:
        raise ValidationError(f"decay_per_day must be in (0, 1], got {decay_per_day!r}")
    age_days = np.clip(np.asarray(age_seconds, dtype=np.float64), 0.0, None) / SECONDS_PER_DAY
    # decay ** age == exp(age * ln(decay)), about twice as fast as np.power on large arrays.
    return np.exp(age_days * math.log(decay_per_day))


def importance_signal(importance: NDArray[np.floating]) -> FloatArray:
    """Map ratings (shape ``[n]``, [1, 10], NaN = unrated) to ``rating / 10``; unrated -> 0.5."""
    values = np.asarray(importance, dtype=np.float64)
    return np.where(np.isnan(values), UNRATED_IMPORTANCE_SIGNAL, values / 10.0)


@dataclass(frozen=True, slots=True)
class RankedCandidate:
    """Position of a candidate in the input arrays plus its score breakdown."""

    index: int
    breakdown: ScoreBreakdown


def rank(
    *,
    cosine: NDArray[np.floating],
    created_at_seconds: NDArray[np.floating],
    importance: NDArray[np.floating],
    now_seconds: float,
    weights: RankingWeights,
    decay_per_day: float,
    limit: int,
) -> list[RankedCandidate]:
    """Score every candidate and return the best ``limit``, best first.

    Args:
        cosine: Shape ``[n]``, cosine similarity of each candidate to the query.
        created_at_seconds: Shape ``[n]``, candidates' ``created_at`` as Unix seconds.
        importance: Shape ``[n]``, ratings in [1, 10] with NaN for unrated.
        now_seconds: The recall's ``now`` as Unix seconds.
        weights: Signal weights (normalised to sum 1 here).
        decay_per_day: Recency decay factor per day, in (0, 1].
        limit: Maximum number of results, >= 1.

    Returns:
        Up to ``limit`` candidates ordered by score descending; ties go to the newer
        episode, then to the lower input index (stable).

    Raises:
        ValidationError: arrays of different lengths, or ``decay_per_day`` out of range.
    """
    n = len(cosine)
    if len(created_at_seconds) != n or len(importance) != n:
        raise ValidationError("cosine, created_at_seconds and importance must have equal length")
    if n == 0:
        return []
    created = np.asarray(created_at_seconds, dtype=np.float64)
    rel = relevance_signal(cosine)
    rec = recency_signal(now_seconds - created, decay_per_day)
    imp = importance_signal(importance)
    w_rel, w_rec, w_imp = weights.normalized()
    score = np.clip(w_rel * rel + w_rec * rec + w_imp * imp, 0.0, 1.0)
    k = min(limit, n)
    if k < n:
        # Keep every candidate tied with the k-th score so tie-breaking stays exact.
        kth = np.partition(score, n - k)[n - k]
        pool = np.flatnonzero(score >= kth)
    else:
        pool = np.arange(n)
    # lexsort: last key is primary. Sort by -score, then -created, then index.
    order = pool[np.lexsort((pool, -created[pool], -score[pool]))][:k]
    return [
        RankedCandidate(
            index=int(i),
            breakdown=ScoreBreakdown(
                relevance=float(rel[i]),
                recency=float(rec[i]),
                importance=float(imp[i]),
                score=float(score[i]),
            ),
        )
        for i in order
    ]
