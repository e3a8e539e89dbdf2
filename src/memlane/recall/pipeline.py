"""The one recall pipeline, stage by stage, over a candidate source.

Every ranked read runs :func:`rank_candidates` over a :class:`CandidateSource`: episodes
(:class:`EpisodeSource`, for :meth:`memlane.EpisodicMemory.recall_episodes` through
:func:`ranked_recall`), session turn windows (:class:`memlane.sessions.search.WindowSource`, for
``search_sessions`` and the context block), and next the knowledge graph's facts. The caller
validates the arguments (for episodes, the scoped :class:`~memlane.stores.base.EpisodeFilter`;
:func:`time_slice` gives its bi-temporal fields); then:

1. the query is analysed (:func:`memlane.analysis.query_terms`) and embedded (unless
   ``retrieval="keyword"``); if the embedder fails and the fallback is on, the read continues
   with keywords only and every breakdown says ``fallback=True`` (:func:`find_candidates`);
2. the source gives vector candidates and/or keyword candidates from its store's index:
   the ``top_n`` best of each (the pool, :attr:`~memlane.config.profile.RankingProfile.pools`:
   for episodes ``max(20 * limit, 500)``, for windows ``max(20 * top_k, 200)``; the cost of
   everything after this grows with ``top_n``, never with the scope, and an approximate index
   that finds the same dense top-N changes nothing);
3. they are merged (:func:`memlane.recall.candidates.merge_candidates`); for episodes, when the
   profile's graph boost is on, the knowledge-graph stage (:mod:`memlane.recall.entities`) adds the
   episodes linked to the query's entities and their 1-hop neighbours and the graph signal; the
   source adds its context signals (episodes: stored neighbours, :func:`conversation_context`; windows:
   none, :data:`NO_CONTEXT`);
4. the candidates inside a time window the query names are marked
   (:func:`memlane.recall.temporal.parse_time_window`, when ``config.temporal`` is on);
5. they are ranked (:func:`memlane.recall.ranking.rank`: the configured fusion, with
   forgetting half-lives as recency when ``config.forgetting`` is on);
6. for episodes, :func:`ranked_recall` fetches the winners and, when ``config.track_retrievals``
   is on, counts the retrieval (one batched store update; a failure is logged and never fails
   the recall). Session search cuts the ranked windows into snippets
   (:mod:`memlane.sessions.search`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from memlane.analysis import query_terms
from memlane.clock import ensure_utc
from memlane.config import MemoryConfig
from memlane.config.profile import Speakers
from memlane.errors import MemlaneError
from memlane.models import RecallHit
from memlane.recall.candidates import MergedCandidates, merge_candidates
from memlane.recall.entities import GraphStage, graph_stage
from memlane.recall.ranking import CandidateSignals, RankedCandidate, RankingWeights, RankOptions, rank
from memlane.recall.relevance import agent_signal, entity_signal, groups_by_code, named_tag
from memlane.recall.temporal import parse_time_window
from memlane.stores.base import EpisodeFilter, KeywordCandidates, Store, VectorCandidates, unique_keys

__all__ = [
    "NO_CONTEXT",
    "CandidateSource",
    "Context",
    "EpisodeSource",
    "QueryEmbedder",
    "Ranking",
    "RecallQuery",
    "conversation_context",
    "find_candidates",
    "rank_candidates",
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


class CandidateSource(Protocol):
    """Where one kind of ranked item comes from: episodes, session windows (next: facts).

    The pipeline asks it for the candidates of a query, dense and keyword, each from the
    store's own search, and for the context signals it knows; everything else (query analysis,
    the embedding fallback, fusion, the time window, ranking) is the pipeline's, the same for
    every source.
    """

    def dense(self, vector: NDArray[np.float32], top_n: int) -> VectorCandidates:
        """The items most similar to the query vector (at least the ``top_n`` best)."""
        ...

    def keyword(self, terms: Sequence[str], top_n: int) -> KeywordCandidates:
        """The ``top_n`` items best matching the query terms by per-scope BM25."""
        ...

    def context(self, query: str, candidates: MergedCandidates) -> Context:
        """Context signals of the candidates (:data:`NO_CONTEXT` when the source has none)."""
        ...

    def linked(
        self, query: str, candidates: MergedCandidates, vector: NDArray[np.float32] | None
    ) -> tuple[MergedCandidates, NDArray[np.float64] | None]:
        """The candidates with those the knowledge graph adds, and their graph signal (``None``: none)."""
        ...


@dataclass(frozen=True, slots=True)
class EpisodeSource:
    """Episodes in a store that pass a scoped filter (the :class:`CandidateSource` of recall).

    Attributes:
        store: Where the episodes live.
        flt: The scoped filter every candidate must pass.
        group_gap_s: The profile's :attr:`~memlane.config.profile.ContextWeights.group_gap_s`.
        speakers: The profile's :class:`~memlane.config.profile.Speakers` (the agent-turn signal).
        graph: The knowledge-graph stage (:func:`memlane.recall.entities.graph_stage`), or ``None`` (off).
    """

    store: Store
    flt: EpisodeFilter
    group_gap_s: float
    speakers: Speakers
    graph: GraphStage | None = None

    def dense(self, vector: NDArray[np.float32], top_n: int) -> VectorCandidates:
        """The store's vector candidates under the filter."""
        return self.store.vector_candidates(self.flt, vector, top_n=top_n)

    def keyword(self, terms: Sequence[str], top_n: int) -> KeywordCandidates:
        """The store's keyword candidates under the filter."""
        return self.store.keyword_candidates(self.flt, terms, top_n)

    def context(self, query: str, candidates: MergedCandidates) -> Context:
        """The candidates' stored neighbours, groups and entity signal (:func:`conversation_context`)."""
        return conversation_context(
            self.store,
            self.flt,
            query,
            candidates.keys,
            candidates.created_at_seconds,
            self.group_gap_s,
            self.speakers,
        )

    def linked(
        self, query: str, candidates: MergedCandidates, vector: NDArray[np.float32] | None
    ) -> tuple[MergedCandidates, NDArray[np.float64] | None]:
        """The graph stage's candidates and signal (:meth:`memlane.recall.entities.GraphStage.run`)."""
        if self.graph is None:
            return candidates, None
        return self.graph.run(self.flt, query, candidates, vector)


