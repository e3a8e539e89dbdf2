"""Fixtures for the server tests: a real uvicorn on 127.0.0.1 (ephemeral port) in a thread."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("uvicorn")
import uvicorn


@contextmanager
def serve_in_thread(app: Any, *, timeout_s: float = 20.0) -> Iterator[str]:
    """Run ``app`` under a real uvicorn server on 127.0.0.1 and yield its base URL.

    The socket is bound before the server starts (port 0: the kernel picks a free port),
    so there is no race for the port. The server is stopped (lifespan shutdown included)
    when the block exits.
    """
    # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on such sockets, and without it
    # every response waits ~40 ms for the client's delayed ACK (Nagle).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout_s)
        sock.close()
