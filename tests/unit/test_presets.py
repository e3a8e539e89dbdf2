"""Each preset moves the ranking the way seed 002 says, by the amount the README's worked example gives.

The examples rank dense-only candidates with the default calibration ``relevance = (cosine - 0.1) / 0.6``,
so a cosine of 0.232 is relevance 0.22 and 0.406 is 0.51 (the issue's example).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from memlane import PRESETS, RankingWeights, ValidationError
from memlane.config.profile import RankingProfile
from memlane.recall.ranking import CandidateSignals, RankedCandidate, RankOptions, rank

DAY = 86_400.0
NOW = 1000 * DAY


def _rank(
    cosine: list[float], age_days: list[float], importance: list[float], preset: str
) -> list[RankedCandidate]:
    signals = CandidateSignals(
        NOW - np.array(age_days) * DAY, np.array(importance, dtype=np.float64), cosine=np.array(cosine)
    )
    return rank(
        signals, RankingProfile(), RankOptions(now_seconds=NOW, limit=len(cosine), weights=PRESETS[preset])
    )


def _order(cosine: list[float], age_days: list[float], importance: list[float], preset: str) -> list[int]:
    return [r.index for r in _rank(cosine, age_days, importance, preset)]


# The README's example 1: A = "Dana is allergic to peanuts" (importance 10, relevance 0.22),
# B = "User said hi" (importance 2, relevance 0.51), C = unrated (relevance 0.40); all 30 days old.
IMPORTANT = ([0.232, 0.406, 0.34], [30.0, 30.0, 30.0], [10.0, 2.0, math.nan])


@pytest.mark.parametrize(
    ("preset", "order"),
    [
        ("balanced", [1, 2, 0]),
        ("specific_question", [1, 2, 0]),
        ("relevance_only", [1, 2, 0]),
        ("agent_context", [0, 2, 1]),
        ("cold_start", [0, 2, 1]),
    ],
)
def test_important_facts_surface_under_agent_context_and_cold_start(preset: str, order: list[int]) -> None:
    assert _order(*IMPORTANT, preset) == order


def test_the_worked_importance_example_by_the_numbers() -> None:
    a, b, _ = sorted(_rank(*IMPORTANT, "agent_context"), key=lambda r: r.index)
    rec = 0.995**30
    # agent_context: score = (relevance + 0.2*recency + 0.5*importance) / 2
    assert a.breakdown.score == pytest.approx((0.22 + 0.2 * rec + 0.5 * 1.0) / 2)
    assert b.breakdown.score == pytest.approx((0.51 + 0.2 * rec + 0.5 * 0.2) / 2)
    assert a.breakdown.score - b.breakdown.score == pytest.approx(0.055)
    assert a.breakdown.decided_by == "importance" and a.breakdown.tie_band == pytest.approx(0.7)
    cold = {r.index: r.breakdown.score for r in _rank(*IMPORTANT, "cold_start")}
    assert cold[0] - cold[1] == pytest.approx(((0.22 + 0.7) - (0.51 + 0.14)) / 2)  # 0.135
    # Importance 10 over 2 is worth 0.4 relevance under agent_context: an irrelevant fact stays below.
    assert _order([0.1, 0.406], [30, 30], [10.0, 2.0], "agent_context") == [1, 0]


@pytest.mark.parametrize("preset", ["agent_context", "cold_start", "conversation"])
def test_an_unrelated_episode_never_rides_on_importance_or_recency(preset: str) -> None:
    # Relevance 0 (cosine 0.1) with importance 10, today, against relevance 0.3, importance 1, a year old:
    # the wide band's lift is gated by min(1, relevance / 0.2), so the unrelated one gets none of it.
    ranked = _rank([0.1, 0.28], [0.0, 365.0], [10.0, 1.0], preset)
    assert [r.index for r in ranked] == [1, 0]
    assert ranked[1].breakdown.score == 0.0 and all(
        c.points == 0.0 for c in ranked[1].breakdown.contributions
    )


# Example 2: D relevance 0.55, 60 days old; E relevance 0.45, today; both unrated.
RECENT = ([0.43, 0.37], [60.0, 0.0], [math.nan, math.nan])


@pytest.mark.parametrize(
    ("preset", "order"),
    [("balanced", [0, 1]), ("specific_question", [0, 1]), ("conversation", [1, 0])],
)
def test_conversation_favours_recent_turns(preset: str, order: list[int]) -> None:
    assert _order(*RECENT, preset) == order


def test_the_worked_recency_example_by_the_numbers() -> None:
    d, e = sorted(_rank(*RECENT, "conversation"), key=lambda r: r.index)
    # conversation: score = (relevance + 0.5*recency + 0.2*importance) / 2
    assert e.breakdown.score - d.breakdown.score == pytest.approx((0.45 + 0.5 - 0.55 - 0.5 * 0.995**60) / 2)
    assert e.breakdown.decided_by == "recency"


@pytest.mark.parametrize("preset", ["balanced", "specific_question", "relevance_only"])
def test_accuracy_first_presets_keep_a_lead_beyond_their_band(preset: str) -> None:
    # specific_question's band is 0.1 * 0.4 = 0.04: a 0.05 lead wins against importance 10 and 400 days.
    cos = [0.1 + 0.6 * 0.50, 0.1 + 0.6 * 0.55]
    assert _order(cos, [0, 400], [10.0, 1.0], "specific_question") == [1, 0]
    ranked = _rank(cos, [0, 400], [10.0, 1.0], preset)
    assert ranked[0].breakdown.tie_band is not None and ranked[0].breakdown.tie_band <= 0.1 * 2 / 3 + 1e-12


def test_seed_formula_is_the_plain_average() -> None:
    cos, ages, imps = [0.30, 0.55, -0.2], [0.0, 200.0, 10.0], [math.nan, 3.0, 10.0]
    ranked = _rank(cos, ages, imps, "seed")
    by_hand = [
        (max(c, 0.0) + 0.995**a + (0.5 if math.isnan(i) else i / 10)) / 3
        for c, a, i in zip(cos, ages, imps, strict=True)
    ]
    assert [r.index for r in ranked] == sorted(range(3), key=lambda k: -by_hand[k])
    for r in ranked:
        b = r.breakdown
        assert b.score == pytest.approx(by_hand[r.index])
        assert sum(c.points for c in b.contributions) == pytest.approx(b.score)
        assert [c.weight for c in b.contributions] == pytest.approx([1 / 3] * 3)
        assert b.retrieval == "dense" and b.boosts == () and b.tie_band == pytest.approx(2.0)


def test_weights_reject_a_bad_band_or_formula() -> None:
    for bad in ({"tie_band": 1.5}, {"tie_band": -0.1}, {"formula": "mean"}):
        with pytest.raises(ValidationError):
            RankingWeights(1, 1, 1, **bad)  # type: ignore[arg-type]