@dataclass(frozen=True, slots=True)
class Ranking:
    """What :func:`rank_candidates` returns: each ranked candidate's key, best first.

    Attributes:
        keys: Store row keys of the ranked candidates, best first.
        ranked: Their :class:`~memlane.recall.ranking.RankedCandidate` (breakdowns), parallel.
    """

    keys: list[int]
    ranked: list[RankedCandidate]


def find_candidates(
    source: CandidateSource, embed_query: QueryEmbedder, recall: RecallQuery, top_n: int
) -> tuple[MergedCandidates, str, bool, NDArray[np.float64] | None]:
    """Stages 1-3: embed the query (with the fallback), ask ``source`` for its candidates, add the graph's.

    Returns:
        ``(candidates, mode, fallback, graph)``: the merged candidates, the retrieval mode that ran
        (``"keyword"`` after a fallback), whether the embedder failed and the graph signal of the
        candidates (``None`` when the graph stage did not run or the query names no stored entity).

    Raises:
        EmbeddingError: the embedder failed and the fallback is off.
    """
    mode, fallback = recall.retrieval, False
    dense: VectorCandidates | None = None
    vector = None
    if mode != "keyword":
        vector = embed_query(recall.text)
        if vector is None:
            mode, fallback = "keyword", True
        else:
            dense = source.dense(vector, top_n)
    keyword: KeywordCandidates | None = None
    if mode != "dense":
        keyword = source.keyword(query_terms(recall.text), top_n)
    merged = merge_candidates(dense, keyword)
    if len(merged) == 0:
        return merged, mode, fallback, None
    candidates, graph = source.linked(recall.text, merged, vector)
    return candidates, mode, fallback, graph


