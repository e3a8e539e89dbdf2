"""Unit tests of the pure ranking math (no store, no embedder)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlane import PRESETS, RankingWeights, ValidationError, wire
from memlane.config.profile import RankingProfile
from memlane.recall.ranking import (
    CandidateSignals,
    RankedCandidate,
    RankOptions,
    importance_signal,
    rank,
    recency_signal,
    resolve_weights,
)

DAY = 86_400.0


def rank_arrays(
    *,
    cosine: np.ndarray,
    created_at_seconds: np.ndarray,
    importance: np.ndarray,
    now_seconds: float,
    weights: RankingWeights,
    decay_per_day: float,
    limit: int,
) -> list[RankedCandidate]:
    """:func:`rank` of dense-only candidates, with every array and option spelled out."""
    return rank(
        CandidateSignals(created_at_seconds, importance, cosine=cosine),
        RankingProfile(decay_per_day=decay_per_day),
        RankOptions(now_seconds=now_seconds, limit=limit, weights=weights),
    )


def test_recency_of_a_30_day_old_episode() -> None:
    assert recency_signal(np.array([30 * DAY]))[0] == pytest.approx(0.995**30)
    assert recency_signal(np.array([30 * DAY]))[0] == pytest.approx(0.8604, abs=5e-5)


def test_recency_edges() -> None:
    rec = recency_signal(np.array([0.0, -5 * DAY, 138.3 * DAY, 1e4 * DAY]))
    assert rec[0] == 1.0
    assert rec[1] == 1.0  # future-dated episodes count as age 0
    assert rec[2] == pytest.approx(0.5, abs=1e-3)  # half-life of 0.995/day is ~138.3 days
    assert 0.0 <= rec[3] < 1e-20
    assert recency_signal(np.array([10 * DAY]), decay_per_day=1.0)[0] == 1.0
    with pytest.raises(ValidationError):
        recency_signal(np.array([1.0]), decay_per_day=0.0)
    with pytest.raises(ValidationError):
        recency_signal(np.array([1.0]), decay_per_day=1.5)


def test_importance_signal() -> None:
    assert list(importance_signal(np.array([1.0, 5.0, 10.0, np.nan]))) == pytest.approx([0.1, 0.5, 1.0, 0.5])


def test_rank_orders_relevance_first_with_breakdown() -> None:
    now = 1000 * DAY
    ranked = rank_arrays(
        cosine=np.array([0.9, 0.2, 0.5]),
        created_at_seconds=np.array([now - 300 * DAY, now, now - 10 * DAY]),
        importance=np.array([np.nan, 10.0, 6.0]),
        now_seconds=now,
        weights=RankingWeights(),
        decay_per_day=0.995,
        limit=3,
    )
    expected = []
    for i, (c, age, imp) in enumerate([(0.9, 300, 0.5), (0.2, 0, 1.0), (0.5, 10, 0.6)]):
        rel = min(1.0, max(0.0, (c - 0.1) / 0.6))  # calibrated dense relevance
        expected.append(((rel + 0.1 * (0.995**age + imp) / 3) / 1.1, i))  # relevance-first score
    expected.sort(reverse=True)
    assert [r.index for r in ranked] == [i for _, i in expected]
    for r, (score, _) in zip(ranked, expected, strict=True):
        assert r.breakdown.score == pytest.approx(score)


def test_rank_ties_prefer_newer_then_input_order() -> None:
    ranked = rank_arrays(
        cosine=np.array([0.5, 0.5, 0.5]),
        created_at_seconds=np.array([10.0, 20.0, 20.0]),
        importance=np.array([5.0, 5.0, 5.0]),
        now_seconds=20.0,
        weights=RankingWeights(1, 0, 1),
        decay_per_day=0.995,
        limit=3,
    )
    assert [r.index for r in ranked] == [1, 2, 0]


def test_rank_limit_and_empty() -> None:
    args = dict(now_seconds=0.0, weights=RankingWeights(), decay_per_day=0.995)
    assert (
        rank_arrays(
            cosine=np.zeros(0), created_at_seconds=np.zeros(0), importance=np.zeros(0), limit=5, **args
        )
        == []
    )  # type: ignore[arg-type]
    out = rank_arrays(
        cosine=np.linspace(0, 0.7, 50),  # inside the calibrated range: 50 distinct relevances
        created_at_seconds=np.zeros(50),
        importance=np.full(50, np.nan),
        limit=5,
        **args,
    )  # type: ignore[arg-type]
    assert [r.index for r in out] == [49, 48, 47, 46, 45]
    with pytest.raises(ValidationError):
        rank_arrays(
            cosine=np.zeros(2), created_at_seconds=np.zeros(3), importance=np.zeros(2), limit=1, **args
        )  # type: ignore[arg-type]


@given(
    st.lists(
        st.tuples(
            st.floats(-1, 1),
            st.floats(0, 5000),
            st.one_of(st.just(math.nan), st.floats(1, 10)),
        ),
        min_size=1,
        max_size=40,
    ),
    st.floats(0, 5),
    st.floats(0, 5),
    st.floats(0, 5),
    st.integers(1, 50),
)
def test_rank_invariants(
    rows: list[tuple[float, float, float]], w1: float, w2: float, w3: float, limit: int
) -> None:
    if w1 + w2 + w3 <= 0:
        return
    cos, age, imp = (np.array(col, dtype=np.float64) for col in zip(*rows, strict=True))
    ranked = rank_arrays(
        cosine=cos,
        created_at_seconds=-age * DAY,
        importance=imp,
        now_seconds=0.0,
        weights=RankingWeights(w1, w2, w3),
        decay_per_day=0.995,
        limit=limit,
    )
    assert len(ranked) == min(limit, len(rows))
    assert len({r.index for r in ranked}) == len(ranked)
    scores = [r.breakdown.score for r in ranked]
    assert scores == sorted(scores, reverse=True)
    for r in ranked:
        b = r.breakdown
        for v in (b.relevance, b.recency, b.importance, b.score):
            assert 0.0 <= v <= 1.0
    # Nothing left out scores higher than the last one kept.
    kept = {r.index for r in ranked}
    w = RankingWeights(w1, w2, w3).normalized()
    rel = np.clip((cos - 0.1) / 0.6, 0, 1)
    mix = w[1] * 0.995**age + w[2] * np.where(np.isnan(imp), 0.5, imp / 10)
    all_scores = (rel + 0.1 * mix) / 1.1
    if len(kept) < len(rows):
        assert max(all_scores[i] for i in range(len(rows)) if i not in kept) <= min(scores) + 1e-9


def test_weights_validation_and_presets() -> None:
    assert RankingWeights().normalized() == pytest.approx((1 / 3, 1 / 3, 1 / 3))
    assert PRESETS["specific_question"].normalized() == pytest.approx((0.6, 0.2, 0.2))
    assert set(PRESETS) >= {"balanced", "specific_question", "agent_context", "conversation", "cold_start"}
    for bad in [(-1, 1, 1), (0, 0, 0), (math.nan, 1, 1), (math.inf, 1, 1), (True, 1, 1)]:
        with pytest.raises(ValidationError):
            RankingWeights(*bad)  # type: ignore[arg-type]
    default = RankingWeights(2, 1, 1)
    assert resolve_weights(None, default) is default
    assert resolve_weights("cold_start", default) == PRESETS["cold_start"]
    assert resolve_weights({"relevance": 1}, default) == RankingWeights(1, 0, 0)
    for bad_arg in ("unknown", {"relevance": 1, "x": 2}, 3):
        with pytest.raises(ValidationError):
            resolve_weights(bad_arg, default)  # type: ignore[arg-type]


def _order(cosine: list[float], age_days: list[float], importance: list[float], weights: str) -> list[int]:
    now = 1000 * DAY
    ranked = rank_arrays(
        cosine=np.array(cosine),
        created_at_seconds=now - np.array(age_days) * DAY,
        importance=np.array(importance),
        now_seconds=now,
        weights=PRESETS[weights],
        decay_per_day=0.995,
        limit=len(cosine),
    )
    return [r.index for r in ranked]


@pytest.mark.parametrize("preset", ["balanced", "conversation", "specific_question", "agent_context"])
def test_equally_relevant_newer_first(preset: str) -> None:
    assert _order([0.5, 0.5], [90, 7], [math.nan, math.nan], preset) == [1, 0]


@pytest.mark.parametrize("preset", ["balanced", "cold_start", "agent_context"])
def test_equally_relevant_and_old_more_important_first(preset: str) -> None:
    assert _order([0.5, 0.5], [30, 30], [2.0, 9.0], preset) == [1, 0]


RELEVANCE_FIRST = sorted(
    p for p, w in PRESETS.items() if w.tie_band is None and w.formula == "relevance_first"
)
"""The presets inside the profile's tie band (the others reach further: tests/unit/test_presets.py)."""


