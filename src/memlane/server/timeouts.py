"""Read timeouts for the servers memlane runs with uvicorn (#22 item 15).

uvicorn closes idle keep-alive connections (``timeout_keep_alive``, 5 s) but has no timeout
for a request that arrives slowly: a client sending one header byte a minute (or a body
that never ends) holds its connection, and its thread-pool worker, forever.
:class:`TimedH11Protocol` is uvicorn's h11 protocol plus two deadlines from the start of each
request (a new connection, or the end of the previous response):

* :data:`HEADER_TIMEOUT_S`: the request line and headers must have arrived;
* :data:`BODY_TIMEOUT_S`: the body too.

Past a deadline the connection is closed (the endpoint, if it started, sees a disconnect).
``memlane serve`` and ``memlane mcp --transport streamable-http`` run with it
(:data:`UVICORN_OPTIONS`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["BODY_TIMEOUT_S", "HEADER_TIMEOUT_S", "UVICORN_OPTIONS", "TimedH11Protocol"]

HEADER_TIMEOUT_S = 10.0
"""Seconds a request's line and headers may take to arrive."""
BODY_TIMEOUT_S = 30.0
"""Seconds a whole request (headers and body) may take to arrive."""


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header and a body read deadline per request."""

    _read_timer: asyncio.TimerHandle | None = None
    _phase = "headers"

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the connection and its first request's header deadline."""
        super().connection_made(transport)
        self._arm("headers", HEADER_TIMEOUT_S)

    def on_response_complete(self) -> None:
        """Finish the response; the next request's header deadline starts now."""
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm("headers", HEADER_TIMEOUT_S)

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the deadline with the connection."""
        self._disarm()
        super().connection_lost(exc)

    def _arm(self, phase: str, delay: float) -> None:
        self._disarm()
        self._phase = phase
        self._read_timer = self.loop.call_later(delay, self.read_deadline)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def read_deadline(self) -> None:
        """The deadline's callback: close the connection if the request has not arrived in time."""
        self._read_timer = None
        if self.transport.is_closing():
            return
        state: Any = self.conn.their_state
        if self._phase == "headers" and state is h11.SEND_BODY:  # headers in time: the body may go on
            self._arm("body", BODY_TIMEOUT_S - HEADER_TIMEOUT_S)
            return
        if state in (h11.IDLE, h11.SEND_BODY):  # still waiting for headers or body
            self.transport.close()


UVICORN_OPTIONS: dict[str, Any] = {"http": TimedH11Protocol, "timeout_keep_alive": 5}
"""What memlane passes to ``uvicorn.run`` besides the app, host, port and log level."""
