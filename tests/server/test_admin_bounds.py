"""Admin jobs over HTTP cannot cross tenants or the clock (#22 item 2), on each backend.

A real uvicorn serves ``create_app`` over each backend with ``retention_days=30`` and a clock
frozen at :data:`tests.conftest.T0`. Tenants ``acme`` (an admin key) and ``beta`` (an agent
key) each hold one expired and one fresh episode and one expired stored conversation.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

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

ADMIN = "acme-admin-key-0123456789abcdef"
OPERATOR = "ops-operator-key-0123456789abcd"
AGENT = "beta-agent-key-0123456789abcdef"
CONFIG = MemoryConfig(retention_days=30, prune_probability=0.0, scope="tenant")
OLD = T0 - timedelta(days=40)


def _seed(backend_db: BackendDB, clock: FrozenClock) -> EpisodicMemory:
    seed = EpisodicMemory(backend_db.open(), HashingEmbedder(), config=CONFIG, clock=clock, tenant_id="acme")
    for tenant in ("acme", "beta"):
        memory = seed.with_context(tenant_id=tenant)
        memory.remember_episode("note", f"{tenant} expired note", created_at=OLD)
        memory.remember_episode("note", f"{tenant} fresh note", created_at=T0 - timedelta(seconds=5))
        memory.sessions.store_session(
            f"{tenant}-old-chat",
            [{"role": "user", "content": f"{tenant} said hello long ago"}],
            agent_id="a",
            user_id="u",
            started_at=OLD,
            ended_at=OLD,
        )
    return seed


@pytest.fixture
def served(backend_db: BackendDB) -> Iterator[tuple[httpx.Client, EpisodicMemory]]:
    clock = FrozenClock(T0)
    seed = _seed(backend_db, clock)
    keys = {
        ADMIN: {"tenant": "acme", "role": "admin"},
        OPERATOR: {"tenant": "ops", "role": "operator"},
        AGENT: "beta",
    }
    settings = load_config({"server": {"api_keys": keys}}).server
    app = create_app(
        lambda: EpisodicMemory(backend_db.open(), HashingEmbedder(), config=CONFIG, clock=clock), settings
    )
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http, seed
    seed.close()


def _post(
    http: httpx.Client, path: str, key: str, body: Any = None, *, raw: bytes | None = None
) -> httpx.Response:
    headers = {"X-API-Key": key, "content-type": "application/json"}
    if raw is not None:
        return http.post(path, headers=headers, content=raw)
    return http.post(path, headers=headers, json=body)


def _counts(seed: EpisodicMemory) -> dict[str, int]:
    out = {}
    sessions = seed.sessions.store
    for tenant in ("acme", "beta"):
        out[tenant] = seed.store.count(EpisodeFilter(tenant_id=tenant))  # stored rows, expired or not
        out[f"{tenant}-sessions"] = int(sessions.get_session(tenant, f"{tenant}-old-chat") is not None)
    return out


def test_a_future_now_is_refused_and_nothing_is_deleted(served: tuple[httpx.Client, EpisodicMemory]) -> None:
    http, seed = served
    before = _counts(seed)
    for path in ("/v1/admin/prune", "/v1/admin/forget", "/v1/admin/compact"):
        response = _post(http, path, ADMIN, {"now": "2100-01-01T00:00:00Z", "dry_run": False})
        assert response.status_code == 422, (path, response.text)
        assert "later than the server's clock" in response.json()["error"]["message"]
    assert _counts(seed) == before


@pytest.mark.parametrize("raw", [b"", b"null", b"{}"], ids=["empty", "null", "object"])
def test_an_empty_or_null_body_is_a_dry_run(served: tuple[httpx.Client, EpisodicMemory], raw: bytes) -> None:
    http, seed = served
    before = _counts(seed)
    response = _post(http, "/v1/admin/prune", ADMIN, raw=raw)
    assert response.status_code == 200, response.text
    assert response.json() == {"dry_run": True, "all_tenants": False, "episodes": 1, "sessions": 1}
    for path in ("/v1/admin/forget", "/v1/admin/compact"):
        response = _post(http, path, ADMIN, raw=raw)
        assert response.status_code == 200, response.text
        assert response.json()["dry_run"] is True
    assert _counts(seed) == before


def test_an_admin_key_prunes_its_own_tenant_only(served: tuple[httpx.Client, EpisodicMemory]) -> None:
    http, seed = served
    response = _post(http, "/v1/admin/prune", ADMIN, {"dry_run": False})
    assert response.status_code == 200, response.text
    assert response.json() == {"dry_run": False, "all_tenants": False, "episodes": 1, "sessions": 1}
    assert _counts(seed) == {"acme": 1, "acme-sessions": 0, "beta": 2, "beta-sessions": 1}
    assert _post(http, "/v1/admin/prune", AGENT, {"dry_run": False}).status_code == 403


def test_an_operator_key_prunes_the_whole_store(served: tuple[httpx.Client, EpisodicMemory]) -> None:
    http, seed = served
    response = _post(http, "/v1/admin/prune", OPERATOR, {"dry_run": False})
    assert response.status_code == 200, response.text
    assert response.json() == {"dry_run": False, "all_tenants": True, "episodes": 2, "sessions": 2}
    assert _counts(seed) == {"acme": 1, "acme-sessions": 0, "beta": 1, "beta-sessions": 0}
