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
from memlane.compaction import (
    MERGE_REASON_PREFIX,
    CompactionReport,
    MergeGroup,
    cluster,
    merge_episodes,
    representative_key,
)
from memlane.config import MemoryConfig
from memlane.embeddings.base import Embedder, check_vectors
from memlane.errors import (
    EmbeddingError,
    EmbeddingModelMismatchError,
    EpisodeNotFoundError,
    MemlaneError,
    StoreClosedError,
    ValidationError,
)
from memlane.forgetting import ForgetReport
from memlane.keywords import keyword_terms
from memlane.models import Contradiction, Episode, RecallHit, Scope
from memlane.ranking import RETRIEVAL_MODES, RankingWeights, rank, resolve_weights
from memlane.retrieval import merge_candidates
from memlane.stores.base import (
    EpisodeFilter,
    KeywordCandidates,
    Store,
    StoreStats,
    Supersession,
    VectorCandidates,
)
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
    import-only fields ``id``, ``tenant_id``, ``session_id``, ``recorded_at``,
    ``invalidated_at``, ``superseded_by``, ``supersede_reason``, ``retrieve_count`` (>= 0)
    and ``last_retrieved_at`` keep an exported episode's identity and history when it is
    re-imported; left ``None`` they come from the memory (``recorded_at``: the clock's now)
    or stay empty.
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
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    recorded_at: datetime | None = None
    invalidated_at: datetime | None = None
    superseded_by: str | None = None
    supersede_reason: str | None = None
    archived_at: datetime | None = None
    session_scoped: bool = False
    retrieve_count: int = 0
    last_retrieved_at: datetime | None = None


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
            importance: Rating 1-10, clamped to that range; ``None`` = unrated (scored 0.5).
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
            return self._remember_superseding(item, supersedes, reason=None)
        if self.config.auto_supersede:
            return self._remember_superseding(item, (), reason=None, auto=True)
        return self.remember_episodes([item])[0]

    def supersede(
        self,
        old_id: str,
        event_type: str,
        content: str,
        tags: Sequence[str] | str | None = None,
        importance: float | None = None,
        *,
        valid_from: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        reason: str | None = None,
    ) -> Episode:
        """Replace episode ``old_id`` with a new one, keeping the old one as history.

        In one transaction: the new episode is inserted, and the old one gets
        ``valid_until`` = the new ``valid_from`` (the fact stopped being true then),
        ``invalidated_at`` = now (memlane retired it now), ``superseded_by`` = the new id and
        ``supersede_reason`` = ``reason``. Nothing is deleted: ``recall_episodes(as_of=T)``
        with ``T`` before the change still finds the old episode, and :meth:`history` returns
        the chain.

        Args:
            old_id: Id of the episode to supersede (in this memory's scope).
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
            EpisodeNotFoundError: ``old_id`` is not in scope or already superseded.
            ValidationError, EmbeddingError, StoreError: as for :meth:`remember_episode`.
        """
        item = EpisodeInput(
            event_type=event_type,
            content=content,
            tags=tags,
            importance=importance,
            metadata=metadata,
            valid_from=valid_from,
        )
        return self._remember_superseding(item, [old_id], reason=reason)

    def _remember_superseding(
        self, item: EpisodeInput, old_ids: Sequence[str] | str, *, reason: str | None, auto: bool = False
    ) -> Episode:
        self._check_open()
        if isinstance(old_ids, str):
            old_ids = [old_ids]
        if reason is not None:
            reason = check_text(reason, "reason")
        now = self.clock.now()
        episode = self._build_episode(item, now)
        olds: list[Episode] = []
        for old_id in dict.fromkeys(check_identifier(i, "supersedes id") for i in old_ids):
            old = self.get_episode(old_id)
            if old is None:
                raise EpisodeNotFoundError(f"no episode {old_id!r} in this memory's scope")
            if old.superseded_by is not None:
                raise EpisodeNotFoundError(
                    f"episode {old_id!r} is already superseded by {old.superseded_by!r}"
                )
            olds.append(old)
        supersessions = [
            Supersession(
                old_id=old.id,
                new_id=episode.id,
                valid_until=max(old.valid_from, episode.valid_from),
                invalidated_at=episode.recorded_at,
                reason=reason,
                tenant_id=old.tenant_id,
            )
            for old in olds
        ]
        vectors = self._embed([episode.content], "remember")
        if vectors is None:
            episode = replace(episode, embedding_model=None)
        elif auto:
            found = self._contradictions(
                vectors[0],
                episode.event_type,
                episode.tags,
                exclude=frozenset(),
                threshold=self.config.contradiction_threshold,
                limit=100,
                at=now,
            )
            supersessions = [
                Supersession(
                    old_id=c.episode.id,
                    new_id=episode.id,
                    valid_until=max(c.episode.valid_from, episode.valid_from),
                    invalidated_at=episode.recorded_at,
                    reason=f"auto: contradiction cosine={c.score:.3f} ({c.reason})",
                    tenant_id=c.episode.tenant_id,
                )
                for c in found
            ]
            if supersessions:
                logger.info("auto-superseding %d episode(s) with %s", len(supersessions), episode.id)
        self.store.insert([episode], vectors, supersessions)
        self._maybe_prune()
        return episode

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
        shares the ``event_type`` or at least one tag, and its content's embedding has a
        cosine similarity >= ``threshold`` to the given text ("always use MySQL" vs "we use
        PostgreSQL now" are close paraphrases with one changed detail). Similarity alone
        cannot tell a contradiction from a restatement: review the candidates, then
        :meth:`supersede` (or turn on ``config.auto_supersede``).

        Args:
            episode_or_text: A stored episode (its content, event type and tags are used; it
                is never its own candidate) or a text.
            event_type: For a text: the event type to match, or ``None``.
            tags: For a text: tags of which any one must be shared.
            threshold: Cosine similarity in (0, 1]; default ``config.contradiction_threshold``
                (0.8).
            limit: Maximum candidates, >= 1 (default 5).
            now: Reference time (timezone-aware); default the clock.

        Returns:
            Candidates, highest ``score`` (the cosine, clipped to 1) first; empty when the
            embedder is unavailable (logged) or nothing qualifies.

        Raises:
            ValidationError: invalid argument. EmbeddingError: the embedder failed and
            ``config.embedding_fallback`` is off. StoreError: the store failed.
        """
        self._check_open()
        limit = check_limit(limit)
        cut = self.config.contradiction_threshold if threshold is None else threshold
        if isinstance(cut, bool) or not isinstance(cut, int | float) or not 0.0 < cut <= 1.0:
            raise ValidationError(f"threshold must be a number in (0, 1], got {cut!r}")
        at = self.clock.now() if now is None else ensure_utc(now, "now")
        if isinstance(episode_or_text, Episode):
            text = episode_or_text.content
            kind: str | None = episode_or_text.event_type
            tag_set = episode_or_text.tags
            exclude = frozenset({episode_or_text.id})
        else:
            text = check_text(episode_or_text, "content")
            kind = None if event_type is None else check_identifier(event_type, "event_type")
            tag_set = normalize_tags(tags)
            exclude = frozenset()
        vectors = self._embed([text], "recall")
        if vectors is None:
            return []
        return self._contradictions(
            vectors[0], kind, tag_set, exclude=exclude, threshold=float(cut), limit=limit, at=at
        )

    def _contradictions(
        self,
        vector: NDArray[np.float32],
        event_type: str | None,
        tags: Sequence[str],
        *,
        exclude: frozenset[str],
        threshold: float,
        limit: int,
        at: datetime,
    ) -> list[Contradiction]:
        """Vector search per shared attribute (event type, each tag), united by row key."""
        base = replace(self._filter(event_type=None, tags=(), now=at), still_valid_at=at, current_at=at)
        searches: list[tuple[EpisodeFilter, str | None]] = []
        if event_type is not None:
            searches.append((replace(base, event_type=event_type), None))
        searches.extend((replace(base, tags=(tag,)), tag) for tag in tags)
        found: dict[int, tuple[float, bool, list[str]]] = {}
        for flt, tag in searches:
            candidates = self.store.vector_candidates(flt, vector, top_n=max(4 * limit, 50))
            for key, cosine in zip(candidates.keys, candidates.cosine, strict=True):
                if float(cosine) < threshold:
                    continue
                score, same_type, shared = found.get(int(key), (float(cosine), False, []))
                found[int(key)] = (score, same_type or tag is None, [*shared, *([tag] if tag else [])])
        episodes = self.store.fetch(list(found))
        out = []
        for key, (score, same_type, shared) in found.items():
            episode = episodes.get(key)
            if episode is None or episode.id in exclude or episode.superseded_by is not None:
                continue
            reasons = (["same event_type"] if same_type else []) + (
                [f"shared tags: {', '.join(shared)}"] if shared else []
            )
            out.append(Contradiction(episode=episode, score=min(1.0, score), reason="; ".join(reasons)))
        out.sort(key=lambda c: (-c.score, c.episode.id))
        return out[:limit]

    def history(self, episode_id: str) -> list[Episode]:
        """Return the supersede chain through ``episode_id``, oldest first.

        Follows ``superseded_by`` links backwards (episodes this one replaced, and theirs)
        and forwards (the episode that replaced it, and so on). Episodes merged into one
        successor all appear, ordered by ``valid_from`` then ``recorded_at``.

        Args:
            episode_id: Any episode of the chain (in this memory's scope).

        Returns:
            Every episode of the chain, oldest first; ``[episode]`` when it has no links.

        Raises:
            EpisodeNotFoundError: ``episode_id`` is not in this memory's scope.
            ValidationError: blank or over-long id. StoreError: the store failed.
        """
        start = self.get_episode(episode_id)
        if start is None:
            raise EpisodeNotFoundError(f"no episode {episode_id!r} in this memory's scope")
        chain: dict[str, Episode] = {start.id: start}
        frontier = [start.id]
        while frontier:  # predecessors, level by level
            found = [ep for ep in self.store.superseded_links(frontier) if ep.id not in chain]
            found = [ep for ep in found if self._in_scope(ep)]
            chain.update((ep.id, ep) for ep in found)
            frontier = [ep.id for ep in found]
        current = start
        while current.superseded_by is not None and current.superseded_by not in chain:
            nxt = self.get_episode(current.superseded_by)
            if nxt is None:
                break
            chain[nxt.id] = nxt
            current = nxt
        return sorted(chain.values(), key=lambda ep: (ep.valid_from, ep.recorded_at))

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
        self._maybe_prune()
        return episodes

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

    def _build_episode(self, item: EpisodeInput, now: datetime) -> Episode:
        created_at = now if item.created_at is None else ensure_utc(item.created_at, "created_at")
        valid_from = created_at if item.valid_from is None else ensure_utc(item.valid_from, "valid_from")
        valid_until = None if item.valid_until is None else ensure_utc(item.valid_until, "valid_until")
        if valid_until is not None and valid_until < valid_from:
            raise ValidationError(f"valid_until ({valid_until}) is before valid_from ({valid_from})")
        invalidated_at = (
            None if item.invalidated_at is None else ensure_utc(item.invalidated_at, "invalidated_at")
        )
        if not isinstance(item.session_scoped, bool):
            raise ValidationError(f"session_scoped must be true or false, got {item.session_scoped!r}")
        count = item.retrieve_count
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValidationError(f"retrieve_count must be an integer >= 0, got {count!r}")
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
            created_at=created_at,
            metadata=normalize_metadata(item.metadata),
            embedding_model=self.embedder.model_id,
            valid_from=valid_from,
            valid_until=valid_until,
            recorded_at=now if item.recorded_at is None else ensure_utc(item.recorded_at, "recorded_at"),
            invalidated_at=invalidated_at,
            superseded_by=None
            if item.superseded_by is None
            else check_identifier(item.superseded_by, "superseded_by"),
            supersede_reason=None
            if item.supersede_reason is None
            else check_text(item.supersede_reason, "supersede_reason"),
            archived_at=None if item.archived_at is None else ensure_utc(item.archived_at, "archived_at"),
            session_scoped=item.session_scoped,
            retrieve_count=count,
            last_retrieved_at=None
            if item.last_retrieved_at is None
            else ensure_utc(item.last_retrieved_at, "last_retrieved_at"),
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
        flt = replace(flt, exclude_archived=not include_archived, **self._time_slice(at, as_of, known_at))
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
        window = parse_time_window(query, at if now is None else now) if self.config.temporal else None
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
            half_life_days=self.config.policy.half_lives(candidates.importance)
            if self.config.forgetting
            else None,
        )
        keys = [int(candidates.keys[r.index]) for r in ranked]
        episodes = self.store.fetch(keys)
        hits = [
            RecallHit(episode=episodes[key], breakdown=r.breakdown)
            for key, r in zip(keys, ranked, strict=True)
            if key in episodes
        ]
        if self.config.track_retrievals and hits:
            self._record_retrievals([key for key in keys if key in episodes], at)
        return hits

    def _record_retrievals(self, keys: list[int], at: datetime) -> None:
        """Count a retrieval of the returned rows (one batched update); a failure only logs."""
        try:
            self.store.record_retrievals(keys, at)
        except MemlaneError as exc:  # bookkeeping must never fail a recall
            logger.warning("recall: could not record %d retrieval(s): %s", len(keys), exc)

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

    def prune(self, now: datetime | None = None, *, dry_run: bool = False) -> int:
        """Delete every episode older than ``retention_days`` (table-wide, all tenants).

        Never-forget episodes (importance in a never-forget band of
        ``config.forgetting_policy``: >= 9 by default) are kept whatever their age.

        Args:
            now: Reference time (timezone-aware); default the clock.
            dry_run: Only count what would be deleted; change nothing.

        Returns:
            Number of episodes deleted, or that would be with ``dry_run`` (0 when
            ``retention_days`` is ``None``).
        """
        self._check_open()
        if self.config.retention_days is None:
            return 0
        at = self.clock.now() if now is None else ensure_utc(now, "now")
        cutoff = at - timedelta(days=self.config.retention_days)
        keep_from = self.config.policy.never_forget_from
        if dry_run:  # everything minus what retention keeps
            kept = self.store.stats(EpisodeFilter(retained_after=cutoff, never_forget_from=keep_from))
            return self.store.stats(EpisodeFilter()).episodes - kept.episodes
        return self.store.delete_created_before(cutoff, keep_importance_from=keep_from)

    # -- forgetting --------------------------------------------------------------------

    def forget(
        self, now: datetime | None = None, *, dry_run: bool = False, threshold: float | None = None
    ) -> ForgetReport:
        """Archive (or delete) the episodes in scope whose strength fell below ``threshold``.

        Strength is ``0.5 ** (age_days / half_life)`` with the half-life of the episode's
        importance band (:mod:`memlane.forgetting`; Ebbinghaus-style decay; age from
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
            A :class:`memlane.forgetting.ForgetReport` (weakest first).

        Raises:
            ValidationError: bad ``now`` or ``threshold``. StoreError: the store failed.
        """
        self._check_open()
        at = self.clock.now() if now is None else ensure_utc(now, "now")
        cut = self.config.forget_threshold if threshold is None else threshold
        if isinstance(cut, bool) or not isinstance(cut, int | float) or not 0.0 < cut < 1.0:
            raise ValidationError(f"threshold must be a number in (0, 1), got {cut!r}")
        policy = self.config.policy
        flt = replace(self._filter(event_type=None, tags=(), now=None), exclude_archived=True)
        faded: list[tuple[Episode, float]] = []
        for episode in self.store.iter_episodes(flt):
            strength = policy.strength((at - episode.created_at).total_seconds(), episode.importance)
            if strength < cut:
                faded.append((episode, strength))
        faded.sort(key=lambda pair: (pair[1], pair[0].created_at))
        action = self.config.forget_action
        if not dry_run and faded:
            if action == "delete":
                for episode, _ in faded:
                    self.store.delete(episode.id, episode.tenant_id)
            else:
                self.store.archive([episode.id for episode, _ in faded], at)
            logger.info("forget: %s %d episode(s) below strength %g", action, len(faded), cut)
        return ForgetReport(
            action=action, dry_run=dry_run, threshold=float(cut), now=at, forgotten=tuple(faded)
        )

    # -- compaction --------------------------------------------------------------------

    def compact(
        self,
        *,
        similarity: float = 0.95,
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
           :mod:`memlane.compaction` for the rules. Episodes without a vector are not merged.

        Archiving frees no disk space (rows and vectors stay, and each merge adds a row); it
        shrinks the active set every recall filters, scores and ranks.

        Args:
            similarity: Cosine threshold in (0, 1) (default 0.95).
            never_retrieved_older_than_days: Age in days (> 0) from which a never-retrieved
                episode is archived as stale; ``None`` (default) = no stale archiving.
            dry_run: Only report what would change; change nothing.
            now: Reference time (timezone-aware); default the clock.

        Returns:
            A :class:`memlane.compaction.CompactionReport`.

        Raises:
            ValidationError: ``similarity`` or ``never_retrieved_older_than_days`` out of
                range, or a naive ``now``.
            EpisodeNotFoundError: an episode was archived or superseded concurrently (that
                cluster is left as it was; clusters merged before stay merged).
            StoreError: the store failed (clusters merged before the failure stay merged).
        """
        self._check_open()
        at = self.clock.now() if now is None else ensure_utc(now, "now")
        if (
            isinstance(similarity, bool)
            or not isinstance(similarity, int | float)
            or not 0.0 < similarity < 1.0
        ):
            raise ValidationError(f"similarity must be a number in (0, 1), got {similarity!r}")
        days = never_retrieved_older_than_days
        if days is not None and (
            isinstance(days, bool) or not isinstance(days, int | float) or not 0.0 < days < float("inf")
        ):
            raise ValidationError(f"never_retrieved_older_than_days must be a number > 0, got {days!r}")
        never_from = self.config.policy.never_forget_from
        flt = replace(
            self._filter(event_type=None, tags=(), now=None),
            exclude_archived=True,
            still_valid_at=at,
            current_at=at,
        )
        active = [ep for ep in self.store.iter_episodes(flt) if not ep.session_scoped]

        def never_forget(ep: Episode) -> bool:
            return never_from is not None and ep.importance is not None and ep.importance >= never_from

        cutoff = None if days is None else at - timedelta(days=float(days))
        stale: list[Episode] = []
        if cutoff is not None:
            stale = [
                ep
                for ep in active
                if ep.retrieve_count == 0 and ep.created_at < cutoff and not never_forget(ep)
            ]
        stale_ids = {ep.id for ep in stale}
        groups: dict[tuple[str, str], list[Episode]] = {}
        for ep in active:
            if ep.id not in stale_ids:
                groups.setdefault((ep.tenant_id, ep.event_type), []).append(ep)
        vectors = self.store.vectors([ep.id for members in groups.values() for ep in members])
        merges: list[tuple[MergeGroup, NDArray[np.float32]]] = []
        for key in sorted(groups):
            members = sorted((ep for ep in groups[key] if ep.id in vectors), key=representative_key)
            if len(members) < 2:
                continue
            matrix = np.stack([vectors[ep.id] for ep in members])
            for rows, min_cos in cluster(matrix, float(similarity), [never_forget(ep) for ep in members]):
                originals = tuple(members[i] for i in rows)
                merged = merge_episodes(originals, new_id=uuid.uuid4().hex, now=at, min_cosine=min_cos)
                merges.append(
                    (MergeGroup(merged=merged, originals=originals, min_cosine=min_cos), matrix[rows[0]])
                )
        if not dry_run:
            if stale:
                self.store.archive([ep.id for ep in stale], at)
            reason = f"{MERGE_REASON_PREFIX} cosine>{float(similarity):g}"
            for group, vector in merges:
                self.store.merge(group.merged, vector, [ep.id for ep in group.originals], at, reason)
            logger.info(
                "compact: merged %d episode(s) into %d, archived %d stale",
                sum(len(g.originals) for g, _ in merges),
                len(merges),
                len(stale),
            )
        return CompactionReport(
            dry_run=dry_run,
            similarity=float(similarity),
            now=at,
            cutoff=cutoff,
            active_before=len(active),
            merges=tuple(group for group, _ in merges),
            stale=tuple(stale),
        )

    def end_session(self) -> int:
        """End this memory's session: delete its ``session_scoped`` episodes.

        Other episodes of the session stay. Returns how many were deleted.

        Raises:
            StoreError: the store failed.
        """
        self._check_open()
        return self.store.delete_session_scoped(self.tenant_id, self.session_id)

    # -- scope -------------------------------------------------------------------------

    def _filter(
        self, *, event_type: str | None, tags: tuple[str, ...], now: datetime | None
    ) -> EpisodeFilter:
        scope = Scope(self.config.scope)
        retained_after = None
        if now is not None and self.config.retention_days is not None:
            retained_after = now - timedelta(days=self.config.retention_days)
        return EpisodeFilter(
            tenant_id=None if scope is Scope.GLOBAL else self.tenant_id,
            session_id=self.session_id if scope is Scope.SESSION else None,
            event_type=event_type,
            tags=tags,
            retained_after=retained_after,
            never_forget_from=self.config.policy.never_forget_from,
        )

    @staticmethod
    def _time_slice(at: datetime, as_of: datetime | None, known_at: datetime | None) -> dict[str, Any]:
        """The bi-temporal filter fields of a recall (see :meth:`recall_episodes`)."""
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
