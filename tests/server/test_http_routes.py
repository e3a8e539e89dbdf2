"""The HTTP routes beyond remember/recall: sessions, context, supersede, history, stats, admin jobs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the 'server' extra is not installed")
import httpx

from memlane import EpisodicMemory
from memlane.config import DEFAULT_CONTEXT_MIN_RELEVANCE
from memlane.config.file import load_config
from memlane.embeddings.fake import HashingEmbedder
from memlane.server.http import create_app
from memlane.sessions.context import NOTHING_RELEVANT_BLOCK
from tests.server.conftest import serve_in_thread

AGENT = "agent-key-0123456789abcdef"
ADMIN = "admin-key-0123456789abcdef"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[httpx.Client]:
    keys = {AGENT: "acme", ADMIN: {"tenant": "acme", "role": "admin"}}
    settings = load_config({"server": {"api_keys": keys}}).server
    app = create_app(lambda: EpisodicMemory.open(tmp_path / "m.db", embedder=HashingEmbedder()), settings)
    with serve_in_thread(app) as url, httpx.Client(base_url=url, headers={"X-API-Key": AGENT}) as http:
        yield http


def test_supersede_history_and_the_time_model(client: httpx.Client) -> None:
    old = client.post(
        "/v1/episodes", json={"event_type": "fact", "content": "The user lives in Berlin"}
    ).json()
    moved = client.post(
        f"/v1/episodes/{old['id']}/supersede",
        json={"event_type": "fact", "content": "The user lives in Lisbon", "reason": "the user moved"},
    )
    assert moved.status_code == 201, moved.text
    new = moved.json()["episode"]
    assert moved.json()["superseded"] == old["id"]
    chain = client.get(f"/v1/episodes/{new['id']}/history").json()["episodes"]
    assert [e["content"] for e in chain] == ["The user lives in Berlin", "The user lives in Lisbon"]
    assert chain[0]["superseded_by"] == new["id"] and chain[0]["valid_until"] is not None
    current = client.post("/v1/recall", json={}).json()["hits"]
    assert [h["content"] for h in current] == ["The user lives in Lisbon"]
    then = client.post("/v1/recall", json={"as_of": old["created_at"]}).json()["hits"]
    assert [h["content"] for h in then] == ["The user lives in Berlin"]
    again = client.post(f"/v1/episodes/{old['id']}/supersede", json={"event_type": "fact", "content": "x"})
    assert again.status_code == 404  # already superseded
    assert client.get("/v1/stats").json()["superseded"] == 1
    assert "location" not in client.get("/v1/stats").json()  # no server paths


def test_sessions_context_and_inject(client: httpx.Client) -> None:
    messages = [
        {"role": "user", "content": "Find me a hotel in Lisbon near the river."},
        {"role": "assistant", "content": "The Memmo Alfama has river views."},
    ]
    stored = client.post("/v1/sessions", json={"session_id": "s1", "messages": messages, "user_id": "alice"})
    assert stored.status_code == 201, stored.text
    assert client.post("/v1/sessions", json={"session_id": "s1", "messages": messages}).status_code == 409
    recent = client.get("/v1/sessions", params={"user_id": "alice"}).json()
    assert [s["session_id"] for s in recent["sessions"]] == ["s1"]
    assert client.get("/v1/sessions/s1").json()["messages"] == messages
    found = client.post("/v1/sessions/search", json={"query": "hotel river", "user_id": "alice"}).json()
    assert found["snippets"][0]["session_id"] == "s1" and "breakdown" in found["snippets"][0]
    block = client.post("/v1/context", json={"query": "hotel river", "user_id": "alice"}).json()
    assert block["text"].startswith("[Past Conversation Context]") and block["tokens"] <= 1000
    injected = client.post(
        "/v1/context/inject",
        json={
            "messages": [{"role": "user", "content": "Which hotel was it?"}],
            "user_id": "alice",
            "query": "a hotel in Lisbon near the river",
        },
    ).json()["messages"]
    assert injected[0]["role"] == "system" and injected[-1]["content"] == "Which hotel was it?"
    # The relevance floor (default context_min_relevance): an unrelated query injects nothing.
    unrelated = {"query": "quantum chromodynamics lecture", "user_id": "alice"}
    nothing = client.post("/v1/context", json=unrelated).json()
    assert (
        nothing["relevant"] is False
        and nothing["items"] == []
        and nothing["min_relevance"] == DEFAULT_CONTEXT_MIN_RELEVANCE
    )
    assert nothing["text"] == NOTHING_RELEVANT_BLOCK
    question = [{"role": "user", "content": "Tell me about quarks."}]
    same = client.post("/v1/context/inject", json={"messages": question, **unrelated}).json()["messages"]
    assert same == question
    assert client.post("/v1/sessions/search", json=unrelated).json()["count"] == 0
    unfloored = client.post("/v1/context", json={**unrelated, "min_relevance": 0}).json()
    assert unfloored["relevant"] is True and unfloored["items"]
    bad = client.post("/v1/context", json={"query": "x", "token_budget": "5"})
    assert bad.status_code == 422 and bad.json()["error"]["type"] == "ValidationError"
    assert client.delete("/v1/sessions/s1").status_code == 204
    assert client.get("/v1/sessions/s1").status_code == 404


def test_admin_jobs_need_an_admin_key(client: httpx.Client) -> None:
    client.post(
        "/v1/episodes", json={"event_type": "note", "content": "old", "created_at": "2020-01-01T00:00:00Z"}
    )
    for path in ("/v1/admin/forget", "/v1/admin/compact", "/v1/admin/prune"):
        refused = client.post(path, json={"dry_run": True})
        assert refused.status_code == 403, path
        assert refused.json()["error"]["type"] == "Forbidden"
        allowed = client.post(path, json={"dry_run": True}, headers={"X-API-Key": ADMIN})
        assert allowed.status_code == 200, (path, allowed.text)
        assert allowed.json()["dry_run"] is True
    report = client.post("/v1/admin/forget", json={"dry_run": True}, headers={"X-API-Key": ADMIN}).json()
    assert report["count"] == 1  # the 2020 episode has faded; dry run: nothing changed
    assert client.get("/v1/episodes").json()["count"] == 1


def test_openapi_documents_every_route_with_bodies(client: httpx.Client) -> None:
    spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for path in ("/v1/sessions/search", "/v1/context", "/v1/contradictions", "/v1/admin/compact"):
        body = spec["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        refs = [body.get("$ref")] + [option.get("$ref") for option in body.get("anyOf", [])]
        name = next(ref for ref in refs if ref).rsplit("/", 1)[1]
        assert schemas[name]["properties"] and schemas[name]["additionalProperties"] is False, path
    breakdown = spec["components"]["schemas"]["ScoreBreakdownOut"]["properties"]
    assert {"relevance", "recency", "importance", "score"} <= set(breakdown)


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/v1/episodes", "GET, POST"),
        ("PATCH", "/v1/episodes/some-id", "DELETE, GET"),
        ("PUT", "/v1/sessions/chat-1", "DELETE, GET"),
        ("GET", "/v1/recall", "POST"),
        ("POST", "/health", "GET"),
    ],
)
def test_a_405_names_every_method_of_the_path(
    client: httpx.Client, method: str, path: str, allow: str
) -> None:
    response = client.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allow
    assert response.json()["error"]["type"] == "MethodNotAllowed"


def test_recall_without_arguments_lists_the_newest_like_the_tool(
    client: httpx.Client, tmp_path: Path
) -> None:
    from memlane.tools import MemoryTools

    for content in ("first", "second"):
        assert client.post("/v1/episodes", json={"event_type": "note", "content": content}).status_code == 201
    over_http = [
        [hit["content"] for hit in client.post("/v1/recall", **kw).json()["hits"]]
        for kw in ({"json": {}}, {})
    ]
    with EpisodicMemory.open(tmp_path / "tool.db", embedder=HashingEmbedder()) as memory:
        tools = MemoryTools(memory)
        for content in ("first", "second"):
            tools.handle_tool_call("remember_episode", {"event_type": "note", "content": content})
        by_tool = [e["content"] for e in tools.handle_tool_call("recall_episodes", {})["episodes"]]
    assert over_http == [by_tool, by_tool] == [["second", "first"]] * 2
