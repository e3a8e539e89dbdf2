"""Stores for the LangGraph tests: LangGraph's own InMemoryStore and MemlaneStore on each backend.

The side-by-side tests run the same assertions against every kind, so MemlaneStore is held
to InMemoryStore's documented behaviour. InMemoryStore gets semantic search from the same
bundled model memlane uses (wrapped as a LangChain ``Embeddings``), so ranked results are
comparable.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from memlane import EpisodicMemory, LocalEmbedder
from memlane.integrations.langgraph import MemlaneStore
from tests.backends import postgres_db, sqlite_db


class LocalEmbeddings(Embeddings):
    """memlane's bundled model as a LangChain ``Embeddings`` (for InMemoryStore's index)."""

    def __init__(self, embedder: LocalEmbedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, row)) for row in self.embedder.embed(texts)]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def memlane_store_on(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, embedder: LocalEmbedder
) -> MemlaneStore:
    """A MemlaneStore over a fresh database of ``kind`` (``sqlite`` or ``postgres``)."""
    if kind == "sqlite":
        db = sqlite_db(tmp_path)
    else:
        db = postgres_db(request.getfixturevalue("pg_url"), request.getfixturevalue("pg_schema"))
    return MemlaneStore(EpisodicMemory(db.open(), embedder, tenant_id="lg"), owns_memory=True)


@pytest.fixture(params=["inmemory", "memlane-sqlite", "memlane-postgres"])
def any_store(
    request: pytest.FixtureRequest, tmp_path: Path, local_embedder: LocalEmbedder
) -> Iterator[BaseStore]:
    """Each store kind in turn, empty."""
    if request.param == "inmemory":
        yield InMemoryStore(index={"dims": local_embedder.dims, "embed": LocalEmbeddings(local_embedder)})
        return
    store = memlane_store_on(request.param.removeprefix("memlane-"), request, tmp_path, local_embedder)
    yield store
    store.close()
