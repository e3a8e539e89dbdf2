"""Relevance of recall candidates: calibrated signals, conversation context and boosts (pure).

Every function works on parallel arrays over the candidates of one recall. The constants (the
numbers below are the defaults) live in the ranking profile, :class:`memlane.config.profile.RankingProfile`:
hand-set round values chosen on LoCoMo conversations 0-4 one knob at a time, the fusion's coverage
power and the keyword saturation by cross-validation over BEAM 1-10 and LoCoMo 0-4 (nothing is
fitted, no rule keys on a dataset; the measurements are in ``benchmarks/results/locomo.md``,
``beam.md`` and ``fusion_study.md``).

1. **Dense** ``d = clip((cos - 0.1) / (0.7 - 0.1), 0, 1)``: an absolute calibration for
   MiniLM-class sentence embedders (unrelated short texts sit near 0-0.2, paraphrases above 0.7).
2. **Keyword** ``kw = (bm25 / best) * (1 - exp(-best / 8))``: BM25 with per-scope statistics
   (:mod:`memlane.bm25`, :mod:`memlane.stores.common_terms`); the recall's best match gets the
   absolute saturation of its own BM25 (never 1), the others keep their ratio to it, so every value is at most
   ``1 - exp(-bm25 / 8)``: a word most of the scope carries (IDF near 0) adds almost nothing.
3. **Base relevance** ``r0 = w * d + (1 - w) * kw`` (convex fusion of calibrated signals, after
   Bruch, Gai & Ingber 2023) with a dense share that follows how discriminative the keyword signal
   is for this query in this scope: ``w = 1 - 0.6 * (1 - coverage)``, ``coverage`` the fraction of
   the recall's candidates that match any query term (:func:`keyword_coverage`,
   :func:`coverage_dense_weight`). A query whose words pick out a few turns (LoCoMo: 12% of the
   candidates on average) keeps nearly the keyword share 0.6; one whose words occur in most long
   technical turns (BEAM: 60%) leans on the embeddings. ``noisy_or`` and ``rrf`` remain available
   (fixed weights).
4. **Context** (a conversation's answer is often in the turn next to the one that matches)::

       rc = (r0 + 0.5 * nb1 + 0.2 * nb2 + 0.35 * gbest) / (1 + 0.5 * [nb1] + 0.2 * [nb2] + 0.35)

   ``nb1``/``nb2``: the larger ``r0`` of the episode's +-1 / +-2 stored neighbours by insertion
   order in the same memlane session (:meth:`memlane.stores.base.Store.neighbours`) that are
   candidates of the same *group* (the candidates of the session without a pause over 1 hour
   between consecutive ones); ``gbest``: the best ``r0`` of the group. A neighbour that is
   absent (edge of a group, not a candidate) is left out of the mean, so a lone episode has
   ``rc = r0``.
5. **Boosts** ``rel = 1 - (1 - rc) * (1 - 0.2 * entity) * (1 - 0.3 * in_window) * (1 - b * graph)``:
   ``entity`` = 1 when the query names exactly one of the candidates' tags (every word of the tag
   occurs in the query) and the episode carries it; ``in_window`` = 1 inside the time window the
   query names; ``graph`` in [0, 1] the knowledge-graph entity signal
   (:func:`memlane.recall.entities.graph_signal`) with the profile's strength ``b``
   (:attr:`~memlane.config.profile.Boosts.graph`).
6. **Own relevance** ``own = 1 - (1 - r0) * (1 - 0.2 * entity) * (1 - 0.3 * in_window)``: the
   episode's own evidence; ``min_relevance`` filters on it, so an episode surfaced only by its
   neighbour is dropped once a threshold is set.
7. **Agent turns** ``rel *= 1 - 0.3 * agent`` and ``own *= 1 - 0.3 * agent``: ``agent`` = 1 for the
   agent's own turn (the episode carries the profile's agent tag, ``"assistant"``) when the query is
   not about the agent's words (:func:`addresses_agent`); the discount comes after the context, so an
   agent turn still lifts its neighbours in full (:class:`memlane.config.profile.Speakers`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from memlane.analysis import runs, tag_words
from memlane.config.profile import DEFAULT_PROFILE, Boosts, ContextWeights, DenseCalibration, Speakers

__all__ = [
    "REQUEST_MODALS",
    "SECOND_PERSON",
    "SUMMARY_WORDS",
    "addresses_agent",
    "agent_discounted",
    "agent_signal",
    "base_relevance",
    "boost_factor",
    "boosted",
    "contextual_relevance",
    "coverage_dense_weight",
    "dense_relevance",
    "entity_signal",
    "groups_by_code",
    "groups_by_gap",
    "keyword_coverage",
    "keyword_relevance",
    "named_tag",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def dense_relevance(
    cosine: NDArray[np.floating], calibration: DenseCalibration = DEFAULT_PROFILE.dense
) -> FloatArray:
    """``clip((cos - floor) / (ceil - floor), 0, 1)`` of ``[n]`` cosines; NaN (no vector) -> 0."""
    cos = np.nan_to_num(np.asarray(cosine, dtype=np.float64), nan=-1.0)
    span = max(calibration.ceil - calibration.floor, 1e-9)
    return np.clip((cos - calibration.floor) / span, 0.0, 1.0)


def keyword_relevance(
    bm25: NDArray[np.floating], saturation: float = DEFAULT_PROFILE.keyword_saturation
) -> FloatArray:
    """``(bm25 / best) * (1 - exp(-best / s))`` of ``[n]`` per-scope BM25 scores (NaN = no match -> 0).

    In [0, 1); never more than the episode's own absolute saturation ``1 - exp(-bm25 / s)``.
    """
    values = np.nan_to_num(np.asarray(bm25, dtype=np.float64), nan=0.0)
    values = np.maximum(values, 0.0)
    best = float(values.max()) if len(values) else 0.0
    if best <= 0.0:
        return np.zeros_like(values)
    return np.asarray(values / best * (1.0 - np.exp(-best / saturation)), dtype=np.float64)


def keyword_coverage(bm25: NDArray[np.floating]) -> float:
    """Fraction of the ``[n]`` candidates whose per-scope BM25 is > 0 (NaN = no match): [0, 1], 0 if n = 0."""
    values = np.nan_to_num(np.asarray(bm25, dtype=np.float64), nan=0.0)
    return float((values > 0.0).mean()) if len(values) else 0.0


def coverage_dense_weight(dense_weight: float, coverage: float, power: float) -> float:
    """Dense share of the convex fusion: ``1 - (1 - dense_weight) * (1 - coverage) ** power``, in [w, 1].

    Args:
        dense_weight: The profile's share ``w`` (:attr:`memlane.config.profile.Fusion.dense_weight`).
        coverage: :func:`keyword_coverage` of the recall's candidates, in [0, 1].
        power: :attr:`memlane.config.profile.Fusion.coverage_power`, >= 0 (0: always ``w``).
    """
    share = (1.0 - coverage) ** power if power > 0.0 else 1.0
    return 1.0 - (1.0 - dense_weight) * share


def base_relevance(dense: FloatArray | None, keyword: FloatArray | None, dense_weight: float) -> FloatArray:
    """``w * dense + (1 - w) * keyword`` (a missing signal counts as 0; one signal alone is itself)."""
    if dense is None and keyword is None:
        raise ValueError("base_relevance needs at least one signal")
    if keyword is None:
        assert dense is not None
        return dense
    if dense is None:
        return keyword
    return np.clip(dense_weight * dense + (1.0 - dense_weight) * keyword, 0.0, 1.0)


def groups_by_gap(
    session_keys: Sequence[object], order: IntArray, created_at_s: FloatArray, max_gap_s: float
) -> IntArray:
    """Group number of every candidate: runs of a session in insertion order without a pause > ``max_gap_s``.

    Args:
        session_keys: ``[n]`` the (tenant, session) of each candidate (``None``: a group of its own).
        order: ``[n]`` insertion-order keys (row keys grow with insertion).
        created_at_s: ``[n]`` created_at in seconds.
        max_gap_s: A pause longer than this between consecutive candidates of a session starts a group.

    Returns:
        int64 ``[n]`` group numbers (equal = same group): :func:`groups_by_code` of the sessions'
        codes (equal ``str`` = equal code).
    """
    n = len(order)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    codes = np.unique(np.array([str(k) for k in session_keys], dtype=object), return_inverse=True)[1]
    known = np.fromiter((k is not None for k in session_keys), dtype=bool, count=n)
    return groups_by_code(np.where(known, codes.reshape(n), -1), order, created_at_s, max_gap_s)


def groups_by_code(codes: IntArray, order: IntArray, created_at_s: FloatArray, max_gap_s: float) -> IntArray:
    """:func:`groups_by_gap` over session codes: ``codes[i]`` >= 0 names candidate ``i``'s session.

    Args:
        codes: int ``[n]`` equal codes = same session; -1: no session (a group of its own).
        order: ``[n]`` insertion-order keys (row keys grow with insertion).
        created_at_s: ``[n]`` created_at in seconds.
        max_gap_s: A pause longer than this between consecutive candidates of a session starts a group.

    Returns:
        int64 ``[n]`` group numbers (equal = same group). Which candidates share a group does not
        depend on the codes' values, only on their equality; the numbers themselves do.
    """
    n = len(order)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    # Candidates sorted by (session code, insertion key), stably; a group starts at a change of
    # session, at a candidate without one, or after a pause over max_gap_s.
    codes = np.asarray(codes, dtype=np.int64)
    idx = np.lexsort((np.asarray(order, dtype=np.int64), codes))
    codes = codes[idx]
    known = codes >= 0
    created = np.asarray(created_at_s, dtype=np.float64)[idx]
    same = (codes[1:] == codes[:-1]) & known[1:] & known[:-1]
    starts = ~same | (np.abs(created[1:] - created[:-1]) > max_gap_s)
    groups = np.zeros(n, dtype=np.int64)
    groups[idx] = np.concatenate([[0], np.cumsum(starts)])
    return groups


def named_tag(
    query: str,
    candidate_tags: Iterable[Sequence[str]],
    words_of: Callable[[str], frozenset[str]] = tag_words,
) -> str | None:
    """The one tag of the candidates whose every word occurs in the query, or ``None`` (none or several).

    Words are case-folded letter/digit runs, unstemmed (:func:`memlane.analysis.tag_words`;
    ``words_of`` may be a cache of it). Only the set of tags matters: the candidates' distinct
    tag lists give the same answer as all of them.
    """
    words = {run for _, run in runs(query)}
    distinct: set[str] = set().union(*candidate_tags)  # each tag once, however many lists carry it
    named = [tag for tag in distinct if (parts := words_of(tag)) and parts <= words]
    return named[0] if len(named) == 1 else None


def entity_signal(candidate_tags: Sequence[Sequence[str]], tag: str | None) -> FloatArray:
    """``[n]`` 1.0 where the candidate carries ``tag`` (all 0 when ``tag`` is ``None``)."""
    if tag is None:
        return np.zeros(len(candidate_tags))
    return np.fromiter(
        (1.0 if tag in t else 0.0 for t in candidate_tags), dtype=np.float64, count=len(candidate_tags)
    )


def contextual_relevance(
    base: FloatArray, adjacent: IntArray, groups: IntArray, weights: ContextWeights = DEFAULT_PROFILE.context
) -> FloatArray:
    """Base relevance blended with the conversation context (module docstring, step 4).

    Args:
        base: ``[n]`` base relevance ``r0`` in [0, 1].
        adjacent: int64 ``[n, 4]`` candidate index of the -2, -1, +1, +2 neighbour (-1 = absent);
            a neighbour in another group counts as absent.
        groups: ``[n]`` group numbers (:func:`groups_by_gap`).
        weights: The context weights.

    Returns:
        ``rc``, ``[n]`` in [0, 1]; equal to ``base`` for a candidate alone in its group.
    """
    n = len(base)
    if n == 0:
        return base.copy()
    padded = np.append(base, 0.0)
    adj = np.asarray(adjacent, dtype=np.int64).reshape(n, 4)
    same = adj >= 0
    safe = np.where(same, adj, n)
    same &= groups[np.where(same, adj, 0)] == groups[:, None]
    vals = np.where(same, padded[safe], 0.0)
    nb1 = np.maximum(vals[:, 1], vals[:, 2])
    nb2 = np.maximum(vals[:, 0], vals[:, 3])
    has1 = same[:, 1] | same[:, 2]
    has2 = same[:, 0] | same[:, 3]
    best = np.full(int(groups.max()) + 1, 0.0)
    np.maximum.at(best, groups, base)
    gbest = best[groups]
    return np.asarray(
        (base + weights.neighbour * nb1 + weights.neighbour2 * nb2 + weights.group * gbest)
        / (1.0 + weights.neighbour * has1 + weights.neighbour2 * has2 + weights.group),
        dtype=np.float64,
    )


def boost_factor(
    entity: FloatArray,
    in_window: FloatArray,
    boosts: Boosts = DEFAULT_PROFILE.boosts,
    graph: FloatArray | None = None,
) -> FloatArray:
    """``(1 - entity_boost * entity) * (1 - time_boost * in_window) * (1 - graph_boost * graph)``,
    ``[n]`` in [0, 1] (step 5).

    Args:
        entity: ``[n]`` 0/1 (:func:`entity_signal`).
        in_window: ``[n]`` 0/1: the candidate lies in the time window the query names.
        boosts: The boost strengths.
        graph: ``[n]`` in [0, 1], the knowledge-graph entity signal
            (:func:`memlane.recall.entities.graph_signal`), or ``None`` (no lift).
    """
    factor = (1.0 - boosts.entity * entity) * (1.0 - boosts.time_window * in_window)
    if graph is not None:
        factor = factor * (1.0 - boosts.graph * np.clip(graph, 0.0, 1.0))
    return np.asarray(factor, dtype=np.float64)


def boosted(relevance: FloatArray, factor: FloatArray) -> FloatArray:
    """``clip(1 - (1 - relevance) * factor, 0, 1)``: relevance lifted by :func:`boost_factor` (steps 5-6)."""
    return np.clip(1.0 - (1.0 - relevance) * factor, 0.0, 1.0)


SECOND_PERSON = frozenset({"you", "your", "yours", "yourself", "yourselves"})
"""The words that address the agent: a query holding one asks about what the agent said or did."""

REQUEST_MODALS = frozenset({"can", "could", "would", "will"})
"""A ``you`` right after one of these is a request form ("can you list ...", "what would you suggest"):
it asks the agent to do something now, not about what the agent said."""


SUMMARY_WORDS = frozenset(
    {
        "summary",
        "summaries",
        "summarize",
        "summarise",
        "summarized",
        "summarised",
        "summarizing",
        "summarising",
        "recap",
    }
)
"""The words that ask for a summary: a summary of a conversation covers both sides of it, so the agent's
turns (its explanations and advice) are evidence as much as the user's."""


