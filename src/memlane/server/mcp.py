"""A Model Context Protocol server exposing the memory tools of :mod:`memlane.tools`.

Tools: ``remember_episode``, ``recall_episodes``, ``get_context`` (the block an agent reads
before answering), ``search_sessions``, ``supersede_episode`` ("the user moved"),
``episode_history`` and ``find_contradictions``. Results are compact unless a call asks
``detail: "full"`` (:mod:`memlane.wire`).

Install with ``pip install 'memlane[mcp]'`` (the official ``mcp`` SDK, 2.x) and run with
``memlane --config memlane.yaml --tenant alice mcp`` (stdio, for Claude Desktop, Cursor and
other MCP clients) or ``memlane mcp --transport streamable-http --port 8765``.

* The tools, their input schemas and their results are exactly those of
  :mod:`memlane.tools` (one definition for every interface). The client's arguments reach
  :meth:`memlane.tools.MemoryTools.handle_tool_call` exactly as sent (the SDK's own argument
  model, which would drop unknown arguments, is bypassed), so the one argument policy of
  :mod:`memlane.operations.arguments` applies: unknown arguments, wrong types and bad values are a tool
  error ``ValidationError``, as in Python, tool calls and HTTP.
* Text the SDK cannot even decode — a JSON string escape of a lone UTF-16 surrogate such as
  ``"\\udc00"``, which the SDK's JSON parser refuses, so the request would get no answer at
  all — is caught by :func:`run_stdio` before the SDK sees it: a ``tools/call`` gets the
  tool's own ``ValidationError`` result naming the field, any other request a JSON-RPC
  "invalid params" error.
* The tenant, session and scope are the server's (from the memory it is built with, i.e.
  the CLI's ``--tenant/--session/--scope`` or the config file), never tool arguments.
* Errors (the MCP convention, in :func:`to_call_tool_result`): a failed call is a
  ``CallToolResult`` with ``isError: true`` whose text (and ``structuredContent``) is the
  tool's JSON error ``{"ok": false, "error": {"type", "message"}}``; the model reads it and
  can retry. Protocol-level JSON-RPC errors are left to the SDK, except on stdio for lines the
  SDK would not answer at all: a line that is not JSON gets ``-32700``, a batch array, a
  non-object or an id that is not a short string or 64-bit integer ``-32600`` (id ``null``).
* Resources: the stored conversations of the server's agent and user (``--agent/--user``)
  are offered as MCP resources, newest first (``resources/list``: up to
  :data:`RESOURCE_LIST_LIMIT`, each ``memlane://sessions/{session_id}``, JSON), and any of
  them can be read by that URI (``resources/read``: the session's wire form, every message;
  the template ``memlane://sessions/{session_id}`` is listed by ``resources/templates/list``).
  An unknown id, another agent's or user's session, or an expired one is "not found".
* Over stdio, ``memlane mcp`` answers a plain first ``initialize`` request before this module
  (and the SDK) is even imported (:mod:`memlane.server.mcp_handshake`, given to
  :func:`run_stdio` as ``early``): the SDK still receives that request, and its own,
  identical answer is dropped.
* ``memlane mcp --transport streamable-http`` serves the app through
  :class:`memlane.server.front.LoadingFront`: the socket answers a plain ``initialize`` and
  ``server/discover`` (the SDK's own answers) while this module, the SDK and the store load in a
  thread; every other request waits for the app.
* The streamable HTTP transport (:func:`streamable_http_app`) is stateless: memlane's tools keep
  no per-session state, so there is no session table to fill. It has no authentication: bind it
  to 127.0.0.1 (the default; the SDK then also enables DNS-rebinding protection) or put it
  behind an authenticating proxy.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import sys
from collections.abc import AsyncIterator, Callable, Iterable
from io import TextIOWrapper
from typing import Any, cast
from urllib.parse import quote

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.tools import Tool
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    CallToolResult,
    ErrorData,
    JSONRPCError,
    JSONRPCResponse,
    TextContent,
    ToolAnnotations,
)
from mcp_types import Resource as MCPResource
from pydantic import Field

from memlane import EpisodicMemory, __version__
from memlane.config.file import DEFAULT_MAX_LIMIT
from memlane.errors import ValidationError
from memlane.operations.tool_specs import ENTITY_TIMELINE, FIND_PATHS, NEIGHBOURS, QUERY_FACTS, REMEMBER_FACT
from memlane.server.mcp_handshake import (
    MAX_REQUEST_ID_CHARS,
    SERVER_INSTRUCTIONS,
    SERVER_TITLE,
    EarlyHandshake,
    valid_request_id,
)
from memlane.tools import (
    CONTRADICTIONS,
    EPISODE_HISTORY,
    GET_CONTEXT,
    RECALL_EPISODES,
    REMEMBER_EPISODE,
    SEARCH_SESSIONS,
    SUPERSEDE_EPISODE,
    MemoryTools,
    ToolDefinition,
)
from memlane.validation import check_json_value

__all__ = [
    "MAX_REQUEST_ID_CHARS",
    "RESOURCE_LIST_LIMIT",
    "SERVER_INSTRUCTIONS",
    "SESSION_URI",
    "create_mcp_server",
    "run_stdio",
    "streamable_http_app",
    "to_call_tool_result",
]

logger = logging.getLogger(__name__)

SESSION_URI = "memlane://sessions/{session_id}"
"""The URI template of a stored conversation offered as an MCP resource (the id percent-encoded;
the SDK decodes it)."""

RESOURCE_LIST_LIMIT = 50
"""How many stored conversations ``resources/list`` offers (the newest; older ones stay readable)."""

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
    GET_CONTEXT: ToolAnnotations(title="Get past context", read_only_hint=True, open_world_hint=False),
    SEARCH_SESSIONS: ToolAnnotations(
        title="Search past conversations", read_only_hint=True, open_world_hint=False
    ),
    SUPERSEDE_EPISODE: ToolAnnotations(
        title="Replace an outdated fact",
        read_only_hint=False,
        destructive_hint=False,  # the old episode is kept as history
        idempotent_hint=False,
        open_world_hint=False,
    ),
    EPISODE_HISTORY: ToolAnnotations(title="History of a fact", read_only_hint=True, open_world_hint=False),
    CONTRADICTIONS: ToolAnnotations(
        title="Find contradicted facts", read_only_hint=True, open_world_hint=False
    ),
    REMEMBER_FACT: ToolAnnotations(
        title="Remember a fact",
        read_only_hint=False,
        destructive_hint=False,  # a replaced value is kept as history
        idempotent_hint=True,  # the same fact again changes nothing
        open_world_hint=False,
    ),
    QUERY_FACTS: ToolAnnotations(title="Facts about an entity", read_only_hint=True, open_world_hint=False),
    ENTITY_TIMELINE: ToolAnnotations(
        title="How an entity's facts changed", read_only_hint=True, open_world_hint=False
    ),
    NEIGHBOURS: ToolAnnotations(title="Entities near an entity", read_only_hint=True, open_world_hint=False),
    FIND_PATHS: ToolAnnotations(
        title="How two entities are connected", read_only_hint=True, open_world_hint=False
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


class _PolicyTool(Tool):
    """An SDK ``Tool`` whose calls hand the client's arguments, as sent, to ``handler``.

    The SDK's ``Tool.run`` validates arguments against a model built from the function
    signature, which silently drops unknown arguments; memlane's argument policy refuses
    them, so ``run`` skips that model.
    """

    handler: Callable[[dict[str, Any]], CallToolResult] | None = Field(default=None, exclude=True)

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        """Run ``handler`` on the raw arguments in a worker thread (it touches the store)."""
        handler = self.handler
        assert handler is not None, "built by _tool()"
        return await anyio.to_thread.run_sync(handler, dict(arguments or {}))


def _tool(tools: MemoryTools, definition: ToolDefinition) -> Tool:
    """An SDK ``Tool`` that publishes ``definition``'s schema and dispatches to ``tools``."""
    names = list(definition.parameters["properties"])

    def handle(arguments: dict[str, Any]) -> CallToolResult:
        return to_call_tool_result(tools.handle_tool_call(definition.name, arguments))

    def call(**arguments: Any) -> CallToolResult:  # only for the SDK's registration
        return handle(arguments)

    # The SDK builds an argument model from the signature (unused: _PolicyTool.run passes
    # the raw arguments); the published schema is definition.parameters.
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Any) for n in names],
        return_annotation=CallToolResult,
    )
    call.__name__ = definition.name
    fn: Callable[..., CallToolResult] = call
    tool = _PolicyTool.from_function(
        fn,
        name=definition.name,
        description=definition.description,
        annotations=_ANNOTATIONS.get(definition.name),
        structured_output=False,
    )
    return tool.model_copy(update={"parameters": definition.parameters, "handler": handle})


