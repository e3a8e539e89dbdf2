"""Pure relevance-first ranking: relevance decides, recency and importance break near-ties.

No I/O here: every store hands the same arrays to :func:`rank`, so ranking is identical for
every backend. The relevance signals (dense calibration, saturated per-scope BM25, session
context, entity and time-window boosts) and their constants are in
:mod:`memlane.recall.relevance`; the README's "Ranking" section gives the whole formula.

The combination keeps the three factors of Park et al. 2023, *Generative Agents: Interactive
Simulacra of Human Behavior* (UIST '23, section 4.1) — relevance, recency, importance — but
not their plain weighted mean, which on data spanning months lets recency bury clearly better
matches. Instead (a lexicographic order with a tolerance band)::

    score = (relevance + tie_band * (w_rec * recency + w_imp * importance) / w_sum) / (1 + tie_band)

with the profile's ``tie_band = 0.1``: an episode more relevant by more than ``tie_band * (w_rec +
w_imp) / w_sum`` always ranks first; equally relevant -> newer first; equally relevant and equally
old -> more important first. A preset may widen the band (``RankingWeights.tie_band``:
``agent_context``, ``cold_start`` and ``conversation`` use 1, so importance or recency can outrank a
moderately better match; the lift is gated by relevance, :data:`WIDE_BAND_FULL_LIFT`) or use the
seed formula (``formula="seed"``: the weighted mean of
``clip(cosine, 0, 1)``, recency and importance; :func:`scores_of`). Each hit's
:class:`~memlane.models.ScoreBreakdown` carries the terms of this sum (``contributions``: value,
weight and points of each signal), the boosts, the tie band and the signal that decided its place
(``decided_by``), so displays render it and never recompute it.

Every constant comes from one :class:`memlane.config.profile.RankingProfile`; :func:`rank` takes
the candidates' arrays as one :class:`CandidateSignals` and the per-recall choices as
:class:`RankOptions`.

* **Recency** decays per *day of age* since ``created_at`` (``decay ** age_days``, default
  0.995: 30 days -> 0.8604), not per hour since last access; episodes dated after ``now``
  count as age 0. With a forgetting policy (``MemoryConfig(forgetting=True)``) it is the
  half-life strength ``0.5 ** (age_days / half_life)`` of the episode's importance band.
* **Importance** is the rating / 10 (clamped to [1, 10]); unrated episodes score a neutral 0.5.
* **Base relevance** fuses the calibrated dense and keyword signals: convex ``w * dense +
  (1 - w) * keyword`` by default (Bruch, Gai & Ingber 2023, *An Analysis of Fusion Functions for
  Hybrid Retrieval*, ACM TOIS), ``w = 1 - 0.6 * (1 - coverage)`` growing with the share of the
  candidates that match a query term (:func:`memlane.recall.relevance.coverage_dense_weight`);
  noisy-OR (:func:`fuse_noisy_or`) and reciprocal rank fusion (:func:`fuse_rrf`; Cormack, Clarke &
  Büttcher 2009, SIGIR '09; competition ranks, so the order rows arrive in does not matter) are
  selectable (:class:`memlane.config.profile.Fusion`).
* Hits come only from the ``pool_size`` candidates with the highest base relevance (and their
  neighbours), so an approximate index that returns that top-N gives the same hits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
from numpy.typing import NDArray

from memlane.clock import SECONDS_PER_DAY
from memlane.config.forgetting import half_life_strength
from memlane.config.profile import (  # the weight names are re-exported: their home is config.profile
    DEFAULT_DECAY_PER_DAY,
    FUSION_METHODS,
    PRESETS,
    RETRIEVAL_MODES,
    Fusion,
    RankingProfile,
    RankingWeights,
    resolve_weights,
)
from memlane.errors import ValidationError
from memlane.models import SIGNALS, AppliedBoost, Contribution, ScoreBreakdown
from memlane.recall.relevance import (
    agent_discounted,
    base_relevance,
    boost_factor,
    boosted,
    contextual_relevance,
    coverage_dense_weight,
    dense_relevance,
    keyword_coverage,
    keyword_relevance,
)

__all__ = [
    "DEFAULT_DECAY_PER_DAY",
    "FUSION_METHODS",
    "PRESETS",
    "RETRIEVAL_MODES",
    "CandidateSignals",
    "RankOptions",
    "RankedCandidate",
    "RankingWeights",
    "Relevance",
    "Scores",
    "competition_ranks",
    "convex_dense_weight",
    "decided_by",
    "fuse",
    "fuse_noisy_or",
    "fuse_rrf",
    "half_life_strength",
    "importance_signal",
    "rank",
    "recency_signal",
    "relevance_of",
    "resolve_retrieval",
    "resolve_weights",
    "scores_of",
    "seed_relevance",
]

BALANCED = PRESETS["balanced"]
UNRATED_IMPORTANCE_SIGNAL = 0.5

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class CandidateSignals:
    """The raw per-candidate arrays of one ranked read, parallel to the candidates (length ``n``).

    Attributes:
        created_at_seconds: ``[n]`` candidates' ``created_at`` as Unix seconds.
        importance: ``[n]`` ratings in [1, 10], NaN for unrated.
        cosine: ``[n]`` cosine similarity to the query, NaN where the candidate has none; ``None``
            when the embeddings were not used.
        keyword: ``[n]`` per-scope BM25 (>= 0, NaN = no match), or ``None`` when keywords were not used.
        in_window: ``[n]`` whether each candidate lies in the query's time window, or ``None``
            when the query named no time.
        half_life_days: ``[n]`` forgetting half-lives in days (``inf`` = never), or ``None``; when
            given, recency is ``0.5 ** (age_days / half_life)``.
        adjacent: int64 ``[n, 4]`` candidate index of each candidate's -2, -1, +1, +2 session
            neighbour (-1 = none), or ``None`` for no context signals.
        groups: int64 ``[n]`` group numbers (:func:`memlane.recall.relevance.groups_by_gap`);
            required with ``adjacent``.
        entity: ``[n]`` 0/1 entity signal (:func:`memlane.recall.relevance.entity_signal`), or ``None``.
        graph: ``[n]`` knowledge-graph entity signal in [0, 1]
            (:func:`memlane.recall.entities.graph_signal`), or ``None`` (the stage did not run).
        agent: ``[n]`` 0/1 agent-turn signal (:func:`memlane.recall.relevance.agent_signal`: the
            agent's own turn, the query not about the agent's words), or ``None`` (no discount).

    Raises:
        ValidationError: arrays of different lengths.
    """

    created_at_seconds: NDArray[np.floating]
    importance: NDArray[np.floating]
    cosine: NDArray[np.floating] | None = None
    keyword: NDArray[np.floating] | None = None
    in_window: NDArray[np.bool_] | None = None
    half_life_days: NDArray[np.floating] | None = None
    adjacent: NDArray[np.int64] | None = None
    groups: NDArray[np.int64] | None = None
    entity: NDArray[np.floating] | None = None
    graph: NDArray[np.floating] | None = None
    agent: NDArray[np.floating] | None = None

    def __post_init__(self) -> None:
        n = len(self.created_at_seconds)
        others = (self.importance, self.cosine, self.keyword, self.in_window, self.half_life_days)
        context = (self.adjacent, self.groups, self.entity, self.graph, self.agent)
        if any(a is not None and len(a) != n for a in (*others, *context)):
            raise ValidationError("every candidate array must have the same length")

    def __len__(self) -> int:
        return len(self.created_at_seconds)


@dataclass(frozen=True, slots=True)
class RankOptions:
    """The per-read choices of a ranking.

    Attributes:
        now_seconds: The read's ``now`` as Unix seconds.
        limit: Maximum number of results, >= 1.
        weights: Preset weights: how far recency and importance reach, or the seed formula.
        retrieval: ``"hybrid"``, ``"dense"`` or ``"keyword"``: which signals make relevance.
            Default: ``"hybrid"`` if both arrays are given, else the one given.
        min_relevance: Candidates whose *own* relevance is below this (in [0, 1]) are dropped.
        fallback: Recorded in every breakdown: the embedder failed and the read fell back to keywords.
        pool_size: Hits come only from the ``pool_size`` candidates with the highest base
            relevance and their +-2 neighbours (``None``: every candidate).
    """

    now_seconds: float
    limit: int
    weights: RankingWeights = BALANCED
    retrieval: str | None = None
    min_relevance: float = 0.0
    fallback: bool = False
    pool_size: int | None = None


@dataclass(frozen=True, slots=True)
class RankedCandidate:
    """Position of a candidate in the input arrays plus its score breakdown."""

    index: int
    breakdown: ScoreBreakdown


def resolve_retrieval(signals: CandidateSignals, retrieval: str | None) -> str:
    """The retrieval mode of a ranking: ``retrieval``, or the one the given arrays imply.

    Raises:
        ValidationError: an unknown mode, or one whose cosine/keyword array is missing.
    """
    if retrieval is None:
        if signals.cosine is not None and signals.keyword is not None:
            return "hybrid"
        return "keyword" if signals.cosine is None else "dense"
    if retrieval not in RETRIEVAL_MODES:
        raise ValidationError(f"retrieval must be one of {list(RETRIEVAL_MODES)}, got {retrieval!r}")
    if (retrieval != "keyword" and signals.cosine is None) or (
        retrieval != "dense" and signals.keyword is None
    ):
        raise ValidationError(f"retrieval {retrieval!r} needs the matching cosine/keyword arrays")
    return retrieval


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


def convex_dense_weight(signals: CandidateSignals, fusion: Fusion) -> float:
    """The convex fusion's dense share for these candidates: ``fusion.dense_weight`` adapted to their
    keyword coverage (:func:`memlane.recall.relevance.coverage_dense_weight`); the share itself
    without keyword scores."""
    if signals.keyword is None:
        return fusion.dense_weight
    coverage = keyword_coverage(signals.keyword)
    return coverage_dense_weight(fusion.dense_weight, coverage, fusion.coverage_power)


def fuse(
    dense: FloatArray | None, keyword: FloatArray | None, signals: CandidateSignals, fusion: Fusion
) -> FloatArray:
    """Base relevance from the calibrated signals (``None`` = not used), by ``fusion.method``.

    One signal alone is itself; both are fused convexly (:func:`memlane.recall.relevance.base_relevance`,
    dense share :func:`convex_dense_weight`), by :func:`fuse_noisy_or` or by :func:`fuse_rrf` (ranks over
    the candidates that have the raw signal).
    """
    if dense is None or keyword is None or fusion.method == "convex":
        return base_relevance(dense, keyword, convex_dense_weight(signals, fusion))
    if fusion.method == "noisy_or":
        return fuse_noisy_or(dense, keyword, keyword_weight=fusion.keyword_weight)
    assert signals.cosine is not None and signals.keyword is not None
    return fuse_rrf(
        np.where(np.isnan(np.asarray(signals.cosine, dtype=np.float64)), np.nan, dense),
        np.where(np.isnan(np.asarray(signals.keyword, dtype=np.float64)), np.nan, keyword),
        k=fusion.rrf_k,
        dense_weight=fusion.dense_weight,
    )


@dataclass(frozen=True, slots=True)
class Relevance:
    """The relevance stages of every candidate (``[n]`` arrays; :mod:`memlane.recall.relevance`).

    Attributes:
        dense: Calibrated dense signal, or ``None`` when not used.
        keyword: Saturated keyword signal, or ``None`` when not used.
        base: Fused base relevance ``r0``.
        relevance: ``r0`` with context, boosts and the agent-turn discount: what orders the candidates.
        own: ``r0`` with boosts and the agent-turn discount only (what ``min_relevance`` filters on).
        entity: 0/1 entity signal.
        in_window: 0/1 time-window signal.
        fusion: The fusion method used, or ``None`` when only one signal was.
        graph: Knowledge-graph entity signal in [0, 1] (zeros when the stage did not run).
        agent: 0/1 agent-turn signal, or ``None`` (no discount).
    """

    dense: FloatArray | None
    keyword: FloatArray | None
    base: FloatArray
    relevance: FloatArray
    own: FloatArray
    entity: FloatArray
    in_window: FloatArray
    fusion: str | None
    graph: FloatArray | None = None
    agent: FloatArray | None = None


def relevance_of(signals: CandidateSignals, profile: RankingProfile, mode: str) -> Relevance:
    """Every relevance stage of the candidates under ``profile`` for retrieval ``mode``."""
    n = len(signals)
    dense = (
        None
        if signals.cosine is None or mode == "keyword"
        else dense_relevance(signals.cosine, profile.dense)
    )
    kw = (
        None
        if signals.keyword is None or mode == "dense"
        else keyword_relevance(signals.keyword, profile.keyword_saturation)
    )
    base = fuse(dense, kw, signals, profile.fusion)
    win = (
        np.zeros(n)
        if signals.in_window is None
        else np.asarray(signals.in_window, dtype=bool).astype(np.float64)
    )
    ent = np.zeros(n) if signals.entity is None else np.asarray(signals.entity, dtype=np.float64)
    if signals.adjacent is not None and signals.groups is not None:
        adjacent, groups = signals.adjacent, signals.groups
    else:
        adjacent, groups = np.full((n, 4), -1, dtype=np.int64), np.arange(n, dtype=np.int64)
    graph = None if signals.graph is None else np.asarray(signals.graph, dtype=np.float64)
    factor = boost_factor(ent, win, profile.boosts, graph)
    context = contextual_relevance(base, adjacent, groups, profile.context)
    fusion = None if dense is None or kw is None else profile.fusion.method
    agent = None if signals.agent is None else np.asarray(signals.agent, dtype=np.float64)
    own = agent_discounted(boosted(base, factor), agent, profile.speakers)
    rel = agent_discounted(boosted(context, factor), agent, profile.speakers)
    return Relevance(dense, kw, base, rel, own, ent, win, fusion, graph, agent)


def seed_relevance(signals: CandidateSignals, profile: RankingProfile, mode: str) -> tuple[Relevance, str]:
    """The seed formula's relevance: ``clip(cosine, 0, 1)`` (0 without a vector), and its mode.

    No keywords, context or boosts. Without cosines (keyword-only recall or the embedder's
    fallback) or for ``retrieval="keyword"`` it is the keyword signal instead.
    """
    n = len(signals)
    zeros = np.zeros(n)
    if signals.cosine is not None and mode != "keyword":
        cos = np.asarray(signals.cosine, dtype=np.float64)
        rel = np.clip(np.nan_to_num(cos, nan=0.0), 0.0, 1.0)
        return Relevance(rel, None, rel, rel, rel, zeros, zeros, None), "dense"
    assert signals.keyword is not None
    rel = keyword_relevance(signals.keyword, profile.keyword_saturation)
    return Relevance(None, rel, rel, rel, rel, zeros, zeros, None), "keyword"


def recency_of(signals: CandidateSignals, profile: RankingProfile, now_seconds: float) -> FloatArray:
    """``[n]`` recency: the forgetting half-life strength when given, else the profile's daily decay."""
    age = now_seconds - np.asarray(signals.created_at_seconds, dtype=np.float64)
    if signals.half_life_days is None:
        return recency_signal(age, profile.decay_per_day)
    return half_life_strength(age, signals.half_life_days)


