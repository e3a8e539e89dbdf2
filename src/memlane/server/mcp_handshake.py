"""The MCP ``initialize`` answer of ``memlane mcp`` (stdio), given before the SDK is imported.

Importing the ``mcp`` SDK takes 1-2 s (it builds its pydantic models at import), and the model
and the store load after it: a host with a short connect timeout would give up first (issue #24
item 7). :class:`EarlyHandshake` reads the first stdin line in a thread while the SDK loads; if
it is an ``initialize`` request of the plain shape every client sends, it answers at once with
exactly the result the SDK gives (:func:`initialize_reply`: the same protocol version
negotiation, capabilities, ``serverInfo`` and instructions; ``tests/server/test_mcp_handshake.py``
compares the two for several requested versions). The SDK is then fed that same line — so its
connection is initialised as usual — and its own answer to that request id is dropped
(:mod:`memlane.server.mcp`). Any other first line (another method, a notification, unusual
parameters, a malformed line) gets no early answer: it goes to the SDK as before.

Over streamable HTTP the same answers are given by :mod:`memlane.server.front` while the app
loads: :func:`initialize_reply`, and :func:`discover_reply` for the ``server/discover`` probe the
SDK's client sends first in its default ``auto`` mode (the per-request protocol era,
:data:`MODERN_PROTOCOL_VERSIONS`).

This module imports nothing but the standard library; :mod:`memlane.server.mcp` takes its
constants from here (one definition).
"""

from __future__ import annotations

import json
import logging
import threading
from typing import IO, Any

from memlane import __version__

__all__ = [
    "HANDSHAKE_PROTOCOL_VERSIONS",
    "MAX_REQUEST_ID_CHARS",
    "MODERN_PROTOCOL_VERSIONS",
    "MODERN_SERVER_CAPABILITIES",
    "SERVER_CAPABILITIES",
    "SERVER_INSTRUCTIONS",
    "SERVER_TITLE",
    "EarlyHandshake",
    "discover_answerable",
    "discover_reply",
    "early_answerable",
    "initialize_reply",
    "negotiate_protocol_version",
    "valid_request_id",
]

logger = logging.getLogger(__name__)

SERVER_INSTRUCTIONS = (
    "Long-term episodic memory. Before answering a message that may depend on earlier "
    "conversations, call get_context with the user's message. Call recall_episodes to look up "
    "saved preferences, decisions or outcomes, and search_sessions for what was said in past "
    "conversations. Call remember_episode when something worth knowing later happens (a "
    "preference, a decision, a lesson, an outcome); when a saved fact changed (the user moved), "
    "call supersede_episode with the old episode's id instead. Memories persist across sessions."
)
"""What the server tells a client to do with its tools (the ``initialize`` result's ``instructions``)."""

SERVER_TITLE = "memlane episodic memory"
"""The human-readable server name (``serverInfo.title``)."""

HANDSHAKE_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""Protocol revisions the SDK's ``initialize`` accepts as asked, oldest first; any other request
gets the newest. The SDK's ``mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS`` (pinned equal by a
test: a new SDK with other versions fails it rather than answer differently)."""

SERVER_CAPABILITIES: dict[str, Any] = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}
"""The capabilities the SDK derives from memlane's handlers (tools, resources, the SDK's own
prompts list); pinned against the SDK's answer by a test."""

MODERN_PROTOCOL_VERSIONS = ("2026-07-28",)
"""Protocol revisions of the per-request era (``server/discover``, no ``initialize``), oldest first:
the SDK's ``mcp_types.version.MODERN_PROTOCOL_VERSIONS`` (pinned equal by a test)."""

MODERN_SERVER_CAPABILITIES: dict[str, Any] = {
    "prompts": {"listChanged": True},
    "resources": {"listChanged": True, "subscribe": True},
    "tools": {"listChanged": True},
}
"""The capabilities the SDK's ``server/discover`` answer lists for memlane's handlers (the
per-request era advertises change notifications); pinned against the SDK's answer by a test."""

MAX_REQUEST_ID_CHARS = 200
"""Longest request id (a string, or an integer's digits) memlane answers by; longer is -32600."""