def time_window_mask(
    config: MemoryConfig, recall: RecallQuery, created_at_seconds: NDArray[np.float64]
) -> NDArray[np.bool_] | None:
    """Stage 4: which candidates lie in the time window the query names (``None``: it names none)."""
    window = parse_time_window(recall.text, recall.local_now or recall.at) if config.temporal else None
    if window is None:
        return None
    created = created_at_seconds
    inside: NDArray[np.bool_] = (created >= window.start.timestamp()) & (created < window.end.timestamp())
    return inside


def rank_candidates(
    source: CandidateSource,
    config: MemoryConfig,
    embed_query: QueryEmbedder,
    recall: RecallQuery,
    top_n: int,
) -> Ranking:
    """Run stages 1-5 of the module docstring over ``source``: the one ranking of every recall.

    Args:
        source: Where the candidates come from (:class:`EpisodeSource`, session windows).
        config: Supplies ``temporal``, ``profile`` (every ranking knob), ``forgetting``
            and ``policy``.
        embed_query: See :data:`QueryEmbedder`.
        recall: The checked query and its options (``recall.limit`` = results ranked).
        top_n: The pool: dense and keyword candidates asked for, and the candidates hits come from.

    Returns:
        Up to ``recall.limit`` ranked candidates, best first, each with its breakdown.

    Raises:
        EmbeddingError: the embedder failed and the fallback is off. StoreError: the store failed.
    """
    query, limit, at, weights = recall.text, recall.limit, recall.at, recall.weights
    min_relevance = recall.min_relevance
    candidates, mode, fallback, graph = find_candidates(source, embed_query, recall, top_n)
    if len(candidates) == 0:
        return Ranking([], [])
    context = source.context(query, candidates)
    in_window = time_window_mask(config, recall, candidates.created_at_seconds)
    signals = CandidateSignals(
        cosine=candidates.cosine,
        keyword=candidates.keyword,
        created_at_seconds=candidates.created_at_seconds,
        importance=candidates.importance,
        in_window=in_window,
        half_life_days=config.policy.half_lives(candidates.importance) if config.forgetting else None,
        adjacent=context.adjacent,
        groups=context.groups,
        entity=context.entity,
        agent=context.agent,
        graph=graph,
    )
    options = RankOptions(
        now_seconds=at.timestamp(),
        limit=limit,
        weights=weights,
        retrieval=mode,
        min_relevance=min_relevance,
        fallback=fallback,
        pool_size=top_n,
    )
    ranked = rank(signals, config.profile, options)
    return Ranking([int(candidates.keys[r.index]) for r in ranked], ranked)


def ranked_recall(
    store: Store,
    config: MemoryConfig,
    embed_query: QueryEmbedder,
    recall: RecallQuery,
    flt: EpisodeFilter,
) -> list[RecallHit]:
    """Rank the episodes under ``flt`` for one validated query (all stages of the module docstring).

    Args:
        store: Where the candidates come from.
        config: As for :func:`rank_candidates`, and ``track_retrievals``.
        embed_query: See :data:`QueryEmbedder`.
        recall: The checked query and its options.
        flt: The scoped filter every candidate must pass.

    Returns:
        Up to ``recall.limit`` hits, best first, each with its score breakdown.

    Raises:
        EmbeddingError: the embedder failed and the fallback is off. StoreError: the store failed.
    """
    top_n = config.profile.pools.recall(recall.limit)
    graph = graph_stage(store, flt, config.profile, top_n)
    profile = config.profile
    source = EpisodeSource(store, flt, profile.context.group_gap_s, profile.speakers, graph)
    ranking = rank_candidates(source, config, embed_query, recall, top_n)
    keys = ranking.keys
    episodes = store.fetch(keys)
    hits = [
        RecallHit(episode=episodes[key], breakdown=r.breakdown)
        for key, r in zip(keys, ranking.ranked, strict=True)
        if key in episodes
    ]
    if config.track_retrievals and hits:
        record_retrievals(store, [key for key in keys if key in episodes], recall.at)
    return hits