WIDE_BAND_FULL_LIFT = 0.2
"""With a preset's own (wide) tie band, recency and importance lift a hit by ``min(1, relevance / 0.2)``
of their full reach: an episode at least moderately relevant (0.2) gets all of it, an irrelevant one
none, so importance alone never brings an unrelated episode into the results."""


@dataclass(frozen=True, slots=True)
class Scores:
    """The scores of the candidates and the terms they are made of (module docstring).

    Attributes:
        values: ``[3, n]`` relevance, recency and importance (:data:`memlane.models.SIGNALS` order).
        weights: ``(3,)`` each signal's weight in the score (before ``gate``).
        total: ``[n]`` the score.
        tie_band: The relevance lead within which recency and importance can still reorder
            (``None``: any lead, when relevance weighs nothing).
        gate: ``[n]`` the share of recency's and importance's weight each candidate gets
            (:data:`WIDE_BAND_FULL_LIFT`), or ``None`` for all of it.
    """

    values: FloatArray
    weights: tuple[float, float, float]
    total: FloatArray
    tie_band: float | None
    gate: FloatArray | None = None

    def weights_at(self, idx: NDArray[np.intp]) -> FloatArray:
        """``[3, k]`` the weight of each signal in the scores of candidates ``idx`` (int ``[k]``)."""
        w = np.asarray(self.weights, dtype=np.float64)[:, None]
        if self.gate is None:
            return np.repeat(w, len(idx), axis=1)
        g = self.gate[idx]
        return np.asarray(w * np.vstack([np.ones(len(idx)), g, g]), dtype=np.float64)

    def points_at(self, idx: NDArray[np.intp]) -> FloatArray:
        """``[3, k]`` the points each signal adds to the scores of candidates ``idx`` (int ``[k]``)."""
        return np.asarray(self.values[:, idx] * self.weights_at(idx), dtype=np.float64)

    def weights_of(self, i: int) -> FloatArray:
        """``(3,)`` the weight of each signal in candidate ``i``'s score."""
        return self.weights_at(np.array([i]))[:, 0]

    def points(self, i: int) -> FloatArray:
        """``(3,)`` the points each signal adds to candidate ``i``'s score."""
        return self.points_at(np.array([i]))[:, 0]


