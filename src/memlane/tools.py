"""Agent tools: JSON schemas for ``remember_episode`` / ``recall_episodes`` (and the session,
context and lifecycle tools of :mod:`memlane.operations.tool_specs`) and their dispatch.

Tools: ``remember_episode``, ``recall_episodes``, ``get_context`` (the block to read before
answering), ``search_sessions``, ``supersede_episode``, ``episode_history``,
``find_contradictions``, and the knowledge graph's ``remember_fact``, ``query_facts``,
``entity_timeline``, ``neighbours`` and ``find_paths``. Session tools read the conversations of
the ``agent_id``/``user_id`` the :class:`MemoryTools` are bound to (default ``"default"``), never
a model's choice.

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
checked by :mod:`memlane.operations.arguments`, the policy shared with Python, HTTP and MCP;
``EmbeddingError``, ``StoreError``, ...) or ``InternalError`` (a bug: logged with its
traceback, no details returned).

Tenant and session never come from the model: they are fixed by the :class:`EpisodicMemory`
the tools are bound to.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from memlane import wire
from memlane.errors import MemlaneError
from memlane.operations import handlers as operations
from memlane.operations.arguments import parse_arguments
from memlane.operations.fields import Request, bounded, check_request, tool_parameters
from memlane.operations.tool_specs import (
    CONTRADICTIONS,
    ENTITY_TIMELINE,
    EPISODE_HISTORY,
    FIND_PATHS,
    GET_CONTEXT,
    NEIGHBOURS,
    QUERY_FACTS,
    RECALL_EPISODES,
    REMEMBER_EPISODE,
    REMEMBER_FACT,
    SEARCH_SESSIONS,
    SUPERSEDE_EPISODE,
    TOOLS,
)
from memlane.validation import MAX_LIMIT, safe_text

if TYPE_CHECKING:
    from memlane import EpisodicMemory
    from memlane.config.file import MemlaneConfig

__all__ = [
    "CONTRADICTIONS",
    "EPISODE_HISTORY",
    "GET_CONTEXT",
    "RECALL_EPISODES",
    "REMEMBER_EPISODE",
    "SEARCH_SESSIONS",
    "SUPERSEDE_EPISODE",
    "TOOL_FORMATS",
    "MemoryTools",
    "ToolDefinition",
    "ToolFormat",
    "handle_tool_call",
    "tool_arguments",
    "tool_definitions",
    "tool_error",
    "tool_schemas",
    "tools_for",
]

logger = logging.getLogger(__name__)

ToolFormat = Literal["openai", "openai-responses", "anthropic", "json-schema"]
TOOL_FORMATS: tuple[ToolFormat, ...] = ("openai", "openai-responses", "anthropic", "json-schema")

_DEFAULT_LIMIT = 5
_DEFAULT_MAX_LIMIT = 50


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


def tool_definitions(
    *,
    default_limit: int = _DEFAULT_LIMIT,
    max_limit: int = _DEFAULT_MAX_LIMIT,
    only: Iterable[str] | None = None,
) -> list[ToolDefinition]:
    """Return the tool definitions in neutral form, generated from the tools' request types.

    ``remember_episode``, ``recall_episodes``, then ``get_context``, ``search_sessions``,
    ``supersede_episode``, ``episode_history`` and ``find_contradictions``
    (:data:`memlane.operations.tool_specs.TOOLS`; arguments: :mod:`memlane.operations.requests`).

    Args:
        default_limit: Results a recall returns when the model gives no ``limit``, >= 1.
        max_limit: Largest ``limit`` advertised (and accepted), ``default_limit``..10,000.
        only: Tool names to expose (e.g. ``["remember_episode", "recall_episodes"]``), kept in
            the registration order above; ``None`` (default) exposes every tool.

    Raises:
        ValueError: limits out of range, or ``only`` names an unknown tool or none at all.
    """
    if default_limit < 1 or max_limit < default_limit or max_limit > MAX_LIMIT:
        raise ValueError(
            f"need 1 <= default_limit <= max_limit <= {MAX_LIMIT}, got {default_limit} and {max_limit}"
        )
    definitions = [
        ToolDefinition(t.name, t.description, tool_parameters(t.request, max_limit)) for t in TOOLS
    ]
    return _select(definitions, only)


def _select(definitions: list[ToolDefinition], only: Iterable[str] | None) -> list[ToolDefinition]:
    if only is None:
        return definitions
    if isinstance(only, str):  # one name, not its characters
        only = [only]
    wanted = set(only)
    known = [d.name for d in definitions]
    unknown = sorted(wanted - set(known))
    if unknown:
        raise ValueError(f"unknown tool(s) {', '.join(map(repr, unknown))}; known: {', '.join(known)}")
    if not wanted:
        raise ValueError("only= selects no tool; give at least one name, or None for every tool")
    return [d for d in definitions if d.name in wanted]


def tool_arguments(max_limit: int = _DEFAULT_MAX_LIMIT) -> dict[str, type[Request]]:
    """The request type that declares and checks each tool's arguments, by tool name.

    The schemas of :func:`tool_definitions` are generated from the same types, so names,
    required arguments, types and bounds agree by construction.

    Args:
        max_limit: Largest ``limit``/``top_k`` accepted, as advertised by the schemas.
    """
    return {t.name: bounded(t.request, max_limit) for t in TOOLS}


def tool_schemas(
    fmt: ToolFormat = "openai",
    *,
    default_limit: int = _DEFAULT_LIMIT,
    max_limit: int = _DEFAULT_MAX_LIMIT,
    only: Iterable[str] | None = None,
) -> list[dict[str, Any]]:
    """Return the tools in format ``fmt`` (see :data:`TOOL_FORMATS`), ready to register.

    ``only`` selects tools by name (see :func:`tool_definitions`); default every tool.

    Raises:
        ValueError: unknown format, limits out of range, or an unknown name in ``only``.
    """
    definitions = tool_definitions(default_limit=default_limit, max_limit=max_limit, only=only)
    return [d.to_format(fmt) for d in definitions]


def tools_for(
    config: str | os.PathLike[str] | Mapping[str, Any] | MemlaneConfig,
    fmt: ToolFormat = "openai",
    *,
    only: Iterable[str] | None = None,
) -> list[dict[str, Any]]:
    """Return the tools an agent with this configuration gets: all of them (or ``only`` these), or none.

    Presence triggers registration: with an ``episodic_memory:`` section (even an empty
    one) the tools are returned, with the section's ``default_limit``/``max_limit``;
    without it, an empty list.

    Args:
        config: A YAML file path, a mapping of the same shape, or a loaded config.
        fmt: One of :data:`TOOL_FORMATS`.
        only: Tool names to expose, e.g. ``["remember_episode", "recall_episodes"]`` (kept in
            registration order); ``None`` (default) exposes every tool.

    Raises:
        ConfigError: the configuration is invalid. ValueError: unknown format or tool name.
    """
    from memlane.config.file import load_config

    loaded = load_config(config)
    if loaded.episodic is None:
        if only is not None:
            _select(tool_definitions(), only)  # an unknown name is an error with or without the section
        return []
    return tool_schemas(
        fmt,
        default_limit=loaded.episodic.memory.default_limit,
        max_limit=loaded.episodic.max_limit,
        only=only,
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
    """The memory tools bound to one :class:`memlane.EpisodicMemory` (its tenant, session, scope).

    Args:
        memory: Where episodes are remembered and recalled.
        max_limit: Largest ``limit`` a recall may ask for, >= the memory's ``default_limit``
            and <= 10,000; larger requests are refused (default 50).
        agent_id: Whose conversations the session tools read (default ``"default"``).
        user_id: With whom (default ``"default"``).
        only: Tool names to expose, e.g. ``["remember_episode", "recall_episodes"]`` (kept in
            registration order); ``None`` (default) exposes every tool. A call to a tool left
            out is answered like an unknown tool (``UnknownTool``).

    Raises:
        ValueError: ``max_limit`` out of that range, or an unknown name in ``only``.
    """

    def __init__(
        self,
        memory: EpisodicMemory,
        *,
        max_limit: int = _DEFAULT_MAX_LIMIT,
        agent_id: str = "default",
        user_id: str = "default",
        only: Iterable[str] | None = None,
    ) -> None:
        self.memory = memory
        self.max_limit = max_limit
        self.owner = operations.Owner(agent_id, user_id)
        self.definitions = tool_definitions(
            default_limit=memory.config.default_limit, max_limit=max_limit, only=only
        )
        self._specs = {d.name: d for d in self.definitions}
        self._arguments = tool_arguments(max_limit)

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
                Checked by :mod:`memlane.operations.arguments` (strict types, unknown arguments refused).

        Returns:
            ``remember_episode``: ``{"ok": true, "episode": {...}}`` (the stored episode with its id).
            ``recall_episodes``: ``{"ok": true, "count": n, "ranked": bool, "episodes": [...]}``.
            Episodes are in the compact form by default (``id``, ``content``, ``event_type``,
            ``when``, ``tags``, ``importance``, and for hits ``score`` and a one-line ``why``);
            with ``detail: "full"`` every field, hits with their ``breakdown`` (see
            :mod:`memlane.wire`). The other tools: see :mod:`memlane.operations.handlers`.
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
            args = check_request(self._arguments[spec.name], parse_arguments(arguments))
            return self.run(spec.name, args)
        except Exception as exc:
            if not isinstance(exc, MemlaneError):
                logger.exception("tool %r failed unexpectedly", name)
            return tool_error(exc, tool=name if isinstance(name, str) else None)

    def run(self, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """Run tool ``name`` on arguments already checked (:mod:`~memlane.operations.arguments`; raises).

        Results are in the compact form unless ``detail: "full"`` (:mod:`memlane.wire`).
        """
        plain = _PLAIN_TOOLS.get(name)
        if plain is not None:
            return plain(self.memory, args, "compact")
        owned = _OWNER_TOOLS.get(name)
        if owned is not None:
            return owned(self.memory, args, self.owner, "compact")
        raise ValueError(f"unknown tool {name!r}")


_PLAIN_TOOLS: dict[str, Callable[[EpisodicMemory, Mapping[str, Any], wire.Detail], dict[str, Any]]] = {
    REMEMBER_EPISODE: operations.remember_episode,
    RECALL_EPISODES: operations.recall_episodes,
    SUPERSEDE_EPISODE: operations.supersede_episode,
    EPISODE_HISTORY: operations.episode_history,
    CONTRADICTIONS: operations.find_contradictions,
    REMEMBER_FACT: operations.remember_fact,
    QUERY_FACTS: operations.query_facts,
    ENTITY_TIMELINE: operations.entity_timeline,
    NEIGHBOURS: operations.neighbours,
    FIND_PATHS: operations.find_paths,
}
"""The tools that need only the memory (each a handler of :mod:`memlane.operations.handlers`)."""

_OWNER_TOOLS: dict[
    str, Callable[[EpisodicMemory, Mapping[str, Any], operations.Owner, wire.Detail], dict[str, Any]]
] = {
    GET_CONTEXT: operations.build_context,
    SEARCH_SESSIONS: operations.search_sessions,
}
"""The session tools, which also read the tools' bound owner (agent, user)."""


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
