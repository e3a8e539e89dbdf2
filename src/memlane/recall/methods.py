"""The facade's recall method, :meth:`memlane.EpisodicMemory.recall_episodes`.

:class:`RecallMethods` is mixed into :class:`memlane.EpisodicMemory`; it validates a recall,
builds its scoped filter and runs :mod:`memlane.recall.pipeline`. It uses the memory only
through :class:`memlane.core.MemoryCore`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from memlane.core import MemoryCore
from memlane.models import RecallHit
from memlane.recall.pipeline import ranked_recall, scoped_recall_filter
from memlane.recall.ranking import RETRIEVAL_MODES, RankingWeights, resolve_weights
from memlane.validation import (
    check_choice,
    check_flag,
    check_fraction,
    check_identifier,
    check_limit,
    check_text,
    normalize_tags,
)

__all__ = ["RecallMethods"]


class RecallMethods:
    """Recall, for :class:`memlane.EpisodicMemory` (see the module docstring)."""

    def recall_episodes(  # noqa: PLR0913  (limit debt, #19)
        self: MemoryCore,
        query: str | None = None,
        event_type: str | None = None,
        tags: Sequence[str] | str | None = None,
        limit: int | None = None,
        *,
        now: datetime | None = None,
        weights: RankingWeights | str | Mapping[str, float] | None = None,
        retrieval: str | None = None,
        min_relevance: float | None = None,
        as_of: datetime | None = None,
        known_at: datetime | None = None,
        include_archived: bool = False,
    ) -> list[RecallHit]:
        """Recall episodes in this memory's scope.

        Time model (bi-temporal, after Snodgrass 1999): by default only episodes still true at
        ``now`` (``valid_until`` null or after ``now``) and not retired by then (``invalidated_at``
        null or after ``now``) are returned; episodes that only become true later (a
        future-dated ``valid_from``, or ``now`` in the past) are not hidden, so plain recalls
        behave as before for every episode that was never superseded. ``as_of=T`` asks what
        was true at ``T``: ``valid_from <= T < valid_until`` (valid time only, so superseded
        episodes whose validity covers ``T`` are found). ``known_at=K`` asks what memlane held
        as current at ``K``: ``recorded_at <= K`` and not retired by ``K`` (no valid-time
        condition unless ``as_of`` is given too).

        Without ``query``: a structured lookup by the filters, newest ``created_at`` first,
        with no embedder call at all; hits have ``breakdown=None``.

        With ``query``: candidates passing every filter are found by the embeddings, by the
        store's keyword index, or both (``retrieval``), and ranked by the weighted mean of
        relevance, recency and importance (:func:`memlane.recall.ranking.rank`; after Park et al.
        2023); each hit carries its :class:`ScoreBreakdown`. If the query names a time ("last
        May", "in 2023") and ``config.temporal`` is on, episodes created in that window get a
        relevance boost (:mod:`memlane.recall.temporal`). If the embedder fails and
        ``config.embedding_fallback`` is on (the default), recall uses keywords only, logs a
        warning and marks every breakdown ``fallback=True``.

        Args:
            query: Natural-language query, or ``None`` for a structured lookup.
            event_type: Exact event type to match, or ``None``.
            tags: Tags that must all be present (AND), normalised like on write.
            limit: Maximum hits, >= 1; default ``config.default_limit``.
            now: Reference time for recency, retention and time expressions (timezone-aware);
                default the clock.
            weights: Ranking weights for this call: :class:`RankingWeights`, a preset name
                (see :data:`memlane.recall.ranking.PRESETS`) or a mapping; default ``config.weights``.
            retrieval: ``"hybrid"``, ``"dense"`` or ``"keyword"`` for this call; default
                ``config.retrieval``. ``"keyword"`` never calls the embedder; ``"dense"``
                cannot see episodes stored without a vector.
            min_relevance: Drop ranked hits whose relevance is below this, in [0, 1]; default
                ``config.min_relevance``.
            as_of: Valid-time instant (timezone-aware): what was true then.
            known_at: Transaction-time instant (timezone-aware): what memlane knew then.
            include_archived: Also return episodes :meth:`forget` archived (default ``False``).

        Retrieval bookkeeping: when ``config.track_retrievals`` is on (the default), a ranked
        recall then adds 1 to ``retrieve_count`` and sets ``last_retrieved_at = now`` on every
        episode it returns, in one batched store update (no vector index is invalidated). The
        returned episodes show the counts from before this recall. Structured lookups are not
        counted. A failed update is logged and never fails the recall.

        Returns:
            Up to ``limit`` :class:`RecallHit`; never an episode outside the scope or filters.

        Raises:
            ValidationError: invalid argument. EmbeddingError: the query could not be
            embedded and ``config.embedding_fallback`` is off. StoreError: the store failed.
        """
        self._check_open()
        limit = self.config.default_limit if limit is None else check_limit(limit)
        at = self._now(now)
        resolved = resolve_weights(weights, self.config.ranking_weights)
        mode = self.config.retrieval if retrieval is None else retrieval
        check_choice(mode, "retrieval", tuple(RETRIEVAL_MODES))
        threshold = self.config.min_relevance if min_relevance is None else min_relevance
        check_fraction(threshold, "min_relevance")
        flt = self._filter(
            event_type=None if event_type is None else check_identifier(event_type, "event_type"),
            tags=normalize_tags(tags),
            now=at,
        )
        flt = scoped_recall_filter(
            flt,
            at=at,
            as_of=as_of,
            known_at=known_at,
            include_archived=check_flag(include_archived, "include_archived"),
        )
        if query is None:
            return [RecallHit(episode=ep) for ep in self.store.list_recent(flt, limit)]
        return ranked_recall(
            self.store,
            self.config,
            self._embed_query,
            check_text(query, "query"),
            flt,
            limit=limit,
            at=at,
            weights=resolved,
            retrieval=mode,
            min_relevance=float(threshold),
            local_now=now,
        )