def scores_of(
    rel: FloatArray, rec: FloatArray, imp: FloatArray, weights: RankingWeights, tie_band: float
) -> Scores:
    """The scores of ``weights.formula`` with normalised weights ``w``.

    ``"relevance_first"``: ``(rel + band * g * (w_rec * rec + w_imp * imp)) / (1 + band)`` with ``band =
    tie_band`` (the profile's) and ``g = 1`` when ``weights.tie_band`` is ``None``, else ``band =
    weights.tie_band`` and ``g = min(1, rel / 0.2)`` (:data:`WIDE_BAND_FULL_LIFT`). ``"seed"``: ``w_rel *
    rel + w_rec * rec + w_imp * imp``, whose tie band is ``(w_rec + w_imp) / w_rel``.
    """
    w_rel, w_rec, w_imp = weights.normalized()
    values = np.vstack([rel, rec, imp])
    if weights.formula == "seed":
        shares = (w_rel, w_rec, w_imp)
        band = (w_rec + w_imp) / w_rel if w_rel > 0 else None
        return Scores(values, shares, w_rel * rel + w_rec * rec + w_imp * imp, band)
    tb = tie_band if weights.tie_band is None else weights.tie_band
    gate = None if weights.tie_band is None else np.clip(rel / WIDE_BAND_FULL_LIFT, 0.0, 1.0)
    scale = 1.0 + tb
    shares = (1.0 / scale, tb * w_rec / scale, tb * w_imp / scale)
    lift = tb * (w_rec * rec + w_imp * imp) * (1.0 if gate is None else gate)
    return Scores(values, shares, (rel + lift) / scale, tb * (w_rec + w_imp), gate)