_CLIENT_INFO_KEYS = frozenset({"name", "version", "title"})
_EMPTY_MARKER_CAPABILITIES = frozenset({"sampling", "elicitation"})


def valid_request_id(request_id: object) -> bool:
    """Whether ``request_id`` is one memlane answers by: a string or a 64-bit integer (not a
    bool), at most :data:`MAX_REQUEST_ID_CHARS` characters."""
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        return False
    if len(str(request_id)) > MAX_REQUEST_ID_CHARS:
        return False
    return not isinstance(request_id, int) or -(2**63) <= request_id < 2**63


def negotiate_protocol_version(requested: str) -> str:
    """The SDK's negotiation: the requested revision if it is one of
    :data:`HANDSHAKE_PROTOCOL_VERSIONS`, else the newest of them."""
    return requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else HANDSHAKE_PROTOCOL_VERSIONS[-1]


def _plain_capabilities(capabilities: object) -> bool:
    """Client capabilities of the shapes hosts send (``roots.listChanged``, empty ``sampling`` /
    ``elicitation`` markers, ``experimental`` objects), which the SDK always accepts."""
    if not isinstance(capabilities, dict):
        return False
    for key, value in capabilities.items():
        if not isinstance(value, dict):
            return False
        if key == "roots":
            if not set(value) <= {"listChanged"} or not all(isinstance(v, bool) for v in value.values()):
                return False
        elif key in _EMPTY_MARKER_CAPABILITIES:
            if any(v != {} for v in value.values()):
                return False
        elif key == "experimental":
            if not all(isinstance(v, dict) for v in value.values()):
                return False
        else:
            return False
    return True


def _plain_client_info(info: object) -> bool:
    return (
        isinstance(info, dict)
        and {"name", "version"} <= set(info) <= _CLIENT_INFO_KEYS
        and all(isinstance(v, str) for v in info.values())
    )


def early_answerable(message: object) -> bool:
    """Whether ``message`` (a decoded JSON-RPC line) is an ``initialize`` request this module
    answers exactly as the SDK would.

    Only the plain shape: ``{"jsonrpc": "2.0", "id", "method": "initialize", "params":
    {"protocolVersion": str, "capabilities": {...}, "clientInfo": {"name", "version"[, "title"]}}}``
    with a valid id and plain capabilities. Anything else is left to the SDK (it may refuse it).
    """
    if not isinstance(message, dict) or set(message) != {"jsonrpc", "id", "method", "params"}:
        return False
    if message["jsonrpc"] != "2.0" or message["method"] != "initialize":
        return False
    params = message["params"]
    return (
        valid_request_id(message["id"])
        and isinstance(params, dict)
        and set(params) == {"protocolVersion", "capabilities", "clientInfo"}
        and isinstance(params["protocolVersion"], str)
        and _plain_capabilities(params["capabilities"])
        and _plain_client_info(params["clientInfo"])
    )


def initialize_reply(message: dict[str, Any], *, name: str = "memlane") -> str:
    """The SDK's answer line (without the newline) to an :func:`early_answerable` request.

    Args:
        message: The decoded ``initialize`` request.
        name: The server name (``serverInfo.name``), as given to the SDK.

    Returns:
        Compact JSON, keys in the SDK's order.
    """
    result = {
        "capabilities": SERVER_CAPABILITIES,
        "instructions": SERVER_INSTRUCTIONS,
        "protocolVersion": negotiate_protocol_version(message["params"]["protocolVersion"]),
        "serverInfo": {"name": name, "title": SERVER_TITLE, "version": __version__},
    }
    reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    return json.dumps(reply, separators=(",", ":"), ensure_ascii=False)


_META = "io.modelcontextprotocol/"
_DISCOVER_META_KEYS = frozenset(
    {_META + "protocolVersion", _META + "clientInfo", _META + "clientCapabilities"}
)


