"""What a lone surrogate does to the transports (the errors themselves: tests/server/test_error_parity.py).

A real uvicorn keeps the connection after refusing a body with a lone surrogate (``"\\udc00"``
in ASCII JSON), and a real ``memlane mcp`` stdio process answers every request carrying one,
also those the SDK cannot decode.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the 'server' extra is not installed")
pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")
import httpx

from memlane import EpisodicMemory
from memlane.config.file import load_config
from memlane.embeddings.fake import HashingEmbedder
from memlane.server.http import create_app
from memlane.tools import RECALL_EPISODES
from tests.mcp_stdio import RawMcpClient
from tests.server.conftest import serve_in_thread

KEY = "input-policy-key-0123456789"


@dataclass
class Interfaces:
    """A real HTTP server and a real MCP stdio server, each on its own SQLite file."""

    http: httpx.Client
    mcp: RawMcpClient


@pytest.fixture(scope="module")
def interfaces(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Interfaces]:
    root = tmp_path_factory.mktemp("interfaces")
    settings = load_config({"server": {"api_keys": {KEY: "t"}}}).server
    app = create_app(lambda: EpisodicMemory.open(root / "http.db", embedder=HashingEmbedder()), settings)
    (root / "mcp.yaml").write_text(
        "memory:\n  path: mcp.db\nepisodic_memory:\n  embedding_provider: hashing\n  tenant_id: t\n",
        encoding="utf-8",
    )
    with (
        serve_in_thread(app) as url,
        httpx.Client(base_url=url, headers={"X-API-Key": KEY}, timeout=30) as http,
        RawMcpClient(root, "--config", str(root / "mcp.yaml")) as mcp,
    ):
        yield Interfaces(http, mcp)
        assert http.get("/v1/episodes").json()["count"] == 0  # nothing was stored by a bad call
        assert mcp.call_tool(RECALL_EPISODES, {})["count"] == 0


def test_http_connection_is_reused_after_a_rejected_surrogate(interfaces: Interfaces) -> None:
    def local_port(response: httpx.Response) -> Any:
        return response.extensions["network_stream"].get_extra_info("client_addr")

    bad = json.dumps({"event_type": "n", "content": "x", "metadata": {"v": "\udc00"}}).encode("ascii")
    first = interfaces.http.post("/v1/episodes", content=bad, headers={"content-type": "application/json"})
    assert first.status_code == 422
    assert first.json()["error"]["message"].startswith("metadata.v contains a lone surrogate (U+DC00)")
    second = interfaces.http.get("/health")
    assert second.status_code == 200
    assert local_port(first) == local_port(second)  # the same TCP connection: not dropped


def test_mcp_answers_every_request_with_a_surrogate(interfaces: Interfaces) -> None:
    # outside the tool arguments: a JSON-RPC "invalid params" error, not silence
    response = interfaces.mcp.request("tools/list", {"_meta": {"note": "\udc00"}})
    assert response["error"]["code"] == -32602
    assert response["error"]["message"].startswith("params._meta.note contains a lone surrogate (U+DC00)")
    # a tool name with one: the tool error for an unknown tool
    unknown = interfaces.mcp.call_tool("remember\udc00", {"event_type": "n", "content": "x"})
    assert unknown["error"]["type"] == "UnknownTool"
    # and the server still works
    assert interfaces.mcp.call_tool(RECALL_EPISODES, {"tags": "ops"})["ok"] is True


def test_mcp_answers_an_unknown_tool_with_the_json_error(interfaces: Interfaces) -> None:
    answer = interfaces.mcp.call_tool("nope", {})
    assert answer["ok"] is False
    assert answer["error"]["type"] == "UnknownTool"
    assert answer["error"]["message"].startswith("unknown tool 'nope'; available: remember_episode")
