"""Retention over HTTP and in the inspector: an expired episode is a 404 and appears on no page.

A real uvicorn serves ``create_app`` over each backend (SQLite file, real PostgreSQL) with
``retention_days=30`` and a clock frozen at :data:`tests.conftest.T0`; the expired episode is
still stored (nothing prunes it: ``prune_probability=0``).
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

pytest.importorskip("fastapi", reason="the 'server' extra is not installed")
import httpx

from memlane import EpisodicMemory, FrozenClock, MemoryConfig
from memlane.config.file import load_config
from memlane.embeddings.fake import HashingEmbedder
from memlane.server.http import create_app
from memlane.stores.base import EpisodeFilter
from tests.backends import BackendDB
from tests.conftest import T0
from tests.server.conftest import serve_in_thread

KEY = "retention-key-0123456789abcdef"
EXPIRED = "EXPIRED-MARKER quarterly report draft"
FRESH = "FRESH-MARKER quarterly report final"


def test_an_expired_episode_is_gone_over_http_and_from_the_inspector(backend_db: BackendDB) -> None:
    config = MemoryConfig(retention_days=30, prune_probability=0.0, scope="tenant")
    clock = FrozenClock(T0)
    seed = EpisodicMemory(backend_db.open(), HashingEmbedder(), config=config, clock=clock, tenant_id="t")
    old = seed.remember_episode("note", EXPIRED, created_at=T0 - timedelta(days=40))
    fresh = seed.remember_episode("note", FRESH)
    assert seed.store.count(EpisodeFilter()) == 2  # stored, only hidden
    settings = load_config({"server": {"api_keys": {KEY: "t"}}}).server
    app = create_app(
        lambda: EpisodicMemory(
            backend_db.open(), HashingEmbedder(), config=config, clock=clock, tenant_id="t"
        ),
        settings,
    )
    with (
        serve_in_thread(app) as url,
        httpx.Client(base_url=url, headers={"X-API-Key": KEY}, timeout=30) as http,
    ):
        assert http.get(f"/v1/episodes/{old.id}").status_code == 404
        assert http.get(f"/v1/episodes/{fresh.id}").status_code == 200
        exported = [json.loads(line)["id"] for line in http.get("/v1/export").text.splitlines()]
        assert exported == [fresh.id]
        listed = http.get("/v1/episodes").json()
        assert [e["id"] for e in listed["episodes"]] == [fresh.id]
        assert http.get(f"/inspect/episodes/{old.id}").status_code == 404
        assert http.get(f"/inspect/episodes/{fresh.id}").status_code == 200
        for page in ("/inspect", "/inspect/search?q=quarterly+report", "/inspect/sessions", "/inspect/stats"):
            response = http.get(page)
            assert response.status_code == 200, page
            assert "EXPIRED-MARKER" not in response.text, page
        timeline = http.get("/inspect").text
        assert "FRESH-MARKER" in timeline
    seed.close()
