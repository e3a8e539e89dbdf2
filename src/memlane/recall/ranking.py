"""Pure relevance-first ranking: relevance decides, recency and importance break near-ties.

No I/O here: every store hands the same arrays to :func:`rank`, so ranking is identical for
every backend. The relevance signals (dense calibration, saturated per-scope BM25, session
context, entity and time-window boosts) and their constants are in
:mod:`memlane.recall.relevance`; the README's "Ranking" section gives the whole formula.

The combination keeps the three factors of Park et al. 2023, *Generative Agents: Interactive
Simulacra of Human Behavior* (UIST '23, section 4.1) — relevance, recency, importance — but
not their plain weighted mean, which on data spanning months lets recency bury clearly better
matches. Instead (a lexicographic order with a tolerance band)::

    score = (relevance + TIE_BAND * (w_rec * recency + w_imp * importance) / w_sum) / (1 + TIE_BAND)

with ``TIE_BAND = 0.1``: an episode more relevant by more than ``TIE_BAND * (w_rec + w_imp) /
w_sum`` always ranks first; equally relevant -> newer first; equally relevant and equally old
-> more important first. The presets (:data:`PRESETS`) keep their meaning inside the band.

* **Recency** decays per *day of age* since ``created_at`` (``decay ** age_days``, default
  0.995: 30 days -> 0.8604), not per hour since last access; episodes dated after ``now``
  count as age 0. With a forgetting policy (``MemoryConfig(forgetting=True)``) it is the
  half-life strength ``0.5 ** (age_days / half_life)`` of the episode's importance band.
* **Importance** is the rating / 10 (clamped to [1, 10]); unrated episodes score a neutral 0.5.
* **Base relevance** fuses the calibrated dense and keyword signals: convex ``0.4 * dense +
  0.6 * keyword`` by default (Bruch, Gai & Ingber 2023, *An Analysis of Fusion Functions for
  Hybrid Retrieval*, ACM TOIS); noisy-OR (:func:`fuse_noisy_or`) and reciprocal rank fusion
  (:func:`fuse_rrf`; Cormack, Clarke & Büttcher 2009, SIGIR '09; competition ranks, so the
  order rows arrive in does not matter) are selectable (:class:`HybridSettings`).
* Hits come only from the ``pool_size`` candidates with the highest base relevance (and their
  neighbours), so an approximate index that returns that top-N gives the same hits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from memlane.clock import SECONDS_PER_DAY
from memlane.config.forgetting import half_life_strength
from memlane.errors import ValidationError
from memlane.models import ScoreBreakdown
from memlane.recall.relevance import (
    DEFAULT_PARAMS,
    RelevanceParams,
    base_relevance,
    contextual_relevance,
    dense_relevance,
    keyword_relevance,
)

__all__ = [
    "DEFAULT_DECAY_PER_DAY",
    "FUSION_METHODS",
    "PRESETS",
    "RETRIEVAL_MODES",
    "HybridSettings",
    "RankedCandidate",
    "RankingWeights",
    "competition_ranks",
    "fuse_convex",
    "fuse_noisy_or",
    "fuse_rrf",
    "half_life_strength",
    "importance_signal",
    "keyword_signal",
    "rank",
    "recency_signal",
    "relevance_signal",
    "resolve_weights",
]

DEFAULT_DECAY_PER_DAY = 0.995
"""Default recency decay factor per day of age (0.995**30 ~= 0.8604)."""

TIE_BAND = 0.1
"""``eps0``: the most recency and importance together can add to a candidate's relevance."""

UNRATED_IMPORTANCE_SIGNAL = 0.5

FloatArray = NDArray[np.float64]

RETRIEVAL_MODES = ("hybrid", "dense", "keyword")
"""How a ranked recall finds and scores candidates: both signals fused, embeddings only, or
the full-text index only."""

FUSION_METHODS = ("convex", "noisy_or", "rrf")
"""How hybrid retrieval combines the dense and keyword signals (see the module docstring)."""


