"""Retrieval-quality metrics for evidence retrieval benchmarks such as LoCoMo.

All functions are pure. Rankings are sequences of ids, best first; relevance is
binary (an id is either evidence for the question or not). Ids are compared by
equality, and an id repeated in a ranking counts once, at its first rank, so
no metric can exceed 1.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "MetricSummary",
    "MetricTable",
    "QuestionScore",
    "aggregate",
    "hit_at_k",
    "ndcg_at_k",
    "percentile",
    "recall_at_k",
]


def _check_inputs(ranked_ids: Sequence[str], relevant: Collection[str], k: int) -> frozenset[str]:
    if isinstance(ranked_ids, str) or isinstance(relevant, str):
        raise TypeError("ranked_ids and relevant must be collections of ids, not a single string")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    relevant_set = frozenset(relevant)
    if not relevant_set:
        raise ValueError("relevant must not be empty: recall and nDCG are undefined without evidence")
    return relevant_set


def recall_at_k(ranked_ids: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Fraction of the relevant ids that appear among the first ``k`` ranked ids.

    ``recall@k = |set(ranked_ids[:k]) ∩ set(relevant)| / |set(relevant)|``. A ranking
    shorter than ``k`` is scored as it is (missing ranks retrieve nothing).

    Args:
        ranked_ids: Retrieved ids, best first; length ``n >= 0``. Repeats count once.
        relevant: The gold evidence ids; at least one; duplicates are ignored.
        k: Cutoff, ``k >= 1``.

    Returns:
        A value in ``[0, 1]``; non-decreasing in ``k``; 1 when every relevant id is
        in the top ``k`` (only possible when ``k >= |relevant|``).

    Raises:
        ValueError: ``k < 1`` or ``relevant`` is empty.
        TypeError: ``ranked_ids`` or ``relevant`` is a plain string.
    """
    relevant_set = _check_inputs(ranked_ids, relevant, k)
    hits = relevant_set.intersection(ranked_ids[:k])
    return len(hits) / len(relevant_set)


