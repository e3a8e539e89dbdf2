"""Fixtures of the formation tests: a client of the real local LLM server, a SQLite memory.

The server itself is the session fixture ``llm_server`` of ``tests/llm_server.py`` (a plugin of
``tests/conftest.py``, shared with the README test). If it cannot start, every test that needs
it **fails** (CI must really run them); only ``MEMLANE_SKIP_LLM=1`` skips them, explicitly.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memlane import EpisodicMemory, FrozenClock, SQLiteStore
from memlane.embeddings.fake import HashingEmbedder
from memlane.formation import OpenAICompatibleLLM
from tests.conftest import T0
from tests.llm_server import LLMServer, client

CONVERSATION = [
    {"role": "system", "content": "You are a helpful travel assistant."},
    {"role": "user", "content": "I moved to Berlin last month, so please book flights from BER from now on."},
    {"role": "assistant", "content": "Got it: Berlin Brandenburg (BER) is your home airport from now on."},
    {"role": "user", "content": "Also, I am allergic to peanuts. Never order me a meal with nuts."},
    {"role": "assistant", "content": "Understood. I will request a nut-free meal on every flight."},
]
"""A short conversation used by the LLM tests (the system message is skipped by formation)."""


@pytest.fixture
def real_llm(llm_server: LLMServer) -> OpenAICompatibleLLM:
    """A client of the real server: temperature 0, at most 300 tokens, schema-constrained JSON."""
    found: OpenAICompatibleLLM = client(llm_server)
    return found


@pytest.fixture
def sqlite_memory(tmp_path: Path) -> Iterator[EpisodicMemory]:
    """A fresh SQLite memory (tenant ``t1``, session ``s1``, tenant scope) with the fake embedder."""
    from memlane import MemoryConfig

    memory = EpisodicMemory(
        SQLiteStore(tmp_path / "formation.db"),
        HashingEmbedder(),
        config=MemoryConfig(scope="tenant"),
        clock=FrozenClock(T0),
        tenant_id="t1",
        session_id="s1",
    )
    yield memory
    memory.close()