def discover_answerable(message: object, *, protocol_header: str, method_header: str) -> bool:
    """Whether ``message`` (a decoded HTTP request body) is a ``server/discover`` request this module
    answers exactly as the SDK would.

    Only the plain shape the SDK's client sends: ``{"jsonrpc": "2.0", "id", "method":
    "server/discover", "params": {"_meta": {protocolVersion, clientInfo, clientCapabilities}}}``
    (keys under ``io.modelcontextprotocol/``) with a valid id, a revision of
    :data:`MODERN_PROTOCOL_VERSIONS` equal to the ``MCP-Protocol-Version`` header
    (``protocol_header``), ``MCP-Method: server/discover`` (``method_header``), a plain client
    info and plain capabilities.
    """
    if not isinstance(message, dict) or set(message) != {"jsonrpc", "id", "method", "params"}:
        return False
    if (
        message["jsonrpc"] != "2.0"
        or message["method"] != "server/discover"
        or method_header != "server/discover"
    ):
        return False
    params = message["params"]
    if not valid_request_id(message["id"]) or not isinstance(params, dict) or set(params) != {"_meta"}:
        return False
    meta = params["_meta"]
    if not isinstance(meta, dict) or set(meta) != _DISCOVER_META_KEYS:
        return False
    version = meta[_META + "protocolVersion"]
    return (
        version in MODERN_PROTOCOL_VERSIONS
        and version == protocol_header
        and _plain_client_info(meta[_META + "clientInfo"])
        and _plain_capabilities(meta[_META + "clientCapabilities"])
    )


def discover_reply(message: dict[str, Any], *, name: str = "memlane") -> str:
    """The SDK's answer (compact JSON, keys in the SDK's order) to a :func:`discover_answerable`
    request; ``name`` is the server name (``serverInfo.name``), as given to the SDK."""
    result = {
        "cacheScope": "private",
        "capabilities": MODERN_SERVER_CAPABILITIES,
        "instructions": SERVER_INSTRUCTIONS,
        "resultType": "complete",
        "supportedVersions": list(MODERN_PROTOCOL_VERSIONS),
        "ttlMs": 0,
        "_meta": {_META + "serverInfo": {"name": name, "title": SERVER_TITLE, "version": __version__}},
    }
    reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    return json.dumps(reply, separators=(",", ":"), ensure_ascii=False)


class EarlyHandshake:
    """Reads the first line of ``stdin`` in a daemon thread and answers it on ``stdout`` if it is
    an :func:`early_answerable` ``initialize`` request.

    Args:
        stdin: The binary stream the SDK reads afterwards (``sys.stdin.buffer``): exactly one
            line is consumed from it, nothing read ahead.
        stdout: The binary stream the SDK writes to (``sys.stdout.buffer``); the answer is
            flushed before :meth:`wait` returns.
        name: The server name the SDK is given.
    """

    def __init__(self, stdin: IO[bytes], stdout: IO[bytes], *, name: str = "memlane") -> None:
        self._stdin, self._stdout, self._name = stdin, stdout, name
        self._line: bytes = b""
        self._answered: tuple[object, str] | None = None
        self._thread = threading.Thread(target=self._run, name="memlane-mcp-handshake", daemon=True)

    def start(self) -> EarlyHandshake:
        """Start reading (returns ``self``)."""
        self._thread.start()
        return self

    def _run(self) -> None:
        self._line = self._stdin.readline()
        try:
            message = json.loads(self._line)
        except ValueError:
            return
        if not early_answerable(message) or "\\u" in self._line.decode("utf-8", "replace"):
            return  # escapes (e.g. lone surrogates) are for the SDK's guard to judge
        reply = initialize_reply(message, name=self._name)
        self._stdout.write(reply.encode("utf-8") + b"\n")
        self._stdout.flush()
        self._answered = (message["id"], reply)

    def wait(self) -> tuple[bytes, tuple[object, str] | None]:
        """Block until the first line is read (and answered).

        Returns:
            ``(line, answered)``: the first stdin line (``b""`` at end of input), to be fed to the
            SDK; ``answered`` is ``(request id, reply line)`` if it was answered here, else ``None``.
        """
        self._thread.join()
        return self._line, self._answered
