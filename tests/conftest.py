"""Shared fixtures: frozen clock, fake embedder, and a fresh database per backend.

Also the test-wide rules: Hypothesis never times an example (no ``deadline``: a loaded machine
must not fail a property), and every test that needs a PostgreSQL server, the local LLM server
or a browser is marked ``slow`` here (the fast lane, ``./scripts/test.sh --fast``, leaves them
out); a test that starts subprocesses carries the mark itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from memlane import EpisodicMemory, FrozenClock, LocalEmbedder, MemoryConfig
from memlane.embeddings.fake import HashingEmbedder
from memlane.stores.base import Store
from tests.backends import BackendDB, postgres_db, sqlite_db

pytest_plugins = ["tests.pg_server", "tests.llm_server"]

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
"""The frozen "now" of every test that uses the ``clock`` fixture."""

BACKENDS = ["sqlite", "postgres"]

settings.register_profile("memlane", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("memlane")  # before the test modules build their own @settings on top

SLOW_FIXTURES = frozenset({"pg_url", "llm_server", "browser"})
"""Fixtures that start a server or a browser: a test using one (directly or not) is ``slow``."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``slow`` each test needing PostgreSQL (fixture or ``postgres`` param), the LLM or a browser."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and any(
            isinstance(value, str) and value == "postgres" for value in callspec.params.values()
        )
        if on_postgres or SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def clock() -> FrozenClock:
    """A clock frozen at :data:`T0`."""
    return FrozenClock(T0)


@pytest.fixture
def embedder() -> HashingEmbedder:
    """Deterministic bag-of-words embedder (64 dims) for ranking/filter tests."""
    return HashingEmbedder()


@pytest.fixture(scope="session")
def local_embedder() -> LocalEmbedder:
    """The real bundled model (all-MiniLM-L6-v2, int8 ONNX), loaded once per session (it keeps no state)."""
    return LocalEmbedder()


@pytest.fixture(params=BACKENDS)
def backend_db(request: pytest.FixtureRequest, tmp_path: Path) -> BackendDB:
    """A fresh, empty database of each backend in turn."""
    if request.param == "sqlite":
        return sqlite_db(tmp_path)
    if request.param == "postgres":  # a real server (tests/pg_server.py), a fresh schema per test
        return postgres_db(request.getfixturevalue("pg_url"), request.getfixturevalue("pg_schema"))
    raise AssertionError(request.param)


@pytest.fixture
def store(backend_db: BackendDB) -> Iterator[Store]:
    """An open store on a fresh database of each backend."""
    s = backend_db.open()
    yield s
    s.close()


MemoryFactory = Callable[..., EpisodicMemory]


@pytest.fixture
def make_memory(store: Store, embedder: HashingEmbedder, clock: FrozenClock) -> MemoryFactory:
    """Build memories over the shared test store: ``make_memory(tenant_id=..., scope=..., ...)``."""

    def factory(
        *,
        tenant_id: str = "t1",
        session_id: str = "s1",
        embedder_: Any = None,
        **config: Any,
    ) -> EpisodicMemory:
        return EpisodicMemory(
            store,
            embedder_ or embedder,
            config=MemoryConfig(**config),
            clock=clock,
            tenant_id=tenant_id,
            session_id=session_id,
            owns_store=False,
        )

    return factory


@pytest.fixture
def memory(make_memory: MemoryFactory) -> EpisodicMemory:
    """A session-scoped memory for tenant ``t1``, session ``s1``."""
    return make_memory()
