"""An ASGI front that answers the handshake while the real HTTP app loads (issue #24 item 7).

``memlane serve`` and ``memlane mcp --transport streamable-http`` spend seconds before their app
exists: FastAPI and the ``mcp`` SDK build pydantic models at import, then the store opens. A host
with a short connect timeout gives up first. :class:`LoadingFront` is the ASGI app uvicorn serves
from the start: at lifespan startup it begins loading the real app in a thread and reports the
server started at once, so the socket accepts connections within a fraction of a second.

* Requests that ``early`` can answer (``GET /health``; an MCP ``initialize`` or
  ``server/discover`` of the plain shape: :func:`mcp_early_answer`) get that answer at once, while
  the app loads. Each answer is the real app's (same status, content type and JSON; the tests
  compare them), built from the constants both use (:mod:`memlane.server.mcp_handshake`,
  :func:`health_body`).
* Every other request waits for the app, then is handed to it unchanged (a body read to judge it
  is replayed), so no request arriving during the load is lost or refused.
* Once the app is loaded (its own lifespan started), every request goes to it, early-answerable
  or not. At shutdown the app's lifespan is shut down.
* If the load fails, waiting and later requests get a 503 JSON error and ``on_failure`` is
  called with the exception (the CLI stops the server and reports it).

This module imports nothing but the standard library and :mod:`memlane.server.mcp_handshake`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from memlane import __version__
from memlane.server.mcp_handshake import (
    discover_answerable,
    discover_reply,
    early_answerable,
    initialize_reply,
)
from memlane.wire import error_body

__all__ = [
    "MAX_EARLY_BODY_BYTES",
    "EarlyAnswer",
    "LoadingFront",
    "health_answer",
    "health_body",
    "mcp_early_answer",
]

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

EarlyAnswer = tuple[int, list[tuple[bytes, bytes]], bytes]
"""An early response: ``(status, headers, body)``."""

MAX_EARLY_BODY_BYTES = 64 * 1024
"""Largest declared ``Content-Length`` the front reads to judge a request (larger ones wait)."""

_JSON = b"application/json"
_STARTUP_FAILED = error_body("StartupError", "the server failed to start")


def health_body() -> dict[str, str]:
    """The ``GET /health`` body: ``{"status": "ok", "version": <memlane version>}`` (one definition:
    the HTTP app's route returns it too)."""
    return {"status": "ok", "version": __version__}


def _compact_json(value: object) -> bytes:
    """``value`` as Starlette's ``JSONResponse`` renders it (compact UTF-8)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


def _json_answer(status: int, value: object) -> EarlyAnswer:
    body = _compact_json(value)
    headers = [(b"content-length", str(len(body)).encode()), (b"content-type", _JSON)]
    return status, headers, body


def _headers(scope: Scope) -> dict[bytes, bytes]:
    """The request headers, lower-case names (a repeated header: the last one)."""
    return {bytes(k).lower(): bytes(v) for k, v in scope.get("headers", [])}


def _media_types(value: bytes) -> set[bytes]:
    return {part.split(b";", 1)[0].strip().lower() for part in value.split(b",")}


def health_answer(scope: Scope, body: bytes) -> EarlyAnswer | None:
    """The early answer of ``memlane serve``: ``GET /health`` (no query, no body), else ``None``."""
    if scope["method"] != "GET" or scope["path"] != "/health" or scope.get("query_string", b"") or body:
        return None
    return _json_answer(200, health_body())


def mcp_early_answer(path: str) -> Callable[[Scope, bytes], EarlyAnswer | None]:
    """The early answers of the MCP streamable HTTP app mounted at ``path``.

    A POST to ``path`` from a loopback ``Host`` (``127.0.0.1``, ``localhost`` or ``[::1]`` with the
    server's port; no ``Origin``, no session id), ``Content-Type: application/json`` and an
    ``Accept`` naming both ``application/json`` and ``text/event-stream``, whose body is

    * a plain ``initialize`` (:func:`~memlane.server.mcp_handshake.early_answerable`, no
      ``MCP-Protocol-Version`` header, no ``\\u`` escape): the SDK's answer, as the one event of a
      ``text/event-stream`` (as the SDK sends it);
    * a plain ``server/discover``
      (:func:`~memlane.server.mcp_handshake.discover_answerable`): the SDK's JSON answer.

    Anything else is ``None`` (left to the SDK, which may refuse it).
    """

    def answer(scope: Scope, body: bytes) -> EarlyAnswer | None:
        headers = _plain_mcp_post(scope, path)
        if headers is None:
            return None
        try:
            message = json.loads(body)
        except ValueError:
            return None
        if b"\\u" in body:
            return None  # escapes (e.g. lone surrogates) are for the SDK's guard to judge
        if b"mcp-protocol-version" not in headers and early_answerable(message):
            event = b"event: message\r\ndata: " + initialize_reply(message).encode("utf-8") + b"\r\n\r\n"
            sse = [
                (b"cache-control", b"no-cache, no-transform"),
                (b"connection", b"keep-alive"),
                (b"content-type", b"text/event-stream"),
                (b"x-accel-buffering", b"no"),
            ]
            return 200, sse, event
        protocol = headers.get(b"mcp-protocol-version", b"").decode("latin-1")
        method = headers.get(b"mcp-method", b"").decode("latin-1")
        if discover_answerable(message, protocol_header=protocol, method_header=method):
            if any(name.startswith(b"mcp-param-") for name in headers):
                return None
            return _json_answer(200, json.loads(discover_reply(message)))
        return None

    return answer


def _plain_mcp_post(scope: Scope, path: str) -> dict[bytes, bytes] | None:
    """The headers of a POST to ``path`` of the plain shape :func:`mcp_early_answer` judges, else ``None``."""
    if scope["method"] != "POST" or scope["path"] != path or scope.get("query_string", b""):
        return None
    headers = _headers(scope)
    port = (scope.get("server") or (None, None))[1]
    hosts = {f"{name}:{port}".encode() for name in ("127.0.0.1", "localhost", "[::1]")}
    if headers.get(b"host") not in hosts or b"origin" in headers or b"mcp-session-id" in headers:
        return None
    if _media_types(headers.get(b"content-type", b"")) != {_JSON}:
        return None
    if not {_JSON, b"text/event-stream"} <= _media_types(headers.get(b"accept", b"")):
        return None
    return headers


class _Lifespan:
    """The real app's lifespan, driven by the front (startup once loaded, shutdown at the end)."""

    def __init__(self, app: App, state: dict[str, Any]) -> None:
        self._incoming: asyncio.Queue[Message] = asyncio.Queue()
        self._outgoing: asyncio.Queue[Message] = asyncio.Queue()
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": state}
        self._task = asyncio.ensure_future(app(scope, self._incoming.get, self._outgoing.put))

    async def _step(self, kind: str) -> None:
        await self._incoming.put({"type": f"lifespan.{kind}"})
        reply = asyncio.ensure_future(self._outgoing.get())
        done, _ = await asyncio.wait({reply, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if reply not in done:
            reply.cancel()
            self._task.result()  # the app's exception, if it raised
            raise RuntimeError(f"the app's lifespan ended before {kind} completed")
        message = reply.result()
        if message["type"] != f"lifespan.{kind}.complete":
            raise RuntimeError(f"the app's lifespan {kind} failed: {message.get('message', '')}")

    async def startup(self) -> None:
        await self._step("startup")

    async def shutdown(self) -> None:
        await self._step("shutdown")
        await self._task


class LoadingFront:
    """The ASGI app served while (and after) the real app loads; see the module docstring.

    Args:
        load: Builds the real ASGI app; runs in a worker thread (imports, the store). Its
            lifespan, if any, is started by the front once it returns.
        early: ``(scope, body) -> answer or None``: what may be answered before the app is
            loaded (:func:`health_answer`, :func:`mcp_early_answer`). ``body`` is the request
            body (``b""`` when there is none); requests with a larger or undeclared
            (chunked) body are not judged: they wait for the app.
        on_failure: Called in the event loop with the exception if ``load`` or the app's
            lifespan startup fails (default: the exception is logged).
    """

    def __init__(
        self,
        load: Callable[[], App],
        early: Callable[[Scope, bytes], EarlyAnswer | None],
        *,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        self._load, self._early, self._on_failure = load, early, on_failure
        self._app: App | None = None
        self._lifespan: _Lifespan | None = None
        self._loading: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self.failure: BaseException | None = None
        """The exception that stopped the load, if it failed."""
        self.early_answers = 0
        """How many requests were answered before the app was loaded."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection (``lifespan``, ``http`` or ``websocket``)."""
        if scope["type"] == "lifespan":
            await self._serve_lifespan(scope, receive, send)
            return
        if self._app is None and self.failure is None and scope["type"] == "http":
            replay = await self._maybe_answer(scope, receive, send)
            if replay is None:
                return
            receive = replay
        await self._wait_loaded()
        if self._app is None:
            if scope["type"] == "http":
                await _send_answer(send, _json_answer(503, _STARTUP_FAILED))
            return
        await self._app(scope, receive, send)

    async def _maybe_answer(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """Answer ``scope`` early if ``early`` can (returns ``None``), else the ``receive`` that
        replays what was read."""
        headers = _headers(scope)
        declared = headers.get(b"content-length", b"0")
        if b"transfer-encoding" in headers or not declared.isdigit():
            return receive
        if int(declared) > MAX_EARLY_BODY_BYTES:
            return receive
        read: list[Message] = []
        body = b""
        while int(declared):
            message = await receive()
            read.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        answer = None if len(body) != int(declared) else self._early(scope, body)
        if answer is not None:
            self.early_answers += 1
            await _send_answer(send, answer)
            return None

        async def replay() -> Message:
            return read.pop(0) if read else await receive()

        return replay

    async def _serve_lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope.setdefault("state", {})
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._ready = asyncio.Event()
                self._loading = asyncio.ensure_future(self._start(state))
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self._stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _start(self, state: dict[str, Any]) -> None:
        assert self._ready is not None
        try:
            app = await asyncio.to_thread(self._load)
            lifespan = _Lifespan(app, state)
            await lifespan.startup()
            self._app, self._lifespan = app, lifespan
        except Exception as exc:  # reported to on_failure (else logged); requests get a 503
            self.failure = exc
            if self._on_failure is None:
                logger.exception("the server failed to start")
            else:
                self._on_failure(exc)
        finally:
            self._ready.set()

    async def _wait_loaded(self) -> None:
        if self._ready is None:  # served without a lifespan: load now
            self._ready = asyncio.Event()
            self._loading = asyncio.ensure_future(self._start({}))
        await self._ready.wait()

    async def _stop(self) -> None:
        if self._loading is not None:
            await self._loading
        if self._lifespan is not None:
            lifespan, self._lifespan = self._lifespan, None
            await lifespan.shutdown()


async def _send_answer(send: Send, answer: EarlyAnswer) -> None:
    status, headers, body = answer
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
