"""Unit tests of the retrieval metrics: exact values, error cases and invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from memlane.evaluation.metrics import (
    MetricSummary,
    QuestionScore,
    aggregate,
    hit_at_k,
    ndcg_at_k,
    percentile,
    recall_at_k,
)

IDS = st.sampled_from([f"D{s}:{t}" for s in range(1, 4) for t in range(1, 6)])
RANKINGS = st.lists(IDS, max_size=20)
RELEVANT = st.sets(IDS, min_size=1, max_size=8)
KS = st.integers(min_value=1, max_value=25)


# --- recall@k -------------------------------------------------------------------------------------


def test_recall_exact_values() -> None:
    ranked = ["a", "b", "c", "d", "e"]
    relevant = {"b", "d", "x"}
    assert recall_at_k(ranked, relevant, 1) == 0.0
    assert recall_at_k(ranked, relevant, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranked, relevant, 4) == pytest.approx(2 / 3)
    assert recall_at_k(ranked, relevant, 100) == pytest.approx(2 / 3)  # "x" was never retrieved
    assert recall_at_k(ranked, ["b"], 2) == 1.0


def test_recall_ignores_duplicates() -> None:
    assert recall_at_k(["a", "a", "a"], {"a", "b"}, 3) == 0.5
    assert recall_at_k(["a", "b"], ["a", "a", "b"], 2) == 1.0  # duplicate gold ids count once
    assert recall_at_k([], {"a"}, 5) == 0.0


@pytest.mark.parametrize("k", [0, -1])
def test_recall_rejects_bad_k(k: int) -> None:
    with pytest.raises(ValueError, match="k must be"):
        recall_at_k(["a"], {"a"}, k)


def test_metrics_reject_bad_inputs() -> None:
    for metric in (recall_at_k, ndcg_at_k):
        with pytest.raises(ValueError, match="relevant must not be empty"):
            metric(["a"], set(), 5)
        with pytest.raises(ValueError, match="k must be"):
            metric(["a"], {"a"}, 0)
        with pytest.raises(ValueError, match="k must be"):
            metric(["a"], {"a"}, True)
        with pytest.raises(TypeError):
            metric("D1:1", {"D1:1"}, 5)
        with pytest.raises(TypeError):
            metric(["D1:1"], "D1:1", 5)


@given(RANKINGS, RELEVANT, KS)
def test_recall_is_a_fraction(ranked: list[str], relevant: set[str], k: int) -> None:
    value = recall_at_k(ranked, relevant, k)
    assert 0.0 <= value <= 1.0
    assert value * len(relevant) == pytest.approx(round(value * len(relevant)))  # hits / |relevant|


@given(RANKINGS, RELEVANT, KS)
def test_recall_is_monotone_in_k(ranked: list[str], relevant: set[str], k: int) -> None:
    assert recall_at_k(ranked, relevant, k) <= recall_at_k(ranked, relevant, k + 1)


@given(RELEVANT, RANKINGS, KS)
def test_recall_is_one_when_all_relevant_come_first(relevant: set[str], tail: list[str], k: int) -> None:
    ranked = sorted(relevant) + tail
    assume(k >= len(relevant))
    assert recall_at_k(ranked, relevant, k) == 1.0


# --- nDCG@k ---------------------------------------------------------------------------------------


def test_ndcg_exact_values() -> None:
    assert ndcg_at_k(["a"], {"a"}, 10) == 1.0
    assert ndcg_at_k(["x", "a"], {"a"}, 10) == pytest.approx(1 / math.log2(3))
    assert ndcg_at_k(["x", "a"], {"a"}, 1) == 0.0
    # Two relevant at ranks 1 and 3: (1 + 1/log2(4)) / (1 + 1/log2(3)).
    expected = (1 + 0.5) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(["a", "x", "b"], {"a", "b"}, 10) == pytest.approx(expected)
    assert ndcg_at_k(["a", "x", "b"], {"a", "b"}, 10) == pytest.approx(0.919720, abs=1e-6)
    # Ideal DCG is cut at k: with k=1 one relevant hit at rank 1 is perfect.
    assert ndcg_at_k(["a"], {"a", "b", "c"}, 1) == 1.0
    assert ndcg_at_k([], {"a"}, 10) == 0.0


def test_ndcg_counts_a_repeated_relevant_id_once() -> None:
    assert ndcg_at_k(["a", "a"], {"a", "b"}, 10) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert ndcg_at_k(["a", "a", "a"], {"a"}, 10) == 1.0


@given(RANKINGS, RELEVANT, KS)
def test_ndcg_is_within_unit_interval(ranked: list[str], relevant: set[str], k: int) -> None:
    value = ndcg_at_k(ranked, relevant, k)
    assert 0.0 <= value <= 1.0
    if not relevant.intersection(ranked[:k]):
        assert value == 0.0
    else:
        assert value > 0.0


@given(RELEVANT, RANKINGS, KS)
def test_ndcg_is_one_when_relevant_items_are_ranked_first(
    relevant: set[str], tail: list[str], k: int
) -> None:
    ranked = sorted(relevant) + tail
    assert ndcg_at_k(ranked, relevant, k) == pytest.approx(1.0)


@given(RELEVANT, KS)
def test_ndcg_drops_when_a_non_relevant_item_comes_first(relevant: set[str], k: int) -> None:
    best = sorted(relevant)
    worse = ["not-relevant", *best]
    assert ndcg_at_k(best, relevant, k) == 1.0
    assert ndcg_at_k(worse, relevant, k) < 1.0


# --- percentile -----------------------------------------------------------------------------------


def test_percentile_is_numpy_linear() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5  # not nearest-rank (which would give 2)
    assert percentile([4.0, 1.0, 3.0, 2.0], 0) == 1.0
    assert percentile([4.0, 1.0, 3.0, 2.0], 100) == 4.0
    assert percentile([10.0, 20.0], 95) == pytest.approx(19.5)
    assert percentile([7.0], 99) == 7.0
    assert isinstance(percentile([1, 2, 3], 50), float)


def test_percentile_errors() -> None:
    with pytest.raises(ValueError, match="empty"):
        percentile([], 50)
    for q in (-0.1, 100.1, float("nan")):
        with pytest.raises(ValueError, match="q must be"):
            percentile([1.0], q)


FINITE = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@given(st.lists(FINITE, min_size=1, max_size=50), st.floats(min_value=0, max_value=100))
def test_percentile_bounds_and_numpy_agreement(values: list[float], q: float) -> None:
    p = percentile(values, q)
    assert min(values) <= p <= max(values)
    assert p == pytest.approx(float(np.percentile(values, q)))


@given(
    st.lists(FINITE, min_size=1, max_size=50),
    st.floats(min_value=0, max_value=100),
    st.floats(min_value=0, max_value=100),
)
def test_percentile_is_monotone_in_q(values: list[float], q1: float, q2: float) -> None:
    lo, hi = sorted((q1, q2))
    assert percentile(values, lo) <= percentile(values, hi) + 1e-9


# --- aggregation ----------------------------------------------------------------------------------


def test_question_score_from_ranking() -> None:
    ranked = [f"D1:{i}" for i in range(1, 11)]
    score = QuestionScore.from_ranking(2, ranked, {"D1:6", "D1:1"})
    assert score.category == 2
    assert score.recall_at_5 == 0.5
    assert score.recall_at_10 == 1.0
    assert score.ndcg_at_10 == pytest.approx((1 + 1 / math.log2(7)) / (1 + 1 / math.log2(3)))
    with pytest.raises(ValueError, match="relevant must not be empty"):
        QuestionScore.from_ranking(3, ranked, ())


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_question_score_rejects_out_of_range_values(bad: float) -> None:
    with pytest.raises(ValueError, match="within"):
        QuestionScore(1, bad, 0.5, 0.5, 1.0)
    with pytest.raises(ValueError, match="within"):
        QuestionScore(1, 0.5, 0.5, bad, 1.0)


def test_aggregate_groups_by_category_and_overall() -> None:
    rows = [
        QuestionScore(4, 1.0, 1.0, 1.0, 1.0),
        QuestionScore(1, 0.0, 0.5, 0.25, 1.0),
        QuestionScore(4, 0.5, 1.0, 0.5, 1.0),
        QuestionScore(1, 0.5, 0.5, 0.75, 1.0),
        QuestionScore(4, 0.0, 0.0, 0.0, 0.0),
    ]
    table = aggregate(iter(rows))
    assert list(table.by_category) == [1, 4]  # ascending
    assert table.by_category[1] == MetricSummary(
        count=2, recall_at_5=0.25, recall_at_10=0.5, ndcg_at_10=0.5, hit_at_10=1.0
    )
    four = table.by_category[4]
    assert four.count == 3
    assert four.recall_at_5 == pytest.approx(0.5)
    assert four.recall_at_10 == pytest.approx(2 / 3)
    assert four.ndcg_at_10 == pytest.approx(0.5)
    assert table.overall.count == 5
    assert table.overall.recall_at_5 == pytest.approx(0.4)
    assert table.overall.recall_at_10 == pytest.approx(0.6)
    assert table.overall.ndcg_at_10 == pytest.approx(0.5)
    assert table.overall.hit_at_10 == pytest.approx(0.8)


def test_hit_at_k_is_any_evidence_in_the_top_k() -> None:
    assert hit_at_k(["a", "b", "c"], {"c", "z"}, 3) == 1.0
    assert hit_at_k(["a", "b", "c"], {"c", "z"}, 2) == 0.0
    assert hit_at_k(["a"], {"a", "z"}, 1) >= recall_at_k(["a"], {"a", "z"}, 1)
    with pytest.raises(ValueError):
        hit_at_k(["a"], set(), 1)


def test_aggregate_rejects_no_rows() -> None:
    with pytest.raises(ValueError, match="at least one"):
        aggregate([])
    with pytest.raises(ValueError, match="zero questions"):
        MetricSummary.of([])


@given(
    st.lists(
        st.builds(
            QuestionScore,
            st.integers(1, 5),
            st.floats(0, 1),
            st.floats(0, 1),
            st.floats(0, 1),
            st.sampled_from([0.0, 1.0]),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_aggregate_counts_and_means_are_consistent(rows: list[QuestionScore]) -> None:
    table = aggregate(rows)
    assert table.overall.count == len(rows)
    assert sum(s.count for s in table.by_category.values()) == len(rows)
    weighted = sum(s.count * s.recall_at_10 for s in table.by_category.values()) / len(rows)
    assert table.overall.recall_at_10 == pytest.approx(weighted)
    for summary in (table.overall, *table.by_category.values()):
        assert 0.0 <= summary.recall_at_5 <= 1.0
        assert 0.0 <= summary.ndcg_at_10 <= 1.0
        assert 0.0 <= summary.hit_at_10 <= 1.0