def create_mcp_server(
    memory: EpisodicMemory,
    *,
    max_limit: int = DEFAULT_MAX_LIMIT,
    name: str = "memlane",
    agent_id: str = "default",
    user_id: str = "default",
    only: Iterable[str] | None = None,
) -> MCPServer[Any]:
    """Build an MCP server with the memory tools bound to ``memory``.

    Args:
        memory: The memory the tools use; its tenant, session and scope apply to every call.
            The caller keeps ownership (close it after the server stops).
        max_limit: Largest ``limit`` a recall may ask for (larger requests are refused), >= the
            memory's ``default_limit``.
        name: Server name reported to clients.
        agent_id: Whose conversations the session tools read: the agent (like the tenant,
            fixed by the server, never a tool argument).
        user_id: Whose conversations the session tools read: the user.
        only: Tool names to publish (see :class:`memlane.tools.MemoryTools`); default every tool.

    Returns:
        The ``MCPServer``: ``server.run("stdio")``, ``await server.run_stdio_async()``, or
        ``server.streamable_http_app()`` for an ASGI app.

    Raises:
        ValueError: ``max_limit`` below the memory's ``default_limit``, or an unknown name in ``only``.
    """
    tools = MemoryTools(memory, max_limit=max_limit, agent_id=agent_id, user_id=user_id, only=only)
    return _server(tools, name)


