"""The MCP server: a real ``memlane mcp`` stdio subprocess driven by the SDK's own client."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent, TextResourceContents

from memlane import EpisodicMemory
from memlane.embeddings.fake import HashingEmbedder
from memlane.server.mcp import SESSION_URI, create_mcp_server, to_call_tool_result
from memlane.tools import RECALL_EPISODES, REMEMBER_EPISODE, tool_definitions
from tests.server.conftest import serve_in_thread

T = TypeVar("T")


def _run(main: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(main)


def _stdio(tmp_path: Path, *root_options: str) -> StdioServerParameters:
    """``python -m memlane <root options> mcp`` in ``tmp_path`` (without the caller's MEMLANE_* env)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "memlane", *root_options, "mcp"], env=env, cwd=str(tmp_path)
    )


def _payload(result: CallToolResult) -> dict[str, Any]:
    """The tool's JSON result, checking that text and structured content agree."""
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    payload: dict[str, Any] = json.loads(block.text)
    assert result.structured_content == payload
    return payload


def test_stdio_server_with_the_sdk_client(tmp_path: Path) -> None:
    db = tmp_path / "mcp.db"
    params = _stdio(
        tmp_path, "--db", str(db), "--embedder", "hashing", "--tenant", "alice", "--session", "s1"
    )

    async def main() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            assert client.server_info is not None and client.server_info.name == "memlane"
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert list(listed) == [d.name for d in tool_definitions()]
            assert list(listed)[:2] == [REMEMBER_EPISODE, RECALL_EPISODES]
            for definition in tool_definitions():
                tool = listed[definition.name]
                assert tool.input_schema == definition.parameters  # the same schema as memlane.tools
                assert tool.description == definition.description
            assert listed[RECALL_EPISODES].annotations is not None
            assert listed[RECALL_EPISODES].annotations.read_only_hint is True

            stored = await client.call_tool(
                REMEMBER_EPISODE,
                {
                    "event_type": "preference",
                    "content": "Alice prefers window seats",
                    "tags": ["travel"],
                    "importance": 8,
                    "detail": "full",
                },
            )
            assert stored.is_error is False
            episode = _payload(stored)["episode"]
            assert (episode["tenant_id"], episode["session_id"]) == ("alice", "s1")  # from the server options

            recalled = await client.call_tool(
                RECALL_EPISODES, {"query": "window seats", "tags": ["travel"], "detail": "full"}
            )
            result = _payload(recalled)
            assert (result["ok"], result["count"], result["ranked"]) == (True, 1, True)
            assert result["episodes"][0]["id"] == episode["id"]
            assert {"relevance", "recency", "importance", "score"} <= set(result["episodes"][0]["breakdown"])

            bad = await client.call_tool(REMEMBER_EPISODE, {"event_type": "note"})
            assert bad.is_error is True
            error = _payload(bad)["error"]
            assert error["type"] == "ValidationError"
            assert "content" in error["message"]

            blank = await client.call_tool(REMEMBER_EPISODE, {"event_type": "note", "content": "  "})
            assert blank.is_error is True
            assert _payload(blank)["error"]["type"] == "ValidationError"

    _run(main)
    with EpisodicMemory.open(db, embedder=HashingEmbedder(), tenant_id="alice", session_id="s1") as memory:
        assert [e.content for e in memory.iter_episodes()] == ["Alice prefers window seats"]


def test_tenant_and_scope_come_from_the_config_file_and_options(tmp_path: Path) -> None:
    """A config file alone configures the server; another tenant's server sees nothing."""
    config = tmp_path / "agent.yaml"
    config.write_text(
        "memory:\n  path: shared.db\n"
        "episodic_memory:\n  embedding_provider: hashing\n  scope: tenant\n  tenant_id: acme\n"
        "  default_limit: 2\n  max_limit: 3\n",
        encoding="utf-8",
    )

    async def main() -> None:
        async with Client(
            _stdio(tmp_path, "--config", str(config), "--session", "a"), read_timeout_seconds=60
        ) as acme:
            listed = (await acme.list_tools()).tools
            assert listed[1].input_schema["properties"]["limit"]["maximum"] == 3
            for n in range(4):
                await acme.call_tool(REMEMBER_EPISODE, {"event_type": "note", "content": f"acme note {n}"})
            assert _payload(await acme.call_tool(RECALL_EPISODES, {"query": "note"}))["count"] == 2  # default
            assert _payload(await acme.call_tool(RECALL_EPISODES, {"limit": 3}))["count"] == 3
            over = _payload(await acme.call_tool(RECALL_EPISODES, {"limit": 50}))  # above max_limit: refused
            assert over["error"] == {
                "type": "ValidationError",
                "message": "limit must be <= 3, got 50",
                "tool": RECALL_EPISODES,
            }

        other = _stdio(tmp_path, "--config", str(config), "--tenant", "globex", "--scope", "tenant")
        async with Client(other, read_timeout_seconds=60) as globex:
            assert _payload(await globex.call_tool(RECALL_EPISODES, {"query": "acme note"}))["count"] == 0

    _run(main)


