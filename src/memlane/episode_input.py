"""One episode to remember (:class:`EpisodeInput`) and its validation into an ``Episode``.

The write half of the input policy: :class:`memlane.EpisodicMemory` builds every episode it
stores with :func:`build_episode`, so ``remember_episode``, ``remember_episodes``,
``supersede`` and imports validate alike.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memlane.clock import ensure_utc
from memlane.errors import ValidationError
from memlane.importance import AUTO_IMPORTANCE, estimate_importance
from memlane.models import Episode
from memlane.validation import (
    check_identifier,
    check_text,
    clamp_importance,
    normalize_metadata,
    normalize_tags,
)

__all__ = [
    "EpisodeInput",
    "build_episode",
    "build_episodes",
    "new_episode_id",
    "new_episode_ids",
    "resolve_importance",
]


def new_episode_id() -> str:
    """A new episode id: 32 lowercase hex characters laid out as a UUIDv7 (RFC 9562, section 5.7).

    48 bits of Unix milliseconds (wall clock, not the memory's clock), the version ``7``, the
    variant bits and 74 random bits (``os.urandom``). Ids made later sort later (to the
    millisecond), so the unique index on ``id`` grows at its end instead of splitting pages all
    over the B-tree as random (v4) ids do; that roughly halves index maintenance at bulk ingest.
    Collisions need two ids in the same millisecond with the same 74 random bits.
    """
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    value = (value & ~(0xF << 76)) | (0x7 << 76)  # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # RFC 9562 variant
    return f"{value:032x}"


def new_episode_ids(n: int) -> list[str]:
    """``n`` new episode ids laid out as :func:`new_episode_id`'s, made at once and in ascending order.

    One clock read and one ``os.urandom`` call for the batch: every id has the same 48-bit
    millisecond prefix and its own 74 random bits, and the list is sorted, so a batch's ids
    also grow at the end of the unique index in insertion order.
    """
    if n <= 0:
        return []
    import numpy as np  # lazily: parsing episode inputs (``memlane ingest``'s lines) needs none

    ms = (time.time_ns() // 1_000_000) & (2**48 - 1)
    raw = np.empty((n, 16), dtype=np.uint8)
    raw[:, :6] = np.frombuffer(ms.to_bytes(6, "big"), dtype=np.uint8)
    raw[:, 6:] = np.frombuffer(os.urandom(10 * n), dtype=np.uint8).reshape(n, 10)
    raw[:, 6] = (raw[:, 6] & 0x0F) | 0x70  # version 7
    raw[:, 8] = (raw[:, 8] & 0x3F) | 0x80  # RFC 9562 variant
    text = raw.tobytes().hex()
    return sorted(text[i : i + 32] for i in range(0, 32 * n, 32))


@dataclass(frozen=True, slots=True)
class EpisodeInput:
    """One episode to remember in a batch (:meth:`memlane.EpisodicMemory.remember_episodes`).

    Fields mean the same as :meth:`memlane.EpisodicMemory.remember_episode`'s arguments. The
    import-only fields ``id``, ``tenant_id``, ``session_id``, ``recorded_at``,
    ``invalidated_at``, ``superseded_by``, ``supersede_reason``, ``retrieve_count`` (>= 0)
    and ``last_retrieved_at`` keep an exported episode's identity and history when it is
    re-imported; left ``None`` they come from the memory (``recorded_at``: the clock's now)
    or stay empty. ``importance="auto"`` stores the content's estimate
    (:func:`memlane.importance.estimate_importance`); ``None`` takes the memory's
    ``config.importance`` (unrated unless that is ``"auto"``).
    """

    event_type: str
    content: str
    tags: Sequence[str] | str | None = None
    importance: float | str | None = None
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


class _Shared:
    """What one batch validates once: each distinct event type and tag list, and its new ids."""

    __slots__ = ("_ids", "_labels", "_tags")

    def __init__(self, new_ids: int) -> None:
        self._labels: dict[str, str] = {}
        self._tags: dict[tuple[Any, ...], tuple[str, ...]] = {}
        self._ids: Iterator[str] = iter(new_episode_ids(new_ids))

    def new_id(self) -> str:
        return next(self._ids)

    def event_type(self, value: object) -> str:
        if type(value) is not str:
            return check_identifier(value, "event_type")
        hit = self._labels.get(value)
        if hit is None:
            hit = self._labels[value] = check_identifier(value, "event_type")
        return hit

    def tags(self, value: Sequence[str] | str | None) -> tuple[str, ...]:
        kind = type(value)
        if kind is not tuple and kind is not list:
            return normalize_tags(value)
        key = tuple(value)  # type: ignore[arg-type]  # a list or tuple here
        try:
            hit = self._tags.get(key)
        except TypeError:  # an unhashable element: not a tag list, refused below
            return normalize_tags(value)
        if hit is None:
            hit = normalize_tags(value)
            if all(type(tag) is str for tag in key):
                self._tags[key] = hit
        return hit


def build_episodes(
    items: Sequence[EpisodeInput],
    now: datetime,
    *,
    tenant_id: str,
    session_id: str,
    embedding_model: str,
    default_importance: str | None = None,
) -> list[Episode]:
    """Validate a batch: :func:`build_episode` of each item, with the per-batch work shared.

    Each distinct event type and tag list is validated once; new ids come from
    :func:`new_episode_ids`. The episodes and errors are those of :func:`build_episode`.

    Args:
        items: The caller's episodes.
        now: See :func:`build_episode`.
        tenant_id: See :func:`build_episode`.
        session_id: See :func:`build_episode`.
        embedding_model: See :func:`build_episode`.
        default_importance: See :func:`build_episode`.

    Returns:
        The episodes, in input order.

    Raises:
        ValidationError: an invalid item; with more than one item the message starts with its
            position (``episode #3: ...``).
    """
    shared = _Shared(sum(1 for item in items if item.id is None))
    episodes = []
    for position, item in enumerate(items):
        try:
            episodes.append(
                _build(
                    item,
                    now,
                    tenant_id=tenant_id,
                    session_id=session_id,
                    model=embedding_model,
                    shared=shared,
                    default_importance=default_importance,
                )
            )
        except ValidationError as exc:
            if len(items) == 1:
                raise
            raise ValidationError(f"episode #{position}: {exc}") from None
    return episodes


def build_episode(
    item: EpisodeInput,
    now: datetime,
    *,
    tenant_id: str,
    session_id: str,
    embedding_model: str,
    default_importance: str | None = None,
) -> Episode:
    """Validate ``item`` into the :class:`~memlane.models.Episode` to store.

    Args:
        item: The caller's episode.
        now: The memory clock's now (UTC): the default ``created_at`` and ``recorded_at``.
        tenant_id: The memory's tenant, used unless ``item.tenant_id`` is given.
        session_id: The memory's session, used unless ``item.session_id`` is given.
        embedding_model: The embedder's ``model_id`` recorded on the episode.
        default_importance: The importance of an item without one: ``None`` (unrated) or
            ``"auto"`` (estimated from the content); the memory's ``config.importance``.

    Returns:
        The episode with a new ``id`` (unless ``item.id`` is given), every field normalised
        (:mod:`memlane.validation`) and every time timezone-aware UTC. Its importance is the
        item's number clamped to 1-10 (:func:`memlane.validation.clamp_importance`), the
        content's estimate (:func:`memlane.importance.estimate_importance`) for
        ``"auto"``, or ``None``.

    Raises:
        ValidationError: any invalid field; the message names it.
    """
    return _build(
        item,
        now,
        tenant_id=tenant_id,
        session_id=session_id,
        model=embedding_model,
        shared=None,
        default_importance=default_importance,
    )


def resolve_importance(value: object, content: str, default: str | None = None) -> float | None:
    """The importance to store: ``value`` clamped, estimated from ``content``, or ``None``.

    The one place where ``importance="auto"`` is resolved, for every way in (Python, async,
    tools, HTTP, MCP, CLI, imports): they all build episodes with :func:`build_episode`.

    Args:
        value: The caller's rating: a number (clamped to [1, 10]), ``"auto"`` or ``None``.
        content: The validated content, estimated when the rating is ``"auto"``.
        default: Used when ``value`` is ``None``: ``None`` (unrated) or ``"auto"``.

    Returns:
        The rating in [1.0, 10.0], or ``None`` (unrated).

    Raises:
        ValidationError: ``value`` is not a rating (see
            :func:`memlane.validation.clamp_importance`); another string than ``"auto"`` gets
            the same message as on every interface (``... or null, got string``).
    """
    if value is None:
        value = default
    if isinstance(value, str) and value == AUTO_IMPORTANCE:
        return estimate_importance(content)
    return clamp_importance(value)


def _build(
    item: EpisodeInput,
    now: datetime,
    *,
    tenant_id: str,
    session_id: str,
    model: str,
    shared: _Shared | None,
    default_importance: str | None,
) -> Episode:
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
    content = check_text(item.content, "content")
    return Episode(
        id=(new_episode_id() if shared is None else shared.new_id())
        if item.id is None
        else check_identifier(item.id, "id"),
        tenant_id=tenant_id if item.tenant_id is None else check_identifier(item.tenant_id, "tenant_id"),
        session_id=session_id if item.session_id is None else check_identifier(item.session_id, "session_id"),
        event_type=check_identifier(item.event_type, "event_type")
        if shared is None
        else shared.event_type(item.event_type),
        content=content,
        tags=normalize_tags(item.tags) if shared is None else shared.tags(item.tags),
        importance=resolve_importance(item.importance, content, default_importance),
        created_at=created_at,
        metadata=normalize_metadata(item.metadata),
        embedding_model=model,
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