class _MemoryServer(MCPServer[Any]):
    """The SDK's server, except that a call to an unknown tool gets memlane's JSON error
    (``UnknownTool``, with the available tools) like every other failed call, not the SDK's
    plain text ``Unknown tool: nope``, and that the stored conversations are listed as resources."""

    memory_tools: MemoryTools | None = None

    async def list_resources(self) -> list[MCPResource]:
        """The static resources, then the newest stored conversations of the server's agent and user."""
        listed = await super().list_resources()
        tools = self.memory_tools
        if tools is None:
            return listed
        owner = tools.owner
        recent = tools.memory.sessions.recall_recent(owner.agent_id, owner.user_id, RESOURCE_LIST_LIMIT)
        return [*listed, *(_session_resource(session) for session in recent)]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Run tool ``name``; an unknown name is answered with :func:`memlane.tools.tool_error`'s envelope."""
        tools = self.memory_tools
        if tools is not None and name not in tools.names:
            return to_call_tool_result(tools.handle_tool_call(name, arguments))
        return await super().call_tool(name, arguments, context)


def _session_uri(session_id: str) -> str:
    return SESSION_URI.format(session_id=quote(session_id, safe=""))


def _session_resource(session: Any) -> MCPResource:
    """A stored conversation's ``resources/list`` entry."""
    return MCPResource(
        uri=_session_uri(session.session_id),
        name=session.session_id,
        title=f"conversation {session.session_id} ({len(session.messages)} messages)",
        description=f"{session.started_at.isoformat()} to {session.ended_at.isoformat()}, "
        f"agent {session.agent_id!r}, user {session.user_id!r}",
        mime_type="application/json",
    )


def _add_session_resources(server: MCPServer[Any], tools: MemoryTools) -> None:
    """Register the ``memlane://sessions/{session_id}`` template (read one stored conversation)."""

    @server.resource(
        SESSION_URI,
        name="session",
        title="A stored conversation",
        description="One stored conversation of this server's agent and user, every message (JSON).",
        mime_type="application/json",
    )
    def read_session(session_id: str) -> str:
        owner = tools.owner
        try:
            found = tools.memory.sessions.get_session(
                session_id, agent_id=owner.agent_id, user_id=owner.user_id
            )
        except ValidationError as exc:
            raise ResourceError(str(exc)) from None
        if found is None:
            raise ResourceError(f"no stored conversation {session_id!r}")
        return json.dumps(found.to_dict(), ensure_ascii=False)