@pytest.mark.parametrize("preset", RELEVANCE_FIRST)
def test_a_clearly_better_match_is_never_buried_by_recency_or_importance(preset: str) -> None:
    # 0.62 vs 0.5 cosine: calibrated relevance 0.87 vs 0.67, more than the 0.1 tie band apart.
    assert _order([0.5, 0.62], [0, 400], [10.0, 1.0], preset)[0] == 1


def test_presets_keep_their_meaning_within_the_band() -> None:
    cos = [0.5, 0.5, 0.5, 0.5, 0.57]  # the last is 0.117 more relevant: always first
    ages = [90.0, 7.0, 7.0, 7.0, 200.0]
    imps = [math.nan, math.nan, 9.0, 2.0, math.nan]
    assert _order(cos, ages, imps, "balanced") == [4, 2, 1, 3, 0]
    assert _order(cos, ages, imps, "relevance_only") == [4, 1, 2, 3, 0]  # ties: newer, then input order
    # cold_start reaches as far as relevance: importance 9 over unrated is worth 0.7 * 0.4 = 0.28 > 0.117.
    assert _order(cos, ages, imps, "cold_start")[:2] == [2, 4]


@given(
    st.lists(
        st.tuples(st.floats(0.1, 0.7), st.floats(0, 3000), st.one_of(st.just(math.nan), st.floats(1, 10))),
        min_size=2,
        max_size=30,
    ),
    st.sampled_from(sorted(PRESETS)),
)
def test_relevance_first_property(rows: list[tuple[float, float, float]], preset: str) -> None:
    """A lead beyond the preset's tie band always ranks above; its breakdown says so."""
    cos, age, imp = (np.array(col, dtype=np.float64) for col in zip(*rows, strict=True))
    ranked = rank_arrays(
        cosine=cos,
        created_at_seconds=-age * DAY,
        importance=imp,
        now_seconds=0.0,
        weights=PRESETS[preset],
        decay_per_day=0.995,
        limit=len(rows),
    )
    rel = [r.breakdown.relevance for r in ranked]
    band = ranked[0].breakdown.tie_band
    assert band is not None
    if preset in RELEVANCE_FIRST:
        assert band <= 0.1 + 1e-12
    for a in range(len(rel)):
        for b in range(a + 1, len(rel)):
            assert rel[b] <= rel[a] + band + 1e-9
    for r in ranked:
        assert r.breakdown.decided_by in {"relevance", "recency", "importance", "order"}
        assert r.breakdown.own_relevance == pytest.approx(r.breakdown.relevance)  # no context: lone
    # Each breakdown explains its own score: the contributions add up to it, and a relevance
    # lead beyond the tie band is decided by relevance.
    for r, below in zip(ranked, [*ranked[1:], None], strict=True):
        b = r.breakdown
        assert [c.signal for c in b.contributions] == ["relevance", "recency", "importance"]
        assert sum(c.points for c in b.contributions) == pytest.approx(b.score, abs=1e-12)
        assert all(c.points == pytest.approx(c.weight * c.value) for c in b.contributions)
        assert b.tie_band is not None
        if below is None:
            assert b.lead is None and b.decided_by == "relevance"
            continue
        assert b.lead == pytest.approx(b.score - below.breakdown.score)
        if b.relevance - below.breakdown.relevance > b.tie_band + 1e-12:
            assert b.decided_by == "relevance"


def test_why_renders_the_breakdown_it_is_given() -> None:
    (top, second) = rank_arrays(
        cosine=np.array([0.6, 0.6]),
        created_at_seconds=np.array([0.0, -100 * DAY]),
        importance=np.array([5.0, 5.0]),
        now_seconds=0.0,
        weights=RankingWeights(),
        decay_per_day=0.995,
        limit=2,
    )
    assert top.breakdown.decided_by == "recency"  # equally relevant and rated: the newer one
    text = wire.why(top.breakdown)
    terms = " + ".join(f"{c.signal} {c.value:.2f}*{c.weight:.2f}" for c in top.breakdown.contributions)
    assert text.startswith(f"score {top.breakdown.score:.2f} = {terms}; decided by recency (lead ")
    assert "relevance 0.83 (base 0.83 from dense 0.83, dense)" in text
    assert wire.why(second.breakdown).split("; ")[1] == "decided by relevance"
    assert wire.why(None) == "newest first (no query)"