def _eligible(
    base: FloatArray, own: FloatArray, signals: CandidateSignals, options: RankOptions
) -> NDArray[np.intp]:
    """Indices of the candidates that may be hits: the pool by base relevance (+-2 neighbours), own >= min."""
    n = len(base)
    eligible = np.ones(n, dtype=bool)
    pool_size = options.pool_size
    if pool_size is not None and pool_size < n:
        eligible[:] = False
        top = np.argsort(-base, kind="stable")[:pool_size]
        eligible[top] = True
        if signals.adjacent is not None:
            near = np.asarray(signals.adjacent, dtype=np.int64)[top].ravel()
            eligible[near[near >= 0]] = True
    if options.min_relevance > 0.0:
        eligible &= own >= options.min_relevance
    return np.flatnonzero(eligible)


def decided_by(scores: Scores, first: int, second: int | None) -> str:
    """The signal that puts candidate ``first`` above ``second`` (``None``: nothing below it).

    The signal whose points differ most in ``first``'s favour (relevance on a tie of differences);
    ``"order"`` when both scores are equal (the newer episode, then the earlier candidate, goes first).
    """
    if second is None:
        return "relevance"
    return _decided(scores, np.array([first, second]))[0]


def _decided(scores: Scores, ordered: NDArray[np.intp]) -> list[str]:
    """:func:`decided_by` of each of ``ordered[:-1]`` against the candidate after it (int ``[k + 1]``)."""
    points = scores.points_at(ordered)
    total = scores.total[ordered]
    best = np.argmax(points[:, :-1] - points[:, 1:], axis=0).tolist()
    tied = (total[:-1] == total[1:]).tolist()
    return ["order" if tie else SIGNALS[k] for tie, k in zip(tied, best, strict=True)]


