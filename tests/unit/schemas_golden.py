"""Every schema generated from the operations' requests, and its digest (``test_schemas_golden.py``).

The tool schemas in every format and at two maxima, each tool request's and HTTP body's JSON
schema, the OpenAPI document's component schemas and the MCP tools' input schemas: what a model,
a client generator or an MCP host reads. :func:`digests` keys a SHA-256 of each one's JSON text
(key order kept: a reordered property is a change a client sees), so the same function recorded
``schemas_golden.json`` on the code before the requests were split one room a module (issue #24
item 7) and checks that every published schema is still byte-identical.

Regenerate (only when a change is *meant* to change a published schema)::

    python -m tests.unit.schemas_golden > tests/unit/schemas_golden.json
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

from memlane import EpisodicMemory
from memlane.config.file import load_config
from memlane.embeddings.fake import HashingEmbedder
from memlane.operations.requests import OPERATIONS
from memlane.tools import TOOL_FORMATS, tool_arguments, tool_schemas

KEY = "schemas-golden-admin-key-0123456789"


def _served(directory: Path) -> dict[str, Any]:
    """The OpenAPI component schemas and the MCP tools' input schemas, over a real SQLite file."""
    from memlane.server.http import create_app
    from memlane.server.mcp import create_mcp_server

    def memory() -> EpisodicMemory:
        return EpisodicMemory.open(directory / "schemas.db", embedder=HashingEmbedder())

    settings = load_config({"server": {"api_keys": {KEY: {"tenant": "t", "role": "admin"}}}}).server
    out: dict[str, Any] = {}
    document = create_app(memory, settings).openapi()
    for name, schema in document["components"]["schemas"].items():
        out[f"openapi/{name}"] = schema
    opened = memory()
    try:
        server = create_mcp_server(opened)
        # A thread of its own: the suite may be inside a running event loop (asyncio.run refuses it).
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            tools = pool.submit(asyncio.run, server.list_tools()).result()
        for tool in tools:
            out[f"mcp/{tool.name}"] = {"description": tool.description, "input_schema": tool.input_schema}
    finally:
        opened.close()
    return out


def documents() -> dict[str, Any]:
    """Every generated schema, by a name that says where it is published."""
    out: dict[str, Any] = {}
    for fmt in TOOL_FORMATS:
        for max_limit in (50, 17):
            out[f"tools/{fmt}/{max_limit}"] = tool_schemas(fmt, max_limit=max_limit)
    for name, request in tool_arguments(50).items():
        out[f"request/{name}"] = request.model_json_schema()
    for body in OPERATIONS:
        out[f"body/{body.__name__}"] = body.model_json_schema()
    with tempfile.TemporaryDirectory(prefix="memlane-schemas-") as tmp:
        out.update(_served(Path(tmp)))
    return out


def digests() -> dict[str, str]:
    """The SHA-256 of each of :func:`documents` as JSON text (keys in their generated order)."""
    return {
        name: hashlib.sha256(json.dumps(value, ensure_ascii=False).encode()).hexdigest()
        for name, value in documents().items()
    }


if __name__ == "__main__":
    print(json.dumps(digests(), indent=1))
