"""A Model Context Protocol server exposing ``remember_episode`` and ``recall_episodes``.

Install with ``pip install 'memlane[mcp]'`` (the official ``mcp`` SDK, 2.x) and run with
``memlane --config memlane.yaml --tenant alice mcp`` (stdio, for Claude Desktop, Cursor and
other MCP clients) or ``memlane mcp --transport streamable-http --port 8765``.

* The tools, their input schemas and their results are exactly those of
  :mod:`memlane.tools` (one definition for every interface); the SDK's own argument model
  accepts anything, and :meth:`memlane.tools.MemoryTools.handle_tool_call` validates.
* The tenant, session and scope are the server's (from the memory it is built with, i.e.
  the CLI's ``--tenant/--session/--scope`` or the config file), never tool arguments.
* Errors (the MCP convention, in :func:`to_call_tool_result`): a failed call is a
  ``CallToolResult`` with ``isError: true`` whose text (and ``structuredContent``) is the
  tool's JSON error ``{"ok": false, "error": {"type", "message"}}``; the model reads it and
  can retry. Protocol-level JSON-RPC errors are left to the SDK.
* The streamable HTTP transport has no authentication: bind it to 127.0.0.1 (the default;
  the SDK then also enables DNS-rebinding protection) or put it behind an authenticating proxy.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from memlane import EpisodicMemory, __version__
from memlane.config.file import DEFAULT_MAX_LIMIT
from memlane.tools import RECALL_EPISODES, REMEMBER_EPISODE, MemoryTools, ToolDefinition

__all__ = ["SERVER_INSTRUCTIONS", "create_mcp_server", "to_call_tool_result"]

SERVER_INSTRUCTIONS = (
    "Long-term episodic memory. Call recall_episodes before answering when past preferences, "
    "decisions or outcomes may matter; call remember_episode when something worth knowing later "
    "happens (a preference, a decision, a lesson, an outcome). Memories persist across sessions."
)

_ANNOTATIONS = {
    REMEMBER_EPISODE: ToolAnnotations(
        title="Remember an episode",
        read_only_hint=False,
        destructive_hint=False,
        idempotent_hint=False,
        open_world_hint=False,
    ),
    RECALL_EPISODES: ToolAnnotations(
        title="Recall episodes", read_only_hint=True, destructive_hint=False, open_world_hint=False
    ),
}


def to_call_tool_result(result: dict[str, Any]) -> CallToolResult:
    """Map a :mod:`memlane.tools` result to MCP's ``CallToolResult`` (the one place that does it).

    Args:
        result: ``{"ok": true, ...}`` or ``{"ok": false, "error": {...}}``.

    Returns:
        The result as JSON text plus ``structuredContent``; ``isError`` when ``ok`` is false.
    """
    text = json.dumps(result, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=result,
        is_error=not result.get("ok", False),
    )


def _tool(tools: MemoryTools, definition: ToolDefinition) -> Tool:
    """An SDK ``Tool`` that publishes ``definition``'s schema and dispatches to ``tools``."""
    names = list(definition.parameters["properties"])

    def call(**arguments: Any) -> CallToolResult:
        present = {k: v for k, v in arguments.items() if v is not None}
        return to_call_tool_result(tools.handle_tool_call(definition.name, present))

    # The SDK builds its argument model from the signature: one optional, untyped keyword
    # per published property, so every value reaches handle_tool_call, which validates.
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Any) for n in names],
        return_annotation=CallToolResult,
    )
    call.__name__ = definition.name
    fn: Callable[..., CallToolResult] = call
    tool = Tool.from_function(
        fn,
        name=definition.name,
        description=definition.description,
        annotations=_ANNOTATIONS.get(definition.name),
        structured_output=False,
    )
    return tool.model_copy(update={"parameters": definition.parameters})


def create_mcp_server(
    memory: EpisodicMemory, *, max_limit: int = DEFAULT_MAX_LIMIT, name: str = "memlane"
) -> MCPServer[Any]:
    """Build an MCP server with the memory tools bound to ``memory``.

    Args:
        memory: The memory the tools use; its tenant, session and scope apply to every call.
            The caller keeps ownership (close it after the server stops).
        max_limit: Largest ``limit`` a recall returns (larger requests are reduced), >= the
            memory's ``default_limit``.
        name: Server name reported to clients.

    Returns:
        The ``MCPServer``: ``server.run("stdio")``, ``await server.run_stdio_async()``, or
        ``server.streamable_http_app()`` for an ASGI app.

    Raises:
        ValueError: ``max_limit`` below the memory's ``default_limit``.
    """
    tools = MemoryTools(memory, max_limit=max_limit)
    # MCPServer() calls logging.basicConfig(); memlane is a library and configures no logging
    # handlers, so the root logger is put back the way the application had it.
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        return MCPServer(
            name,
            title="memlane episodic memory",
            instructions=SERVER_INSTRUCTIONS,
            version=__version__,
            tools=[_tool(tools, d) for d in tools.definitions],
            log_level="WARNING",
        )
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
