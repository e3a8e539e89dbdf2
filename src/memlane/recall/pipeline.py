"""Ranked recall, stage by stage: what :meth:`memlane.EpisodicMemory.recall_episodes` runs for a query.

The facade validates the arguments and builds the scoped :class:`~memlane.stores.base.EpisodeFilter`
(:func:`time_slice` gives its bi-temporal fields); then :func:`ranked_recall`:

1. embeds the query (unless ``retrieval="keyword"``); if the embedder fails and the fallback
   is on, the recall continues with keywords only and every breakdown says ``fallback=True``;
2. asks the store for vector candidates and/or keyword candidates
   (:func:`memlane.recall.keywords.keyword_terms`): exactly the ``top_n = max(20 * limit, 500)``
   best of each (the pool; the cost of everything after this grows with ``top_n``, never with
   the scope, and an approximate index that finds the same dense top-N changes nothing);
3. merges them (:func:`memlane.recall.candidates.merge_candidates`) and reads the candidates'
   stored neighbours (:func:`conversation_context`);
4. marks the candidates inside a time window the query names
   (:func:`memlane.recall.temporal.parse_time_window`, when ``config.temporal`` is on);
5. ranks them (:func:`memlane.recall.ranking.rank`), with forgetting half-lives as recency
   when ``config.forgetting`` is on;
6. fetches the winners' episodes and, when ``config.track_retrievals`` is on, counts the
   retrieval (one batched store update; a failure is logged and never fails the recall).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlane.analysis import query_terms
from memlane.clock import ensure_utc
from memlane.config import MemoryConfig
from memlane.errors import MemlaneError
from memlane.models import RecallHit
from memlane.recall.candidates import merge_candidates
from memlane.recall.ranking import RankingWeights, rank
from memlane.recall.relevance import DEFAULT_PARAMS, RelevanceParams, entity_signal, groups_by_gap, named_tag
from memlane.recall.temporal import parse_time_window
from memlane.stores.base import EpisodeFilter, KeywordCandidates, Store, VectorCandidates

__all__ = [
    "Context",
    "QueryEmbedder",
    "RecallQuery",
    "conversation_context",
    "ranked_recall",
    "record_retrievals",
    "scoped_recall_filter",
    "time_slice",
]

logger = logging.getLogger(__name__)

QueryEmbedder = Callable[[str], "NDArray[np.float32] | None"]
"""Embeds one query: its vector, or ``None`` when the embedder failed and the fallback is on."""


def time_slice(at: datetime, as_of: datetime | None, known_at: datetime | None) -> dict[str, Any]:
    """The bi-temporal :class:`~memlane.stores.base.EpisodeFilter` fields of a recall.

    Args:
        at: The recall's ``now`` (UTC).
        as_of: Valid-time instant, or ``None``.
        known_at: Transaction-time instant, or ``None``.

    Returns:
        ``{"still_valid_at": at, "current_at": at}`` when neither is given; else
        ``valid_at`` (from ``as_of``) and/or ``recorded_by`` and ``current_at`` (from ``known_at``).

    Raises:
        ValidationError: a naive ``as_of`` or ``known_at``.
    """
    if as_of is None and known_at is None:
        return {"still_valid_at": at, "current_at": at}
    out: dict[str, Any] = {}
    if as_of is not None:
        out["valid_at"] = ensure_utc(as_of, "as_of")
    if known_at is not None:
        k = ensure_utc(known_at, "known_at")
        out["recorded_by"] = k
        out["current_at"] = k
    return out


def scoped_recall_filter(
    flt: EpisodeFilter,
    *,
    at: datetime,
    as_of: datetime | None,
    known_at: datetime | None,
    include_archived: bool,
) -> EpisodeFilter:
    """``flt`` (scope, event type, tags, retention) narrowed to a recall's time slice and archive choice."""
    return replace(flt, exclude_archived=not include_archived, **time_slice(at, as_of, known_at))


@dataclass(frozen=True, slots=True)
class RecallQuery:
    """One checked ranked recall.

    Attributes:
        text: The checked query text.
        limit: Maximum hits, >= 1.
        at: The recall's ``now`` (UTC).
        weights: Resolved ranking weights.
        retrieval: ``"hybrid"``, ``"dense"`` or ``"keyword"``.
        min_relevance: In [0, 1].
        local_now: The caller's ``now`` in its own zone: time expressions ("yesterday") are
            resolved in that zone; ``None`` = ``at`` (UTC).
    """

    text: str
    limit: int
    at: datetime
    weights: RankingWeights
    retrieval: str
    min_relevance: float
    local_now: datetime | None = None


