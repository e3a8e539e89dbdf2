"""The one wire format: how episodes, hits, breakdowns and sessions look as JSON, everywhere.

Python's ``to_dict()`` methods, the agent tools' results (:mod:`memlane.tools`), the HTTP API
and the MCP server all encode through this module, so an episode, a recall hit with its score
breakdown and a session look the same whichever interface returned them.

* **Generic**: a dataclass is encoded field by field (:func:`dataclasses.fields`), so a field
  added to :class:`~memlane.models.ScoreBreakdown` or :class:`~memlane.models.Episode` appears
  on every interface without touching this module or the interfaces.
* **Timestamps**: one form, ISO 8601 in UTC with an explicit offset, as written by
  ``datetime.astimezone(UTC).isoformat()`` (``2025-01-09T12:00:00+00:00``, microseconds when
  non-zero). Tuples become lists, mappings plain dicts, enums their value.
* **Full form** (:func:`episode`, :func:`hit`): every field of the episode, lifecycle fields
  included (``valid_from``, ``valid_until``, ``recorded_at``, ``invalidated_at``,
  ``superseded_by``, ``supersede_reason``, ``archived_at``, ``session_scoped``,
  ``retrieve_count``, ``last_retrieved_at``), plus ``breakdown`` for a hit. Only
  ``embedding_model`` (a store detail) is left out. This is the export line format and
  what the HTTP API returns.
* **Compact form** (:func:`compact_hit`): what a model needs to read a hit — ``id``,
  ``content``, ``event_type``, ``when`` (``created_at``), ``tags``, ``importance``,
  ``score`` and a one-line ``why`` (the breakdown's signals, :func:`why`), plus
  ``superseded_by``/``valid_until`` when set. The default of tool and MCP results (about
  8 fields instead of ~30 per hit); ``detail: "full"`` asks for the full form.

The module imports nothing of memlane (the value types' ``to_dict()`` methods call it), so
its parameters are typed ``Any``: they take :class:`~memlane.models.Episode`,
:class:`~memlane.models.RecallHit` and :class:`~memlane.models.ScoreBreakdown` values.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, Literal

from memlane.validation import safe_text

__all__ = [
    "DETAILS",
    "Detail",
    "breakdown",
    "compact_episode",
    "compact_hit",
    "encode",
    "episode",
    "error_body",
    "hit",
    "hits",
    "timestamp",
    "why",
]

Detail = Literal["compact", "full"]
"""How much of an episode a result shows: ``"compact"`` (tools/MCP default) or ``"full"``."""
DETAILS: Final[tuple[Detail, ...]] = ("compact", "full")

_EPISODE_OMITTED: Final = frozenset({"embedding_model"})
"""Episode fields that are not part of the wire form (store details)."""


def timestamp(value: datetime) -> str:
    """The one timestamp form: ISO 8601 in UTC (``2025-01-09T12:00:00+00:00``).

    Args:
        value: A timezone-aware ``datetime`` (naive values are taken as UTC).
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat()