def test_stdio_end_to_end_with_the_real_local_model(tmp_path: Path) -> None:
    params = _stdio(tmp_path, "--db", str(tmp_path / "real.db"))

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            for content in (
                "The user always wants a window seat when flying",
                "Quarterly revenue grew by twelve percent",
                "The user's dog is called Biscuit",
            ):
                result = await client.call_tool(REMEMBER_EPISODE, {"event_type": "fact", "content": content})
                assert result.is_error is False
            recalled = _payload(
                await client.call_tool(RECALL_EPISODES, {"query": "Where to sit on a plane?"})
            )
            assert recalled["episodes"][0]["content"].startswith("The user always wants a window seat")

    _run(main)


def test_streamable_http_transport(tmp_path: Path) -> None:
    memory = EpisodicMemory.open(tmp_path / "http.db", embedder=HashingEmbedder(), tenant_id="bob")
    server = create_mcp_server(memory, max_limit=5)
    try:
        with serve_in_thread(server.streamable_http_app()) as url:

            async def main() -> None:
                async with Client(f"{url}/mcp", read_timeout_seconds=30) as client:
                    names = [tool.name for tool in (await client.list_tools()).tools]
                    assert names == [d.name for d in tool_definitions()]
                    stored = _payload(
                        await client.call_tool(
                            REMEMBER_EPISODE, {"event_type": "note", "content": "over HTTP", "detail": "full"}
                        )
                    )
                    assert stored["episode"]["tenant_id"] == "bob"
                    recalled = _payload(await client.call_tool(RECALL_EPISODES, {"query": "HTTP"}))
                    assert recalled["count"] == 1

            _run(main)
    finally:
        memory.close()


def test_in_process_server_and_error_mapping(tmp_path: Path) -> None:
    memory = EpisodicMemory.open(tmp_path / "x.db", embedder=HashingEmbedder(), tenant_id="t")

    async def main() -> None:
        async with Client(create_mcp_server(memory)) as client:
            unknown_arg = await client.call_tool(RECALL_EPISODES, {"limit": "many"})
            assert unknown_arg.is_error is True
            assert _payload(unknown_arg)["error"]["type"] == "ValidationError"
            memory.close()
            closed = await client.call_tool(RECALL_EPISODES, {})
            assert _payload(closed)["error"]["type"] == "StoreClosedError"

    _run(main)
    ok = to_call_tool_result({"ok": True, "count": 0})
    assert ok.is_error is False and ok.structured_content == {"ok": True, "count": 0}
    assert to_call_tool_result({"ok": False, "error": {"type": "X", "message": "m"}}).is_error is True


def test_building_the_server_configures_no_logging(tmp_path: Path) -> None:
    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    with EpisodicMemory.open(tmp_path / "x.db", embedder=HashingEmbedder()) as memory:
        create_mcp_server(memory)
    assert (list(root.handlers), root.level) == before


def _start_streamable_http(tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    """``memlane mcp --transport streamable-http --port 0`` and the URL it printed at start."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
    argv = [sys.executable, "-m", "memlane", "--db", str(tmp_path / "h.db"), "--embedder", "hashing"]
    process = subprocess.Popen(
        [*argv, "--tenant", "t", "mcp", "--transport", "streamable-http", "--port", "0"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()  # the first line: logs are at warning level
    found = re.search(r"(http://127\.0\.0\.1:\d+/mcp)\s*$", line)
    if found is None:
        process.kill()
        raise AssertionError(f"no URL at start: {line!r}")
    return process, found.group(1)


def test_streamable_http_prints_its_url_at_start(tmp_path: Path) -> None:
    process, url = _start_streamable_http(tmp_path)
    try:

        async def main() -> None:
            async with Client(url, read_timeout_seconds=30) as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                assert names == [d.name for d in tool_definitions()]

        _run(main)  # the URL is printed once the server accepts connections
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_stored_conversations_are_resources(tmp_path: Path) -> None:
    memory = EpisodicMemory.open(tmp_path / "r.db", embedder=HashingEmbedder(), tenant_id="t")
    messages = [{"role": "user", "content": "I moved to Lisbon"}, {"role": "assistant", "content": "Noted."}]
    memory.sessions.store_session("chat 1/é", messages, agent_id="bot", user_id="ana")
    memory.sessions.store_session("a%41b", messages[:1], agent_id="bot", user_id="ana")
    memory.sessions.store_session("someone-else", messages, agent_id="bot", user_id="bo")

    async def main() -> None:
        async with Client(create_mcp_server(memory, agent_id="bot", user_id="ana")) as client:
            listed = (await client.list_resources()).resources
            assert sorted(r.name for r in listed) == ["a%41b", "chat 1/é"]
            templates = (await client.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == [SESSION_URI]
            for resource in listed:
                read = (await client.read_resource(resource.uri)).contents
                assert len(read) == 1 and read[0].mime_type == "application/json"
                assert isinstance(read[0], TextResourceContents)
                body = json.loads(read[0].text)
                assert body["session_id"] == resource.name and body["user_id"] == "ana"
                assert [m["content"] for m in body["messages"]] == [
                    m["content"] for m in messages[: len(body["messages"])]
                ]
            with pytest.raises(MCPError, match="no stored conversation 'someone-else'"):
                await client.read_resource("memlane://sessions/someone-else")

    try:
        _run(main)
    finally:
        memory.close()
