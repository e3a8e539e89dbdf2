"""``MemoryCore``: what the rooms may use of an :class:`memlane.EpisodicMemory`.

The facade's public methods live with the room that implements them: the recall method in
:mod:`memlane.recall.methods`, the lifecycle methods in :mod:`memlane.lifecycle.methods`
(both mixed into ``EpisodicMemory``), and :class:`memlane.sessions.SessionMemory` works over a
memory. None of them imports :mod:`memlane.memory`: they type the memory as this protocol,
so the import graph stays one-way (``memory -> recall/lifecycle/sessions -> core``).
``EpisodicMemory`` (in :mod:`memlane.memory`) implements it: its parts (store, embedder,
config, clock), its scope, and the checks every call starts with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from memlane.clock import Clock
from memlane.config import MemoryConfig
from memlane.embeddings.base import Embedder
from memlane.episode_input import EpisodeInput
from memlane.models import Episode, RecallHit
from memlane.recall.ranking import RankingWeights
from memlane.stores.base import EpisodeFilter, Store

__all__ = ["MemoryCore"]


class MemoryCore(Protocol):
    """The parts, scope and checks of an :class:`memlane.EpisodicMemory` (see the module docstring)."""

    @property
    def store(self) -> Store:
        """Where the episodes live."""
        ...

    @property
    def embedder(self) -> Embedder:
        """Makes the vectors."""
        ...

    @property
    def config(self) -> MemoryConfig:
        """Scope, limits, retention and ranking defaults."""
        ...

    @property
    def clock(self) -> Clock:
        """Source of "now"."""
        ...

    @property
    def tenant_id(self) -> str:
        """The memory's tenant."""
        ...

    @property
    def session_id(self) -> str:
        """The memory's session."""
        ...

    def _check_open(self) -> None:
        """Raise :class:`~memlane.errors.StoreClosedError` once the memory is closed."""

    def _now(self, now: datetime | None) -> datetime:
        """``now`` checked to be timezone-aware (as UTC), or the clock's now."""
        ...

    def _embed(self, texts: list[str], action: str) -> NDArray[np.float32] | None:
        """Vectors ``[len(texts), dims]``, or ``None`` when the embedder failed and the fallback is on."""
        ...

    def _embed_query(self, query: str) -> NDArray[np.float32] | None:
        """One query's vector ``[dims]``, or ``None`` (as :meth:`_embed`)."""
        ...

    def _build_episode(self, item: EpisodeInput, now: datetime) -> Episode:
        """``item`` validated into the episode to store (:func:`memlane.episode_input.build_episode`)."""
        ...

    def _filter(
        self, *, event_type: str | None, tags: tuple[str, ...], now: datetime | None
    ) -> EpisodeFilter:
        """The scope filter (tenant/session by ``config.scope``; retention at ``now`` if given)."""
        ...

    def _scope_filter(self, now: datetime | None) -> EpisodeFilter:
        """:meth:`_filter` without event type or tag conditions."""
        ...

    def _in_scope(self, episode: Episode) -> bool:
        """Whether ``episode`` is within the memory's scope."""
        ...

    def _visible(self, episode: Episode) -> bool:
        """Whether ``episode`` is in scope and not expired (``config.retention_days``) at the clock's now."""
        ...

    def _maybe_prune(self) -> None:
        """Prune expired episodes with probability ``config.prune_probability`` (after a write)."""

    def get_episode(self, episode_id: str) -> Episode | None:
        """The episode with this id if it is in scope."""
        ...

    def recall_episodes(
        self,
        query: str | None = None,
        event_type: str | None = None,
        tags: Sequence[str] | str | None = None,
        limit: int | None = None,
        *,
        now: datetime | None = None,
        weights: RankingWeights | str | Mapping[str, float] | None = None,
    ) -> list[RecallHit]:
        """Recall episodes in scope (:meth:`memlane.EpisodicMemory.recall_episodes`)."""
        ...