def _column(values: NDArray[np.floating] | None, idx: NDArray[np.intp]) -> list[float] | None:
    """``values[idx]`` as Python floats (``None`` when there are no values)."""
    return None if values is None else np.asarray(values, dtype=np.float64)[idx].tolist()


def _boosts(
    profile: RankingProfile, entity: float, in_window: float, graph: float
) -> tuple[AppliedBoost, ...]:
    """The boosts that lifted a candidate with these signals; the graph boost's strength is ``graph * g``
    (``graph`` already clipped to [0, 1])."""
    applied = (
        ("entity", entity, profile.boosts.entity),
        ("time_window", in_window, profile.boosts.time_window),
        ("graph", graph, profile.boosts.graph * graph),
    )
    return tuple(AppliedBoost(name, strength) for name, on, strength in applied if on > 0 and strength > 0)


def _agent_discount(profile: RankingProfile, agent: float | None) -> float | None:
    """The discount of a candidate with agent signal ``agent`` as the agent's own turn (``None``: not
    discounted)."""
    if agent is None or agent <= 0 or profile.speakers.agent_discount <= 0:
        return None
    return float(profile.speakers.agent_discount)


def _optional(values: list[float] | None, raw: list[float] | None, k: int) -> float | None:
    """``values[k]``, or ``None`` without values or where the raw signal is NaN (absent)."""
    if values is None or raw is None or math.isnan(raw[k]):
        return None
    return values[k]


