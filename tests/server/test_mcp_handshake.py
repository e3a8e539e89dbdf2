"""``memlane mcp`` (stdio) answers ``initialize`` before the SDK loads (issue #24 item 7): the early
answer is the SDK's own answer, the SDK's duplicate is dropped, and the conversation goes on.

The SDK's own answer is obtained from the same real process by sending the request as the
*second* line (after a ``ping``, which the early handshake leaves to the SDK), so both come from
``memlane mcp`` as users run it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
import mcp_types.version
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memlane.server import mcp_handshake
from memlane.server.mcp_handshake import early_answerable, initialize_reply
from memlane.tools import REMEMBER_EPISODE, tool_definitions


def _initialize(version: Any, request_id: Any = 1, **params: Any) -> dict[str, Any]:
    body = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": {**body, **params}}


PLAIN_REQUESTS = [
    *[_initialize(v) for v in mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS],
    _initialize("1999-01-01"),  # unsupported: the newest is offered
    _initialize("2026-07-28", request_id="init-1"),  # a modern revision is not a handshake one
    _initialize("", request_id=0),
    _initialize(
        "2025-06-18",
        capabilities={
            "roots": {"listChanged": True},
            "sampling": {},
            "elicitation": {},
            "experimental": {"x": {}},
        },
        clientInfo={"name": "inspector", "version": "1.2", "title": "MCP Inspector"},
    ),
]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}


def _start(tmp_path: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "memlane",
        "--db",
        str(tmp_path / "m.db"),
        "--embedder",
        "hashing",
        "mcp",
    ]
    return subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
        cwd=tmp_path,
    )


def _lines(*messages: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def test_the_constants_are_the_sdks() -> None:
    assert mcp_handshake.HANDSHAKE_PROTOCOL_VERSIONS == mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS
    assert mcp_handshake.HANDSHAKE_PROTOCOL_VERSIONS[-1] == mcp_types.version.LATEST_HANDSHAKE_VERSION


def test_only_the_plain_initialize_shape_is_answered_early() -> None:
    assert all(early_answerable(r) for r in PLAIN_REQUESTS)
    refused = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "initialize", "params": PLAIN_REQUESTS[0]["params"]},  # a notification
        _initialize(5),
        _initialize("2025-06-18", request_id=True),
        _initialize("2025-06-18", request_id="x" * 201),
        _initialize("2025-06-18", capabilities={"roots": {"listChanged": "yes"}}),
        _initialize("2025-06-18", capabilities={"sampling": {"tools": {"x": 1}}}),
        _initialize("2025-06-18", capabilities={"tasks": {}}),
        _initialize("2025-06-18", clientInfo={"name": "t"}),
        _initialize("2025-06-18", clientInfo={"name": "t", "version": "0", "icons": []}),
        {**_initialize("2025-06-18"), "extra": 1},
        {**_initialize("2025-06-18"), "params": {**_initialize("2025-06-18")["params"], "_meta": {}}},
    ]
    assert not any(early_answerable(r) for r in refused)


def test_the_early_answer_is_the_sdks_own_and_is_given_once(tmp_path: Path) -> None:
    ping = {"jsonrpc": "2.0", "id": "ping-0", "method": "ping"}
    tools = {"jsonrpc": "2.0", "id": "tools", "method": "tools/list"}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    runs = []
    for i, request in enumerate(PLAIN_REQUESTS):
        (tmp_path / f"own{i}").mkdir()
        (tmp_path / f"early{i}").mkdir()
        own, early = _start(tmp_path / f"own{i}"), _start(tmp_path / f"early{i}")
        runs.append((request, own, _lines(ping, request), early, _lines(request, initialized, tools)))
    for request, own, own_input, early, early_input in runs:
        own_out, _ = own.communicate(own_input, timeout=120)
        early_out, early_err = early.communicate(early_input, timeout=120)
        own_replies = [json.loads(line) for line in own_out.splitlines()]
        sdk_answer = next(r for r in own_replies if r.get("id") == request["id"])
        expected = initialize_reply(request)
        assert sdk_answer == json.loads(expected)  # the SDK's own answer to the same request
        early_lines = early_out.splitlines()
        assert early_lines[0].decode() == expected  # answered first, byte for byte
        replies = [json.loads(line) for line in early_lines]
        assert [r.get("id") for r in replies].count(request["id"]) == 1  # the SDK's copy was dropped
        listed = next(r for r in replies if r.get("id") == "tools")
        assert [t["name"] for t in listed["result"]["tools"]] == [d.name for d in tool_definitions()]
        assert b"differed" not in early_err


def test_a_first_line_the_sdk_refuses_gets_the_sdks_answer(tmp_path: Path) -> None:
    bad = _initialize(5, request_id=7)
    process = _start(tmp_path)
    out, _ = process.communicate(_lines(bad), timeout=120)
    (reply,) = [json.loads(line) for line in out.splitlines()]
    assert reply["id"] == 7 and reply["error"]["code"] == -32602


def test_the_sdk_client_in_legacy_mode_talks_to_the_early_server(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memlane", "--db", str(tmp_path / "m.db"), "--embedder", "hashing", "mcp"],
        env=_env(),
        cwd=str(tmp_path),
    )

    async def main() -> None:
        async with Client(params, read_timeout_seconds=60, mode="legacy") as client:
            assert client.server_info is not None and client.server_info.name == "memlane"
            assert client.server_info.title == mcp_handshake.SERVER_TITLE
            stored = await client.call_tool(REMEMBER_EPISODE, {"event_type": "note", "content": "early bird"})
            assert stored.is_error is False
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == [d.name for d in tool_definitions()]

    anyio.run(main)