def addresses_agent(query: str) -> bool:
    """Whether ``query`` asks about the agent's own words: it holds a word of :data:`SECOND_PERSON`
    (case-folded), other than a ``you`` right after a word of :data:`REQUEST_MODALS`, or a word of
    :data:`SUMMARY_WORDS` (a summary covers what both sides said).

    ``"How did you recommend handling retries?"``, ``"Can you repeat your advice?"`` and ``"Can you
    summarize how my project progressed?"`` -> ``True``; ``"Can you list the order in which I brought up
    the features?"`` and ``"What does the user prefer?"`` -> ``False``.
    """
    previous = ""
    for _, word in runs(query):
        if word in SUMMARY_WORDS or (
            word in SECOND_PERSON and not (word == "you" and previous in REQUEST_MODALS)
        ):
            return True
        previous = word
    return False


def agent_signal(candidate_tags: Sequence[Sequence[str]], query: str, speakers: Speakers) -> FloatArray:
    """``[n]`` 1.0 for a candidate carrying ``speakers.agent_tag`` unless the query addresses the agent.

    All zeros when :func:`addresses_agent` is true or ``speakers.agent_discount`` is 0 (step 7).
    """
    if speakers.agent_discount <= 0.0 or addresses_agent(query):
        return np.zeros(len(candidate_tags))
    return entity_signal(candidate_tags, speakers.agent_tag)


def agent_discounted(relevance: FloatArray, agent: FloatArray | None, speakers: Speakers) -> FloatArray:
    """``relevance * (1 - agent_discount * agent)`` (step 7); ``relevance`` itself when ``agent`` is None."""
    if agent is None:
        return relevance
    return np.asarray(relevance * (1.0 - speakers.agent_discount * agent), dtype=np.float64)
