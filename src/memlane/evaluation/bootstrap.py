"""Paired bootstrap confidence intervals that resample whole conversations.

Questions of one conversation share a memory, so they are not independent; resampling conversations
(clusters) with replacement keeps that dependence (Efron & Tibshirani 1993, *An Introduction to the
Bootstrap*, ch. 13; the cluster bootstrap of Field & Welsh 2007). The statistic is the
question-weighted mean of the per-question differences of two configurations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["PairedDifference", "paired_bootstrap"]


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """Mean difference ``a - b`` over questions with its cluster-bootstrap interval.

    Attributes:
        mean: Mean of the per-question differences.
        low: 2.5th percentile of the bootstrap means (for ``level=0.95``).
        high: 97.5th percentile.
        better: Questions where ``a`` scores higher.
        worse: Questions where ``a`` scores lower.
        questions: Questions compared.
    """

    mean: float
    low: float
    high: float
    better: int
    worse: int
    questions: int

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies entirely on one side of zero."""
        return self.low > 0.0 or self.high < 0.0


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[str | int],
    *,
    resamples: int = 10_000,
    level: float = 0.95,
    seed: int = 20,
) -> PairedDifference:
    """Cluster-bootstrap interval of ``mean(a - b)``.

    Args:
        a: Per-question scores of the first configuration, length ``n >= 1``.
        b: Per-question scores of the second, same questions in the same order.
        clusters: The conversation of each question (length ``n``); whole clusters are resampled.
        resamples: Bootstrap resamples, >= 1.
        level: Two-sided coverage in (0, 1).
        seed: Seed of the generator (results are deterministic).

    Returns:
        The :class:`PairedDifference`.

    Raises:
        ValueError: empty or unequal inputs, ``resamples`` < 1, or ``level`` outside (0, 1).
    """
    if len(a) == 0 or not len(a) == len(b) == len(clusters):
        raise ValueError("a, b and clusters must be non-empty and of equal length")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    names = sorted(set(clusters), key=str)
    index = {name: k for k, name in enumerate(names)}
    cluster = np.array([index[c] for c in clusters])
    sums = np.bincount(cluster, weights=diff, minlength=len(names))
    counts = np.bincount(cluster, minlength=len(names)).astype(np.float64)
    draws = np.random.default_rng(seed).integers(0, len(names), size=(resamples, len(names)))
    means = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return PairedDifference(
        mean=float(diff.mean()),
        low=float(low),
        high=float(high),
        better=int((diff > 0).sum()),
        worse=int((diff < 0).sum()),
        questions=len(diff),
    )
