"""The JSON schemas of the agent tools beyond remember/recall: sessions, context, superseding, history.

Each entry is ``(name, description, parameters)``; :mod:`memlane.tools` turns them into
:class:`memlane.tools.ToolDefinition` objects, which the MCP server publishes as they are.
The argument names are those of :mod:`memlane.operations.arguments` (the one policy that checks them;
tests/unit/test_tools.py pins that every schema property has a check and vice versa). The
descriptions are written for a model choosing between the tools.
"""

from __future__ import annotations

from typing import Any, Final

from memlane.recall.ranking import PRESETS

__all__ = [
    "CONTRADICTIONS",
    "DETAIL_SCHEMA",
    "EPISODE_HISTORY",
    "GET_CONTEXT",
    "SEARCH_SESSIONS",
    "SUPERSEDE_EPISODE",
    "extra_tool_specs",
]

SEARCH_SESSIONS: Final = "search_sessions"
GET_CONTEXT: Final = "get_context"
SUPERSEDE_EPISODE: Final = "supersede_episode"
EPISODE_HISTORY: Final = "episode_history"
CONTRADICTIONS: Final = "find_contradictions"

DETAIL_SCHEMA: Final[dict[str, Any]] = {
    "type": "string",
    "enum": ["compact", "full"],
    "description": (
        "'compact' (default): id, content, event_type, when, tags, importance, score and a one-line "
        "why per episode. 'full': every field (lifecycle times, retrieve counts, the score breakdown)."
    ),
}

_TIME = {"type": "string", "format": "date-time"}


def _preset() -> dict[str, Any]:
    return {
        "type": "string",
        "enum": list(PRESETS),
        "description": "Named ranking weights (default balanced).",
    }


def _tags(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string", "minLength": 1}, "description": description}


def _int(minimum: int, maximum: int, description: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": maximum, "description": description}


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def extra_tool_specs(max_limit: int) -> list[tuple[str, str, dict[str, Any]]]:
    """The tools after ``remember_episode``/``recall_episodes``, as ``(name, description, parameters)``.

    Args:
        max_limit: Largest count (``top_k``, ``session_top_k``, ``event_limit``) advertised.
    """
    return [
        (
            GET_CONTEXT,
            "Get the relevant past context for answering the user's latest message, as one ready-to-read "
            "block: the best-matching passages of earlier conversations with this user and the best "
            "matching remembered episodes, ranked and cut to a token budget. Call it first, before "
            "answering a message that may depend on earlier conversations; pass the user's message "
            "as query. An empty text means nothing relevant was found.",
            _object(
                {
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "description": "What the context is for: usually the user's latest message.",
                    },
                    "token_budget": _int(0, 1_000_000, "Most tokens the block may take (default 1000)."),
                    "include_events": {"type": "boolean", "description": "Include remembered episodes."},
                    "include_sessions": {"type": "boolean", "description": "Include past conversations."},
                    "session_top_k": _int(1, max_limit, "Conversation passages considered (default 5)."),
                    "event_limit": _int(1, max_limit, "Episodes considered (default 5)."),
                    "min_relevance": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": 1,
                        "description": "Leave out items matching the query less than this (0-1).",
                    },
                    "context_turns": _int(0, 100, "Turns shown around each matched turn (default 1)."),
                    "exclude_session_id": {
                        "type": "string",
                        "minLength": 1,
                        "description": "A conversation to leave out (e.g. the current one).",
                    },
                    "preset": _preset(),
                    "detail": DETAIL_SCHEMA,
                },
                ["query"],
            ),
        ),
        (
            SEARCH_SESSIONS,
            "Search earlier conversations with this user for passages about something ('what did we "
            "say about the hotel?'). Returns the best-matching turns with the turns around them, each "
            "with its date and score. Use recall_episodes for saved facts and preferences instead, "
            "and get_context when you just need background before answering.",
            _object(
                {
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "description": "What to look for, in natural language, e.g. 'the hotel in Lisbon'.",
                    },
                    "top_k": _int(1, max_limit, "Most passages to return (default 3)."),
                    "context_turns": _int(0, 100, "Turns shown around each matched turn (default 1)."),
                    "max_per_session": _int(1, 10_000, "Most passages from one conversation."),
                    "exclude_session_id": {
                        "type": "string",
                        "minLength": 1,
                        "description": "A conversation to leave out (e.g. the current one).",
                    },
                    "preset": _preset(),
                    "detail": DETAIL_SCHEMA,
                },
                ["query"],
            ),
        ),
        (
            SUPERSEDE_EPISODE,
            "Replace a remembered fact that is no longer true with its new version, e.g. the user moved "
            "from Berlin to Lisbon, or a decision was reversed. Give the id of the old episode (from "
            "recall_episodes) and the new content. The old one is kept as history (episode_history "
            "shows it; it no longer appears in normal recalls). Use remember_episode for new facts "
            "that replace nothing.",
            _object(
                {
                    "old_id": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Id of the outdated episode.",
                    },
                    "event_type": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 200,
                        "description": "Category label, usually the old episode's, e.g. 'preference'.",
                    },
                    "content": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The new fact, self-contained, e.g. 'The user lives in Lisbon now.'",
                    },
                    "tags": _tags("Optional keywords, as for remember_episode."),
                    "importance": {"type": "number", "description": "1-10, as for remember_episode."},
                    "valid_from": {
                        **_TIME,
                        "description": "When the new fact became true (ISO 8601 with timezone); default now.",
                    },
                    "reason": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Why the old fact was replaced.",
                    },
                    "detail": DETAIL_SCHEMA,
                },
                ["old_id", "event_type", "content"],
            ),
        ),
        (
            EPISODE_HISTORY,
            "Show how a remembered fact changed over time: every version of it, oldest first, with when "
            "each was true (valid_until) and what replaced it (superseded_by). Use it when asked what "
            "was true before, or why a fact changed.",
            _object(
                {
                    "episode_id": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Id of any version (from recall_episodes).",
                    },
                    "detail": DETAIL_SCHEMA,
                },
                ["episode_id"],
            ),
        ),
        (
            CONTRADICTIONS,
            "Before saving a fact, check whether it may contradict facts already remembered: returns "
            "current episodes that are very similar (same event_type or a shared tag), with a "
            "similarity score. Nothing is changed; if one is outdated, call supersede_episode.",
            _object(
                {
                    "text": {"type": "string", "minLength": 1, "description": "The new fact to check."},
                    "event_type": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Its event_type: candidates share it or a tag.",
                    },
                    "tags": _tags("Its tags: candidates share one of them or the event_type."),
                    "threshold": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": 1,
                        "description": "Similarity 0-1 a candidate needs (default 0.8).",
                    },
                    "limit": _int(1, max_limit, "Most candidates (default 5)."),
                    "now": {**_TIME, "description": "Reference time (ISO 8601 with timezone); default now."},
                    "detail": DETAIL_SCHEMA,
                },
                ["text"],
            ),
        ),
    ]
