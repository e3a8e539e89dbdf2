"""The HTTP API against a real uvicorn on 127.0.0.1, with httpx: auth, tenant isolation, limits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the 'server' extra is not installed")
import httpx

from memlane import EpisodicMemory, LocalEmbedder
from memlane.config.file import ServerSettings, hash_api_key, load_config
from memlane.embeddings.base import Embedder
from memlane.embeddings.fake import HashingEmbedder
from memlane.errors import (
    ConfigError,
    DuplicateEpisodeError,
    EmbedderUnavailableError,
    EmbeddingError,
    EmbeddingModelMismatchError,
    StoreClosedError,
    StoreError,
    ValidationError,
)
from memlane.server.errors import status_for
from memlane.server.http import create_app
from tests.server.conftest import serve_in_thread
from tests.server.served import served_url, stop_served

ACME_KEY = "mlk_acme-0123456789abcdef-secret"
GLOBEX_KEY = "globex-plaintext-key-0123456789"


@dataclass
class Api:
    """A running server plus a client per tenant (and one without a key)."""

    url: str
    acme: httpx.Client
    globex: httpx.Client
    anonymous: httpx.Client
    app: Any


def _settings(**overrides: Any) -> ServerSettings:
    section: dict[str, Any] = {"api_keys": {hash_api_key(ACME_KEY): "acme", GLOBEX_KEY: "globex"}}
    section.update(overrides)
    return load_config({"server": section}).server


@contextmanager
def _running(tmp_path: Path, embedder: Embedder | None = None, **overrides: Any) -> Iterator[Api]:
    db = tmp_path / "http.db"
    app = create_app(
        lambda: EpisodicMemory.open(db, embedder=embedder or HashingEmbedder()),
        _settings(**overrides),
        max_limit=20,
    )
    with serve_in_thread(app) as url:
        clients = [
            httpx.Client(base_url=url, headers=headers, timeout=30)
            for headers in ({"Authorization": f"Bearer {ACME_KEY}"}, {"X-API-Key": GLOBEX_KEY}, {})
        ]
        try:
            yield Api(url, *clients, app=app)
        finally:
            for client in clients:
                client.close()


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with _running(tmp_path, max_request_bytes=4096) as running:
        yield running


def _remember(client: httpx.Client, content: str, **fields: Any) -> dict[str, Any]:
    response = client.post("/v1/episodes", json={"event_type": "note", "content": content, **fields})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def _error(response: httpx.Response, status: int, kind: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["type"] == kind, body
    message: str = body["error"]["message"]
    return message


ENDPOINTS = [
    ("POST", "/v1/episodes", {"event_type": "note", "content": "x"}),
    ("POST", "/v1/recall", {"query": "x"}),
    ("GET", "/v1/episodes", None),
    ("GET", "/v1/export", None),
    ("GET", "/v1/episodes/0123", None),
    ("DELETE", "/v1/episodes/0123", None),
]


# -- health, docs, auth --------------------------------------------------------------------


def test_health_and_openapi_need_no_key(api: Api) -> None:
    assert api.anonymous.get("/health").json() == {"status": "ok", "version": "0.1.0"}
    spec = api.anonymous.get("/openapi.json").json()
    assert {"/v1/episodes", "/v1/recall", "/v1/export", "/v1/episodes/{episode_id}", "/health"} <= set(
        spec["paths"]
    )
    assert set(spec["components"]["securitySchemes"]) == {"HTTPBearer", "APIKeyHeader"}
    assert "ErrorOut" in spec["components"]["schemas"]
    for page in ("/docs", "/redoc"):  # #22 item 15: no CDN scripts next to the inspector's cookie
        assert api.anonymous.get(page).status_code == 404


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_every_endpoint_needs_a_valid_key(api: Api, method: str, path: str, body: Any) -> None:
    missing = api.anonymous.request(method, path, json=body)
    assert "missing API key" in _error(missing, 401, "Unauthorized")
    assert missing.headers["www-authenticate"] == "Bearer"
    for headers in (
        {"Authorization": "Bearer wrong-key-0123456789"},
        {"X-API-Key": ACME_KEY + "x"},
        {"Authorization": f"Bearer {hash_api_key(ACME_KEY)}"},  # the stored hash is not a key
        {"Authorization": f"Basic {ACME_KEY}"},
    ):
        response = api.anonymous.request(method, path, json=body, headers=headers)
        assert response.status_code == 401, (headers, response.text)
        assert response.json()["error"]["type"] == "Unauthorized"


def test_create_app_refuses_to_run_without_keys(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"server\.api_keys"):
        create_app(lambda: EpisodicMemory.open(tmp_path / "x.db"), ServerSettings())


# -- the endpoints ---------------------------------------------------------------------------


def test_remember_recall_get_list_export_delete(api: Api) -> None:
    first = _remember(
        api.acme,
        "User prefers aisle seats on long flights",
        tags=["Travel", "seats"],
        importance=8,
        metadata={"source": "chat"},
        created_at="2026-01-02T03:04:05Z",
    )
    assert (first["tenant_id"], first["session_id"]) == ("acme", "default")
    assert first["tags"] == ["travel", "seats"]
    assert first["metadata"] == {"source": "chat"}
    second = _remember(api.acme, "The office is in Lyon", importance=3)

    recall = api.acme.post("/v1/recall", json={"query": "aisle seats", "limit": 1}).json()
    assert (recall["count"], recall["ranked"]) == (1, True)
    hit = recall["hits"][0]
    assert hit["id"] == first["id"]
    assert {"relevance", "recency", "importance", "score", "dense", "keyword"} <= set(hit["breakdown"])
    assert hit["breakdown"]["retrieval"] == "hybrid" and hit["breakdown"]["fallback"] is False
    assert hit["breakdown"]["importance"] == 0.8

    weighted = api.acme.post("/v1/recall", json={"query": "office", "weights": {"importance": 1}}).json()
    # Relevance first: importance only breaks near-ties, so the office episode stays on top.
    assert [h["id"] for h in weighted["hits"]] == [second["id"], first["id"]]
    assert api.acme.post("/v1/recall", json={"query": "office", "preset": "cold_start"}).status_code == 200

    listing = api.acme.get("/v1/episodes", params={"tag": ["travel", "seats"]}).json()
    assert [e["id"] for e in listing["episodes"]] == [first["id"]]
    assert [e["id"] for e in api.acme.get("/v1/episodes").json()["episodes"]] == [second["id"], first["id"]]
    structured = api.acme.post("/v1/recall", json={}).json()
    assert structured["ranked"] is False
    assert structured["hits"][0]["breakdown"] is None

    export = api.acme.get("/v1/export")
    assert export.headers["content-type"].startswith("application/x-ndjson")
    lines = [line for line in export.text.splitlines() if line]
    assert [json.loads(line)["id"] for line in lines] == [first["id"], second["id"]]  # oldest first

    got = api.acme.get(f"/v1/episodes/{first['id']}")
    assert got.status_code == 200
    assert got.json()["content"] == first["content"]

    assert api.acme.delete(f"/v1/episodes/{first['id']}").status_code == 204
    _error(api.acme.get(f"/v1/episodes/{first['id']}"), 404, "NotFound")
    _error(api.acme.delete(f"/v1/episodes/{first['id']}"), 404, "NotFound")
    assert [h["id"] for h in api.acme.post("/v1/recall", json={"query": "seats"}).json()["hits"]] == [
        second["id"]
    ]


def test_tenants_are_isolated_by_key(api: Api) -> None:
    secret = _remember(api.acme, "acme's launch date is in May", tags=["launch"])
    unknown = "0" * 32

    assert (
        api.globex.post("/v1/recall", json={"query": "launch date", "scope": "tenant"}).json()["count"] == 0
    )
    assert api.globex.get("/v1/episodes", params={"scope": "tenant"}).json()["count"] == 0
    assert api.globex.get("/v1/export", params={"scope": "tenant"}).text == ""
    other = api.globex.get(f"/v1/episodes/{secret['id']}")
    missing = api.globex.get(f"/v1/episodes/{unknown}")
    assert _error(other, 404, "NotFound").replace(secret["id"], "ID") == _error(
        missing, 404, "NotFound"
    ).replace(unknown, "ID")  # another tenant's id looks exactly like an unknown one
    _error(api.globex.delete(f"/v1/episodes/{secret['id']}"), 404, "NotFound")
    assert api.acme.get(f"/v1/episodes/{secret['id']}").status_code == 200  # still there


def test_the_tenant_never_comes_from_the_body(api: Api) -> None:
    response = api.acme.post("/v1/episodes", json={"event_type": "n", "content": "x", "tenant_id": "globex"})
    assert "tenant_id" in _error(response, 422, "ValidationError")
    assert api.acme.post("/v1/recall", json={"tenant_id": "globex"}).status_code == 422
    assert api.globex.get("/v1/episodes", params={"scope": "tenant"}).json()["count"] == 0


def test_sessions_and_scope(api: Api) -> None:
    a = _remember(api.acme, "morning standup notes", session_id="s1")
    b = _remember(api.acme, "evening standup notes", session_id="s2")
    only_s1 = api.acme.post("/v1/recall", json={"query": "standup", "session_id": "s1"}).json()
    assert [h["id"] for h in only_s1["hits"]] == [a["id"]]
    both = api.acme.post("/v1/recall", json={"query": "standup", "scope": "tenant"}).json()
    assert {h["id"] for h in both["hits"]} == {a["id"], b["id"]}
    assert api.acme.get("/v1/episodes", params={"session_id": "s2"}).json()["episodes"][0]["id"] == b["id"]
    assert api.acme.get(f"/v1/episodes/{a['id']}").status_code == 200  # get/delete: any session
    assert api.acme.post("/v1/recall", json={"scope": "global"}).status_code == 422  # never across tenants


# -- limits and errors -----------------------------------------------------------------------


def test_request_body_size_limit(api: Api) -> None:
    big = {"event_type": "note", "content": "x" * 5000}
    assert "4096 bytes" in _error(api.acme.post("/v1/episodes", json=big), 413, "RequestEntityTooLarge")

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while streaming
        yield b'{"event_type": "note", "content": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}'

    streamed = api.acme.post("/v1/episodes", content=chunks(), headers={"Content-Type": "application/json"})
    _error(streamed, 413, "RequestEntityTooLarge")
    assert api.acme.get("/v1/episodes").json()["count"] == 0


def test_limit_is_capped(api: Api) -> None:
    assert "limit must be <= 20" in _error(
        api.acme.post("/v1/recall", json={"limit": 21}), 422, "ValidationError"
    )
    _error(api.acme.get("/v1/episodes", params={"limit": 500}), 422, "ValidationError")
    _error(api.acme.post("/v1/recall", json={"limit": 0}), 422, "ValidationError")
    assert api.acme.post("/v1/recall", json={"limit": 20}).status_code == 200


def test_invalid_values_are_422_with_the_reason(api: Api) -> None:
    naive = api.acme.post(
        "/v1/episodes", json={"event_type": "n", "content": "c", "created_at": "2026-01-01T00:00"}
    )
    assert "timezone" in _error(naive, 422, "ValidationError")
    blank = api.acme.post("/v1/episodes", json={"event_type": "n", "content": "   "})
    assert "content" in _error(blank, 422, "ValidationError")
    assert "preset" in _error(api.acme.post("/v1/recall", json={"preset": "fast"}), 422, "ValidationError")
    both = api.acme.post("/v1/recall", json={"preset": "balanced", "weights": {"relevance": 1}})
    assert "not both" in _error(both, 422, "ValidationError")
    schema = api.acme.post("/v1/recall", content=b"{not json", headers={"Content-Type": "application/json"})
    body = schema.json()
    assert schema.status_code == 422
    assert body["error"]["details"][0]["type"] == "json_invalid"
    _error(api.acme.get(f"/v1/episodes/{'x' * 201}"), 422, "ValidationError")


def test_store_failures_are_503_without_internals(api: Api) -> None:
    api.app.state.memlane.memory.store.close()  # simulate the database going away
    message = _error(api.acme.post("/v1/recall", json={}), 503, "StoreClosedError")
    assert "http.db" not in message and "closed" not in message


def test_status_mapping() -> None:
    assert status_for(ValidationError("x")) == 422
    assert status_for(DuplicateEpisodeError("x")) == 409
    assert status_for(StoreClosedError("x")) == 503
    assert status_for(StoreError("x")) == 503
    assert status_for(EmbeddingError("x")) == 502
    assert status_for(EmbedderUnavailableError("x")) == 503
    assert status_for(EmbeddingModelMismatchError("x")) == 500
    assert status_for(ConfigError("x")) == 500


# -- end to end ------------------------------------------------------------------------------


def test_end_to_end_with_the_real_local_model(tmp_path: Path) -> None:
    """The bundled all-MiniLM-L6-v2 behind the API: semantic recall without shared words."""
    with _running(tmp_path, embedder=LocalEmbedder()) as api:
        seat = _remember(api.acme, "The user always wants a window seat when flying", importance=7)
        _remember(api.acme, "Quarterly revenue grew by twelve percent")
        _remember(api.acme, "The user is allergic to peanuts", importance=9)
        hits = api.acme.post("/v1/recall", json={"query": "Where does she like to sit on a plane?"}).json()[
            "hits"
        ]
        assert hits[0]["id"] == seat["id"]
        assert hits[0]["breakdown"]["relevance"] > hits[1]["breakdown"]["relevance"]


def test_memlane_serve_command(tmp_path: Path) -> None:
    """``memlane --config ... serve`` in a subprocess: the CLI wiring, the config file, a real port."""
    config = tmp_path / "memlane.yaml"
    config.write_text(
        "memory:\n  path: served.db\n"
        "episodic_memory:\n  embedding_provider: hashing\n  max_limit: 7\n"
        f"server:\n  port: 0\n  api_keys:\n    '{hash_api_key(ACME_KEY)}': acme\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLANE_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "memlane", "--config", str(config), "serve", "--log-level", "info"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        url = served_url(process, 60)
        with httpx.Client(base_url=url, headers={"X-API-Key": ACME_KEY}, timeout=30) as client:
            assert (
                client.post("/v1/episodes", json={"event_type": "n", "content": "served"}).status_code == 201
            )
            assert (
                client.post("/v1/recall", json={"limit": 8}).status_code == 422
            )  # max_limit from the config
            assert client.get("/v1/episodes").json()["episodes"][0]["tenant_id"] == "acme"
    finally:
        stop_served(process, 20)
    assert (tmp_path / "served.db").exists()


def test_every_ranked_read_refuses_preset_and_weights_together(api: Api) -> None:
    """The rule lives where preset and weights meet (operations.handlers), so each ranked read has it."""
    both = {"preset": "balanced", "weights": {"relevance": 1}}
    for path, body in (
        ("/v1/recall", {"query": "x"}),
        ("/v1/sessions/search", {"query": "x"}),
        ("/v1/context", {"query": "x"}),
    ):
        response = api.acme.post(path, json={**body, **both})
        assert "not both" in _error(response, 422, "ValidationError"), path