def _server(tools: MemoryTools, name: str) -> MCPServer[Any]:
    # MCPServer() calls logging.basicConfig(); memlane is a library and configures no logging
    # handlers, so the root logger is put back the way the application had it.
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        server = _MemoryServer(
            name,
            title=SERVER_TITLE,
            instructions=SERVER_INSTRUCTIONS,
            version=__version__,
            tools=[_tool(tools, d) for d in tools.definitions],
            log_level="WARNING",
        )
        server.memory_tools = tools
        _add_session_resources(server, tools)
        return server
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


# -- stdio with the surrogate guard ------------------------------------------------------

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _surrogate_problem(message: object) -> tuple[str, ValidationError] | None:
    """Where the first lone surrogate in a decoded JSON-RPC message is, and the error naming it."""
    try:
        check_json_value(message, "message")
    except ValidationError as exc:
        text = str(exc)
        return text.split(" ", 1)[0], exc
    return None


def _rpc_error(code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=message))


def _shape_error(line: str) -> tuple[Any, JSONRPCError | None]:
    """The decoded line, or the JSON-RPC error it gets without reaching the SDK (which would
    answer nothing: a client would wait forever, #22 item 15).

    ``-32700`` for a line that is not JSON (a 20,000-digit id too: Python refuses such an
    integer), ``-32600`` for a batch array, a non-object, or an id that is not a short string
    or integer.
    """
    if not line.strip():
        return None, None
    try:
        message = json.loads(line)
    except ValueError:
        return None, _rpc_error(-32700, "Parse error: the line is not JSON")
    if isinstance(message, list):
        return None, _rpc_error(-32600, "Invalid Request: batch arrays are not supported")
    if not isinstance(message, dict):
        return None, _rpc_error(-32600, "Invalid Request: a message is a JSON object")
    if "id" in message and not valid_request_id(message["id"]):
        return None, _rpc_error(-32600, "Invalid Request: id must be a string or a 64-bit integer")
    return message, None


def _guard_reply(line: str, tools: MemoryTools) -> tuple[bool, JSONRPCResponse | JSONRPCError | None]:
    """Whether memlane handles this stdin line itself (the SDK could not decode it), and its answer.

    Returns:
        ``(False, None)``: pass the line on to the SDK. ``(True, reply)``: answer ``reply``
        instead; ``(True, None)``: drop it (a bad notification or response gets no answer).
    """
    message, refused = _shape_error(line)
    if refused is not None:
        return True, refused
    if message is None or _SURROGATE_ESCAPE.search(line) is None:
        return False, None
    problem = _surrogate_problem(message)
    if problem is None or not isinstance(message, dict):
        return False, None  # a valid surrogate pair, or something the SDK refuses anyway
    where, error = problem
    request_id = message.get("id")
    if "method" not in message or not isinstance(request_id, str | int) or isinstance(request_id, bool):
        logger.warning("dropped a JSON-RPC message with a lone surrogate at %s", where)
        return True, None
    params = message.get("params")
    if (
        message["method"] == "tools/call"
        and isinstance(params, dict)
        and where.startswith(("message.params.arguments", "message.params.name"))
    ):
        result = to_call_tool_result(tools.handle_tool_call(str(params.get("name")), params.get("arguments")))
        body = result.model_dump(by_alias=True, exclude_none=True, mode="json")
        return True, JSONRPCResponse(jsonrpc="2.0", id=request_id, result=body)
    return True, JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=ErrorData(code=-32602, message=str(error).replace("message.", "", 1)),
    )


async def _stdin_lines(first: bytes | None) -> AsyncIterator[str]:
    """``first`` (the line the early handshake read, if any), then the rest of stdin."""
    if first:
        yield first.decode("utf-8", errors="replace")
    if first == b"":
        return  # the input had already ended
    stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    async for line in stdin:
        yield line