@dataclass(frozen=True, slots=True)
class HybridSettings:
    """Parameters of hybrid relevance and of the time-window boost (formulas in the module docstring).

    Defaults were chosen on LoCoMo conversations 0-4 only (``memlane eval locomo``).

    Args:
        fusion: How base relevance combines the calibrated dense and keyword signals:
            ``"convex"`` (default, ``w * dense + (1 - w) * keyword``), ``"noisy_or"`` or ``"rrf"``.
        keyword_weight: ``lam`` of the noisy-OR, in [0, 1] (default 0.6).
        rrf_k: RRF's rank offset ``k`` (> 0, default 5; the paper's 60 flattens the top of
            short candidate lists).
        dense_weight: Dense share ``w`` for ``convex`` and ``rrf``, in [0, 1] (default 0.4, from
            {0.3 ... 0.6}: 0.4 and 0.5 tie on R@10, 0.4 is better on the session metric).
        temporal_boost: The time-window boost, in [0, 1] (default 0.3, from {0.2, 0.3, 0.5}).

    Raises:
        ValidationError: a value out of range.
    """

    fusion: str = "convex"
    keyword_weight: float = 0.6
    rrf_k: float = 5.0
    dense_weight: float = 0.4
    temporal_boost: float = 0.3

    def __post_init__(self) -> None:
        if self.fusion not in FUSION_METHODS:
            raise ValidationError(f"fusion must be one of {list(FUSION_METHODS)}, got {self.fusion!r}")
        for name in ("keyword_weight", "rrf_k", "dense_weight", "temporal_boost"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValidationError(f"{name} must be a finite number, got {value!r}")
            if (name == "rrf_k" and value <= 0) or (name != "rrf_k" and not 0.0 <= value <= 1.0):
                raise ValidationError(f"{name} out of range: {value!r}")


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


def keyword_signal(scores: NDArray[np.floating]) -> FloatArray:
    """Map keyword scores (shape ``[n]``, >= 0, NaN = no match) to [0, 1] (NaN kept).

    Each score is divided by the largest one (per-query max normalisation), because full-text
    scores have no fixed scale: BM25 grows with the corpus' IDF, ``ts_rank_cd`` differs again.
    The best keyword match of a recall gets 1. All-zero or all-NaN input maps to 0 / NaN.
    """
    values = np.asarray(scores, dtype=np.float64)
    matched = ~np.isnan(values)
    if not matched.any():
        return values.copy()
    top = float(np.max(values[matched]))
    if top <= 0.0:
        return np.where(matched, 0.0, np.nan)
    return np.clip(values / top, 0.0, 1.0)


def competition_ranks(values: NDArray[np.floating]) -> FloatArray:
    """1-based competition ranks of ``values`` (shape ``[n]``), higher value = better rank.

    Ties share the best rank ("1224" ranking), so the result does not depend on input order.
    NaN (absent from the list) gets rank ``inf``.
    """
    x = np.asarray(values, dtype=np.float64)
    ranks = np.full(len(x), np.inf)
    present = ~np.isnan(x)
    if present.any():
        v = x[present]
        ordered = np.sort(v)[::-1]
        # rank = 1 + number of strictly greater values
        ranks[present] = 1.0 + np.searchsorted(-ordered, -v, side="left")
    return ranks


def fuse_rrf(
    dense: NDArray[np.floating], keyword: NDArray[np.floating], *, k: float, dense_weight: float
) -> FloatArray:
    """Weighted reciprocal rank fusion normalised to [0, 1] (Cormack, Clarke & Büttcher 2009).

    Args:
        dense: Shape ``[n]``, dense signal, NaN where the candidate is not in the dense list.
        keyword: Shape ``[n]``, keyword signal, NaN where it matched no term.
        k: Rank offset, > 0.
        dense_weight: Weight of the dense list in [0, 1]; the keyword list weighs ``1 - dense_weight``.

    Returns:
        ``(w_d / (k + rank_d) + w_k / (k + rank_k)) / ((w_d + w_k) / (k + 1))``, shape ``[n]``,
        in [0, 1]; 1 only for a candidate ranked first in both lists.
    """
    w_dense, w_kw = dense_weight, 1.0 - dense_weight
    fused = w_dense / (k + competition_ranks(dense)) + w_kw / (k + competition_ranks(keyword))
    return np.clip(fused * (k + 1.0) / (w_dense + w_kw), 0.0, 1.0)


def fuse_noisy_or(
    dense: NDArray[np.floating], keyword: NDArray[np.floating], *, keyword_weight: float
) -> FloatArray:
    """Noisy-OR of dense and keyword evidence: ``1 - (1 - dense) * (1 - lam * keyword)``.

    The probabilistic sum of two signals treated as independent evidence of relevance (as
    in Pearl 1988, *Probabilistic Reasoning in Intelligent Systems*, ch. 4.3.2), with the
    keyword evidence discounted by ``lam``. A missing (NaN) signal counts as 0, so without a
    keyword match the result equals ``dense``.

    Args:
        dense: Shape ``[n]``, dense signal in [0, 1] (NaN = none).
        keyword: Shape ``[n]``, keyword signal in [0, 1] (NaN = no match).
        keyword_weight: ``lam`` in [0, 1].

    Returns:
        Shape ``[n]``, in [0, 1], >= both ``dense`` and ``lam * keyword``.
    """
    d = np.nan_to_num(np.asarray(dense, dtype=np.float64), nan=0.0)
    kw = np.nan_to_num(np.asarray(keyword, dtype=np.float64), nan=0.0)
    return np.clip(1.0 - (1.0 - d) * (1.0 - keyword_weight * kw), 0.0, 1.0)


def fuse_convex(
    dense: NDArray[np.floating], keyword: NDArray[np.floating], *, dense_weight: float
) -> FloatArray:
    """Convex score fusion ``w_d * dense + (1 - w_d) * keyword`` in [0, 1]; NaN counts as 0.

    After Bruch, Gai & Ingber 2023 (*An Analysis of Fusion Functions for Hybrid Retrieval*).
    Both inputs are shape ``[n]`` signals in [0, 1].
    """
    d = np.nan_to_num(np.asarray(dense, dtype=np.float64), nan=0.0)
    kw = np.nan_to_num(np.asarray(keyword, dtype=np.float64), nan=0.0)
    return np.clip(dense_weight * d + (1.0 - dense_weight) * kw, 0.0, 1.0)


@dataclass(frozen=True, slots=True)
class RankedCandidate:
    """Position of a candidate in the input arrays plus its score breakdown."""

    index: int
    breakdown: ScoreBreakdown


def rank(  # noqa: C901, PLR0912, PLR0913, PLR0915  (limit debt, #19)
    *,
    cosine: NDArray[np.floating] | None,
    created_at_seconds: NDArray[np.floating],
    importance: NDArray[np.floating],
    now_seconds: float,
    weights: RankingWeights,
    decay_per_day: float,
    limit: int,
    keyword: NDArray[np.floating] | None = None,
    retrieval: str | None = None,
    hybrid: HybridSettings | None = None,
    in_window: NDArray[np.bool_] | None = None,
    min_relevance: float = 0.0,
    fallback: bool = False,
    half_life_days: NDArray[np.floating] | None = None,
    adjacent: NDArray[np.int64] | None = None,
    groups: NDArray[np.int64] | None = None,
    entity: NDArray[np.floating] | None = None,
    pool_size: int | None = None,
    params: RelevanceParams = DEFAULT_PARAMS,
) -> list[RankedCandidate]:
    """Score every candidate relevance-first and return the best ``limit``, best first.

    Args:
        cosine: Shape ``[n]``, cosine similarity of each candidate to the query, NaN where
            the candidate has none; ``None`` when the embeddings were not used.
        created_at_seconds: Shape ``[n]``, candidates' ``created_at`` as Unix seconds.
        importance: Shape ``[n]``, ratings in [1, 10] with NaN for unrated.
        now_seconds: The recall's ``now`` as Unix seconds.
        weights: Preset weights; they shape only the tie-break within :data:`TIE_BAND`.
        decay_per_day: Recency decay factor per day, in (0, 1].
        limit: Maximum number of results, >= 1.
        keyword: Shape ``[n]``, per-scope BM25 (>= 0, NaN = no match), or ``None`` when
            keywords were not used.
        retrieval: ``"hybrid"``, ``"dense"`` or ``"keyword"``: which signals make relevance.
            Default: ``"hybrid"`` if both arrays are given, else the one given.
        hybrid: Fusion and time-boost parameters (default :class:`HybridSettings`).
        in_window: Shape ``[n]``, whether each candidate lies in the query's time window, or
            ``None`` when the query named no time.
        min_relevance: Candidates whose *own* relevance is below this (in [0, 1]) are dropped.
        fallback: Recorded in every breakdown: the embedder failed and recall fell back to keywords.
        half_life_days: Shape ``[n]``, forgetting half-lives in days (``inf`` = never), or
            ``None``; when given, recency is ``0.5 ** (age_days / half_life)``.
        adjacent: int64 ``[n, 4]`` candidate index of each candidate's -2, -1, +1, +2 session
            neighbour (-1 = none), or ``None`` for no context signals.
        groups: int64 ``[n]`` group numbers (:func:`memlane.recall.relevance.groups_by_gap`);
            required with ``adjacent``.
        entity: ``[n]`` 0/1 entity signal, or ``None``.
        pool_size: Hits come only from the ``pool_size`` candidates with the highest base
            relevance and their +-2 neighbours (``None``: every candidate).
        params: Relevance constants (:class:`memlane.recall.relevance.RelevanceParams`).

    Returns:
        Up to ``limit`` candidates ordered by score descending; ties go to the newer
        episode, then to the lower input index (stable).

    Raises:
        ValidationError: arrays of different lengths, no relevance signal for ``retrieval``,
            an unknown ``retrieval``, ``min_relevance`` outside [0, 1], or ``decay_per_day``
            out of range.
    """
    n = len(created_at_seconds)
    arrays = {
        "cosine": cosine,
        "importance": importance,
        "keyword": keyword,
        "in_window": in_window,
        "half_life_days": half_life_days,
        "adjacent": adjacent,
        "groups": groups,
        "entity": entity,
    }
    if any(a is not None and len(a) != n for a in arrays.values()):
        raise ValidationError("every candidate array must have the same length")
    if retrieval is None:
        retrieval = (
            "hybrid"
            if cosine is not None and keyword is not None
            else "keyword"
            if cosine is None
            else "dense"
        )
    if retrieval not in RETRIEVAL_MODES:
        raise ValidationError(f"retrieval must be one of {list(RETRIEVAL_MODES)}, got {retrieval!r}")
    if (retrieval != "keyword" and cosine is None) or (retrieval != "dense" and keyword is None):
        raise ValidationError(f"retrieval {retrieval!r} needs the matching cosine/keyword arrays")
    if not 0.0 <= min_relevance <= 1.0:
        raise ValidationError(f"min_relevance must be in [0, 1], got {min_relevance!r}")
    if n == 0:
        return []
    settings = hybrid or HybridSettings()
    created = np.asarray(created_at_seconds, dtype=np.float64)
    dense = None if cosine is None or retrieval == "keyword" else dense_relevance(cosine, params)
    kw = None if keyword is None or retrieval == "dense" else keyword_relevance(keyword, params)
    if dense is not None and kw is not None and settings.fusion == "noisy_or":
        base = fuse_noisy_or(dense, kw, keyword_weight=settings.keyword_weight)
    elif dense is not None and kw is not None and settings.fusion == "rrf":
        base = fuse_rrf(
            np.where(np.isnan(np.asarray(cosine, dtype=np.float64)), np.nan, dense),
            np.where(np.isnan(np.asarray(keyword, dtype=np.float64)), np.nan, kw),
            k=settings.rrf_k,
            dense_weight=settings.dense_weight,
        )
    else:
        base = base_relevance(dense, kw, settings.dense_weight)
    window = None if in_window is None else np.asarray(in_window, dtype=bool)
    win = np.zeros(n) if window is None else window.astype(np.float64)
    ent = np.zeros(n) if entity is None else np.asarray(entity, dtype=np.float64)
    tuned = replace(params, time_boost=settings.temporal_boost)
    if adjacent is not None and groups is not None:
        rel, own = contextual_relevance(base, adjacent, groups, ent, win, tuned)
    else:
        lone = np.full((n, 4), -1, dtype=np.int64)
        rel, own = contextual_relevance(base, lone, np.arange(n, dtype=np.int64), ent, win, tuned)
    if half_life_days is None:
        rec = recency_signal(now_seconds - created, decay_per_day)
    else:
        rec = half_life_strength(now_seconds - created, half_life_days)
    imp = importance_signal(importance)
    _, w_rec, w_imp = weights.normalized()
    band = TIE_BAND * (w_rec + w_imp)
    score = (rel + TIE_BAND * (w_rec * rec + w_imp * imp)) / (1.0 + TIE_BAND)
    eligible = np.ones(n, dtype=bool)
    if pool_size is not None and pool_size < n:
        eligible[:] = False
        top = np.argsort(-base, kind="stable")[:pool_size]
        eligible[top] = True
        if adjacent is not None:
            near = np.asarray(adjacent, dtype=np.int64)[top].ravel()
            eligible[near[near >= 0]] = True
    if min_relevance > 0.0:
        eligible &= own >= min_relevance
    pool = np.flatnonzero(eligible)
    if len(pool) == 0:
        return []
    # lexsort: last key is primary. Sort by -score, then -created, then index.
    ordered = pool[np.lexsort((pool, -created[pool], -score[pool]))]
    order = ordered[:limit]

    def optional(values: FloatArray | None, raw: NDArray[np.floating] | None, i: int) -> float | None:
        if values is None or raw is None or math.isnan(float(raw[i])):
            return None
        return float(values[i])

    def decided(pos: int) -> str:
        if pos + 1 >= len(ordered):
            return "relevance"
        gap = float(rel[ordered[pos]] - rel[ordered[pos + 1]])
        return "relevance" if gap > band or band == 0.0 else "tie_break"

    return [
        RankedCandidate(
            index=int(i),
            breakdown=ScoreBreakdown(
                relevance=float(rel[i]),
                recency=float(rec[i]),
                importance=float(imp[i]),
                score=float(score[i]),
                dense=optional(dense, cosine, i),
                keyword=optional(kw, keyword, i),
                retrieval=retrieval,
                fallback=fallback,
                in_window=None if window is None else bool(window[i]),
                own_relevance=float(own[i]),
                decided_by=decided(pos),
            ),
        )
        for pos, i in enumerate(order)
    ]