def hit_at_k(ranked_ids: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 if any relevant id is among the first ``k`` ranked ids, else 0.0 (success@k).

    Some LoCoMo retrieval baselines report this "any evidence retrieved" rate as recall@k;
    memlane reports both so figures can be compared. It is >= :func:`recall_at_k`.

    Raises:
        ValueError: ``k < 1`` or ``relevant`` is empty.
        TypeError: ``ranked_ids`` or ``relevant`` is a plain string.
    """
    relevant_set = _check_inputs(ranked_ids, relevant, k)
    return 1.0 if relevant_set.intersection(ranked_ids[:k]) else 0.0


def ndcg_at_k(ranked_ids: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Normalised discounted cumulative gain at ``k`` with binary relevance.

    ``DCG@k = Σ_{rank r ≤ k, id relevant} 1 / log2(r + 1)`` (ranks from 1), divided by
    the ideal DCG, in which the first ``min(|relevant|, k)`` ranks are all relevant
    (Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
    ACM TOIS 20(4), 2002).

    Args:
        ranked_ids: Retrieved ids, best first; length ``n >= 0``. A repeated relevant id
            gains only at its first rank.
        relevant: The gold evidence ids; at least one; duplicates are ignored.
        k: Cutoff, ``k >= 1``.

    Returns:
        A value in ``[0, 1]``; exactly 1 when the first ``min(|relevant|, k)`` ranked ids
        are distinct relevant ids, 0 when no relevant id is in the top ``k``.

    Raises:
        ValueError: ``k < 1`` or ``relevant`` is empty.
        TypeError: ``ranked_ids`` or ``relevant`` is a plain string.
    """
    relevant_set = _check_inputs(ranked_ids, relevant, k)
    seen: set[str] = set()
    dcg = 0.0
    for rank, item in enumerate(ranked_ids[:k], start=1):
        if item in relevant_set and item not in seen:
            dcg += 1.0 / math.log2(rank + 1)
        seen.add(item)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(relevant_set), k) + 1))
    return min(dcg / ideal, 1.0)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of ``values`` with linear interpolation.

    Uses :func:`numpy.percentile` with ``method="linear"`` (numpy's default, type 7
    of Hyndman & Fan 1996): the value at fractional position ``(n - 1) * q / 100``
    of the sorted values, interpolated between its neighbours. It is not the
    nearest-rank percentile: ``percentile([1, 2, 3, 4], 50) == 2.5``.

    Args:
        values: ``n >= 1`` numbers, any order (e.g. latencies in ms). A NaN gives NaN.
        q: Percentile in ``[0, 100]``; 0 gives the minimum, 100 the maximum.

    Returns:
        The interpolated percentile, between ``min(values)`` and ``max(values)``.

    Raises:
        ValueError: ``values`` is empty or ``q`` is outside ``[0, 100]`` (or NaN).
    """
    if len(values) == 0:
        raise ValueError("percentile of an empty sequence is undefined")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"q must be within [0, 100], got {q!r}")
    return float(np.percentile(np.asarray(values, dtype=np.float64), q, method="linear"))


@dataclass(frozen=True)
class QuestionScore:
    """Retrieval scores of one question.

    Attributes:
        category: The question's category (LoCoMo: 1-5, see ``LOCOMO_CATEGORIES``).
        recall_at_5: :func:`recall_at_k` at ``k = 5``, in ``[0, 1]``.
        recall_at_10: :func:`recall_at_k` at ``k = 10``, in ``[0, 1]``.
        ndcg_at_10: :func:`ndcg_at_k` at ``k = 10``, in ``[0, 1]``.
        hit_at_10: :func:`hit_at_k` at ``k = 10``: 1.0 if any evidence is in the top 10.
        session_hit_at_5: 1.0 if an evidence session is among the first 5 distinct sessions
            of the ranking (0 when no ``session_of`` was given).
        session_hit_at_10: The same among the first 10 distinct sessions.
    """

    category: int
    recall_at_5: float
    recall_at_10: float
    ndcg_at_10: float
    hit_at_10: float
    session_hit_at_5: float = 0.0
    session_hit_at_10: float = 0.0

    def __post_init__(self) -> None:
        for name in (
            "recall_at_5",
            "recall_at_10",
            "ndcg_at_10",
            "hit_at_10",
            "session_hit_at_5",
            "session_hit_at_10",
        ):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {value!r}")

    @classmethod
    def from_ranking(
        cls,
        category: int,
        ranked_ids: Sequence[str],
        relevant: Collection[str],
        session_of: Callable[[str], str] | None = None,
        session_ranking: Sequence[str] | None = None,
    ) -> QuestionScore:
        """Score one ranking against its evidence (``relevant`` must not be empty).

        Args:
            category: The question's category.
            ranked_ids: Retrieved ids, best first (turn metrics use the first 10).
            relevant: Evidence ids.
            session_of: Maps an id to its session, for the session-level hits (the first k
                distinct sessions of the whole ranking, k = 5 and 10); ``None`` = 0.
            session_ranking: A longer ranking of the same question for the session-level hits
                (default: ``ranked_ids``).
        """
        sessions: list[str] = []
        if session_of is not None:
            for rid in ranked_ids if session_ranking is None else session_ranking:
                sid = session_of(rid)
                if sid not in sessions:
                    sessions.append(sid)
        wanted = {session_of(r) for r in relevant} if session_of is not None else set()
        return cls(
            category=category,
            recall_at_5=recall_at_k(ranked_ids, relevant, 5),
            recall_at_10=recall_at_k(ranked_ids, relevant, 10),
            ndcg_at_10=ndcg_at_k(ranked_ids, relevant, 10),
            hit_at_10=hit_at_k(ranked_ids, relevant, 10),
            session_hit_at_5=1.0 if wanted & set(sessions[:5]) else 0.0,
            session_hit_at_10=1.0 if wanted & set(sessions[:10]) else 0.0,
        )


@dataclass(frozen=True)
class MetricSummary:
    """Mean scores over a group of questions.

    Attributes:
        count: Number of questions averaged (``>= 1``).
        recall_at_5: Mean recall@5, in ``[0, 1]``.
        recall_at_10: Mean recall@10, in ``[0, 1]``.
        ndcg_at_10: Mean nDCG@10, in ``[0, 1]``.
        hit_at_10: Fraction of questions with any evidence in the top 10, in ``[0, 1]``.
        session_hit_at_5: Fraction with an evidence session among the first 5 distinct sessions.
        session_hit_at_10: The same for 10.
    """

    count: int
    recall_at_5: float
    recall_at_10: float
    ndcg_at_10: float
    hit_at_10: float
    session_hit_at_5: float = 0.0
    session_hit_at_10: float = 0.0

    @classmethod
    def of(cls, scores: Sequence[QuestionScore]) -> MetricSummary:
        """Average ``scores`` (at least one)."""
        if not scores:
            raise ValueError("cannot summarise zero questions")
        n = len(scores)
        return cls(
            count=n,
            recall_at_5=math.fsum(s.recall_at_5 for s in scores) / n,
            recall_at_10=math.fsum(s.recall_at_10 for s in scores) / n,
            ndcg_at_10=math.fsum(s.ndcg_at_10 for s in scores) / n,
            hit_at_10=math.fsum(s.hit_at_10 for s in scores) / n,
            session_hit_at_5=math.fsum(s.session_hit_at_5 for s in scores) / n,
            session_hit_at_10=math.fsum(s.session_hit_at_10 for s in scores) / n,
        )


@dataclass(frozen=True)
class MetricTable:
    """Per-category and overall means, as produced by :func:`aggregate`.

    Attributes:
        overall: Means over every question given (micro-average: each question weighs 1).
        by_category: Category -> means over that category's questions, ascending by category.
    """

    overall: MetricSummary
    by_category: Mapping[int, MetricSummary]


def aggregate(rows: Iterable[QuestionScore]) -> MetricTable:
    """Group per-question scores by category and overall.

    Which questions to include (e.g. whether to leave out category 5 or questions
    without evidence) is the caller's choice; every row given is counted.

    Args:
        rows: One :class:`QuestionScore` per question; at least one.

    Returns:
        The means per category and overall.

    Raises:
        ValueError: ``rows`` is empty.
    """
    scores = list(rows)
    if not scores:
        raise ValueError("aggregate needs at least one question score")
    groups: defaultdict[int, list[QuestionScore]] = defaultdict(list)
    for score in scores:
        groups[score.category].append(score)
    by_category = {category: MetricSummary.of(groups[category]) for category in sorted(groups)}
    return MetricTable(overall=MetricSummary.of(scores), by_category=by_category)