@dataclass(frozen=True, slots=True)
class _Ranking:
    """Everything a breakdown is read from."""

    signals: CandidateSignals
    profile: RankingProfile
    options: RankOptions
    mode: str
    relevance: Relevance
    scores: Scores


def _breakdowns(r: _Ranking, ordered: list[int], count: int) -> list[ScoreBreakdown]:
    """The breakdowns of the first ``count`` of ``ordered`` (best first; one more, if given, is the
    candidate below the last): every array read once for all of them, as Python values."""
    rel, scores, signals, profile = r.relevance, r.scores, r.signals, r.profile
    idx = np.asarray(ordered, dtype=np.intp)
    hits = idx[:count]
    values, weights, points = scores.values[:, hits], scores.weights_at(hits), scores.points_at(hits)
    decided = _decided(scores, idx) if len(idx) > 1 else []
    decided += ["relevance"] * (len(hits) - len(decided))  # nothing ranks below the last
    total = scores.total[idx].tolist()
    lead: list[float | None] = [a - b for a, b in pairwise(total)]
    lead += [None] * (len(idx) == len(hits))
    relevance, own, base = _column(rel.relevance, hits), _column(rel.own, hits), _column(rel.base, hits)
    dense, cosine = _column(rel.dense, hits), _column(signals.cosine, hits)
    keyword, bm25 = _column(rel.keyword, hits), _column(signals.keyword, hits)
    entity, window = _column(rel.entity, hits), _column(rel.in_window, hits)
    graph = [0.0] * len(hits) if rel.graph is None else np.clip(rel.graph[hits], 0.0, 1.0).tolist()
    agent = _column(rel.agent, hits)
    in_window = None if signals.in_window is None else np.asarray(signals.in_window)[hits].tolist()
    assert relevance is not None and own is not None and base is not None
    assert entity is not None and window is not None
    columns = zip(
        values.T.tolist(), weights.T.tolist(), points.T.tolist(), decided, total, lead, strict=False
    )
    out = []
    for k, (value, weight, point, by, score, ahead) in enumerate(columns):
        out.append(
            ScoreBreakdown(
                relevance=relevance[k],
                recency=value[1],
                importance=value[2],
                score=score,
                dense=_optional(dense, cosine, k),
                keyword=_optional(keyword, bm25, k),
                retrieval=r.mode,
                fallback=r.options.fallback,
                in_window=None if in_window is None else bool(in_window[k]),
                own_relevance=own[k],
                decided_by=by,
                fusion=rel.fusion,
                base_relevance=base[k],
                boosts=_boosts(profile, entity[k], window[k], graph[k]),
                agent_discount=_agent_discount(profile, None if agent is None else agent[k]),
                contributions=tuple(
                    Contribution(name, value[j], weight[j], point[j]) for j, name in enumerate(SIGNALS)
                ),
                tie_band=scores.tie_band,
                lead=ahead,
            )
        )
    return out


