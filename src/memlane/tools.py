"""Agent tools: JSON schemas for ``remember_episode`` / ``recall_episodes`` and their dispatch.

The schemas are written for a model to read (what each argument means, how to rate
importance, that tags combine with AND) and come in the formats agent frameworks
register directly:

* ``"openai"`` — Chat Completions ``tools=[{"type": "function", "function": {...}}]``.
* ``"openai-responses"`` — Responses API ``tools=[{"type": "function", "name": ...}]``.
* ``"anthropic"`` — Messages API ``tools=[{"name", "description", "input_schema"}]``.
* ``"json-schema"`` — the neutral form ``{"name", "description", "parameters"}`` (what
  the MCP server publishes as ``inputSchema``).

Presence triggers registration: :func:`tools_for` returns the tools only when the
configuration has an ``episodic_memory:`` section, and an empty list otherwise. Then
:meth:`MemoryTools.handle_tool_call` runs a call the model made::

    memory = EpisodicMemory.from_config("agent.yaml", tenant_id=user_id, session_id=chat_id)
    tools = MemoryTools(memory, max_limit=50)
    response = client.chat.completions.create(model=..., messages=..., tools=tools.schemas("openai"))
    for call in response.choices[0].message.tool_calls or []:
        result = tools.handle_tool_call(call.function.name, call.function.arguments)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})

Results are JSON-serialisable dicts. Success: ``{"ok": true, ...}``; failure: ``{"ok": false,
"error": {"type": ..., "message": ...}}`` — :meth:`MemoryTools.handle_tool_call` never
raises for a bad call or a failing store, so one bad tool call cannot kill the agent loop.
Error ``type`` is ``UnknownTool``, the memlane error class name (``ValidationError`` for
every bad argument: malformed JSON, wrong types, missing or unknown arguments, bad values —
checked by :mod:`memlane.arguments`, the policy shared with Python, HTTP and MCP;
``EmbeddingError``, ``StoreError``, ...) or ``InternalError`` (a bug: logged with its
traceback, no details returned).

Tenant and session never come from the model: they are fixed by the :class:`EpisodicMemory`
the tools are bound to.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from memlane.arguments import REMEMBER_ARGUMENTS, check_arguments, parse_arguments, recall_arguments
from memlane.errors import MemlaneError
from memlane.recall import PRESETS
from memlane.validation import MAX_LIMIT, safe_text

if TYPE_CHECKING:
    from memlane import EpisodicMemory
    from memlane.config.file import MemlaneConfig

__all__ = [
    "RECALL_EPISODES",
    "REMEMBER_EPISODE",
    "TOOL_FORMATS",
    "MemoryTools",
    "ToolDefinition",
    "ToolFormat",
    "handle_tool_call",
    "tool_definitions",
    "tool_error",
    "tool_schemas",
    "tools_for",
]

logger = logging.getLogger(__name__)

REMEMBER_EPISODE = "remember_episode"
RECALL_EPISODES = "recall_episodes"

ToolFormat = Literal["openai", "openai-responses", "anthropic", "json-schema"]
TOOL_FORMATS: tuple[ToolFormat, ...] = ("openai", "openai-responses", "anthropic", "json-schema")

_DEFAULT_LIMIT = 5
_DEFAULT_MAX_LIMIT = 50

_PRESET_HELP = {
    "balanced": "equal weight to relevance, recency and importance (default)",
    "specific_question": "favours relevance: answering a precise question",
    "agent_context": "favours importance: loading key facts before a task",
    "conversation": "favours recency: continuing a recent conversation",
    "cold_start": "ignores recency: what matters most, however old",
    "relevance_only": "pure semantic similarity to the query",
}

_REMEMBER_DESCRIPTION = (
    "Save an episode to long-term memory: something worth knowing in a later turn or a future "
    "session, such as a user preference, a decision, a fact learned, the outcome of a task or a "
    "failure to avoid repeating. Write the content so it makes sense on its own later, without "
    "the current conversation (who, what, and why). Do not save secrets (passwords, keys) or "
    "trivial chit-chat. Saved episodes are found again with recall_episodes."
)

_RECALL_DESCRIPTION = (
    "Search long-term memory for past episodes. With a query, episodes are ranked by a score in "
    "[0, 1] that combines relevance to the query, recency and importance; each result shows "
    "that breakdown. Without a query, the newest episodes matching the filters are returned. "
    "Use it before answering or acting when past preferences, decisions or outcomes may matter. "
    "Filters narrow the search; they never widen it."
)


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """One tool in neutral form.

    Attributes:
        name: Tool name (``remember_episode`` or ``recall_episodes``).
        description: What the tool does, written for a model.
        parameters: JSON Schema (draft 2020-12 subset) of the arguments object.
    """

    name: str
    description: str
    parameters: dict[str, Any]

    def to_format(self, fmt: ToolFormat) -> dict[str, Any]:
        """Return this tool in one of :data:`TOOL_FORMATS`.

        Raises:
            ValueError: unknown format.
        """
        if fmt == "openai":
            return {
                "type": "function",
                "function": {
                    "name": self.name,
                    "description": self.description,
                    "parameters": self.parameters,
                },
            }
        if fmt == "openai-responses":
            return {
                "type": "function",
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        if fmt == "anthropic":
            return {"name": self.name, "description": self.description, "input_schema": self.parameters}
        if fmt == "json-schema":
            return {"name": self.name, "description": self.description, "parameters": self.parameters}
        raise ValueError(f"unknown tool format {fmt!r}; known: {', '.join(TOOL_FORMATS)}")


def _tags_schema(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string", "minLength": 1}, "description": description}


def tool_definitions(
    *, default_limit: int = _DEFAULT_LIMIT, max_limit: int = _DEFAULT_MAX_LIMIT
) -> list[ToolDefinition]:
    """Return the tool definitions (``remember_episode``, ``recall_episodes``) in neutral form.

    Args:
        default_limit: Results a recall returns when the model gives no ``limit``, >= 1.
        max_limit: Largest ``limit`` advertised (and accepted), ``default_limit``..10,000.

    Raises:
        ValueError: limits out of range.
    """
    if default_limit < 1 or max_limit < default_limit or max_limit > MAX_LIMIT:
        raise ValueError(
            f"need 1 <= default_limit <= max_limit <= {MAX_LIMIT}, got {default_limit} and {max_limit}"
        )
    presets = "; ".join(f"'{name}': {_PRESET_HELP.get(name, 'named weights')}" for name in PRESETS)
    remember = ToolDefinition(
        name=REMEMBER_EPISODE,
        description=_REMEMBER_DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {
                "event_type": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 200,
                    "description": (
                        "Short category label, e.g. 'preference', 'decision', 'fact', 'task_outcome', "
                        "'error'. Reuse the same labels consistently: recall can filter on the exact "
                        "label (case-sensitive)."
                    ),
                },
                "content": {
                    "type": "string",
                    "minLength": 1,
                    "description": (
                        "The episode in one to three self-contained sentences, e.g. 'The user prefers "
                        "aisle seats on flights longer than 3 hours.' It is searched by meaning."
                    ),
                },
                "tags": _tags_schema(
                    "Optional keywords to filter on later, e.g. ['travel', 'flights']. Case-insensitive "
                    "(stored lower-case). A recall with several tags only returns episodes having ALL "
                    "of them."
                ),
                "importance": {
                    "type": "number",
                    "description": (
                        "How much this matters for future work, 1-10: 1-3 passing detail; 4-6 useful "
                        "context; 7-8 a clear preference, decision or lesson; 9-10 critical (hard "
                        "constraints, safety, must never be forgotten). Values outside 1-10 are "
                        "clamped. Omit if unsure (scored as neutral)."
                    ),
                },
            },
            "required": ["event_type", "content"],
            "additionalProperties": False,
        },
    )
    recall = ToolDefinition(
        name=RECALL_EPISODES,
        description=_RECALL_DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "description": (
                        "What to remember, in natural language, e.g. 'seat preference on flights'. "
                        "Omit to list the newest episodes that match the filters."
                    ),
                },
                "event_type": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Only episodes with exactly this event_type (case-sensitive).",
                },
                "tags": _tags_schema(
                    "Only episodes that have ALL of these tags (AND). Give fewer tags for a broader search."
                ),
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": max_limit,
                    "description": (
                        f"Maximum number of episodes to return, an integer 1-{max_limit} "
                        f"(default {default_limit}); larger values are refused."
                    ),
                },
                "preset": {
                    "type": "string",
                    "enum": list(PRESETS),
                    "description": f"How to weigh the signals when a query is given: {presets}.",
                },
            },
            "required": [],
            "additionalProperties": False,
        },
    )
    return [remember, recall]


def tool_schemas(
    fmt: ToolFormat = "openai", *, default_limit: int = _DEFAULT_LIMIT, max_limit: int = _DEFAULT_MAX_LIMIT
) -> list[dict[str, Any]]:
    """Return both tools in format ``fmt`` (see :data:`TOOL_FORMATS`), ready to register.

    Raises:
        ValueError: unknown format or limits out of range.
    """
    return [d.to_format(fmt) for d in tool_definitions(default_limit=default_limit, max_limit=max_limit)]


def tools_for(
    config: str | os.PathLike[str] | Mapping[str, Any] | MemlaneConfig, fmt: ToolFormat = "openai"
) -> list[dict[str, Any]]:
    """Return the tools an agent with this configuration gets: both, or none.

    Presence triggers registration: with an ``episodic_memory:`` section (even an empty
    one) the two tools are returned, with the section's ``default_limit``/``max_limit``;
    without it, an empty list.

    Args:
        config: A YAML file path, a mapping of the same shape, or a loaded config.
        fmt: One of :data:`TOOL_FORMATS`.

    Raises:
        ConfigError: the configuration is invalid. ValueError: unknown format.
    """
    from memlane.config.file import load_config

    loaded = load_config(config)
    if loaded.episodic is None:
        return []
    return tool_schemas(
        fmt, default_limit=loaded.episodic.memory.default_limit, max_limit=loaded.episodic.max_limit
    )


# -- dispatch ---------------------------------------------------------------------------


def tool_error(exc: BaseException, *, tool: str | None = None) -> dict[str, Any]:
    """Map an exception to the structured tool-call error result (the one place that does it).

    * :class:`memlane.errors.MemlaneError` -> its class name and message (e.g.
      ``ValidationError: content must be a non-empty string``), so the model can correct itself.
      Bad arguments of every kind are ``ValidationError``. The message is made safe to
      encode (a lone surrogate is written as a ``\\udc00`` escape).
    * Anything else is a bug: ``InternalError`` with no details (they are logged).

    Returns:
        ``{"ok": False, "error": {"type": str, "message": str}}`` (plus ``"tool"`` when given).
    """
    if isinstance(exc, MemlaneError):
        kind, message = type(exc).__name__, safe_text(str(exc))
    else:
        kind, message = "InternalError", "the memory tool failed unexpectedly; the error was logged"
    error: dict[str, Any] = {"type": kind, "message": message}
    if tool is not None:
        error["tool"] = tool
    return {"ok": False, "error": error}


class MemoryTools:
    """The two memory tools bound to one :class:`memlane.EpisodicMemory` (its tenant, session, scope).

    Args:
        memory: Where episodes are remembered and recalled.
        max_limit: Largest ``limit`` a recall may ask for, >= the memory's ``default_limit``
            and <= 10,000; larger requests are refused (default 50).

    Raises:
        ValueError: ``max_limit`` out of that range.
    """

    def __init__(self, memory: EpisodicMemory, *, max_limit: int = _DEFAULT_MAX_LIMIT) -> None:
        self.memory = memory
        self.max_limit = max_limit
        self.definitions = tool_definitions(default_limit=memory.config.default_limit, max_limit=max_limit)
        self._specs = {d.name: d for d in self.definitions}
        self._arguments = {REMEMBER_EPISODE: REMEMBER_ARGUMENTS, RECALL_EPISODES: recall_arguments(max_limit)}

    @property
    def names(self) -> list[str]:
        """The tool names, in registration order."""
        return [d.name for d in self.definitions]

    def schemas(self, fmt: ToolFormat = "openai") -> list[dict[str, Any]]:
        """Return the tools in format ``fmt`` (see :data:`TOOL_FORMATS`).

        Raises:
            ValueError: unknown format.
        """
        return [d.to_format(fmt) for d in self.definitions]

    def handle_tool_call(self, name: str, arguments: str | Mapping[str, Any] | None) -> dict[str, Any]:
        """Run one tool call and return its JSON-serialisable result; never raises for a bad call.

        Args:
            name: The tool the model called.
            arguments: The model's arguments: a JSON object as a string (OpenAI) or a mapping
                (Anthropic, MCP). ``null`` values count as absent; an empty string as ``{}``.
                Checked by :mod:`memlane.arguments` (strict types, unknown arguments refused).

        Returns:
            ``remember_episode``: ``{"ok": true, "episode": {...}}`` (the stored episode with its id).
            ``recall_episodes``: ``{"ok": true, "count": n, "ranked": bool, "episodes": [...]}``,
            each episode with ``breakdown`` (relevance, recency, importance, score: floats in
            [0, 1]; dense, keyword: their parts or ``null``; retrieval, fallback, in_window; see
            :class:`memlane.ScoreBreakdown`) when a query was given, else ``null``.
            On failure: ``{"ok": false, "error": {"type", "message", "tool"}}`` (see :func:`tool_error`).
        """
        try:
            spec = self._specs.get(name) if isinstance(name, str) else None
            if spec is None:
                return {
                    "ok": False,
                    "error": {
                        "type": "UnknownTool",
                        "message": f"unknown tool {name!r}; available: {', '.join(self.names)}",
                        "tool": safe_text(name) if isinstance(name, str) else None,
                    },
                }
            args = check_arguments(parse_arguments(arguments), self._arguments[spec.name])
            if name == REMEMBER_EPISODE:
                return self._remember(args)
            return self._recall(args)
        except Exception as exc:
            if not isinstance(exc, MemlaneError):
                logger.exception("tool %r failed unexpectedly", name)
            return tool_error(exc, tool=name if isinstance(name, str) else None)

    def _remember(self, args: Mapping[str, Any]) -> dict[str, Any]:
        episode = self.memory.remember_episode(
            args["event_type"], args["content"], args.get("tags"), args.get("importance")
        )
        return {"ok": True, "episode": episode.to_dict()}

    def _recall(self, args: Mapping[str, Any]) -> dict[str, Any]:
        query = args.get("query")
        hits = self.memory.recall_episodes(
            query, args.get("event_type"), args.get("tags"), args.get("limit"), weights=args.get("preset")
        )
        return {
            "ok": True,
            "count": len(hits),
            "ranked": query is not None,
            "episodes": [hit.to_dict() for hit in hits],
        }


def handle_tool_call(
    memory: EpisodicMemory,
    name: str,
    arguments: str | Mapping[str, Any] | None,
    *,
    max_limit: int = _DEFAULT_MAX_LIMIT,
) -> dict[str, Any]:
    """Run one tool call against ``memory``: ``MemoryTools(memory, max_limit=...).handle_tool_call(...)``.

    See :meth:`MemoryTools.handle_tool_call` for the arguments and results; never raises
    for a bad call.
    """
    return MemoryTools(memory, max_limit=max_limit).handle_tool_call(name, arguments)
