"""A pytest plugin that runs LangGraph's own store tests against ``MemlaneStore``.

LangGraph's PostgreSQL store tests (``tests/test_store.py`` and ``tests/test_async_store.py``
of the ``langgraph-checkpoint-postgres`` source distribution) build their store in the
``store`` and ``vector_store`` fixtures and the ``_create_vector_store`` helper. Before each of
those modules is collected, this plugin replaces exactly these three (and the ``conn`` /
``clear_test_db`` fixtures, which only reach LangGraph's own server) with builders of a
``MemlaneStore`` on a fresh SQLite file and, when ``MEMLANE_LG_PG_URL`` is set, on a fresh
PostgreSQL schema. Test bodies run unchanged. ``tests/integrations/test_langgraph_upstream.py``
runs it in a subprocess (``-p memlane_langgraph_plugin``) and compares the failures with the
README's list of documented differences.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from memlane import EpisodicMemory, LocalEmbedder
from memlane.embeddings import Embedder
from memlane.integrations.langgraph import LangChainEmbedder, MemlaneStore
from memlane.stores import Store

UPSTREAM_MODULES = ("test_store.py", "test_async_store.py")
PG_URL = os.environ.get("MEMLANE_LG_PG_URL")
BACKENDS = ["sqlite", "postgres"] if PG_URL else ["sqlite"]
NO_TTL = bool(os.environ.get("MEMLANE_LG_NO_TTL"))
"""Build the stores without ``ttl=`` (to measure a MemlaneStore that has no TTL support)."""
_LOCAL: list[LocalEmbedder] = []


def _open_store(kind: str, directory: Path) -> Store:
    if kind == "sqlite":
        from memlane import SQLiteStore

        return SQLiteStore(directory / f"{uuid.uuid4().hex}.db")
    from memlane.stores.postgres import PostgresStore

    assert PG_URL is not None
    return PostgresStore(PG_URL, schema=f"lg_{uuid.uuid4().hex[:12]}", max_size=4)


def _memlane_store(kind: str, embedder: Embedder, **options: Any) -> MemlaneStore:
    directory = Path(tempfile.mkdtemp(prefix="memlane-lg-"))
    memory = EpisodicMemory(_open_store(kind, directory), embedder, tenant_id="lg")
    return MemlaneStore(memory, owns_memory=True, **options)


def _bundled() -> LocalEmbedder:
    if not _LOCAL:
        _LOCAL.append(LocalEmbedder())
    return _LOCAL[0]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> Iterator[MemlaneStore]:
    """LangGraph's ``store``: a MemlaneStore (bundled model) with the TTL config LangGraph's fixture uses."""
    ttl = {"default_ttl": 0.1, "refresh_on_read": True, "sweep_interval_minutes": 0.05}
    built = _memlane_store(request.param, _bundled(), **({} if NO_TTL else {"ttl": ttl}))
    built.start_ttl_sweeper()
    yield built
    built.stop_ttl_sweeper()
    built.close()


def _vector_options(fake_embeddings: Any, text_fields: list[str] | None, enable_ttl: bool) -> dict[str, Any]:
    ttl = {"default_ttl": 2, "refresh_on_read": True} if enable_ttl else None
    return {"fields": text_fields} if NO_TTL else {"fields": text_fields, "ttl": ttl}


@pytest.fixture(params=BACKENDS)
def vector_store(request: pytest.FixtureRequest, fake_embeddings: Any) -> Iterator[MemlaneStore]:
    """LangGraph's ``vector_store``: a MemlaneStore embedding with the test's ``fake_embeddings``."""
    embedder = LangChainEmbedder(fake_embeddings, fake_embeddings.dims)
    built = _memlane_store(request.param, embedder, **_vector_options(fake_embeddings, None, True))
    yield built
    built.close()


@contextmanager
def _create_vector_store(
    vector_type: str,
    distance_type: str,
    fake_embeddings: Any,
    text_fields: list[str] | None = None,
    enable_ttl: bool = True,
) -> Iterator[MemlaneStore]:
    embedder = LangChainEmbedder(fake_embeddings, fake_embeddings.dims)
    built = _memlane_store(
        BACKENDS[-1], embedder, **_vector_options(fake_embeddings, text_fields, enable_ttl)
    )
    try:
        yield built
    finally:
        built.close()


@asynccontextmanager
async def _acreate_vector_store(
    vector_type: str,
    distance_type: str,
    fake_embeddings: Any,
    text_fields: list[str] | None = None,
    enable_ttl: bool = True,
) -> AsyncIterator[MemlaneStore]:
    with _create_vector_store(vector_type, distance_type, fake_embeddings, text_fields, enable_ttl) as built:
        yield built


@pytest.fixture
def conn() -> None:
    """LangGraph's connection to its own server: not used with MemlaneStore."""


@pytest.fixture
def clear_test_db() -> None:
    """LangGraph's autouse cleanup of its own server: each MemlaneStore starts empty instead."""


def pytest_collectstart(collector: pytest.Collector) -> None:
    """Swap the store builders into LangGraph's store test modules before their fixtures are read."""
    if not isinstance(collector, pytest.Module) or collector.path.name not in UPSTREAM_MODULES:
        return
    module = collector.obj
    module.store = store
    module.vector_store = vector_store
    module.conn = conn
    module.clear_test_db = clear_test_db
    is_async = collector.path.name == "test_async_store.py"
    module._create_vector_store = _acreate_vector_store if is_async else _create_vector_store
