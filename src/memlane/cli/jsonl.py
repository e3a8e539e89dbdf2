"""The JSONL episode format shared by ``export``, ``ingest`` and the demo data.

One JSON object per line, exactly :meth:`memlane.models.Episode.to_dict`::

    {"id": "...", "tenant_id": "...", "session_id": "...", "event_type": "preference",
     "content": "...", "tags": ["travel"], "importance": 7.0,
     "created_at": "2025-03-01T09:12:00+00:00", "metadata": {},
     "valid_from": "2025-03-01T09:12:00+00:00", "valid_until": null,
     "recorded_at": "2025-03-01T09:12:05+00:00", "invalidated_at": null,
     "superseded_by": null, "supersede_reason": null, "archived_at": null,
     "session_scoped": false, "retrieve_count": 0, "last_retrieved_at": null}

For ingest only ``event_type`` and ``content`` are required; ``tags`` (list or one
string), ``importance`` (1-10 or null), ``created_at`` (ISO 8601 with timezone; default
now), ``metadata`` (object), ``id``, ``tenant_id`` and ``session_id`` are optional, and so
are the bi-temporal fields (``valid_from`` default ``created_at``, ``recorded_at`` default
now, the others default null), ``archived_at`` and ``session_scoped`` (default false), and the
retrieval bookkeeping (``retrieve_count`` default 0, ``last_retrieved_at`` default null), which an
export carries so a re-import keeps the history.
Unknown fields are refused, so a misspelt field is an error rather than silently dropped.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from memlane.cli.params import parse_iso_datetime
from memlane.models import Episode

if TYPE_CHECKING:  # imported where a line is parsed: --help needs no engine
    from memlane import EpisodeInput

__all__ = ["FIELDS", "REQUIRED_FIELDS", "LineError", "dump_episode", "parse_episode_line"]

REQUIRED_FIELDS = ("event_type", "content")
TIME_FIELDS = (
    "created_at",
    "valid_from",
    "valid_until",
    "recorded_at",
    "invalidated_at",
    "archived_at",
    "last_retrieved_at",
)
FIELDS = frozenset(
    {
        *REQUIRED_FIELDS,
        *TIME_FIELDS,
        "tags",
        "importance",
        "metadata",
        "id",
        "tenant_id",
        "session_id",
        "superseded_by",
        "supersede_reason",
        "session_scoped",
        "retrieve_count",
    }
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
    from memlane import EpisodeInput

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
    times: dict[str, Any] = {}
    for name in TIME_FIELDS:
        value = data.get(name)
        if value is not None:
            if not isinstance(value, str):
                raise LineError(f"{name} must be an ISO-8601 string, got {value!r}")
            try:
                value = parse_iso_datetime(value)
            except ValueError as exc:
                raise LineError(f"{name}: {exc}") from None
        times[name] = value
    return EpisodeInput(
        event_type=data["event_type"],
        content=data["content"],
        tags=data.get("tags"),
        importance=data.get("importance"),
        metadata=data.get("metadata"),
        id=data.get("id"),
        tenant_id=data.get("tenant_id"),
        session_id=data.get("session_id"),
        superseded_by=data.get("superseded_by"),
        supersede_reason=data.get("supersede_reason"),
        session_scoped=data.get("session_scoped", False),
        retrieve_count=data.get("retrieve_count", 0),
        **times,
    )