async def _guarded_lines(tools: MemoryTools, replies: list[Any], first: bytes | None) -> AsyncIterator[str]:
    """Lines of stdin for the SDK; lines it could not decode are answered via ``replies[0]``."""
    async for line in _stdin_lines(first):
        handled, reply = _guard_reply(line, tools)
        if not handled:
            yield line
        elif reply is not None:
            await replies[0].send(SessionMessage(reply))


class _WithoutAnsweredReply:
    """The SDK's write stream, minus its reply to the ``initialize`` request answered early.

    The SDK's reply is compared with the early one; a difference is logged (it cannot be
    retracted; ``tests/server/test_mcp_handshake.py`` keeps the two equal).
    """

    def __init__(self, inner: Any, answered: tuple[object, str]) -> None:
        self._inner = inner
        self._answered: tuple[object, str] | None = answered

    async def send(self, item: SessionMessage) -> None:
        message = item.message
        is_reply = not hasattr(message, "method")  # a response or error, not a server request
        if self._answered is not None and is_reply and getattr(message, "id", None) == self._answered[0]:
            early, self._answered = self._answered[1], None
            own = message.model_dump_json(by_alias=True, exclude_unset=True)
            if json.loads(own) != json.loads(early):
                logger.warning("the early initialize answer differed from the SDK's: %s", own)
            return
        await self._inner.send(item)

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    def clone(self) -> Any:
        return self._inner.clone()

    async def __aenter__(self) -> _WithoutAnsweredReply:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def _serve_stdio(tools: MemoryTools, name: str, early: EarlyHandshake | None) -> None:
    server = _server(tools, name)
    first, answered = (None, None) if early is None else await anyio.to_thread.run_sync(early.wait)
    replies: list[Any] = []
    lines = cast(Any, _guarded_lines(tools, replies, first))
    async with stdio_server(stdin=lines) as (read_stream, write_stream):
        replies.append(write_stream)
        writes = write_stream if answered is None else _WithoutAnsweredReply(write_stream, answered)
        lowlevel = server._lowlevel_server  # the SDK runs custom streams only on its low-level server
        await lowlevel.run(read_stream, cast(Any, writes), lowlevel.create_initialization_options())


def streamable_http_app(server: MCPServer[Any], *, path: str = "/mcp", host: str = "127.0.0.1") -> Any:
    """The ASGI app of the streamable HTTP transport, **stateless** (``memlane mcp --transport
    streamable-http`` serves it).

    memlane's tools keep no per-session state, so the SDK's stateless mode is used: no session
    table to fill, so 10,000 ``initialize`` calls cannot lock other clients out or grow the
    process (#22 item 6); each request is answered on its own.

    Args:
        server: From :func:`create_mcp_server`.
        path: Where the endpoint is mounted.
        host: The bound host (the SDK's DNS-rebinding protection for loopback).
    """
    return server.streamable_http_app(streamable_http_path=path, host=host, stateless_http=True)


def run_stdio(
    memory: EpisodicMemory,
    *,
    max_limit: int = DEFAULT_MAX_LIMIT,
    name: str = "memlane",
    agent_id: str = "default",
    user_id: str = "default",
    early: EarlyHandshake | None = None,
) -> None:
    """Serve the memory tools over stdio until the client disconnects (what ``memlane mcp`` runs).

    Like ``create_mcp_server(memory, ...).run("stdio")``, plus the surrogate guard (see the
    module docstring): a request carrying a lone-surrogate escape still gets an answer.

    Args:
        memory: The memory the tools use (the caller closes it afterwards).
        max_limit: Largest ``limit`` a recall may ask for (see :func:`create_mcp_server`).
        name: Server name reported to clients.
        agent_id: Whose conversations the session tools read (see :func:`create_mcp_server`).
        user_id: Whose conversations the session tools read.
        early: A started :class:`~memlane.server.mcp_handshake.EarlyHandshake` over this
            process's stdin/stdout (``memlane mcp`` starts it before importing this module):
            its first line is fed to the SDK, and the SDK's answer to a request it already
            answered is dropped.
    """
    tools = MemoryTools(memory, max_limit=max_limit, agent_id=agent_id, user_id=user_id)
    anyio.run(_serve_stdio, tools, name, early)