@dataclass(frozen=True, slots=True)
class Context:
    """Context signals of the candidates (parallel to them): see :mod:`memlane.recall.relevance`.

    ``None`` fields: the source has no such signal (session windows have no stored neighbours).
    """

    adjacent: NDArray[np.int64] | None
    groups: NDArray[np.int64] | None
    entity: NDArray[np.float64] | None
    agent: NDArray[np.float64] | None = None


NO_CONTEXT = Context(None, None, None)
"""The context of a source without context signals."""


def conversation_context(
    store: Store,
    flt: EpisodeFilter,
    query: str,
    keys: NDArray[np.int64],
    created_at_seconds: NDArray[np.float64],
    group_gap_s: float,
    speakers: Speakers,
) -> Context:
    """Neighbours (as candidate indices), groups and the entity signal of ``keys``.

    One store call (:meth:`~memlane.stores.base.Store.neighbours`, radius 2). A stored neighbour
    that is not itself a candidate counts as absent, so nothing outside the pool (or failing
    ``flt``) contributes. ``group_gap_s``: the profile's
    :attr:`~memlane.config.profile.ContextWeights.group_gap_s`; ``speakers``: the profile's agent tag
    and discount (:func:`memlane.recall.relevance.agent_signal`). Sessions and tag lists arrive as
    codes (:class:`~memlane.stores.base.Neighbours`): the groups are :func:`groups_by_code` of the
    session codes, and the named tag (:func:`named_tag`), the entity signal and the agent signal are
    computed once per distinct tag list of the candidates, then gathered: no Python loop over the
    candidates.
    """
    n = len(keys)
    found = store.neighbours(flt, keys.tolist(), radius=2)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]

    def positions(wanted: NDArray[np.int64]) -> NDArray[np.int64]:
        """Candidate index of each wanted key, -1 where it is not a candidate."""
        at = np.minimum(np.searchsorted(sorted_keys, wanted), max(n - 1, 0))  # >= 0 (np.clip: 3x slower)
        hit = (sorted_keys[at] == wanted) & (wanted >= 0)
        return np.where(hit, order[at], -1).astype(np.int64)

    adjacent = np.full((n, 4), -1, dtype=np.int64)
    session = np.full(n, -1, dtype=np.int64)  # session code of each candidate, -1: not found
    tag_list = np.full(n, -1, dtype=np.int64)  # tag list code of each candidate, -1: none
    if len(found):
        rows = positions(found.keys)
        present = rows >= 0
        at = rows[present]
        adjacent[at] = positions(found.adjacent[present].ravel()).reshape(-1, 4)
        session[at] = found.session_codes[present]
        tag_list[at] = found.tag_codes[present]
    groups = groups_by_code(session, keys, created_at_seconds, group_gap_s)
    held = unique_keys(tag_list[tag_list >= 0])  # the distinct tag lists of the candidates
    lists = [found.tag_lists[c] for c in held.tolist()]

    def gathered(per_list: NDArray[np.float64]) -> NDArray[np.float64]:
        """Each candidate's value of its tag list (``per_list`` parallel to ``held``; 0 without tags)."""
        if not len(held):
            return np.zeros(n)
        carries = np.zeros(int(held[-1]) + 2)  # last slot: candidates without tags (-1)
        carries[held] = per_list
        return carries[tag_list]

    tag = named_tag(query, lists, found.words)
    entity = np.zeros(n) if tag is None else gathered(entity_signal(lists, tag))
    return Context(adjacent, groups, entity, gathered(agent_signal(lists, query, speakers)))


def record_retrievals(store: Store, keys: list[int], at: datetime) -> None:
    """Count a retrieval of the returned rows (one batched update); a failure only logs."""
    try:
        store.record_retrievals(keys, at)
    except MemlaneError as exc:  # bookkeeping must never fail a recall
        logger.warning("recall: could not record %d retrieval(s): %s", len(keys), exc)
