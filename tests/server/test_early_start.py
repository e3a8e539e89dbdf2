"""The served HTTP interfaces answer the handshake while the app loads (issue #24 item 7).

:class:`memlane.server.front.LoadingFront` is served by a real uvicorn; its loader is held on a
gate, so "during the load" is a state the test controls, not a race. The early answers are
compared with the real app's answers to the same requests once it is loaded, and requests sent
during the load must be served once it ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp")
import mcp_types.version
from mcp import Client

from memlane import EpisodicMemory
from memlane.config.file import hash_api_key, load_config
from memlane.embeddings.fake import HashingEmbedder
from memlane.server import mcp_handshake
from memlane.server.front import LoadingFront, health_answer, mcp_early_answer
from memlane.server.http import create_app
from memlane.server.mcp import create_mcp_server, streamable_http_app
from memlane.tools import REMEMBER_EPISODE, tool_definitions
from tests.server.conftest import serve_in_thread

KEY = "mlk_early-start-test-key"
STREAM = {"Accept": "application/json, text/event-stream"}
MODERN = mcp_handshake.MODERN_PROTOCOL_VERSIONS[-1]


class Gate:
    """A loader held until :meth:`open` (records whether it ran)."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build, self._open, self.loaded = build, threading.Event(), threading.Event()

    def open(self) -> None:
        self._open.set()

    def __call__(self) -> Any:
        assert self._open.wait(60), "the test never opened the gate"
        app = self._build()
        self.loaded.set()
        return app


@contextmanager
def _front(build: Callable[[], Any], early: Any) -> Iterator[tuple[str, Gate, LoadingFront]]:
    gate = Gate(build)
    front = LoadingFront(gate, early)
    try:
        with serve_in_thread(front) as url:
            yield url, gate, front
    finally:
        gate.open()  # never leave the loader thread waiting


def _initialize(version: str, request_id: Any = 1) -> dict[str, Any]:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


def _discover(version: str = MODERN, request_id: Any = 1, **capabilities: Any) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "0.1.0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": "server/discover", "params": {"_meta": meta}}


def _discover_headers(version: str = MODERN) -> dict[str, str]:
    return {**STREAM, "MCP-Protocol-Version": version, "MCP-Method": "server/discover"}


EARLY_MCP_REQUESTS: list[tuple[dict[str, Any], dict[str, str]]] = [
    *[(_initialize(v), STREAM) for v in mcp_handshake.HANDSHAKE_PROTOCOL_VERSIONS],
    (_initialize("1999-01-01", "init-x"), STREAM),
    (_discover(), _discover_headers()),
    (_discover(request_id="d-1", roots={"listChanged": True}, sampling={}), _discover_headers()),
]


def _answer(response: httpx.Response) -> tuple[int, dict[str, str], Any]:
    """Status, headers (but the date and server) and the JSON-RPC message (the one SSE event's
    data, or the JSON body)."""
    kind = response.headers["content-type"]
    headers = {k: v for k, v in response.headers.items() if k not in ("date", "server")}
    text = response.text
    if kind.startswith("text/event-stream"):
        data = [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]
        assert len(data) == 1, text
        text = data[0]
    return response.status_code, headers, json.loads(text)


def _mcp_app(path: Path) -> Callable[[], Any]:
    def build() -> Any:
        memory = EpisodicMemory.open(path, embedder=HashingEmbedder(), tenant_id="bob")
        return streamable_http_app(create_mcp_server(memory, max_limit=5))

    return build


def test_the_modern_constants_are_the_sdks() -> None:
    assert mcp_handshake.MODERN_PROTOCOL_VERSIONS == mcp_types.version.MODERN_PROTOCOL_VERSIONS