def rank(signals: CandidateSignals, profile: RankingProfile, options: RankOptions) -> list[RankedCandidate]:
    """Score every candidate relevance-first and return the best ``options.limit``, best first.

    Args:
        signals: The candidates' arrays.
        profile: Every ranking constant.
        options: The read's ``now``, limit, weights, retrieval mode, threshold and pool.

    Returns:
        Up to ``limit`` candidates ordered by score descending; ties go to the newer
        episode, then to the lower input index (stable). Each breakdown says why.

    Raises:
        ValidationError: no relevance signal for ``retrieval``, an unknown ``retrieval``, or
            ``min_relevance`` outside [0, 1].
    """
    mode = resolve_retrieval(signals, options.retrieval)
    if not 0.0 <= options.min_relevance <= 1.0:
        raise ValidationError(f"min_relevance must be in [0, 1], got {options.min_relevance!r}")
    if len(signals) == 0:
        return []
    if options.weights.formula == "seed":
        relevance, mode = seed_relevance(signals, profile, mode)
    else:
        relevance = relevance_of(signals, profile, mode)
    recency = recency_of(signals, profile, options.now_seconds)
    scores = scores_of(
        relevance.relevance, recency, importance_signal(signals.importance), options.weights, profile.tie_band
    )
    pool = _eligible(relevance.base, relevance.own, signals, options)
    created = np.asarray(signals.created_at_seconds, dtype=np.float64)
    # lexsort: last key is primary. Sort by -score, then -created, then index.
    # Only the hits and the one below the last (its lead and decided_by) leave numpy.
    ordered = pool[np.lexsort((pool, -created[pool], -scores.total[pool]))][: options.limit + 1].tolist()
    ranking = _Ranking(signals, profile, options, mode, relevance, scores)
    breakdowns = _breakdowns(ranking, ordered, options.limit)
    return [RankedCandidate(index=i, breakdown=b) for i, b in zip(ordered, breakdowns, strict=False)]
