"""``EpisodicMemory``: the facade that owns memlane's semantics.

It validates input, applies scope and retention, calls the embedder, asks the store
for candidates and ranks them with :mod:`memlane.ranking`. It is built from injected
parts (store, embedder, clock), holds no global state and has no hosted default.
"""

from __future__ import annotations

import logging
import os
import random
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from memlane.clock import Clock, SystemClock, ensure_utc
from memlane.config import MemoryConfig
from memlane.embeddings.base import Embedder, check_vectors
from memlane.errors import EmbeddingError, EmbeddingModelMismatchError, StoreClosedError, ValidationError
from memlane.keywords import keyword_terms
from memlane.models import Episode, RecallHit, Scope
from memlane.ranking import RETRIEVAL_MODES, RankingWeights, rank, resolve_weights
from memlane.retrieval import merge_candidates
from memlane.stores.base import EpisodeFilter, KeywordCandidates, Store, StoreStats, VectorCandidates
from memlane.temporal import parse_time_window
from memlane.validation import (
    check_identifier,
    check_limit,
    check_text,
    clamp_importance,
    normalize_metadata,
    normalize_tags,
)

if TYPE_CHECKING:
    from memlane.config_file import MemlaneConfig
    from memlane.sessions.memory import SessionMemory

__all__ = ["EpisodeInput", "EpisodicMemory"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EpisodeInput:
    """One episode to remember in a batch (:meth:`EpisodicMemory.remember_episodes`).

    Fields mean the same as :meth:`EpisodicMemory.remember_episode`'s arguments. The
    import-only fields ``id``, ``tenant_id`` and ``session_id`` keep an exported
    episode's identity when it is re-imported; left ``None`` they come from the memory.
    """

    event_type: str
    content: str
    tags: Sequence[str] | str | None = None
    importance: float | None = None
    created_at: datetime | None = None
    metadata: Mapping[str, Any] | None = field(default=None)
    id: str | None = None
    tenant_id: str | None = None
    session_id: str | None = None


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
        self.store = store
        self.embedder = embedder
        self.config = config or MemoryConfig()
        self.clock: Clock = clock or SystemClock()
        self.tenant_id = check_identifier(tenant_id, "tenant_id")
        self.session_id = check_identifier(session_id, "session_id")
        self._rng = rng or random.Random()
        self._owns_store = owns_store
        self._closed = False
        store.bind_embedding_model(embedder.model_id, embedder.dims)

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
        from memlane.embeddings.local import LocalEmbedder
        from memlane.stores.factory import open_store

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

        See :mod:`memlane.config_file` for the format (``memory:`` and ``episodic_memory:``
        sections). A missing ``episodic_memory:`` section means every default.

        Args:
            source: A YAML file path, the same structure as a mapping, or a loaded
                :class:`memlane.config_file.MemlaneConfig`.
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
        from memlane.config_file import build_embedder, build_store, load_config

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
        from memlane.sessions.memory import SessionMemory

        return SessionMemory(self)

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
            rng=self._rng,
            owns_store=False,
        )

    # -- writing -----------------------------------------------------------------------

    def remember_episode(
        self,
        event_type: str,
        content: str,
        tags: Sequence[str] | str | None = None,
        importance: float | None = None,
        *,
        created_at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Episode:
        """Append one episode and return it as stored.

        Args:
            event_type: Category label (non-empty, <= 200 chars, stripped, case-sensitive).
            content: The text to remember (non-empty); it is embedded for semantic recall.
            tags: Labels for AND filtering, normalised by :func:`memlane.validation.normalize_tags`
                (strip, collapse whitespace, lower-case, drop empties, dedupe).
            importance: Rating 1-10, clamped to that range; ``None`` = unrated (scored 0.5).
            created_at: When the event happened (timezone-aware); default: the clock's now.
                Use it for backfills and imports.
            metadata: JSON-serialisable mapping stored alongside.

        Returns:
            The stored :class:`Episode` (with its generated ``id``). Its ``embedding_model``
            is ``None`` when the embedder failed and the episode was stored without a vector
            (``config.embedding_fallback``, the default; a warning is logged): it is then
            found by keyword recall only, until re-embedded.

        Raises:
            ValidationError: any invalid argument (nothing is stored).
            EmbeddingError: the embedder failed and ``config.embedding_fallback`` is off
                (nothing is stored). EmbeddingModelMismatchError always raises.
            StoreError: the store failed (nothing is stored).
        """
        return self.remember_episodes(
            [
                EpisodeInput(
                    event_type=event_type,
                    content=content,
                    tags=tags,
                    importance=importance,
                    created_at=created_at,
                    metadata=metadata,
                )
            ]
        )[0]

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
        self._check_open()
        now = self.clock.now()
        batch = list(items)
        episodes = []
        for position, item in enumerate(batch):
            try:
                episodes.append(self._build_episode(item, now))
            except ValidationError as exc:
                if len(batch) == 1:
                    raise
                raise ValidationError(f"episode #{position}: {exc}") from None
        if not episodes:
            return []
        vectors = self._embed([ep.content for ep in episodes], "remember")
        if vectors is None:
            episodes = [replace(ep, embedding_model=None) for ep in episodes]
        self.store.insert(episodes, vectors)
        if self.config.retention_days is not None and self._rng.random() < self.config.prune_probability:
            pruned = self.prune()
            logger.debug("opportunistic prune removed %d episodes", pruned)
        return episodes

    def _embed(self, texts: list[str], action: str) -> NDArray[np.float32] | None:
        """Embed ``texts``; on an embedder failure return ``None`` (fallback on) or raise."""
        try:
            return check_vectors(
                self.embedder.embed(texts), len(texts), self.embedder.dims, self.embedder.model_id
            )
        except EmbeddingModelMismatchError:
            raise
        except EmbeddingError as exc:
            if not self.config.embedding_fallback:
                raise
            if action == "remember":
                logger.warning(
                    "embedder %s failed (%s): storing %d episode(s) without vectors; "
                    "they are found by keyword recall only",
                    self.embedder.model_id,
                    exc,
                    len(texts),
                )
            else:
                logger.warning(
                    "embedder %s failed (%s): recalling by keywords only", self.embedder.model_id, exc
                )
            return None

    def _build_episode(self, item: EpisodeInput, now: datetime) -> Episode:
        return Episode(
            id=uuid.uuid4().hex if item.id is None else check_identifier(item.id, "id"),
            tenant_id=self.tenant_id
            if item.tenant_id is None
            else check_identifier(item.tenant_id, "tenant_id"),
            session_id=self.session_id
            if item.session_id is None
            else check_identifier(item.session_id, "session_id"),
            event_type=check_identifier(item.event_type, "event_type"),
            content=check_text(item.content, "content"),
            tags=normalize_tags(item.tags),
            importance=clamp_importance(item.importance),
            created_at=now if item.created_at is None else ensure_utc(item.created_at, "created_at"),
            metadata=normalize_metadata(item.metadata),
            embedding_model=self.embedder.model_id,
        )

    # -- reading -----------------------------------------------------------------------

    def recall_episodes(
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
    ) -> list[RecallHit]:
        """Recall episodes in this memory's scope.

        Without ``query``: a structured lookup by the filters, newest ``created_at`` first,
        with no embedder call at all; hits have ``breakdown=None``.

        With ``query``: candidates passing every filter are found by the embeddings, by the
        store's keyword index, or both (``retrieval``), and ranked by the weighted mean of
        relevance, recency and importance (:func:`memlane.ranking.rank`; after Park et al.
        2023); each hit carries its :class:`ScoreBreakdown`. If the query names a time ("last
        May", "in 2023") and ``config.temporal`` is on, episodes created in that window get a
        relevance boost (:mod:`memlane.temporal`). If the embedder fails and
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
                (see :data:`memlane.ranking.PRESETS`) or a mapping; default ``config.weights``.
            retrieval: ``"hybrid"``, ``"dense"`` or ``"keyword"`` for this call; default
                ``config.retrieval``. ``"keyword"`` never calls the embedder; ``"dense"``
                cannot see episodes stored without a vector.
            min_relevance: Drop ranked hits whose relevance is below this, in [0, 1]; default
                ``config.min_relevance``.

        Returns:
            Up to ``limit`` :class:`RecallHit`; never an episode outside the scope or filters.

        Raises:
            ValidationError: invalid argument. EmbeddingError: the query could not be
            embedded and ``config.embedding_fallback`` is off. StoreError: the store failed.
        """
        self._check_open()
        limit = self.config.default_limit if limit is None else check_limit(limit)
        at = self.clock.now() if now is None else ensure_utc(now, "now")
        resolved = resolve_weights(weights, self.config.ranking_weights)
        mode = self.config.retrieval if retrieval is None else retrieval
        if mode not in RETRIEVAL_MODES:
            raise ValidationError(f"retrieval must be one of {list(RETRIEVAL_MODES)}, got {mode!r}")
        threshold = self.config.min_relevance if min_relevance is None else min_relevance
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or not 0.0 <= threshold <= 1.0
        ):
            raise ValidationError(f"min_relevance must be a number in [0, 1], got {threshold!r}")
        flt = self._filter(
            event_type=None if event_type is None else check_identifier(event_type, "event_type"),
            tags=normalize_tags(tags),
            now=at,
        )
        if query is None:
            return [RecallHit(episode=ep) for ep in self.store.list_recent(flt, limit)]
        query = check_text(query, "query")
        top_n = max(limit * 20, 200)
        fallback = False
        dense: VectorCandidates | None = None
        if mode != "keyword":
            vectors = self._embed([query], "recall")
            if vectors is None:
                mode, fallback = "keyword", True
            else:
                dense = self.store.vector_candidates(flt, vectors[0], top_n=top_n)
        keyword: KeywordCandidates | None = None
        if mode != "dense":
            keyword = self.store.keyword_candidates(flt, keyword_terms(query), top_n)
        candidates = merge_candidates(dense, keyword)
        in_window = None
        window = parse_time_window(query, at) if self.config.temporal else None
        if window is not None:
            created = candidates.created_at_seconds
            in_window = (created >= window.start.timestamp()) & (created < window.end.timestamp())
        ranked = rank(
            cosine=candidates.cosine,
            keyword=candidates.keyword,
            created_at_seconds=candidates.created_at_seconds,
            importance=candidates.importance,
            now_seconds=at.timestamp(),
            weights=resolved,
            decay_per_day=self.config.decay_per_day,
            limit=limit,
            retrieval=mode,
            hybrid=self.config.hybrid_settings,
            in_window=in_window,
            min_relevance=float(threshold),
            fallback=fallback,
        )
        keys = [int(candidates.keys[r.index]) for r in ranked]
        episodes = self.store.fetch(keys)
        return [
            RecallHit(episode=episodes[key], breakdown=r.breakdown)
            for key, r in zip(keys, ranked, strict=True)
            if key in episodes
        ]

    def get_episode(self, episode_id: str) -> Episode | None:
        """Return the episode with ``episode_id`` if it exists and is within this memory's scope."""
        self._check_open()
        episode = self.store.get(check_identifier(episode_id, "episode_id"))
        if episode is None or not self._in_scope(episode):
            return None
        return episode

    def iter_episodes(
        self, event_type: str | None = None, tags: Sequence[str] | str | None = None
    ) -> Iterator[Episode]:
        """Yield every episode in scope (retention ignored), oldest first; the export order."""
        self._check_open()
        flt = self._filter(
            event_type=None if event_type is None else check_identifier(event_type, "event_type"),
            tags=normalize_tags(tags),
            now=None,
        )
        return self.store.iter_episodes(flt)

    def count(self) -> int:
        """Number of episodes in scope (including any past retention not yet pruned)."""
        self._check_open()
        return self.store.count(self._filter(event_type=None, tags=(), now=None))

    def stats(self) -> StoreStats:
        """Summary of the episodes in scope (see :class:`memlane.stores.base.StoreStats`)."""
        self._check_open()
        return self.store.stats(self._filter(event_type=None, tags=(), now=None))

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
        episode = self.get_episode(episode_id)
        if episode is None:
            return False
        return self.store.delete(episode.id, episode.tenant_id)

    # -- retention ---------------------------------------------------------------------

    def prune(self, now: datetime | None = None) -> int:
        """Delete every episode older than ``retention_days`` (table-wide, all tenants).

        Args:
            now: Reference time (timezone-aware); default the clock.

        Returns:
            Number of episodes deleted (0 when ``retention_days`` is ``None``).
        """
        self._check_open()
        if self.config.retention_days is None:
            return 0
        at = self.clock.now() if now is None else ensure_utc(now, "now")
        return self.store.delete_created_before(at - timedelta(days=self.config.retention_days))

    # -- scope -------------------------------------------------------------------------

    def _filter(
        self, *, event_type: str | None, tags: tuple[str, ...], now: datetime | None
    ) -> EpisodeFilter:
        scope = Scope(self.config.scope)
        created_after = None
        if now is not None and self.config.retention_days is not None:
            created_after = now - timedelta(days=self.config.retention_days)
        return EpisodeFilter(
            tenant_id=None if scope is Scope.GLOBAL else self.tenant_id,
            session_id=self.session_id if scope is Scope.SESSION else None,
            event_type=event_type,
            tags=tags,
            created_after=created_after,
        )

    def _in_scope(self, episode: Episode) -> bool:
        scope = Scope(self.config.scope)
        if scope is Scope.GLOBAL:
            return True
        if episode.tenant_id != self.tenant_id:
            return False
        return scope is Scope.TENANT or episode.session_id == self.session_id

    # -- lifecycle ---------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("this EpisodicMemory is closed")

    def close(self) -> None:
        """Close the memory (and its store, if it owns it). Idempotent."""
        if not self._closed:
            self._closed = True
            if self._owns_store:
                self.store.close()

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