def encode(value: Any) -> Any:
    """Encode ``value`` as plain JSON data: dataclasses field by field, datetimes by :func:`timestamp`.

    Objects with a ``to_dict()`` method (other than dataclasses encoded generically) use it.
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime):
        return timestamp(value)
    if isinstance(value, enum.Enum):
        return encode(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        to_dict = getattr(value, "to_dict", None)
        if callable(to_dict):
            return to_dict()
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [encode(v) for v in value]
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    raise TypeError(f"cannot encode {type(value).__name__} for the wire")


def _fields(value: Any, omitted: frozenset[str] = frozenset()) -> dict[str, Any]:
    return {
        f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value) if f.name not in omitted
    }


def episode(value: Any) -> dict[str, Any]:
    """The full form of an episode: every field but ``embedding_model`` (the export line format)."""
    return _fields(value, _EPISODE_OMITTED)


def breakdown(value: Any) -> dict[str, Any] | None:
    """Every field of a score breakdown (``None`` stays ``None``)."""
    return None if value is None else _fields(value)


def hit(value: Any) -> dict[str, Any]:
    """The full form of a recall hit: :func:`episode` plus ``breakdown`` (``None`` without a query)."""
    out = episode(value.episode)
    out["breakdown"] = breakdown(value.breakdown)
    return out


def _number(value: float) -> str:
    return f"{value:.2f}"


def _why_relevance(value: Any) -> str:
    base = value.base_relevance if getattr(value, "base_relevance", None) is not None else value.relevance
    sources = [
        f"{name} {_number(getattr(value, name))}"
        for name in ("dense", "keyword")
        if getattr(value, name) is not None
    ]
    how = value.retrieval + (f" {value.fusion}" if getattr(value, "fusion", None) else "")
    text = f"relevance {_number(value.relevance)} (base {_number(base)}"
    text += f" from {', '.join(sources)}" if sources else ""
    text += f", {how}" + (", embedder fallback" if value.fallback else "") + ")"
    boosts = getattr(value, "boosts", ())
    if boosts:
        text += "; boosted by " + ", ".join(f"{b.name} {b.strength:g}" for b in boosts)
    discount = getattr(value, "agent_discount", None)
    if discount is not None:
        text += f"; the agent's own turn, discounted by {discount:g}"
    return text


def why(value: Any) -> str:
    """A one-line account of a breakdown for a model to read, rendered from the ranking's own terms.

    Example: ``"score 0.50 = relevance 0.52*0.91 + recency 0.90*0.03 + importance 0.70*0.03;
    decided by relevance (lead 0.041); relevance 0.52 (base 0.52 from dense 0.88, keyword 0.36,
    hybrid convex)"``: each contribution's value and weight (they add up to the score), the signal
    that put the hit above the next one, where relevance came from and its boosts.
    ``"newest first (no query)"`` for a listing without a breakdown.
    """
    if value is None:
        return "newest first (no query)"
    terms = " + ".join(f"{c.signal} {_number(c.value)}*{_number(c.weight)}" for c in value.contributions)
    line = f"score {_number(value.score)} = {terms}" if terms else f"score {_number(value.score)}"
    if value.decided_by is not None:
        lead = "" if value.lead is None else f" (lead {value.lead:.3f})"
        line += f"; decided by {value.decided_by}{lead}"
    return f"{line}; {_why_relevance(value)}"


def compact_episode(value: Any) -> dict[str, Any]:
    """The compact form of an episode (see the module docstring), without score and why."""
    out: dict[str, Any] = {
        "id": value.id,
        "content": value.content,
        "event_type": value.event_type,
        "when": timestamp(value.created_at),
        "tags": list(value.tags),
        "importance": value.importance,
    }
    if value.valid_until is not None:
        out["valid_until"] = timestamp(value.valid_until)
    if value.superseded_by is not None:
        out["superseded_by"] = value.superseded_by
    return out


def compact_hit(value: Any) -> dict[str, Any]:
    """The compact form of a hit: :func:`compact_episode` plus ``score`` and a one-line ``why``."""
    out = compact_episode(value.episode)
    out["score"] = value.score
    out["why"] = why(value.breakdown)
    return out


def hits(values: list[Any], detail: Detail = "full") -> list[dict[str, Any]]:
    """Encode recall hits in the requested form (:data:`DETAILS`)."""
    encoder = hit if detail == "full" else compact_hit
    return [encoder(v) for v in values]


def error_body(kind: str, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The JSON body of every error response: ``{"error": {"type", "message"[, "details"]}}``.

    ``message`` goes through :func:`memlane.validation.safe_text` (control and bidi characters
    shown visibly). Used by the HTTP app's handlers and the loading front (no FastAPI needed).
    """
    error: dict[str, Any] = {"type": kind, "message": safe_text(message)}
    if details is not None:
        error["details"] = details
    return {"error": error}
