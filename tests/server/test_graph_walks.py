"""``neighbours`` and ``find_paths`` from one declaration each: tools, MCP, HTTP, CLI and Python agree.

The bounds (``MAX_GRAPH_DEPTH``, ``MAX_PATHS``) and the defaults (``DEFAULT_NEIGHBOUR_DEPTH``,
``DEFAULT_PATH_DEPTH``, ``DEFAULT_PATH_LIMIT``) are declared once, in :mod:`memlane.graph.walks`;
the requests of :mod:`memlane.operations.requests` read them, every interface is generated from
the requests. Each test runs a real interface over a real SQLite file: the tool dispatcher, the
FastAPI app (``/openapi.json`` included), a ``memlane mcp`` stdio process driven by the SDK's
client, and the click CLI.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("fastapi", reason="the 'server' extra is not installed")
pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")
from click.testing import CliRunner
from fastapi.testclient import TestClient
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import TextContent

from memlane import EpisodicMemory
from memlane.cli import cli as cli_main
from memlane.cli.params import FieldType
from memlane.config.file import load_config
from memlane.embeddings.fake import HashingEmbedder
from memlane.graph import (
    DEFAULT_NEIGHBOUR_DEPTH,
    DEFAULT_PATH_DEPTH,
    DEFAULT_PATH_LIMIT,
    MAX_GRAPH_DEPTH,
    MAX_PATHS,
)
from memlane.operations.requests import FindPathsBody, NeighboursBody
from memlane.operations.tool_specs import FIND_PATHS, NEIGHBOURS
from memlane.server.http import create_app
from memlane.tools import MemoryTools, tool_definitions

KEY = "walks-key-0123456789abcdef"
OTHER = "walks-other-0123456789abcd"


def _chain(memory: EpisodicMemory) -> None:
    """me -> Alice -> Bob -> Acme -> Lisbon: four hops from me to Lisbon."""
    memory.remember_fact("me", "introduced_to", "Alice")
    memory.remember_fact("Alice", "introduced_me_to", "Bob")
    memory.remember_fact("Bob", "works_at", "Acme")
    memory.remember_fact("Acme", "based_in", "Lisbon")


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[EpisodicMemory]:
    with EpisodicMemory.open(tmp_path / "walks.db", embedder=HashingEmbedder(), tenant_id="t") as m:
        _chain(m)
        yield m


# -- one declaration ------------------------------------------------------------------------


def test_the_python_defaults_are_the_declared_ones() -> None:
    near = inspect.signature(EpisodicMemory.neighbours).parameters
    paths = inspect.signature(EpisodicMemory.find_paths).parameters
    assert near["depth"].default == DEFAULT_NEIGHBOUR_DEPTH
    assert (paths["max_depth"].default, paths["limit"].default) == (DEFAULT_PATH_DEPTH, DEFAULT_PATH_LIMIT)


def test_the_tool_schemas_publish_the_declared_bounds_and_defaults() -> None:
    definitions = {d.name: d.parameters for d in tool_definitions()}
    near, paths = definitions[NEIGHBOURS], definitions[FIND_PATHS]
    assert near["required"] == ["entity"] and sorted(paths["required"]) == ["source", "target"]
    depth = near["properties"]["depth"]
    assert (depth["minimum"], depth["maximum"]) == (1, MAX_GRAPH_DEPTH)
    assert f"default {DEFAULT_NEIGHBOUR_DEPTH}" in depth["description"]
    assert paths["properties"]["max_depth"]["maximum"] == MAX_GRAPH_DEPTH
    assert f"default {DEFAULT_PATH_DEPTH}" in paths["properties"]["max_depth"]["description"]
    assert paths["properties"]["limit"]["maximum"] == MAX_PATHS
    assert f"default {DEFAULT_PATH_LIMIT}" in paths["properties"]["limit"]["description"]


def test_the_cli_options_are_generated_from_the_bodies() -> None:
    from memlane.cli.graph import neighbours, paths

    options = {p.name: p for p in (*neighbours.params, *paths.params)}
    for name, body in (("depth", NeighboursBody), ("max_depth", FindPathsBody), ("limit", FindPathsBody)):
        kind = options[name].type
        assert isinstance(kind, FieldType) and kind.schema["maximum"] == (
            MAX_PATHS if name == "limit" else MAX_GRAPH_DEPTH
        )
        assert options[name].default is None  # absent: the facade's default applies
        assert kind.schema["description"] == body.model_fields[name].description


# -- the tools (and so MCP) -----------------------------------------------------------------


def test_the_tools_walk_the_graph_in_compact_and_full_form(memory: EpisodicMemory) -> None:
    tools = MemoryTools(memory)
    near = tools.handle_tool_call(NEIGHBOURS, {"entity": "Alice"})
    assert near["ok"] is True
    assert [(n["id"], n["hops"]) for n in near["neighbours"]] == [("alice", 0), ("bob", 1), ("me", 1)]
    assert near["neighbours"][0] == {"entity": "Alice", "id": "alice", "type": "thing", "hops": 0}
    far = tools.handle_tool_call(NEIGHBOURS, json.dumps({"entity": "me", "depth": 4, "detail": "full"}))
    assert [n["entity"]["id"] for n in far["neighbours"]][-1] == "lisbon"
    assert far["neighbours"][-1]["hops"] == 4 and far["neighbours"][-1]["entity"]["tenant_id"] == "t"
    found = tools.handle_tool_call(FIND_PATHS, {"source": "me", "target": "Acme"})
    assert found["count"] == 1
    assert [f["predicate"] for f in found["paths"][0]] == ["introduced_to", "introduced_me_to", "works_at"]
    assert set(found["paths"][0][0]) <= {"id", "subject", "predicate", "object", "valid_from", "confidence"}
    assert tools.handle_tool_call(FIND_PATHS, {"source": "me", "target": "Lisbon"})["count"] == 0  # 4 > 3
    assert tools.handle_tool_call(FIND_PATHS, {"source": "me", "target": "Lisbon", "max_depth": 4})["count"]


def test_the_tools_refuse_a_walk_past_the_bound_like_python(memory: EpisodicMemory) -> None:
    result = MemoryTools(memory).handle_tool_call(NEIGHBOURS, {"entity": "me", "depth": MAX_GRAPH_DEPTH + 1})
    assert result["ok"] is False and result["error"]["type"] == "ValidationError"
    with pytest.raises(ValueError, match="depth") as raised:
        memory.neighbours("me", MAX_GRAPH_DEPTH + 1)
    assert str(raised.value) == result["error"]["message"]


def test_mcp_lists_and_runs_the_walks(tmp_path: Path) -> None:
    db = tmp_path / "mcp.db"
    with EpisodicMemory.open(db, embedder=HashingEmbedder(), tenant_id="t") as m:
        _chain(m)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memlane", "--db", str(db), "--embedder", "hashing", "--tenant", "t", "mcp"],
        env=env,
        cwd=str(tmp_path),
    )
    expected = {d.name: d for d in tool_definitions()}

    async def main() -> dict[str, Any]:
        async with Client(params, read_timeout_seconds=60) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            for name in (NEIGHBOURS, FIND_PATHS):
                assert listed[name].input_schema == expected[name].parameters
                assert listed[name].description == expected[name].description
                hints = listed[name].annotations
                assert hints is not None and hints.read_only_hint is True  # walks change nothing
            result = await client.call_tool(FIND_PATHS, {"source": "me", "target": "bob"})
            bad = await client.call_tool(NEIGHBOURS, {"entity": "me", "depth": 0})
            assert bad.is_error is True
            block = result.content[0]
            assert isinstance(block, TextContent)
            payload: dict[str, Any] = json.loads(block.text)
            return payload

    payload = anyio.run(main)
    assert [[f["object"] for f in p] for p in payload["paths"]] == [["alice", "bob"]]


# -- HTTP -----------------------------------------------------------------------------------


@pytest.fixture
def http(tmp_path: Path) -> Iterator[TestClient]:
    keys = {KEY: {"tenant": "t"}, OTHER: {"tenant": "u"}}
    settings = load_config({"server": {"api_keys": keys}}).server
    db = tmp_path / "http.db"
    with EpisodicMemory.open(db, embedder=HashingEmbedder(), tenant_id="t") as m:
        _chain(m)
    app = create_app(lambda: EpisodicMemory.open(db, embedder=HashingEmbedder()), settings)
    with TestClient(app, headers={"X-API-Key": KEY}) as client:
        yield client


def test_http_walks_are_the_declared_bodies(http: TestClient) -> None:
    near = http.post("/v1/graph/neighbours", json={"entity": "Bob", "depth": 2})
    assert near.status_code == 200, near.text
    assert {n["entity"]["id"]: n["hops"] for n in near.json()["neighbours"]} == {
        "bob": 0,
        "alice": 1,
        "acme": 1,
        "me": 2,
        "lisbon": 2,
    }
    chains = http.post("/v1/graph/paths", json={"source": "me", "target": "acme", "limit": 1})
    assert chains.status_code == 200 and chains.json()["count"] == 1
    assert chains.json()["paths"][0][-1]["tenant_id"] == "t"  # the full form by default
    too_deep = http.post("/v1/graph/neighbours", json={"entity": "Bob", "depth": MAX_GRAPH_DEPTH + 1})
    assert too_deep.status_code == 422
    assert too_deep.json()["error"]["message"] == f"depth must be <= {MAX_GRAPH_DEPTH}, got 5"
    too_many = http.post("/v1/graph/paths", json={"source": "me", "target": "acme", "limit": MAX_PATHS + 1})
    assert too_many.status_code == 422 and "limit" in too_many.json()["error"]["message"]
    other = http.post("/v1/graph/neighbours", json={"entity": "Bob"}, headers={"X-API-Key": OTHER})
    assert other.status_code == 200 and other.json() == {"count": 0, "neighbours": []}  # another tenant


def test_openapi_documents_the_walks_from_their_declarations(http: TestClient) -> None:
    document = http.get("/openapi.json").json()
    schemas = document["components"]["schemas"]
    for path, body in (("/v1/graph/neighbours", NeighboursBody), ("/v1/graph/paths", FindPathsBody)):
        operation = document["paths"][path]["post"]
        ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert ref.rsplit("/", 1)[-1] == body.__name__
    depth = schemas["NeighboursBody"]["properties"]["depth"]["anyOf"][0]
    assert depth == {"type": "integer", "minimum": 1, "maximum": MAX_GRAPH_DEPTH}
    assert "/v1/entities/{entity}/neighbours" not in document["paths"]  # one route per operation


# -- the CLI --------------------------------------------------------------------------------


def test_the_cli_walks_use_the_declared_options(memory: EpisodicMemory, tmp_path: Path) -> None:
    db = str(tmp_path / "walks.db")
    run = CliRunner()
    base = ["--db", db, "--embedder", "hashing", "--tenant", "t", "--json", "facts"]
    near = run.invoke(cli_main, [*base, "neighbours", "me", "--depth", "2"])
    assert near.exit_code == 0, near.output
    assert {n["entity"]["id"]: n["hops"] for n in json.loads(near.stdout)} == {"me": 0, "alice": 1, "bob": 2}
    none = run.invoke(cli_main, [*base, "paths", "me", "lisbon"])
    assert none.exit_code == 0 and json.loads(none.stdout) == []  # the default max_depth is 3
    four = run.invoke(cli_main, [*base, "paths", "me", "lisbon", "--max-depth", "4", "--limit", "1"])
    assert len(json.loads(four.stdout)) == 1
    refused = run.invoke(cli_main, [*base, "neighbours", "me", "--depth", str(MAX_GRAPH_DEPTH + 1)])
    assert refused.exit_code == 2 and f"depth must be <= {MAX_GRAPH_DEPTH}" in refused.output


def test_http_context_holds_the_named_entitys_facts(http: TestClient) -> None:
    body = {"query": "Who works at Acme?", "token_budget": 300, "min_relevance": 0}
    block = http.post("/v1/context", json=body)
    assert block.status_code == 200, block.text
    kinds = [(i["kind"], i["label"]) for i in block.json()["items"]]
    assert ("facts", "Acme") in kinds and "Bob works at Acme" in block.json()["text"]
    off = http.post("/v1/context", json={**body, "include_facts": False}).json()
    assert all(i["kind"] != "facts" for i in off["items"])