def ranked_recall(
    store: Store,
    config: MemoryConfig,
    embed_query: QueryEmbedder,
    recall: RecallQuery,
    flt: EpisodeFilter,
) -> list[RecallHit]:
    """Run the stages listed in the module docstring for one validated query.

    Args:
        store: Where the candidates come from.
        config: Supplies ``temporal``, ``decay_per_day``, ``hybrid_settings``, ``forgetting``
            and ``policy``, and ``track_retrievals``.
        embed_query: See :data:`QueryEmbedder`.
        recall: The checked query and its options.
        flt: The scoped filter every candidate must pass.

    Returns:
        Up to ``recall.limit`` hits, best first, each with its score breakdown.

    Raises:
        EmbeddingError: the embedder failed and the fallback is off. StoreError: the store failed.
    """
    query, limit, at, weights = recall.text, recall.limit, recall.at, recall.weights
    min_relevance, local_now = recall.min_relevance, recall.local_now
    mode = recall.retrieval
    top_n = max(limit * 20, 500)
    fallback = False
    dense: VectorCandidates | None = None
    if mode != "keyword":
        vector = embed_query(query)
        if vector is None:
            mode, fallback = "keyword", True
        else:
            dense = store.vector_candidates(flt, vector, top_n=top_n)
    keyword: KeywordCandidates | None = None
    if mode != "dense":
        keyword = store.keyword_candidates(flt, query_terms(query), top_n)
    candidates = merge_candidates(dense, keyword)
    if len(candidates) == 0:
        return []
    context = conversation_context(store, flt, query, candidates.keys, candidates.created_at_seconds)
    in_window = None
    window = parse_time_window(query, at if local_now is None else local_now) if config.temporal else None
    if window is not None:
        created = candidates.created_at_seconds
        in_window = (created >= window.start.timestamp()) & (created < window.end.timestamp())
    ranked = rank(
        cosine=candidates.cosine,
        keyword=candidates.keyword,
        created_at_seconds=candidates.created_at_seconds,
        importance=candidates.importance,
        now_seconds=at.timestamp(),
        weights=weights,
        decay_per_day=config.decay_per_day,
        limit=limit,
        retrieval=mode,
        hybrid=config.hybrid_settings,
        in_window=in_window,
        min_relevance=min_relevance,
        fallback=fallback,
        half_life_days=config.policy.half_lives(candidates.importance) if config.forgetting else None,
        adjacent=context.adjacent,
        groups=context.groups,
        entity=context.entity,
        pool_size=top_n,
    )
    keys = [int(candidates.keys[r.index]) for r in ranked]
    episodes = store.fetch(keys)
    hits = [
        RecallHit(episode=episodes[key], breakdown=r.breakdown)
        for key, r in zip(keys, ranked, strict=True)
        if key in episodes
    ]
    if config.track_retrievals and hits:
        record_retrievals(store, [key for key in keys if key in episodes], at)
    return hits


@dataclass(frozen=True, slots=True)
class Context:
    """Context signals of the candidates (parallel to them): see :mod:`memlane.recall.relevance`."""

    adjacent: NDArray[np.int64]
    groups: NDArray[np.int64]
    entity: NDArray[np.float64]


def conversation_context(
    store: Store,
    flt: EpisodeFilter,
    query: str,
    keys: NDArray[np.int64],
    created_at_seconds: NDArray[np.float64],
    params: RelevanceParams = DEFAULT_PARAMS,
) -> Context:
    """Neighbours (as candidate indices), groups and the entity signal of ``keys``.

    One store call (:meth:`~memlane.stores.base.Store.neighbours`, radius 2): a few index probes
    per candidate. A stored neighbour that is not itself a candidate counts as absent, so nothing
    outside the pool (or failing ``flt``) contributes.
    """
    n = len(keys)
    found = store.neighbours(flt, [int(k) for k in keys], radius=2)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]

    def positions(wanted: NDArray[np.int64]) -> NDArray[np.int64]:
        """Candidate index of each wanted key, -1 where it is not a candidate."""
        at = np.clip(np.searchsorted(sorted_keys, wanted), 0, max(n - 1, 0))
        hit = (sorted_keys[at] == wanted) & (wanted >= 0)
        return np.where(hit, order[at], -1).astype(np.int64)

    adjacent = np.full((n, 4), -1, dtype=np.int64)
    sessions: list[object] = [None] * n
    tags: list[tuple[str, ...]] = [()] * n
    if len(found):
        rows = positions(found.keys)
        present = rows >= 0
        adjacent[rows[present]] = positions(found.adjacent[present].ravel()).reshape(-1, 4)
        for row, i in enumerate(rows.tolist()):
            if i >= 0:
                sessions[i] = found.session_ids[row]
                tags[i] = found.tags[row]
    groups = groups_by_gap(sessions, keys, created_at_seconds, params.group_gap_s)
    return Context(adjacent, groups, entity_signal(tags, named_tag(query, tags)))


def record_retrievals(store: Store, keys: list[int], at: datetime) -> None:
    """Count a retrieval of the returned rows (one batched update); a failure only logs."""
    try:
        store.record_retrievals(keys, at)
    except MemlaneError as exc:  # bookkeeping must never fail a recall
        logger.warning("recall: could not record %d retrieval(s): %s", len(keys), exc)
