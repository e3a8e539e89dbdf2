"""The JSONL episode format shared by ``export``, ``ingest`` and the demo data.

One JSON object per line, exactly :meth:`memlane.models.Episode.to_dict`::

    {"id": "...", "tenant_id": "...", "session_id": "...", "event_type": "preference",
     "content": "...", "tags": ["travel"], "importance": 7.0,
     "created_at": "2025-03-01T09:12:00+00:00", "metadata": {}}

For ingest only ``event_type`` and ``content`` are required; ``tags`` (list or one
string), ``importance`` (1-10 or null), ``created_at`` (ISO 8601 with timezone; default
now), ``metadata`` (object), ``id``, ``tenant_id`` and ``session_id`` are optional.
Unknown fields are refused, so a misspelt field is an error rather than silently dropped.
"""

from __future__ import annotations

import json
from typing import Any

from memlane.cli.params import parse_iso_datetime
from memlane.memory import EpisodeInput
from memlane.models import Episode

__all__ = ["FIELDS", "REQUIRED_FIELDS", "LineError", "dump_episode", "parse_episode_line"]

REQUIRED_FIELDS = ("event_type", "content")
FIELDS = frozenset(
    {*REQUIRED_FIELDS, "tags", "importance", "created_at", "metadata", "id", "tenant_id", "session_id"}
)


class LineError(ValueError):
    """A JSONL line that cannot become an :class:`EpisodeInput` (the message says why)."""


def dump_episode(episode: Episode) -> bytes:
    """Serialise one episode as a JSONL line (UTF-8, ``\\n``-terminated); deterministic."""
    return (json.dumps(episode.to_dict(), ensure_ascii=False) + "\n").encode("utf-8")


def parse_episode_line(raw: bytes | str) -> EpisodeInput:
    """Decode one JSONL line into an :class:`EpisodeInput`.

    Structural problems are caught here; value checks (blank content, importance out of
    type, tag types, metadata serialisability) are left to
    :meth:`memlane.EpisodicMemory.remember_episodes`, the single place that validates.

    Args:
        raw: The line (bytes are decoded as UTF-8).

    Raises:
        LineError: invalid UTF-8 or JSON, not an object, missing or unknown fields,
            or an unparseable ``created_at``.
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise LineError(f"invalid UTF-8 at byte {exc.start}") from None
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LineError(f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(data, dict):
        raise LineError(f"expected a JSON object, got {type(data).__name__}")
    missing = [name for name in REQUIRED_FIELDS if data.get(name) is None]
    if missing:
        raise LineError(f"missing field(s): {', '.join(missing)}")
    unknown = sorted(set(data) - FIELDS)
    if unknown:
        raise LineError(f"unknown field(s): {', '.join(unknown)} (known: {', '.join(sorted(FIELDS))})")
    created_at = data.get("created_at")
    if created_at is not None:
        if not isinstance(created_at, str):
            raise LineError(f"created_at must be an ISO-8601 string, got {created_at!r}")
        try:
            created_at = parse_iso_datetime(created_at)
        except ValueError as exc:
            raise LineError(f"created_at: {exc}") from None
    return EpisodeInput(
        event_type=data["event_type"],
        content=data["content"],
        tags=data.get("tags"),
        importance=data.get("importance"),
        created_at=created_at,
        metadata=data.get("metadata"),
        id=data.get("id"),
        tenant_id=data.get("tenant_id"),
        session_id=data.get("session_id"),
    )
