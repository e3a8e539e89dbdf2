"""The one argument policy of every interface: Python, tool calls, HTTP and MCP.

Every argument a caller sends is checked by the same function whichever way it arrives,
so the same bad value gets the same :class:`~memlane.errors.ValidationError` (type and
message) from :class:`memlane.EpisodicMemory`, :meth:`memlane.tools.MemoryTools.handle_tool_call`,
the HTTP API (422) and the MCP server (a tool error):

* ``event_type``: :func:`~memlane.validation.check_identifier`; ``content`` and ``query``:
  :func:`~memlane.validation.check_text`; ``tags``: :func:`~memlane.validation.normalize_tags`;
  ``importance``: :func:`~memlane.validation.clamp_importance`; ``limit``:
  :func:`~memlane.validation.check_limit`; ``metadata``: :func:`~memlane.validation.normalize_metadata`
  (the functions the Python API itself calls).
* **Strict types**, no coercion: ``limit: "5"`` and ``limit: 5.0`` are refused (an integer is
  required), ``importance: "8"`` and ``importance: true`` are refused (a number is required),
  a blank ``query`` is refused (omit it to list the newest episodes).
* ``tags: "ops"`` (one string) is accepted everywhere as the single tag ``ops``.
* ``limit`` above the interface's maximum (``episodic_memory.max_limit``, default 50, for
  tools/HTTP/MCP; :data:`~memlane.validation.MAX_LIMIT` = 10,000 for Python) is refused, not
  reduced; ``importance`` outside 1-10 is clamped (finite numbers only).
* **Unknown arguments are refused** (the published schemas say ``additionalProperties:
  false``), and ``null`` counts as absent. Missing required arguments are refused.

:func:`check_arguments` applies an :class:`ArgumentSpec` to a caller's mapping;
:data:`REMEMBER_ARGUMENTS` and :func:`recall_arguments` are the tools' specs, which the HTTP
request models extend with their own fields (``session_id``, ``metadata``, ``created_at``, ...).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memlane.errors import ValidationError
from memlane.operations.wire import DETAILS
from memlane.recall.ranking import PRESETS, RETRIEVAL_MODES, RankingWeights, resolve_weights
from memlane.validation import (
    MAX_LIMIT,
    check_identifier,
    check_limit,
    check_text,
    clamp_importance,
    json_type_name,
    normalize_metadata,
    normalize_tags,
    safe_text,
)

__all__ = [
    "COMPACT_ARGUMENTS",
    "CONTRADICTIONS_ARGUMENTS",
    "FORGET_ARGUMENTS",
    "HISTORY_ARGUMENTS",
    "HTTP_REMEMBER_ARGUMENTS",
    "HTTP_SUPERSEDE_ARGUMENTS",
    "PRUNE_ARGUMENTS",
    "REMEMBER_ARGUMENTS",
    "STORE_SESSION_ARGUMENTS",
    "SUPERSEDE_ARGUMENTS",
    "ArgumentCheck",
    "ArgumentSpec",
    "check_arguments",
    "check_choice",
    "check_preset",
    "check_session_id",
    "check_timestamp",
    "check_weights",
    "context_arguments",
    "contradictions_arguments",
    "http_context_arguments",
    "http_recall_arguments",
    "http_session_search_arguments",
    "inject_context_arguments",
    "parse_arguments",
    "recall_arguments",
    "recent_sessions_arguments",
    "session_search_arguments",
]

ArgumentCheck = Callable[[Any], Any]
"""Checks one present (non-null) argument value: returns it normalised or raises ValidationError."""


@dataclass(frozen=True, slots=True)
class ArgumentSpec:
    """The arguments one operation takes.

    Attributes:
        operation: Its name in error messages (``remember_episode``).
        checks: Argument name -> check, in the order they are listed in messages.
        required: Names that must be present (and not null).
    """

    operation: str
    checks: Mapping[str, ArgumentCheck]
    required: tuple[str, ...] = field(default=())

    def extended(self, **checks: ArgumentCheck) -> ArgumentSpec:
        """This spec plus more arguments (an interface's own, e.g. HTTP's ``session_id``)."""
        return ArgumentSpec(self.operation, {**self.checks, **checks}, self.required)


def parse_arguments(arguments: str | bytes | Mapping[str, Any] | None) -> Mapping[str, Any]:
    """Turn a tool call's arguments into a mapping: JSON object text (OpenAI), a mapping, or nothing.

    ``None`` and blank text are ``{}``.

    Raises:
        ValidationError: not valid JSON, or not a JSON object.
    """
    if arguments is None:
        return {}
    raw: object = arguments
    if isinstance(arguments, bytes):
        raw = arguments.decode("utf-8", "replace")
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"arguments are not valid JSON: {exc.msg} at column {exc.colno}") from None
        except ValueError as exc:  # e.g. an integer of more than 4,300 digits
            raise ValidationError(f"arguments are not valid JSON: {safe_text(str(exc))[:200]}") from None
        except RecursionError:
            raise ValidationError("arguments are not valid JSON: nested too deeply") from None
    if not isinstance(raw, Mapping):
        raise ValidationError(f"arguments must be a JSON object, got {json_type_name(raw)}")
    return raw


def check_arguments(raw: object, spec: ArgumentSpec) -> dict[str, Any]:
    """Apply ``spec`` to a caller's arguments: refuse unknown and missing ones, check every value.

    Args:
        raw: The caller's arguments (a mapping; anything else is refused).
        spec: What the operation takes.

    Returns:
        The present arguments (``null`` values dropped), each normalised by its check, in
        the caller's order.

    Raises:
        ValidationError: not an object, an unknown or missing argument, or a bad value (the
            message is the value check's own, e.g. ``limit must be a positive integer, got string``).
    """
    if not isinstance(raw, Mapping):
        raise ValidationError(f"arguments must be a JSON object, got {json_type_name(raw)}")
    unknown = sorted(safe_text(str(key)) for key in raw if key not in spec.checks)
    if unknown:
        raise ValidationError(
            f"unknown argument(s) {', '.join(unknown)}; {spec.operation} takes {', '.join(spec.checks)}"
        )
    present = {str(key): value for key, value in raw.items() if value is not None}
    missing = [name for name in spec.required if name not in present]
    if missing:
        raise ValidationError(f"missing required argument(s): {', '.join(missing)}")
    return {name: spec.checks[name](value) for name, value in present.items()}


def check_preset(value: object) -> str:
    """A ranking preset name (:data:`memlane.recall.PRESETS`).

    Raises:
        ValidationError: not one of the preset names.
    """
    if not isinstance(value, str) or value not in PRESETS:
        shown = repr(safe_text(value)) if isinstance(value, str) else json_type_name(value)
        raise ValidationError(f"preset must be one of {', '.join(PRESETS)}, got {shown}")
    return value


def check_choice(name: str, choices: tuple[str, ...]) -> ArgumentCheck:
    """A check that accepts exactly one of ``choices`` (strings)."""

    def check(value: object) -> str:
        if not isinstance(value, str) or value not in choices:
            shown = repr(safe_text(value)) if isinstance(value, str) else json_type_name(value)
            raise ValidationError(f"{name} must be one of {', '.join(choices)}, got {shown}")
        return value

    return check


def check_timestamp(name: str) -> ArgumentCheck:
    """A check for a timezone-aware instant: a ``datetime`` or ISO 8601 text (``2025-01-09T12:00:00-08:00``).

    The zone is kept (relative time expressions are resolved in the zone of ``now``).
    """

    def check(value: object) -> datetime:
        parsed = value
        if isinstance(value, str):
            text = value.strip()
            try:
                parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "zZ" and text else text)
            except ValueError:
                raise ValidationError(
                    f"{name} must be an ISO 8601 date-time with a timezone, got {safe_text(value[:40])!r}"
                ) from None
        if not isinstance(parsed, datetime):
            raise ValidationError(
                f"{name} must be an ISO 8601 date-time with a timezone, got {json_type_name(value)}"
            )
        if parsed.tzinfo is None or parsed.utcoffset() is None:
            raise ValidationError(f"{name} must have a timezone (e.g. 2025-01-09T12:00:00Z), got none")
        return parsed

    return check


def check_weights(value: object) -> dict[str, float]:
    """Custom ranking weights: an object with any of ``relevance``, ``recency``, ``importance`` (>= 0).

    Raises:
        ValidationError: not an object, unknown keys, or invalid values.
    """
    if not isinstance(value, Mapping):
        raise ValidationError(f"weights must be an object, got {json_type_name(value)}")
    resolved = resolve_weights(value, RankingWeights())
    return {"relevance": resolved.relevance, "recency": resolved.recency, "importance": resolved.importance}


def _event_type(value: object) -> str:
    return check_identifier(value, "event_type")


def _content(value: object) -> str:
    return check_text(value, "content")


def _query(value: object) -> str:
    return check_text(value, "query")


def _tags(value: object) -> list[str]:
    return list(normalize_tags(value))  # type: ignore[arg-type]  # any value; refused unless a string or list


def _metadata(value: object) -> dict[str, Any]:
    return normalize_metadata(value)  # type: ignore[arg-type]  # any value; refused unless an object


def _detail(value: object) -> str:
    checked: str = check_detail(value)
    return checked


def check_session_id(value: object) -> str:
    """A session id (a label: 1-200 characters)."""
    return check_identifier(value, "session_id")


REMEMBER_ARGUMENTS = ArgumentSpec(
    "remember_episode",
    {
        "event_type": _event_type,
        "content": _content,
        "tags": _tags,
        "importance": clamp_importance,
        "detail": _detail,
    },
    required=("event_type", "content"),
)
"""The ``remember_episode`` tool's arguments."""

HTTP_REMEMBER_ARGUMENTS = REMEMBER_ARGUMENTS.extended(
    created_at=check_timestamp("created_at"), metadata=_metadata, session_id=check_session_id
)
"""``POST /v1/episodes``: the tool's arguments plus ``created_at``, ``metadata`` and ``session_id``."""


def recall_arguments(max_limit: int = MAX_LIMIT) -> ArgumentSpec:
    """The ``recall_episodes`` tool's arguments, with ``limit`` refused above ``max_limit``."""

    def limit(value: object) -> int:
        return check_limit(value, maximum=max_limit)

    return ArgumentSpec(
        "recall_episodes",
        {
            "query": _query,
            "event_type": _event_type,
            "tags": _tags,
            "limit": limit,
            "preset": check_preset,
            "retrieval": check_choice("retrieval", RETRIEVAL_MODES),
            "min_relevance": check_fraction("min_relevance"),
            "as_of": check_timestamp("as_of"),
            "known_at": check_timestamp("known_at"),
            "include_archived": check_flag("include_archived"),
            "detail": check_detail,
        },
    )


def http_recall_arguments(max_limit: int) -> ArgumentSpec:
    """``POST /v1/recall``: the tool's arguments plus ``session_id``, ``scope``, ``weights`` and ``now``."""
    return recall_arguments(max_limit).extended(
        session_id=check_session_id,
        scope=check_choice("scope", ("session", "tenant")),
        weights=check_weights,
        now=check_timestamp("now"),
    )


# -- the operations beyond remember/recall (issue 14: every interface reaches all of memlane) --


def check_fraction(name: str) -> ArgumentCheck:
    """A check for a number in [0, 1] (booleans and text refused)."""

    def check(value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValidationError(f"{name} must be a number in [0, 1], got {json_type_name(value)}")
        if not 0.0 <= float(value) <= 1.0:
            raise ValidationError(f"{name} must be in [0, 1], got {value}")
        return float(value)

    return check


def check_positive(name: str) -> ArgumentCheck:
    """A check for a finite number > 0 (booleans and text refused)."""

    def check(value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValidationError(f"{name} must be a number > 0, got {json_type_name(value)}")
        if not 0.0 < float(value) < float("inf"):
            raise ValidationError(f"{name} must be a finite number > 0, got {value}")
        return float(value)

    return check


def check_count(name: str, minimum: int = 1, maximum: int = MAX_LIMIT) -> ArgumentCheck:
    """A check for an integer in ``minimum..maximum`` (``5.0`` and ``"5"`` refused)."""

    def check(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError(f"{name} must be an integer, got {json_type_name(value)}")
        if not minimum <= value <= maximum:
            raise ValidationError(f"{name} must be in {minimum}..{maximum}, got {value}")
        return value

    return check


def check_flag(name: str) -> ArgumentCheck:
    """A check for a JSON boolean."""

    def check(value: object) -> bool:
        if not isinstance(value, bool):
            raise ValidationError(f"{name} must be true or false, got {json_type_name(value)}")
        return value

    return check


def _check_list(name: str) -> ArgumentCheck:
    def check(value: object) -> list[Any]:
        if not isinstance(value, list):
            raise ValidationError(f"{name} must be a list, got {json_type_name(value)}")
        return value

    return check


check_detail: ArgumentCheck = check_choice("detail", DETAILS)
"""``detail``: ``"compact"`` (the tools' default) or ``"full"`` (every field)."""


def _identifier(name: str) -> ArgumentCheck:
    def check(value: object) -> str:
        return check_identifier(value, name)

    return check


def _text(name: str) -> ArgumentCheck:
    def check(value: object) -> str:
        return check_text(value, name)

    return check


SUPERSEDE_ARGUMENTS = ArgumentSpec(
    "supersede_episode",
    {
        "old_id": _identifier("old_id"),
        "event_type": _event_type,
        "content": _content,
        "tags": _tags,
        "importance": clamp_importance,
        "valid_from": check_timestamp("valid_from"),
        "reason": _text("reason"),
        "detail": check_detail,
    },
    required=("old_id", "event_type", "content"),
)
"""``supersede_episode``: replace a fact (``old_id``) with a new episode, keeping the old as history."""

HTTP_SUPERSEDE_ARGUMENTS = ArgumentSpec(
    "supersede_episode",
    {k: v for k, v in SUPERSEDE_ARGUMENTS.checks.items() if k != "old_id"} | {"metadata": _metadata},
    required=("event_type", "content"),
)
"""``POST /v1/episodes/{id}/supersede``: the tool's arguments (the id in the path) plus ``metadata``."""

HISTORY_ARGUMENTS = ArgumentSpec(
    "episode_history", {"episode_id": _identifier("episode_id"), "detail": check_detail}, ("episode_id",)
)
"""``episode_history``: the supersede chain through one episode."""


def contradictions_arguments(max_limit: int = MAX_LIMIT) -> ArgumentSpec:
    """``find_contradictions``: current episodes a new text may contradict (nothing is changed).

    ``limit`` is refused above ``max_limit`` (what the tool's schema advertises).
    """
    return ArgumentSpec(
        "find_contradictions",
        {
            "text": _text("text"),
            "event_type": _event_type,
            "tags": _tags,
            "threshold": check_fraction("threshold"),
            "limit": check_count("limit", 1, max_limit),
            "now": check_timestamp("now"),
            "detail": check_detail,
        },
        required=("text",),
    )


CONTRADICTIONS_ARGUMENTS = contradictions_arguments()
"""``find_contradictions`` with ``limit`` up to 10,000 (the HTTP body's base)."""


def _session_search_checks(max_limit: int) -> dict[str, ArgumentCheck]:
    return {
        "query": _query,
        "top_k": check_count("top_k", 1, max_limit),
        "context_turns": check_count("context_turns", 0, 100),
        "max_per_session": check_count("max_per_session"),
        "exclude_session_id": _identifier("exclude_session_id"),
        "preset": check_preset,
        "detail": check_detail,
    }


def session_search_arguments(max_limit: int = MAX_LIMIT) -> ArgumentSpec:
    """``search_sessions``: passages of past conversations (the agent and user are the server's)."""
    return ArgumentSpec("search_sessions", _session_search_checks(max_limit), ("query",))


_OWNER = {"agent_id": _identifier("agent_id"), "user_id": _identifier("user_id")}


def http_session_search_arguments(max_limit: int) -> ArgumentSpec:
    """``POST /v1/sessions/search``: the tool's arguments plus agent_id, user_id, now, weights."""
    return session_search_arguments(max_limit).extended(
        **_OWNER, now=check_timestamp("now"), weights=check_weights
    )


def recent_sessions_arguments(max_limit: int = MAX_LIMIT) -> ArgumentSpec:
    """``recent_sessions``: the newest conversations (``limit``)."""
    return ArgumentSpec("recent_sessions", {"limit": check_count("limit", 1, max_limit)})


def _context_checks(max_limit: int) -> dict[str, ArgumentCheck]:
    return {
        "query": _query,
        "token_budget": check_count("token_budget", 0, 1_000_000),
        "include_events": check_flag("include_events"),
        "include_sessions": check_flag("include_sessions"),
        "session_top_k": check_count("session_top_k", 1, max_limit),
        "event_limit": check_count("event_limit", 1, max_limit),
        "min_relevance": check_fraction("min_relevance"),
        "context_turns": check_count("context_turns", 0, 100),
        "exclude_session_id": _identifier("exclude_session_id"),
        "preset": check_preset,
        "detail": check_detail,
    }


def context_arguments(max_limit: int = MAX_LIMIT) -> ArgumentSpec:
    """``get_context``: the ``[Past Conversation Context]`` block for a query."""
    return ArgumentSpec("get_context", _context_checks(max_limit), ("query",))


def http_context_arguments(max_limit: int) -> ArgumentSpec:
    """``POST /v1/context``: the tool's arguments plus ``agent_id``, ``user_id``, ``now``, ``weights``."""
    return context_arguments(max_limit).extended(**_OWNER, now=check_timestamp("now"), weights=check_weights)


def inject_context_arguments(max_limit: int) -> ArgumentSpec:
    """``POST /v1/context/inject``: ``messages`` and ``placement`` plus the context block's arguments."""
    checks = {
        k: v for k, v in http_context_arguments(max_limit).checks.items() if k not in ("query", "detail")
    }
    return ArgumentSpec(
        "inject_context",
        {
            "messages": _check_list("messages"),
            "query": _query,
            "placement": check_choice("placement", ("system", "user")),
            **checks,
        },
        ("messages",),
    )


STORE_SESSION_ARGUMENTS = ArgumentSpec(
    "store_session",
    {
        "session_id": check_session_id,
        "messages": _check_list("messages"),
        **_OWNER,
        "started_at": check_timestamp("started_at"),
        "ended_at": check_timestamp("ended_at"),
        "metadata": _metadata,
        "append": check_flag("append"),
    },
    required=("session_id", "messages"),
)
"""``POST /v1/sessions``: store a conversation (or ``append`` turns to it)."""

FORGET_ARGUMENTS = ArgumentSpec(
    "forget",
    {
        "dry_run": check_flag("dry_run"),
        "threshold": check_fraction("threshold"),
        "now": check_timestamp("now"),
        "session_id": check_session_id,
        "scope": check_choice("scope", ("session", "tenant")),
    },
)
"""``POST /v1/admin/forget`` (admin keys only)."""

COMPACT_ARGUMENTS = ArgumentSpec(
    "compact",
    {
        "similarity": check_fraction("similarity"),
        "never_retrieved_older_than_days": check_positive("never_retrieved_older_than_days"),
        "dry_run": check_flag("dry_run"),
        "now": check_timestamp("now"),
        "session_id": check_session_id,
        "scope": check_choice("scope", ("session", "tenant")),
    },
)
"""``POST /v1/admin/compact`` (admin keys only)."""

PRUNE_ARGUMENTS = ArgumentSpec("prune", {"dry_run": check_flag("dry_run"), "now": check_timestamp("now")})
"""``POST /v1/admin/prune`` (admin keys only; retention is store-wide)."""