def test_mcp_early_answers_are_the_sdks_and_waiting_requests_are_served(tmp_path: Path) -> None:
    with (
        _front(_mcp_app(tmp_path / "m.db"), mcp_early_answer("/mcp")) as (url, gate, front),
        ThreadPoolExecutor(4) as pool,
    ):
        post = httpx.Client(timeout=60)
        early = [_answer(post.post(f"{url}/mcp", json=r, headers=h)) for r, h in EARLY_MCP_REQUESTS]
        assert not gate.loaded.is_set() and front.early_answers == len(EARLY_MCP_REQUESTS)
        # sent during the load: not early-answerable, so they wait for the app
        tools_list = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
        waiting: list[Future[httpx.Response]] = [
            pool.submit(
                httpx.post,
                f"{url}/mcp",
                json=tools_list,
                headers={**STREAM, "MCP-Protocol-Version": "2025-06-18"},
                timeout=60,
            ),
            pool.submit(  # a discover the early path refuses (the header disagrees)
                httpx.post,
                f"{url}/mcp",
                json=_discover(),
                headers=_discover_headers("2025-06-18"),
                timeout=60,
            ),
        ]
        gate.open()
        listed = _answer(waiting[0].result(60))
        assert listed[0] == 200 and [t["name"] for t in listed[2]["result"]["tools"]] == [
            d.name for d in tool_definitions()
        ]
        refused = waiting[1].result(60)
        assert "error" in _status_and_json(refused)[1]  # the SDK's own refusal
        assert gate.loaded.is_set()
        # the same requests, now answered by the SDK itself
        own = [_answer(post.post(f"{url}/mcp", json=r, headers=h)) for r, h in EARLY_MCP_REQUESTS]
        assert front.early_answers == len(EARLY_MCP_REQUESTS)
        assert early == own
        post.close()


def test_only_plain_mcp_requests_are_answered_early(tmp_path: Path) -> None:
    unanswered: list[tuple[dict[str, Any], dict[str, str]]] = [
        (_initialize("2025-06-18"), {"Accept": "application/json"}),  # the SDK refuses it (406)
        (_initialize("2025-06-18"), {**STREAM, "Origin": "http://evil.example"}),
        (_initialize("2025-06-18"), {**STREAM, "Host": "evil.example"}),
        (_initialize("2025-06-18"), {**STREAM, "MCP-Protocol-Version": "2025-06-18"}),
        (_discover(), {**_discover_headers(), "MCP-Method": "tools/list"}),
        (_discover("2099-01-01"), _discover_headers("2099-01-01")),
        ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, STREAM),
    ]
    with (
        _front(_mcp_app(tmp_path / "m.db"), mcp_early_answer("/mcp")) as (url, gate, front),
        ThreadPoolExecutor(len(unanswered)) as pool,
    ):
        futures = [
            pool.submit(httpx.post, f"{url}/mcp", json=r, headers=h, timeout=60) for r, h in unanswered
        ]
        gate.open()
        waited = [_status_and_json(f.result(60)) for f in futures]
        assert front.early_answers == 0
        again = [
            _status_and_json(httpx.post(f"{url}/mcp", json=r, headers=h, timeout=60)) for r, h in unanswered
        ]
        assert waited == again  # the SDK's own answers, as if there were no front


def _status_and_json(response: httpx.Response) -> tuple[int, Any]:
    if "json" in response.headers.get("content-type", "") or "event-stream" in response.headers.get(
        "content-type", ""
    ):
        return response.status_code, _answer(response)[2]
    return response.status_code, response.text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdk_client_session_goes_on_through_the_front(tmp_path: Path, mode: str) -> None:
    with _front(_mcp_app(tmp_path / "m.db"), mcp_early_answer("/mcp")) as (url, gate, front):
        opener = threading.Timer(0.5, gate.open)  # the load ends while the client is connected

        async def main() -> None:
            async with Client(f"{url}/mcp", mode=mode, read_timeout_seconds=60) as client:
                assert front.early_answers == 1  # discover (auto) or initialize (legacy)
                opener.start()
                names = [tool.name for tool in (await client.list_tools()).tools]
                assert names == [d.name for d in tool_definitions()]
                stored = await client.call_tool(REMEMBER_EPISODE, {"event_type": "note", "content": "early"})
                assert stored.is_error is False

        anyio.run(main)
        opener.join()
        assert gate.loaded.is_set()


