"""One argument policy: the same bad input gets the same error from Python, tools, HTTP and MCP.

Each case goes through the Python API, ``handle_tool_call``, the HTTP API (a real uvicorn,
httpx, the body written as ASCII JSON so a lone surrogate travels as ``"\\udc00"``) and the
MCP server (a real ``memlane mcp`` stdio subprocess, raw JSON-RPC lines), and the four
answers are compared: error type and message. Nothing is stored by any of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the 'server' extra is not installed")
pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")
import httpx

from memlane import EpisodicMemory
from memlane.config.file import load_config
from memlane.embeddings.fake import HashingEmbedder
from memlane.errors import MemlaneError
from memlane.server.http import create_app
from memlane.tools import RECALL_EPISODES, REMEMBER_EPISODE, MemoryTools
from memlane.validation import MAX_LIMIT
from tests.mcp_stdio import RawMcpClient
from tests.server.conftest import serve_in_thread

KEY = "input-policy-key-0123456789"


@dataclass(frozen=True)
class Case:
    """A bad call: the tool, its arguments, and the expected error message (a prefix for unknown ones)."""

    id: str
    tool: str
    arguments: dict[str, Any]
    message: str
    python: bool = True  # the Python API has the argument (unknown keywords are Python's TypeError)


SURROGATE = "text must be valid Unicode (encodable as UTF-8)"
CASES = [
    Case(
        "content-surrogate",
        REMEMBER_EPISODE,
        {"event_type": "n", "content": "a\udc00b"},
        f"content contains a lone surrogate (U+DC00) at character 1; {SURROGATE}",
    ),
    Case(
        "tag-surrogate",
        REMEMBER_EPISODE,
        {"event_type": "n", "content": "ok", "tags": ["a\udc00b"]},
        f"tags[0] contains a lone surrogate (U+DC00) at character 1; {SURROGATE}",
    ),
    Case(
        "event-type-surrogate",
        REMEMBER_EPISODE,
        {"event_type": "\ud83d", "content": "ok"},
        f"event_type contains a lone surrogate (U+D83D) at character 0; {SURROGATE}",
    ),
    Case(
        "blank-content",
        REMEMBER_EPISODE,
        {"event_type": "n", "content": "\u200b \u2060"},
        "content must be a non-empty string (it has only whitespace, invisible or control characters)",
    ),
    Case(
        "importance-string",
        REMEMBER_EPISODE,
        {"event_type": "n", "content": "ok", "importance": "8"},
        "importance must be a number (clamped to 1-10) or null, got string",
    ),
    Case(
        "importance-bool",
        REMEMBER_EPISODE,
        {"event_type": "n", "content": "ok", "importance": True},
        "importance must be a number (clamped to 1-10) or null, got boolean",
    ),
    Case(
        "tags-number",
        REMEMBER_EPISODE,
        {"event_type": "n", "content": "ok", "tags": 5},
        "tags must be a list of strings, got integer",
    ),
    Case(
        "event-type-number",
        REMEMBER_EPISODE,
        {"event_type": 5, "content": "ok"},
        "event_type must be a string, got integer",
    ),
    Case("limit-string", RECALL_EPISODES, {"limit": "5"}, "limit must be a positive integer, got string"),
    Case("limit-float", RECALL_EPISODES, {"limit": 5.0}, "limit must be a positive integer, got number"),
    Case("limit-zero", RECALL_EPISODES, {"limit": 0}, "limit must be >= 1, got 0"),
    Case("limit-huge", RECALL_EPISODES, {"limit": 2**63}, f"limit must be <= {MAX_LIMIT}, got {2**63}"),
    Case(
        "query-surrogate",
        RECALL_EPISODES,
        {"query": "deploy \udc00"},
        f"query contains a lone surrogate (U+DC00) at character 7; {SURROGATE}",
    ),
    Case(
        "query-blank",
        RECALL_EPISODES,
        {"query": "\ufeff"},
        "query must be a non-empty string (it has only whitespace, invisible or control characters)",
    ),
    Case(
        "unknown-remember",
        REMEMBER_EPISODE,
        {"event_type": "n", "content": "ok", "tenant_id": "other"},
        "unknown argument(s) tenant_id; remember_episode takes",
        python=False,
    ),
    Case(
        "unknown-recall",
        RECALL_EPISODES,
        {"tenant_id": "other"},
        "unknown argument(s) tenant_id; recall_episodes takes",
        python=False,
    ),
    Case(
        "preset-unknown",
        RECALL_EPISODES,
        {"preset": "fast"},
        "preset must be one of",
        python=False,  # Python takes weights=, with its own message
    ),
]

Answer = tuple[str, str]
"""(error type, message) as an interface reported it."""


@dataclass
class Interfaces:
    """The four ways in, each bound to its own fresh SQLite database."""

    python: EpisodicMemory
    tools: MemoryTools
    http: httpx.Client
    mcp: RawMcpClient

    def answers(self, case: Case) -> dict[str, Answer]:
        answers = {
            "tools": self._tool_answer(self.tools.handle_tool_call(case.tool, case.arguments)),
            "http": self._http_answer(case),
            "mcp": self._tool_answer(self.mcp.call_tool(case.tool, case.arguments)),
        }
        if case.python:
            call: Callable[..., Any] = (
                self.python.remember_episode if case.tool == REMEMBER_EPISODE else self.python.recall_episodes
            )
            try:
                call(**case.arguments)
            except MemlaneError as exc:
                answers["python"] = (type(exc).__name__, str(exc))
            else:
                answers["python"] = ("no error", "")
        return answers

    @staticmethod
    def _tool_answer(result: dict[str, Any]) -> Answer:
        assert result.get("ok") is False, result
        return result["error"]["type"], result["error"]["message"]

    def _http_answer(self, case: Case) -> Answer:
        path = "/v1/episodes" if case.tool == REMEMBER_EPISODE else "/v1/recall"
        body = json.dumps(case.arguments).encode("ascii")  # lone surrogates travel as \\udcxx escapes
        response = self.http.post(path, content=body, headers={"content-type": "application/json"})
        assert response.status_code == 422, response.text
        assert response.headers.get("connection", "").lower() != "close"  # keep-alive kept
        error = response.json()["error"]
        return error["type"], error["message"]


@pytest.fixture(scope="module")
def interfaces(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Interfaces]:
    root = tmp_path_factory.mktemp("interfaces")
    python = EpisodicMemory.open(root / "python.db", embedder=HashingEmbedder(), tenant_id="t")
    tools_memory = EpisodicMemory.open(root / "tools.db", embedder=HashingEmbedder(), tenant_id="t")
    tools = MemoryTools(tools_memory, max_limit=MAX_LIMIT)
    settings = load_config({"server": {"api_keys": {KEY: "t"}}}).server
    app = create_app(
        lambda: EpisodicMemory.open(root / "http.db", embedder=HashingEmbedder()),
        settings,
        max_limit=MAX_LIMIT,
    )
    (root / "mcp.yaml").write_text(
        "memory:\n  path: mcp.db\nepisodic_memory:\n  embedding_provider: hashing\n  tenant_id: t\n"
        f"  max_limit: {MAX_LIMIT}\n",
        encoding="utf-8",
    )
    with (
        serve_in_thread(app) as url,
        httpx.Client(base_url=url, headers={"X-API-Key": KEY}, timeout=30) as http,
        RawMcpClient(root, "--config", str(root / "mcp.yaml")) as mcp,
    ):
        yield Interfaces(python, tools, http, mcp)
        # nothing was stored by any bad call
        assert python.count() == 0 and tools_memory.count() == 0
        assert http.get("/v1/episodes").json()["count"] == 0
        assert mcp.call_tool(RECALL_EPISODES, {})["count"] == 0
    python.close()
    tools_memory.close()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_same_bad_input_gets_the_same_error_everywhere(interfaces: Interfaces, case: Case) -> None:
    answers = interfaces.answers(case)
    assert {kind for kind, _ in answers.values()} == {"ValidationError"}, answers
    for where, (_, message) in answers.items():
        assert message.startswith(case.message), (where, message)
    if not case.message.endswith("takes"):  # unknown arguments: each interface lists its own
        assert len({message for _, message in answers.values()}) == 1, answers


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
