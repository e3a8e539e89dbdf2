"""The facade's lifecycle methods: superseding, history, contradictions, retention, forgetting, compaction.

:class:`LifecycleMethods` is mixed into :class:`memlane.EpisodicMemory`; each method checks
its arguments, applies the memory's scope and runs the job of its module
(:mod:`~memlane.lifecycle.supersession`, :mod:`~memlane.lifecycle.retention`,
:mod:`~memlane.lifecycle.forgetting`, :mod:`~memlane.lifecycle.compaction`). It uses the
memory only through :class:`memlane.core.MemoryCore`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from memlane.core import MemoryCore
from memlane.episode_input import EpisodeInput
from memlane.lifecycle import compaction, forgetting, retention, supersession
from memlane.lifecycle.compaction import CompactionReport
from memlane.lifecycle.forgetting import ForgetReport
from memlane.models import Contradiction, Episode
from memlane.validation import check_flag, check_identifier, check_limit, check_text

__all__ = ["LifecycleMethods", "remember_superseding"]

logger = logging.getLogger(__name__)


class LifecycleMethods:
    """Lifecycle operations, for :class:`memlane.EpisodicMemory` (see the module docstring)."""

    def supersede(
        self: MemoryCore,
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
        old_id = check_identifier(old_id, "old_id")
        item = EpisodeInput(
            event_type=event_type,
            content=content,
            tags=tags,
            importance=importance,
            metadata=metadata,
            valid_from=valid_from,
        )
        return remember_superseding(self, item, [old_id], reason=reason)

    def find_contradictions(
        self: MemoryCore,
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
        self._check_open()
        limit = check_limit(limit)
        cut = supersession.check_contradiction_threshold(
            self.config.contradiction_threshold if threshold is None else threshold
        )
        at = self._now(now)
        text, kind, tag_set, exclude = supersession.contradiction_subject(episode_or_text, event_type, tags)
        vectors = self._embed([text], "recall")
        if vectors is None:
            return []
        return supersession.contradictions(
            self.store,
            self._scope_filter(at),
            text,
            vectors[0],
            kind,
            tag_set,
            exclude=exclude,
            threshold=cut,
            limit=limit,
            at=at,
        )

    def history(self: MemoryCore, episode_id: str) -> list[Episode]:
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
        return supersession.history(self.store, episode_id, self.get_episode, self._visible)

    def prune(self: MemoryCore, now: datetime | None = None, *, dry_run: bool = False) -> int:
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
        at, dry_run = self._now(now), check_flag(dry_run, "dry_run")  # checked with or without retention
        if self.config.retention_days is None:
            return 0
        return retention.prune(
            self.store,
            retention_days=self.config.retention_days,
            never_forget_from=self.config.policy.never_forget_from,
            at=at,
            dry_run=dry_run,
        )

    def forget(
        self: MemoryCore,
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
        self._check_open()
        at = self._now(now)
        return forgetting.forget(
            self.store,
            self._scope_filter(None),
            self.config.policy,
            at=at,
            threshold=self.config.forget_threshold if threshold is None else threshold,
            action=self.config.forget_action,
            dry_run=check_flag(dry_run, "dry_run"),
        )

    def compact(
        self: MemoryCore,
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
        self._check_open()
        return compaction.compact(
            self.store,
            self._scope_filter(None),
            similarity=similarity,
            never_retrieved_older_than_days=never_retrieved_older_than_days,
            never_forget_from=self.config.policy.never_forget_from,
            at=self._now(now),
            dry_run=check_flag(dry_run, "dry_run"),
        )

    def end_session(self: MemoryCore) -> int:
        """End this memory's session: delete its ``session_scoped`` episodes.

        Other episodes of the session stay. Returns how many were deleted.

        Raises:
            StoreError: the store failed.
        """
        self._check_open()
        return self.store.delete_session_scoped(self.tenant_id, self.session_id)


def remember_superseding(
    memory: MemoryCore,
    item: EpisodeInput,
    old_ids: Sequence[str] | str,
    *,
    reason: str | None,
    auto: bool = False,
) -> Episode:
    """Store ``item``, retiring ``old_ids`` (or, with ``auto``, its contradictions) in the same transaction.

    The shared write path of :meth:`memlane.EpisodicMemory.remember_episode` (``supersedes=``
    or ``config.auto_supersede``) and :meth:`LifecycleMethods.supersede`.

    Raises:
        ValidationError, EpisodeNotFoundError, EmbeddingError, StoreError: as for
        :meth:`memlane.EpisodicMemory.remember_episode` (nothing is stored).
    """
    memory._check_open()
    if reason is not None:
        reason = check_text(reason, "reason")
    now = memory.clock.now()
    episode = memory._build_episode(item, now)
    olds = supersession.superseded_episodes(old_ids, memory.get_episode)
    supersessions = [supersession.supersession(old, episode, reason) for old in olds]
    vectors = memory._embed([episode.content], "remember")
    if vectors is None:
        episode = replace(episode, embedding_model=None)
    elif auto:
        found = supersession.contradictions(
            memory.store,
            memory._scope_filter(now),
            episode.content,
            vectors[0],
            episode.event_type,
            episode.tags,
            exclude=frozenset(),
            threshold=memory.config.contradiction_threshold,
            limit=100,
            at=now,
        )
        supersessions = supersession.auto_supersessions(found, episode)
        if supersessions:
            logger.info("auto-superseding %d episode(s) with %s", len(supersessions), episode.id)
    memory.store.insert([episode], vectors, supersessions)
    memory._maybe_prune()
    return episode
