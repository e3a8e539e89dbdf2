"""``MemoryContext``: what every room of the engine works with.

One concrete object holds a memory's parts (store, embedder, config, clock), its scope
(tenant, session) and the few rules every operation starts with: "now" (the clock's, or a
caller's checked to be timezone-aware), embedding with the fallback
(``config.embedding_fallback``), the scope filter, visibility, and the open/closed check.

The rooms are free functions that take it as their first argument — recall in
:mod:`memlane.recall.methods`, lifecycle in :mod:`memlane.lifecycle.methods`, sessions in
:class:`memlane.sessions.SessionMemory` — the way graphiti passes ``GraphitiClients`` to its
search functions. :class:`memlane.EpisodicMemory` holds one context and delegates every public
method to a room's function, so none of them imports the facade and the import graph stays
one-way (``memory -> recall/lifecycle/sessions -> context``).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta

import numpy as np
from numpy.typing import NDArray

from memlane.clock import Clock, ensure_utc
from memlane.config import MemoryConfig
from memlane.embeddings.base import Embedder, check_vectors
from memlane.episode_input import EpisodeInput, build_episode
from memlane.errors import EmbeddingError, EmbeddingModelMismatchError, StoreClosedError
from memlane.models import Episode, Scope
from memlane.stores.base import EpisodeFilter, Store
from memlane.validation import check_identifier

__all__ = ["MemoryContext", "is_retained", "retained_after"]

logger = logging.getLogger(__name__)

_QUERY_VECTORS: ContextVar[dict[tuple[int, str], NDArray[np.float32]] | None] = ContextVar(
    "memlane_query_vectors", default=None
)
"""The query vectors of the reads inside :meth:`MemoryContext.one_query` (per thread and task)."""


def retained_after(now: datetime, retention_days: float | None) -> datetime | None:
    """Oldest ``created_at`` still retained at ``now``, or ``None`` when everything is kept."""
    return None if retention_days is None else now - timedelta(days=retention_days)


def is_retained(episode: Episode, cutoff: datetime | None, never_forget_from: float | None) -> bool:
    """Whether ``episode`` is still retained: the Python twin of ``EpisodeFilter.retained_after``.

    Args:
        episode: A stored episode.
        cutoff: Oldest ``created_at`` still retained (:func:`retained_after`), or ``None`` = no retention.
        never_forget_from: Importance from which an episode is kept whatever its age, or ``None``.
    """
    if cutoff is None or episode.created_at >= cutoff:
        return True
    return (
        never_forget_from is not None
        and episode.importance is not None
        and (episode.importance >= never_forget_from)
    )


class MemoryContext:
    """A memory's parts, scope and shared rules (see the module docstring).

    Args:
        store: Where the episodes live.
        embedder: Makes the vectors.
        config: Scope, limits, retention and ranking defaults.
        clock: Source of "now".
        tenant_id: The memory's tenant (already checked).
        session_id: The memory's session (already checked).
        rng: Random source of the opportunistic prune.
    """

    __slots__ = ("_closed", "clock", "config", "embedder", "rng", "session_id", "store", "tenant_id")

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        config: MemoryConfig,
        clock: Clock,
        tenant_id: str,
        session_id: str,
        rng: random.Random,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config
        self.clock = clock
        self.tenant_id = tenant_id
        self.session_id = session_id
        self.rng = rng
        self._closed = False

    # -- open / closed -------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether the memory this context belongs to was closed."""
        return self._closed

    def close(self) -> None:
        """Mark the context closed: every later :meth:`check_open` raises."""
        self._closed = True

    def check_open(self) -> None:
        """Raise unless the memory is open.

        Raises:
            StoreClosedError: the memory was closed.
        """
        if self._closed:
            raise StoreClosedError("this EpisodicMemory is closed")

    # -- time ----------------------------------------------------------------------------

    def now(self, now: datetime | None = None) -> datetime:
        """``now`` checked to be timezone-aware (converted to UTC), or the clock's now.

        Raises:
            ValidationError: a naive ``now``.
        """
        return self.clock.now() if now is None else ensure_utc(now, "now")

    # -- embedding -----------------------------------------------------------------------

    def embed(self, texts: list[str], action: str) -> NDArray[np.float32] | None:
        """Vectors ``[len(texts), dims]`` (L2-normalised), or ``None`` when the embedder failed.

        Args:
            texts: What to embed (at least one).
            action: ``"remember"`` (what fails is stored without vectors) or ``"recall"``
                (the search continues by keywords); only the warning differs.

        Returns:
            The checked vectors, or ``None`` when the embedder raised (an
            :class:`~memlane.errors.EmbeddingError`, or any other ``Exception`` such as a
            ``ConnectionError`` from a custom embedder) and ``config.embedding_fallback`` is on
            (a warning is logged).

        Raises:
            EmbeddingError: the embedder failed and the fallback is off (another exception is
                translated into one, chained as its ``__cause__``).
            EmbeddingModelMismatchError: always (vectors of another model are never used).
        """
        try:
            return check_vectors(
                self.embedder.embed(texts), len(texts), self.embedder.dims, self.embedder.model_id
            )
        except EmbeddingModelMismatchError:
            raise
        except Exception as caught:  # a third-party embedder's own error (ConnectionError, ...) too
            if isinstance(caught, EmbeddingError):
                exc = caught
            else:
                exc = EmbeddingError(f"{type(caught).__name__}: {caught}")
            if not self.config.embedding_fallback:
                raise exc from (None if exc is caught else caught)
            if action == "remember":
                logger.warning(
                    "embedder %s failed (%s): storing %d text(s) without vectors; "
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

    def embed_query(self, query: str) -> NDArray[np.float32] | None:
        """One query's vector ``[dims]``, or ``None`` (as :meth:`embed` with ``"recall"``).

        Inside :meth:`one_query`, a query this embedder already embedded there is not embedded
        again (a failure is not remembered: the next read tries again).
        """
        memo = _QUERY_VECTORS.get()
        key = (id(self.embedder), query)
        if memo is not None and key in memo:
            return memo[key]
        vectors = self.embed([query], "recall")
        if vectors is None:
            return None
        vector: NDArray[np.float32] = vectors[0]
        if memo is not None:
            memo[key] = vector
        return vector

    @contextmanager
    def one_query(self) -> Iterator[None]:
        """Embed each query once across the reads inside the block (the context block's searches).

        The vectors are kept for the block only, per thread and async task (a
        :class:`contextvars.ContextVar`), so concurrent calls never share them; nested blocks
        share the outer one's.
        """
        if _QUERY_VECTORS.get() is not None:
            yield
            return
        token = _QUERY_VECTORS.set({})
        try:
            yield
        finally:
            _QUERY_VECTORS.reset(token)

    # -- building, scope and visibility ----------------------------------------------------

    def build_episode(self, item: EpisodeInput, now: datetime) -> Episode:
        """``item`` validated into the episode to store (:func:`memlane.episode_input.build_episode`).

        Raises:
            ValidationError: an invalid field.
        """
        return build_episode(
            item,
            now,
            tenant_id=self.tenant_id,
            session_id=self.session_id,
            embedding_model=self.embedder.model_id,
            default_importance=self.config.importance,
        )

    def filter(self, *, event_type: str | None, tags: tuple[str, ...], now: datetime | None) -> EpisodeFilter:
        """The scope filter (tenant/session by ``config.scope``) with ``event_type`` and ``tags``.

        Args:
            event_type: Checked event type, or ``None``.
            tags: Normalised tags (AND).
            now: With it, episodes expired at ``now`` (``config.retention_days``) are left out.
        """
        scope = Scope(self.config.scope)
        return EpisodeFilter(
            tenant_id=None if scope is Scope.GLOBAL else self.tenant_id,
            session_id=self.session_id if scope is Scope.SESSION else None,
            event_type=event_type,
            tags=tags,
            retained_after=None if now is None else self.retained_after(now),
            never_forget_from=self.config.policy.never_forget_from,
        )

    def scope_filter(self, now: datetime | None) -> EpisodeFilter:
        """:meth:`filter` without an event type or tag condition."""
        return self.filter(event_type=None, tags=(), now=now)

    def in_scope(self, episode: Episode) -> bool:
        """Whether ``episode`` is within the memory's scope (``config.scope``)."""
        scope = Scope(self.config.scope)
        if scope is Scope.GLOBAL:
            return True
        if episode.tenant_id != self.tenant_id:
            return False
        return scope is Scope.TENANT or episode.session_id == self.session_id

    def visible(self, episode: Episode) -> bool:
        """In scope and not expired at the clock's now (:func:`is_retained`)."""
        cutoff = self.retained_after(self.clock.now())
        return self.in_scope(episode) and is_retained(episode, cutoff, self.config.policy.never_forget_from)

    def retained_after(self, now: datetime) -> datetime | None:
        """Oldest ``created_at`` (or session ``ended_at``) still retained at ``now``; ``None`` = all kept."""
        return retained_after(now, self.config.retention_days)

    def get_episode(self, episode_id: str) -> Episode | None:
        """The episode with ``episode_id`` if it is in scope and not expired (see :meth:`visible`).

        Raises:
            StoreClosedError: the memory is closed. ValidationError: a blank or over-long id.
            StoreError: the store failed.
        """
        self.check_open()
        episode = self.store.get(check_identifier(episode_id, "episode_id"))
        if episode is None or not self.visible(episode):
            return None
        return episode

    def __repr__(self) -> str:
        return (
            f"MemoryContext(store={self.store!r}, embedder={self.embedder.model_id!r}, "
            f"tenant_id={self.tenant_id!r}, session_id={self.session_id!r}, "
            f"scope={Scope(self.config.scope).value!r})"
        )