def test_health_early_answer_is_the_apps_and_waiting_requests_are_served(tmp_path: Path) -> None:
    settings = load_config({"server": {"api_keys": {hash_api_key(KEY): "acme"}}}).server

    def build() -> Any:
        memory = EpisodicMemory.open(tmp_path / "h.db", embedder=HashingEmbedder())
        return create_app(lambda: memory, settings, max_limit=5)

    def answer(response: httpx.Response) -> tuple[int, dict[str, str], bytes]:
        headers = {k: v for k, v in response.headers.items() if k not in ("date", "server")}
        return response.status_code, headers, response.content

    auth = {"Authorization": f"Bearer {KEY}"}
    with _front(build, health_answer) as (url, gate, front), ThreadPoolExecutor(2) as pool:
        early = answer(httpx.get(f"{url}/health", timeout=60))
        assert not gate.loaded.is_set() and front.early_answers == 1
        remembered = pool.submit(
            httpx.post,
            f"{url}/v1/episodes",
            json={"event_type": "note", "content": "sent while loading"},
            headers=auth,
            timeout=60,
        )
        with_query = pool.submit(httpx.get, f"{url}/health?x=1", timeout=60)  # left to the app
        gate.open()
        assert remembered.result(60).status_code == 201
        assert with_query.result(60).status_code == 200
        assert answer(httpx.get(f"{url}/health", timeout=60)) == early  # now the app's own answer
        assert front.early_answers == 1
        listed = httpx.get(f"{url}/v1/episodes", headers=auth, timeout=60).json()
        assert [e["content"] for e in listed["episodes"]] == ["sent while loading"]


def test_a_failed_load_is_reported_and_waiting_requests_get_a_503() -> None:
    failures: list[BaseException] = []
    opened = threading.Event()

    def fail() -> Any:
        assert opened.wait(60)
        raise RuntimeError("no store")

    front = LoadingFront(fail, health_answer, on_failure=failures.append)
    try:
        with serve_in_thread(front) as url, ThreadPoolExecutor(1) as pool:
            assert httpx.get(f"{url}/health", timeout=60).status_code == 200
            waiting = pool.submit(httpx.get, f"{url}/v1/episodes", timeout=60)
            opened.set()
            response = waiting.result(60)
            assert response.status_code == 503
            assert response.json()["error"]["type"] == "StartupError"
            assert httpx.get(f"{url}/health", timeout=60).status_code == 503  # no early answer any more
    finally:
        opened.set()
    assert [str(f) for f in failures] == ["no store"] and front.failure is failures[0]


def _serve(tmp_path: Path, config: str) -> subprocess.CompletedProcess[str]:
    """``memlane --config memlane.yaml serve`` (uvicorn's default log level) with ``config``, to its exit."""
    (tmp_path / "memlane.yaml").write_text(config, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
    return subprocess.run(
        [sys.executable, "-m", "memlane", "--config", "memlane.yaml", "serve"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


def test_memlane_serve_reports_a_failed_load_and_exits(tmp_path: Path) -> None:
    """The store cannot be opened (its path is a directory): the app fails to load after the socket
    is already listening; the command still stops with the store's message and a failing status."""
    (tmp_path / "adir").mkdir()
    key = "sha256:" + "ab" * 32
    done = _serve(
        tmp_path,
        "memory:\n  path: adir\nepisodic_memory:\n  embedding_provider: hashing\n"
        f"server:\n  port: 0\n  api_keys:\n    {key}: acme\n",
    )
    assert done.returncode != 0
    assert "unable to open database file" in done.stderr
    assert "Uvicorn running" in done.stderr  # it was listening (/health answered) when the load failed


def test_memlane_serve_without_api_keys_refuses_before_listening(tmp_path: Path) -> None:
    """No API keys: every request would be refused, so the command stops before binding the port
    (it never announces a server that is running)."""
    done = _serve(
        tmp_path,
        "memory:\n  path: x.db\nepisodic_memory:\n  embedding_provider: hashing\nserver:\n  port: 0\n",
    )
    assert done.returncode != 0
    assert "server.api_keys: no API keys configured" in done.stderr
    assert "Uvicorn running" not in done.stderr
