"""``EpisodicMemory``: the facade that owns memlane's semantics.

It validates input, applies scope (tenant/session, retention) and delegates; it is built from
injected parts (store, embedder, clock), holds no global state and has no hosted default.

Every public method is declared here, with its documentation, as a one-line delegation to the
room that does the work, over the memory's :class:`memlane.context.MemoryContext` (parts,
scope, "now", embedding with its fallback, filters): writing and the lifecycle
(``remember_episode(s)``, ``supersede``, ``delete_episode``, ``history``,
``find_contradictions``, ``prune``, ``forget``, ``compact``, ``end_session``) in
:mod:`memlane.lifecycle.methods`; reading (``recall_episodes``, ``iter_episodes``, ``count``,
``stats``) in :mod:`memlane.recall.methods` (stages in :mod:`memlane.recall.pipeline`);
``sessions`` is a :class:`memlane.sessions.SessionMemory` over the same context. Episodes are
built by :mod:`memlane.episode_input`.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from memlane.clock import Clock, SystemClock
from memlane.config import DEFAULT_COMPACT_SIMILARITY, MemoryConfig
from memlane.context import MemoryContext
from memlane.embeddings.base import Embedder
from memlane.episode_input import EpisodeInput
from memlane.errors import MemlaneError
from memlane.graph import context as graph_context
from memlane.graph import methods as graph
from memlane.graph import transfer as graph_transfer
from memlane.graph.context import RecallContext
from memlane.graph.methods import FactResult, GraphStats, Neighbour
from memlane.graph.transfer import FactImportReport
from memlane.graph.walks import DEFAULT_NEIGHBOUR_DEPTH, DEFAULT_PATH_DEPTH, DEFAULT_PATH_LIMIT
from memlane.lifecycle import methods as lifecycle
from memlane.lifecycle.compaction import CompactionReport
from memlane.lifecycle.forgetting import ForgetReport
from memlane.models import Contradiction, Episode, RecallHit, Scope
from memlane.recall import methods as recall
from memlane.recall.methods import RecallOptions
from memlane.recall.ranking import RankingWeights
from memlane.sessions.memory import SessionMemory
from memlane.stores.base import IndexReport, Store, StoreStats
from memlane.stores.graph_base import Entity, Fact
from memlane.validation import check_identifier

if TYPE_CHECKING:
    from memlane.config.file import MemlaneConfig

__all__ = ["EpisodeInput", "EpisodicMemory"]

logger = logging.getLogger(__name__)


class EpisodicMemory:
    """Episodic memory for one agent context (tenant + session) over a store.

    Args:
        store: Where episodes live (e.g. :class:`memlane.SQLiteStore`).
        embedder: Makes the vectors (e.g. :class:`memlane.LocalEmbedder`). The store is
            bound to its ``model_id``/``dims`` at construction.
        config: Scope, limits, retention and ranking defaults (:class:`MemoryConfig`).
        clock: Source of "now" (default: the system clock).
        tenant_id: Tenant recorded on every episode and used by ``session``/``tenant`` scope.
        session_id: Session recorded on every episode and used by ``session`` scope.
        rng: Random source for opportunistic pruning (inject a seeded one in tests).
        owns_store: Whether :meth:`close` closes the store (default ``True``).

    Raises:
        ValidationError: blank or over-long ``tenant_id``/``session_id``.
        EmbeddingModelMismatchError: the store holds vectors of another model.
        StoreError: the store failed.
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        *,
        config: MemoryConfig | None = None,
        clock: Clock | None = None,
        tenant_id: str = "default",
        session_id: str = "default",
        rng: random.Random | None = None,
        owns_store: bool = True,
    ) -> None:
        self._ctx = MemoryContext(
            store,
            embedder,
            config or MemoryConfig(),
            clock or SystemClock(),
            check_identifier(tenant_id, "tenant_id"),
            check_identifier(session_id, "session_id"),
            rng or random.Random(),
        )
        self._owns_store = owns_store
        store.bind_embedding_model(embedder.model_id, embedder.dims)

    # -- the parts and scope (read-only) ---------------------------------------------------

    @property
    def context(self) -> MemoryContext:
        """The :class:`memlane.context.MemoryContext` every method works over."""
        return self._ctx

    @property
    def store(self) -> Store:
        """Where the episodes live."""
        return self._ctx.store

    @property
    def embedder(self) -> Embedder:
        """Makes the vectors."""
        return self._ctx.embedder

    @property
    def config(self) -> MemoryConfig:
        """Scope, limits, retention and ranking defaults."""
        return self._ctx.config

    @property
    def clock(self) -> Clock:
        """Source of "now"."""
        return self._ctx.clock

    @property
    def tenant_id(self) -> str:
        """Tenant recorded on every episode (and read under ``tenant``/``session`` scope)."""
        return self._ctx.tenant_id

    @property
    def session_id(self) -> str:
        """Session recorded on every episode (and read under ``session`` scope)."""
        return self._ctx.session_id

    # -- constructors ------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path = "memlane.db",
        *,
        embedder: Embedder | None = None,
        config: MemoryConfig | None = None,
        clock: Clock | None = None,
        tenant_id: str = "default",
        session_id: str = "default",
    ) -> EpisodicMemory:
        """Open (or create) a SQLite file, or a PostgreSQL database, with the default offline embedder.

        Args:
            path: SQLite database file (created with its directories if missing), or a
                ``postgresql://…`` URL (needs the ``postgres`` extra).
            embedder: Overrides the default :class:`memlane.LocalEmbedder` (all-MiniLM-L6-v2).
            config: See :class:`MemoryConfig`.
            clock: See :class:`EpisodicMemory`.
            tenant_id: See :class:`EpisodicMemory`.
            session_id: See :class:`EpisodicMemory`.

        Raises:
            StoreError: the database cannot be opened. EmbeddingModelMismatchError: it was
            written with another embedding model. ConfigError: a PostgreSQL URL without the
            ``postgres`` extra.
        """
        from memlane.assembly import open_store
        from memlane.embeddings.local import LocalEmbedder

        store = open_store(path)
        try:
            return cls(
                store,
                embedder or LocalEmbedder(),
                config=config,
                clock=clock,
                tenant_id=tenant_id,
                session_id=session_id,
            )
        except BaseException:
            store.close()
            raise

    @classmethod
    def from_config(
        cls,
        source: str | os.PathLike[str] | Mapping[str, Any] | MemlaneConfig,
        *,
        tenant_id: str | None = None,
        session_id: str | None = None,
        embedder: Embedder | None = None,
        clock: Clock | None = None,
    ) -> EpisodicMemory:
        """Open the store and embedder a YAML configuration describes.

        See :mod:`memlane.config.file` for the format (``memory:`` and ``episodic_memory:``
        sections). A missing ``episodic_memory:`` section means every default.

        Args:
            source: A YAML file path, the same structure as a mapping, or a loaded
                :class:`memlane.config.file.MemlaneConfig`.
            tenant_id: Overrides ``episodic_memory.tenant_id`` (default ``"default"``).
            session_id: Overrides ``episodic_memory.session_id`` (default ``"default"``).
            embedder: Overrides the configured embedder (e.g. a fake one in tests).
            clock: See :class:`EpisodicMemory`.

        Returns:
            An open memory that owns its store (close it, or use it as a context manager).

        Raises:
            ConfigError: the file is missing or invalid; the message names the key.
            StoreError: the store cannot be opened. EmbeddingModelMismatchError: the store
            was written with another embedding model.
        """
        from memlane.assembly import build_embedder, build_store
        from memlane.config.file import load_config

        config = load_config(source)
        episodic = config.episodic_or_default
        store = build_store(config.store)
        try:
            return cls(
                store,
                embedder or build_embedder(config.episodic),
                config=episodic.memory,
                clock=clock,
                tenant_id=tenant_id or episodic.tenant_id or "default",
                session_id=session_id or episodic.session_id or "default",
            )
        except BaseException:
            store.close()
            raise

    @cached_property
    def sessions(self) -> SessionMemory:
        """Session episodes (whole conversations) in this memory's store, under its tenant.

        See :class:`memlane.sessions.SessionMemory`: ``store_session``, ``recall_recent``,
        ``search_sessions``, ``get_session``, ``build_context`` and ``inject_context``.

        Raises:
            StoreError: the store does not support session episodes.
        """
        return SessionMemory(self._ctx)

    def with_context(
        self,
        *,
        tenant_id: str | None = None,
        session_id: str | None = None,
        config: MemoryConfig | None = None,
    ) -> EpisodicMemory:
        """Return a memory over the same store and embedder for another tenant/session/config.

        The returned memory does not own the store: closing it leaves this one usable.
        """
        return EpisodicMemory(
            self.store,
            self.embedder,
            config=config or self.config,
            clock=self.clock,
            tenant_id=self.tenant_id if tenant_id is None else tenant_id,
            session_id=self.session_id if session_id is None else session_id,
            rng=self._ctx.rng,
            owns_store=False,
        )

    # -- writing -------------------------------------------------------------

    def remember_episode(  # noqa: PLR0913  (public signature = EpisodeInput's fields)
        self,
        event_type: str,
        content: str,
        tags: Sequence[str] | str | None = None,
        importance: float | str | None = None,
        *,
        created_at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        valid_from: datetime | None = None,
        valid_until: datetime | None = None,
        supersedes: Sequence[str] | None = None,
        session_scoped: bool = False,
    ) -> Episode:
        """Append one episode and return it as stored.

        The episode is bi-temporal (Snodgrass 1999): ``valid_from``/``valid_until`` say when
        what it states was true (valid time); ``recorded_at`` (the clock's now) says when
        memlane learned it (transaction time).

        Args:
            event_type: Category label (non-empty, <= 200 chars, stripped, case-sensitive).
            content: The text to remember (non-empty); it is embedded for semantic recall.
            tags: Labels for AND filtering, normalised by :func:`memlane.validation.normalize_tags`
                (strip, collapse whitespace, lower-case, drop empties, dedupe).
            importance: Rating 1-10, clamped to that range; ``"auto"`` = estimated from the
                content (:mod:`memlane.importance`); ``None`` = ``config.importance``
                (unrated, scored 0.5, unless that is ``"auto"``).
            created_at: When the event happened (timezone-aware); default: the clock's now.
                Use it for backfills and imports.
            metadata: JSON-serialisable mapping stored alongside.
            valid_from: When the fact became true (timezone-aware); default ``created_at``.
            valid_until: When it stops being true (exclusive, >= ``valid_from``); default
                ``None`` = still true.
            supersedes: Ids of episodes (in this memory's scope) this one replaces. In the
                same transaction as the insert, each gets ``valid_until`` = this episode's
                ``valid_from`` (never before its own ``valid_from``), ``invalidated_at`` = now
                and ``superseded_by`` = this id. Nothing is deleted. When it is not given and
                ``config.auto_supersede`` is on, the episode's contradiction candidates (see
                :meth:`find_contradictions`) are superseded instead, each with its reason.
            session_scoped: ``True`` = deleted when this session ends (:meth:`end_session`).

        Returns:
            The stored :class:`Episode` (with its generated ``id``). Its ``embedding_model``
            is ``None`` when the embedder failed and the episode was stored without a vector
            (``config.embedding_fallback``, the default; a warning is logged): it is then
            found by keyword recall only, until re-embedded.

        Raises:
            ValidationError: any invalid argument (nothing is stored).
            EpisodeNotFoundError: a ``supersedes`` id is not in this memory's scope or is
                already superseded (nothing is stored).
            EmbeddingError: the embedder failed and ``config.embedding_fallback`` is off
                (nothing is stored). EmbeddingModelMismatchError always raises.
            StoreError: the store failed (nothing is stored).
        """
        item = EpisodeInput(
            event_type,
            content,
            tags,
            importance,
            created_at=created_at,
            metadata=metadata,
            valid_from=valid_from,
            valid_until=valid_until,
            session_scoped=session_scoped,
        )
        return lifecycle.remember_episode(self._ctx, item, supersedes)

    def remember_episodes(self, items: Iterable[EpisodeInput]) -> list[Episode]:
        """Append a batch atomically: one embedder call, one transaction.

        Args:
            items: Episodes to remember (see :class:`EpisodeInput`).

        Returns:
            The stored episodes, in input order.

        Raises:
            ValidationError: any item is invalid (the message names its position; nothing is stored).
            DuplicateEpisodeError: an explicit ``id`` already exists (nothing is stored).
            EmbeddingError, StoreError: as for :meth:`remember_episode`.
        """
        return lifecycle.remember_episodes(self._ctx, items)

    def supersede(
        self,
        episode_id: str,
        event_type: str,
        content: str,
        tags: Sequence[str] | str | None = None,
        importance: float | str | None = None,
        *,
        valid_from: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        reason: str | None = None,
    ) -> Episode:
        """Replace episode ``episode_id`` with a new one, keeping the old one as history.

        In one transaction: the new episode is inserted, and the old one gets
        ``valid_until`` = the new ``valid_from`` (the fact stopped being true then),
        ``invalidated_at`` = now (memlane retired it now), ``superseded_by`` = the new id and
        ``supersede_reason`` = ``reason``. Nothing is deleted: ``recall_episodes(as_of=T)``
        with ``T`` before the change still finds the old episode, and :meth:`history` returns
        the chain.

        Args:
            episode_id: Id of the episode to supersede (in this memory's scope; named as in
                :meth:`history`, and ``episode_id`` in the ``supersede_episode`` tool).
            event_type: As for :meth:`remember_episode`.
            content: As for :meth:`remember_episode`.
            tags: As for :meth:`remember_episode`.
            importance: As for :meth:`remember_episode`.
            valid_from: When the new fact became true; default the clock's now.
            metadata: As for :meth:`remember_episode`.
            reason: Why the old episode was retired (kept on it as ``supersede_reason``).

        Returns:
            The new episode.

        Raises:
            EpisodeNotFoundError: ``episode_id`` is not in scope or already superseded.
            ValidationError, EmbeddingError, StoreError: as for :meth:`remember_episode`.
        """
        item = EpisodeInput(event_type, content, tags, importance, metadata=metadata, valid_from=valid_from)
        return lifecycle.supersede(self._ctx, episode_id, item, reason)

    def delete_episode(self, episode_id: str) -> bool:
        """Delete one episode by id if it is within this memory's scope.

        The only way to remove a single episode (episodes are otherwise append-only and
        only retention deletes them). An episode outside the scope (another tenant's, or
        another session's under ``session`` scope) is left alone and reported like an
        unknown id, so a caller cannot probe for other tenants' ids.

        Args:
            episode_id: The episode's id.

        Returns:
            ``True`` if it was deleted, ``False`` if no episode with this id is in scope.

        Raises:
            ValidationError: blank or over-long id. StoreError: the store failed.
        """
        return lifecycle.delete_episode(self._ctx, episode_id)

    # -- reading -------------------------------------------------------------

    def recall_episodes(  # noqa: PLR0913  (public signature = RecallOptions' fields)
        self,
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
        store's keyword index, or both (``retrieval``), and ranked relevance-first: recency and
        importance (the three factors of Park et al. 2023) only reorder hits inside the tie band
        (:func:`memlane.recall.ranking.rank`); each hit carries its :class:`ScoreBreakdown`.
        If the query names a time ("last May", "in 2023") and ``config.temporal`` is on,
        episodes created in that window get a relevance boost (:mod:`memlane.recall.temporal`).
        If the embedder fails and ``config.embedding_fallback`` is on (the default), recall uses
        keywords only, logs a warning and marks every breakdown ``fallback=True``.

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
        return recall.recall_episodes(
            self._ctx,
            query,
            event_type,
            tags,
            limit,
            RecallOptions(
                now=now,
                weights=weights,
                retrieval=retrieval,
                min_relevance=min_relevance,
                as_of=as_of,
                known_at=known_at,
                include_archived=include_archived,
            ),
        )

    def get_episode(self, episode_id: str) -> Episode | None:
        """Return the episode with ``episode_id`` if it exists, is in scope and is not expired.

        Expired: created more than ``config.retention_days`` before the clock's now (and not
        never-forget); see :mod:`memlane.lifecycle.retention`. Archived and superseded
        episodes are returned.

        Raises:
            ValidationError: blank or over-long id. StoreError: the store failed.
        """
        return self._ctx.get_episode(episode_id)

    def iter_episodes(
        self, event_type: str | None = None, tags: Sequence[str] | str | None = None
    ) -> Iterator[Episode]:
        """Yield every episode in scope and not expired at the clock's now, oldest first; the export order.

        Archived and superseded episodes are included; expired ones (``config.retention_days``)
        are not, even before a prune removes them.
        Buffered retrieval counts are written first, so an export carries them.
        """
        return recall.iter_episodes(self._ctx, event_type, tags)

    def count(self) -> int:
        """Number of episodes in scope and not expired (what :meth:`iter_episodes` yields).

        Expired episodes still stored until a prune are counted by ``prune(dry_run=True)``.
        """
        return recall.count(self._ctx)

    def stats(self) -> StoreStats:
        """Summary of the episodes in scope and not expired (see :class:`memlane.stores.base.StoreStats`).

        Like :meth:`count`, it describes what can be read; ``prune(dry_run=True)`` counts the
        expired rows still stored.
        """
        return recall.stats(self._ctx)

    # -- lifecycle -----------------------------------------------------------

    def history(self, episode_id: str) -> list[Episode]:
        """Return the supersede chain through ``episode_id``, oldest first.

        Follows ``superseded_by`` links backwards (episodes this one replaced, and theirs)
        and forwards (the episode that replaced it, and so on). Episodes merged into one
        successor all appear, ordered by ``valid_from`` then ``recorded_at``.

        Args:
            episode_id: Any episode of the chain (in this memory's scope).

        Returns:
            Every episode of the chain in scope and not expired (``config.retention_days``),
            oldest first; ``[episode]`` when it has no links.

        Raises:
            EpisodeNotFoundError: ``episode_id`` is not in this memory's scope, or expired.
            ValidationError: blank or over-long id. StoreError: the store failed.
        """
        return lifecycle.history(self._ctx, episode_id)

    def find_contradictions(
        self,
        episode_or_text: Episode | str,
        *,
        event_type: str | None = None,
        tags: Sequence[str] | str | None = None,
        threshold: float | None = None,
        limit: int = 5,
        now: datetime | None = None,
    ) -> list[Contradiction]:
        """Propose current episodes that ``episode_or_text`` may contradict; retire nothing.

        A candidate is in this memory's scope, still valid and not superseded at ``now``,
        shares the ``event_type`` or at least one tag, its content's embedding has a cosine
        similarity >= 0.3 to the given text, and what the two say about their shared subject
        conflicts with a confidence >= ``threshold``: the same subject and predicate with
        another value ("User lives in Paris" / "User lives in Berlin", "prefers aisle seats" /
        "prefers window seats"), or one negating the other ("likes spicy food" / "does not
        like spicy food"); an elaboration ("likes tea" / "likes tea with milk") or another
        predicate ("lives in Paris" / "works in Paris") is not one. See
        :mod:`memlane.lifecycle.contradiction` for the method and
        ``benchmarks/results/contradictions.md`` for its measured precision and recall (English
        one-sentence facts; synonyms and paraphrases are not understood). Review the
        candidates, then :meth:`supersede` (or turn on ``config.auto_supersede``).

        Args:
            episode_or_text: A stored episode (its content, event type and tags are used; it
                is never its own candidate) or a text.
            event_type: For a text: the event type to match, or ``None``.
            tags: For a text: tags of which any one must be shared.
            threshold: Minimum confidence in (0, 1]; default ``config.contradiction_threshold``
                (0.8).
            limit: Maximum candidates, >= 1 (default 5).
            now: Reference time (timezone-aware); default the clock.

        Returns:
            Candidates, highest ``confidence`` first (then highest ``score``, the cosine);
            empty when the embedder is unavailable (logged) or nothing qualifies.

        Raises:
            ValidationError: invalid argument. EmbeddingError: the embedder failed and
            ``config.embedding_fallback`` is off. StoreError: the store failed.
        """
        return lifecycle.find_contradictions(
            self._ctx, episode_or_text, event_type, tags, threshold, limit, now
        )

    def prune(self, now: datetime | None = None, *, dry_run: bool = False, all_tenants: bool = True) -> int:
        """Delete every episode older than ``retention_days`` (table-wide, all tenants by default).

        Never-forget episodes (importance in a never-forget band of
        ``config.forgetting_policy``: >= 9 by default) are kept whatever their age. Stored
        conversations whose ``ended_at`` is past the same cutoff are deleted too (as
        :meth:`memlane.sessions.SessionMemory.prune`).

        Args:
            now: Reference time (timezone-aware); default the clock.
            dry_run: Only count what would be deleted; change nothing.
            all_tenants: ``True`` (default): the whole store; ``False``: this memory's tenant only.

        Returns:
            Number of episodes deleted, or that would be with ``dry_run`` (0 when
            ``retention_days`` is ``None``).

        Raises:
            ValidationError: a bad ``now``, ``dry_run`` or ``all_tenants``. StoreError: the store failed.
        """
        return lifecycle.prune(self._ctx, now, dry_run=dry_run, all_tenants=all_tenants)

    def forget(
        self,
        now: datetime | None = None,
        *,
        dry_run: bool = False,
        threshold: float | None = None,
    ) -> ForgetReport:
        """Archive (or delete) the episodes in scope whose strength fell below ``threshold``.

        Strength is ``0.5 ** (age_days / half_life)`` with the half-life of the episode's
        importance band (:mod:`memlane.lifecycle.forgetting`; Ebbinghaus-style decay; age from
        ``created_at``). Never-forget episodes (strength 1) and already archived ones are
        never touched. ``config.forget_action`` says what happens: ``"archive"`` (default)
        sets ``archived_at`` (the episode leaves recall unless ``include_archived=True``, and
        stays in exports and history); ``"delete"`` removes it. Unlike retention, forgetting
        only acts on this memory's scope.

        Args:
            now: Reference time (timezone-aware); default the clock.
            dry_run: Only report what would be forgotten; change nothing.
            threshold: Strength in (0, 1); default ``config.forget_threshold`` (0.05).

        Returns:
            A :class:`memlane.lifecycle.forgetting.ForgetReport` (weakest first).

        Raises:
            ValidationError: bad ``now`` or ``threshold``. StoreError: the store failed.
        """
        return lifecycle.forget(self._ctx, now, dry_run=dry_run, threshold=threshold)

    def compact(
        self,
        *,
        similarity: float = DEFAULT_COMPACT_SIMILARITY,
        never_retrieved_older_than_days: float | None = None,
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> CompactionReport:
        """Merge near-duplicate episodes and archive stale ones, in this memory's scope.

        Only active episodes take part: current (not superseded, still valid at ``now``), not
        archived and not ``session_scoped``. In order:

        1. **Stale** (only when ``never_retrieved_older_than_days`` is given): episodes with
           ``retrieve_count == 0`` and ``created_at`` older than the cutoff are archived
           (``archived_at`` set). Never-forget episodes (importance in a never-forget band of
           ``config.forgetting_policy``, >= 9 by default) are never archived.
        2. **Near-duplicates**: within each (tenant, event_type) group, episodes whose
           embeddings have cosine ``> similarity`` with a cluster's representative (exact,
           numpy) are replaced by ONE merged episode (content of the most important, then most
           retrieved, then newest member; tags united; importance max; earliest
           ``valid_from``; ``retrieve_count`` summed; ``metadata["merged_from"]`` lists the
           ids). The originals are archived with ``superseded_by`` = the merged id and
           ``supersede_reason`` = ``"merged: compaction cosine>..."``, atomically per cluster;
           nothing is deleted, so :meth:`history` and ``include_archived=True`` still find
           them. A never-forget episode is never folded into another one's content. See
           :mod:`memlane.lifecycle.compaction` for the rules. Episodes without a vector are not merged.

        Archiving frees no disk space (rows and vectors stay, and each merge adds a row); it
        shrinks the active set every recall filters, scores and ranks.

        Args:
            similarity: Cosine threshold in (0, 1) (default 0.95).
            never_retrieved_older_than_days: Age in days (> 0) from which a never-retrieved
                episode is archived as stale; ``None`` (default) = no stale archiving.
            dry_run: Only report what would change; change nothing.
            now: Reference time (timezone-aware); default the clock.

        Returns:
            A :class:`memlane.lifecycle.compaction.CompactionReport`.

        Raises:
            ValidationError: ``similarity`` or ``never_retrieved_older_than_days`` out of
                range, or a naive ``now``.
            EpisodeNotFoundError: an episode was archived or superseded concurrently (that
                cluster is left as it was; clusters merged before stay merged).
            StoreError: the store failed (clusters merged before the failure stay merged).
        """
        return lifecycle.compact(
            self._ctx,
            similarity=similarity,
            never_retrieved_older_than_days=never_retrieved_older_than_days,
            dry_run=dry_run,
            now=now,
        )

    def end_session(self) -> int:
        """End this memory's session: delete its ``session_scoped`` episodes.

        Other episodes of the session stay. Returns how many were deleted.

        Raises:
            StoreError: the store failed.
        """
        return lifecycle.end_session(self._ctx)

    # -- the knowledge graph ---------------------------------------------------------------

    def remember_fact(  # noqa: PLR0913  (public signature = RememberFactBody's fields)
        self,
        subject: str,
        predicate: str,
        object: str | None = None,
        *,
        value: str | None = None,
        subject_type: str | None = None,
        object_type: str | None = None,
        valid_from: datetime | None = None,
        valid_until: datetime | None = None,
        confidence: float | None = None,
        importance: float | None = None,
        source_episode_id: str | None = None,
        source_session_id: str | None = None,
        method: str | None = None,
        now: datetime | None = None,
    ) -> FactResult:
        """Store one fact ``(subject, predicate, object | value)`` in the knowledge graph.

        Bi-temporal like an episode: ``valid_from``/``valid_until`` say when it was true,
        ``recorded_at`` (now) when memlane learned it. Names are resolved to entities of this
        tenant (:func:`memlane.mentions.entity_key`: case and spacing folded; aliases and
        merges followed; unknown names create entities). The predicate is folded to its
        canonical name (``enjoys`` -> ``likes``, :mod:`memlane.graph.predicates`). Then, in one
        transaction (:mod:`memlane.graph.contradiction`): a current fact with the same predicate
        and value is a duplicate (nothing is stored, the merge is recorded); a single-valued
        predicate's current other value is closed (``valid_until`` = the new ``valid_from``,
        ``invalidated_at`` = now, ``superseded_by``, the reason); the opposite predicate's
        current fact on the same object is closed. Nothing is overwritten or deleted, and a fact
        below confidence 0.7 retires nothing.

        Args:
            subject: The entity the fact is about (1-200 characters), e.g. ``"customer_123"``.
            predicate: The relation, e.g. ``"lives_in"``, ``"subscription_tier"`` (1-200 characters).
            object: Another entity (e.g. ``"Lisbon"``).
            value: A literal (e.g. ``"enterprise"``); with ``object`` too, the relation's value (a
                rating of a film); with neither, the fact is a flag stored as value ``"true"``.
            subject_type: Kind of a new subject entity (``"person"``...); default ``"thing"``.
            object_type: Kind of a new object entity; default ``"thing"``.
            valid_from: When it became true (timezone-aware); default now.
            valid_until: When it stops being true (exclusive, >= ``valid_from``); default ``None``.
            confidence: In [0, 1]; default 1.
            importance: 1-10 (clamped); default unrated.
            source_episode_id: The episode it was taken from, if any.
            source_session_id: The session (conversation) it was taken from, if any.
            method: ``"explicit"`` (default), ``"llm"`` or ``"import"``.
            now: Transaction time (timezone-aware); default the clock.

        Returns:
            A :class:`memlane.graph.FactResult`: the stored fact (or the one it duplicates),
            and the facts it superseded.

        Raises:
            ValidationError: an invalid argument (nothing is stored).
            FactNotFoundError: a superseded fact was retired concurrently (nothing is stored).
            StoreError: the store failed or keeps no graph.
        """
        return graph.remember_fact(self._ctx, {k: v for k, v in locals().items() if k != "self"})

    def query_facts(
        self,
        entity: str,
        *,
        as_of: datetime | None = None,
        known_at: datetime | None = None,
        predicate: str | None = None,
        limit: int | None = None,
        now: datetime | None = None,
    ) -> list[Fact]:
        """The facts about ``entity`` (as subject or object), oldest ``valid_from`` first.

        The episodes' time model: by default the facts current at ``now`` (not retired, still
        valid); ``as_of=T`` the facts true at ``T`` (``valid_from <= T < valid_until``, retired
        ones included); ``known_at=K`` what memlane held as current at ``K``; both together
        combine.

        Args:
            entity: A name or alias (resolved like :meth:`remember_fact`'s); unknown -> ``[]``.
            as_of: Valid-time instant (timezone-aware).
            known_at: Transaction-time instant (timezone-aware).
            predicate: Only this predicate (folded to its canonical name).
            limit: Most facts, >= 1 (default 1000).
            now: Reference time (timezone-aware); default the clock.

        Raises:
            ValidationError: an invalid argument. StoreError: the store failed.
        """
        return graph.query_facts(
            self._ctx, entity, as_of=as_of, known_at=known_at, predicate=predicate, limit=limit, now=now
        )

    def entity_timeline(self, entity: str) -> list[Fact]:
        """Every fact about ``entity``, current and retired, by ``valid_from`` (its history).

        Raises:
            ValidationError: a blank or over-long name. StoreError: the store failed.
        """
        return graph.entity_timeline(self._ctx, entity)

    def neighbours(
        self,
        entity: str,
        depth: int = DEFAULT_NEIGHBOUR_DEPTH,
        *,
        as_of: datetime | None = None,
        now: datetime | None = None,
    ) -> list[Neighbour]:
        """Entities linked to ``entity`` by facts with an object entity, within ``depth`` hops.

        Args:
            entity: A name or alias; unknown -> ``[]``.
            depth: Hops, 1 to :data:`~memlane.graph.MAX_GRAPH_DEPTH` (default
                :data:`~memlane.graph.DEFAULT_NEIGHBOUR_DEPTH`). Edges are followed both ways.
            as_of: Use the facts true then (default: the current facts).
            now: Reference time; default the clock.

        Returns:
            :class:`memlane.graph.Neighbour` (entity, hops), nearest first; the entity itself has 0 hops.
        """
        return graph.neighbours(self._ctx, entity, depth, as_of=as_of, now=now)

    def find_paths(
        self,
        source: str,
        target: str,
        max_depth: int = DEFAULT_PATH_DEPTH,
        limit: int = DEFAULT_PATH_LIMIT,
        *,
        as_of: datetime | None = None,
        now: datetime | None = None,
    ) -> list[list[Fact]]:
        """Chains of facts linking ``source`` to ``target`` (multi-hop: "who did X introduce me to").

        Args:
            source / target: Names or aliases; unknown -> ``[]``.
            max_depth: Longest chain in facts, 1 to :data:`~memlane.graph.MAX_GRAPH_DEPTH` (default
                :data:`~memlane.graph.DEFAULT_PATH_DEPTH`).
            limit: Most chains, 1 to :data:`~memlane.graph.MAX_PATHS` (default
                :data:`~memlane.graph.DEFAULT_PATH_LIMIT`), shortest first.
            as_of: Use the facts true then (default: the current facts).
            now: Reference time; default the clock.
        """
        return graph.find_paths(self._ctx, source, target, max_depth, limit, as_of=as_of, now=now)

    def merge_entities(self, alias: str, into: str, *, reason: str | None = None) -> Entity:
        """Merge entity ``alias`` into ``into`` ("Bob" into "Robert Smith"), recording the merge.

        Afterwards both names resolve to ``into``; facts stored under ``alias`` are read with it.

        Raises:
            ValidationError: a bad name. FactNotFoundError: ``alias`` is merged already.
        """
        return graph.merge_entities(self._ctx, alias, into, reason)

    def episodes_about(self, entity: str, limit: int = 10) -> list[Episode]:
        """Episodes linked to ``entity`` by the offline extraction on write, newest first.

        Args:
            entity: A name or alias. limit: Most episodes (1 to the maximum limit).
        """
        return graph.episodes_about(self._ctx, entity, limit)

    def recall_context(
        self,
        entity_or_query: str,
        *,
        as_of: datetime | None = None,
        limit: int = 10,
        now: datetime | None = None,
    ) -> RecallContext:
        """What memory holds about an entity or a query (seed 002's ``load_customer_context``).

        The facts valid at ``as_of`` (default: the current ones) about the entity the text names
        (or the entities a query mentions), ranked by ``confidence * (0.5 + importance / 20)``
        with their breakdowns; the ranked episodes of :meth:`recall_episodes` for the same text
        (as of ``as_of``); and the episodes linked to those entities on write that recall missed.

        Args:
            entity_or_query: An entity name (``"customer_123"``) or a question.
            as_of: Valid-time instant (timezone-aware), or ``None`` for now.
            limit: Most facts, hits and linked episodes each (>= 1; default 10).
            now: Reference time; default the clock.

        Returns:
            A :class:`memlane.graph.context.RecallContext`.

        Raises:
            ValidationError: a bad argument. EmbeddingError, StoreError: as for :meth:`recall_episodes`.
        """
        return graph_context.recall_context(self._ctx, entity_or_query, as_of=as_of, limit=limit, now=now)

    def export_facts(self) -> Iterator[dict[str, Any]]:
        """Every fact of this tenant (this session's only under ``session`` scope), oldest first, as
        JSON-ready dicts: :meth:`memlane.Fact.to_dict` plus ``subject_name``/``object_name``
        (:mod:`memlane.graph.transfer`; ``memlane facts export`` writes them as JSONL)."""
        return graph_transfer.export_facts(self._ctx)

    def import_facts(self, rows: Iterable[Mapping[str, Any]]) -> FactImportReport:
        """Restore exported facts into this tenant, exactly as exported (times, closures, reasons).

        The contradiction rules are not re-run (the history is already decided); a fact whose
        id is held is skipped, so a second import stores nothing. Invalid rows are reported, the
        valid ones stored in one transaction.

        Returns:
            A :class:`memlane.graph.transfer.FactImportReport` (stored, skipped, rejected).
        """
        return graph_transfer.import_facts(self._ctx, rows)

    def graph_stats(self) -> GraphStats:
        """The health of this tenant's graph: triples per session, average confidence, invalid share,
        duplicates merged, and the seed's gates it fails (:class:`memlane.graph.GraphStats`)."""
        return graph.graph_stats(self._ctx)

    # -- open / close ------------------------------------------------------------------

    def optimize(self) -> IndexReport:
        """Build the store's search indexes now, so that no recall has to (call it after a bulk ingest).

        SQLite: reads every vector not yet in the in-memory index, writes the ``<db>.vectors``
        cold-start file and, for a store above its ANN threshold (50,000 vectors), trains the
        ``<db>.ivf`` lists (or retrains them once the store grew 4x) and folds every new row into
        them. A recall never trains them: without lists it searches exactly (the same hits,
        slower at a million rows). PostgreSQL: folds the rows written since the last fold (which
        writes skip and recalls scan exactly) into its partial HNSW index, a rebuild of about
        0.3-0.6 ms per stored row (it returns at once when there are none). Table-wide (every
        tenant); recalls in other processes pick up the files.

        Returns:
            What was built (:class:`memlane.stores.base.IndexReport`).

        Raises:
            StoreError: the database failed.
        """
        return lifecycle.optimize(self._ctx)

    def flush(self) -> None:
        """Write deferred retrieval bookkeeping (``retrieve_count``/``last_retrieved_at``) now.

        Ranked recalls buffer these counts in the store object and write them with the next
        write, every few dozen recalls or seconds, and on :meth:`close`
        (:mod:`memlane.stores.retrievals`); call this to see them at once (e.g. before
        reading them from another process).

        Raises:
            StoreError: the database failed (the counts stay buffered).
        """
        self._ctx.check_open()
        self.store.flush()

    def close(self) -> None:
        """Close the memory (and its store, if it owns it; else write its deferred counts). Idempotent."""
        if not self._ctx.closed:
            self._ctx.close()
            if self._owns_store:
                self.store.close()
            else:
                try:
                    self.store.flush()
                except MemlaneError as exc:  # the store may already be closed; closing never fails
                    logger.debug("close: retrieval counts not written: %s", exc)

    def __enter__(self) -> EpisodicMemory:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"EpisodicMemory(store={self.store!r}, embedder={self.embedder.model_id!r}, "
            f"tenant_id={self.tenant_id!r}, session_id={self.session_id!r}, "
            f"scope={Scope(self.config.scope).value!r})"
        )
