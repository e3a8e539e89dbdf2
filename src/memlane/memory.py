"""``EpisodicMemory``: the facade that owns memlane's semantics.

It validates input, applies scope (tenant/session, retention) and delegates; it is built from
injected parts (store, embedder, clock), holds no global state and has no hosted default.

This module holds its state, scope and checks (the :class:`memlane.core.MemoryCore` the rooms
use), its constructors, writing (episodes are built by :mod:`memlane.episode_input`) and plain
lookups. The public methods of the other rooms are mixed in from where their work is done:
``recall_episodes`` from :mod:`memlane.recall.methods` (stages in :mod:`memlane.recall.pipeline`);
``supersede``, ``find_contradictions``, ``history``, ``prune``, ``forget``, ``compact`` and
``end_session`` from :mod:`memlane.lifecycle.methods`; ``sessions`` is a
:class:`memlane.sessions.SessionMemory`.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from memlane.clock import Clock, SystemClock, ensure_utc
from memlane.config import MemoryConfig
from memlane.embeddings.base import Embedder, check_vectors
from memlane.episode_input import EpisodeInput, build_episode, build_episodes
from memlane.errors import (
    EmbeddingError,
    EmbeddingModelMismatchError,
    MemlaneError,
    StoreClosedError,
)
from memlane.lifecycle import retention
from memlane.lifecycle.methods import LifecycleMethods, remember_superseding
from memlane.models import Episode, Scope
from memlane.recall.methods import RecallMethods
from memlane.sessions.memory import SessionMemory
from memlane.stores.base import EpisodeFilter, Store, StoreStats
from memlane.validation import check_identifier, normalize_tags

if TYPE_CHECKING:
    from memlane.config.file import MemlaneConfig

__all__ = ["EpisodeInput", "EpisodicMemory"]

logger = logging.getLogger(__name__)


class EpisodicMemory(RecallMethods, LifecycleMethods):
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

    def remember_episode(  # noqa: PLR0913  (limit debt, #19)
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
            event_type=event_type,
            content=content,
            tags=tags,
            importance=importance,
            created_at=created_at,
            metadata=metadata,
            valid_from=valid_from,
            valid_until=valid_until,
            session_scoped=session_scoped,
        )
        if supersedes:
            return remember_superseding(self, item, supersedes, reason=None)
        if self.config.auto_supersede:
            return remember_superseding(self, item, (), reason=None, auto=True)
        return self.remember_episodes([item])[0]

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
        episodes = build_episodes(
            list(items),
            self.clock.now(),
            tenant_id=self.tenant_id,
            session_id=self.session_id,
            embedding_model=self.embedder.model_id,
            default_importance=self.config.importance,
        )
        if not episodes:
            return []
        vectors = self._embed([ep.content for ep in episodes], "remember")
        if vectors is None:
            episodes = [replace(ep, embedding_model=None) for ep in episodes]
        self.store.insert(episodes, vectors)
        self._maybe_prune()
        return episodes

    # -- reading -----------------------------------------------------------------------

    def get_episode(self, episode_id: str) -> Episode | None:
        """Return the episode with ``episode_id`` if it exists, is in scope and is not expired.

        Expired: created more than ``config.retention_days`` before the clock's now (and not
        never-forget); see :mod:`memlane.lifecycle.retention`. Archived and superseded
        episodes are returned.

        Raises:
            ValidationError: blank or over-long id. StoreError: the store failed.
        """
        self._check_open()
        episode = self.store.get(check_identifier(episode_id, "episode_id"))
        if episode is None or not self._visible(episode):
            return None
        return episode

    def iter_episodes(
        self, event_type: str | None = None, tags: Sequence[str] | str | None = None
    ) -> Iterator[Episode]:
        """Yield every episode in scope and not expired at the clock's now, oldest first; the export order.

        Archived and superseded episodes are included; expired ones (``config.retention_days``)
        are not, even before a prune removes them.
        Buffered retrieval counts are written first, so an export carries them.
        """
        self._check_open()
        self.store.flush()
        flt = self._filter(
            event_type=None if event_type is None else check_identifier(event_type, "event_type"),
            tags=normalize_tags(tags),
            now=self.clock.now(),
        )
        return self.store.iter_episodes(flt)

    def count(self) -> int:
        """Number of episodes in scope and not expired (what :meth:`iter_episodes` yields).

        Expired episodes still stored until a prune are counted by ``prune(dry_run=True)``.
        """
        self._check_open()
        return self.store.count(self._scope_filter(self.clock.now()))

    def stats(self) -> StoreStats:
        """Summary of the episodes in scope and not expired (see :class:`memlane.stores.base.StoreStats`).

        Like :meth:`count`, it describes what can be read; ``prune(dry_run=True)`` counts the
        expired rows still stored.
        """
        self._check_open()
        return self.store.stats(self._scope_filter(self.clock.now()))

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
        self._check_open()
        episode = self.store.get(check_identifier(episode_id, "episode_id"))
        if episode is None or not self._in_scope(episode):  # an expired episode may be deleted
            return False
        return self.store.delete(episode.id, episode.tenant_id)

    # -- helpers: time, embedding, building, scope ---------------------------------------

    def _now(self, now: datetime | None) -> datetime:
        return self.clock.now() if now is None else ensure_utc(now, "now")

    def _maybe_prune(self) -> None:
        if self.config.retention_days is not None and self._rng.random() < self.config.prune_probability:
            pruned = self.prune()
            logger.debug("opportunistic prune removed %d episodes", pruned)

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

    def _embed_query(self, query: str) -> NDArray[np.float32] | None:
        vectors = self._embed([query], "recall")
        return None if vectors is None else vectors[0]

    def _build_episode(self, item: EpisodeInput, now: datetime) -> Episode:
        return build_episode(
            item,
            now,
            tenant_id=self.tenant_id,
            session_id=self.session_id,
            embedding_model=self.embedder.model_id,
            default_importance=self.config.importance,
        )

    def _scope_filter(self, now: datetime | None) -> EpisodeFilter:
        """The scope (and, given ``now``, retention) filter, with no event type or tag condition."""
        return self._filter(event_type=None, tags=(), now=now)

    def _filter(
        self, *, event_type: str | None, tags: tuple[str, ...], now: datetime | None
    ) -> EpisodeFilter:
        scope = Scope(self.config.scope)
        return EpisodeFilter(
            tenant_id=None if scope is Scope.GLOBAL else self.tenant_id,
            session_id=self.session_id if scope is Scope.SESSION else None,
            event_type=event_type,
            tags=tags,
            retained_after=None if now is None else retention.retained_after(now, self.config.retention_days),
            never_forget_from=self.config.policy.never_forget_from,
        )

    def _visible(self, episode: Episode) -> bool:
        """In scope and not expired at the clock's now (:func:`memlane.lifecycle.retention.is_retained`)."""
        cutoff = retention.retained_after(self.clock.now(), self.config.retention_days)
        return self._in_scope(episode) and retention.is_retained(
            episode, cutoff, self.config.policy.never_forget_from
        )

    def _in_scope(self, episode: Episode) -> bool:
        scope = Scope(self.config.scope)
        if scope is Scope.GLOBAL:
            return True
        if episode.tenant_id != self.tenant_id:
            return False
        return scope is Scope.TENANT or episode.session_id == self.session_id

    # -- open / close ------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("this EpisodicMemory is closed")

    def flush(self) -> None:
        """Write deferred retrieval bookkeeping (``retrieve_count``/``last_retrieved_at``) now.

        Ranked recalls buffer these counts in the store object and write them with the next
        write, every few dozen recalls or seconds, and on :meth:`close`
        (:mod:`memlane.stores.retrievals`); call this to see them at once (e.g. before
        reading them from another process).

        Raises:
            StoreError: the database failed (the counts stay buffered).
        """
        self._check_open()
        self.store.flush()

    def close(self) -> None:
        """Close the memory (and its store, if it owns it; else write its deferred counts). Idempotent."""
        if not self._closed:
            self._closed = True
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
