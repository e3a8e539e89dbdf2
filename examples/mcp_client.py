"""Talk to ``memlane mcp`` over stdio with the official MCP SDK client.

``examples/mcp_client_config.json`` is the entry to paste into an MCP host's configuration
(Claude Desktop, Cursor, VS Code, ...: the ``mcpServers`` format): it starts
``memlane --db ... --tenant ... mcp``, a stdio server whose tools are memlane's
``remember_episode`` and ``recall_episodes`` (tenant and session come from the command line,
never from the model). This script starts the server exactly as that file says (with
``--db`` pointed at the given file, and this Python running ``memlane``), lists the tools,
remembers an episode and recalls it. Offline: the server embeds with the bundled model.

Needs ``pip install 'memlane[mcp]'``. Run::

    python examples/mcp_client.py --db /tmp/mcp-demo.db
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, TextContent

CONFIG = Path(__file__).with_name("mcp_client_config.json")


def server_parameters(db: Path) -> StdioServerParameters:
    """The ``memlane`` server entry of the config file, with ``--db`` replaced by ``db``."""
    entry = json.loads(CONFIG.read_text(encoding="utf-8"))["mcpServers"]["memlane"]
    args = list(entry["args"])
    args[args.index("--db") + 1] = str(db)
    command = [sys.executable, "-m", "memlane"] if entry["command"] == "memlane" else [entry["command"]]
    env = {**os.environ, **entry.get("env", {})}
    return StdioServerParameters(command=command[0], args=[*command[1:], *args], env=env)


def payload(result: CallToolResult) -> dict[str, Any]:
    """The tool's JSON result (memlane's tools answer with one JSON text block)."""
    block = result.content[0]
    assert isinstance(block, TextContent)
    data: dict[str, Any] = json.loads(block.text)
    return data


async def main(db: Path) -> None:
    async with Client(server_parameters(db), read_timeout_seconds=120) as client:
        tools = (await client.list_tools()).tools
        print("tools:", ", ".join(tool.name for tool in tools))
        stored = payload(
            await client.call_tool(
                "remember_episode",
                {"event_type": "preference", "content": "User prefers window seats", "tags": ["travel"]},
            )
        )
        print("remembered:", json.dumps(stored, sort_keys=True)[:200])
        recalled = payload(
            await client.call_tool("recall_episodes", {"query": "where does the user like to sit?"})
        )
        print("recalled:", json.dumps(recalled, sort_keys=True)[:600])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=None, help="SQLite file (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        anyio.run(main, args.db or Path(scratch) / "mcp-demo.db")
